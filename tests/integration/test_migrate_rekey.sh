#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# schema/018_profile_revision.sql on a real PostgreSQL: runs stored with
# the profiles' earlier parameters, under the keys their agents gave, are
# keyed by those parameters after it ("standard" with 50 M loads becomes
# "standard+chase_accesses=50000000"), a run whose override is now the
# profile's own takes the profile's key, quick and parameterless methods
# keep theirs, and run_figures and the fleet queries follow (the groups of
# both keys are recomputed).
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_built "$COLLECTOR"
fixtures=$SOURCE_DIR/tests/fixtures/reports
tmp_new migrate-rekey
# the harness runs PostgreSQL as another user when we are root
chmod 0755 "$tmp"
pg_start "$tmp/pg"

"$COLLECTOR" migrate --schema-dir "$SOURCE_DIR/schema" --dsn "$conninfo" \
	>"$tmp/migrate1.out" 2>&1 || not_ok "migrate: $(cat "$tmp/migrate1.out")"
check_grep "migrate applies 018" "$tmp/migrate1.out" "applied 018_profile_revision"

# store RUN_ID METHOD_JSON: the fixture report as run RUN_ID with that
# method, its key as given (fleetbench_ingest() keeps it): as the
# collectors before 018 stored them
store() {
	"$PG_BINDIR/psql" "$conninfo" -X -q -A -t -v ON_ERROR_STOP=1 \
		-v r="$(cat "$fixtures/aws-m5.large-a.json")" -v id="\"$1\"" \
		-v m="$2" >/dev/null <<-'EOF'
		SELECT fleetbench_ingest(jsonb_set(:'r'::jsonb, '{run_id}', :'id'::jsonb)
					 || jsonb_build_object('method', :'m'::jsonb));
	EOF
}
std50=11111111-1111-4111-8111-111111111111
std20=22222222-2222-4222-8222-222222222222
full=33333333-3333-4333-8333-333333333333
fullonly=44444444-4444-4444-8444-444444444444
quick=55555555-5555-4555-8555-555555555555
store $std50 '{"key": "standard", "profile": "standard", "repeats": 5,
	"chase_accesses": 50000000, "io_ms": 1500}'
store $std20 '{"key": "standard+chase_accesses=20000000",
	"profile": "standard", "repeats": 5, "chase_accesses": 20000000,
	"io_ms": 1500}'
store $full '{"key": "full+repeats=3", "profile": "full", "repeats": 3,
	"chase_accesses": 100000000, "io_ms": 5000, "mmap_accesses": 10000000,
	"scaling_ms": 2000, "db_seconds": 8, "db_scale": 100}'
store $fullonly '{"key": "full+io_ms=2000+only=randread", "profile": "full",
	"repeats": 9, "chase_accesses": 100000000, "io_ms": 2000,
	"only": ["randread"]}'
store $quick '{"key": "quick+iodepth=4", "profile": "quick", "repeats": 3,
	"chase_accesses": 4000000, "iodepth": 4}'
# a compare before: the summary rows of the old keys exist
q <<<"SELECT count(*) FROM fleet_compare_by('{provider,instance_type,kernel}', NULL, NULL, '*')" >/dev/null

# 018 again, over them, as `migrate` runs a migration: one transaction
"$PG_BINDIR/psql" "$conninfo" -X -q -v ON_ERROR_STOP=1 --single-transaction \
	-f "$SOURCE_DIR/schema/018_profile_revision.sql" >"$tmp/018.out" 2>&1
check_eq "018 applies to a database with runs of every profile" "$?" 0

keys() {
	q <<<"SELECT string_agg(run_id || ' ' || method, ', ' ORDER BY run_id) FROM $1"
}
want="$std50 standard+chase_accesses=50000000, $std20 standard, $full full+repeats=3+chase_accesses=100000000+io_ms=5000+mmap_accesses=10000000+scaling_ms=2000+db_seconds=8, $fullonly full+chase_accesses=100000000+only=randread, $quick quick+iodepth=4"
check_eq "each run is keyed by the parameters it ran with" "$(keys runs)" "$want"
check_eq "and so is its run_figures row" "$(keys run_figures)" "$want"
check_eq "every method row has its new key, none is left behind" "$(q <<-'EOF'
	SELECT string_agg(key || ' ' || chase_accesses, ', ' ORDER BY key)
	FROM methods
EOF
)" "full+chase_accesses=100000000+only=randread 100000000, full+repeats=3+chase_accesses=100000000+io_ms=5000+mmap_accesses=10000000+scaling_ms=2000+db_seconds=8 100000000, quick+iodepth=4 4000000, standard 20000000, standard+chase_accesses=50000000 50000000"
check_eq "the fleet query groups by the new keys, a run in each" "$(q <<-'EOF'
	SELECT string_agg(method || ' ' || runs, ', ' ORDER BY method)
	FROM fleet_compare_by('{provider,instance_type,kernel}', NULL, NULL, '*')
EOF
)" "full+chase_accesses=100000000+only=randread 1, full+repeats=3+chase_accesses=100000000+io_ms=5000+mmap_accesses=10000000+scaling_ms=2000+db_seconds=8 1, quick+iodepth=4 1, standard 1, standard+chase_accesses=50000000 1"
check_eq "and the cached summary holds no old key" "$(q <<-'EOF'
	SELECT count(*) FROM fleet_summary
	WHERE method NOT IN (SELECT key FROM methods)
EOF
)" 0
check_eq "the default method is the profile's new standard" "$(q <<<"SELECT fleetbench_method_choice(NULL, NULL, NULL)")" standard
finish
