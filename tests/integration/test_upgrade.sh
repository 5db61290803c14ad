#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The upgrade from the oldest version `migrate` upgrades (024_targets,
# docs/operations.md): a fleet database that fleetbench filled when 024
# was its newest migration (tests/fixtures/db/024, made by make-024 with
# that version's own ingest and CLI), restored, upgraded with today's
# `migrate`, then checked: every run, figure, alert (and its
# acknowledgement), price, tag, setting and grant is still there, compare,
# kernels, rank, alerts and prices say what that version said in every
# column both have, its schema is the one a new database gets from the
# baseline, every SQL example of the docs runs on it, and it stores new
# reports. A user's view over a figure column stops 028, named.
#
# Environment: SOURCE_DIR, BUILD_DIR (default SOURCE_DIR/build), COLLECTOR,
# FLEETBENCH, PG_BINDIR.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FLEETBENCH=${FLEETBENCH:-$BUILD_DIR/cli/fleetbench}
require_built "$COLLECTOR" "$FLEETBENCH"
fixture=$SOURCE_DIR/tests/fixtures/db/024
tmp_new upgrade
# the harness runs PostgreSQL as another user when we are root
chmod 0755 "$tmp"
# it makes roles, which belong to the whole cluster: a server of its own
# shellcheck disable=SC2034 # read by lib.sh
own_server=1
pg_start "$tmp/pg"

# the cluster's roles the dump names, then the dump
while read -r role; do
	q <<-EOF
		DO \$\$ BEGIN
			CREATE ROLE $role NOLOGIN;
		EXCEPTION WHEN duplicate_object THEN NULL;
		END \$\$;
	EOF
done <"$fixture/roles"
if ! gzip -dc "$fixture/dump.sql.gz" | q >"$tmp/restore.out" 2>&1; then
	not_ok "the 024 dump restores: $(tail -n 5 "$tmp/restore.out")"
	finish
fi
check_eq "the restored database is at 024_targets" \
	"$(q <<<"SELECT max(name) FROM schema_migrations")" 024_targets

# counts: what it holds
holds() {
	q <<-'EOF'
		SELECT 'runs', count(*) FROM runs
		UNION ALL SELECT 'run_results', count(*) FROM run_results
		UNION ALL SELECT 'samples', sum(cardinality(samples)) FROM run_results
		UNION ALL SELECT 'run_figures', count(*) FROM run_figures
		UNION ALL SELECT 'tagged runs', count(*) FROM runs WHERE tags <> '{}'
		UNION ALL SELECT 'tagged run_figures', count(*) FROM run_figures WHERE tags <> '{}'
		UNION ALL SELECT 'host alerts', count(*) FROM alerts
		UNION ALL SELECT 'fleet alerts', count(*) FROM fleet_alerts
		UNION ALL SELECT 'acknowledged', count(*) FROM fleet_alerts WHERE acknowledged_at IS NOT NULL
		UNION ALL SELECT 'prices', count(*) FROM instance_prices
		UNION ALL SELECT 'methods', count(*) FROM methods
		ORDER BY 1
	EOF
}
# digest TABLE KEY: an md5 of every row of TABLE, in KEY order
digest() {
	q <<<"SELECT md5(string_agg(t::text, ',' ORDER BY t.$2)) FROM $1 AS t"
}
holds >"$tmp/before"
# runs' columns as 024 has them: after 031 and 032 the same, the probe
# read as r.probe, the comparisons' names from comparison_names (n)
runs_cols=$(q <<-'EOF'
	SELECT string_agg(CASE WHEN column_name = 'probe' THEN 'r.probe'
			       WHEN column_name IN ('c_name', 'c_benchmark',
					'c_metric', 'c_numerator', 'c_denominator')
			       THEN 'n.' || column_name
			       ELSE 'r.' || column_name END, ', '
			  ORDER BY ordinal_position)
	FROM information_schema.columns
	WHERE table_name = 'runs' AND table_schema = current_schema()
EOF
)
for t in runs:run_id run_results:run_id alerts:id instance_prices:valid_from; do
	digest "${t%%:*}" "${t#*:}" >"$tmp/${t%%:*}.md5"
