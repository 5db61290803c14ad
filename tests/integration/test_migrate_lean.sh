#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# schema/010_lean.sql on a real PostgreSQL: a database filled under the
# 008 layout (the report fixtures, a failed and skipped variants, a
# kernel change that alerts) is migrated by `fleetbench-collector migrate`
# to the lean layout, and the old tables, now views, return exactly the
# rows they held; run_figures, its definition run_figures_live, the fleet
# queries and the alerts answer as before, and every SQL example of
# docs/schema.md and docs/queries.md runs. The same reports stored anew
# through the lean ingest give the same rows again.
set -uo pipefail

# a server of its own (lib.sh): it makes a role, which belongs to the whole cluster
# shellcheck disable=SC2034 # read by lib.sh
own_server=1

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_built "$COLLECTOR"
fixtures=$SOURCE_DIR/tests/fixtures/reports
tmp_new migrate-lean
# the harness runs PostgreSQL as another user when we are root
chmod 0755 "$tmp"
pg_start "$tmp/pg"

# qc CONNINFO [psql options]: runs SQL from stdin, prints unaligned rows
qc() {
	local c=$1

	shift
	"$PG_BINDIR/psql" "$c" -X -q -A -t -v ON_ERROR_STOP=1 "$@"
}

mkdir "$tmp/upto8" "$tmp/all"
for f in "$SOURCE_DIR"/schema/[0-9][0-9][0-9]_*.sql; do
	name=${f##*/}
	cp "$f" "$tmp/all/"
	[ $((10#${name%%_*})) -le 8 ] && cp "$f" "$tmp/upto8/"
done
[ -d "$SOURCE_DIR/schema/functions" ] &&
	cp -r "$SOURCE_DIR/schema/functions" "$tmp/all/"
"$COLLECTOR" migrate --schema-dir "$tmp/upto8" --dsn "$conninfo" \
	>"$tmp/migrate1.out" 2>&1 || not_ok "migrate to 008: $(cat "$tmp/migrate1.out")"

# fill CONNINFO: the reports, through fleetbench_ingest()
fill() {
	local f

	for f in aws-m5.large-a aws-m5.large-b do-thp-always; do
		qc "$1" -v r="$(cat "$fixtures/$f.json")" <<<"SELECT fleetbench_ingest(:'r'::jsonb)" >/dev/null
	done
	qc "$1" -v r="$(cat "$fixtures/aws-m5.large-a.json")" >/dev/null <<-'EOF'
		-- A's host a day later on a new kernel whose io_uring lost
		-- features (an alert); one variant failed, one more was skipped
		SELECT fleetbench_ingest(jsonb_set(jsonb_set(jsonb_set(jsonb_set(
			jsonb_set(jsonb_set(jsonb_set(jsonb_set(
			:'r'::jsonb,
			'{run_id}', '"0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5"'),
			'{started_unix_ms}', '1732620000000'),
			'{finished_unix_ms}', '1732620021337'),
			'{kernel,release}', '"6.1.0-13-aws"'),
			'{probe,io_uring,features}', '["SINGLE_MMAP"]'),
			'{benchmarks,8,failure}', '"killed by signal 9 (SIGKILL)"'),
			'{benchmarks,8,metrics}', '[]'),
			'{benchmarks,0,skip_reason}', '"not this time"')
			#- '{benchmarks,0,metrics}');
		-- a month of its own, no comparisons, a method
		SELECT fleetbench_ingest(jsonb_set(jsonb_set(jsonb_set(
			:'r'::jsonb - 'comparisons',
			'{run_id}', '"5e8f3c2a-1b4d-4a6e-9c70-d2b1f0e3a485"'),
			'{started_unix_ms}', '1718000000000'),
			'{finished_unix_ms}', '1718000001000')
			|| '{"method": {"key": "quick+iodepth=4", "profile": "quick",
			     "repeats": 3, "iodepth": 4, "only": ["randread"]}}');
		-- a probe-only run
		SELECT fleetbench_ingest(jsonb_set(
			:'r'::jsonb - 'benchmarks' - 'comparisons',
			'{run_id}', '"6f9a4d3b-2c5e-4b7f-8d81-e3c2a1f4b596"'));
	EOF
}
fill "$conninfo"

# the old layout's columns of runs (010 adds some)
runs_cols=$(q <<-'EOF'
	SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum)
	FROM pg_attribute
	WHERE attrelid = 'runs'::regclass AND attnum > 0 AND NOT attisdropped
	      AND attname <> 'received_at'
EOF
)

# table_cols TABLE: its columns now, as a select list
table_cols() {
	q <<-EOF
	SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum)
	FROM pg_attribute
	WHERE attrelid = '$1'::regclass AND attnum > 0 AND NOT attisdropped
EOF
}
# the old layout's columns of run_figures (016 adds some) and of methods
# (017 adds the optional Method fields) ...
figures_cols=$(table_cols run_figures)
methods_cols=$(table_cols methods)

# ... and of what compare and kernels return (016 adds some)
out_cols() {
	q <<-EOF
	SELECT string_agg(quote_ident(a.n), ', ' ORDER BY a.i)
	FROM pg_proc AS p,
	     unnest(p.proargnames, p.proargmodes) WITH ORDINALITY AS a(n, m, i)
	WHERE p.proname = '$1' AND a.m = 't'
EOF
}
compare_cols=$(out_cols fleet_compare_by)
kernels_cols=$(out_cols fleet_kernels_by)
view_cols=$(q <<-'EOF'
	SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum)
	FROM pg_attribute
	WHERE attrelid = 'fleet_compare'::regclass AND attnum > 0
EOF
)

# snapshot CONNINFO [FIGURES]: every row of the old tables and of what is
# made of them, as text, in a stable order; a run's figures from FIGURES
# (default run_figures; run_figures_wide once 028 made them an array)
snapshot() {
	q "$1" <<-EOF
		SELECT 'runs', $runs_cols FROM runs ORDER BY run_id;
		SELECT 'bench_results', * FROM bench_results
		ORDER BY run_id, position;
		SELECT 'bench_metrics', * FROM bench_metrics
		ORDER BY run_id, benchmark, variant, metric;
		SELECT 'comparisons', * FROM comparisons ORDER BY run_id, name;
		SELECT 'methods', $methods_cols FROM methods ORDER BY key;
		SELECT 'run_figures', $figures_cols FROM ${2:-run_figures}
		ORDER BY run_id;
		SELECT 'fleet_compare', $compare_cols FROM fleet_compare_by(
			'{provider,instance_type,kernel}', NULL, '-infinity', '*');
		SELECT 'fleet_compare_summary', $view_cols FROM fleet_compare;
		SELECT 'fleet_kernels', $kernels_cols FROM fleet_kernels;
		SELECT 'fleet_kernels_all', $kernels_cols
		FROM fleet_kernels_by(NULL, NULL, '*');
		SELECT 'alerts', machine_id, hostname, provider, instance_type,
		       old_kernel, new_kernel, kind, diff, old_run_id, new_run_id
		FROM alerts ORDER BY machine_id, old_kernel, new_kernel, kind;
	EOF
}
snapshot "$conninfo" >"$tmp/before.txt"
# 016 drops compare's and kernels' functions and views for their new
# columns: the grants on the views stay
q <<<"CREATE ROLE fleetbench_lean_reader; GRANT SELECT ON fleet_compare, fleet_kernels TO fleetbench_lean_reader" >/dev/null
check_eq "the 008 database holds variants of every status" "$(q <<-'EOF'
	SELECT string_agg(status || ':' || n, ' ' ORDER BY status)
	FROM (SELECT status, count(*) AS n FROM bench_results GROUP BY 1) AS x
EOF
)" "failed:1 ok:27 skipped:17"
check_eq "and an alert" "$(q <<<"SELECT string_agg(kind, ' ' ORDER BY kind) FROM alerts")" \
	fingerprint

