#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `fleetbench-collector prune --older-than AGE` (collector/cmd_prune.c,
# schema/functions/65_prune.sql; docs/operations.md, "Retention") on a
# real PostgreSQL: runs stored in months before and after the horizon
# (with and without their month's partition of run_results), an open
# alert on a run of one old month and an acknowledged one on another.
# --dry-run lists exactly the months older than the horizon, with their
# partitions, rows and bytes, and changes nothing; prune drops exactly
# those months' partitions and runs (their figures with them, and
# fleet_summary stops counting them), keeps the month the open alert
# refers to, the recent months and the default partition, and drops that
# month once the alert is acknowledged. A bad --older-than is refused
# with an error naming it, and the writer role cannot prune.
#
# Environment: SOURCE_DIR, BUILD_DIR, COLLECTOR, PG_BINDIR.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_built "$COLLECTOR"
tmp_new prune
# the harness runs PostgreSQL as another user when we are root
chmod 0755 "$tmp"
pg_start "$tmp/pg"
"$COLLECTOR" migrate --schema-dir "$SOURCE_DIR/schema" --dsn "$conninfo" \
	>"$tmp/migrate.out" 2>&1 || not_ok "migrate: $(cat "$tmp/migrate.out")"

prune() {
	"$COLLECTOR" prune --schema-dir "$SOURCE_DIR/schema" --dsn "$conninfo" "$@"
}

# month N: the first day of the month N months before this one (UTC)
month() {
	q <<<"SELECT to_char(date_trunc('month', now() AT TIME ZONE 'UTC') - interval '$1 months', 'YYYY-MM-DD')"
}
# ym DATE: its YYYY-MM
ym() {
	echo "${1%-*}"
}

report=$(cat "$SOURCE_DIR/tests/fixtures/reports/aws-m5.large-a.json")
# ingest DATE: a run of the fixture started on the 10th of DATE's month;
# prints its run_id
ingest() {
	local id out

	id=$(uuid)
	out=$("$PG_BINDIR/psql" "$conninfo" -X -q -A -t -v ON_ERROR_STOP=1 \
		-v r="$report" -v id="$id" -v d="$1" <<-'EOF' | load_one
		SELECT jsonb_set(jsonb_set(jsonb_set(:'r'::jsonb,
			'{run_id}', to_jsonb(:'id'::text)),
			'{started_unix_ms}', to_jsonb(ms)),
			'{finished_unix_ms}', to_jsonb(ms + 1000))
		FROM (SELECT (extract(epoch FROM (:'d'::timestamp + interval '9 days 12 hours')
					       AT TIME ZONE 'UTC') * 1000)::bigint AS ms) AS t
	EOF
	)
	[ "$out" = t ] || not_ok "ingest a run of $1: $out"
	echo "$id"
}
# partition DATE: makes its month's partition of run_results
partition() {
	check_eq "partition of $(ym "$1")" \
		"$(q <<<"SELECT fleetbench_results_partition('$1')")" t
}

# The months, N months back: A 20 (two runs, an acknowledged alert), B 17
# (the open alert), D 16 (a run, no partition: its results wait in the
# default one), C 15 (an empty partition), F 14 (the last month that
# ended more than 13 months ago), G 13 (ends after the horizon), E 6.
A=$(month 20) B=$(month 17) D=$(month 16) C=$(month 15) F=$(month 14)
G=$(month 13) E=$(month 6)
for m in "$A" "$B" "$C" "$F" "$G" "$E"; do
	partition "$m"
done
a1=$(ingest "$A") a2=$(ingest "$A") b1=$(ingest "$B") d1=$(ingest "$D")
f1=$(ingest "$F") g1=$(ingest "$G") e1=$(ingest "$E")
check_eq "D's results wait in the default partition" \
	"$(q <<<"SELECT count(*) FROM run_results_default WHERE run_id = '$d1'")" 1

# alerts on runs of A (acknowledged) and B (open)
alert() {
	q <<-EOF
	WITH f AS (INSERT INTO fleet_alerts (provider, instance_type, new_kernel,
					     kind, change, acknowledged_at)
		   VALUES ('aws', 'm5.large', 'k2-$1', 'fingerprint', '{}',
			   $3) RETURNING id)
	INSERT INTO alerts (fleet_alert_id, machine_id, hostname, provider,
			    instance_type, old_kernel, new_kernel, kind, diff,
			    old_run_id, new_run_id, acknowledged_at)
	SELECT f.id, 'm-$1', 'h', 'aws', 'm5.large', 'k1', 'k2-$1',
	       'fingerprint', '{}', '$2', '$e1', $3
	FROM f RETURNING fleet_alert_id
	EOF
}
acked=$(alert a "$a1" "now()")
open=$(alert b "$b1" NULL)
check_eq "two fleet alerts" "$(q <<<"SELECT count(*) FROM fleet_alerts")" 2

