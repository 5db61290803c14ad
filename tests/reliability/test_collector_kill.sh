#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Item 3 of docs/reliability.md: the collector killed with SIGKILL 10
# times while 50 agents send 1,000 reports in all. After the last restart,
# exactly 1,000 runs are stored and every spool is empty within 60 s.
#
# Each collector is started with one of its fault points armed and dies
# there by its own SIGKILL, so that every kill lands in the middle of the
# sending, however slow or loaded the machine (a kill from outside, timed
# by watching the database, came too late on a loaded ASan run: the
# reports were all in before the shell saw the first of them). The points
# take turns: collector-after-receive (a report received, not stored),
# collector-after-sync (a batch and its COMMIT sent, no answer yet:
# committed or not, nobody knows) and collector-after-commit (committed,
# not acknowledged), each at a random hit within this kill's share of the
# reports left. The agents are real `fleetbench-agent send` processes (send
# timeout 1.5 s, no retries), started again whenever a pass ends with
# reports left, as a timer would.
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

stored_count() {
	q <<<"SELECT count(*) FROM runs"
}

points=(collector-after-receive collector-after-sync collector-after-commit)
# armed_start K: a collector on the port that dies at kill K's fault point,
# at a random hit within the share of the reports left that is this kill's
# (a batch holds up to one report an agent), so the kills spread over the
# sending and the last still finds reports to send
armed_start() {
	local point=${points[$((($1 - 1) % 3))]} nth share

	share=$(((total - $(stored_count)) / (kills - $1 + 2)))
	if [ "$point" = collector-after-receive ]; then
		nth=$((RANDOM % (share > 1 ? share : 1) + 1))
	else
		share=$((share / n_agents))
		nth=$((RANDOM % (share > 1 ? share : 1) + 1))
	fi
	at_point+=("$point@$nth")
	FLEETBENCH_FAULT=$point@$nth start_collector "${port:+tcp://127.0.0.1:$port}"
	port=${endpoint##*:}
}
at_point=() port=
armed_start 1

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

at=()
for k in $(seq "$kills"); do
	wait_for 120 exited "$pid" || kill -TERM "$pid"
	wait "$pid" 2>/dev/null
	check_eq "kill $k: SIGKILL at ${at_point[$((k - 1))]}" "$?" 137
	check_has "kill $k: it was the fault point" "$log" \
		"fault point '${at_point[$((k - 1))]%@*}' reached: SIGKILL"
	at+=("$(stored_count)")
	# nothing is delivered while it is down: what is spooled now was
	# spooled when it died
	check_eq "kill $k came while reports were still being sent" \
		"$(all_spools_empty && echo no || echo yes)" yes
	pid=
	if [ "$k" -lt "$kills" ]; then
		armed_start $((k + 1))
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
figures "collector-kill: $n_agents agents, $total reports; $kills kills at ${at_point[*]} with ${at[*]} reports stored; every spool empty $drained_ms ms after the last restart; $dups re-sends answered DUPLICATE; $(stored_count) runs stored"
rel_check_end
stop_collector
check_eq "the collector exits 0" "$?" 0
finish
