#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Item 15 of docs/reliability.md: a herd (issue 16). 500 simulated agents
# (swarm --herd, tests/reliability/load/swarm.c) arrive within 1 s, each
# with one full report, at a collector whose unloaded rate the same run
# measures before and after (32 agents back to back). Without a restart
# the herd must be delivered at nearly the unloaded rate; with the
# collector restarted (SIGTERM) in the middle, every report must still be
# stored once, the agents told to come back (retry-after hints, not
# timeouts and re-sends), and the goodput stay above what the restart
# itself costs: 1 s down, the 2 s hint of those turned away while it
# stops, and at most one send timeout (5 s) for a report in flight when
# the socket closed, against an ideal delivery of about 1.3 s: at best
# about a third of the unloaded rate, 15% with one straggler's timeout.
set -uo pipefail

# shellcheck source=tests/reliability/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SWARM=${SWARM:-$BUILD_DIR/tests/reliability/swarm}
require_built "$SWARM" "$COLLECTOR" "$AGENT"
tmp_new herd

# The ASan build keeps freed memory in quarantine (its RSS was 391 MiB
# here) and runs the collector's own code three times slower than the
# CURVE handshakes it shares the machine with, so its herds are another
# program's: there the ledger, DUPLICATE and the hints are checked, the
# memory bound and the goodput in the plain build.
limits=(--max-rss 128)
asan=0
if asan_built "$COLLECTOR"; then
	asan=1
	limits=()
	echo "note: ASan build, the memory bound and the goodput are checked in the plain build"
fi

# herd NAME MIN-GOODPUT-PCT RESTARTS MAX-DUPLICATE-PCT: one herd; its
# output in $tmp/NAME.*
herd() {
	local name=$1 min=$2 restarts=$3 maxdup=$4 status
	[ "$asan" = 1 ] && min=0
	"$SWARM" --herd --no-before --agents 500 --spread 1 \
		--restarts "$restarts" --min-goodput "$min" \
		--max-duplicate "$maxdup" --keep \
		"${limits[@]}" --collector "$COLLECTOR" --agent "$AGENT" \
		>"$tmp/$name.out" 2>"$tmp/$name.err"
	status=$?
	work=$(sed -n 's/^kept //p' "$tmp/$name.err")
	check_eq "$name: swarm exits 0 (ledger, goodput, DUPLICATE, RSS)" \
		"$status" 0
	if [ "$status" != 0 ]; then
		tail -n 30 "$tmp/$name.err" >&2
		# each collector's counters (answers lost, unacknowledged...)
		[ -d "$work" ] && grep -H "messages received" \
			"$work"/collector.*.log >&2
	fi
	case $work in /tmp/fbswarm.*) rm -rf "$work" ;; esac
	check_grep "$name: every report is acknowledged and stored once" \
		"$tmp/$name.out" "^  delivered 500 of 500 reports .*; 500 stored once"
	while IFS= read -r line; do
		line=${line#"${line%%[! ]*}"}
		figures "$name: ${line#swarm: }"
	done <"$tmp/$name.out"
}

# the issue's target is 90% of the unloaded rate (docs/scaling.md); the
# test allows for a shared machine's noise between the phases
herd herd 75 0 2

# a report stored around the restart whose Ack did not reach its agent
# comes back after the agent's 5-s timeout and is answered DUPLICATE, as
# it should be (the ledger check above proves it stored once). CI saw 11,
# 29 and 63 of 500 (2.2-12.6%): the Acks of the last batch, handed to the
# socket just before it closed, which libzmq dropped whatever the linger;
# the collector now keeps the socket open for a flush after its last
# answer (collector/serve.c STOP_FLUSH_MS): 0 in 10 runs with both CPUs
# busy, where 2 of 13 had lost a batch. The bound catches a restart that
# re-sends wholesale.
herd restart 15 1 10
check_grep "restart: the collector was restarted with SIGTERM" \
	"$tmp/restart.out" "restart 1 \(SIGTERM\)"
# the swarm stops the collector when agents are asking for a turn (or,
# past three quarters of the reports, anyway: CI once saw the whole herd
# granted before the stop, and nobody to tell); those agents must be told
offering=$(sed -n 's/.*restart 1 (SIGTERM) at [0-9]* acknowledged, \([0-9]*\) agents offering.*/\1/p' \
	"$tmp/restart.out")
if [ "${offering:-0}" -gt 0 ]; then
	check_grep "restart: the $offering agents offering at the stop were told to come back" \
		"$tmp/restart.out" "RETRY_LATER \([1-9][0-9]* with a hint waited out"
else
	check_grep "restart: no agent was offering at the stop (the herd was granted whole)" \
		"$tmp/restart.out" "restart 1 \(SIGTERM\) at [0-9]* acknowledged, 0 agents offering"
fi
finish
