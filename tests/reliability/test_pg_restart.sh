#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Item 5 of docs/reliability.md: PostgreSQL crashes under the collector
# (`pg_ctl restart -m immediate`, 5 times, during a steady stream of
# reports from 10 agents) and is stopped for 20 s (60 s with
# FLEETBENCH_LONG=1: the collector's reconnect backoff reaches its 2-s cap
# within 4 s, so 20 s are as long an outage to it). The promises: no Ack
# (COMMITTED or DUPLICATE) reaches an agent while the database is down, the
# collector is connected again within 5 s of the database accepting
# connections, and nothing is lost: every report ends stored exactly once.
#
# The agents are real: each spools a report (spoolgen) and runs `send`,
# over and over, every line it logs stamped with the time it was read.
set -uo pipefail

# a server of its own (lib.sh): it crashes and restarts PostgreSQL
# shellcheck disable=SC2034 # read by lib.sh
own_server=1

# shellcheck source=tests/reliability/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

agents=(a1 a2 a3 a4 a5 a6 a7 a8 a9 a10)
restarts=5
outage_s=20
[ "$long" = 1 ] && outage_s=60
rel_setup pg-restart "${agents[@]}"
start_collector

streams=()
# shellcheck disable=SC2317 # called at exit by lib.sh
on_cleanup() {
	touch "$tmp/stop"
	[ ${#streams[@]} -gt 0 ] && kill "${streams[@]}" 2>/dev/null
	wait
}


# ready_epoch: when PostgreSQL last said it accepts connections, in
# seconds since the epoch (its log's own time stamp)
ready_epoch() {
	local line

	# (pg_ctl's own "waiting..." may share the line)
	line=$(grep 'database system is ready to accept connections' \
		"$tmp/pg/postgres.log" | tail -n 1 |
		grep -oE '[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:.]+ [A-Z]+ \[')
	date -d "${line% \[}" +%s.%N
}

# backend_epoch: when the collector's first current connection began,
# once it has one (epoch seconds); fails while it has none
backend_epoch() {
	local t

	t=$(q <<-EOF
		SELECT min(extract(epoch FROM backend_start)) FROM pg_stat_activity
		WHERE application_name = 'fleetbench-collector'
	EOF
	)
	[ -n "$t" ] && echo "$t"
}

# reconnect_delay: seconds from the database's return to the collector's
# connection (waits up to 30 s for it)
reconnect_delay() {
	local back

	wait_for 30 backend_epoch >/dev/null || {
		echo never
		return
	}
	back=$(backend_epoch)
	awk -v a="$back" -v b="$(ready_epoch)" 'BEGIN { printf "%.2f", a - b }'
}

# acked_between FROM TO: Acks the agents logged between these times
acked_between() {
	cat "$tmp"/ledger/*.log | awk -v from="$1" -v to="$2" '
		$1 ~ /^[0-9]+\.[0-9]+$/ && $1 > from && $1 < to &&
		/report [0-9a-f-]+ (stored by|was already stored)/ { n++ }
		END { print n + 0 }'
}

for name in "${agents[@]}"; do
	rel_stream "$name" restart &
	streams+=($!)
done

# a steady stream: reports are being stored before anything happens
wait_for 30 stored_over 20
check_eq "the stream is flowing" "$?" 0

# --- 5 crashes --------------------------------------------------------------

max_delay=0
for i in $(seq "$restarts"); do
	# the stream runs between the crashes: ten more reports stored
	wait_for 30 stored_over "$(($(stored_count) + 9))" ||
		not_ok "crash $i: no ten reports stored since the last one"
	before=$(stored_count)
	if ! "$harness" crash-restart "$tmp/pg" 2>"$tmp/restart.err"; then
		not_ok "pg_ctl restart -m immediate: $(cat "$tmp/restart.err")"
		continue
	fi
	delay=$(reconnect_delay)
	check_match "restart $i: the collector reconnects" "$delay" "[0-9]*.*"
	awk -v d="$delay" 'BEGIN { exit !(d <= 5) }'
	check_eq "restart $i: within 5 s of the database's return ($delay s)" \
		"$?" 0
	max_delay=$(awk -v a="$max_delay" -v b="$delay" \
		'BEGIN { print (b > a ? b : a) }')
	wait_for 30 stored_over "$before"
	check_eq "restart $i: reports are stored again" "$?" 0
done
if kill -0 "$pid" 2>/dev/null; then ok; else not_ok "the collector died"; fi

# --- stopped for 60 s -------------------------------------------------------

"$harness" stop "$tmp/pg" 2>/dev/null
down=$EPOCHREALTIME
during=$(stored_count 2>/dev/null)
sleep "$outage_s"
up=$EPOCHREALTIME
"$harness" start "$tmp/pg" >/dev/null 2>&1 || not_ok "PostgreSQL did not start"
# an Ack read within half a second of the stop may be of a commit just
# before it
acks=$(acked_between "$(awk -v t="$down" 'BEGIN { printf "%.6f", t + 0.5 }')" "$up")
check_eq "no Ack while PostgreSQL was down" "$acks" 0
retries=$(cat "$tmp"/ledger/*.log | awk -v from="$down" -v to="$up" '
	$1 > from && $1 < to && /asks to retry later/ { n++ }
	END { print n + 0 }')
check_match "the agents were answered RETRY_LATER meanwhile" "$retries" \
	"[1-9]*"
outage_delay=$(reconnect_delay)
awk -v d="$outage_delay" 'BEGIN { exit !(d <= 5) }'
check_eq "after ${outage_s} s down, the collector reconnects within 5 s ($outage_delay s)" \
	"$?" 0
wait_for 30 stored_over "${during:-0}"
check_eq "reports are stored again" "$?" 0

# --- the end ----------------------------------------------------------------

touch "$tmp/stop"
wait "${streams[@]}"
streams=()
if kill -0 "$pid" 2>/dev/null; then ok; else not_ok "the collector died"; fi
rel_flush "${agents[@]}"
kill -HUP "$pid"
wait_for 5 grep -q 'messages received' "$log"
eval "$(collector_stats)"
figures "pg-restart: ${#agents[@]} agents streaming; $restarts crash restarts (pg_ctl restart -m immediate): reconnected at most ${max_delay} s after the database accepted connections; ${outage_s} s stopped: 0 Acks, $retries RETRY_LATER answers, reconnected ${outage_delay} s after; collector: ${st_committed:-?} committed, ${st_duplicate:-?} duplicate, ${st_retry:-?} retry later, ${st_unacked:-?} left unacknowledged"
rel_check_end
stop_collector
check_eq "the collector exits 0" "$?" 0
finish
