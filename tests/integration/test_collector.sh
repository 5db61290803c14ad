#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The collector end to end: a real PostgreSQL (tests/harness/pg), the real
# fleetbench-collector and fleetbench-agent processes, and zsend (a raw
# CURVE client, tests/integration/zsend.c) for what an agent never sends.
#
# Environment: SOURCE_DIR (the source tree, default: this file's),
# BUILD_DIR (default SOURCE_DIR/build), COLLECTOR, AGENT and ZSEND (the
# binaries, default under BUILD_DIR), PG_BINDIR (PostgreSQL 15 server
# binaries), COLLECTOR_WRAPPER (a command to run serve under, such as
# "valgrind --leak-check=full --error-exitcode=1").
set -uo pipefail

# a server of its own (lib.sh): it stops and restarts PostgreSQL under the collector
# shellcheck disable=SC2034 # read by lib.sh
own_server=1

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_built "$COLLECTOR" "$AGENT" "$ZSEND"
tmp_new collector
# the harness runs PostgreSQL as another user when we are root
chmod 0755 "$tmp"
pg_start "$tmp/pg"

# --- migrate --------------------------------------------------------------

nmig=$(known_migrations "$SOURCE_DIR/schema")
# col COMMAND [ARGS]: the collector with this tree's migrations
col() {
	local cmd=$1

	shift
	"$COLLECTOR" "$cmd" --schema-dir "$SOURCE_DIR/schema" "$@"
}

col migrate --dsn "$conninfo" >"$tmp/migrate1.out" 2>&1
check_eq "migrate exits 0" "$?" 0
check_grep "migrate applies the baseline to a new database" "$tmp/migrate1.out" \
	'^applied the baseline \(baseline.sql\), standing for [0-9]+ migrations: 001_init to '
check_eq "schema_migrations lists every file" \
	"$(q <<<"SELECT count(*) FROM schema_migrations")" "$nmig"
col migrate --dsn "$conninfo" >"$tmp/migrate2.out" 2>&1
check_eq "migrate again exits 0" "$?" 0
check_grep "migrate again applies nothing" "$tmp/migrate2.out" \
	"current: $nmig migrations, 0 applied now"
check_eq "migrate again records nothing twice" \
	"$(q <<<"SELECT count(*) FROM schema_migrations")" "$nmig"

# an unmigrated database, then one migrated by a newer collector
q <<<"CREATE DATABASE other" >/dev/null
other=${conninfo/dbname=fleetbench/dbname=other}
col serve --dsn "$other" --insecure --bind 'tcp://127.0.0.1:*' \
	>"$tmp/unmigrated.out" 2>&1
check_eq "serve on an unmigrated database exits 1" "$?" 1
check_grep "serve says it is not migrated" "$tmp/unmigrated.out" \
	"not migrated: run 'fleetbench-collector migrate'"
col migrate --dsn "$other" >/dev/null 2>&1
q "$other" <<<"INSERT INTO schema_migrations VALUES (999, '999_future')"
col serve --dsn "$other" --insecure --bind 'tcp://127.0.0.1:*' \
	>"$tmp/newer.out" 2>&1
check_eq "serve on a newer database exits 1" "$?" 1
check_grep "serve names the unknown migration" "$tmp/newer.out" \
	"refusing to serve a newer database: .*999 '999_future'"
col migrate --dsn "$other" >"$tmp/newer-migrate.out" 2>&1
check_eq "migrate of a newer database exits 1" "$?" 1
check_grep "migrate refuses it" "$tmp/newer-migrate.out" "refusing to migrate"

# a migration that fails is rolled back whole, and named with its line
q <<<"CREATE DATABASE broken" >/dev/null
broken=${conninfo/dbname=fleetbench/dbname=broken}
mkdir "$tmp/schema"
cp "$SOURCE_DIR"/schema/[0-9][0-9][0-9]_*.sql "$SOURCE_DIR/schema/baseline.sql" \
	"$tmp/schema/"
# after the highest version (branches get their numbers ahead of time, so
# there may be gaps)
last=$(find "$SOURCE_DIR/schema" -name '[0-9][0-9][0-9]_*.sql' -printf '%f\n' |
	sort | tail -1)
