#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The fleet-level test of a kernel change (schema/functions/52_fleet_change.sql,
# issue 39) on stored runs: the fleet fixture's gcp n2-standard-2, whose
# io_uring gain collapses on its 3 hosts (a change too few hosts cannot
# make significant, said so: no interval); then two groups of 30 hosts
# stored through `fleetbench-collector load`, each host measured on both
# kernels: one whose hosts each lose 8% of io_uring's gain over pread
# (the paired test finds it, its interval covering -8%), one that only
# has noise (nothing found, the interval covering 0); and the alerts
# their loading raised: one shift alert for the first, none for the
# second, the fixture's host alerts as before.
#
# Environment: SOURCE_DIR, BUILD_DIR, COLLECTOR, AGENT, FLEETGEN, PG_BINDIR.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

tmp_new fleet-change
chmod 0755 "$tmp"
fleet_load

# change PROVIDER TYPE METHOD OLD NEW FIGURE: the test's row, rounded, '-'
# for no interval
change() {
	qn <<-EOF
		SELECT concat_ws('|', hosts_old, hosts_new, hosts_paired, paired,
				 test, round(change::numeric, 3),
				 coalesce(round(change_lo::numeric, 3)::text, '-'),
				 coalesce(round(change_hi::numeric, 3)::text, '-'),
				 round(p::numeric, 4))
		FROM fleetbench_fleet_change('$1', '$2', '$3', '$4', '$5',
					     '{$6}')
	EOF
}

check_eq "the fixture's collapse on 3 hosts: -63%, p = 0.1, no interval" \
	"$(change gcp n2-standard-2 full 5.15.0-1042-gcp 6.2.0-1014-gcp iouring_vs_pread)" \
	"3|3|3|f|Mann-Whitney U, exact|-0.634|-|-|0.1000"
check_eq "a figure of one side only is not listed" \
	"$(change gcp n2-standard-2 full 5.15.0-1042-gcp 9.9 iouring_vs_pread)" ""

# 30 hosts on 6.1 and again on 6.8: report B with the iouring_vs_pread
# comparison (and its interval) scaled by the host's own level, a
# run's noise (3%) and, in group "loss", 0.92 on 6.8
/usr/bin/python3 - "$SOURCE_DIR/tests/fixtures/reports/aws-m5.large-b.json" \
	"$SOURCE_DIR/tests/integration" >"$tmp/hosts.json" <<-'EOF'
	import json, random, sys
	sys.path.insert(0, sys.argv[2])
	from scaled_report import scaled_report
	base = json.load(open(sys.argv[1]))
	r = random.Random(8)
	n = 0
	for group, factor in (("loss", 0.92), ("noise", 1.0)):
	    for h in range(30):
	        level = r.lognormvariate(0, 0.10)
	        for k, (kernel, f) in enumerate((("6.1", 1.0), ("6.8", factor))):
	            n += 1
	            s = level * f * r.lognormvariate(0, 0.03)
	            print(json.dumps(scaled_report(
	                base, n, "%s-%02d" % (group, h), "fc-" + group, kernel,
	                base["started_unix_ms"] + k * 86400000 + h * 60000, s)))
EOF
load_json <"$tmp/hosts.json" >"$tmp/load.out" 2>"$tmp/load.err"
check_eq "the 120 runs are stored ($(tail -n 1 "$tmp/load.err"))" \
	"$?|$(grep -c ' stored$' "$tmp/load.out")" "0|120"

out=$(change aws fc-loss standard 6.1 6.8 iouring_vs_pread)
check_match "30 hosts that each lose 8%: paired, exact, significant ($out)" \
	"$out" "30|30|30|t|Wilcoxon signed-rank, exact|-0.0*|-0.*|-0.*|0.0000"
IFS='|' read -r _ _ _ _ _ est lo hi _ <<<"$out"
check_eq "the estimate is within 2 points of -8% and its interval covers it ($est [$lo, $hi])" \
	"$(awk -v e="$est" -v l="$lo" -v h="$hi" 'BEGIN {
		print (e > -0.10 && e < -0.06 && l < -0.08 && h > -0.08) }')" 1
