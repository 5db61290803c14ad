#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# "Past one machine" (docs/scaling.md): two collectors in front of one
# database store each run exactly once, however the fleet's reports reach
# them.
#
#  1. the same reports sent to both at the same moment, in opposite orders
#     (zsend, 64 at a time): the two transactions collide on the same run
#     ids, waiting for each other or deadlocking; every report is answered
#     COMMITTED by exactly one collector, and stored once;
#  2. every one of 10 agents has a twin with the same key and a copy of its
#     spool; one twin sends to each collector, all at once: each report is
#     COMMITTED once over the two, DUPLICATE to the other twin;
#  3. agents that know both endpoints (--endpoint A --endpoint B) while A
#     dies after a COMMIT (its fault point): they fail over to B, which
#     answers DUPLICATE for what A stored, and deliver everything.
set -uo pipefail

# shellcheck source=tests/reliability/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

agents=(a1 a2 a3 a4 a5 a6 a7 a8 a9 a10)
per_agent=20
rel_setup two-collectors "${agents[@]}"

start_collector
pid_a=$pid log_a=$log ep_a=$endpoint
start_collector
pid_b=$pid log_b=$log ep_b=$endpoint
pid=

# shellcheck disable=SC2317 # called at exit by lib.sh
on_cleanup() {
	touch "$tmp/stop"
	kill -KILL "$pid_a" "$pid_b" 2>/dev/null
	wait
}

stored_count() {
	q <<<"SELECT count(*) FROM runs"
}

stored_over() {
	[ "$(stored_count)" -gt "$1" ]
}

# --- 1. the same reports to both, at once, in opposite orders ---------------

ids=()
for i in $(seq 64); do
	ids+=("$(uuid)")
done
printf '%s\n' "${ids[@]}" >"$tmp/ledger/zsend.ids"
forward=() backward=()
for id in "${ids[@]}"; do
	forward+=(--report "$id")
	backward=(--report "$id" "${backward[@]}")
