#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The access roles of migration 022, schema/baseline.sql and functions/90_grants.sql
# (docs/operations.md, "Access roles"), on the fleet fixture loaded
# through the real collector and agent: the collector serves as a login
# that is only a member of fleetbench_writer (COLLECTOR_AS_WRITER, lib.sh)
# and stores every report, with its figures and alerts, and delivers the
# alerts to its hook; that login cannot drop, truncate, alter or write a
# table itself. A login in fleetbench_reader reads the tables and views
# and runs `fleetbench compare` and `alerts` (which bring fleet_summary up
# to date through the SECURITY DEFINER fleetbench_refresh()), and every
# write it tries is refused. A migrating role without CREATEROLE gets a
# clear error when the roles are missing, and none when they exist.
#
# Environment: SOURCE_DIR, BUILD_DIR, COLLECTOR, AGENT, FLEETGEN and
# FLEETBENCH (the binaries, default under BUILD_DIR), PG_BINDIR.
set -uo pipefail
shopt -s extglob

# a server of its own (lib.sh): it makes login roles, which belong to the whole cluster
# shellcheck disable=SC2034 # read by lib.sh
own_server=1

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD_DIR=${BUILD_DIR:-$SOURCE_DIR/build}
FLEETBENCH=${FLEETBENCH:-$BUILD_DIR/cli/fleetbench}
require_built "$FLEETBENCH"

tmp_new roles

# The hook saves each fleet alert it is handed
cat >"$tmp/hook" <<EOF
#!/bin/sh
cat >>$tmp/hook.out
echo >>$tmp/hook.out
EOF
chmod 0755 "$tmp/hook"
fleet_serve_args=(--alert-hook "$tmp/hook")

export COLLECTOR_AS_WRITER=1
fleet_load
writer=$fleet_dsn

# as LOGIN: runs SQL from stdin as that login, prints rows or the error
as() {
	"$PG_BINDIR/psql" "$1" -X -q -A -t -v ON_ERROR_STOP=1 2>&1
}

check_eq "the roles exist, neither can log in" "$(q <<-'EOF'
	SELECT string_agg(rolname || ':' || rolcanlogin, ' ' ORDER BY rolname)
	FROM pg_roles WHERE rolname IN ('fleetbench_reader', 'fleetbench_writer')
EOF
)" "fleetbench_reader:false fleetbench_writer:false"
check_match "serve connected as the writer login" "$writer" \
	"*user=fleetbench_test_writer*"
check_eq "the writer login is only a member of fleetbench_writer, owns nothing" \
	"$(q <<-'EOF'
	SELECT r.rolsuper, r.rolcreaterole,
	       (SELECT string_agg(g.rolname, ' ') FROM pg_auth_members m
		JOIN pg_roles g ON g.oid = m.roleid WHERE m.member = r.oid),
	       (SELECT count(*) FROM pg_class WHERE relowner = r.oid)
	FROM pg_roles r WHERE r.rolname = 'fleetbench_test_writer'
EOF
)" "f|f|fleetbench_writer|0"

# --- the writer: the whole ingest, nothing more ----------------------------

check_eq "every report the agent sent is stored" \
	"$(q <<<"SELECT count(*) FROM runs")" "$(wc -l <"$fleet_manifest")"
check_grep "and acknowledged" "$tmp/send.log" "committed [1-9][0-9]*, duplicate 0, rejected 0"
check_eq "each run has its figures (fleetbench_ingest_end ran)" \
	"$(q <<<"SELECT count(*) FROM runs r WHERE NOT EXISTS (SELECT 1 FROM run_figures f WHERE f.run_id = r.run_id)")" 0
check_eq "the alerts are raised (the four real changes)" \
	"$(q <<<"SELECT count(*) FROM fleet_alerts")" 4
