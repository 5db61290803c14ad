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
# processes the harness started (fleet_load's collector), killed at exit
harness_pids=()
# shellcheck disable=SC2317 # called by the trap
harness_cleanup() {
	# a test's own cleanup first: what it started may use the server
	if declare -F on_cleanup >/dev/null; then
		on_cleanup
	fi
	local p
	for p in "${harness_pids[@]}"; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
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

# fleet_load: the fleet fixture (tests/fixtures/README.md) in a new
# PostgreSQL, through the real programs: pg_start "$tmp/pg", migrate, the
# collector serving CURVE with an allowlist of one agent key, fleetgen
# spooling the fleet's reports, and `fleetbench-agent send` delivering
# them. Sets conninfo, fleet_endpoint, fleet_keys (collector.pub,
# agent.key), fleet_log (the collector's standard error) and
# fleet_manifest (fleetgen's lines: run_id, provider, instance type, host,
# kernel, started). The collector is stopped at exit. Any failure fails
# the test and finishes it. Binaries: COLLECTOR, AGENT, FLEETGEN (default
# under BUILD_DIR). The collector also gets the flags in the array
# fleet_serve_args (if set), and a function fleet_before_send (if the test
# defines one) runs once the collector listens, before the fleet is sent.
fleet_load() {
	local bin tries=100

	BUILD_DIR=${BUILD_DIR:-$SOURCE_DIR/build}
	COLLECTOR=${COLLECTOR:-$BUILD_DIR/collector/fleetbench-collector}
	AGENT=${AGENT:-$BUILD_DIR/agent/fleetbench-agent}
	FLEETGEN=${FLEETGEN:-$BUILD_DIR/tests/fleetgen}
	for bin in "$COLLECTOR" "$AGENT" "$FLEETGEN"; do
		if [ ! -x "$bin" ]; then
			not_ok "fleet_load: '$bin' is not built"
			finish
		fi
	done
	# the harness runs PostgreSQL as another user when we are root
	chmod 0755 "$tmp"
	pg_start "$tmp/pg"
	if ! "$COLLECTOR" migrate --schema-dir "$SOURCE_DIR/schema" \
		--dsn "$conninfo" >"$tmp/migrate.log" 2>&1; then
		not_ok "fleet_load: migrate: $(cat "$tmp/migrate.log")"
		finish
	fi
	fleet_keys=$tmp/keys
	mkdir -p "$fleet_keys/allow"
	if ! "$COLLECTOR" keygen --dir "$fleet_keys" >/dev/null ||
		! "$COLLECTOR" keygen --dir "$fleet_keys" --name agent >/dev/null; then
		not_ok "fleet_load: keygen failed"
		finish
	fi
	cp "$fleet_keys/agent.pub" "$fleet_keys/allow/"
	fleet_log=$tmp/collector.log
	"$COLLECTOR" serve --schema-dir "$SOURCE_DIR/schema" --dsn "$conninfo" \
		--bind 'tcp://127.0.0.1:*' \
		--server-key "$fleet_keys/collector.key" \
		--allowlist "$fleet_keys/allow" \
		${fleet_serve_args[@]+"${fleet_serve_args[@]}"} 2>"$fleet_log" &
	harness_pids+=($!)
	while ! grep -q 'listening on' "$fleet_log"; do
		tries=$((tries - 1))
		if [ "$tries" -le 0 ] || ! kill -0 "$!" 2>/dev/null; then
			not_ok "fleet_load: the collector did not start: $(cat "$fleet_log")"
			finish
		fi
		sleep 0.1
	done
	fleet_endpoint=$(sed -n 's/.*listening on \(tcp:[^ ]*\) .*/\1/p' "$fleet_log")
	if declare -F fleet_before_send >/dev/null; then
		fleet_before_send
	fi
	fleet_manifest=$tmp/fleet.tsv
	if ! "$FLEETGEN" --spool "$tmp/fleet-spool" >"$fleet_manifest" \
		2>"$tmp/fleetgen.log"; then
		not_ok "fleet_load: fleetgen: $(cat "$tmp/fleetgen.log")"
		finish
	fi
	if ! fleet_send "$tmp/fleet-spool"; then
		not_ok "fleet_load: send: $(tail -n 5 "$tmp/send.log")"
		finish
	fi
}

# fleet_send SPOOL: delivers the reports spooled in SPOOL (by fleetgen) to
# fleet_load's collector with `fleetbench-agent send`; its output goes to
# $tmp/send.log. Returns send's exit status (0: all delivered).
fleet_send() {
	"$AGENT" send --spool-dir "$1" --endpoint "$fleet_endpoint" \
		--server-key "$fleet_keys/collector.pub" \
		--agent-key "$fleet_keys/agent.key" --send-timeout 10000 \
		>"$tmp/send.log" 2>&1
}