# the summary as the queries keep it, before the prune
q <<<"SELECT sum(runs) FROM fleet_compare_by(method_key => '*')" >/dev/null

# state: what prune may change
state() {
	q <<-'EOF'
	SELECT string_agg(c.relname, ' ' ORDER BY c.relname)
	FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
	WHERE i.inhparent = 'run_results'::regclass;
	SELECT count(*) FROM runs;
	SELECT count(*) FROM run_results;
	SELECT count(*) FROM run_figures;
	SELECT count(*) FROM alerts;
EOF
}
state >"$tmp/state0"
total=$(q <<<"SELECT count(*) FROM runs")

# expected ITEM DATE: a month's line, bytes from the catalog
expected() {
	local verb=$1 d=$2 part rows bytes runs rbytes

	part=run_results_y$(ym "$d" | tr -d -)
	part=${part:0:17}m${part:17:2}
	if [ "$(q <<<"SELECT to_regclass('$part') IS NOT NULL")" = t ]; then
		rows=$(q <<<"SELECT count(*) FROM $part")
		bytes=$(q <<<"SELECT pg_total_relation_size('$part')")
	else
		part="no partition" rows=0 bytes=0
	fi
	read -r runs rbytes <<<"$(q <<-EOF
	SELECT count(*) || ' ' || coalesce(sum(pg_column_size(r.*)), 0)
	FROM runs r
	WHERE r.started_at >= '$d'::timestamp AT TIME ZONE 'UTC'
	  AND r.started_at < ('$d'::timestamp + interval '1 month') AT TIME ZONE 'UTC'
	EOF
	)"
	echo "$verb $(ym "$d"): $part ($rows rows, $bytes bytes), $runs runs ($rbytes bytes)"
}

# --- dry run -----------------------------------------------------------------

prune --older-than 13months --dry-run >"$tmp/dry.out" 2>"$tmp/dry.err"
check_eq "the dry run succeeds" "$?" 0
{
	expected "would drop" "$A"
	echo "would keep $(ym "$B"): open alert $open refers to its runs"
	expected "would drop" "$D"
	expected "would drop" "$C"
	expected "would drop" "$F"
} >"$tmp/dry.want"
check_eq "it lists exactly the months older than 13 months, with partitions, rows and bytes" \
	"$(grep -v '^dry run' "$tmp/dry.out")" "$(cat "$tmp/dry.want")"
check_grep "A holds two runs and their results" "$tmp/dry.out" \
	"^would drop $(ym "$A"): run_results_y[0-9]{4}m[0-9]{2} \(2 rows, [1-9][0-9]* bytes\), 2 runs"
check_grep "and sums it up" "$tmp/dry.out" \
	"^dry run: would drop 4 months \(3 partition rows, 4 runs, [0-9]+ bytes\) and keep 1, of those that ended before .* UTC \(13 months ago\); nothing changed$"
state >"$tmp/state1"
check_eq "the dry run changed nothing" "$(diff "$tmp/state0" "$tmp/state1")" ""
prune --older-than 400days --dry-run >"$tmp/dry400.out" 2>&1
check_eq "400days: the months that ended 400 days ago" \
	"$(grep '^would' "$tmp/dry400.out" | cut -d: -f1 | cut -d' ' -f3)" \
	"$(for m in "$A" "$B" "$D" "$C" "$F" "$G" "$E"; do
		[ "$(q <<<"SELECT ('$m'::timestamp + interval '1 month') AT TIME ZONE 'UTC' <= now() - interval '400 days'")" = t ] &&
			ym "$m"
	done)"
prune --older-than 2years --dry-run >"$tmp/dry2y.out" 2>&1
check_grep "2years: nothing (the oldest month is 20 months back)" \
	"$tmp/dry2y.out" "^nothing to drop"
prune --older-than 19months --dry-run >"$tmp/dry19.out" 2>&1
check_eq "19months: A alone" \
	"$(grep '^would' "$tmp/dry19.out" | cut -d: -f1)" "would drop $(ym "$A")"

