#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 19, repeats until the interval is tight, with the real agent and
# its real benchmarks: on this (quiet) host an adaptive thp_chase stops
# before its most repeats with its interval within the target; with a
# competing process that bursts on every vCPU at random (the injected noise
# source) and a target it cannot reach, false_sharing runs to its budget
# and marks the figures that did not reach it (--json and the table).
# --repeats N keeps exactly N.
#
# The quiet run is thp_chase's, not false_sharing's: false sharing costs
# what the hypervisor's placement of the two vCPUs makes it cost (issue 19),
# and that placement moves during a run on these guests, unseen by steal
# and PSI. Measured here (2026-12-04, 2M increments, target 10%): 4 of 6
# quiet runs ran to 40 rounds without reaching it, slowdowns 1.3 to 3.5
# from run to run; the agent said WIDE, which is right, and CI's ASan run
# failed this test so. thp_chase over 64 MiB: 4 rounds within 10% in 5 of
# 5 runs (plain and ASan), about 5 s each.
#
# Environment: SOURCE_DIR, BUILD_DIR, AGENT.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_built "$AGENT"
tmp_new adaptive

hog=()
# shellcheck disable=SC2317 # called at exit by lib.sh
on_cleanup() {
	[ "${#hog[@]}" -gt 0 ] && kill "${hog[@]}" 2>/dev/null
}

# bench ARGS...: the agent's quick bench; fs ARGS...: its false_sharing;
# chase ARGS...: its thp_chase over 64 MiB
bench() {
	"$AGENT" bench --profile quick --steal-window 0 --dir "$tmp" "$@"
}
fs() {
	bench --only false_sharing --fs-increments 2000000 "$@"
}
chase() {
	bench --only thp_chase --chase-bytes 64M "$@"
}

# summary JSON: "rounds reached|..." of each comparison, then the windows
summary() {
	/usr/bin/python3 - "$1" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
b = d.get("bench", d)
m = b["method"]
print("adaptive=%s max=%s budget=%s" % (m.get("adaptive"), m.get("max_repeats"), m.get("budget_s")))
for c in b["comparisons"]:
    print("%s rounds=%s reached=%s target=%s" % (c["name"], c.get("rounds"), c.get("target_reached"), c.get("target_half_width")))
# the measured variants' (a variant skipped for an empty hugetlb pool has none)
print("windows=" + ",".join(str(len(r["windows"])) for r in b["benchmarks"]
                            if "skip_reason" not in r))
PYEOF
}

# --- quiet: stops early ------------------------------------------------------

chase --target-pct 10 --max-repeats 40 --budget 30 --json >"$tmp/quiet.json" \
	2>"$tmp/quiet.err"
check_eq "a quiet adaptive run exits 0" "$?" 0
summary "$tmp/quiet.json" >"$tmp/quiet.txt"
cat "$tmp/quiet.txt"
check_grep "the method says adaptive, its most repeats and budget" \
	"$tmp/quiet.txt" '^adaptive=True max=40 budget=30$'
rounds=$(sed -n 's/^thp_speedup rounds=\([0-9]*\) .*/\1/p' "$tmp/quiet.txt")
check_eq "it stopped early: at least 3 rounds, fewer than 40 ($rounds)" \
	"$([ "${rounds:-0}" -ge 3 ] && [ "$rounds" -lt 40 ] && echo yes)" yes
check_grep "thp_speedup reached its 10% target" "$tmp/quiet.txt" \
	'^thp_speedup rounds=[0-9]* reached=True target=0.1$'
check_grep "one window per round, both measured variants" "$tmp/quiet.txt" \
	"^windows=$rounds,$rounds$"

# --- a noise source keeps the interval wide: the budget ends it ---------------

# a burst of 0-250 ms on every vCPU, then 0-250 ms of rest, at random
for _ in $(seq "$(nproc)"); do
	bash -c 'while :; do e=$((SECONDS)); n=$((RANDOM % 250000)); t0=$(date +%s%6N);
		while [ $(( $(date +%s%6N) - t0 )) -lt $n ]; do :; done;
		sleep "0.$(printf %06d $((RANDOM % 250000)))"; done' &
	hog+=("$!")
done
start=$(date +%s)
fs --target-pct 1 --max-repeats 1000 --budget 8 --json >"$tmp/noisy.json" \
	2>"$tmp/noisy.err"
check_eq "a noisy adaptive run exits 0" "$?" 0
secs=$(($(date +%s) - start))
fs --target-pct 1 --max-repeats 1000 --budget 4 >"$tmp/noisy.table" 2>&1
kill "${hog[@]}" 2>/dev/null
wait 2>/dev/null
hog=()
summary "$tmp/noisy.json" >"$tmp/noisy.txt"
cat "$tmp/noisy.txt"
check_grep "the figure is marked as not reaching its 1% target" \
	"$tmp/noisy.txt" '^false_sharing_slowdown rounds=[0-9]* reached=False target=0.01$'
rounds=$(sed -n 's/^false_sharing_slowdown rounds=\([0-9]*\) .*/\1/p' "$tmp/noisy.txt")
check_eq "it ran more than the least rounds ($rounds)" \
	"$([ "${rounds:-0}" -gt 3 ] && echo yes)" yes
check_eq "within its 8-s budget and the setup: ${secs} s" \
	"$([ "$secs" -lt 20 ] && echo yes)" yes
check_grep "the table marks it WIDE with its rounds" "$tmp/noisy.table" \
	'false_sharing_slowdown .* WIDE: [0-9.]*% > 1% \([0-9]* repeats\)'
check_grep "and says to measure more" "$tmp/noisy.table" '^wide: '

# --- fixed repeats -----------------------------------------------------------

fs --repeats 4 --json >"$tmp/fixed.json" 2>"$tmp/fixed.err"
summary "$tmp/fixed.json" >"$tmp/fixed.txt"
check_grep "--repeats 4: not adaptive" "$tmp/fixed.txt" '^adaptive=False'
check_grep "--repeats 4: no target on the figures" "$tmp/fixed.txt" \
	'^false_sharing_slowdown rounds=None reached=None target=None$'
check_grep "--repeats 4: exactly 4 windows" "$tmp/fixed.txt" '^windows=4,4,4,4$'

# --- a budget that does not fit in the benchmark's time limit ----------------

fs --budget 100 --bench-timeout 120 >"$tmp/bad.out" 2>&1
check_eq "a budget over half the timeout is refused" "$?" 2
check_grep "naming both" "$tmp/bad.out" 'budget_s 100 .* timeout of 120 s'

finish
