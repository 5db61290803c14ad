#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `fleetbench-collector migrate` and the function files on a real
# PostgreSQL (schema/README.md): the files of schema/functions are applied
# after the migrations, all in one transaction, when a migration ran or a
# file's SHA-256 differs from the one recorded in schema_functions; `serve`
# refuses a database whose recorded files differ from its own.
#
# Environment: SOURCE_DIR (the source tree, default: this file's),
# BUILD_DIR (default SOURCE_DIR/build), COLLECTOR (the binary, default
# under BUILD_DIR), PG_BINDIR (PostgreSQL 15 server binaries).
set -uo pipefail

# a server of its own (lib.sh): it makes the role fleetbench_reader before migration 022 does
# shellcheck disable=SC2034 # read by lib.sh
own_server=1

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_built "$COLLECTOR"
tmp_new migrate
# the harness runs PostgreSQL as another user when we are root
chmod 0755 "$tmp"
pg_start "$tmp/pg"

# migrate DIR [ARGS]: migrate with the schema in DIR
migrate() {
	local dir=$1

	shift
	"$COLLECTOR" migrate --schema-dir "$dir" --dsn "$conninfo" "$@"
}

# serve DIR: serve with the schema in DIR; exits at once when it refuses
serve() {
	timeout 10 "$COLLECTOR" serve --schema-dir "$1" --dsn "$conninfo" \
		--insecure --bind 'tcp://127.0.0.1:*'
}

# recorded: the function files and checksums schema_functions holds
recorded() {
	q <<<"SELECT string_agg(name || ' ' || sha256, ' ' ORDER BY name)
	      FROM schema_functions"
}

# files DIR: the same, from the files of DIR/functions, and the file the
# collector makes of the figures' declarations (proto/figures.def) as
# recorded
files() {
	local f out=()

	out+=("00_figures.sql $(q <<<"SELECT sha256 FROM schema_functions
				     WHERE name = '00_figures.sql'")")
	for f in "$1"/functions/[0-9][0-9]_*.sql; do
		out+=("${f##*/} $(sha256sum "$f" | cut -d' ' -f1)")
	done
	echo "${out[*]}"
}

# definitions: every function, view and trigger of the database with its
# definition, comment and grants
definitions() {
	q <<-'EOF'
	SELECT p.oid::regprocedure || pg_get_functiondef(p.oid)
	       || coalesce(obj_description(p.oid, 'pg_proc'), '')
	       || coalesce(p.proacl::text, '')
	FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace
	UNION ALL
	SELECT c.relname || pg_get_viewdef(c.oid)
	       || coalesce(obj_description(c.oid, 'pg_class'), '')
	       || coalesce(c.relacl::text, '')
	FROM pg_class c
	WHERE c.relkind = 'v' AND c.relnamespace = 'public'::regnamespace
	UNION ALL
	SELECT tgname || tgrelid::regclass || tgfoid::regprocedure
	FROM pg_trigger WHERE NOT tgisinternal
	ORDER BY 1
	EOF
}

schema=$SOURCE_DIR/schema
nmig=$(known_migrations "$schema")
# and 00_figures.sql, which the collector makes (proto/figures.def)
nfun=$(($(find "$schema/functions" -name '[0-9][0-9]_*.sql' | wc -l) + 1))
check_eq "there are function files" "$((nfun >= 6))" 1