out=$(change aws fc-noise standard 6.1 6.8 iouring_vs_pread)
IFS='|' read -r _ _ _ paired _ est lo hi p <<<"$out"
check_eq "30 hosts with noise only: nothing significant, the interval covers 0 ($out)" \
	"$(awk -v l="$lo" -v h="$hi" -v p="$p" 'BEGIN {
		print (l < 0 && h > 0 && p > 0.05) }')|$paired" "1|t"

# --- the fleet alerts those loads raised (docs/alerts.md) -------------------

check_eq "the fixture's host alerts still fire: SQPOLL refused, the collapsed gain" \
	"$(qn <<<"SELECT count(*) FILTER (WHERE kind = 'fingerprint' AND summary LIKE 'sqpoll ok -> EPERM%'),
		       count(*) FILTER (WHERE kind = 'gain' AND provider = 'gcp'
					AND change ? 'iouring_vs_pread')
		FROM alert_summary")" "1|1"
check_eq "the 30 hosts that each lose 8% raise one shift alert, on their figure" \
	"$(qn <<<"SELECT count(*), min(kind), min(change::text), min(hosts), min(old_kernels[1])
		FROM alert_summary WHERE instance_type = 'fc-loss'")" \
	'1|shift|{"iouring_vs_pread": "decreased"}|30|6.1'
IFS='|' read -r est lo hi q < <(qn <<<"SELECT effect->>'change', effect->>'change_lo',
	effect->>'change_hi', effect->>'q' FROM fleet_alerts WHERE instance_type = 'fc-loss'")
check_eq "its effect's interval covers -8%, its q below 0.01 ($est [$lo, $hi], q $q)" \
	"$(awk -v l="$lo" -v h="$hi" -v q="$q" 'BEGIN {
		print (l < -0.08 && h > -0.08 && q < 0.01) }')" 1
check_match "its summary says the change, its interval, the hosts and q" \
	"$(qn <<<"SELECT summary FROM alert_summary WHERE instance_type = 'fc-loss'")" \
	"io_uring* -[0-9]*.[0-9]% \[-[0-9]*.[0-9]%, -[0-9]*.[0-9]%\] on 30 hosts paired (Wilcoxon signed-rank, exact), q = *"
check_eq "the 30 hosts with noise alone raise none" \
	"$(qn <<<"SELECT count(*) FROM fleet_alerts WHERE instance_type = 'fc-noise'")" 0
check_eq "no alert check or evaluation failed" \
	"$(qn <<<"SELECT count(*) FROM alert_errors")" 0
check_match "the hook's JSON carries the effect" \
	"$(qn <<<"SELECT fleetbench_alert_json(id)::text FROM fleet_alerts WHERE instance_type = 'fc-loss'")" \
	'*"effect": {*"q": *"host_alerts": \[\]*'
check_match "Alertmanager gets it as FleetbenchFleetShift, the figure labelled" \
	"$(qn <<<"SELECT alert->'labels'->>'alertname', alert->'labels'->>'figure', alert->'labels'->>'previous_kernel'
		FROM fleetbench_alertmanager_alerts(60000, now()) WHERE id = (SELECT id FROM fleet_alerts WHERE instance_type = 'fc-loss')")" \
	"FleetbenchFleetShift|iouring_vs_pread|6.1"

FLEETBENCH=${FLEETBENCH:-$BUILD_DIR/cli/fleetbench}
check_match "fleetbench kernels says it beside the kernel's changes" \
	"$(fb --format csv kernels --provider aws --instance-type fc-loss | grep ',6.8,')" \
	"*fleet test: io_uring/pread gain -*% \[-*%, -*%\] on 30 hosts paired (Wilcoxon signed-rank, exact), q = *"
check_eq "and not beside the noise-only group's" \
	"$(fb --format csv kernels --provider aws --instance-type fc-noise | grep -c 'fleet test')" 0

# loading the same reports again changes nothing
load_json <"$tmp/hosts.json" >"$tmp/load2.out" 2>/dev/null
check_eq "loaded again: duplicates, still one shift alert" \
	"$(grep -c ' duplicate$' "$tmp/load2.out")|$(qn <<<"SELECT count(*) FROM fleet_alerts WHERE kind = 'shift'")" "120|1"

finish
