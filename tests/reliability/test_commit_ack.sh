#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 7, item 4: an Ack leaves the collector only after its COMMIT
# returned, and a report whose COMMIT outcome the collector cannot know is
# left unanswered, so that its re-send is answered DUPLICATE and adds no
# row. Three ways into that window, on a real PostgreSQL with the real
# collector, agent and zsend:
#
#  1. the collector dies (fault point collector-after-commit) after the
#     COMMIT returned and before the Acks left;
#  2. its backend is killed with pg_terminate_backend() inside COMMIT,
#     after the commit record is flushed: a synchronous standby that never
#     comes (synchronous_standby_names) holds every COMMIT there, committed
#     locally but not returned;
#  3. COMMIT is held in a deferred constraint trigger waiting for an
#     advisory lock this test holds: while it waits no Ack arrives, once
#     the lock is released every Ack of the batch does.
set -uo pipefail

# a server of its own (lib.sh): it reconfigures PostgreSQL (ALTER SYSTEM)
# shellcheck disable=SC2034 # read by lib.sh
own_server=1

# shellcheck source=tests/reliability/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

rel_setup commit-ack a1 a2

# copies RUN_ID: how many runs hold this run id
copies() {
	q <<<"SELECT count(*) FROM runs WHERE run_id = '$1'"
}

# zsent RUN_ID...: into the ledger, as sent by zsend
zsent() {
	printf '%s\n' "$@" >>"$tmp/ledger/zsend.ids"
}

# backend_waits EVENT: the collector's backend waits on EVENT
backend_waits() {
	[ "$(q <<-EOF
		SELECT count(*) FROM pg_stat_activity
		WHERE application_name = 'fleetbench-collector'
		  AND wait_event = '$1'
	EOF
	)" = 1 ]
}

zpid=
hold_pid=
# shellcheck disable=SC2317 # called at exit by lib.sh
on_cleanup() {
	[ -n "$zpid" ] && kill -KILL "$zpid" 2>/dev/null
	[ -n "$hold_pid" ] && kill -KILL "$hold_pid" 2>/dev/null
}

# --- 1. killed between COMMIT and the Ack ---------------------------------

