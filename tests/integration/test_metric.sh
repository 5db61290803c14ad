#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Adding a benchmark metric needs no SQL: metrics that nothing in schema/,
# collector/, proto/ or agent/ names (zz_new_metric in randread/io_uring
# and in a new benchmark zz_new_bench, zz_other there) are added to the
# fleet fixture's spooled reports (tests/integration/spool_metric.py draws
# the samples, spool_add_metric.c puts them in with the codec), as
# a newer agent would send them; `fleetbench-agent send` delivers them
# through the real collector, and `fleetbench compare --metric NAME`
# shows per group the median over runs of each run's median with its
# 95% interval, as the test computes them on its own from the samples it
# added: table, CSV and JSON, bare names, --metric list, the method
# chosen, and the errors for names that are unknown or ambiguous.
#
# Environment: SOURCE_DIR, BUILD_DIR (default SOURCE_DIR/build),
# FLEETBENCH (the CLI, default under BUILD_DIR), PG_BINDIR; fleet_load's
# COLLECTOR, AGENT and FLEETGEN.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD_DIR=${BUILD_DIR:-$SOURCE_DIR/build}
FLEETBENCH=${FLEETBENCH:-$BUILD_DIR/cli/fleetbench}
real_fleetgen=${FLEETGEN:-$BUILD_DIR/tests/fleetgen}
spool_metric=$SOURCE_DIR/tests/integration/spool_metric.py
spool_add_metric=${SPOOL_ADD_METRIC:-$BUILD_DIR/tests/integration/spool_add_metric}
require_built "$FLEETBENCH" "$real_fleetgen" "$spool_add_metric"

tmp_new metric
trap 'exit 1' INT TERM HUP

# --- the point: no code names the new metrics ------------------------------

for name in zz_new_metric zz_new_bench zz_other; do
	# grep exits 1 for no match, 2 when a folder is missing: only 1 passes
	hits=$(grep -rn -- "$name" "$SOURCE_DIR/schema" "$SOURCE_DIR/collector" \
		"$SOURCE_DIR/proto" "$SOURCE_DIR/agent" 2>&1)
	case $? in
	1) ok ;;
	0) not_ok "$name is named in the code: $hits" ;;
	*) not_ok "cannot search the code for $name: $hits" ;;
	esac
done

# --- the fleet with the new metrics, through the real collector -------------

# fleet_load's fleetgen: the real one, then the new metrics into its spool
cat >"$tmp/fleetgen" <<EOF
#!/bin/sh
set -e
"$real_fleetgen" "\$@" >"$tmp/fleetgen.tsv"
while [ \$# -gt 0 ]; do
	[ "\$1" = --spool ] && spool=\$2
	shift
done
python3 "$spool_metric" add "$spool_add_metric" "\$spool" "$tmp/fleetgen.tsv" "$tmp/samples.json"
cat "$tmp/fleetgen.tsv"
EOF
chmod +x "$tmp/fleetgen"
FLEETGEN=$tmp/fleetgen
fleet_load

# q: runs SQL from stdin (psql variables: -v), prints unaligned rows
q() {
	"$PG_BINDIR/psql" "$conninfo" -X -q -A -t -v ON_ERROR_STOP=1 "$@"
}

fb() {
	"$FLEETBENCH" --dsn "$conninfo" "$@"
}

# expect NAME KEYS: the rows compare --metric NAME --by KEYS owes, as CSV
# lines of the keys, hosts, runs, few_runs, median, median_lo, median_hi
expect() {
	python3 "$spool_metric" expect "$tmp/samples.json" "$fleet_manifest" "$1" "$2"
}

# cols CSV COLUMN...: those columns of a CSV file, its header left out
cols() {
	python3 "$spool_metric" cols "$@"
}

check_eq "the fleet is delivered, every report accepted (none left in the spool)" \
	"$(q <<<"SELECT count(*) FROM runs")|$(find "$tmp/fleet-spool" -name '*.fbr' | wc -l)" \
	"114|0"
check_eq "the new metrics land in bench_metrics" "$(q <<-'EOF'
	SELECT string_agg(benchmark || '/' || variant || '/' || metric || ' '
			  || unit || ' ' || n, ',' ORDER BY benchmark, metric)
	FROM (SELECT benchmark, variant, metric, unit, count(*) AS n
	      FROM bench_metrics WHERE metric IN ('zz_new_metric', 'zz_other')
	      GROUP BY 1, 2, 3, 4) AS m
EOF
)" "randread/io_uring/zz_new_metric widgets 114,zz_new_bench/a/zz_new_metric widgets 36,zz_new_bench/a/zz_other s 36"
check_eq "with every sample as sent, in order" "$(q -v "samples=$(cat "$tmp/samples.json")" <<-'EOF'
	SELECT count(*) FILTER (WHERE m.samples = ARRAY(
			SELECT jsonb_array_elements_text(s.value)::float8)),
	       count(*)
	FROM jsonb_each(:'samples'::jsonb) AS r(run_id, names)
	CROSS JOIN LATERAL jsonb_each(r.names) AS s(name, value)
	LEFT JOIN bench_metrics AS m
		ON m.run_id = r.run_id::uuid
		   AND m.benchmark || '/' || m.variant || '/' || m.metric = s.name
