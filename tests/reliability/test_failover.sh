#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Item 16 of docs/reliability.md: the primary dies under the collectors
# (issue 38). A primary with a synchronous standby (streaming replication,
# synchronous_standby_names = '*': a COMMIT returns once the standby has
# the WAL on disk), two collectors connected with a multi-host conninfo
# and target_session_attrs=read-write, and 10 real agents streaming
# reports to them (5 each). The primary is killed with SIGKILL (the
# postmaster and every backend at once: the host died), the standby is
# promoted 2 s later (what a failover manager takes to decide), and the
# stream goes on. The promises: every report ever acknowledged is on the
# new primary, every other one is sent again by its agent and stored
# once, and both collectors store again without a restart. Reported: the
# seconds without a primary (kill to promotion) and from the kill to the
# first commit on the new primary.
set -uo pipefail

# a server of its own (lib.sh): it kills PostgreSQL and promotes a standby
# shellcheck disable=SC2034 # read by lib.sh
own_server=1

# shellcheck source=tests/reliability/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

agents=(a1 a2 a3 a4 a5 a6 a7 a8 a9 a10)
decide_s=2
rel_setup failover "${agents[@]}"

user=$(sed -n 's/.* user=\([^ ]*\).*/\1/p' <<<"$conninfo")
if ! "$harness" standby "$tmp/pg2" "$tmp/pg" sync >/dev/null 2>"$tmp/standby.err"; then
	not_ok "a synchronous standby: $(tail -n 3 "$tmp/standby.err")"
	finish
fi
check_eq "the standby is synchronous" "$(q <<-'EOF'
	SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby'
EOF
)" sync

# both servers, the one that takes writes wins (libpq tries them in turn)
# shellcheck disable=SC2034 # read by serve_dsn (lib.sh)
collector_dsn="host=$tmp/pg,$tmp/pg2 dbname=fleetbench user=$user target_session_attrs=read-write"
start_collector
# shellcheck disable=SC2034 # log1 and log2 are read through ${!l}
pid1=$pid log1=$log ep1=$endpoint
start_collector
# shellcheck disable=SC2034 # read through ${!l}
pid2=$pid log2=$log ep2=$endpoint
pid=

streams=()
# shellcheck disable=SC2317 # called at exit by lib.sh
on_cleanup() {
	touch "$tmp/stop"
	[ ${#streams[@]} -gt 0 ] && kill "${streams[@]}" 2>/dev/null
	wait "${streams[@]}" 2>/dev/null
	kill -KILL "$pid1" "$pid2" 2>/dev/null
	"$harness" stop "$tmp/pg2" >/dev/null 2>&1
}

# acked_after T AGENT...: Acks these agents logged after time T
acked_after() {
	local from=$1 name files=()

	shift
	for name in "$@"; do
		files+=("$tmp/ledger/$name.log")
	done
	cat "${files[@]}" | awk -v from="$from" '
		$1 ~ /^[0-9]+\.[0-9]+$/ && $1 > from &&
		/report [0-9a-f-]+ (stored by|was already stored)/ { n++ }
		END { print n + 0 }'
}

for name in "${agents[@]:0:5}"; do
	endpoint=$ep1 rel_stream "$name" failover &
	streams+=($!)
done
for name in "${agents[@]:5}"; do
	endpoint=$ep2 rel_stream "$name" failover &
	streams+=($!)
done

wait_for 60 stored_over 40
check_eq "the stream is flowing" "$?" 0

# --- the primary dies ---------------------------------------------------------

before=$(stored_count)
acked_before=$(ledger_acked | wc -l)
killed=$EPOCHREALTIME
"$harness" sigkill "$tmp/pg" 2>"$tmp/sigkill.err" ||
	not_ok "SIGKILL of the primary: $(cat "$tmp/sigkill.err")"
sleep "$decide_s"
"$harness" promote "$tmp/pg2" >/dev/null 2>"$tmp/promote.err" ||
	not_ok "promoting the standby: $(cat "$tmp/promote.err")"
promoted=$EPOCHREALTIME
conninfo="host=$tmp/pg2 dbname=fleetbench user=$user"

# shellcheck disable=SC2317 # called by wait_for
committed_since_kill() {
	[ "$(q <<<"SELECT count(*) FROM runs WHERE received_at > to_timestamp($killed)")" -gt 0 ]
}
wait_for 60 committed_since_kill
check_eq "reports are stored on the new primary" "$?" 0
first=$(q <<<"SELECT extract(epoch FROM min(received_at)) FROM runs
	      WHERE received_at > to_timestamp($killed)")
no_primary=$(awk -v a="$killed" -v b="$promoted" 'BEGIN { printf "%.2f", b - a }')
to_commit=$(awk -v a="$killed" -v b="$first" 'BEGIN { printf "%.2f", b - a }')
awk -v d="$to_commit" -v p="$no_primary" 'BEGIN { exit !(d < p + 10) }'
check_eq "the first commit within 10 s of the promotion ($to_commit s after the kill, $no_primary s without a primary)" \
	"$?" 0

# the stream goes on through both collectors, neither restarted
wait_for 60 stored_over "$(($(stored_count) + 40))"
check_eq "40 more reports stored after the failover" "$?" 0
for c in 1 2; do
	p=pid$c
	if kill -0 "${!p}" 2>/dev/null; then ok; else not_ok "collector $c died"; fi
done
check_match "collector 1's agents acknowledged after the promotion" \
	"$(acked_after "$promoted" "${agents[@]:0:5}")" "[1-9]*"
check_match "collector 2's agents acknowledged after the promotion" \
	"$(acked_after "$promoted" "${agents[@]:5}")" "[1-9]*"

# --- the end --------------------------------------------------------------------

touch "$tmp/stop"
wait "${streams[@]}"
streams=()
endpoint=$ep1 rel_flush "${agents[@]:0:5}"
endpoint=$ep2 rel_flush "${agents[@]:5}"
acked=$(ledger_acked | wc -l)
lost=$(comm -23 <(ledger_acked) <(stored) | wc -l)
check_eq "no acknowledged report is lost" "$lost" 0
unacked=0
for c in 1 2; do
	l=log$c p=pid$c
	log=${!l}
	kill -HUP "${!p}"
	wait_for 5 grep -q 'messages received' "$log"
	eval "$(collector_stats)"
	unacked=$((unacked + ${st_unacked:-0}))
done
figures "failover: 10 agents streaming to 2 collectors (multi-host conninfo, target_session_attrs=read-write), synchronous standby; primary SIGKILLed after $before stored ($acked_before acknowledged), standby promoted ${decide_s} s later: ${no_primary} s without a primary, first commit on the new primary ${to_commit} s after the kill; $acked acknowledged in all, $lost lost, $unacked left unacknowledged by the collectors (commit unknown, sent again)"
rel_check_end
for c in 1 2; do
	p=pid$c
	kill -TERM "${!p}"
	wait "${!p}"
	check_eq "collector $c exits 0" "$?" 0
done
pid1='' pid2=''
finish
