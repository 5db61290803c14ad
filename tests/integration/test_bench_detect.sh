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
check_grep "the A/A table: the per-host rule" "$tmp/out" \
	"^host   [0-9]+ of 5 \([0-9.]+%\)   [0-9]+ of 250 \([0-9.]+%\)$"
check_grep "the A/A table: the fleet rule" "$tmp/out" \
	"^fleet  [0-9]+ of 5 \([0-9.]+%\)   [0-9]+ of 250 \([0-9.]+%\)$"
check_eq "every cell of the detection table: 2 profiles x 4 fleets x 5 shifts" \
	"$(grep -cE '^(quick|standard) +[0-9]+ +-[0-9]+% ' "$tmp/out")" 40
check_grep "100 hosts that each lose 20%: the fleet rule finds them" "$tmp/out" \
	"^standard +100 +-20% +[0-9.]+% +100.0%"
check_grep "and so does the per-host rule" "$tmp/out" \
	"^standard +100 +-20% +100.0% "
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