bad=$(printf '%03d_broken.sql' $((10#${last%%_*} + 1)))
printf 'CREATE TABLE half (a int);\nSELECT 1;\nCREATE TABLE oops (;\n' \
	>"$tmp/schema/$bad"
"$COLLECTOR" migrate --schema-dir "$tmp/schema" --dsn "$broken" \
	>"$tmp/broken.out" 2>&1
check_eq "a failing migration exits 1" "$?" 1
check_grep "the error names the file and line" "$tmp/broken.out" \
	"$tmp/schema/$bad:3: syntax error"
check_eq "nothing of it is applied, the earlier ones are" "$(q "$broken" <<-EOF
	SELECT to_regclass('half') IS NULL, count(*) FROM schema_migrations
EOF
)" "t|$nmig"

# --- command line and config ---------------------------------------------

"$COLLECTOR" --help >"$tmp/help.out"
check_eq "--help exits 0" "$?" 0
for opt in --config --bind --dsn --server-key --allowlist --max-msg-size \
	--heartbeat --batch-max --batch-wait --db-connections --insecure \
	--schema-dir --dir --name; do
	check_grep "--help lists $opt" "$tmp/help.out" "^ +(-c, )?$opt"
done
printf '[collector]\nbind = tcp://127.0.0.1:1\nbatch_size = 3\n' \
	>"$tmp/bad.conf"
"$COLLECTOR" serve -c "$tmp/bad.conf" >"$tmp/bad.out" 2>&1
check_eq "an unknown config key exits 2" "$?" 2
check_grep "the error names file, line and key" "$tmp/bad.out" \
	"$tmp/bad.conf:3: unknown key 'batch_size'"
printf '[collector]\n\nbatch_max = 0\n' >"$tmp/range.conf"
"$COLLECTOR" serve -c "$tmp/range.conf" >"$tmp/range.out" 2>&1
check_eq "an out-of-range value exits 2" "$?" 2
check_grep "the error names file, line and key" "$tmp/range.out" \
	"$tmp/range.conf:3: collector.batch_max: 0 is out of range"
# what is not a config file: refused at once, named (issue 38)
for f in /dev/zero:"a character device" "$tmp":"a directory"; do
	timeout 10 "$COLLECTOR" serve -c "${f%%:*}" >"$tmp/notfile.out" 2>&1
	check_eq "-c ${f%%:*}: exits 2" "$?" 2
	check_grep "-c ${f%%:*}: names it" "$tmp/notfile.out" \
		"${f%%:*}: not a regular file but ${f#*:}"
done
"$COLLECTOR" serve --batch-wait soon >"$tmp/flag.out" 2>&1
check_eq "a bad flag value exits 2" "$?" 2
check_grep "the error names the flag" "$tmp/flag.out" "bad value for --batch-wait"
"$COLLECTOR" serve --db-connections 5 >"$tmp/conns.out" 2>&1
check_eq "--db-connections 5 exits 2" "$?" 2
check_grep "the error names the setting and the value" "$tmp/conns.out" \
	"db.connections.*5"
col serve --dsn "$conninfo" --bind 'tcp://127.0.0.1:*' \
	>"$tmp/nokey.out" 2>&1
check_eq "serve without keys or --insecure exits 1" "$?" 1
check_grep "it asks for a server key" "$tmp/nokey.out" "no server key"

# --- keys -----------------------------------------------------------------

keys=$tmp/keys
allow=$tmp/allow
mkdir -p "$keys" "$allow"
"$COLLECTOR" keygen --dir "$keys" >"$tmp/keygen.out" 2>&1
check_eq "keygen exits 0" "$?" 0
check_eq "the secret key is 0600" "$(stat -c %a "$keys/collector.key")" 600
check_eq "keygen prints the public key" \
	"$(sed -n 's/^public key: //p' "$tmp/keygen.out")" \
	"$(cat "$keys/collector.pub")"
"$COLLECTOR" keygen --dir "$keys" >"$tmp/keygen2.out" 2>&1
check_eq "keygen never overwrites" "$?" 1
for a in a1 a2 a3 a4; do
	"$COLLECTOR" keygen --dir "$keys" --name "$a" >/dev/null ||
		not_ok "keygen $a"
done
chmod 0640 "$keys/a4.key"
col serve --dsn "$conninfo" --server-key "$keys/a4.key" \
	--allowlist "$allow" >"$tmp/perm.out" 2>&1
check_eq "a group-readable server key is refused" "$?" 1
check_grep "it says why" "$tmp/perm.out" "readable by group or others"
chmod 0600 "$keys/a4.key"
# two agents allowed at first; a3 joins through SIGHUP; a4 never does
cp "$keys/a1.pub" "$keys/a2.pub" "$allow/"

# --- serve ----------------------------------------------------------------

# plaintext only with --insecure; the fd limit raised to the hard one
(
	ulimit -Sn 512 && ulimit -Hn 2048 &&
		exec "$COLLECTOR" serve --schema-dir "$SOURCE_DIR/schema" \
			--dsn "$conninfo" --insecure \
			--bind 'tcp://127.0.0.1:*' 2>"$tmp/insecure.log"
) &
pid=$!
if wait_for 10 grep -q 'listening on' "$tmp/insecure.log"; then
	endpoint=$(sed -n 's/.*listening on \(tcp:[^ ]*\) .*/\1/p' \
		"$tmp/insecure.log")
	U=$(uuid)
	check_eq "--insecure: a plaintext client is served" \
		"$("$ZSEND" --endpoint "$endpoint" --insecure --report "$U" \
			--timeout $((2000 * slow)))" "ack COMMITTED $U "
	check_grep "--insecure warns" "$tmp/insecure.log" \
		"warning: plaintext mode \(--insecure\)"
	check_grep "the soft fd limit is raised to the hard one" \
		"$tmp/insecure.log" "file descriptor limit 2048 \(hard 2048\)"
	check_grep "a limit below 4096 is warned about" "$tmp/insecure.log" \
		"warning: the file descriptor limit 2048 is below 4096"
else
	not_ok "the insecure collector did not start: $(cat "$tmp/insecure.log")"
fi
stop_collector
check_eq "the insecure collector exits 0 on SIGTERM" "$?" 0

start_collector
port=${endpoint##*:}

# --- three agents, three groups -------------------------------------------

agent_run a1 p1 t1
check_eq "agent a1 run exits 0" "$?" 0
agent_run a2 p2 t2
check_eq "agent a2 run exits 0" "$?" 0
agent_run a3 p3 t3
check_eq "agent a3, not yet allowed, exits 3" "$?" 3
check_eq "a3's report stays spooled" "$(spooled a3)" 1
check_eq "nothing of a3 is stored" "$(runs_of p3)" 0
check_has "the refusal is logged with a3's key" "$log" \
	"refused CURVE peer with key $(cat "$keys/a3.pub") from 127.0.0.1"
cp "$keys/a3.pub" "$allow/"
kill -HUP "$pid"
wait_for 5 grep -q "reloaded the allowlist '$allow': 3 agent keys" "$log"
check_eq "SIGHUP reloads the allowlist" "$?" 0
agent a3 send >"$tmp/a3-send.out" 2>&1
check_eq "a3's send after the reload exits 0" "$?" 0
check_eq "a3's spool is empty" "$(spooled a3)" 0
kernel=$(uname -r)
check_eq "three runs in the right groups of fleet_compare" "$(q <<-EOF
	SELECT provider, instance_type, kernel, hosts, runs
	FROM fleet_compare_by(method_key => '*')
	WHERE provider IN ('p1', 'p2', 'p3')
	ORDER BY provider
EOF
)" "p1|t1|$kernel|1|1
p2|t2|$kernel|1|1
p3|t3|$kernel|1|1"
check_eq "each run has its false_sharing variants" "$(q <<-EOF
	SELECT count(DISTINCT r.run_id), count(*) / count(DISTINCT r.run_id)
	FROM runs r JOIN bench_results b USING (run_id)
	WHERE provider IN ('p1', 'p2', 'p3')
EOF
)" "3|4"

# a key removed from the allowlist is refused from the next connection on
rm "$allow/a2.pub"
kill -HUP "$pid"
wait_for 5 grep -q "reloaded the allowlist '$allow': 2 agent keys" "$log"
agent_run a2 p2b t2
check_eq "a2, removed, exits 3" "$?" 3
check_eq "nothing of a2's second run is stored" "$(runs_of p2b)" 0
cp "$keys/a2.pub" "$allow/"
kill -HUP "$pid"
wait_for 5 grep -q "reloaded the allowlist '$allow': 3 agent keys" "$log"
agent a2 send >"$tmp/a2-send.out" 2>&1
check_eq "a2, allowed again, delivers its spool" "$?" 0
check_eq "a2's second run is stored" "$(runs_of p2b)" 1

# a malformed allowlist on SIGHUP: the current one is kept, named
echo 'not-a-key' >"$allow/bad.pub"
kill -HUP "$pid"
wait_for 5 grep -q "cannot reload the allowlist, keeping the current one" "$log"
check_eq "SIGHUP with a malformed allowlist keeps the current one, saying so" \
	"$?" 0
check_grep "and names the file" "$log" \
	"cannot reload the allowlist, keeping the current one: .*bad\.pub"
agent_run a2 p2c t2
check_eq "an allowed agent still delivers meanwhile" "$?|$(runs_of p2c)" "0|1"
rm "$allow/bad.pub"

# --- collector down, then up ---------------------------------------------

stop_collector
check_eq "SIGTERM: the collector exits 0" "$?" 0
check_grep "it says it stops" "$log" "Terminated: stopping"
agent_run a1 p5 t5
check_eq "a run while the collector is down exits 3" "$?" 3
check_eq "its report stays spooled" "$(spooled a1)" 1
saved=$(find "$tmp/spool.a1" -maxdepth 1 -name '*.fbr')
run_id=$(basename "$saved" .fbr)
cp "$saved" "$tmp/saved.fbr"
start_collector "tcp://127.0.0.1:$port"
agent a1 send >"$tmp/a1-send.out" 2>&1
check_eq "send after the collector started exits 0" "$?" 0
check_eq "the spool is empty" "$(spooled a1)" 0
check_eq "the report is stored" \
	"$(q <<<"SELECT provider FROM runs WHERE run_id = '$run_id'")" p5

# --- the same report twice -----------------------------------------------

cp "$tmp/saved.fbr" "$tmp/spool.a1/$run_id.fbr"
agent a1 send >"$tmp/a1-dup.out" 2>&1
check_eq "sending it again exits 0" "$?" 0
check_grep "the agent was answered DUPLICATE" "$tmp/a1-dup.out" \
	"committed 0, duplicate 1"
check_eq "the copy left the spool" "$(spooled a1)" 0
check_eq "it is stored once" \
	"$(q <<<"SELECT count(*) FROM runs WHERE run_id = '$run_id'")" 1
U=$(uuid)
check_eq "zsend: a new report is COMMITTED" "$(zs a1 --report "$U")" \
	"ack COMMITTED $U "
check_eq "zsend: the same report again is DUPLICATE" \
	"$(zs a1 --report "$U")" "ack DUPLICATE $U "
check_eq "its samples and parameters are stored as sent" "$(q <<-EOF
	SELECT m.samples, b.parameters FROM bench_metrics m
	JOIN bench_results b USING (run_id, benchmark, variant)
	WHERE run_id = '$U'
EOF
)" '{1.5,2.25,0.1}|{"threads": 2}'

