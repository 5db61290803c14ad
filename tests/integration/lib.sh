# SPDX-License-Identifier: MIT
# The integration tests' shared harness: pass/fail counters and checks, a
# temporary directory and a throwaway PostgreSQL (tests/harness/pg), all
# removed at exit. Sourced by the test_*.sh scripts, never run alone.
#
# The collector and agent helpers below serve the tests that run them
# (tests/integration/test_collector.sh, tests/reliability/): the keys, one
# collector in the background (killed at exit), agents with their own key
# and spool, zsend, psql.
#
# Environment: SOURCE_DIR (the source tree, default: this file's), PG_BINDIR
# (the PostgreSQL 15 server binaries), BUILD_DIR (default SOURCE_DIR/build),
# COLLECTOR, AGENT and ZSEND (the binaries, default under BUILD_DIR),
# COLLECTOR_WRAPPER (a command to run serve and load under, such as "valgrind
# --leak-check=full --error-exitcode=1"), COLLECTOR_AS_WRITER=1 (serve
# connects as a login that is only a member of fleetbench_writer, not the
# schema's owner: writer_dsn below).
# shellcheck shell=bash

SOURCE_DIR=${SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
PG_BINDIR=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
export PG_BINDIR PGTZ=UTC PGCLIENTENCODING=UTF8
harness=$SOURCE_DIR/tests/harness/pg
BUILD_DIR=${BUILD_DIR:-$SOURCE_DIR/build}
COLLECTOR=${COLLECTOR:-$BUILD_DIR/collector/fleetbench-collector}
AGENT=${AGENT:-$BUILD_DIR/agent/fleetbench-agent}
ZSEND=${ZSEND:-$BUILD_DIR/tests/integration/zsend}
read -r -a wrapper <<<"${COLLECTOR_WRAPPER:-}"
# timeouts are multiplied by this: slower under a wrapper such as valgrind
slow=1
[ ${#wrapper[@]} -gt 0 ] && slow=10

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

# asan_built BIN: BIN links AddressSanitizer. Not `ldd | grep -q`: with
# pipefail, grep leaving at its first match can kill ldd with SIGPIPE and
# turn a match into a failure (CI once checked an ASan collector's RSS so)
asan_built() {
	case $(ldd "$1" 2>/dev/null) in
	*libasan*) return 0 ;;
	esac
	return 1
}

# as_user USER PROGRAM [ARGS...]: runs a copy of PROGRAM as USER; the copy
# is made in a new directory under /tmp that every user may search and is
# removed after: the build tree may sit under a directory USER cannot
# enter (a clone in /root, mode 0700). Returns the program's exit status.
as_user() {
	local user=$1 prog=$2 dir status
	shift 2
	dir=$(mktemp -d /tmp/fleetbench-as-user-XXXXXX) || return 126
	chmod 0755 "$dir"
	cp -- "$prog" "$dir/" && chmod 0755 "$dir/${prog##*/}" || {
		rm -rf -- "$dir"
		return 126
	}
	runuser -u "$user" -- "$dir/${prog##*/}" "$@"
	status=$?
	rm -rf -- "$dir"
	return "$status"
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
pid= # the collector of start_collector
# processes the harness started (fleet_load's collector), killed at exit
harness_pids=()
# shellcheck disable=SC2317 # called by the trap
harness_cleanup() {
	# a test's own cleanup first: what it started may use the server
	if declare -F on_cleanup >/dev/null; then
		on_cleanup
	fi
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	local p
	for p in "${harness_pids[@]}"; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	[ -n "$pg_dir" ] && "$harness" stop "$pg_dir" >/dev/null 2>&1
	[ -n "$shared_db" ] && db_drop_shared
	rm -rf "$tmp"
}

# tmp_new NAME: sets tmp to a new directory /tmp/fleetbench-test-NAME-*,
# removed at exit after on_cleanup (when the test defines that function)
# has run and the server of pg_start has stopped
tmp_new() {
	tmp=$(mktemp -d "/tmp/fleetbench-test-$1-XXXXXX") || exit 1
	trap harness_cleanup EXIT
}

# own_server=1, set by a test before pg_start (or db_new, fleet_load,
# rel_setup): a PostgreSQL server of the test's own, for a test that stops,
# restarts or reconfigures it, or makes roles (which belong to the whole
# cluster). Else the test's database is made in the build's shared server
# when ctest started one (FLEETBENCH_PG_SHARED_FILE, tests/harness/pg-shared).
own_server=${own_server:-0}
shared_db= # the database pg_start made in the shared server

# shared_host: the socket directory of the build's shared server, when one
# runs and the test may use it; else fails
shared_host() {
	local dir
	[ "$own_server" != 1 ] && [ -n "${FLEETBENCH_PG_SHARED_FILE:-}" ] &&
		[ -f "$FLEETBENCH_PG_SHARED_FILE" ] || return 1
	dir=$(cat "$FLEETBENCH_PG_SHARED_FILE") && [ -S "$dir/.s.PGSQL.5432" ] &&
		echo "$dir"
}

# pg_start DIR [TEMPLATE]: a database for the test, and conninfo to it: in
# the shared server a new database made from TEMPLATE (template0, empty,
# by default; fleetbench_template is migrated), dropped at exit; else a
# server of its own started in DIR (under $tmp). A failure fails the test
# and finishes it.
pg_start() {
	local host owner
	if host=$(shared_host); then
		owner=$(stat -c %U "$host")
		shared_db=t_$(basename "$tmp" | tr -c 'a-zA-Z0-9\n' _ |
			tr 'A-Z' 'a-z')
		# shellcheck disable=SC2034 # the tests' connection string
		conninfo="host=$host dbname=$shared_db user=$owner"
		if ! "$PG_BINDIR/psql" "${conninfo/dbname=$shared_db/dbname=postgres}" \
			-X -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE $shared_db TEMPLATE ${2:-template0}" \
			>"$tmp/harness.log" 2>&1; then
			not_ok "CREATE DATABASE in the shared server: $(cat "$tmp/harness.log")"
			shared_db=
			finish
		fi
		return 0
	fi
	pg_dir=$1
	# shellcheck disable=SC2034 # the tests' connection string
	if ! conninfo=$("$harness" start "$pg_dir" 2>"$tmp/harness.log"); then
		not_ok "tests/harness/pg start: $(cat "$tmp/harness.log")"
		finish
	fi
}

# db_sibling NAME: prints the conninfo of a database NAME beside the
# test's (in the shared server its name is prefixed with the test's, and
# it is dropped at exit too); CREATE DATABASE is the caller's
db_sibling() {
	if [ -n "$shared_db" ]; then
		echo "${conninfo/dbname=$shared_db/dbname=${shared_db}_$1}"
	else
		echo "${conninfo/dbname=fleetbench/dbname=$1}"
	fi
}

# db_sibling_name NAME: the name of that database
db_sibling_name() {
	echo "${shared_db:+${shared_db}_}$1"
}

# db_drop_shared: drops the test's databases in the shared server, however
# many sessions still hold them
db_drop_shared() {
	"$PG_BINDIR/psql" "${conninfo/dbname=$shared_db/dbname=postgres}" -X -q \
		-A -t -v ON_ERROR_STOP=1 -v db="$shared_db" >/dev/null 2>&1 <<-'EOF'
		SELECT format('DROP DATABASE %I WITH (FORCE)', datname)
		FROM pg_database WHERE datname = :'db' OR datname LIKE :'db' || '\_%'
		\gexec
	EOF
}

# db_new NAME MIGRATION: tmp_new NAME, a PostgreSQL in it, migrated with
# $COLLECTOR; checks that migrate applied MIGRATION (e.g. 024_targets)
db_new() {
	tmp_new "$1"
	# the harness runs PostgreSQL as another user when we are root
	chmod 0755 "$tmp"
	pg_start "$tmp/pg" fleetbench_template
	"$COLLECTOR" migrate --schema-dir "$SOURCE_DIR/schema" \
		--dsn "$conninfo" >"$tmp/migrate.out" 2>&1
	check_grep "migrate leaves the database current" "$tmp/migrate.out" \
		"^the database is current"
	check_eq "migration $2 is applied" \
		"$(qn <<<"SELECT name FROM schema_migrations WHERE name = '$2'")" "$2"
}

# known_migrations DIR: how many migrations the collector knows from the
# schema directory DIR: its NNN_*.sql files and those its baseline.sql
# stands for (its "-- covers:" lines)
known_migrations() {
	{
		find "$1" -maxdepth 1 -name '[0-9][0-9][0-9]_*.sql' -printf '%f\n' |
			sed 's/\.sql$//'
		[ ! -f "$1/baseline.sql" ] ||
			sed -n 's/^-- covers: //p' "$1/baseline.sql" | tr ' ' '\n'
	} | sort -u | grep -c .
}

# qn [ARGS]: psql on $conninfo, SQL from stdin (or ARGS), unaligned rows,
# NULL printed as NULL
qn() {
	"$PG_BINDIR/psql" "$conninfo" -X -q -A -t -P null=NULL \
		-v ON_ERROR_STOP=1 "$@"
}

# fb ARGS: the fleetbench CLI ($FLEETBENCH) on $conninfo
fb() {
	"$FLEETBENCH" --dsn "$conninfo" "$@"
}

# q [CONNINFO]: runs SQL from stdin, prints unaligned rows
q() {
	"$PG_BINDIR/psql" "${1:-$conninfo}" -X -q -A -t -v ON_ERROR_STOP=1
}

# hold_advisory_lock KEY: a session of the database holding the advisory
# lock KEY (a bigint), in the background until end_sleepers (its psql in
# sleepers); returns once it holds it
sleepers=()
hold_advisory_lock() {
	"$PG_BINDIR/psql" "$conninfo" -X -q -c "SELECT pg_advisory_lock($1)" \
		-c "SELECT pg_sleep(120)" >/dev/null 2>&1 &
	sleepers+=($!)
	for _ in $(seq 100); do
		[ "$(q <<<"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = ($1 & 4294967295)::oid AND granted")" = 1 ] &&
			return 0
		sleep 0.1
	done
	not_ok "no session took advisory lock $1"
}

# end_sleepers: ends the background sessions that sleep in the database
# (hold_advisory_lock's and the like, their psql in sleepers: a killed
# psql would leave its backend sleeping, holding its locks) and waits for
# their psql
end_sleepers() {
	q <<<"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(120)'" >/dev/null
	[ ${#sleepers[@]} -gt 0 ] && wait "${sleepers[@]}" 2>/dev/null
	sleepers=()
}

uuid() {
	cat /proc/sys/kernel/random/uuid
}

# hex STRING: its bytes in lowercase hex
hex() {
	printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n'
}

# keys_new NAME...: the collector's keypair and one per agent NAME in
# $keys (NAME.key, NAME.pub), and an empty allowlist directory $allow
keys_new() {
	local name

	keys=$tmp/keys
	allow=$tmp/allow
	mkdir -p "$keys" "$allow"
	"$COLLECTOR" keygen --dir "$keys" >/dev/null ||
		not_ok "keygen of the collector"
	for name in "$@"; do
		"$COLLECTOR" keygen --dir "$keys" --name "$name" >/dev/null ||
			not_ok "keygen $name"
	done
}

# allow_keys NAME...: puts these agents' public keys in the allowlist
allow_keys() {
	local name

	for name in "$@"; do
		cp "$keys/$name.pub" "$allow/"
	done
}

# writer_dsn [LOGIN]: prints $conninfo for LOGIN (default
# fleetbench_test_writer), a login role made (when missing) a member of
# fleetbench_writer only (migration 022, schema/baseline.sql): what serve needs, without
# owning anything. The database must be migrated.
writer_dsn() {
	local login=${1:-fleetbench_test_writer}

	"$PG_BINDIR/psql" "$conninfo" -X -q -A -t -v ON_ERROR_STOP=1 \
		-v login="$login" >/dev/null <<-'EOF' || return 1
		SELECT format('CREATE ROLE %I LOGIN', :'login')
		WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'login')
		\gexec
		SELECT format('GRANT fleetbench_writer TO %I', :'login') \gexec
	EOF
	sed -E "s/(^| )user=[^ ]*/\1user=$login/" <<<"$conninfo"
}

# serve_dsn: the conninfo serve is started with: $collector_dsn when the
# test set it, else writer_dsn's with COLLECTOR_AS_WRITER=1, else $conninfo
serve_dsn() {
	if [ -n "${collector_dsn:-}" ]; then
		echo "$collector_dsn"
	elif [ "${COLLECTOR_AS_WRITER:-0}" = 1 ]; then
		writer_dsn
	else
		echo "$conninfo"
	fi
}

# load_json [DSN]: the reports on standard input, JSON as `fleetbench-agent
# show` prints them, stored through `fleetbench-collector load` (the codec
# and the ingest serve uses; docs/operations.md) with serve_dsn, or DSN;
# prints load's lines ("RUN_ID stored", "RUN_ID duplicate", "RUN_ID
# rejected: why") and returns its status; its log goes to standard error
load_json() {
	"${wrapper[@]}" "$COLLECTOR" load --schema-dir "$SOURCE_DIR/schema" \
		--dsn "${1:-$(serve_dsn)}"
}

# load_one [DSN]: one report on standard input through load_json; prints
# t when it was stored, f when it was a duplicate, else what load said
# (its reason, or its error)
load_one() {
	local out
	out=$(load_json "$@" 2>&1)
	case $out in
	*" stored"$'\n'*) echo t ;;
	*" duplicate"$'\n'*) echo f ;;
	*) printf '%s\n' "$out" ;;
	esac
}

nstart=0
# start_collector [BIND [SERVE OPTIONS]]: serve with $keys/collector.key
# and $allow in the background, connected with serve_dsn; sets pid, log,
# endpoint; a collector that does not start fails the test
start_collector() {
	local bind=${1:-tcp://127.0.0.1:*} dsn

	shift || true
	nstart=$((nstart + 1))
	log=$tmp/serve.$nstart.log
	if ! dsn=$(serve_dsn); then
		not_ok "no login for the collector"
		finish
	fi
	"${wrapper[@]}" "$COLLECTOR" serve --schema-dir "$SOURCE_DIR/schema" \
		--dsn "$dsn" --bind "$bind" \
		--server-key "$keys/collector.key" --allowlist "$allow" \
		--heartbeat 1000 "$@" 2>"$log" &
	pid=$!
	if ! wait_for 10 grep -q 'listening on' "$log"; then
		not_ok "the collector did not start: $(cat "$log")"
		finish
	fi
	endpoint=$(sed -n 's/.*listening on \(tcp:[^ ]*\) .*/\1/p' "$log")
}

# stop_collector: SIGTERM, and the exit status
stop_collector() {
	kill -TERM "$pid"
	wait "$pid"
	local status=$?
	pid=
	return "$status"
}

# agent_argv NAME COMMAND [ARGS]: sets the array argv to the command line
# of the agent with key NAME, spool NAME and state directory NAME
# ("${argv[@]}" & gives the agent's own pid in $!)
agent_argv() {
	local name=$1 cmd=$2

	shift 2
	argv=("$AGENT" "$cmd" --spool-dir "$tmp/spool.$name"
		--state-dir "$tmp/state.$name"
		--endpoint "$endpoint" --server-key "$keys/collector.pub"
		--agent-key "$keys/$name.key" --send-timeout $((1500 * slow))
		--retries 0 --backoff 100 "$@")
}

# agent NAME COMMAND [ARGS]: runs that agent
agent() {
	agent_argv "$@"
	"${argv[@]}"
}

# the options of a quick run (a fraction of a second): one small benchmark
quick_run=(--profile quick --only false_sharing --fs-increments 100000
	--repeats 2 --steal-window 0)

# agent_run NAME PROVIDER TYPE [ARGS]: a quick run; stdout and stderr in
# $tmp/NAME.out
agent_run() {
	local name=$1 provider=$2 type=$3

	shift 3
	agent "$name" run "${quick_run[@]}" --provider "$provider" \
		--instance-type "$type" --dir "$tmp" "$@" >"$tmp/$name.out" 2>&1
}

# spooled NAME: how many reports wait in agent NAME's spool
spooled() {
	find "$tmp/spool.$1" -maxdepth 1 -name '*.fbr' | wc -l
}

# zs KEY [ARGS]: zsend with agent key KEY
zs() {
	local name=$1

	shift
	"$ZSEND" --endpoint "$endpoint" --server-key "$keys/collector.pub" \
		--agent-key "$keys/$name.key" --timeout $((2000 * slow)) "$@"
}

runs_of() {
	q <<<"SELECT count(*) FROM runs WHERE provider = '$1'"
}

# fleet_load: the fleet fixture (tests/fixtures/README.md) in a new
# database, through the real programs. In the build's shared server its
# database is made from fleetbench_fleet, which tests/harness/pg-shared
# loaded once so (fleetgen, the agent's send, the collector), with the
# same keys and manifest, and a collector is started on it; a test that
# defines fleet_before_send, or has no shared server, loads its own:
# pg_start "$tmp/pg", migrate, the
# collector (connected with serve_dsn) serving CURVE with an allowlist of one agent key, fleetgen
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
	local bin tries=100 host fleet

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
	fleet_keys=$tmp/keys
	fleet_manifest=$tmp/fleet.tsv
	fleet=
	# the fleet as the shared server's fixture loaded it once per build
	# (tests/harness/pg-shared), through the same programs; not for a
	# test that watches the sending (fleet_before_send) or brings a
	# fleetgen of its own
	if ! declare -F fleet_before_send >/dev/null &&
		[ "$FLEETGEN" -ef "$BUILD_DIR/tests/fleetgen" ] &&
		host=$(shared_host) &&
		[ -f "${host%/pg}/fleet/fleet.tsv" ]; then
		fleet=${host%/pg}/fleet
		pg_start "$tmp/pg" fleetbench_fleet
		cp -r "$fleet/keys" "$fleet_keys"
		cp "$fleet/fleet.tsv" "$fleet_manifest"
		cp "$fleet/send.log" "$tmp/send.log"
	else
		pg_start "$tmp/pg" fleetbench_template
		mkdir -p "$fleet_keys/allow"
		if ! "$COLLECTOR" keygen --dir "$fleet_keys" >/dev/null ||
			! "$COLLECTOR" keygen --dir "$fleet_keys" --name agent >/dev/null; then
			not_ok "fleet_load: keygen failed"
			finish
		fi
		cp "$fleet_keys/agent.pub" "$fleet_keys/allow/"
	fi
	if ! "$COLLECTOR" migrate --schema-dir "$SOURCE_DIR/schema" \
		--dsn "$conninfo" >"$tmp/migrate.log" 2>&1; then
		not_ok "fleet_load: migrate: $(cat "$tmp/migrate.log")"
		finish
	fi
	fleet_log=$tmp/collector.log
	if ! fleet_dsn=$(serve_dsn); then
		not_ok "fleet_load: no login for the collector"
		finish
	fi
	"$COLLECTOR" serve --schema-dir "$SOURCE_DIR/schema" --dsn "$fleet_dsn" \
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
	[ -n "$fleet" ] && return 0
	if declare -F fleet_before_send >/dev/null; then
		fleet_before_send
	fi
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
	"$AGENT" send --spool-dir "$1" --state-dir "$1.state" \
		--endpoint "$fleet_endpoint" \
		--server-key "$fleet_keys/collector.pub" \
		--agent-key "$fleet_keys/agent.key" --send-timeout 10000 \
		>"$tmp/send.log" 2>&1
}