FLEETBENCH_FAULT=collector-after-commit start_collector
port=${endpoint##*:}
ragent a1 run "${quick_run[@]}" --provider fault --instance-type t1 \
	--dir "$tmp" --no-send
check_eq "a1's run is spooled" "$(spooled a1)" 1
run_id=$(spool_ids a1)
ragent a1 send
check_eq "the agent gets no Ack from a collector that dies after COMMIT" \
	"$?" 3
wait "$pid" 2>/dev/null
check_eq "the collector was killed by the fault point" "$?" 137
pid=
check_has "it says where it died" "$log" \
	"fault point 'collector-after-commit' reached: SIGKILL"
check_eq "the report is stored" "$(copies "$run_id")" 1
check_eq "and still spooled" "$(spooled a1)" 1
start_collector "tcp://127.0.0.1:$port"
ragent a1 send
check_eq "after the restart the agent's send exits 0" "$?" 0
check_has "the re-send is answered DUPLICATE" "$tmp/a1.out" \
	"committed 0, duplicate 1"
check_eq "the spool is empty" "$(spooled a1)" 0
check_eq "the re-send added no row" "$(copies "$run_id")" 1

# --- 2. pg_terminate_backend() inside COMMIT -------------------------------

# (only a write waits for it: the test's reads do not)
q >/dev/null <<-EOF
	ALTER SYSTEM SET synchronous_standby_names = 'fleetbench_test_nobody';
	SELECT pg_reload_conf();
EOF
K=$(uuid)
zsent "$K"
zs a2 --report "$K" --timeout $((5000 * slow)) >"$tmp/z2.out" &
zpid=$!
wait_for 10 backend_waits SyncRep
check_eq "the collector's COMMIT waits for the standby" "$?" 0
sleep 1
check_eq "no Ack while COMMIT has not returned" "$(cat "$tmp/z2.out")" ""
backend=$(q <<<"SELECT pid FROM pg_stat_activity
	WHERE application_name = 'fleetbench-collector' AND wait_event = 'SyncRep'")
check_eq "pg_terminate_backend() inside COMMIT" \
	"$(q <<<"SELECT pg_terminate_backend($backend)")" t
wait "$zpid"
check_eq "the report whose COMMIT broke gets no Ack" "$?|$(cat "$tmp/z2.out")" \
	"3|timeout: no answer within $((5000 * slow)) ms"
zpid=
check_grep "the collector says the outcome is unknown" "$log" \
	": 1 reports left unacknowledged"
check_eq "it had committed locally: the run is stored" "$(copies "$K")" 1
q >/dev/null <<-EOF
	ALTER SYSTEM RESET synchronous_standby_names;
	SELECT pg_reload_conf();
EOF
duplicate() {
	[ "$(zs a2 --report "$K")" = "ack DUPLICATE $K " ]
}
wait_for 15 duplicate
check_eq "the re-send is answered DUPLICATE" "$?" 0
check_eq "and adds no row" "$(copies "$K")" 1

# --- 3. COMMIT held by a deferred trigger: no Ack until it returns ---------

# admit_bytes of one byte: an offer is granted only when nothing else is
# let in, and a report is let in until libpq has taken it, not until its
# batch is answered
stop_collector
check_eq "the collector exits 0 on SIGTERM" "$?" 0
start_collector "tcp://127.0.0.1:$port" --admit-bytes 1

q <<-'EOF'
	CREATE FUNCTION test_hold() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		PERFORM pg_advisory_xact_lock(4242);
		RETURN NULL;
	END $$;
	CREATE CONSTRAINT TRIGGER test_hold AFTER INSERT ON runs
		DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
		WHEN (NEW.hostname = 'refuse-me') EXECUTE FUNCTION test_hold();
EOF
# a session that holds the lock until told (on fd 7, which nothing else
# may inherit: the session ends only when every writer is gone)
mkfifo "$tmp/hold"
"$PG_BINDIR/psql" "$conninfo" -X -q -A -t <"$tmp/hold" >"$tmp/hold.out" 2>&1 &
hold_pid=$!
exec 7>"$tmp/hold"
echo "SELECT pg_advisory_lock(4242); SELECT 'locked';" >&7
wait_for 10 grep -q locked "$tmp/hold.out"
check_eq "the test holds the lock" "$?" 0
H1=$(uuid) H2=$(uuid) H3=$(uuid)
zsent "$H1" "$H2" "$H3"
zs a1 --report "$H1" --report "refuse:$H2" --report "$H3" \
	--timeout $((20000 * slow)) >"$tmp/z3.out" 7>&- &
zpid=$!
wait_for 10 backend_waits advisory
check_eq "the collector's COMMIT waits in the deferred trigger" "$?" 0
sleep 2
check_eq "no Ack of the batch while its COMMIT waits" "$(cat "$tmp/z3.out")" ""
if kill -0 "$zpid" 2>/dev/null; then ok; else not_ok "zsend stopped waiting"; fi
check_eq "nothing of the batch is visible yet" "$(q <<-EOF
	SELECT count(*) FROM runs WHERE run_id IN ('$H1', '$H2', '$H3')
EOF
)" 0
G=$(uuid)
check_eq "an offer is granted while that COMMIT waits: the batch's bytes left admit_bytes when libpq took them" \
	"$(zs a2 --offer "$G" 7>&-)" "ack GRANTED $G "
# an agent that timed out offers its report again: not while the first
# copy is in the collector's hands (issue 16)
zs a2 --offer "$H1" >"$tmp/inhand.out" 7>&-
check_grep "an offer for a report still in hand is answered RETRY_LATER, not granted" \
	"$tmp/inhand.out" "^ack RETRY_LATER $H1 report $H1 is in hand already"
echo "SELECT pg_advisory_unlock(4242);" >&7
exec 7>&-
wait "$hold_pid"
hold_pid=
wait "$zpid"
check_eq "once COMMIT returns every Ack of the batch arrives" \
	"$?|$(cut -d' ' -f1-3 "$tmp/z3.out" | sort -k3)" \
	"0|$(printf 'ack COMMITTED %s\n' "$H1" "$H2" "$H3" | sort -k3)"
zpid=
check_eq "and the batch is stored" "$(q <<-EOF
	SELECT count(*) FROM runs WHERE run_id IN ('$H1', '$H2', '$H3')
EOF
)" 3

figures "commit-ack: killed after COMMIT: re-send DUPLICATE, 1 row; backend terminated in COMMIT (committed locally): no Ack, re-send DUPLICATE, 1 row; COMMIT held 2 s: 0 of 3 Acks before it returned, 3 after; meanwhile an offer GRANTED with admit_bytes 1 (the held batch no longer let in), and an offer for a report of the held batch RETRY_LATER"
rel_check_end
stop_collector
check_eq "the collector exits 0" "$?" 0
finish
