#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 18's roll-out gate (`fleetbench gate`, fleet_gate() and the view
# fleet_gate_latest of schema/functions/70_gate.sql) on the fleet fixture
# (tests/fixtures/README.md) loaded through the real collector and agent:
# the group whose new kernel denies SQPOLL fails with that reason in
# words, the io_uring gain's collapse fails per host, the noise-only group
# passes, a group with fewer canaries than --min-hosts waits (exit 3 once
# --wait is over) and passes once another canary reports while the gate
# waits; the failing groups are exactly the alerts' (the same rules); json
# parses and says what the table says; the view gives the CLI's verdicts;
# no host on the kernel waits; bad flags are refused (exit 2) and a
# database that cannot be reached is exit 4, not a verdict.
#
# Environment: SOURCE_DIR, BUILD_DIR, COLLECTOR, AGENT, FLEETGEN and
# FLEETBENCH (the binaries, default under BUILD_DIR), PG_BINDIR.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD_DIR=${BUILD_DIR:-$SOURCE_DIR/build}
FLEETBENCH=${FLEETBENCH:-$BUILD_DIR/cli/fleetbench}
require_built "$FLEETBENCH"

tmp_new gate

gate_pid=
# shellcheck disable=SC2317 # called at exit by lib.sh
on_cleanup() {
	[ -n "$gate_pid" ] && kill "$gate_pid" 2>/dev/null
}

# q: runs SQL from stdin, prints unaligned rows
# shellcheck disable=SC2120 # as test_fleet_alerts.sh's
q() {
	"$PG_BINDIR/psql" "$conninfo" -X -q -A -t -v ON_ERROR_STOP=1 "$@"
}

# gate ARGS...: `fleetbench gate`, its output in $tmp/out, its standard
# error in $tmp/err, its exit status in rc
gate() {
	"$FLEETBENCH" --dsn "$conninfo" gate "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

fleet_load
check_eq "the fleet is stored" "$(q <<<"SELECT count(*) FROM runs")" \
	"$(wc -l <"$fleet_manifest")"

c6i_new=6.5.0-0.deb12.4-cloud-amd64
gcp_new=6.2.0-1014-gcp

# --- SQPOLL denied: fail, with the reason in words ----------------------------

gate --kernel "$c6i_new" --format csv
check_eq "SQPOLL denied: exit 1" "$rc" 1
check_eq "SQPOLL denied: c6i.xlarge fails, its three hosts compared" \
	"$(cat "$tmp/out")" \
	"provider,instance_type,verdict,hosts,compared,previous_kernels,reasons
aws,c6i.xlarge,fail,3,3,6.1.0-18-cloud-amd64,sqpoll ok -> EPERM on 3 of 3 hosts"

# --- the collapse fails per host; the noise-only group passes ------------------

gate --kernel "$gcp_new" --format csv
check_eq "gcp's new kernel: exit 1 (one group fails)" "$rc" 1
check_eq "the noise-only e2-standard-4 passes, the collapse fails" \
	"$(cut -d, -f1-6 "$tmp/out")" \
	"provider,instance_type,verdict,hosts,compared,previous_kernels
gcp,e2-standard-4,pass,3,3,5.15.0-1042-gcp
gcp,n2-standard-2,fail,3,3,5.15.0-1042-gcp"
check_eq "a passing group whose hosts all moved says it had no concurrent baseline" \
	"$(grep '^gcp,e2-standard-4,' "$tmp/out" | cut -d, -f7-)" \
	"no concurrent baseline (no host of the type on another kernel in the same window): compared with history only"
n2_reasons=$(grep '^gcp,n2-standard-2,' "$tmp/out" | cut -d, -f7- |
	sed 's/^"//; s/"$//; s/; /\n/g')
check_eq "one reason per host" "$(wc -l <<<"$n2_reasons")" 3
i=0
while read -r reason; do
	i=$((i + 1))
	check_match "the collapse on gcp-n2-$i in words" "$reason" \
		"io_uring/pread gain [23].[0-9]* -> 1.[0-9]* (-6[0-9]%, p = 4.1e-05) on gcp-n2-$i (3 of 3 runs)"
done <<<"$n2_reasons"

gate --kernel "$gcp_new" --where instance_type=e2-standard-4
check_eq "the noise-only group alone: exit 0" "$rc" 0
check_match "the table says pass" "$(grep '^gcp' "$tmp/out")" \
	"gcp *e2-standard-4 *pass *3 *3 *5.15.0-1042-gcp*"
check_eq "the table counts its rows" "$(tail -n 1 "$tmp/out")" "(1 row)"

# --- json parses and matches the table -------------------------------------------

gate --kernel "$gcp_new" --format json
check_eq "json: exit 1 as the table" "$rc" 1
/usr/bin/python3 -m json.tool "$tmp/out" >/dev/null 2>"$tmp/json.err"
check_eq "json parses" "$?" 0
cp "$tmp/out" "$tmp/gate.json"
gate --kernel "$gcp_new" --format csv
check_eq "json says what csv says (lists as arrays)" \
	"$(/usr/bin/python3 - "$tmp/gate.json" <<-'EOF'
	import csv, json, sys
	w = csv.writer(sys.stdout, lineterminator="\n")
	w.writerow(["provider", "instance_type", "verdict", "hosts", "compared",
		    "previous_kernels", "reasons"])
	for g in json.load(open(sys.argv[1])):
	    assert isinstance(g["hosts"], int) and isinstance(g["reasons"], list)
	    w.writerow([g["provider"], g["instance_type"], g["verdict"], g["hosts"],
		        g["compared"], ", ".join(g["previous_kernels"]),
		        "; ".join(g["reasons"])])
	EOF
)" "$(cat "$tmp/out")"