# --- a failed variant is stored; a sample out of bounds refuses the report --

F=$(uuid)
check_eq "zsend: a report with a failed variant is COMMITTED" \
	"$(zs a1 --report "failed:$F")" "ack COMMITTED $F "
check_eq "the failed variant is stored with status failed and its failure" \
	"$(q <<-EOF
	SELECT benchmark, variant, status, failure, skip_reason IS NULL,
	       (SELECT count(*) FROM bench_metrics m
		WHERE m.run_id = b.run_id AND m.variant = b.variant)
	FROM bench_results b WHERE run_id = '$F' ORDER BY position
EOF
)" "false_sharing|shared|ok||t|1
randread|io_uring_sqpoll|failed|SIGSEGV in randread/io_uring_sqpoll (repeat 2 of 3)|t|0"
check_eq "the run's figures list it" \
	"$(q <<<"SELECT failed FROM run_figures WHERE run_id = '$F'")" \
	"{randread/io_uring_sqpoll}"
O=$(uuid)
check_eq "zsend: a report with a sample out of bounds is REJECTED, naming it" \
	"$(zs a1 --report "oob:$O")" \
	"ack REJECTED $O benchmarks[0] false_sharing/shared: ns_per_increment: sample 1 is 1.84467e+19 ns, longer than its 0.5 s window"
