# SPDX-License-Identifier: MIT
# The reliability scenarios' shared part (docs/reliability.md), on top of
# tests/integration/lib.sh: the setup (a PostgreSQL, the migrations, keys,
# a collector), a ledger of what every agent spooled and was acknowledged,
# and the check every scenario ends with:
#
#   every run id that an agent holds as acknowledged, or still has in its
#   spool, is stored exactly once; nothing was stored that no agent sent.
#
# The ledger is $tmp/ledger: NAME.log, the standard error of every run of
# agent NAME ("report ID spooled in", "report ID stored by", "report ID was
# already stored"), and NAME.ids, run ids known to be in its spool (spoolgen
# output, and a listing before every agent run, since a run killed between
# its spool write and its "spooled" line leaves a report that the next run
# may deliver without a word when it is killed too). Scenarios report
# what they measured with figures(), for the table of docs/reliability.md.
#
# Environment: that of tests/integration/lib.sh, SPOOLGEN and ZFLOOD (the
# test clients, default under BUILD_DIR), FLEETBENCH_LONG=1 for the long
# variants (sets long).
# shellcheck shell=bash

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"

SPOOLGEN=${SPOOLGEN:-$BUILD_DIR/tests/reliability/spoolgen}
ZFLOOD=${ZFLOOD:-$BUILD_DIR/tests/reliability/zflood}
# shellcheck disable=SC2034 # read by the scenarios
long=${FLEETBENCH_LONG:-0}

# figures TEXT: prints "figures: TEXT" and keeps it in
# BUILD_DIR/reliability-figures/SCENARIO.txt (new for each run of the
# scenario), which scripts/test prints at the end
figures_file=
figures() {
	echo "figures: $*"
	if [ -z "$figures_file" ]; then
		figures_file=$BUILD_DIR/reliability-figures/$(basename "$0" .sh).txt
		mkdir -p "${figures_file%/*}" && : >"$figures_file"
	fi
	echo "$*" >>"$figures_file"
}

# rel_setup NAME AGENT...: a temporary directory, a migrated PostgreSQL,
# keys for the collector and the agents (all allowed) and the ledger; the
# collector is left to start_collector
rel_setup() {
	local name=$1

	shift
	require_built "$COLLECTOR" "$AGENT" "$ZSEND" "$SPOOLGEN" "$ZFLOOD"
	tmp_new "$name"
	# the harness runs PostgreSQL as another user when we are root
	chmod 0755 "$tmp"
	# a timeout's SIGTERM still runs the cleanup
	trap 'exit 1' INT TERM HUP
	pg_start "$tmp/pg" fleetbench_template
	if ! "$COLLECTOR" migrate --schema-dir "$SOURCE_DIR/schema" \
		--dsn "$conninfo" >"$tmp/migrate.out" 2>&1; then
		not_ok "migrate: $(cat "$tmp/migrate.out")"
		finish
	fi
	keys_new "$@"
	allow_keys "$@"
	mkdir -p "$tmp/ledger"
}

# ledger_snapshot NAME: notes the reports in agent NAME's spool, before
# the agent runs
ledger_snapshot() {
	spool_ids "$1" >>"$tmp/ledger/$1.ids"
}

# stored_count: the runs stored
stored_count() {
	q <<<"SELECT count(*) FROM runs"
}

# stored_over N: more than N runs are stored (for wait_for)
stored_over() {
	[ "$(stored_count)" -gt "$1" ]
}

# rel_stream NAME PROVIDER: until $tmp/stop exists, spools one report
# (labelled PROVIDER) into agent NAME's spool and sends the spool, twice a
# second, to $endpoint; what the agent logs goes to the ledger, each line
# after the time it was read (EPOCHREALTIME). Run it in the background.
rel_stream() {
	local name=$1 provider=$2

	while [ ! -e "$tmp/stop" ]; do
		"$SPOOLGEN" --spool-dir "$tmp/spool.$name" --count 1 \
			--provider "$provider" >>"$tmp/ledger/$name.ids" \
			2>>"$tmp/spoolgen.$name.err"
		ledger_snapshot "$name"
		agent "$name" send 2>&1 >/dev/null |
			while IFS= read -r line; do
				printf '%s %s\n' "$EPOCHREALTIME" "$line"
			done >>"$tmp/ledger/$name.log"
		sleep 0.5
	done
}

