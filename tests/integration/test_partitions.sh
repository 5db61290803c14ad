#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# schema/006_partition_results.sql on a real PostgreSQL: applied to a
# database that already holds reports, the results tables become
# partitioned by month with every row kept and every view (whichever
# migration made it) answering as before; a report is stored once however
# often it is sent; a month without a partition waits in the default one
# until fleetbench_results_partition() moves it; old months are dropped
# whole by fleetbench_results_drop_before(). Since schema/010_lean.sql the
# partitioned table is run_results (the old tables are views over it and
# runs): the last part tests the partitions of run_results.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_built "$COLLECTOR" "$ZSEND" "$AGENT"
tmp_new partitions
# the harness runs PostgreSQL as another user when we are root
chmod 0755 "$tmp"
pg_start "$tmp/pg"

# the migrations before 006, then 006 (the views are compared across it
# alone: 007 adds columns to some), then all
mkdir "$tmp/before" "$tmp/upto6" "$tmp/all"
for f in "$SOURCE_DIR"/schema/[0-9][0-9][0-9]_*.sql; do
	name=${f##*/}
	cp "$f" "$tmp/all/"
	[ $((10#${name%%_*})) -lt 6 ] && cp "$f" "$tmp/before/"
	[ $((10#${name%%_*})) -le 6 ] && cp "$f" "$tmp/upto6/"
done
cp -r "$SOURCE_DIR/schema/functions" "$tmp/all/"
"$COLLECTOR" migrate --schema-dir "$tmp/before" --dsn "$conninfo" \
	>"$tmp/migrate1.out" 2>&1 || not_ok "migrate to 005: $(cat "$tmp/migrate1.out")"

# serve_with DIR: a plaintext collector over these migrations, in the
# background; sets pid and endpoint
serve_with() {
	"$COLLECTOR" serve --schema-dir "$1" --dsn "$conninfo" --insecure \
		--bind 'tcp://127.0.0.1:*' 2>"$tmp/serve.log" &
	pid=$!
	wait_for 10 grep -q 'listening on' "$tmp/serve.log" ||
		not_ok "the collector did not start: $(cat "$tmp/serve.log")"
	endpoint=$(sed -n 's/.*listening on \(tcp:[^ ]*\) .*/\1/p' "$tmp/serve.log")
}

# send N: N new reports; prints their Acks
send() {
	local args=() i

	for i in $(seq "$1"); do
		args+=(--report "$(uuid)")
	done
	"$ZSEND" --endpoint "$endpoint" --insecure --timeout $((5000 * slow)) \
		"${args[@]}"
}

# 43 reports stored by that schema's own fleetbench_ingest() (today's
# collector speaks only to fleetbench_ingest_run() of 010): the fixtures,
# each under fresh run_ids, started now (this month's partition)
for f in "$SOURCE_DIR"/tests/fixtures/reports/{aws-m5.large-a,aws-m5.large-b,do-thp-always}.json; do
	"$PG_BINDIR/psql" "$conninfo" -X -q -A -t -v ON_ERROR_STOP=1 \
		-v r="$(cat "$f")" >/dev/null <<-'EOF' || not_ok "ingest $f"
		SELECT fleetbench_ingest(jsonb_set(jsonb_set(jsonb_set(:'r'::jsonb,
			'{run_id}', to_jsonb(gen_random_uuid()::text)),
			'{started_unix_ms}', to_jsonb(ms)),
			'{finished_unix_ms}', to_jsonb(ms + 1000)))
		FROM generate_series(1, CASE WHEN :'r'::jsonb->'host'->>'provider' = 'aws'
					     THEN 20 ELSE 3 END),
		     LATERAL (SELECT (extract(epoch FROM now()) * 1000)::bigint
				     - 60000 AS ms) AS t
	EOF
done
check_eq "reports stored before 006" "$(q <<<"SELECT count(*) FROM runs")" 43

# every view's rows, sorted
snapshot() {
	local v

	for v in $(q <<<"SELECT viewname FROM pg_views WHERE schemaname = 'public' ORDER BY 1"); do
		echo "== view $v"
		q <<<"SELECT * FROM $v" | sort
	done
}
# copies of the results, to compare row by row
q <<-'EOF'
	CREATE TABLE test_results AS SELECT * FROM bench_results;
	CREATE TABLE test_metrics AS SELECT * FROM bench_metrics;
	CREATE TABLE test_comparisons AS SELECT * FROM comparisons;
EOF
snapshot >"$tmp/before.txt"
"$COLLECTOR" migrate --schema-dir "$tmp/upto6" --dsn "$conninfo" \
	>"$tmp/migrate2.out" 2>&1
check_eq "006 applies to a database with reports" "$?" 0
check_grep "it says so" "$tmp/migrate2.out" "applied 006_partition_results"
snapshot >"$tmp/after.txt"
check_eq "every view answers as before ($(grep -c '^== view' "$tmp/before.txt") views)" \
	"$(diff "$tmp/before.txt" "$tmp/after.txt" | head -n 5)" ""
for t in results:bench_results metrics:bench_metrics comparisons:comparisons; do
	copy=test_${t%%:*} table=${t#*:}
	cols=$(q <<-EOF
		SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum)
		FROM pg_attribute
		WHERE attrelid = '$copy'::regclass AND attnum > 0
		  AND NOT attisdropped
	EOF
	)
	kept=$(q <<-EOF
		SELECT (SELECT count(*) FROM (SELECT * FROM $copy
			EXCEPT ALL SELECT $cols FROM $table) x) || ' ' ||
		       (SELECT count(*) FROM $copy) || ' ' ||
		       (SELECT count(*) FROM $table)
	EOF
	)
	read -r missing before after <<<"$kept"
	check_eq "every row of $table is kept ($before)" \
		"$missing|$((before > 0))|$after" "0|1|$before"
done
check_eq "each result carries its run's start" "$(q <<-'EOF'
	SELECT count(*) FROM bench_results b JOIN runs r USING (run_id)
	WHERE b.started_at <> r.started_at
EOF
)" 0
check_eq "the three results tables are partitioned by range of started_at" \
	"$(q <<-'EOF'
	SELECT string_agg(c.relname || ':' || pg_get_partkeydef(c.oid), ' '
			  ORDER BY c.relname)
	FROM pg_class c WHERE c.relkind = 'p'
	  AND c.relname IN ('bench_results', 'bench_metrics', 'comparisons')
EOF
)" "bench_metrics:RANGE (started_at) bench_results:RANGE (started_at) comparisons:RANGE (started_at)"
check_eq "the results are in their month's partition, none in the default" \
	"$(q <<-'EOF'
	SELECT count(*) FILTER (WHERE tableoid::regclass::text <>
		to_char(started_at AT TIME ZONE 'UTC',
			'"bench_results_y"YYYY"m"MM')),
	       count(*)
	FROM bench_results
EOF
)" "0|$(q <<<"SELECT count(*) FROM bench_results")"
check_eq "three months ahead exist, and a default" "$(q <<-'EOF'
	SELECT count(*) FROM pg_inherits
	WHERE inhparent = 'bench_results'::regclass
EOF
)" 5

# --- after 006 -------------------------------------------------------------

"$COLLECTOR" migrate --schema-dir "$tmp/all" --dsn "$conninfo" \
	>"$tmp/migrate3.out" 2>&1 || not_ok "migrate after 006: $(cat "$tmp/migrate3.out")"
serve_with "$tmp/all"
check_eq "reports are stored after 006" "$(send 10 | grep -c '^ack COMMITTED')" 10
U=$(uuid)
check_eq "a report sent twice is COMMITTED, then DUPLICATE" \
	"$("$ZSEND" --endpoint "$endpoint" --insecure --report "$U" |
		cut -d' ' -f2)|$("$ZSEND" --endpoint "$endpoint" --insecure \
		--report "$U" | cut -d' ' -f2)" "COMMITTED|DUPLICATE"
check_eq "and stored once" "$(q <<<"SELECT count(*) FROM runs WHERE run_id = '$U'")|$(q <<<"SELECT count(*) FROM bench_results WHERE run_id = '$U'")" "1|1"
kill -TERM "$pid"
wait "$pid"
pid=

# after 010 (schema/010_lean.sql) run_results is the partitioned table: a report of a month without a partition (June 2024) waits in the
# default
old=$(uuid)
check_eq "an old month's report is stored" "$(q <<-EOF
	SELECT fleetbench_ingest(jsonb_set(jsonb_set(jsonb_set(
		jsonb_build_object('schema_version', 1, 'agent_version', 't',
			'host', jsonb_build_object('hostname', 'h',
						   'machine_id', repeat('0', 32)),
			'kernel', jsonb_build_object('release', 'r'),
			'probe', '{}'::jsonb,
			'benchmarks', '[{"benchmark": "b", "variant": "v",
				"metrics": [{"metric": "m", "unit": "u",
					     "samples": [1, 2]}]}]'::jsonb,
			'comparisons', '[{"name": "c", "benchmark": "b",
				"metric": "m", "numerator": "v",
				"denominator": "v", "ratio": 1}]'::jsonb),
		'{run_id}', to_jsonb('$old'::text)),
		'{started_unix_ms}', '1718000000000'),
		'{finished_unix_ms}', '1718000001000'))