check_eq "and nothing of it is stored" "$(q <<-EOF
	SELECT (SELECT count(*) FROM runs WHERE run_id = '$O'),
	       (SELECT count(*) FROM bench_results WHERE run_id = '$O')
EOF
)" "0|0"

# --- several reports at once: one the database refuses --------------------

# a constraint for the test: what codec validation passes but SQL refuses
q <<<"ALTER TABLE runs ADD CONSTRAINT test_refuse CHECK (hostname <> 'refuse-me')"
G1=$(uuid) G2=$(uuid) G3=$(uuid)
zs a1 --report "$G1" --report "refuse:$G2" --report "$G3" >"$tmp/group.out"
# the collector freed the others' parameters once libpq had them: it
# cannot send them again itself, their agents do
check_eq "reports sent together are answered each: the refused one REJECTED, the rest of its batch RETRY_LATER" \
	"$(cut -d' ' -f1-3 "$tmp/group.out" | sort -k3)" \
	"$(printf 'ack %s %s\n' RETRY_LATER "$G1" REJECTED "$G2" RETRY_LATER "$G3" |
		sort -k3)"
check_has "the database's reason comes back" "$tmp/group.out" \
	"ack REJECTED $G2 new row for relation \"runs\" violates check constraint \"test_refuse\""