# ragent NAME COMMAND [ARGS]: agent NAME; stdout in $tmp/NAME.out,
# stderr in $tmp/NAME.err and appended to the ledger; its exit status
ragent() {
	local name=$1 status

	ledger_snapshot "$name"
	agent "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
	status=$?
	cat "$tmp/$name.err" >>"$tmp/ledger/$name.log"
	return "$status"
}

# spool_ids NAME: the run ids in agent NAME's spool, sorted
spool_ids() {
	[ -d "$tmp/spool.$1" ] || return 0
	find "$tmp/spool.$1" -maxdepth 1 -name '*.fbr' -printf '%f\n' |
		sed 's/\.fbr$//' | sort
}

# spoolgen NAME COUNT [SPOOLGEN OPTIONS]: COUNT reports into agent NAME's
# spool, in the ledger
spoolgen() {
	local name=$1 count=$2

	shift 2
	if ! "$SPOOLGEN" --spool-dir "$tmp/spool.$name" --count "$count" \
		"$@" >>"$tmp/ledger/$name.ids" 2>"$tmp/spoolgen.err"; then
		not_ok "spoolgen $name $count: $(cat "$tmp/spoolgen.err")"
		finish
	fi
}

# ledger_sent: every run id an agent spooled, sorted
ledger_sent() {
	{
		cat "$tmp"/ledger/*.ids 2>/dev/null
		sed -n 's/.*report \([0-9a-f-]\{36\}\) spooled in .*/\1/p' \
			"$tmp"/ledger/*.log 2>/dev/null
	} | sort -u
}

# ledger_acked: every run id an agent was answered COMMITTED or
# DUPLICATE for, sorted
ledger_acked() {
	sed -n -e 's/.*report \([0-9a-f-]\{36\}\) stored by .*/\1/p' \
		-e 's/.*report \([0-9a-f-]\{36\}\) was already stored.*/\1/p' \
		"$tmp"/ledger/*.log 2>/dev/null | sort -u
}

# stored: the run ids in the database, sorted
stored() {
	q <<<"SELECT run_id FROM runs" | sort
}

# rel_flush NAME...: the agents run again: each sends its spool (up to 5
# passes, for a collector still starting), which must end empty
rel_flush() {
	local name

	for name in "$@"; do
		for _ in 1 2 3 4 5; do
			ragent "$name" send && break
			sleep 1
		done
		check_eq "agent $name delivers its whole spool" \
			"$(spooled "$name")" 0
	done
}

# rel_check_end: the check every scenario ends with (see the top)
rel_check_end() {
	local held sent db

	held=$tmp/held sent=$tmp/sent db=$tmp/stored
	{
		ledger_acked
		for dir in "$tmp"/spool.*; do
			[ -d "$dir" ] && spool_ids "${dir##*/spool.}"
		done
	} | sort -u >"$held"
	ledger_sent >"$sent"
	stored >"$db"
	check_eq "every acknowledged or spooled report is stored" \
		"$(comm -23 "$held" "$db" | head -n 5 | tr '\n' ' ')" ""
	check_eq "nothing is stored that no agent sent" \
		"$(comm -13 "$sent" "$db" | head -n 5 | tr '\n' ' ')" ""
	check_eq "no run is stored twice" "$(q <<-EOF
		SELECT count(*) - count(DISTINCT run_id) FROM runs
	EOF
	)" 0
	check_eq "no benchmark result is stored twice" "$(q <<-EOF
		SELECT count(*) FROM (SELECT 1 FROM bench_results
			GROUP BY run_id, benchmark, variant
			HAVING count(*) > 1) d
	EOF
	)" 0
	figures "end check: $(wc -l <"$sent") reports sent, $(wc -l <"$held") held by agents, $(wc -l <"$db") stored"
}

# collector_stats: the numbers of the collector's latest "messages
# received" line (SIGHUP and exit log it) as shell assignments
# st_received= st_committed= ... st_refused=
collector_stats() {
	grep 'messages received' "$log" | tail -n 1 | sed -E \
		-e 's/.*messages received ([0-9]+): committed ([0-9]+), duplicate ([0-9]+), rejected ([0-9]+), retry later ([0-9]+), unacknowledged \(commit unknown\) ([0-9]+), dropped ([0-9]+), answers lost ([0-9]+); peers refused ([0-9]+).*/st_received=\1 st_committed=\2 st_duplicate=\3 st_rejected=\4 st_retry=\5 st_unacked=\6 st_dropped=\7 st_lost=\8 st_refused=\9/'
}