check_eq "no alert check failed" "$(q <<<"SELECT count(*) FROM alert_errors")" 0
delivered() {
	[ "$(q <<<"SELECT count(*) FROM fleet_alerts WHERE delivered_at IS NOT NULL")" = 4 ]
}
wait_for 20 delivered
check_eq "the hook got the alerts" "$(grep -c '"new_kernel"' "$tmp/hook.out")" 4
check_eq "the hook got each alert, and serve recorded the deliveries" \
	"$(q <<<"SELECT count(*) FROM fleet_alerts WHERE delivered_at IS NOT NULL")" 4
check_eq "fleet_dirty noted the new groups for fleet_compare (level 3)" \
	"$(($(q <<<"SELECT count(*) FROM fleet_dirty WHERE level = 3") > 0))" 1
if grep -qi 'permission denied' "$fleet_log"; then
	not_ok "the collector met a permission error: $(grep -i 'permission denied' "$fleet_log" | head -n 3)"
else
	ok
fi

for sql in "DROP TABLE alert_errors" "DROP TABLE run_results_default" \
	"TRUNCATE runs" "TRUNCATE fleet_summary" \
	"ALTER TABLE runs ADD COLUMN x integer" "DROP VIEW fleet_compare" \
	"DELETE FROM runs" "INSERT INTO fleet_dirty SELECT * FROM fleet_dirty" \
	"UPDATE fleet_alerts SET acknowledged_at = now()" \
	"SELECT fleetbench_results_partition('2020-01-01')"; do
	out=$(as "$writer" <<<"$sql")
	check_match "the writer cannot: $sql" "$out" \
		"*ERROR:*@(permission denied|must be owner)*"
done
check_eq "and nothing changed" "$(q <<-'EOF'
	SELECT (SELECT count(*) FROM runs) || ' ' ||
	       (SELECT count(*) FROM fleet_alerts WHERE acknowledged_at IS NULL) || ' ' ||
	       (to_regclass('alert_errors') IS NOT NULL)
EOF
)" "$(wc -l <"$fleet_manifest") 4 true"

# --- the reader --------------------------------------------------------------

q <<<"CREATE ROLE alice LOGIN; GRANT fleetbench_reader TO alice"
reader=$(sed -E 's/(^| )user=[^ ]*/\1user=alice/' <<<"$conninfo")
check_eq "the reader reads runs, run_figures, run_results, the views" \
	"$(as "$reader" <<-'EOF'
	SELECT (SELECT count(*) FROM runs) = (SELECT count(*) FROM run_figures),
	       (SELECT count(*) FROM bench_results) > 0,
	       (SELECT count(*) FROM bench_metrics) > 0,
	       (SELECT count(*) FROM comparisons) > 0,
	       (SELECT count(*) FROM alert_summary),
	       (SELECT count(*) FROM fleet_compare) > 0,
	       (SELECT count(*) FROM fleet_kernels) > 0,
	       (SELECT count(*) FROM run_results_default) >= 0
EOF
)" "t|t|t|t|4|t|t|t"
check_eq "its fleet_compare brought fleet_summary's level 3 up to date" \
	"$(q <<<"SELECT count(*) FROM fleet_dirty WHERE level = 3")" 0
"$FLEETBENCH" --dsn "$reader" --format csv compare >"$tmp/compare.csv" \
	2>"$tmp/compare.err"
check_eq "fleetbench compare runs with the reader's dsn" "$?" 0
check_grep "and shows the fleet" "$tmp/compare.csv" ",aws,c6i.xlarge,"
"$FLEETBENCH" --dsn "$reader" alerts >"$tmp/alerts.out" 2>&1
check_eq "fleetbench alerts runs with the reader's dsn" "$?" 0
check_grep "and lists the alerts" "$tmp/alerts.out" "c6i.xlarge"
"$FLEETBENCH" --dsn "$reader" alerts ack 1 >"$tmp/ack.out" 2>&1
check_eq "fleetbench alerts ack is refused to the reader" "$(($? != 0))" 1
check_grep "with permission denied" "$tmp/ack.out" "permission denied"

