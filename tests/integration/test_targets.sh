#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Repeats until the interval is tight (issue 19), on the collector's side:
# each comparison's target half-width, whether it reached it and its rounds
# reach runs.c_target_* as the agent's report said them (real agent, real
# collector over CURVE, real PostgreSQL); a run with a comparison that did
# not reach its target has bit 16 of run_figures.flags and is counted in
# `fleetbench compare` and `kernels` as wide_share; fixed repeats store no
# target; the jsonb contract takes the three fields and refuses bad ones,
# naming them.
#
# Environment: SOURCE_DIR, BUILD_DIR, AGENT, COLLECTOR, FLEETBENCH,
# PG_BINDIR.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD_DIR=${BUILD_DIR:-$SOURCE_DIR/build}
COLLECTOR=${COLLECTOR:-$BUILD_DIR/collector/fleetbench-collector}
FLEETBENCH=${FLEETBENCH:-$BUILD_DIR/cli/fleetbench}
fixtures=$SOURCE_DIR/tests/fixtures/reports

require_built "$AGENT" "$COLLECTOR" "$FLEETBENCH"

db_new targets 024_targets
sql() {
	qn "$@"
}

keys_new a
allow_keys a
start_collector

# marks FILE: "run_id name half_width reached rounds" per comparison of
# the wire report FILE (`fleetbench-agent show`; NULL for an absent
# field), as psql prints them
marks() {
	/usr/bin/python3 - "$1" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
run_id = d["run_id"]
def v(c, k):
    x = c.get(k)
    if x is None:
        return "NULL"
    if isinstance(x, bool):
        return "t" if x else "f"
    return repr(float(x)) if k == "target_half_width" else str(x)
for c in d["comparisons"]:
    print(run_id, c["name"], v(c, "target_half_width"), v(c, "target_reached"), v(c, "rounds"))
PYEOF
}

