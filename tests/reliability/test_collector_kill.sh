#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Item 3 of docs/reliability.md: the collector killed with SIGKILL 10
# times while 50 agents send 1,000 reports in all. After the last restart,
# exactly 1,000 runs are stored and every spool is empty within 60 s.
#
# The kills are spread over the sending. Every other one is a plain
# SIGKILL from outside, at a random moment once the next fourteenth of the
# reports is stored; the collector started after it has the fault point
# collector-after-commit armed for its first, second or third batch, and
# dies there: after a COMMIT returned, before its Acks left, the worst
# moment. The agents are real
# `fleetbench-agent send` processes (send timeout 1.5 s, no retries),
# started again whenever a pass ends with reports left, as a timer would.
set -uo pipefail

# shellcheck source=tests/reliability/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

n_agents=50
per_agent=20
kills=10
total=$((n_agents * per_agent))
agents=()
for i in $(seq "$n_agents"); do
	agents+=("a$i")
done
rel_setup collector-kill "${agents[@]}"
for name in "${agents[@]}"; do
	spoolgen "$name" "$per_agent" --provider kill
done
start_collector
port=${endpoint##*:}

senders=()
# shellcheck disable=SC2317 # called at exit by lib.sh
on_cleanup() {
	touch "$tmp/stop"
	[ ${#senders[@]} -gt 0 ] && kill "${senders[@]}" 2>/dev/null
	wait
}

# sender NAME: send passes until the spool is empty
sender() {
	while [ "$(spooled "$1")" -gt 0 ] && [ ! -e "$tmp/stop" ]; do
		ragent "$1" send || sleep 0.2
	done
}

stored_count() {
	q <<<"SELECT count(*) FROM runs"
}

# stored_over N: more than N runs are stored
stored_over() {
	[ "$(stored_count)" -gt "$1" ]
}

# exited PID: the child PID has ended (a zombie not yet waited for)
exited() {
	[ ! -e "/proc/$1" ] || [ "$(sed 's/.*) //' "/proc/$1/stat" | cut -c1)" = Z ]
}

# all_spools_empty: no agent has a report left
all_spools_empty() {
	[ -z "$(find "$tmp"/spool.* -maxdepth 1 -name '*.fbr' -print -quit)" ]
}

for name in "${agents[@]}"; do
	sender "$name" &
	senders+=($!)
done

fault_kills=0 outside_kills=0 at=()
for k in $(seq "$kills"); do
	if [ $((k % 2)) = 1 ]; then
		# a SIGKILL from outside, within 0.3 s of the next fourteenth
		# of the reports being stored (so the last, the 9th, comes at
		# about two thirds, and the 10th well before the end)
		wait_for 120 stored_over $((total * k / (kills + 4)))
		check_eq "kill $k: $((total * k / (kills + 4))) reports were stored first" \
			"$?" 0
		sleep "0.$((RANDOM % 300))"
		kill -KILL "$pid"
		wait "$pid" 2>/dev/null
		check_eq "kill $k: SIGKILL" "$?" 137
		outside_kills=$((outside_kills + 1))
	else
		# started with the fault point armed: it dies on its own
		wait_for 60 exited "$pid" || kill -TERM "$pid"
		wait "$pid" 2>/dev/null
		check_eq "kill $k: the fault point after COMMIT" "$?" 137
		check_has "kill $k: it was the fault point" "$log" \
			"fault point 'collector-after-commit' reached: SIGKILL"
		fault_kills=$((fault_kills + 1))
	fi
	at+=("$(stored_count)")
	check_eq "kill $k came while reports were still being sent" \
		"$(all_spools_empty && echo no || echo yes)" yes
	pid=
	if [ "$k" -lt "$kills" ] && [ $(((k + 1) % 2)) = 0 ]; then
		# to die after its first, second or third batch's COMMIT
		FLEETBENCH_FAULT=collector-after-commit@$((RANDOM % 3 + 1)) \
			start_collector "tcp://127.0.0.1:$port"
	else
		start_collector "tcp://127.0.0.1:$port"
	fi
done
restarted=$(date +%s%N)
wait_for 60 all_spools_empty
check_eq "every spool is empty within 60 s of the last restart" "$?" 0
drained_ms=$((($(date +%s%N) - restarted) / 1000000))
touch "$tmp/stop"
wait "${senders[@]}"
senders=()
check_eq "exactly $total runs are stored" "$(stored_count)" "$total"
dups=$(cat "$tmp"/ledger/*.log | grep -c 'was already stored (duplicate)')
figures "collector-kill: $n_agents agents, $total reports; $kills kills ($outside_kills SIGKILL at random, $fault_kills at collector-after-commit) with ${at[*]} reports stored; every spool empty $drained_ms ms after the last restart; $dups re-sends answered DUPLICATE; $(stored_count) runs stored"
rel_check_end
stop_collector
check_eq "the collector exits 0" "$?" 0
finish