for sql in "INSERT INTO alert_settings DEFAULT VALUES" \
	"UPDATE runs SET hostname = 'x'" "DELETE FROM run_figures" \
	"DELETE FROM fleet_dirty" "TRUNCATE runs" "TRUNCATE run_results" \
	"DROP TABLE alert_errors" \
	"SELECT fleetbench_ingest_run(NULL)" "SELECT fleetbench_ingest_end()" \
	"SELECT fleetbench_alert_ack(1)" \
	"SELECT * FROM fleetbench_prune_month('2020-01-01', '1 month')"; do
	out=$(as "$reader" <<<"$sql")
	check_match "the reader cannot: $sql" "$out" \
		"*ERROR:*@(permission denied|must be owner)*"
done
check_eq "and nothing changed" "$(q <<-'EOF'
	SELECT (SELECT count(*) FROM runs) || ' ' ||
	       (SELECT count(*) FROM fleet_alerts WHERE acknowledged_at IS NULL) || ' ' ||
	       (SELECT count(*) FROM alert_settings)
EOF
)" "$(wc -l <"$fleet_manifest") 4 1"

# --- a table of a later migration gets the grants ----------------------------

mkdir "$tmp/later"
cp -r "$SOURCE_DIR"/schema/* "$tmp/later/"
printf 'CREATE TABLE later_table (x integer);\n' >"$tmp/later/999_later.sql"
"$COLLECTOR" migrate --schema-dir "$tmp/later" --dsn "$conninfo" \
	>"$tmp/later.out" 2>&1 || not_ok "migrate with 999: $(cat "$tmp/later.out")"
check_eq "the reader reads a table a later migration made" \
	"$(as "$reader" <<<"SELECT count(*) FROM later_table")" 0
check_match "and cannot write it" \
	"$(as "$reader" <<<"INSERT INTO later_table VALUES (1)")" \
	"*permission denied*"

# --- migrating without CREATEROLE --------------------------------------------

q <<-'EOF'
	CREATE DATABASE plain;
	CREATE ROLE migrator LOGIN;
	ALTER DATABASE plain OWNER TO migrator;
EOF
plain=$(sed -E 's/(^| )user=[^ ]*/\1user=migrator/; s/(^| )dbname=[^ ]*/\1dbname=plain/' <<<"$conninfo")
q <<<"ALTER ROLE fleetbench_reader RENAME TO fleetbench_reader_kept"
"$COLLECTOR" migrate --schema-dir "$SOURCE_DIR/schema" --dsn "$plain" \
	>"$tmp/plain1.out" 2>&1
check_eq "without CREATEROLE and the roles, migrate fails" "$?" 1
check_grep "naming the role and the privilege" "$tmp/plain1.out" \
	"the baseline failed, nothing of it applied: .*baseline.sql: migration 022 must create role fleetbench_reader but role migrator lacks the CREATEROLE privilege"
q <<<"ALTER ROLE fleetbench_reader_kept RENAME TO fleetbench_reader"
"$COLLECTOR" migrate --schema-dir "$SOURCE_DIR/schema" --dsn "$plain" \
	>"$tmp/plain2.out" 2>&1
check_eq "with the roles made beforehand, it migrates" "$?" 0
check_grep "all of it" "$tmp/plain2.out" "the database is current"

# --- a schema others may create in (PostgreSQL 14's default for public) ----
# a login with no fleetbench grant could plant public.cardinality(float8[])
# and have it run as the owner by calling fleetbench_refresh() (issue 38):
# migrate refuses such a schema, naming the grant
q <<<"GRANT CREATE ON SCHEMA public TO PUBLIC"
"$COLLECTOR" migrate --schema-dir "$tmp/later" --dsn "$conninfo" \
	>"$tmp/public.out" 2>&1