done
zsend_at() {
	local ep=$1

	shift
	"$ZSEND" --endpoint "$ep" --server-key "$keys/collector.pub" \
		--agent-key "$keys/a1.key" --timeout $((20000 * slow)) "$@"
}
: >"$tmp/z.a" && : >"$tmp/z.b"
zsend_at "$ep_a" "${forward[@]}" >>"$tmp/z.a" &
za=$!
zsend_at "$ep_b" "${backward[@]}" >>"$tmp/z.b" &
zb=$!
wait "$za"
check_eq "zsend to A is answered" "$?" 0
wait "$zb"
check_eq "zsend to B is answered" "$?" 0
# a transaction that lost a deadlock answers RETRY_LATER: send those again
# resend_unanswered EP FILE: the ids FILE has no COMMITTED or DUPLICATE for,
# sent again to EP; 1 when there were none
resend_unanswered() {
	local again=() id

	for id in "${ids[@]}"; do
		grep -qE "^ack (COMMITTED|DUPLICATE) $id " "$2" ||
			again+=(--report "$id")
	done
	[ ${#again[@]} -gt 0 ] || return 1
	zsend_at "$1" "${again[@]}" >>"$2"
}
for round in 1 2 3 4 5; do
	resend_unanswered "$ep_a" "$tmp/z.a"
	a=$?
	resend_unanswered "$ep_b" "$tmp/z.b"
	[ "$a" = 1 ] && [ "$?" = 1 ] && break
done
committed=$(cat "$tmp/z.a" "$tmp/z.b" | awk '$2 == "COMMITTED" { print $3 }' |
	sort)
check_eq "each report is COMMITTED by exactly one collector" \
	"$committed" "$(printf '%s\n' "${ids[@]}" | sort)"
check_eq "and stored once" "$(stored_count)" 64
retried=$(cat "$tmp/z.a" "$tmp/z.b" | grep -c '^ack RETRY_LATER')
figures "two-collectors: 64 reports to both at once in opposite orders: 64 COMMITTED over the two, $(cat "$tmp/z.a" "$tmp/z.b" | grep -c '^ack DUPLICATE') DUPLICATE, $retried RETRY_LATER (a collision rolled back) sent again"

# --- 2. twin agents, one to each collector -----------------------------------

# nsend NAME ENDPOINT...: agent NAME sends to these endpoints, in order
nsend() {
	local name=$1 ep

	shift
	ledger_snapshot "$name"
	agent_argv "$name" send
	for ep in "$@"; do
		argv+=(--endpoint "$ep")
	done
	# (agent_argv's own --endpoint is replaced by the repeated flags)
	"${argv[@]}" >"$tmp/$name.out" 2>"$tmp/$name.err"
	local status=$?
	cat "$tmp/$name.err" >>"$tmp/ledger/$name.log"
	return "$status"
}

# sender NAME ENDPOINT...: send passes until the spool is empty
sender() {
	local name=$1

	shift
	while [ "$(spooled "$name")" -gt 0 ] && [ ! -e "$tmp/stop" ]; do
		nsend "$name" "$@" || sleep 0.2
	done
}

before=$(stored_count)
for name in "${agents[@]}"; do
	spoolgen "$name" "$per_agent" --provider twins
	cp "$keys/$name.key" "$keys/$name-twin.key"
	mkdir -p "$tmp/spool.$name-twin"
	cp -p "$tmp/spool.$name"/*.fbr "$tmp/spool.$name-twin/"
done
senders=()
for name in "${agents[@]}"; do
	sender "$name" "$ep_a" &
	senders+=($!)
	sender "$name-twin" "$ep_b" &
	senders+=($!)
done
wait "${senders[@]}" 2>/dev/null
all=$((${#agents[@]} * per_agent))
check_eq "every twin delivered its spool" \
	"$(find "$tmp"/spool.* -maxdepth 1 -name '*.fbr' | wc -l)" 0
check_eq "each report is stored once" "$(($(stored_count) - before))" "$all"
stored_lines=$(cat "$tmp"/ledger/a*.log |
	sed -n 's/.*report \([0-9a-f-]\{36\}\) stored by .*/\1/p')
check_eq "each report was answered COMMITTED to exactly one twin" \
	"$(sort <<<"$stored_lines" | uniq -d | wc -l)|$(wc -l <<<"$stored_lines")" \
	"0|$all"
twin_dups=$(cat "$tmp"/ledger/a*.log | grep -c 'was already stored')
figures "two-collectors: ${#agents[@]} twin pairs, $all reports each sent to both collectors at once: $all COMMITTED (one per report), $twin_dups DUPLICATE"

# --- 3. failover from A to B -------------------------------------------------

# A again, to die at its fault point after its second batch's COMMIT
kill -KILL "$pid_a"
wait "$pid_a" 2>/dev/null
FLEETBENCH_FAULT=collector-after-commit@2 start_collector "$ep_a"
pid_a=$pid log_a=$log
pid=
before=$(stored_count)
for name in "${agents[@]}"; do
	spoolgen "$name" "$per_agent" --provider failover
done
senders=()
for name in "${agents[@]}"; do
	sender "$name" "$ep_a" "$ep_b" &
	senders+=($!)
done
wait "${senders[@]}" 2>/dev/null
wait "$pid_a" 2>/dev/null
check_eq "A died at its fault point while the agents sent" "$?" 137
pid_a=
check_has "it says so" "$log_a" \
	"fault point 'collector-after-commit' reached: SIGKILL"
check_eq "every spool is delivered, through B" \
	"$(find "$tmp"/spool.* -maxdepth 1 -name '*.fbr' | wc -l)" 0
check_eq "each report is stored once" "$(($(stored_count) - before))" "$all"
failovers=$(cat "$tmp"/ledger/a*.log | grep -c "failing over to $ep_b")
check_match "the agents failed over to B" "$failovers" "[1-9]*"
dups=$(($(cat "$tmp"/ledger/a*.log | grep -c 'was already stored') - twin_dups))
figures "two-collectors: failover: A killed after a COMMIT while 10 agents sent $all reports to A, else B: $failovers fail-overs, $dups answered DUPLICATE by B (A had stored them), all stored once"

rel_check_end
pid=$pid_b
log=$log_b
stop_collector
check_eq "collector B exits 0" "$?" 0
finish
