#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fleetbench-collector load (collector/cmd_load.c): reports as JSON, as
# `fleetbench-agent show` prints them, stored by the path serve takes. The
# fleet fixture's reports, shown from an agent's spool and loaded into a
# database of their own, are row for row what serve stored of the same
# reports sent over CURVE (fleet_load). Then what load answers: a
# duplicate, a report the codec refuses (named, the others stored), a
# stream of objects in one line or many, input that is no JSON or ends
# inside a report (what came before stored), a database not migrated.
#
# Environment: SOURCE_DIR, BUILD_DIR, COLLECTOR, AGENT, FLEETGEN, PG_BINDIR.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FLEETGEN=${FLEETGEN:-$BUILD_DIR/tests/fleetgen}
require_built "$COLLECTOR" "$AGENT" "$FLEETGEN"

tmp_new load
chmod 0755 "$tmp"
fleet_load
served=$conninfo

# the same reports (fleetgen's seed makes them again, run ids included),
# shown as JSON from an agent's spool
"$FLEETGEN" --spool "$tmp/spool" >"$tmp/manifest" 2>"$tmp/fleetgen.log" ||
	{ not_ok "fleetgen: $(cat "$tmp/fleetgen.log")"; finish; }
n=$(wc -l <"$tmp/manifest")
: >"$tmp/fleet.json"
for f in "$tmp"/spool/*.fbr; do
	"$AGENT" show "$f" >>"$tmp/fleet.json" 2>>"$tmp/show.err" ||
		not_ok "show $f: $(tail -n 1 "$tmp/show.err")"
done

qn <<<"CREATE DATABASE $(db_sibling_name loaded)" >/dev/null
bare=$(db_sibling bare)
qn <<<"CREATE DATABASE $(db_sibling_name bare)" >/dev/null
conninfo=$(db_sibling loaded)
"$COLLECTOR" migrate --schema-dir "$SOURCE_DIR/schema" --dsn "$conninfo" \
	>"$tmp/migrate.out" 2>&1 ||
	{ not_ok "migrate: $(tail -n 3 "$tmp/migrate.out")"; finish; }

load_json <"$tmp/fleet.json" >"$tmp/load.out" 2>"$tmp/load.err"
check_eq "load stores the fleet's $n reports, exit 0 ($(tail -n 1 "$tmp/load.err"))" \
	"$?|$(grep -c ' stored$' "$tmp/load.out")" "0|$n"
check_eq "one line per report, in input order" \
	"$(cut -d' ' -f1 "$tmp/load.out" | md5sum)" \
	"$(grep -h '"run_id"' "$tmp/fleet.json" | head -n "$n" |
		sed 's/.*"run_id":"\([^"]*\)".*/\1/' | md5sum)"
check_grep "and says how many" "$tmp/load.err" \
	"^fleetbench-collector: $n reports: $n stored, 0 duplicate, 0 rejected, 0 not stored$"

# rows TABLE: every row of TABLE as one md5, but what the database gives
# a row as it stores it (the moment, a serial id)
rows() {
	qn <<-EOF
		SELECT count(*) || ' ' || md5(string_agg(r::text, '' ORDER BY r::text))
		FROM $1 AS t, LATERAL (SELECT to_jsonb(t) - 'received_at'
			- 'created_at' - 'id' - 'fleet_alert_id' AS r) AS x
	EOF
}
for t in runs run_results run_figures run_costs methods alerts; do
	got=$(rows "$t")
	want=$(conninfo=$served rows "$t")
	check_eq "$t: what load stored is what serve stored (${want%% *} rows)" \
		"$got" "$want"
done

# --- answers -----------------------------------------------------------------

first=$(head -n 1 "$tmp/manifest" | cut -f1)
"$AGENT" show "$tmp/spool/$first.fbr" >"$tmp/one.json" 2>/dev/null
load_json <"$tmp/one.json" >"$tmp/dup.out" 2>/dev/null
check_eq "a report stored already is a duplicate, exit 0" \
	"$?|$(cat "$tmp/dup.out")" "0|$first duplicate"

# three reports in one line: a new one, one the codec refuses, a new one
three=$(jq -c --arg a 00000000-0000-4000-8000-00000000000a \
	--arg b 00000000-0000-4000-8000-00000000000b \
	--arg c 00000000-0000-4000-8000-00000000000c \
	'(.run_id = $a), (.run_id = $b | .finished_unix_ms = 0),
	 (.run_id = $c)' "$tmp/one.json" | tr '\n' ' ')
load_json <<<"$three" >"$tmp/three.out" 2>/dev/null
check_eq "a refused report is named; the others are stored; exit 1" \
	"$?|$(cat "$tmp/three.out")" \
	"1|00000000-0000-4000-8000-00000000000a stored
00000000-0000-4000-8000-00000000000b rejected: finished_unix_ms: 0 is before 2020-01-01
00000000-0000-4000-8000-00000000000c stored"
check_eq "and nothing of it is stored" \
	"$(qn <<<"SELECT count(*) FROM runs WHERE run_id = '00000000-0000-4000-8000-00000000000b'")" 0

jq '.run_id = "00000000-0000-4000-8000-00000000000d" | .benchmarks = 7' \
	"$tmp/one.json" | load_json >"$tmp/type.out" 2>/dev/null
check_eq "a field of the wrong JSON type is named" "$(cat "$tmp/type.out")" \
	"00000000-0000-4000-8000-00000000000d rejected: benchmarks: a JSON int, not an array"
jq '.run_id = "00000000-0000-4000-8000-00000000000e" | .stray = 1' \
	"$tmp/one.json" | load_json >"$tmp/stray.out" 2>/dev/null
check_match "a key that is no field of a Report is named" \
	"$(cat "$tmp/stray.out")" \
	"00000000-0000-4000-8000-00000000000e rejected: *stray*"
printf '[1, 2]\n' | load_json >"$tmp/array.out" 2>/dev/null
check_eq "a JSON value that is no object is refused" \
	"$?|$(cat "$tmp/array.out")" "1|report 1 rejected: not a JSON object"

# input that ends inside the second report: the first is stored
{
	jq '.run_id = "00000000-0000-4000-8000-00000000000f"' "$tmp/one.json"
	head -c 200 "$tmp/one.json"
} | load_json >"$tmp/cut.out" 2>"$tmp/cut.err"
check_eq "input that ends inside a report: exit 1, what came before stored" \
	"$?|$(cat "$tmp/cut.out")" \
	"1|00000000-0000-4000-8000-00000000000f stored"
check_grep "and says where" "$tmp/cut.err" \
	"standard input ends inside report 2"
printf '{"run_id": }' | load_json >/dev/null 2>"$tmp/bad.err"
check_eq "input that is no JSON: exit 1" "$?" 1
check_grep "named" "$tmp/bad.err" "standard input, after report 0: not JSON"
load_json </dev/null >"$tmp/empty.out" 2>"$tmp/empty.err"
check_eq "no input: nothing to do, exit 0" \
	"$?|$(cat "$tmp/empty.out")" "0|"

load_json "$bare" <"$tmp/one.json" >/dev/null 2>"$tmp/bare.err"
check_eq "a database that is not migrated: exit 1" "$?" 1
check_grep "named" "$tmp/bare.err" "not migrated"

finish
