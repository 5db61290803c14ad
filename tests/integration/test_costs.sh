#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What a run cost its host (issue 36), from the agent to the fleet's
# answers: the real agent measures each benchmark's process (wall, CPU,
# peak memory, bytes written) and the total, says them in its table, its
# report and its textfile; the real collector over CURVE stores them in
# run_costs as the report said them; `fleetbench compare --figures cost`
# gives the median per instance type; the jsonb contract takes them and a
# cost that cannot be true is refused, naming it.
#
# Environment: SOURCE_DIR, BUILD_DIR, AGENT, COLLECTOR, FLEETBENCH,
# PG_BINDIR.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD_DIR=${BUILD_DIR:-$SOURCE_DIR/build}
COLLECTOR=${COLLECTOR:-$BUILD_DIR/collector/fleetbench-collector}
FLEETBENCH=${FLEETBENCH:-$BUILD_DIR/cli/fleetbench}

require_built "$AGENT" "$COLLECTOR" "$FLEETBENCH"

db_new costs 026_cost_allowances
keys_new a
allow_keys a
start_collector

# costs FILE: "benchmark wall cpu peak written allowance rounds" per Cost
# of the wire
# report FILE (`fleetbench-agent show`), in run order, the total last;
# the numbers as psql prints them (the shortest text that reads back the
# same double, as Python's repr)
costs() {
	/usr/bin/python3 - "$1" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
def num(x):  # as psql prints a double: no ".0" on a whole number
    r = repr(float(x))
    return r[:-2] if r.endswith(".0") else r
for c in d.get("costs", []) + ([d["cost_total"]] if "cost_total" in d else []):
    print(c["benchmark"], num(c["wall_s"]), num(c["cpu_s"]),
          c["peak_memory_bytes"], c["written_bytes"],
          num(c["allowance_s"]) if "allowance_s" in c else "NULL",
          c.get("rounds", "NULL"))
PYEOF
}