# --- roles made by two migrations at once (issue 38) ----------------------
# Roles belong to the cluster, migrate's lock to one database: 022 must
# survive another database's migrate making a role at the same moment.
# (Waits and SQL: the plain build only, docs/testing.md.)
if ! asan_built "$COLLECTOR"; then
	# made deterministic: a session makes fleetbench_reader and commits
	# only once migrate waits for it (behind an advisory lock that
	# hold_advisory_lock's session holds until end_sleepers)
	q <<<"CREATE DATABASE race_a" >/dev/null
	hold_advisory_lock 38022
	"$PG_BINDIR/psql" "$conninfo" -X -q -v ON_ERROR_STOP=1 \
		>"$tmp/maker.out" 2>&1 <<-'EOF' &
		BEGIN;
		CREATE ROLE fleetbench_reader NOLOGIN;
		SELECT pg_advisory_xact_lock(38022);
		COMMIT;
	EOF
	maker=$!
	# waiting: its CREATE ROLE made, its commit behind the lock
	# shellcheck disable=SC2317 # called by wait_for
	waiting_for() {
		[ "$(q <<<"SELECT count(*) FROM pg_stat_activity
			   WHERE wait_event_type = 'Lock' AND wait_event = '$1'")" -ge 1 ]
	}
	wait_for 20 waiting_for advisory || not_ok "the role's maker never waited"
	"$COLLECTOR" migrate --schema-dir "$schema" \
		--dsn "$(db_sibling race_a)" >"$tmp/race_a.out" 2>&1 &
	mig=$!
	wait_for 60 waiting_for transactionid ||
		not_ok "migrate never waited for the role's maker"
	end_sleepers
	wait "$maker"
	check_eq "the other session made the role" "$?" 0
	if wait "$mig"; then
		ok
	else
		not_ok "migrate beside a session making its role: $(grep -v '^applied' "$tmp/race_a.out" | head -n 5)"
	fi
	check_grep "it is current" "$tmp/race_a.out" "^the database is current"
	# and as it happens: two migrations of two new databases at once, 3
	# times (the roles dropped each time)
	for i in 1 2 3; do
		q <<<"DROP DATABASE race_a; CREATE DATABASE race_a;
		      CREATE DATABASE race_b; DROP ROLE fleetbench_reader, fleetbench_writer" >/dev/null
		"$COLLECTOR" migrate --schema-dir "$schema" \
			--dsn "$(db_sibling race_a)" >"$tmp/two_a.out" 2>&1 &
		mig=$!
		"$COLLECTOR" migrate --schema-dir "$schema" \
			--dsn "$(db_sibling race_b)" >"$tmp/two_b.out" 2>&1
		b=$?
		wait "$mig"
		a=$?
		check_eq "two migrations at once ($i): both exit 0 ($(cat "$tmp/two_a.out" "$tmp/two_b.out" | grep -v '^applied\|^re-applied\|current' | head -n 3))" \
			"$a|$b" "0|0"
		q <<<"DROP DATABASE race_b" >/dev/null
	done
	q <<<"DROP DATABASE race_a" >/dev/null
fi

# --- a fresh database -----------------------------------------------------

migrate "$schema" >"$tmp/fresh.out" 2>&1
check_eq "migrate exits 0" "$?" 0
check_eq "every function file is re-applied, in name order" \
	"$(grep '^re-applied ' "$tmp/fresh.out" | tr '\n' ' ')" \
	"re-applied 00_figures.sql (made from proto/figures.def) $(cd "$schema" &&
		printf 're-applied %s ' functions/[0-9][0-9]_*.sql)"
check_grep "it says how many" "$tmp/fresh.out" \
	"current: $nmig migrations, $nmig applied now, $nfun function files, $nfun re-applied now"
check_grep "a new database takes the baseline, not the chain" "$tmp/fresh.out" \
	"^applied the baseline \(baseline.sql\), standing for $(sed -n 's/^-- covers: //p' "$schema/baseline.sql" | wc -w) migrations: 001_init to "
check_eq "and no migration file of the chain" \
	"$(grep -c '^applied [0-9]' "$tmp/fresh.out")" 0
check_eq "schema_functions records each file's SHA-256" "$(recorded)" \
	"$(files "$schema")"

# the figures' declarations, loaded into the table figures in their order
check_eq "the table figures holds proto/figures.def's figures, in order" \
	"$(q <<<"SELECT string_agg(name, ' ' ORDER BY position) FROM figures")" \
	"$(sed -n 's/^FIGURE([0-9]*, \([a-z0-9_]*\),.*/\1/p' "$SOURCE_DIR/proto/figures.def" |
		tr '\n' ' ' | sed 's/ $//')"
check_eq "each with its id" \
	"$(q <<<"SELECT string_agg(id::text, ' ' ORDER BY position) FROM figures")" \
	"$(sed -n 's/^FIGURE(\([0-9]*\), .*/\1/p' "$SOURCE_DIR/proto/figures.def" |
		tr '\n' ' ' | sed 's/ $//')"