done

# a view of the database's users over a figure column, which 028 moves
# into the array: migrate stops there and names it
q <<<"CREATE VIEW user_thp AS SELECT run_id, thp_speedup FROM run_figures"
"$COLLECTOR" migrate --schema-dir "$SOURCE_DIR/schema" --dsn "$conninfo" \
	>"$tmp/migrate-view.out" 2>&1
check_eq "a user's view over a figure column stops migrate at 028" "$?" 1
check_grep "naming the view and the column" "$tmp/migrate-view.out" \
	"migration '028_long_figures' failed, nothing of it applied: .*view user_thp depends on column thp_speedup of table run_figures"
check_eq "what 028 would change is as it was" "$(holds)" "$(cat "$tmp/before")"
q <<<"DROP VIEW user_thp"

# costs as run_costs held them (025 made it; 040 moves them into the
# runs' rows): three runs' rows, stored in an order of their own, and a
# user's view over the table, which stops migrate at 040
q <<-'EOF'
	INSERT INTO run_costs (run_id, benchmark, wall_s, cpu_s,
			       peak_memory_bytes, written_bytes, allowance_s,
			       rounds)
	SELECT r.run_id, c.b, c.w * r.n, 0.5, 1048576 * r.n, 0, c.a, c.k
	FROM (SELECT run_id, row_number() OVER (ORDER BY run_id) AS n
	      FROM runs ORDER BY run_id LIMIT 3) AS r,
	     (VALUES (1, 'thp_chase', 1.5, 2.0, 3), (2, 'randread', 0.25, NULL, 5),
		     (3, 'total', 2.0, 30.0, NULL)) AS c(i, b, w, a, k)
	ORDER BY r.n, c.i;
	CREATE VIEW user_costs AS SELECT * FROM run_costs;
EOF
costs_before=$(q <<<"SELECT count(*), md5(string_agg(c::text, ',' ORDER BY c.run_id, c.benchmark)) FROM run_costs AS c")
"$COLLECTOR" migrate --schema-dir "$SOURCE_DIR/schema" --dsn "$conninfo" \
	>"$tmp/migrate-costs.out" 2>&1
check_eq "a user's view over run_costs stops migrate at 040" "$?" 1
check_grep "naming the view" "$tmp/migrate-costs.out" \
	"migration '040_costs_in_runs' failed, nothing of it applied: .*view user_costs depends on table run_costs"
q <<<"DROP VIEW user_costs"

"$COLLECTOR" migrate --schema-dir "$SOURCE_DIR/schema" --dsn "$conninfo" \
	>"$tmp/migrate.out" 2>&1
check_eq "migrate exits 0" "$?" 0
check_grep "the migrations before 028 were applied, each its own transaction" \
	"$tmp/migrate-view.out" '^applied 027_figures$'
check_grep "then 028 and after" "$tmp/migrate-costs.out" '^applied 028_long_figures$'
check_grep "then 040" "$tmp/migrate.out" '^applied 040_costs_in_runs$'
check_grep "and leaves the database current" "$tmp/migrate.out" \
	'^the database is current'
check_eq "every cost is still there, as the view run_costs" \
	"$(q <<<"SELECT count(*), md5(string_agg(c::text, ',' ORDER BY c.run_id, c.benchmark)) FROM run_costs AS c")" \
	"$costs_before"
check_eq "in the runs' rows, in the order they were stored" "$(q <<-'EOF'
	SELECT DISTINCT array_to_string(cost_benchmark, ',') || ' '
	       || array_to_string(cost_allowance_s, ',', '-') || ' '
	       || array_to_string(cost_rounds, ',', '-')
	FROM runs WHERE cost_benchmark IS NOT NULL
