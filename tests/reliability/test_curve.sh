#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Item 8 of docs/reliability.md: CURVE keeps out an unknown agent key, a
# plaintext client, a client that knows the wrong server key, and an agent
# whose key leaves the allowlist (SIGHUP) in the middle of a send pass,
# while a legitimate agent sends all along. None of their messages reaches
# validation (the collector's counters: nothing rejected, everything it
# received committed or dropped), nothing of theirs is stored, and the
# legitimate agent never notices.
# shellcheck disable=SC2154 # st_*: eval "$(collector_stats)"
set -uo pipefail

# shellcheck source=tests/reliability/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

rel_setup curve a1 a2
"$COLLECTOR" keygen --dir "$keys" --name u1 >/dev/null # never allowed
mkdir "$tmp/rogue"
"$COLLECTOR" keygen --dir "$tmp/rogue" >/dev/null # not the collector's
start_collector

attempts=5
[ "$long" = 1 ] && attempts=50

# the legitimate agent: passes of 10 reports until told to stop
legit() {
	while [ ! -e "$tmp/stop" ]; do
		spoolgen a1 10
		ragent a1 send
		echo "$?" >>"$tmp/legit.status"
		sleep 0.2
	done
}
legit &
legit_pid=$!
victim_pid=
# shellcheck disable=SC2317 # called at exit by lib.sh
on_cleanup() {
	touch "$tmp/stop"
	kill "$legit_pid" $victim_pid 2>/dev/null
}

# attack NAME COMMAND...: the command with a new report, attempts times;
# each must print zsend's "timeout: no connection" line. 500 ms: a CURVE
# handshake on loopback takes milliseconds, and a refused one never
# completes, so a longer wait only made each attempt cost 2 s
wait_ms=$((500 * slow))
nocon="timeout: no connection within $wait_ms ms"
attack() {
	local name=$1 id out bad=0

	shift
	for _ in $(seq "$attempts"); do
		id=$(uuid)
		echo "$id" >>"$tmp/attack.ids"
		out=$("$@" --report "$id")
		[ "$out" = "$nocon" ] || bad=$((bad + 1))
	done
	check_eq "$name: $attempts attempts, none connects" "$bad" 0
}
attack "an unknown agent key" zs u1 --timeout "$wait_ms"
attack "a plaintext client" "$ZSEND" --endpoint "$endpoint" --insecure \
	--timeout "$wait_ms"
attack "a client with the wrong server key" "$ZSEND" \
	--endpoint "$endpoint" --server-key "$tmp/rogue/collector.pub" \
	--agent-key "$keys/a1.key" --timeout "$wait_ms"
check_has "the unknown key is refused and named" "$log" \
	"refused CURVE peer with key $(cat "$keys/u1.pub") from 127.0.0.1"

# the victim: its key leaves the allowlist while it sends 500 reports
spoolgen a2 500 --provider victim
ledger_snapshot a2
agent a2 send >"$tmp/a2.out" 2>"$tmp/a2.err" &
victim_pid=$!
stored_50() {
	[ "$(grep -c 'stored by' "$tmp/a2.err")" -ge 50 ]
}
wait_for 60 stored_50
check_eq "the victim is sending" "$?" 0
rm "$allow/a2.pub"
kill -HUP "$pid"
wait_for 10 grep -q "reloaded the allowlist '$allow': 1 agent keys" "$log"
check_eq "SIGHUP: the allowlist holds a1 only" "$?" 0
wait "$victim_pid"
check_eq "the victim's pass stops: exit 3 (spooled, undelivered)" "$?" 3
victim_pid=
cat "$tmp/a2.err" >>"$tmp/ledger/a2.log"
check_grep "its messages after the reload go unanswered" "$tmp/a2.err" \
	"no answer from .* \(attempt 1\)"
acked=$(grep -c 'stored by' "$tmp/a2.err")
check_eq "of the victim, exactly what was acknowledged is stored" \
	"$(runs_of victim)" "$acked"
attack "the removed key" zs a2 --timeout "$wait_ms"
check_has "the removed key is refused and named" "$log" \
	"refused CURVE peer with key $(cat "$keys/a2.pub") from 127.0.0.1"

touch "$tmp/stop"
wait "$legit_pid"
passes=$(wc -l <"$tmp/legit.status")
check_eq "the legitimate agent: every pass exits 0" \
	"$(sort -u "$tmp/legit.status")" 0
check_eq "it never waited for an answer" \
	"$(grep -c 'no answer from' "$tmp/ledger/a1.log")" 0
check_eq "nothing sent by the attackers is stored" \
	"$(stored | comm -12 - <(sort "$tmp/attack.ids") | wc -l)" 0

kill -HUP "$pid"
stats_twice() {
	[ "$(grep -c 'messages received' "$log")" -ge 2 ]
}
wait_for 5 stats_twice
eval "$(collector_stats)"
legit_acked=$(grep -c 'stored by' "$tmp/ledger/a1.log")
check_eq "no message reached validation to be rejected" "${st_rejected:-}" 0
check_eq "everything the collector received was an agent's report or dropped" \
	"${st_received:-}" $((st_committed + st_duplicate + st_dropped))
check_eq "it committed exactly what the two agents were acknowledged" \
	"$st_committed" $((legit_acked + acked))
check_match "the victim's messages after the reload were dropped" \
	"$st_dropped" "[1-9]*"
figures "CURVE: $attempts attempts each by an unknown key, a plaintext client, the wrong server key and a removed key: 0 connected; the victim's key removed after $acked of 500 reports: $st_dropped messages dropped unvalidated; collector: received $st_received, committed $st_committed, rejected $st_rejected, peers refused $st_refused; the legitimate agent: $passes passes, $legit_acked reports, no timeout"

# the victim's key back: the rest of its spool is delivered
cp "$keys/a2.pub" "$allow/"
kill -HUP "$pid"
wait_for 5 grep -q "reloaded the allowlist '$allow': 2 agent keys" "$log"
rel_flush a1 a2
rel_check_end
stop_collector
check_eq "the collector exits 0" "$?" 0
finish