# --- the same rules as the alerts ---------------------------------------------------

cut -f5 "$fleet_manifest" | sort -u | while read -r k; do
	gate --kernel "$k" --format csv
	tail -n +2 "$tmp/out" | cut -d, -f1-3,5 | sed "s/^/$k,/"
done | sort >"$tmp/all.verdicts"
# the kernels the hosts came from: no host has an earlier kernel
check_eq "an old kernel has nothing to compare: its 7 groups wait" \
	"$(grep -c ',waiting,0$' "$tmp/all.verdicts")" 7
grep -v ',waiting,0$' "$tmp/all.verdicts" | cut -d, -f1-4 >"$tmp/cli.verdicts"
check_eq "the gate fails exactly the groups and kernels that alerted" \
	"$(grep ',fail$' "$tmp/cli.verdicts" | cut -d, -f1-3)" \
	"$(q <<<"SELECT new_kernel || ',' || provider || ',' || instance_type
		   FROM alert_summary ORDER BY 1")"
check_eq "every other group with hosts on a new kernel passes" \
	"$(grep -c ',pass$' "$tmp/cli.verdicts")" 3
check_eq "the view fleet_gate_latest gives the CLI's verdicts" \
	"$(q <<<"SELECT new_kernel || ',' || provider || ',' || instance_type
		       || ',' || verdict FROM fleet_gate_latest ORDER BY 1")" \
	"$(cat "$tmp/cli.verdicts")"
check_eq "fleet_gate() in SQL, with its defaults" \
	"$(q <<<"SELECT instance_type, verdict, hosts, compared, reasons
		   FROM fleet_gate('$c6i_new')")" \
	'c6i.xlarge|fail|3|3|{"sqpoll ok -> EPERM on 3 of 3 hosts"}'

# --- too few canaries: waiting ---------------------------------------------------------

# --wait longer than one answer takes (the gate's pairs take up to 7 s
# here beside the other ctest job), so that it asks at least twice
start=$(date +%s.%N)
gate --kernel "$gcp_new" --where instance_type=e2-standard-4 --min-hosts 4 \
	--wait 12s --interval 0.5s --format csv
check_eq "fewer canaries than --min-hosts: exit 3 after --wait" "$rc" 3
check_eq "the group waits, and says for what" "$(tail -n +2 "$tmp/out")" \
	"gcp,e2-standard-4,waiting,3,3,5.15.0-1042-gcp,3 of 4 hosts compared with their previous kernel"
check_eq "it waited --wait" \
	"$(/usr/bin/python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]) >= 12)" \
		"$start" "$(date +%s.%N)")" True
check_grep "it says it asks again" "$tmp/err" "asking again in"
gate --kernel "$gcp_new" --min-hosts 4 --format csv
check_eq "a failing group fails at once, whatever others wait for" "$rc" 1
check_eq "... and the waiting one is listed" \
	"$(tail -n +2 "$tmp/out" | cut -d, -f2,3)" "e2-standard-4,waiting