# --- the writer cannot prune ------------------------------------------------

writer=$(writer_dsn)
"$COLLECTOR" prune --schema-dir "$SOURCE_DIR/schema" --dsn "$writer" \
	--older-than 13months >"$tmp/writer.out" 2>&1
check_eq "the writer role cannot prune" "$?" 1
check_grep "it is told why" "$tmp/writer.out" "cannot prune .*(must be owner|permission denied)"
state >"$tmp/state2"
check_eq "and nothing changed" "$(diff "$tmp/state0" "$tmp/state2")" ""

# --- prune ---------------------------------------------------------------------

{
	expected "dropped" "$A"
	echo "kept $(ym "$B"): open alert $open refers to its runs"
	expected "dropped" "$D"
	expected "dropped" "$C"
	expected "dropped" "$F"
} >"$tmp/prune.want"
prune --older-than 13months >"$tmp/prune.out" 2>"$tmp/prune.err"
check_eq "prune succeeds" "$?" 0
check_eq "it says what it dropped and kept, month by month" \
	"$(grep -Ev '^dropped [0-9]+ months? and kept' "$tmp/prune.out")" "$(cat "$tmp/prune.want")"
check_grep "and sums it up" "$tmp/prune.out" \
	"^dropped 4 months and kept 1, of those that ended before .* UTC \(13 months ago\)$"
check_eq "the partitions of A, C and F are dropped; B, G, E and the default stay" \
	"$(q <<-'EOF'
	SELECT string_agg(c.relname, ' ' ORDER BY c.relname)
	FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
	WHERE i.inhparent = 'run_results'::regclass
	  AND c.relname NOT IN (SELECT to_char(m, '"run_results_y"YYYY"m"MM')
				FROM generate_series(date_trunc('month', now() AT TIME ZONE 'UTC'),
						     date_trunc('month', now() AT TIME ZONE 'UTC')
						     + interval '3 months', interval '1 month') AS m)
EOF
)" "run_results_default$(for m in "$B" "$E" "$G"; do ym "$m" | sed 's/\(....\)-\(..\)/ run_results_y\1m\2/'; done | sort | tr -d '\n')"
check_eq "the runs of A, D and F are gone, with their results and figures" \
	"$(q <<-EOF
	SELECT (SELECT count(*) FROM runs WHERE run_id IN ('$a1', '$a2', '$d1', '$f1')) || ' ' ||
	       (SELECT count(*) FROM run_results WHERE run_id IN ('$a1', '$a2', '$d1', '$f1')) || ' ' ||
	       (SELECT count(*) FROM run_figures WHERE run_id IN ('$a1', '$a2', '$d1', '$f1'))
EOF
)" "0 0 0"
check_eq "the runs of B, G and E stay, with their results and figures" \
	"$(q <<-EOF
	SELECT (SELECT count(*) FROM runs WHERE run_id IN ('$b1', '$g1', '$e1')) || ' ' ||
	       (SELECT count(*) FROM run_results WHERE run_id IN ('$b1', '$g1', '$e1')) || ' ' ||
	       (SELECT count(*) FROM run_figures WHERE run_id IN ('$b1', '$g1', '$e1'))
EOF
)" "3 3 3"
check_eq "the default partition lost D's results only" \
	"$(q <<<"SELECT count(*) FROM run_results_default")" 0
check_eq "fleet_summary counts the runs that are left" \
	"$(q <<<"SELECT sum(runs) FROM fleet_compare_by(method_key => '*')")" \
	"$((total - 4))"
check_eq "both alerts are kept" "$(q <<<"SELECT count(*) FROM alerts")" 2

prune --older-than 13months >"$tmp/prune2.out" 2>&1
check_eq "a second prune keeps B and drops nothing" "$(cat "$tmp/prune2.out" | sed 's/ of those.*//')" \
	"kept $(ym "$B"): open alert $open refers to its runs
dropped 0 months and kept 1,"
q <<<"SELECT fleetbench_alert_ack($open)" >/dev/null
prune --older-than 13months >"$tmp/prune3.out" 2>&1
check_grep "once the alert is acknowledged, B goes" "$tmp/prune3.out" \
	"^dropped $(ym "$B"): run_results_y[0-9]{4}m[0-9]{2} \(1 rows, [0-9]+ bytes\), 1 runs"
