# SPDX-License-Identifier: MIT
# The integration tests' shared harness: pass/fail counters and checks, a
# temporary directory and a throwaway PostgreSQL (tests/harness/pg), all
# removed at exit. Sourced by the test_*.sh scripts, never run alone.
#
# Environment: SOURCE_DIR (the source tree, default: this file's), PG_BINDIR
# (the PostgreSQL 15 server binaries).
# shellcheck shell=bash

SOURCE_DIR=${SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
PG_BINDIR=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
export PG_BINDIR PGTZ=UTC PGCLIENTENCODING=UTF8
harness=$SOURCE_DIR/tests/harness/pg

pass=0
fail=0

ok() {
	pass=$((pass + 1))
}

not_ok() {
	fail=$((fail + 1))
	echo "FAIL $*" >&2
}

# check_eq NAME ACTUAL EXPECTED
check_eq() {
	if [ "$2" = "$3" ]; then
		ok
	else
		not_ok "$1: got '$2', expected '$3'"
	fi
}

# check_match NAME ACTUAL GLOB
check_match() {
	# shellcheck disable=SC2053 # $3 is a pattern
	if [[ $2 == $3 ]]; then
		ok
	else
		not_ok "$1: got '$2', expected it to match '$3'"
	fi
}

# check_grep NAME FILE REGEX: the file has a line matching the regex
check_grep() {
	if grep -qE -- "$3" "$2"; then
		ok
	else
		not_ok "$1: no line matching '$3' in $2: $(tail -n 5 "$2")"
	fi
}

# check_has NAME FILE TEXT: the file holds the text, verbatim
check_has() {
	if grep -qF -- "$3" "$2"; then
		ok
	else
		not_ok "$1: no '$3' in $2: $(tail -n 5 "$2")"
	fi
}

# require_built BIN...: fails the test and finishes it unless every BIN is
# an executable
require_built() {
	local bin

	for bin in "$@"; do
		if [ ! -x "$bin" ]; then
			not_ok "'$bin' is not built"
			finish
		fi
	done
}

# wait_for SECONDS COMMAND...: runs the command every 0.1 s until it
# succeeds; returns 1 when SECONDS (times $slow, default 1) pass first
wait_for() {
	local tries=$(($1 * 10 * ${slow:-1}))

	shift
	while ! "$@" 2>/dev/null; do
		tries=$((tries - 1))
		[ "$tries" -gt 0 ] || return 1
		sleep 0.1
	done
}

# finish: prints the summary and exits, 0 when nothing failed
finish() {
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}

pg_dir=
# shellcheck disable=SC2317 # called by the trap
harness_cleanup() {
	# a test's own cleanup first: what it started may use the server
	if declare -F on_cleanup >/dev/null; then
		on_cleanup
	fi
	[ -n "$pg_dir" ] && "$harness" stop "$pg_dir" >/dev/null 2>&1
	rm -rf "$tmp"
}

# tmp_new NAME: sets tmp to a new directory /tmp/fleetbench-test-NAME-*,
# removed at exit after on_cleanup (when the test defines that function)
# has run and the server of pg_start has stopped
tmp_new() {
	tmp=$(mktemp -d "/tmp/fleetbench-test-$1-XXXXXX") || exit 1
	trap harness_cleanup EXIT
}

# pg_start DIR: starts PostgreSQL in DIR (under $tmp) and sets conninfo;
# a failure to start fails the test and finishes it
pg_start() {
	pg_dir=$1
	# shellcheck disable=SC2034 # the tests' connection string
	if ! conninfo=$("$harness" start "$pg_dir" 2>"$tmp/harness.log"); then
		not_ok "tests/harness/pg start: $(cat "$tmp/harness.log")"
		finish
	fi
}