# a view of the database's users over a figure column, which 028 moves
# into the array: migrate stops there and names it
q <<<"CREATE VIEW user_thp AS SELECT run_id, thp_speedup FROM run_figures" >/dev/null
"$COLLECTOR" migrate --schema-dir "$tmp/all" --dsn "$conninfo" \
	>"$tmp/migrate2.out" 2>&1
check_eq "a user's view over a figure column stops migrate at 028" "$?" 1
check_grep "naming the view and the column" "$tmp/migrate2.out" \
	"migration '028_long_figures' failed, nothing of it applied: .*\(view user_thp depends on column thp_speedup of table run_figures\)"
q <<<"DROP VIEW user_thp"
"$COLLECTOR" migrate --schema-dir "$tmp/all" --dsn "$conninfo" \
	>"$tmp/migrate2b.out" 2>&1
check_eq "without it, 010 to the latest apply to a database with reports" "$?" 0
check_grep "028 with them" "$tmp/migrate2b.out" "applied 028_long_figures"
check_grep "it says so" "$tmp/migrate2.out" "applied 010_lean"
check_grep "and 016" "$tmp/migrate2.out" "applied 016_more_figures"
check_grep "and 017" "$tmp/migrate2.out" "applied 017_method_more"
check_grep "and 018" "$tmp/migrate2.out" "applied 018_profile_revision"
check_grep "and 019" "$tmp/migrate2.out" "applied 019_more_columns"
check_eq "the grants on fleet_compare and fleet_kernels outlive 016" "$(q <<-'EOF'
	SELECT string_agg(c.relname, ' ' ORDER BY c.relname)
	FROM pg_class AS c, aclexplode(c.relacl) AS a
	WHERE c.relname IN ('fleet_compare', 'fleet_kernels')
	      AND a.grantee = 'fleetbench_lean_reader'::regrole
	      AND a.privilege_type = 'SELECT'
