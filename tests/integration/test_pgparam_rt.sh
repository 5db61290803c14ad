#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The collector's binary parameters read back by a real PostgreSQL
# (tests/harness/pg): every type and array shape collector/pgparam writes,
# and every attribute of the fleetbench_report (fleetbench_ingest_run()'s
# one parameter) made of a full and of a bare report, compared through
# their text output in a migrated database (tests/integration/pgparam_rt.c).
#
# Environment: SOURCE_DIR, BUILD_DIR (default SOURCE_DIR/build), PGPARAM_RT
# (the client, default under BUILD_DIR), PG_BINDIR.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PGPARAM_RT=${PGPARAM_RT:-$BUILD_DIR/tests/integration/pgparam_rt}
require_built "$PGPARAM_RT"
require_built "$COLLECTOR"
db_new pgparam 029_ingest_contract

"$PGPARAM_RT" "$conninfo" >"$tmp/rt.out" 2>&1
status=$?
cat "$tmp/rt.out"
check_eq "pgparam_rt exits 0" "$status" 0
check_grep "pgparam_rt checked everything and nothing failed" "$tmp/rt.out" \
	'^[1-9][0-9]* passed, 0 failed$'
finish