check_eq "each with its family, kind, direction and alert" \
	"$(q <<<"SELECT concat_ws(' ', family, kind, higher_is_better, per_vcpu,
				 alert_min_change, variant, base)
		 FROM figures WHERE name = 'iouring_vs_pread'")" \
	"iouring ratio t f 0.2 io_uring pread"

# each function and view is defined in one place: one function file (a
# column-per-figure form by its fleetbench_make_wide() line)
q >"$tmp/objects" <<-'EOF'
	SELECT 'FUNCTION ' || proname FROM pg_proc
	WHERE pronamespace = 'public'::regnamespace
	UNION ALL
	SELECT 'VIEW ' || relname FROM pg_class
	WHERE relkind = 'v' AND relnamespace = 'public'::regnamespace
EOF
check_eq "the database has functions and views" \
	"$(($(wc -l <"$tmp/objects") > 40))" 1
while read -r kind name; do
	where=$(grep -lE "^(CREATE (OR REPLACE )?$kind $name[ (]|SELECT fleetbench_make_wide\(('[a-z_]+', )?'$name',)" \
		"$schema"/functions/*.sql | sed 's|.*/||' | tr '\n' ' ')
	check_match "$kind $name is created by exactly one function file" \
		"$where" "+([0-9])_+([a-z_]).sql "
done <"$tmp/objects"

# --- migrate again: nothing to do -----------------------------------------

applied_at=$(q <<<"SELECT string_agg(applied_at::text, ' ' ORDER BY name)
		   FROM schema_functions")
definitions >"$tmp/defs1"
migrate "$schema" >"$tmp/again.out" 2>&1
check_eq "migrate again exits 0" "$?" 0
check_grep "migrate again changes nothing" "$tmp/again.out" \
	"current: $nmig migrations, 0 applied now, $nfun function files, 0 re-applied now"
check_eq "and re-applies no file" "$(grep -c '^re-applied ' "$tmp/again.out")" 0
check_eq "schema_functions is as it was" \
	"$(q <<<"SELECT string_agg(applied_at::text, ' ' ORDER BY name)
		 FROM schema_functions")" "$applied_at"

# files applied again define the same objects; triggers keep their
# functions (a trigger function is replaced, never dropped)
q <<<"DELETE FROM schema_functions"
migrate "$schema" >"$tmp/unrecorded.out" 2>&1
check_eq "files not recorded are re-applied" \
	"$(grep -c '^re-applied ' "$tmp/unrecorded.out")" "$nfun"
definitions >"$tmp/defs2"
if cmp -s "$tmp/defs1" "$tmp/defs2"; then
	ok
else
	not_ok "applying the files again changed definitions: $(diff "$tmp/defs1" "$tmp/defs2" | head -20)"
fi
check_eq "the triggers of runs and run_figures are still there" \
	"$(q <<<"SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal
		 AND tgrelid IN ('runs'::regclass, 'run_figures'::regclass)")" 6

# --- declarations other than the collector's -----------------------------

# as a collector built from another proto/figures.def finds the database
q <<<"UPDATE schema_functions SET sha256 = 'other'
      WHERE name = '00_figures.sql';
      UPDATE figures SET label = 'other' WHERE name = 'thp_speedup'"
serve "$schema" >"$tmp/serve-figures.out" 2>&1
check_eq "serve refuses a database of other figures' declarations" "$?" 1
check_grep "it names the declarations and says to migrate" \
	"$tmp/serve-figures.out" \
	"function file 'proto/figures.def' differs from the one applied.*run 'fleetbench-collector migrate' first"
migrate "$schema" >"$tmp/figures.out" 2>&1
check_eq "migrate loads them again" \
	"$?|$(q <<<"SELECT label FROM figures WHERE name = 'thp_speedup'")" \
	"0|THP speedup"

# a figure stored with another id (a declaration that changed one)
q <<<"UPDATE figures SET id = 999 WHERE name = 'iouring_vs_libaio';
      DELETE FROM schema_functions WHERE name = '00_figures.sql'"
migrate "$schema" >"$tmp/figure-id.out" 2>&1
check_eq "migrate refuses to change a figure's id" "$?" 1
check_grep "it names the figure and both ids" "$tmp/figure-id.out" \
	"figure iouring_vs_libaio is stored with id 999, but proto/figures.def declares iouring_vs_libaio with id 7: a figure's name and id never change"
q <<<"UPDATE figures SET id = 7 WHERE name = 'iouring_vs_libaio'"
migrate "$schema" >/dev/null 2>&1
check_eq "and migrates once the ids agree" "$?" 0

# --- migrate's lock held by another session (issue 38) ---------------------
# any login may take it: migrate waits 10 s, then says who holds it
# (a wait and SQL, nothing the sanitizers look at: the plain build only,
# docs/testing.md)
if ! asan_built "$COLLECTOR"; then
	hold_advisory_lock 112723185853026
	start=$SECONDS
	migrate "$schema" >"$tmp/locked.out" 2>&1
	check_eq "migrate behind a session holding its lock: exit 1" "$?" 1
	check_eq "within its wait, not for as long as the session lasts" \
		"$((SECONDS - start < 30))" 1
	check_grep "it names the lock and the session" "$tmp/locked.out" \
		"migrate's lock \(advisory lock 112723185853026\) stayed taken for 10s by pid [0-9]+ \("
	end_sleepers
	migrate "$schema" >/dev/null 2>&1
	check_eq "once it ended, migrate runs" "$?" 0
fi

# --- one file edited ------------------------------------------------------

cp -r "$schema" "$tmp/edited"
q <<<"CREATE ROLE fleetbench_reader; GRANT SELECT ON fleet_compare TO fleetbench_reader" >/dev/null
printf "\nCOMMENT ON VIEW fleet_compare IS 'edited by test_migrate';\n" \
	>>"$tmp/edited/functions/40_queries.sql"
serve "$tmp/edited" >"$tmp/serve-edited.out" 2>&1
check_eq "serve refuses a database whose function files differ" "$?" 1
check_grep "and says which file and to run migrate" "$tmp/serve-edited.out" \
	"function file '$tmp/edited/functions/40_queries.sql' differs from the one applied.*run 'fleetbench-collector migrate' first"
migrate "$tmp/edited" >"$tmp/edited.out" 2>&1
check_eq "migrate with an edited file exits 0" "$?" 0
check_grep "it re-applies the function files" "$tmp/edited.out" \
	"current: $nmig migrations, 0 applied now, $nfun function files, $nfun re-applied now"
check_eq "the edit is in force" \
	"$(q <<<"SELECT obj_description('fleet_compare'::regclass, 'pg_class')")" \
	"edited by test_migrate"
check_eq "the new checksum is recorded" "$(recorded)" "$(files "$tmp/edited")"
check_eq "a grant on a view outlives its DROP VIEW and CREATE VIEW" \
	"$(q <<<"SELECT has_table_privilege('fleetbench_reader', 'fleet_compare', 'SELECT')")" t
serve "$schema" >"$tmp/serve-source.out" 2>&1
check_eq "serve with the unedited files refuses that database" "$?" 1
check_grep "it names the file" "$tmp/serve-source.out" \
	"function file '$schema/functions/40_queries.sql' differs from the one applied"
mv "$tmp/edited/functions/60_partitions.sql" "$tmp/60_partitions.sql"
serve "$tmp/edited" >"$tmp/serve-missing.out" 2>&1
check_eq "serve refuses a database with a file it does not have" "$?" 1
check_grep "it names the file" "$tmp/serve-missing.out" \
	"the database has function file '60_partitions.sql', which this collector does not have"
mv "$tmp/60_partitions.sql" "$tmp/edited/functions/"

# a migration that runs re-applies the files, changed or not
last=$(find "$schema" -maxdepth 1 -name '[0-9][0-9][0-9]_*.sql' -printf '%f\n' |
	sort | tail -1)
next=$(printf '%03d_test_noop.sql' $((10#${last%%_*} + 1)))
printf 'CREATE TABLE test_noop (a int);\n' >"$tmp/edited/$next"
migrate "$tmp/edited" >"$tmp/migration.out" 2>&1
check_eq "migrate with a new migration exits 0" "$?" 0
check_grep "a migration ran: the files are re-applied" "$tmp/migration.out" \
	"current: $((nmig + 1)) migrations, 1 applied now, $nfun function files, $nfun re-applied now"

# --- a broken function file -----------------------------------------------

cp -r "$tmp/edited" "$tmp/broken"
printf "\nCOMMENT ON FUNCTION fleetbench_round(double precision) IS 'half';\n" \
	>>"$tmp/broken/functions/10_util.sql"
bad=$tmp/broken/functions/30_figures.sql
line=$(($(wc -l <"$bad") + 1))
printf 'CREATE VIEW test_oops AS SELEC 1;\n' >>"$bad"
before=$(recorded)
migrate "$tmp/broken" >"$tmp/broken.out" 2>&1
check_eq "a broken function file fails migrate" "$?" 1
check_grep "the error names the file and line" "$tmp/broken.out" \
	"the function files failed, nothing of them applied: $bad:$line: syntax error"
check_eq "nothing is recorded" "$(recorded)" "$before"
check_eq "an earlier file's change is rolled back with it" \
	"$(q <<<"SELECT obj_description('fleetbench_round(double precision)'::regprocedure, 'pg_proc') IS NULL")" t
check_eq "the views are all still there" \
	"$(q <<<"SELECT to_regclass('fleet_compare') IS NOT NULL AND to_regclass('test_oops') IS NULL")" t

# --- a view of the database's users over one of the files' ----------------

q <<<"CREATE VIEW users_view AS SELECT provider FROM fleet_compare" >/dev/null
printf '\n-- edited again\n' >>"$tmp/edited/functions/40_queries.sql"
migrate "$tmp/edited" >"$tmp/users-view.out" 2>&1
check_eq "a view a CASCADE would drop fails migrate" "$?" 1
check_grep "the error names the view" "$tmp/users-view.out" \
	"after the function files: view users_view depends on a view of the function files"
check_eq "the view is still there" \
	"$(q <<<"SELECT to_regclass('users_view') IS NOT NULL")" t
q <<<"DROP VIEW users_view" >/dev/null
migrate "$tmp/edited" >/dev/null 2>&1
check_eq "without it, migrate exits 0" "$?" 0

# --- the baseline and the oldest database it upgrades ---------------------

# a database older than the chain's files (its last migration one the
# baseline stands for, before the oldest file's): refused, named, untouched
q <<<"CREATE DATABASE too_old" >/dev/null
old_dsn=$(db_sibling too_old)
first=$(find "$schema" -maxdepth 1 -name '[0-9][0-9][0-9]_*.sql' -printf '%f\n' |
	sort | head -1)
q "$old_dsn" <<-EOF
	CREATE TABLE schema_migrations (version integer PRIMARY KEY,
		name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
	INSERT INTO schema_migrations (version, name)
	SELECT split_part(m, '_', 1)::integer, m
	FROM unnest(string_to_array('$(sed -n 's/^-- covers: //p' "$schema/baseline.sql" | tr '\n' ' ')', ' ')) AS m
	WHERE m <> '' AND split_part(m, '_', 1)::integer < ${first%%_*} - 1;
EOF
missing=$(q "$old_dsn" <<<"SELECT max(version) + 1 FROM schema_migrations")
"$COLLECTOR" migrate --schema-dir "$schema" --dsn "$old_dsn" >"$tmp/old.out" 2>&1
check_eq "a database older than the oldest it upgrades: migrate exits 1" "$?" 1
check_grep "it names the migration it lacks and what to do" "$tmp/old.out" \
	"refusing to migrate: the database lacks migration '0*${missing}_[a-z_]+', whose file is gone \\(the baseline stands for it\\): it is older than the oldest database this collector upgrades; migrate it first with an earlier fleetbench-collector"
check_eq "and leaves it as it was" \
	"$(q "$old_dsn" <<<"SELECT count(*) FROM pg_class WHERE relname IN ('runs', 'fleet_summary')")" 0

# a baseline that names a migration unlike its file: refused at once
cp -r "$schema" "$tmp/badbase"
sed -i "/^-- covers: /s/ ${first%.sql}\b/ ${first%%_*}_other/" \
	"$tmp/badbase/baseline.sql"
"$COLLECTOR" migrate --schema-dir "$tmp/badbase" --dsn "$old_dsn" >"$tmp/badbase.out" 2>&1
check_eq "a baseline unlike the files: migrate exits 1" "$?" 1
check_grep "it names both" "$tmp/badbase.out" \
	"baseline.sql covers '${first%%_*}_other', but its file is '.*/${first}'"

finish