# fs RUN OPTIONS...: a false_sharing run of group test/t1, spooled, its
# report as the wire has it in $tmp/RUN.json (`show`), then sent
fs() {
	local run=$1 status

	shift
	agent a run --no-send --profile quick --only false_sharing \
		--steal-window 0 --provider test --instance-type t1 \
		--dir "$tmp" "$@" >"$tmp/$run.out" 2>&1
	status=$?
	check_eq "run $run exits 0 ($(tail -1 "$tmp/$run.out"))" "$status" 0
	"$AGENT" show "$tmp"/spool.a/*.fbr >"$tmp/$run.json"
	agent a send >>"$tmp/$run.out" 2>&1
	check_eq "run $run: sent and stored" "$(spooled a)" 0
}

# a target a short, noisy benchmark cannot reach in 3 rounds; one it
# mostly can (50%) in at most 8 of a longer one; and fixed repeats of the
# first's method (3 is quick's own count: not in the key), without a
# target: the first method's share is then 1 of 2
fs wide --fs-increments 200000 --target-pct 1 --max-repeats 3
fs loose --fs-increments 2000000 --target-pct 50 --psi-cpu-threshold 0
fs fixed --fs-increments 200000 --repeats 3
for run in wide loose fixed; do
	marks "$tmp/$run.json" >"$tmp/$run.marks"
done
cat "$tmp/wide.marks" "$tmp/loose.marks"
check_grep "the 1% run has a comparison that did not reach its target" \
	"$tmp/wide.marks" ' 0\.01 f 3$'
check_grep "the fixed run's comparisons carry no target" \
	"$tmp/fixed.marks" ' NULL NULL NULL$'

stored() {
	sql <<-EOF
		SELECT r.run_id, c.name,
		       coalesce(c.h::text, 'NULL'),
		       CASE c.r WHEN true THEN 't' WHEN false THEN 'f' ELSE 'NULL' END,
		       coalesce(c.n::text, 'NULL')
		FROM runs AS r
		JOIN comparison_names AS x ON x.names_id = r.comparison_names_id,
		     unnest(x.c_name, coalesce(r.c_target_half_width,
					       array_fill(NULL::float8, ARRAY[cardinality(x.c_name)])),
			    coalesce(r.c_target_reached,
				     array_fill(NULL::boolean, ARRAY[cardinality(x.c_name)])),
			    coalesce(r.c_rounds,
				     array_fill(NULL::integer, ARRAY[cardinality(x.c_name)])))
			 WITH ORDINALITY AS c(name, h, r, n, i)
		WHERE r.run_id = '$1'
		ORDER BY c.i
	EOF
}
for run in wide loose fixed; do
	id=$(cut -d' ' -f1 "$tmp/$run.marks" | head -1)
	check_eq "run $run: the targets stored are the report's" \
		"$(stored "$id" | tr '|' ' ')" "$(cat "$tmp/$run.marks")"
done
check_eq "fixed repeats store NULL arrays, as before 024" \
	"$(sql <<<"SELECT count(*) FROM runs WHERE run_id = '$(cut -d' ' -f1 "$tmp/fixed.marks" | head -1)' AND c_target_half_width IS NULL AND c_target_reached IS NULL AND c_rounds IS NULL")" 1

# the runs with a comparison that did not reach its target, by the reports
want_wide=$(cat "$tmp"/*.marks | awk '$4 == "f" { print $1 }' | sort -u)
check_eq "run_figures.flags bit 16 marks exactly those runs" \
	"$(sql <<<"SELECT run_id FROM run_figures WHERE flags & 16 <> 0 ORDER BY 1")" \
	"$want_wide"
# per method (fixed repeats are a method of their own): "method share",
# share the runs the reports call wide over the method's runs
sql <<<"SELECT run_id, method FROM runs WHERE provider = 'test'" \
	>"$tmp/methods"
/usr/bin/python3 - "$tmp/methods" "$want_wide" >"$tmp/want" <<'PYEOF'
import collections, sys
wide = set(sys.argv[2].split())
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    run_id, method = line.rstrip("\n").split("|")
    runs[method].append(run_id in wide)
for method in sorted(runs):
    print(method, "%.3f" % (sum(runs[method]) / len(runs[method])))
PYEOF
cat "$tmp/want"
# col FILE: "method wide_share" per row of a --format csv output
col() {
	/usr/bin/python3 - "$1" <<'PYEOF'
import csv, sys
for row in sorted(csv.DictReader(open(sys.argv[1])), key=lambda r: r["method"]):
    print(row["method"], row["wide_share"])
PYEOF
}
fb compare --where provider=test --method '*' --format csv \
	>"$tmp/compare.csv" 2>&1
check_eq "fleetbench compare exits 0" "$?" 0
check_eq "compare: wide_share per method is the reports' share" \
	"$(col "$tmp/compare.csv")" "$(cat "$tmp/want")"
fb kernels --provider test --instance-type t1 --method '*' --format csv \
	>"$tmp/kernels.csv" 2>&1
check_eq "fleetbench kernels exits 0" "$?" 0
check_eq "kernels: the same" "$(col "$tmp/kernels.csv")" "$(cat "$tmp/want")"
fb compare --where provider=test --method '*' >"$tmp/compare.txt" 2>&1
check_grep "the table names the column" "$tmp/compare.txt" 'wide_share'
check_eq "fleet_compare_by() in psql says the same" \
	"$(sql <<<"SELECT method, wide_share FROM fleet_compare_by(NULL, '{\"provider\": [\"test\"]}', NULL, '*') ORDER BY 1" | tr '|' ' ')" \
	"$(cat "$tmp/want")"
# --- the windows' noisy reasons and vCPUs ------------------------------------

# wins FILE: "benchmark/variant|window|noisy_reason|cpus" per window of the
# wire report FILE ("-" for an absent field)
wins() {
	/usr/bin/python3 - "$1" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
for b in d["benchmarks"]:
    for k, w in enumerate(b.get("windows", []), 1):
        print("%s/%s|%d|%s|%s" % (b["benchmark"], b["variant"], k,
                                  w.get("noisy_reason", "-"), w.get("cpus", "-")))
PYEOF
}
# the loose run ran with --psi-cpu-threshold 0
wins "$tmp/loose.json" >"$tmp/loose.wins"
id=$(cut -d' ' -f1 "$tmp/loose.marks" | head -1)
sql >"$tmp/loose.db" <<-EOF
	SELECT b.benchmark || '/' || b.variant, w.k,
	       coalesce(w.e->>'noisy_reason', '-'), coalesce(w.e->>'cpus', '-')
	FROM bench_results AS b,
	     jsonb_array_elements(b.windows) WITH ORDINALITY AS w(e, k)
	WHERE b.run_id = '$id'
	ORDER BY b.position, w.k
EOF
check_eq "bench_results' windows have the report's noisy reasons and vCPUs" \
	"$(cat "$tmp/loose.db")" "$(cat "$tmp/loose.wins")"
check_eq "every window says which vCPUs it ran on" \
	"$(grep -cv '[|][0-9][0-9,]*$' "$tmp/loose.db")" 0
check_grep "(and there are windows)" "$tmp/loose.db" '[|][0-9][0-9,]*$'
if /usr/bin/python3 -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1]))["probe"].get("psi", {}).get("available") else 1)' "$tmp/loose.json"; then
	check_grep "with PSI, --psi-cpu-threshold 0 flags windows, the reason stored" \
		"$tmp/loose.db" '[|]cpu pressure [0-9.]*% > 0%[|]'
else
	check_grep "without PSI, the probe says so" "$tmp/loose.json" \
		'"available": false'
fi
check_eq "the fixed run's windows' vCPUs are stored too" \
	"$(sql <<<"SELECT cardinality(w_cpus) = cardinality(w_noisy) FROM run_results WHERE run_id = '$(cut -d' ' -f1 "$tmp/fixed.marks" | head -1)'")" t

# the report's capability matrix: the kernel's method is the one most run
# (two runs of the first method), and says how many of them were wide
top=$(cut -d'|' -f2 "$tmp/methods" | sort | uniq -c | sort -rn | awk 'NR == 1 { print $2 }')
top_share=$(awk -v m="$top" '$1 == m { print $2 }' "$tmp/want")
fb report --out "$tmp/report.html" --where provider=test >"$tmp/report.out" 2>&1
check_eq "fleetbench report exits 0" "$?" 0
check_grep "the report marks the cell's wide runs ($top_share)" \
	"$tmp/report.html" "data-trust=\"wide\" data-share=\"$top_share\">wide in "

# --- a report as JSON (fleetbench-collector load) ---------------------------

# ingest FIELDS [WINDOW]: the fixture with run_id $id, the first
# comparison's fields replaced by FIELDS and its first window's by WINDOW
# (JSON objects), through `fleetbench-collector load` (load_one)
ingest() {
	sql -v b="$(cat "$fixtures/aws-m5.large-b.json")" -v f="$1" \
		-v w="${2:-"{}"}" -v id="$id" <<-'EOF' | load_one
		SELECT jsonb_set(jsonb_set(jsonb_set(:'b'::jsonb,
			'{run_id}', to_jsonb(:'id'::text)),
			'{comparisons,0}', (:'b'::jsonb #> '{comparisons,0}') || :'f'::jsonb),
			'{benchmarks,0,windows,0}',
			(:'b'::jsonb #> '{benchmarks,0,windows,0}') || :'w'::jsonb)
	EOF
}
id=$(uuid)
check_eq "a JSON report with a target and a noisy window is stored" \
	"$(ingest '{"target_half_width": 0.05, "target_reached": false, "rounds": 20}' \
		'{"noisy": true, "noisy_reason": "steal 7.0% > 5%", "cpus": "1"}')" t
check_eq "its first window's reason and vCPUs are in bench_results" \
	"$(sql <<<"SELECT windows->0->>'noisy_reason', windows->0->>'cpus', windows->1 ? 'cpus' FROM bench_results WHERE run_id = '$id' AND position = 1")" \
	'steal 7.0% > 5%|1|f'
check_eq "its first comparison's target, and none for the others" \
	"$(sql <<<"SELECT c_target_half_width[1:2], c_target_reached[1:2], c_rounds[1:2] FROM runs WHERE run_id = '$id'")" \
	'{0.05,NULL}|{f,NULL}|{20,NULL}'
check_eq "and it counts as wide" \
	"$(sql <<<"SELECT flags & 16 FROM run_figures WHERE run_id = '$id'")" 16
id=$(uuid)
ingest '{"target_half_width": 2, "target_reached": true, "rounds": 5}' \
	>"$tmp/bad1.out"
check_grep "a half-width over 1 is refused, named" "$tmp/bad1.out" \
	'comparisons\[0\]\.target_half_width: 2 is outside \(0, 1\]'
ingest '{"target_half_width": 0.1, "target_reached": true, "rounds": 0}' \
	>"$tmp/bad2.out"
check_grep "0 rounds are refused, named" "$tmp/bad2.out" \
	'comparisons\[0\]\.rounds: 0 is outside \[1, '
check_eq "neither was stored" \
	"$(sql <<<"SELECT count(*) FROM runs WHERE run_id = '$id'")" 0

stop_collector
check_eq "the collector stops cleanly" "$?" 0
finish