# run NAME: a quick run of false_sharing and seqwrite (it writes) as
# provider test, type t1, spooled; its wire report in $tmp/NAME.json, its
# textfile in $tmp/NAME.prom; then sent
run() {
	local name=$1 status

	mkdir -p "$tmp/prom.$name"
	agent a run --no-send --profile quick --only false_sharing,seqwrite \
		--fs-increments 200000 --repeats 2 --steal-window 0 \
		--provider test --instance-type t1 --dir "$tmp" \
		--textfile-dir "$tmp/prom.$name" >"$tmp/$name.out" 2>&1
	status=$?
	check_eq "run $name exits 0 ($(tail -1 "$tmp/$name.out"))" "$status" 0
	"$AGENT" show "$tmp"/spool.a/*.fbr >"$tmp/$name.json"
	agent a send >>"$tmp/$name.out" 2>&1
	check_eq "run $name: sent and stored" "$(spooled a)" 0
}

run one
run two
costs "$tmp/one.json" >"$tmp/one.costs"
cat "$tmp/one.costs"
check_eq "the report has a cost per benchmark that ran, and the total" \
	"$(cut -d' ' -f1 "$tmp/one.costs" | tr '\n' ' ')" \
	"seqwrite false_sharing total "
check_eq "each took time and CPU" "$(awk '$2 <= 0 || $3 <= 0' "$tmp/one.costs")" ""
check_eq "and held memory" "$(awk '$4 <= 0' "$tmp/one.costs")" ""
check_eq "seqwrite wrote at least its 2 repeats x 2 engines x 64 MiB" \
	"$(awk '$1 == "seqwrite" { print ($5 >= 2 * 2 * 64 * 1048576) }' "$tmp/one.costs")" 1
check_eq "the total is the sum of the walls" \
	"$(awk '$1 != "total" { s += $2 } $1 == "total" { t = $2 }
		END { print (s - t < 1e-6 && t - s < 1e-6) }' "$tmp/one.costs")" 1
prom=$tmp/prom.one/fleetbench.prom
check_grep "the agent's table shows the cost" "$tmp/one.out" \
	'^  total +[0-9]+\.[0-9] +30\.0 +- +[0-9]+\.[0-9] +[0-9]+\.[0-9] +[0-9]+\.[0-9]$'
check_grep "each benchmark's allowance and rounds (2, --repeats 2)" \
	"$tmp/one.out" '^  seqwrite +[0-9]+\.[0-9] +[0-9]+\.[0-9] +2 +'
check_eq "the total's allowance is the profile's 30 s, each benchmark's a share" \
	"$(awk '$1 == "total" { print $6 } $1 != "total" { print ($6 > 0 && $6 < 30) }' "$tmp/one.costs" | tr '\n' ' ')" \
	"1 1 30 "
check_grep "the textfile has the allowance" "$prom" \
	'^fleetbench_cost_allowance_seconds\{.*,bench="total"\} 30$'
check_grep "the textfile has each benchmark's wall" "$prom" \
	'^fleetbench_cost_wall_seconds\{provider="test",instance_type="t1",kernel="[^"]+",bench="seqwrite"\} [0-9.e+-]+$'
check_grep "and the total's peak memory" "$prom" \
	'^fleetbench_cost_peak_memory_bytes\{.*,bench="total"\} [1-9][0-9]*$'
check_grep "and the bytes written, documented" "$prom" \
	'^# HELP fleetbench_cost_written_bytes '

# --- stored as the report said ------------------------------------------------

# stored ID: the run's rows of run_costs, as costs() prints a report's
stored() {
	qn <<-EOF | tr '|' ' '
		SELECT benchmark, wall_s, cpu_s, peak_memory_bytes, written_bytes,
		       allowance_s, rounds
		FROM run_costs WHERE run_id = '$1'
	EOF
}
for name in one two; do
	id=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["run_id"])' "$tmp/$name.json")
	check_eq "run $name: run_costs holds the report's costs" \
		"$(stored "$id" | sort)" "$(costs "$tmp/$name.json" | sort)"
done

# --- the fleet's answer ---------------------------------------------------------

fb compare --figures cost --format csv >"$tmp/cost.csv" 2>"$tmp/cost.err"
check_eq "compare --figures cost exits 0 ($(cat "$tmp/cost.err"))" "$?" 0
cat "$tmp/cost.csv"
check_eq "the header" "$(head -1 "$tmp/cost.csv")" \
	"method,provider,instance_type,kernel,benchmark,hosts,runs,wall_s,wall_s_lo,wall_s_hi,wall_s_max,cpu_s,peak_memory_mib,written_mib"
# cols NAME...: those columns of $tmp/cost.csv's rows, comma-separated,
# a row a line (the method key holds commas: CSV quoting)
cols() {
	/usr/bin/python3 -c 'import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(",".join(r[k] for k in sys.argv[2:]))' "$tmp/cost.csv" "$@"
}
check_eq "the total first, then each benchmark, two runs each" \
	"$(cols provider instance_type benchmark runs | tr '\n' ' ')" \
	"test,t1,total,2 test,t1,false_sharing,2 test,t1,seqwrite,2 "
want=$(qn <<<"SELECT round((percentile_cont(0.5) WITHIN GROUP (ORDER BY wall_s))::numeric, 1) FROM run_costs WHERE benchmark = 'total'")
check_eq "the total's median wall is the runs' median" \
	"$(cols benchmark wall_s | sed -n 's/^total,//p')" "$want"
fb compare --figures cost >"$tmp/cost.txt" 2>&1
check_grep "a table says the method once" "$tmp/cost.txt" '^method: quick\+'
fb compare --figures cost --by tag.env >"$tmp/cost.err" 2>&1
check_eq "--by tag.KEY is refused for costs" "$?" 2

fb report --out "$tmp/report.html" 2>"$tmp/report.err"
check_eq "report exits 0 ($(cat "$tmp/report.err"))" "$?" 0
check_has "the HTML report has the cost section" "$tmp/report.html" \
	'<h2>What a run costs its host</h2>'
check_grep "with the instance type's two runs and their median wall" \
	"$tmp/report.html" \
	"<tr><td>test t1</td><td><code>quick[^<]*</code></td><td class=\"num\">2</td><td class=\"num\">$want</td>"

# --- a report as JSON (fleetbench-collector load) --------------------------------

report=$(cat "$SOURCE_DIR/tests/fixtures/reports/aws-m5.large-a.json")
# ingest COSTS: report A with a new run_id and COSTS (a JSON array), through
# load_one
ingest() {
	qn -v r="$report" -v c="$1" <<-'EOF' | load_one
		SELECT jsonb_set(jsonb_set(:'r'::jsonb,
			'{run_id}', to_jsonb(gen_random_uuid()::text)),
			'{costs}', :'c'::jsonb)
	EOF
}
check_eq "a report as JSON stores its cost" \
	"$(ingest '[{"benchmark":"thp_chase","wall_s":1.5,"cpu_s":1.25,"peak_memory_bytes":1048576,"written_bytes":0}]')" t
check_eq "as given" "$(qn <<<"SELECT wall_s, cpu_s FROM run_costs WHERE benchmark = 'thp_chase'")" "1.5|1.25"
ingest '[{"benchmark":"thp_chase","wall_s":-1,"cpu_s":1,"peak_memory_bytes":0,"written_bytes":0}]' \
	>"$tmp/neg.out" 2>&1
check_grep "a negative wall time is refused, named" "$tmp/neg.out" \
	' rejected: costs\[0\]\.wall_s'

# a run's costs go with it (runs' delete and truncate trigger, 037)
gone=$(qn <<<"SELECT run_id FROM run_costs WHERE benchmark = 'thp_chase'")
qn <<<"DELETE FROM runs WHERE run_id = '$gone'"
check_eq "deleting a run deletes its costs, and only its" "$(qn <<-EOF
	SELECT (SELECT count(*) FROM run_costs WHERE run_id = '$gone'),
	       (SELECT count(*) > 0 FROM run_costs)
EOF
)" "0|t"
stop_collector
check_eq "the collector exits 0" "$?" 0
check_eq "truncating runs empties run_costs" \
	"$(qn <<<"TRUNCATE runs; SELECT count(*) FROM run_costs")" 0
finish