check_eq "with its run" "$(q <<<"SELECT count(*) FROM runs WHERE run_id = '$b1'")" 0
prune --older-than 13months >"$tmp/prune4.out" 2>&1
check_grep "then nothing is left to drop" "$tmp/prune4.out" \
	"^nothing to drop: no month ended before .* UTC \(13 months ago\)$"

# --- bad input -------------------------------------------------------------------

bad() {
	local want=$1 out

	shift
	out=$("$COLLECTOR" prune --schema-dir "$SOURCE_DIR/schema" \
		--dsn "$conninfo" "$@" 2>&1)
	check_eq "refused with status 2: $*" "$?" 2
	check_match "with a clear error: $*" "$out" "$want"
}
for age in 0months 0days -3months +3months 13 13mnths "13 months" \
	13Months abc "" 1.5years 101years 99999999999999999999days; do
	bad "*error: --older-than '$age': *" --older-than "$age" --dry-run
done
bad "*'0months': the age must be positive*" --older-than 0months
bad "*'13mnths': unknown unit 'mnths'*" --older-than 13mnths
bad "*prune needs --older-than AGE*" --dry-run
bad "*'7days' is under a month*--force*" --older-than 7days
"$COLLECTOR" prune --schema-dir "$SOURCE_DIR/schema" --dsn "$conninfo" \
	--older-than 7days --force --dry-run >"$tmp/force.out" 2>&1
check_eq "--force lets an age under a month through" "$?" 0
"$COLLECTOR" serve --dry-run --dsn "$conninfo" >"$tmp/serve.out" 2>&1
check_eq "--dry-run is prune's alone" "$?" 2
check_grep "and serve says so" "$tmp/serve.out" \
	"--older-than, --dry-run and --force are options of prune only"
check_eq "no refused prune changed anything" \
	"$(q <<<"SELECT count(*) FROM runs")" 2

# --- behind another transaction (issue 38) ----------------------------------
# (waits and SQL, nothing the sanitizers look at: the plain build only,
# docs/testing.md)
if ! asan_built "$COLLECTOR"; then
	# prune waits for its locks a little, tries again, and gives up naming
	# the sessions in a transaction: the ingest, which queues behind a lock
	# prune waits for, is never held up for long (it was for as long as the
	# other transaction lasted)
	H=$(month 30)
	partition "$H"
	ingest "$H" >/dev/null
	"$PG_BINDIR/psql" "$conninfo" -X -q -c "BEGIN" \
		-c "SELECT count(*) FROM run_results" -c "SELECT pg_sleep(120)" \
		>/dev/null 2>&1 &
	sleepers+=($!)
	for _ in $(seq 100); do
		[ "$(q <<<"SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(120)'")" = 1 ] && break
		sleep 0.1
	done
	start=$SECONDS
	prune --older-than 13months >"$tmp/locked.out" 2>"$tmp/locked.err" &
	pruner=$!
	# the ingest while prune waits: at most one lock wait behind it
	sleep 0.5
	t0=$(date +%s%N)
	ingest "$E" >/dev/null
	t1=$(date +%s%N)
	wait "$pruner"
	check_eq "prune behind an open transaction: exit 1" "$?" 1
	check_eq "it gives up within its tries (3 of 2 s)" "$((SECONDS - start < 15))" 1
	check_grep "it names the month, the tries and the session" "$tmp/locked.err" \
		"cannot prune $(ym "$H"), nothing of it dropped: its tables stayed locked by another transaction \(3 tries of 2s each\): pid [0-9]+ \("
	check_eq "a run stored meanwhile waited at most one of prune's tries" \
		"$(( (t1 - t0) / 1000000 < 3500 ))" 1
	echo "behind an open transaction: prune gave up after $((SECONDS - start)) s; an ingest meanwhile took $(( (t1 - t0) / 1000000 )) ms"
	end_sleepers
	prune --older-than 13months >"$tmp/unlocked.out" 2>&1
	check_eq "once it ended, prune drops the month" \
		"$?|$(grep -c "^dropped $(ym "$H")" "$tmp/unlocked.out")" "0|1"

	# --- two prunes at once (issue 38): the second says so ----------------------
	# (once one failed on a partition the other had dropped)
	hold_advisory_lock 112723185853027
	prune --older-than 13months >"$tmp/twice.out" 2>&1
	check_eq "a prune while another runs: exit 1" "$?" 1
	check_grep "it says another prune runs, and which" "$tmp/twice.out" \
		"another prune of this database is running \(pid [0-9]+ \("
	end_sleepers
fi

finish
