#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vCPU placement (issue 19) on a real PostgreSQL: runs.placement from the
# probe's topology.placement, the view host_placement_changes, the words
# `fleetbench kernels` adds to a kernel whose hosts changed placement, and
# an alert whose change coincides with a placement change saying so
# (alert_summary, `fleetbench alerts`).
#
# Runs are made from tests/fixtures/reports/aws-m5.large-b.json as in
# test_alerts.sh, each with the placement the test gives.
#
# Environment: SOURCE_DIR, BUILD_DIR, COLLECTOR, FLEETBENCH, PG_BINDIR.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD_DIR=${BUILD_DIR:-$SOURCE_DIR/build}
COLLECTOR=${COLLECTOR:-$BUILD_DIR/collector/fleetbench-collector}
FLEETBENCH=${FLEETBENCH:-$BUILD_DIR/cli/fleetbench}
fixtures=$SOURCE_DIR/tests/fixtures/reports

require_built "$COLLECTOR" "$FLEETBENCH"

db_new placement 023_placement
q() {
	qn "$@"
}

smt='threads=2 cores=1 sockets=1 smt=0-1 L1d=0-1 L1i=0-1 L2=0-1 L3=0-1'
cores='threads=1 cores=2 sockets=1 smt=0/1 L1d=0/1 L1i=0/1 L2=0/1 L3=0-1'

nrun=0
# run HOST KERNEL MINUTE PLACEMENT [SQPOLL]: stores a run of HOST on
# KERNEL, MINUTE minutes after 2024-11-25 09:00, whose probe's topology
# has PLACEMENT ("-": a probe without topology, as older agents send)
run() {
	local topo
	nrun=$((nrun + 1))
	run_id=$(printf '00000000-0000-4000-8000-%012d' "$nrun")
	if [ "$4" = - ]; then
		topo="r #- '{probe,topology}'"
	else
		topo="jsonb_set(r, '{probe,topology}', jsonb_build_object('placement', '$4'::text, 'threads_per_core', 1))"
	fi
	out=$(q -v b="$(cat "$fixtures/aws-m5.large-b.json")" <<-EOF | load_one
		SELECT $topo
		FROM (SELECT jsonb_set(jsonb_set(jsonb_set(jsonb_set(jsonb_set(
			jsonb_set(jsonb_set(:'b'::jsonb,
			'{run_id}', to_jsonb('$run_id'::text)),
			'{host,machine_id}', to_jsonb(md5('$1'))),
			'{host,hostname}', to_jsonb('$1'::text)),
			'{kernel,release}', to_jsonb('$2'::text)),
			'{started_unix_ms}', to_jsonb(1732525200000 + $3 * 60000::bigint)),
			'{finished_unix_ms}', to_jsonb(1732525230000 + $3 * 60000::bigint)),
			'{probe,io_uring,sqpoll}', to_jsonb('${5:-ok}'::text)) AS r) AS x
	EOF
	)
	[ "$out" = t ] || not_ok "run $1 $2 $3 not stored: $out"
}

# h1 moves from SMT siblings to separate cores with the kernel upgrade and
# loses SQPOLL; h2 keeps its placement and loses SQPOLL too; h3 changes
# placement on the old kernel; h4's agent is older (no topology)
run h1 6.1 0 "$smt"
run h2 6.1 1 "$smt"
run h3 6.1 2 "$cores"
run h4 6.1 3 -
run h3 6.1 10 "$smt"
run h1 6.8 60 "$cores" EPERM
run h2 6.8 61 "$smt" EPERM
run h4 6.8 63 -

check_eq "runs.placement is the probe's topology.placement, NULL without one" \
	"$(q <<<"SELECT hostname || ':' || coalesce(placement, 'NULL') FROM runs WHERE started_at < '2024-11-25 09:01+00' OR hostname = 'h4' ORDER BY started_at" | tr '\n' '|')" \
	"h1:$smt|h4:NULL|h4:NULL|"
check_eq "host_placement_changes: one row per change, oldest first" \
	"$(q <<<"SELECT hostname, old_kernel, new_kernel, old_placement = '$cores', new_placement = '$smt' FROM host_placement_changes" | tr '\n' ' ')" \
	"h3|6.1|6.1|t|t h1|6.1|6.8|f|f "
check_eq "h1's change is SMT siblings to separate cores" \
	"$(q <<<"SELECT old_placement || ' -> ' || new_placement FROM host_placement_changes WHERE hostname = 'h1'")" \
	"$smt -> $cores"

# --- kernels -----------------------------------------------------------------

fb kernels --provider aws --instance-type m5.large --format csv \
	>"$tmp/kernels.csv" 2>"$tmp/kernels.err"
check_eq "kernels exits 0" "$?" 0
changes() {
	/usr/bin/python3 -c '
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    if r["kernel"] == sys.argv[2]:
        print(r["changes"])' "$tmp/kernels.csv" "$1"
}
check_match "6.8: the placement change of h1 is named" "$(changes 6.8)" \
	"*vCPU placement changed on 1 host ($smt -> $cores)*"
check_match "6.8: besides what else changed" "$(changes 6.8)" \
	"*SQPOLL permitted*"
check_eq "6.1: h3's change within the kernel is named too" "$(changes 6.1)" \
	"vCPU placement changed on 1 host ($cores -> $smt)"
fb kernels --provider aws --instance-type m5.large --since 2024-11-25T09:30:00Z \
	--format csv >"$tmp/since.csv" 2>&1
check_eq "--since leaves out the changes before it" \
	"$(/usr/bin/python3 -c '
import csv, sys
print(sum("placement" in r["changes"] for r in csv.DictReader(open(sys.argv[1]))))' "$tmp/since.csv")" 1

# --- alerts ------------------------------------------------------------------

check_eq "the SQPOLL alert covers h1 and h2" \
	"$(q <<<"SELECT hosts, summary FROM alert_summary WHERE kind = 'fingerprint'")" \
	"2|sqpoll ok -> EPERM (vCPU placement changed with it on 1 of 2 hosts)"
fb alerts >"$tmp/alerts.out" 2>&1
check_grep "fleetbench alerts says so" "$tmp/alerts.out" \
	'vCPU placement changed with it on 1 of 2 hosts'

# an alert whose hosts all kept their placement says nothing of it
run h5 6.1 100 "$smt"
run h5 6.9 160 "$smt" EPERM
check_eq "an alert without a placement change is as before" \
	"$(q <<<"SELECT summary FROM alert_summary WHERE new_kernel = '6.9'")" \
	"sqpoll ok -> EPERM"

finish
