#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Provider drift (schema/functions/56_drift.sql, issue 39): two groups of
# 20 hosts with a run a day for 40 days on one kernel, stored in the order
# they ran through `fleetbench-collector load` (each batch's end runs the
# drift check, as serve's does): in one, io_uring's gain over pread drops
# 5% from day 30 on every host (the provider changed the hosts, not the
# kernel); the other has noise alone. The first raises exactly one drift
# alert, dated the day of the step and raised within 3 days of it, with an
# interval that covers -5% and the hosts that show it; the second raises
# none. The alert reads in words in `fleetbench alerts`, the hook's JSON
# and Alertmanager's.
#
# Environment: SOURCE_DIR, BUILD_DIR, COLLECTOR, FLEETBENCH, PG_BINDIR.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FLEETBENCH=${FLEETBENCH:-$BUILD_DIR/cli/fleetbench}
require_built "$COLLECTOR" "$FLEETBENCH"
db_new drift 034_drift

# the reports: report B of the fixtures, one a day per host from 42 days
# ago, its iouring_vs_pread comparison scaled by the host's level (10%
# between hosts), the run's noise (3%) and, in group fc-drift from day 30
# on, 0.95; the step's day on standard output's first line
/usr/bin/python3 - "$SOURCE_DIR/tests/fixtures/reports/aws-m5.large-b.json" \
	"$SOURCE_DIR/tests/integration" >"$tmp/reports.json" 2>"$tmp/step" <<-'EOF'
	import datetime, json, random, sys
	sys.path.insert(0, sys.argv[2])
	from scaled_report import scaled_report
	base = json.load(open(sys.argv[1]))
	r = random.Random(34)
	today = datetime.datetime.now(datetime.timezone.utc).replace(
	    hour=3, minute=0, second=0, microsecond=0)
	first = today - datetime.timedelta(days=42)
	step = 30
	sys.stderr.write((first + datetime.timedelta(days=step)).date().isoformat() + "\n")
	levels = {(g, h): r.lognormvariate(0, 0.10)
	          for g in ("drift", "steady") for h in range(20)}
	n = 0
	for day in range(40):
	    for group in ("drift", "steady"):
	        for h in range(20):
	            n += 1
	            s = levels[(group, h)] * r.lognormvariate(0, 0.03)
	            if group == "drift" and day >= step:
	                s *= 0.95
	            t = first + datetime.timedelta(days=day, minutes=h)
	            print(json.dumps(scaled_report(
	                base, n, "%s-%02d" % (group, h), "fc-" + group, "6.8",
	                int(t.timestamp() * 1000), s)))
EOF
step=$(cat "$tmp/step")
# a day's 40 runs a batch, as serve commits runs that come in day by day
"$COLLECTOR" load --schema-dir "$SOURCE_DIR/schema" --dsn "$conninfo" \
	--batch-max 40 <"$tmp/reports.json" >"$tmp/load.out" 2>"$tmp/load.err"
check_eq "the 1,600 runs are stored ($(tail -n 1 "$tmp/load.err"))" \
	"$?|$(grep -c ' stored$' "$tmp/load.out")" "0|1600"
check_eq "no alert check failed" "$(qn <<<"SELECT count(*) FROM alert_errors")" 0

check_eq "the group that drifted raises one drift alert, on its figure" \
	"$(qn <<<"SELECT count(*), min(kind), min(effect->>'figure'), min(change->>'iouring_vs_pread')
		FROM fleet_alerts WHERE instance_type = 'fc-drift'")" \
	"1|drift|iouring_vs_pread|decreased"
IFS='|' read -r on detected est lo hi moved hosts < <(qn <<-'EOF'
	SELECT effect->>'changed_on', effect->>'detected_on', effect->>'change',
	       effect->>'change_lo', effect->>'change_hi',
	       jsonb_array_length(effect->'hosts_moved'), effect->>'hosts'
	FROM fleet_alerts WHERE instance_type = 'fc-drift'
EOF
)
check_eq "dated the day of the step ($step)" "$on" "$step"
check_eq "raised within 3 days of it (as of $detected)" \
	"$(/usr/bin/python3 -c "import datetime as d, sys
print(0 <= (d.date.fromisoformat(sys.argv[2]) - d.date.fromisoformat(sys.argv[1])).days <= 3)" \
		"$step" "$detected")" True
check_eq "its interval covers -5% ($est [$lo, $hi])" \
	"$(awk -v l="$lo" -v h="$hi" 'BEGIN { print (l < -0.05 && h > -0.05) }')" 1
check_eq "it names the hosts that show it: most of the 20 ($moved of $hosts)" \
	"$(awk -v m="$moved" -v h="$hosts" 'BEGIN { print (h == 20 && m >= 15) }')" 1
check_eq "the group with noise alone raises none" \
	"$(qn <<<"SELECT count(*) FROM fleet_alerts WHERE instance_type = 'fc-steady'")" 0
check_eq "no other alert" "$(qn <<<"SELECT count(*) FROM fleet_alerts")" 1

check_match "fleetbench alerts says it in words" \
	"$(fb --format csv alerts | grep ',drift,')" \
	"*,drift,aws,fc-drift,*6.8*,20,\"io_uring/pread gain drifted -*% \[-*%, -*%\] from $step, no kernel change, on * of 20 hosts (p = *)*"
check_match "the hook's JSON carries it and its effect" \
	"$(qn <<<"SELECT fleetbench_alert_json(id)::text FROM fleet_alerts")" \
	"*\"kind\": \"drift\"*\"effect\": {*\"changed_on\": \"$step\"*"
check_eq "Alertmanager gets FleetbenchDrift for its figure" \
	"$(qn <<<"SELECT alert->'labels'->>'alertname', alert->'labels'->>'figure'
		FROM fleetbench_alertmanager_alerts(60000, now())")" \
	"FleetbenchDrift|iouring_vs_pread"

# the same reports again: nothing new
load_json "$conninfo" <"$tmp/reports.json" >"$tmp/load2.out" 2>/dev/null
check_eq "loaded again: duplicates, still one alert" \
	"$(grep -c ' duplicate$' "$tmp/load2.out")|$(qn <<<"SELECT count(*) FROM fleet_alerts")" \
	"1600|1"

finish