EOF
)" t
defaults() {
	q <<<"SELECT count(*) FROM run_results_default"
}
check_eq "its results are in the default partition" "$(defaults)" 1
check_eq "fleetbench_results_partition() makes its month" \
	"$(q <<<"SELECT fleetbench_results_partition('2024-06-15')")" t
check_eq "and moves its rows there" "$(defaults)|$(q <<-'EOF'
	SELECT (SELECT count(*) FROM run_results_y2024m06) || ' ' ||
	       (SELECT count(*) FROM bench_results
		WHERE started_at < '2024-07-01') || ' ' ||
	       (SELECT count(*) FROM bench_metrics
		WHERE started_at < '2024-07-01')
EOF
)" "0|1 1 1"
check_eq "a second call makes nothing" \
	"$(q <<<"SELECT fleetbench_results_partition('2024-06-01')")" f
check_eq "fleetbench_results_partitions(5) makes the two months missing" \
	"$(q <<<"SELECT fleetbench_results_partitions(5)")" 2
recent=$(q <<<"SELECT count(*) FROM bench_results WHERE run_id <> '$old'")
check_eq "fleetbench_results_drop_before() drops the old month" \
	"$(q <<<"SELECT fleetbench_results_drop_before('2025-01-01')")" 1
check_eq "its results are gone, its run (with its comparisons) stays" "$(q <<-EOF
	SELECT (SELECT count(*) FROM bench_results WHERE run_id = '$old') || ' ' ||
	       (SELECT count(*) FROM bench_metrics WHERE run_id = '$old') || ' ' ||
	       (SELECT count(*) FROM runs WHERE run_id = '$old') || ' ' ||
	       (SELECT count(*) FROM comparisons WHERE run_id = '$old') || ' ' ||
	       (SELECT count(*) FROM pg_class WHERE relname LIKE '%_y2024m06')
EOF
)" "0 0 1 1 0"
check_eq "the recent results are untouched" \
	"$(q <<<"SELECT count(*) FROM bench_results")" "$recent"
finish
