#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The monthly partitions of run_results on a real PostgreSQL: a new
# database has this month's and three ahead; reports are stored in their
# month, once however often they are sent; a month without a partition
# waits in the default one until fleetbench_results_partition() moves it;
# old months are dropped whole by fleetbench_results_drop_before().
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_built "$COLLECTOR" "$ZSEND"
tmp_new partitions
# the harness runs PostgreSQL as another user when we are root
chmod 0755 "$tmp"
pg_start "$tmp/pg"

"$COLLECTOR" migrate --schema-dir "$SOURCE_DIR/schema" --dsn "$conninfo" \
	>"$tmp/migrate.out" 2>&1 || not_ok "migrate: $(cat "$tmp/migrate.out")"
check_eq "a new database has this month's partition and three ahead, and a default" \
	"$(q <<<"SELECT count(*) FROM pg_inherits WHERE inhparent = 'run_results'::regclass")" 5

# serve: a plaintext collector, in the background; sets pid and endpoint
"$COLLECTOR" serve --schema-dir "$SOURCE_DIR/schema" --dsn "$conninfo" \
	--insecure --bind 'tcp://127.0.0.1:*' 2>"$tmp/serve.log" &
pid=$!
wait_for 10 grep -q 'listening on' "$tmp/serve.log" ||
	not_ok "the collector did not start: $(cat "$tmp/serve.log")"
endpoint=$(sed -n 's/.*listening on \(tcp:[^ ]*\) .*/\1/p' "$tmp/serve.log")
args=()
for i in $(seq 10); do
	args+=(--report "$(uuid)")
done
check_eq "reports are stored" "$("$ZSEND" --endpoint "$endpoint" --insecure \
	--timeout $((5000 * slow)) "${args[@]}" | grep -c '^ack COMMITTED')" 10
U=$(uuid)
check_eq "a report sent twice is COMMITTED, then DUPLICATE" \
	"$("$ZSEND" --endpoint "$endpoint" --insecure --report "$U" |
		cut -d' ' -f2)|$("$ZSEND" --endpoint "$endpoint" --insecure \
		--report "$U" | cut -d' ' -f2)" "COMMITTED|DUPLICATE"
check_eq "and stored once" "$(q <<<"SELECT count(*) FROM runs WHERE run_id = '$U'")|$(q <<<"SELECT count(*) FROM bench_results WHERE run_id = '$U'")" "1|1"
check_eq "in this month's partition" \
	"$(q <<<"SELECT count(*) FROM run_results_default")" 0
kill -TERM "$pid"
wait "$pid"
pid=

# a report of a month without a partition (June 2024) waits in the
# default
old=$(uuid)
check_eq "an old month's report is stored" "$(q <<-EOF | load_one
	SELECT jsonb_set(jsonb_set(jsonb_set(
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
		'{finished_unix_ms}', '1718000001000')
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