EOF
)" "fleet_compare fleet_kernels"
check_eq "and they have 016's columns" \
	"$(q <<<"SELECT count(*) FROM pg_attribute WHERE attrelid = 'fleet_compare'::regclass AND attname = 'db_p99_always_vs_never'")" 1
check_eq "the old tables are views now, over run_results and runs" "$(q <<-'EOF'
	SELECT string_agg(relname || ':' || relkind::text, ' ' ORDER BY relname)
	FROM pg_class
	WHERE relname IN ('bench_results', 'bench_metrics', 'comparisons',
			  'run_results')
EOF
)" "bench_metrics:v bench_results:v comparisons:v run_results:p"
check_eq "one run_results row per run with variants" \
	"$(q <<<"SELECT (SELECT count(*) FROM run_results) || ' ' || (SELECT count(DISTINCT run_id) FROM bench_results)")" "5 5"

snapshot "$conninfo" run_figures_wide >"$tmp/after.txt"
check_eq "every row reads as before ($(wc -l <"$tmp/before.txt") rows)" \
	"$(diff "$tmp/before.txt" "$tmp/after.txt" | head -n 6)" ""
check_eq "run_figures_live, now over run_results, gives run_figures' rows" \
	"$(q <<-'EOF'
	SELECT (SELECT count(*) FROM (SELECT * FROM run_figures_live
				      EXCEPT ALL SELECT * FROM run_figures) x),
	       (SELECT count(*) FROM (SELECT * FROM run_figures
				      EXCEPT ALL SELECT * FROM run_figures_live) x),
	       (SELECT count(*) FROM run_figures)
EOF
)" "0|0|6"
check_eq "the new typed columns are read from the old probes" "$(q <<-'EOF'
	SELECT thp_shmem_enabled, hugepage_sizes_kb, hugepage_nr,
	       hugepage_free, cpu_model
	FROM runs WHERE run_id = '3b6f1a52-8c0e-4d7b-9a21-5e4c7f0d2b19'
EOF
)" "never|{2048,1048576}|{0,0}|{0,0}|Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz"
check_eq "the results are in their month's partitions" "$(q <<-'EOF'
	SELECT string_agg(DISTINCT tableoid::regclass::text, ' ')
	FROM run_results