EOF
)" "186|186"
check_eq "and the new benchmark's variant is stored as any other" "$(q <<-'EOF'
	SELECT count(*), string_agg(DISTINCT status, ',')
	FROM bench_results WHERE benchmark = 'zz_new_bench'
EOF
)" "36|ok"

# --- compare --metric BENCH/VARIANT/METRIC ---------------------------------

m=randread/io_uring/zz_new_metric
fb compare --metric "$m" --format csv >"$tmp/m.csv" 2>"$tmp/m.err"
check_eq "compare --metric exits 0" "$?|$(cat "$tmp/m.err")" "0|"
check_eq "the header: the metric, its method, the keys, the estimate, the unit" \
	"$(head -1 "$tmp/m.csv")" \
	"metric,method,provider,instance_type,kernel,hosts,runs,few_runs,median,median_lo,median_hi,unit,first_run,last_run"
check_eq "one row per provider, instance type and kernel, as computed from the samples" \
	"$(cols "$tmp/m.csv" provider instance_type kernel hosts runs few_runs median median_lo median_hi)" \
	"$(expect "$m" provider,instance_type,kernel)"
check_eq "every row names the metric, the method (full: the fleet's) and the unit" \
	"$(cols "$tmp/m.csv" metric method unit | sort -u)" "$m,full,widgets"
check_eq "fourteen groups, b2-7's two with few runs and no interval" \
	"$(($(wc -l <"$tmp/m.csv") - 1))|$(cols "$tmp/m.csv" instance_type runs few_runs median_lo median_hi | grep -c '^b2-7,3,t,,$')" \
	"14|2"
check_eq "CSV: the columns of fleet_metric_by() that the CLI shows" \
	"$(cat "$tmp/m.csv")" "$("$PG_BINDIR/psql" "$conninfo" -X -q --csv -v ON_ERROR_STOP=1 -c \
	"SELECT metric, method, provider, instance_type, kernel, hosts, runs, few_runs,
		median, median_lo, median_hi, unit, first_run, last_run
	 FROM fleet_metric_by('$m')")"

fb compare --metric "$m" --format json >"$tmp/m.json"
check_eq "JSON: the same rows, estimates as numbers" "$(python3 - "$tmp/m.json" <<-'EOF'
	import json, sys
	for r in json.load(open(sys.argv[1])):
	    assert all(isinstance(r[k], (int, float)) for k in ("median", "runs", "hosts"))
	    assert isinstance(r["few_runs"], bool)
	    f = lambda v: "" if v is None else "%.3f" % v
	    print(",".join([r["provider"], r["instance_type"], r["kernel"], str(r["hosts"]),
	                    str(r["runs"]), "t" if r["few_runs"] else "f", f(r["median"]),
	                    f(r["median_lo"]), f(r["median_hi"])]))
EOF
)" "$(expect "$m" provider,instance_type,kernel)"