check_has "the others are told why" "$tmp/group.out" \
	"ack RETRY_LATER $G1 not stored: the database refused another report of its batch; send again"
check_eq "nothing of that batch is stored" \
	"$(q <<<"SELECT count(*) FROM runs WHERE run_id IN ('$G1', '$G2', '$G3')")" "0"
zs a1 --report "$G1" --report "$G3" >"$tmp/group.out"
check_eq "sent again, the others are COMMITTED" \
	"$(cut -d' ' -f1-3 "$tmp/group.out" | sort -k3)" \
	"$(printf 'ack %s %s\n' COMMITTED "$G1" COMMITTED "$G3" | sort -k3)"
check_eq "the refused one is not stored, the others are" "$(q <<-EOF
	SELECT count(*) FILTER (WHERE run_id IN ('$G1', '$G3')),
	       count(*) FILTER (WHERE run_id = '$G2')
	FROM runs
EOF
)" "2|0"
q <<<"ALTER TABLE runs DROP CONSTRAINT test_refuse"

# --- a COMMIT whose outcome is unknown is not acknowledged ---------------

# a deferred trigger that kills the collector's session inside COMMIT
q <<-'EOF'
	CREATE FUNCTION test_die() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		PERFORM pg_terminate_backend(pg_backend_pid());
		RETURN NULL;
	END $$;
	CREATE CONSTRAINT TRIGGER test_die AFTER INSERT ON runs
		DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
		WHEN (NEW.hostname = 'refuse-me') EXECUTE FUNCTION test_die();
EOF
K=$(uuid)
out=$(zs a1 --report "refuse:$K")
check_eq "a report whose COMMIT broke the connection gets no answer" \
	"$?|$out" "3|timeout: no answer within $((2000 * slow)) ms"
check_grep "the collector says it left it unacknowledged" "$log" \
	"COMMIT outcome unknown.*: 1 reports left unacknowledged"