EOF
)" "run_results_y2024m06 run_results_y2024m11"
check_match "a query on bench_metrics by started_at reads one month" \
	"$(q <<-'EOF'
	EXPLAIN (COSTS OFF) SELECT count(*) FROM bench_metrics
	WHERE started_at >= '2024-06-01' AND started_at < '2024-07-01'
EOF
)" "*run_results_y2024m06*"
check_eq "and no other" "$(q <<-'EOF' | grep -c 'run_results_y2024m11\|run_results_default'
	EXPLAIN (COSTS OFF) SELECT count(*) FROM bench_metrics
	WHERE started_at >= '2024-06-01' AND started_at < '2024-07-01'
EOF
)" 0

# every SQL example of the docs runs on the lean layout
for doc in schema queries; do
	awk '/^```sql$/ { on = 1; n++; next } /^```$/ { on = 0 }
	     on { print > (dir "/" doc "." n ".sql") }' \
		dir="$tmp" doc="$doc" "$SOURCE_DIR/docs/$doc.md"
done
for f in "$tmp"/schema.*.sql "$tmp"/queries.*.sql; do
	if out=$(q <"$f" 2>&1) && [[ $out != *ERROR* ]]; then
		ok
	else
		not_ok "the example $(basename "$f") of docs/: $out"
	fi
done

# the same reports through the lean ingest, in a database of its own
q <<<"CREATE DATABASE fresh"
fresh=${conninfo/dbname=fleetbench/dbname=fresh}
"$COLLECTOR" migrate --schema-dir "$tmp/all" --dsn "$fresh" \
	>"$tmp/migrate3.out" 2>&1 || not_ok "migrate a new database: $(cat "$tmp/migrate3.out")"
fill "$fresh"
snapshot "$fresh" run_figures_wide >"$tmp/fresh.txt"
check_eq "stored anew through the lean ingest, the same rows" \
	"$(diff "$tmp/before.txt" "$tmp/fresh.txt" | head -n 6)" ""

# 011: a probe stays in its row, compressed with pglz, while the row fits
# a page; before, a compressed probe over 2 KB went to TOAST chunks
check_eq "runs' probe is compressed with pglz, rows up to a page" \
	"$(q "$fresh" <<-'EOF'
	SELECT a.attcompression, c.reloptions::text
	FROM pg_attribute AS a JOIN pg_class AS c ON c.oid = a.attrelid
	WHERE a.attrelid = 'runs'::regclass AND a.attname = 'probe'
EOF
)" "p|{toast_tuple_target=8160}"
check_eq "a probe of 2.6 KB compressed stays in its row: nothing in TOAST" \
	"$(q "$fresh" <<-'EOF'
	UPDATE runs SET probe = (
		SELECT jsonb_build_object('cpus', jsonb_agg(jsonb_build_object(
			'cpu', i, 'mhz', 2000 + (i * 37) % 1000,
			'id', substr(md5(i::text), 1, 12))))
		FROM generate_series(1, 120) AS i);
	SELECT min(pg_column_size(probe)) > 2100,
	       (SELECT pg_relation_size(reltoastrelid) FROM pg_class
		WHERE oid = 'runs'::regclass)
	FROM runs
EOF
)" "t|0"

# deleting a run takes its results and figures; its comparisons were
# in its row
check_eq "deleting runs deletes their results and figures" "$(q <<-'EOF'
	DELETE FROM runs WHERE machine_id = 'ec2b7f3a9d1e4f6a8c0b2d4e6f809a1b';
	SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM run_results),
	       (SELECT count(*) FROM bench_results),
	       (SELECT count(*) FROM bench_metrics),
	       (SELECT count(*) FROM comparisons),
	       (SELECT count(*) FROM run_figures),
	       (SELECT count(*) FROM run_results v
		WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = v.run_id))
EOF
)" "2|2|18|20|14|2|0"
finish
