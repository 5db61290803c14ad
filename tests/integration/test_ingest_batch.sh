#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The collector's batch against the real fleetbench_ingest_run() and
# fleetbench_ingest_end() (docs/operations.md, "What serve does with a
# report"): reports sent together are stored in one transaction with
# their medians computed by the collector; an error of
# fleetbench_ingest_end() fails the whole batch (RETRY_LATER for every
# report, nothing stored, logged with the server's message); a database
# whose ingest function is missing is refused at prepare, RETRY_LATER;
# with --db-connections 2, batches stored side by side are each stored
# once.
#
# Environment: as test_collector.sh.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_built "$COLLECTOR" "$ZSEND"
tmp_new ingest-batch
# the harness runs PostgreSQL as another user when we are root
chmod 0755 "$tmp"
pg_start "$tmp/pg"
"$COLLECTOR" migrate --schema-dir "$SOURCE_DIR/schema" --dsn "$conninfo" \
	>"$tmp/migrate.out" 2>&1
check_eq "migrate exits 0" "$?" 0
keys_new a1
allow_keys a1
start_collector

# --- a batch is stored whole, medians from the collector ---------------------

A1=$(uuid) A2=$(uuid) A3=$(uuid)
zs a1 --report "$A1" --report "$A2" --report "$A3" >"$tmp/a.out"
check_eq "three reports sent together are COMMITTED" \
	"$(sort "$tmp/a.out")" \
	"$(printf 'ack COMMITTED %s \n' "$A1" "$A2" "$A3" | sort)"
check_eq "their samples, and the median of 1.5, 2.25, 0.1, are stored" \
	"$(q <<-EOF
	SELECT count(*), min(samples::text), min(median), max(median)
	FROM bench_metrics WHERE run_id IN ('$A1', '$A2', '$A3')
EOF
)" "3|{1.5,2.25,0.1}|1.5|1.5"

# --- fleetbench_ingest_end() fails: the batch is RETRY_LATER ----------------

q <<-'EOF'
	ALTER FUNCTION fleetbench_ingest_end() RENAME TO test_ingest_end_saved;
	CREATE FUNCTION fleetbench_ingest_end() RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
		RAISE check_violation USING MESSAGE = 'test: the end refuses';
	END $$;
EOF
E1=$(uuid) E2=$(uuid)
zs a1 --report "$E1" --report "$E2" >"$tmp/e.out"
check_eq "both reports of the failed batch are answered RETRY_LATER" \
	"$(cut -d' ' -f1-3 "$tmp/e.out" | sort)" \
	"$(printf 'ack RETRY_LATER %s\n' "$E1" "$E2" | sort)"
check_eq "nothing of them is stored" "$(q <<-EOF
	SELECT (SELECT count(*) FROM runs WHERE run_id IN ('$E1', '$E2')),
	       (SELECT count(*) FROM bench_metrics
		WHERE run_id IN ('$E1', '$E2'))
EOF
)" "0|0"
check_grep "the failure is logged with the server's message" "$log" \
	"a batch of [12] reports was rolled back: fleetbench_ingest_end\(\) failed: test: the end refuses"
q <<-'EOF'
	DROP FUNCTION fleetbench_ingest_end();
	ALTER FUNCTION test_ingest_end_saved() RENAME TO fleetbench_ingest_end;
EOF
zs a1 --report "$E1" --report "$E2" >"$tmp/e2.out"
check_eq "sent again once it works, both are COMMITTED" \
	"$(sort "$tmp/e2.out")" \
	"$(printf 'ack COMMITTED %s \n' "$E1" "$E2" | sort)"
check_eq "and stored once each" \
	"$(q <<<"SELECT count(*) FROM runs WHERE run_id IN ('$E1', '$E2')")" 2

# --- a database without the function: RETRY_LATER, logged -----------------

stop_collector
check_eq "the collector exits 0" "$?" 0
q <<<"ALTER FUNCTION fleetbench_ingest_run RENAME TO test_ingest_run_saved"
start_collector
M=$(uuid)
check_match "without fleetbench_ingest_run() a report is RETRY_LATER" \
	"$(zs a1 --report "$M")" "ack RETRY_LATER $M *"
check_grep "the prepare's failure is logged" "$log" \
	"cannot store a batch of 1 reports: cannot prepare the ingest statement: function fleetbench_ingest_run\(fleetbench_report\) does not exist"
q <<<"ALTER FUNCTION test_ingest_run_saved RENAME TO fleetbench_ingest_run"
check_eq "once it is back, the report is COMMITTED" \
	"$(zs a1 --report "$M")" "ack COMMITTED $M "

# --- a contract other than the collector's: RETRY_LATER, logged -----------

# a fleetbench_report with an attribute this collector does not send (as
# if a newer migration had added it by hand): PostgreSQL refuses the
# record, which is not the report's fault
attrs=$(q <<<"SELECT count(*) FROM pg_attribute
	     WHERE attrelid = 'fleetbench_report'::regclass AND attnum > 0
		   AND NOT attisdropped")
q <<<"ALTER TYPE fleetbench_report ADD ATTRIBUTE test_extra integer"
M=$(uuid)
check_match "a record of other attributes is RETRY_LATER, not REJECTED" \
	"$(zs a1 --report "$M")" "ack RETRY_LATER $M *"
check_grep "PostgreSQL's refusal is logged" "$log" \
	"wrong number of columns: $attrs, expected $((attrs + 1))"
q <<<"ALTER TYPE fleetbench_report DROP ATTRIBUTE test_extra"
check_eq "once the type is the collector's again, the report is COMMITTED" \
	"$(zs a1 --report "$M")" "ack COMMITTED $M "
stop_collector
check_eq "the collector exits 0" "$?" 0

# --- two connections: batches stored side by side ---------------------------

start_collector "tcp://127.0.0.1:*" --db-connections 2 --batch-max 2
ids=()
for i in $(seq 12); do
	ids+=("$(uuid)")
done
senders=()
for k in 0 1 2; do
	zs a1 --report "${ids[k * 4]}" --report "${ids[k * 4 + 1]}" \
		--report "${ids[k * 4 + 2]}" --report "${ids[k * 4 + 3]}" \
		>"$tmp/conn.$k.out" &
	senders+=($!)
done
wait "${senders[@]}"
check_eq "with --db-connections 2, twelve reports from three senders are COMMITTED" \
	"$(sort "$tmp"/conn.?.out)" \
	"$(printf 'ack COMMITTED %s \n' "${ids[@]}" | sort)"
in_list=$(printf "'%s'," "${ids[@]}")
check_eq "each is stored once, with its results" "$(q <<-EOF
	SELECT count(*), count(DISTINCT run_id), sum(n)
	FROM (SELECT r.run_id, (SELECT count(*) FROM run_results AS x
				WHERE x.run_id = r.run_id) AS n
	      FROM runs AS r WHERE r.run_id IN (${in_list%,})) AS s
EOF
)" "12|12|12"
check_eq "the collector holds two connections to PostgreSQL" "$(q <<-'EOF'
	SELECT count(*) FROM pg_stat_activity
	WHERE application_name = 'fleetbench-collector'
		AND datname = current_database()
EOF
)" 2
# shellcheck disable=SC2046 # one --report per id
zs a1 $(printf -- '--report %s ' "${ids[@]}") >"$tmp/conn.again.out"
check_eq "sent again, each is DUPLICATE" "$(sort "$tmp/conn.again.out")" \
	"$(printf 'ack DUPLICATE %s \n' "${ids[@]}" | sort)"
stop_collector
check_eq "the collector exits 0 at the end" "$?" 0

finish
