#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Item 12 of docs/reliability.md: a fleet of simulated agents (swarm,
# tests/reliability/load/swarm.c) delivers its reports to a collector that
# is restarted twice meanwhile, once with SIGTERM and once with SIGKILL;
# every report must be acknowledged and stored exactly once. 500 agents of
# 2 reports starting within 10 s; with FLEETBENCH_LONG=1, the issue's
# 2,000 agents of 5 reports (10,000) within 100 s: 100 reports/s offered,
# half what one collector stores here (docs/scaling.md on bursts).
set -uo pipefail

# shellcheck source=tests/reliability/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SWARM=${SWARM:-$BUILD_DIR/tests/reliability/swarm}
require_built "$SWARM" "$COLLECTOR" "$AGENT"
tmp_new swarm

agents=500 reports=2 spread=10
[ "$long" = 1 ] && agents=2000 reports=5 spread=100
total=$((agents * reports))
"$SWARM" --agents "$agents" --reports "$reports" --spread "$spread" --restarts 2 \
	--collector "$COLLECTOR" --agent "$AGENT" >"$tmp/swarm.out" \
	2>"$tmp/swarm.err"
status=$?
check_eq "swarm exits 0" "$status" 0
[ "$status" = 0 ] || tail -n 30 "$tmp/swarm.err" >&2
check_grep "every report is acknowledged" "$tmp/swarm.out" \
	"delivered $total of $total reports"
check_grep "and stored once" "$tmp/swarm.out" "; $total stored once"
check_grep "each was offered and granted first (docs/wire.md)" \
	"$tmp/swarm.out" " [1-9][0-9]* grants,"
check_grep "the collector was restarted with SIGTERM" "$tmp/swarm.out" \
	"restart 1 \(SIGTERM\)"
check_grep "and with SIGKILL" "$tmp/swarm.out" "restart 2 \(SIGKILL\)"
while IFS= read -r line; do
	line=${line#"${line%%[! ]*}"}
	figures "swarm: ${line#swarm: }"
done <"$tmp/swarm.out"
finish
