#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/detect (issue 39) runs and says what it measured: a few trials with
# a given noise model, its A/A table and every cell of its detection table,
# and two drift trials with a step and two without,
# a shift no rule can miss found by both, and a bad command line refused.
# The figures themselves are docs/alerts.md's, from a run of 1,000 trials.
#
# Environment: SOURCE_DIR, BUILD_DIR, COLLECTOR, AGENT, PG_BINDIR.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_built "$COLLECTOR" "$AGENT"
tmp_new bench-detect
chmod 0755 "$tmp"

"$SOURCE_DIR/bench/detect" --trials 5 --drift-trials 2 --dir "$tmp/detect" \
	--repeat-sd 0.03 --run-sd 0.01 --host-sd 0.05 >"$tmp/out" 2>&1
check_eq "bench/detect exits 0 ($(tail -n 3 "$tmp/out"))" "$?" 0
check_grep "it says which noise model it used" "$tmp/out" \
	"^given on the command line$"
check_grep "and its figures" "$tmp/out" \
	"^log gain = host level \+ run \+ repeat: host_sd 0.05, run_sd 0.01, repeat_sd 0.03$"
for profile in standard full; do
	check_eq "an A/A table for the $profile profile" \
		"$(grep -c "^== A/A: 5 evaluations .*, $profile profile" "$tmp/out")" 1
done
check_eq "the A/A tables: the per-host rule, as now and as before 038" \
	"$(grep -cE '^per-host \((038|before)\) +[0-9]+ of 5 \([0-9.]+%\) +[0-9]+ of 250 \([0-9.]+%\)$' "$tmp/out")" 4
check_eq "the A/A tables: the fleet rule" \
	"$(grep -cE '^fleet +[0-9]+ of 5 \([0-9.]+%\) +[0-9]+ of 250 \([0-9.]+%\)$' "$tmp/out")" 2
check_grep "the fleet rule's false discoveries where a fifth of the tests changed" "$tmp/out" \
	"^fleet rule: [0-9]+ alerts, [0-9]+ of them false \([0-9.]+%\); false discovery rate .* [0-9.]+%; changes found [0-9]+ of 10 "
check_eq "every cell of the detection table: 3 profiles x 4 fleets x 5 shifts" \
	"$(grep -cE '^(quick|standard|full) +[0-9]+ +-[0-9]+% ' "$tmp/out")" 60
check_grep "100 hosts that each lose 20%: the fleet rule finds them" "$tmp/out" \
	"^standard +100 +-20% +[0-9.]+% +[0-9.]+% +100.0%"
check_grep "the per-host rule leaves 20% in 5 repeats to the fleet rule (p = 0.0079 > 1e-4)" \
	"$tmp/out" "^standard +100 +-20% +0.0% +100.0% "
check_grep "and finds it with 9 repeats a side (p = 4.1e-5)" "$tmp/out" \
	"^full +100 +-20% +100.0% "
check_grep "drift: a 5% step of 20 hosts is found within 3 days" "$tmp/out" \
	"^step: found within 3 days 2 of 2 \(100.0%\); found at all 2, before the step 0; "
check_grep "drift: the groups without a step, counted in group-years" "$tmp/out" \
	"^no step: [0-9]+ false drift alerts in 2 groups x 60 days \(0.3 group-years\), "

"$SOURCE_DIR/bench/detect" --trials 5 --repeat-sd 0.03 >"$tmp/bad" 2>&1
check_eq "a noise model given in part is refused" "$?" 2
check_grep "naming the three" "$tmp/bad" "go together"
"$SOURCE_DIR/bench/detect" --local-runs 3 --repeat-sd 0.03 --run-sd 0.01 \
	--host-sd 0.05 >"$tmp/bad" 2>&1
check_eq "a noise model both fitted here and given is refused" "$?" 2
check_grep "saying one or the other" "$tmp/bad" "one or the other"
"$SOURCE_DIR/bench/detect" --trials x >/dev/null 2>&1
check_eq "a trial count that is no number is refused" "$?" 2
check_eq "and leaves nothing behind" \
	"$(ls "$tmp" | grep -c detect)" 0

finish