fb compare --metric "$m" --where instance_type=n2-standard-2 --wide >"$tmp/m.txt"
want=$(expect "$m" provider,instance_type,kernel | grep '^gcp,n2-standard-2,5\.' | cut -d, -f7-9)
check_eq "table: the metric and the method said once above it" \
	"$(head -2 "$tmp/m.txt")" "metric: $m
method: full"
check_has "table: the median and its interval in one cell" "$tmp/m.txt" \
	"$(cut -d, -f1 <<<"$want") [$(cut -d, -f2 <<<"$want"), $(cut -d, -f3 <<<"$want")]"
check_grep "table: two rows" "$tmp/m.txt" '^\(2 rows\)$'

fb compare --metric "$m" --by provider --format csv >"$tmp/by.csv"
check_eq "--by provider" "$(cols "$tmp/by.csv" provider hosts runs few_runs median median_lo median_hi)" \
	"$(expect "$m" provider)"
fb compare --metric "$m" --by host --where provider=ovh --format csv >"$tmp/host.csv"
check_eq "--by host --where provider=ovh" \
	"$(cols "$tmp/host.csv" host hosts runs few_runs median median_lo median_hi)" \
	"$(expect "$m" host | grep '^ovh-')"
fb compare --metric "$m" --since 2025-03-31 --where provider=gcp --format csv >"$tmp/since.csv"
check_eq "--since keeps the new kernels' runs" "$(cols "$tmp/since.csv" kernel runs)" \
	"6.2.0-1014-gcp,9
6.2.0-1014-gcp,9"

# --- a new benchmark, bare names, the list ----------------------------------

m2=zz_new_bench/a/zz_other
fb compare --metric zz_other --format csv >"$tmp/bare.csv"
check_eq "a bare name measured by one variant alone: its full name" \
	"$(cols "$tmp/bare.csv" metric unit | sort -u)" "$m2,s"
check_eq "the new benchmark's metric per group, three significant digits below 0.1" \
	"$(cols "$tmp/bare.csv" provider instance_type kernel hosts runs few_runs median median_lo median_hi)" \
	"$(expect "$m2" provider,instance_type,kernel)"
check_match "which are shown" "$(cols "$tmp/bare.csv" median | head -1)" '0.00[1-9][0-9][0-9]'
fb compare --metric zz_new_bench/a/zz_new_metric --by provider --format csv >"$tmp/nb.csv"
check_eq "the same metric name in the new benchmark, on its own" \
	"$(cols "$tmp/nb.csv" provider hosts runs few_runs median median_lo median_hi)" \
	"$(expect zz_new_bench/a/zz_new_metric provider)"
fb compare --metric "$m2" --where provider=aws --format csv >"$tmp/none.csv"
check_eq "a selection that did not measure it: no row, exit 0" \
	"$?|$(wc -l <"$tmp/none.csv")" "0|1"

fb compare --metric list --format csv >"$tmp/list.csv"
check_eq "--metric list: the new metrics with their units and runs" \
	"$(cols "$tmp/list.csv" metric unit runs first_run last_run | grep zz_)" \
	"randread/io_uring/zz_new_metric,widgets,114,2025-03-03 00:00:00+00,2025-04-14 05:40:00+00
zz_new_bench/a/zz_new_metric,widgets,36,2025-03-03 02:00:00+00,2025-04-14 03:40:00+00
zz_new_bench/a/zz_other,s,36,2025-03-03 02:00:00+00,2025-04-14 03:40:00+00"
check_eq "and every other metric stored" \
	"$(($(wc -l <"$tmp/list.csv") - 1))" \
	"$(q <<<"SELECT count(DISTINCT (benchmark, variant, metric, unit)) FROM bench_metrics")"
check_grep "such as randread/io_uring/iops" "$tmp/list.csv" '^randread/io_uring/iops,IO/s,114,'
# without a filter the list reads bench_metrics alone; with one, the runs
fb compare --metric list --method full --format csv >"$tmp/list-full.csv"
check_eq "--metric list --method full (every run): the same list" \
	"$(cat "$tmp/list-full.csv")" "$(cat "$tmp/list.csv")"