EOF
)" "thp_chase,randread,total 2,-,30 3,5,-"

check_eq "every run, result, figure row, tag, alert, price and method is still there" \
	"$(holds)" "$(cat "$tmp/before")"
for t in alerts:id instance_prices:valid_from; do
	check_eq "${t%%:*}: every row as it was, column for column" \
		"$(digest "${t%%:*}" "${t#*:}")" "$(cat "$tmp/${t%%:*}.md5")"
done
# 031 moved the probe's unchanging sections to probe_parts (r.probe
# joins them again), 032 the comparisons' names to comparison_names
check_eq "runs with r.probe and its names: every row as it was, column for column" \
	"$(digest "(SELECT $runs_cols FROM runs AS r
		    LEFT JOIN comparison_names AS n
			ON n.names_id = r.comparison_names_id)" run_id)" \
	"$(cat "$tmp/runs.md5")"
# 030 moved the names, units and ends to result_shapes: joined again,
# each row reads as it did, column for column in 024's order
check_eq "run_results with its shape: every row as it was, column for column" \
	"$(digest "(SELECT x.run_id, x.started_at, s.v_benchmark, s.v_variant,
			   x.v_status, x.v_reason, s.v_param_end, s.p_key,
			   s.p_kind, x.p_value, x.v_window_end, x.w_steal_pct,
			   x.w_loadavg1, x.w_wall_s, x.w_noisy, s.v_metric_end,
			   s.m_metric, s.m_unit, x.m_median, x.m_sample_end,
			   x.v_sample_end, x.samples, x.w_noisy_reason, x.w_cpus
		    FROM run_results AS x
		    JOIN result_shapes AS s USING (shape_id))" run_id)" \
	"$(cat "$tmp/run_results.md5")"
check_eq "the fixture's runs of one shape share its row" \
	"$(q <<<"SELECT count(DISTINCT shape_id) < count(*) FROM run_results")" t
# 044: each shape stored before is found by its names as a writer sends
# them in one text
check_eq "every shape stored before has its names in one text" \
	"$(q <<<"SELECT count(*), count(*) FILTER (WHERE names = fleetbench_shape_names(v_benchmark, v_variant, p_key, m_metric, m_unit)) FROM result_shapes")" \
	"$(q <<<"SELECT count(*) FROM result_shapes")|$(q <<<"SELECT count(*) FROM result_shapes")"
check_eq "and they are not empty" "$(q <<<"SELECT count(*) > 0 FROM result_shapes")" t
check_eq "the alert setting changed by the operator is kept" \
	"$(q <<<"SELECT gain_alpha FROM alert_settings")" 0.02
check_eq "the operator's grant on a view that migrate made again is kept" \
	"$(q <<<"SELECT has_table_privilege('fixture_analyst', 'fleet_compare', 'SELECT')")" t
check_eq "the writer may call the new ingest" \
	"$(q <<<"SELECT has_function_privilege('fleetbench_writer', 'fleetbench_ingest_run(fleetbench_report)', 'EXECUTE')")" t
check_eq "every run's figures are an array" \
	"$(q <<<"SELECT count(*) FROM run_figures WHERE cardinality(figures) > 0")" \
	"$(q <<<"SELECT count(*) FROM run_figures")"

# same NAME KEYS IGNORED ARGS...: fleetbench --format csv ARGS says what
# 024's CLI said (NAME.csv) in every column both have but IGNORED
same() {
	local name=$1 keys=$2 ignored=$3 out status
	shift 3
	fb --format csv "$@" >"$tmp/$name.csv" 2>"$tmp/$name.err"
	out=$(/usr/bin/python3 "$SOURCE_DIR/tests/integration/csv_same.py" \
		"$fixture/$name.csv" "$tmp/$name.csv" "$keys" ${ignored:+"$ignored"} 2>&1)
	status=$?
	printf '%s: %s\n' "$name" "$out"
	check_eq "$name says what 024 said in every column both have" "$status" 0
}
same compare method,provider,instance_type,kernel "" compare
same compare-quick method,provider,instance_type,kernel "" compare --profile quick
# kernels' changes: every change 024 named is named (in the declaration's
# order now, and figures that gained an interval since can add theirs,
# docs/queries.md): compared apart below
same kernels method,provider,instance_type,kernel changes \
	kernels --provider aws --instance-type m5.large
same kernels-c5 method,provider,instance_type,kernel changes \
	kernels --provider aws --instance-type c5.xlarge
same rank metric,method,provider,instance_type "" rank --metric thp_speedup
same alerts id "" alerts
same prices provider,instance_type,region,currency,valid_from "" prices list
# lost OLD.csv NEW.csv: per row, the changes of OLD that NEW lacks
lost() {
	/usr/bin/python3 -c '
import csv, sys
def rows(path):
    return [set(x.strip() for x in r["changes"].split(";") if x.strip())
            for r in csv.DictReader(open(path))]
old, new = rows(sys.argv[1]), rows(sys.argv[2])
print(len(old) == len(new) and all(not (o - n) for o, n in zip(old, new)),
      sum(len(o) for o in old), "changes", [sorted(n - o) for o, n in zip(old, new)])' "$@"
}
for f in kernels kernels-c5; do
	out=$(lost "$fixture/$f.csv" "$tmp/$f.csv")
	echo "$f: $out"
	check_match "$f: every change 024 named is still named" "$out" "True *"
done

# a new database has the schema the upgraded one has: the baseline and
# the function files make what the chain made (the months' partitions
# aside: each database makes its own)
q <<<"CREATE DATABASE fresh" >/dev/null
fresh=$(db_sibling fresh)
"$COLLECTOR" migrate --schema-dir "$SOURCE_DIR/schema" --dsn "$fresh" \
	>"$tmp/fresh.out" 2>&1
check_grep "a new database takes the baseline" "$tmp/fresh.out" \
	'^applied the baseline '
# schema_of CONNINFO: its schema as pg_dump writes it
schema_of() {
	"$PG_BINDIR/pg_dump" -s --no-owner "$1" |
		grep -v '^--\|^\\\(un\)\?restrict\|run_results_y[0-9]\|fixture_analyst' |
		sed '/^$/d'
}
schema_of "$conninfo" >"$tmp/upgraded.schema"
schema_of "$fresh" >"$tmp/fresh.schema"
check_eq "a new database's schema is the upgraded one's ($(wc -l <"$tmp/fresh.schema") lines)" \
	"$(diff "$tmp/upgraded.schema" "$tmp/fresh.schema" | head -n 10)" ""

# every SQL example of the docs runs on the upgraded database
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

# and it goes on storing
check_eq "a report stored after the upgrade" \
	"$(qn -v r="$(cat "$SOURCE_DIR/tests/fixtures/reports/do-thp-always.json")" \
		<<<"SELECT jsonb_set(:'r'::jsonb, '{run_id}', '\"5d1e0f2a-0000-4000-8000-000000000001\"')" |
		load_one)" t
check_eq "which compare counts with the one before it" \
	"$(fb --format csv compare --where provider=digitalocean --all-methods |
		awk -F, 'NR > 1 { n += $6 } END { print n }')" 2

# 031: the probe's unchanging sections are shared, the changing ones
# stay in the run's row
check_eq "the fixture's probes share parts: fewer probe_parts rows than runs" \
	"$(q <<<"SELECT (SELECT count(*) FROM probe_parts) < (SELECT count(*) FROM runs)")" t
check_eq "a run's row keeps only the sections that change" "$(q <<-'EOF'
	SELECT count(*) FROM runs AS r, jsonb_object_keys(r.probe_rest) AS k
	WHERE k NOT IN ('meta', 'host', 'steal', 'psi', 'vmstat')
EOF
)" 0

finish