q <<<"DROP TRIGGER test_die ON runs; DROP FUNCTION test_die()"
check_eq "sent again, it is COMMITTED (it had not been stored)" \
	"$(zs a1 --report "refuse:$K")" "ack COMMITTED $K "

# --- malformed and oversized ---------------------------------------------

check_match "garbage is REJECTED" "$(zs a1 --bytes 100)" \
	"ack REJECTED - not a Report*"
check_match "an invalid report is REJECTED with the reason" \
	"$(zs a1 --report not-a-uuid)" "ack REJECTED - run_id*"
check_eq "an empty message is REJECTED" "$(zs a1 --bytes 0)" \
	"ack REJECTED - malformed framing: empty message"
check_eq "a two-frame message is REJECTED" "$(zs a1 --report "$(uuid)" \
	--frames 2)" "ack REJECTED - malformed framing: 2 frames, expected one"
out=$(zs a1 --bytes 5M)
check_eq "an oversized message gets no answer (the peer is dropped)" \
	"$?|$out" "3|timeout: no answer within $((2000 * slow)) ms"
if kill -0 "$pid" 2>/dev/null; then ok; else not_ok "the collector died"; fi
U=$(uuid)
check_eq "the collector still serves" "$(zs a1 --report "$U")" \
	"ack COMMITTED $U "
check_grep "rejections are logged" "$log" "rejected report .*not a Report"

# --- not allowed, plaintext ----------------------------------------------

U=$(uuid)
out=$(zs a4 --report "$U")
check_eq "an agent key not in the allowlist never connects" "$?|$out" \
	"3|timeout: no connection within $((2000 * slow)) ms"
check_has "the refusal is logged with a4's key" "$log" \
	"refused CURVE peer with key $(cat "$keys/a4.pub") from 127.0.0.1"
U2=$(uuid)
out=$("$ZSEND" --endpoint "$endpoint" --insecure --timeout $((2000 * slow)) \
	--report "$U2")
check_eq "a plaintext client never connects" "$?|$out" \
	"3|timeout: no connection within $((2000 * slow)) ms"
agent_run a4 p4 t4
check_eq "the agent with key a4 exits 3" "$?" 3
check_eq "nothing of theirs is stored" "$(q <<-EOF
	SELECT count(*) FROM runs
	WHERE run_id IN ('$U', '$U2') OR provider = 'p4'
EOF
)" 0

# --- PostgreSQL stopped and restarted under the collector -----------------

"$harness" stop "$tmp/pg" 2>/dev/null
check_match "zsend while PostgreSQL is down gets RETRY_LATER" \
	"$(zs a1 --report "$(uuid)")" "ack RETRY_LATER *"
agent_run a2 p6 t6
check_eq "an agent run while PostgreSQL is down exits 3" "$?" 3
check_eq "its report stays spooled" "$(spooled a2)" 1
if kill -0 "$pid" 2>/dev/null; then ok; else not_ok "the collector died"; fi
check_grep "the outage is logged" "$log" "PostgreSQL is unavailable"
"$harness" start "$tmp/pg" >/dev/null 2>&1
delivered() {
	agent a2 send >"$tmp/a2-send2.out" 2>&1
}
wait_for 30 delivered
check_eq "once PostgreSQL is back the spooled report is delivered" "$?" 0
check_eq "its spool is empty" "$(spooled a2)" 0
check_eq "it is stored once" "$(runs_of p6)" 1
check_grep "the recovery is logged" "$log" "connected to PostgreSQL again"

"$harness" restart "$tmp/pg" >/dev/null 2>&1
U=$(uuid)
committed() {
	[ "$(zs a1 --report "$U")" = "ack COMMITTED $U " ]
}
wait_for 30 committed
check_eq "after a restart while idle, a report is committed" "$?" 0
check_eq "it is stored" "$(q <<<"SELECT count(*) FROM runs WHERE run_id = '$U'")" 1

stop_collector
check_eq "the collector exits 0 at the end" "$?" 0
check_grep "it logs what it did" "$log" \
	"messages received [0-9]+: committed [0-9]+, duplicate [1-9]"

finish