n2-standard-2,fail"

# --- nothing on the kernel yet -------------------------------------------------------

gate --kernel 9.9.9-canary --format json
check_eq "no host on the kernel: exit 3" "$rc" 3
check_eq "no host on the kernel: json is an empty array" \
	"$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1])))' "$tmp/out")" "[]"
check_grep "no host on the kernel: said so" "$tmp/err" \
	"no host has reported from kernel '9.9.9-canary' yet"
gate --kernel "$gcp_new" --since 2030-01-01
check_eq "--since after every run: exit 3" "$rc" 3
gate --kernel "$gcp_new" --since 2025-03-31 --format csv
check_eq "--since the new kernel's first run: the same verdicts" \
	"$(tail -n +2 "$tmp/out" | cut -d, -f1-5)" \
	"gcp,e2-standard-4,pass,3,3
gcp,n2-standard-2,fail,3,3"

# --- bad flags ------------------------------------------------------------------------

bad() { # bad NAME MESSAGE-REGEX ARGS...
	local name=$1 msg=$2

	shift 2
	gate "$@"
	check_eq "$name: exit 2" "$rc" 2
	check_grep "$name: says why" "$tmp/err" "$msg"
}
bad "no --kernel" "gate needs --kernel RELEASE"
bad "--min-hosts 0" "--min-hosts '0': a number of hosts, 1 or more" \
	--kernel "$gcp_new" --min-hosts 0
bad "--min-hosts x" "--min-hosts 'x'" --kernel "$gcp_new" --min-hosts x
bad "--wait soon" "--wait 'soon': not a duration" --kernel "$gcp_new" \
	--wait soon
bad "--wait -5s" "--wait '-5s': a duration is not negative" \
	--kernel "$gcp_new" --wait -5s
bad "--interval 0" "--interval '0': must be above 0" --kernel "$gcp_new" \
	--interval 0
bad "--since yesterday-ish" "--since 'last tuesday': not a date or time" \
	--kernel "$gcp_new" --since 'last tuesday'
bad "--where kernel=" "the kernel is the gate's own" --kernel "$gcp_new" \
	--where kernel=5.15.0-1042-gcp
bad "--where an unknown key" "unknown key 'colour'" --kernel "$gcp_new" \
	--where colour=red
bad "--where without =" "expected KEY=VALUE" --kernel "$gcp_new" --where x
bad "an unknown option" "unknown option '--canaries'" --kernel "$gcp_new" \
	--canaries 3
bad "an operand" "unexpected argument 'now'" --kernel "$gcp_new" now
"$FLEETBENCH" --dsn "host=127.0.0.1 port=1 dbname=x connect_timeout=2" \
	gate --kernel "$gcp_new" >"$tmp/out" 2>"$tmp/err"
check_eq "no database: exit 4, not a verdict" "$?" 4

# --- waiting, then another canary reports --------------------------------------------

"$FLEETBENCH" --dsn "$conninfo" gate --kernel "$gcp_new" \
	--where instance_type=e2-standard-4 --min-hosts 4 --wait 120s \
	--interval 0.5s --format csv >"$tmp/wait.out" 2>"$tmp/wait.err" &
gate_pid=$!
# shellcheck disable=SC2317 # called by wait_for
waiting() { grep -q "asking again" "$tmp/wait.err"; }
wait_for 30 waiting
check_eq "the gate waits for a fourth canary" "$?" 0
# a fourth e2-standard-4 host (another machine id), on both kernels
"$FLEETGEN" --spool "$tmp/canary" --seed 12 --host gcp-e2-1 \
	>"$tmp/canary.tsv" 2>"$tmp/fleetgen.canary.log"
fleet_send "$tmp/canary"
check_eq "the canary's reports are delivered" "$?" 0
wait "$gate_pid"
rc=$?
gate_pid=
check_eq "the gate passes once the fourth canary reported: exit 0" "$rc" 0
check_eq "... four hosts compared" "$(tail -n +2 "$tmp/wait.out")" \
	"gcp,e2-standard-4,pass,4,4,5.15.0-1042-gcp,no concurrent baseline (no host of the type on another kernel in the same window): compared with history only"
check_eq "... and the alerts agree: no alert on e2-standard-4" \
	"$(q <<<"SELECT count(*) FROM alerts WHERE instance_type = 'e2-standard-4'")" 0

finish