fb compare --metric list --where provider=gcp --since 2025-03-31 --format csv >"$tmp/list-gcp.csv"
check_eq "--metric list --where provider=gcp --since 2025-03-31" \
	"$(cols "$tmp/list-gcp.csv" metric runs | grep -E 'zz_|^randread/io_uring/iops')" \
	"randread/io_uring/iops,18
randread/io_uring/zz_new_metric,18
zz_new_bench/a/zz_new_metric,18
zz_new_bench/a/zz_other,18"

# --- the method ------------------------------------------------------------

# standard runs of one host, without the new metrics (fleetgen itself)
"$real_fleetgen" --spool "$tmp/standard" --seed 9 --host aws-m6i-1 \
	--method standard >/dev/null 2>&1 && fleet_send "$tmp/standard"
check_eq "standard runs without the new metric are stored" \
	"$(q <<<"SELECT count(*) FROM runs WHERE method = 'standard'")" 6
fb compare --metric "$m" --format csv >"$tmp/m2.csv"
check_eq "by default, the method that measured the metric (not standard here)" \
	"$(cat "$tmp/m2.csv")" "$(cat "$tmp/m.csv")"
fb compare --metric randread/io_uring/iops --format csv >"$tmp/iops.csv"
check_eq "a metric the standard runs measured: standard by default" \
	"$(cols "$tmp/iops.csv" method instance_type runs | sort -u | tr '\n' ' ')" \
	"standard,m6i.large,3 "
fb compare --metric "$m" --all-methods --format csv >"$tmp/all.csv"
check_eq "--all-methods: only the method that measured it has rows" \
	"$(cat "$tmp/all.csv")" "$(cat "$tmp/m.csv")"
fb compare --metric "$m" --profile standard --format csv >"$tmp/std.csv"
check_eq "--profile standard: no run measured it, no row" "$?|$(wc -l <"$tmp/std.csv")" "0|1"
fb compare --metric list --method standard --format csv >"$tmp/list-std.csv"
check_eq "--metric list --method standard: the standard runs' metrics, not the new ones" \
	"$(grep -c zz_ "$tmp/list-std.csv")|$(cols "$tmp/list-std.csv" metric runs | grep '^randread/io_uring/iops,')" \
	"0|randread/io_uring/iops,6"

# --- names that are no metric ----------------------------------------------

# refused COMMAND...: the command's standard error, then "exit STATUS"
refused() {
	# shellcheck disable=SC2069 # standard error to the pipe, output dropped
	"$@" 2>&1 >/dev/null
	echo "exit $?"
}
check_eq "an unknown metric: exit 2, and how to list the names" \
	"$(refused fb compare --metric randread/io_uring/zz_missing)" \
	"fleetbench: error: metric: unknown metric 'randread/io_uring/zz_missing': no stored run measured it (fleetbench compare --metric list, or SELECT * FROM fleet_metric_list(), lists the metrics stored)
exit 2"
check_eq "a bare name that two variants measured: exit 2, naming them" \
	"$(refused fb compare --metric zz_new_metric)" \
	"fleetbench: error: metric: 'zz_new_metric' is measured by randread/io_uring/zz_new_metric, zz_new_bench/a/zz_new_metric: give one as BENCHMARK/VARIANT/METRIC
exit 2"
check_eq "a name of two parts: exit 2" "$(refused fb compare --metric randread/iops)" \
	"fleetbench: error: metric: 'randread/iops' is not BENCHMARK/VARIANT/METRIC (e.g. randread/io_uring/iops) nor a bare METRIC
exit 2"
check_eq "--metric list with --by: exit 2" "$(refused fb compare --metric list --by host)" \
	"fleetbench: error: --metric list lists every metric: it takes no --by
exit 2"
check_match "an unknown --by key: exit 2" "$(refused fb compare --metric "$m" --by zone)" \
	"fleetbench: error: by: unknown key 'zone', one of provider, *
exit 2"
"$FLEETBENCH" compare --help >"$tmp/help.out"
check_grep "compare --help documents --metric" "$tmp/help.out" '^ +--metric NAME +one metric'
"$FLEETBENCH" --help >"$tmp/help.out"
check_grep "fleetbench --help says compare takes --metric" "$tmp/help.out" '\(--metric NAME\)$'

finish