check_eq "migrate refuses a schema PUBLIC may create in" "$?" 1
check_grep "naming the grant and the way out" "$tmp/public.out" \
	"refusing to migrate: PUBLIC may create objects in schema public.*REVOKE CREATE ON SCHEMA public FROM PUBLIC"
q <<<"REVOKE CREATE ON SCHEMA public FROM PUBLIC; CREATE ROLE planter LOGIN; GRANT CREATE ON SCHEMA public TO planter"
"$COLLECTOR" migrate --schema-dir "$tmp/later" --dsn "$conninfo" \
	>"$tmp/planter.out" 2>&1
check_eq "and one a role other than the owner may create in" "$?" 1
check_grep "naming the role" "$tmp/planter.out" \
	"refusing to migrate: planter may create objects in schema public"
q <<<"REVOKE CREATE ON SCHEMA public FROM planter"
"$COLLECTOR" migrate --schema-dir "$tmp/later" --dsn "$conninfo" \
	>"$tmp/revoked.out" 2>&1
check_eq "once revoked, it migrates" "$?" 0

# the same grant made after migrate (a careless operator): a login with no
# fleetbench grant plants public.cardinality(float8[]), which
# fleetbench_refresh's medians would call as the owner, and calls it
q <<-'EOF' >/dev/null
	GRANT CREATE ON SCHEMA public TO PUBLIC;
	CREATE ROLE mallory LOGIN;
	INSERT INTO instance_prices (provider, instance_type, region, currency,
				     price_per_hour, valid_from)
	VALUES ('test', 'planted.large', 'here', 'USD', 0.5, '2026-01-01');
	INSERT INTO fleet_dirty (provider, instance_type, kernel_release, method, level)
	SELECT DISTINCT provider, instance_type, kernel_release, method, 3 FROM runs;
EOF
mallory=$(sed -E 's/(^| )user=[^ ]*/\1user=mallory/' <<<"$conninfo")
prices=$(q <<<"SELECT count(*) FROM instance_prices")
as "$mallory" >"$tmp/plant.out" <<-'EOF'
	CREATE FUNCTION public.cardinality(double precision[]) RETURNS integer
	LANGUAGE sql AS 'DELETE FROM instance_prices; SELECT 0';
EOF
check_eq "a login plants a function in public" \
	"$(q <<<"SELECT count(*) FROM pg_proc WHERE proname = 'cardinality' AND pronamespace = 'public'::regnamespace")" 1
as "$mallory" >"$tmp/refresh.out" <<<"SELECT fleetbench_refresh()"
check_grep "fleetbench_refresh() refuses to run as the owner, naming the grant" \
	"$tmp/refresh.out" \
	"refusing to run as the owner of schema public: PUBLIC may create objects in it"
check_eq "and the planted function did not run as the owner" \
	"$(q <<<"SELECT count(*) FROM instance_prices")" "$prices"
as "$writer" >"$tmp/ingest_end.out" <<<"SELECT fleetbench_ingest_end()"
check_grep "the ingest refuses too" "$tmp/ingest_end.out" \
	"refusing to run as the owner of schema public: PUBLIC may create"
timeout 10 "$COLLECTOR" serve --schema-dir "$tmp/later" \
	--dsn "$conninfo" --insecure --bind 'tcp://127.0.0.1:*' \
	>"$tmp/serve-public.out" 2>&1
check_eq "serve refuses to start" "$?" 1
check_grep "naming the grant" "$tmp/serve-public.out" \
	"refusing to serve: PUBLIC may create objects in schema public"
q <<<"DROP FUNCTION public.cardinality(double precision[]);
      REVOKE CREATE ON SCHEMA public FROM PUBLIC" >/dev/null
as "$mallory" >"$tmp/refresh2.out" <<<"SELECT fleetbench_refresh()"
check_eq "once revoked, the refresh runs" "$(cat "$tmp/refresh2.out")" t
check_eq "and the prices are all there" \
	"$(q <<<"SELECT count(*) FROM instance_prices")" "$prices"

finish
