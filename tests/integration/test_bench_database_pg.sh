#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 15 item 5: the database benchmark against the real PostgreSQL 15 and
# pgbench of the Debian packages, at a small scale for a few seconds:
#  - end to end (--only database --with-database): each THP mode ok with
#    TPS > 0 and p50 <= p99 <= p99.9 in every repeat, the comparison
#    always/never, the THP mode as it was, nothing left in the work
#    directory or the spool;
#  - SIGTERM mid-run: exit 130, the THP mode back, nothing left;
#  - SIGKILL of the agent mid-run: its benchmark process tears down (its
#    PDEATHSIG), the THP mode back, nothing left;
#  - SIGKILL of the agent and its benchmark process at once: the THP mode
#    stays changed and the kept mode and directory stay until the next
#    start, which restores the mode and removes them;
#  - the benchmark's timeout (--bench-timeout): the agent kills its process
#    and restores the mode and removes the directory and the kept mode at
#    once, saying so in the failure;
#  - without --with-database: skipped, "not asked: --with-database"; not
#    root: refused; pgbench missing (--pg-bindir): skipped naming it.
# Root only (it changes the host's THP mode): as another user only the
# refusal is checked, then the test says it is skipped. It runs alone
# (RUN_SERIAL): other tests read the THP mode it changes.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_built "$AGENT"
tmp_new bench-db
chmod 0755 "$tmp"
work=$tmp/work spool=$tmp/spool
mkdir -m 0755 "$work"
thp=/sys/kernel/mm/transparent_hugepage/enabled
small=(--profile quick --only database --with-database --db-scale 2
	--db-rate 200 --repeats 2 --dir "$work" --spool-dir "$spool")

if [ "$(id -u)" -ne 0 ]; then
	"$AGENT" bench "${small[@]}" --db-seconds 1 >"$tmp/out" 2>"$tmp/err"
	check_eq "not root: refused" "$?" 1
	check_has "not root: says why" "$tmp/err" "needs root"
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ] || exit 1
	echo "skipped: the database benchmark changes the THP mode: run as root"
	exit 77
fi
if [ ! -w "$thp" ]; then
	echo "skipped: $thp is not writable (no THP in this kernel?)"
	exit 77
fi

mode() {
	sed 's/.*\[\(.*\)\].*/\1/' "$thp"
}
orig=$(mode)
agent_pid= child=
# shellcheck disable=SC2317 # called by the harness's trap
on_cleanup() {
	[ -n "$agent_pid" ] && kill -KILL "$agent_pid" 2>/dev/null
	[ -n "$child" ] && kill -KILL "$child" 2>/dev/null
	echo "$orig" >"$thp"
	# what a failed check left: a server in the work directory
	pkill -KILL -f "postgres -D $work/" 2>/dev/null
	sleep 0.2
}

# left NAME: the work directory and the spool hold nothing, no server of
# the work directory runs, and the THP mode is the original one
left() {
	check_eq "$1: THP enabled as it was" "$(mode)" "$orig"
	check_eq "$1: nothing left in the work directory" \
		"$(find "$work" -mindepth 1 | head -3)" ""
	check_eq "$1: nothing left in the spool" \
		"$(find "$spool" -mindepth 1 2>/dev/null | head -3)" ""
	check_eq "$1: no server left" \
		"$(pgrep -f "postgres -D $work/" | head -3)" ""
}

# the end-to-end run
"$AGENT" bench "${small[@]}" --db-seconds 2 --json >"$tmp/run.json" \
	2>"$tmp/run.err"
check_eq "run: exit 0" "$?" 0
facts=$(/usr/bin/python3 - "$tmp/run.json" <<-'EOF'
	import json, sys
	r = json.load(open(sys.argv[1]))
	res = {b["variant"]: b for b in r["benchmarks"]
	       if b["benchmark"] == "database"}
	print("variants", sorted(res) == ["thp_always", "thp_madvise", "thp_never"])
	for v, b in sorted(res.items()):
	    m = {x["metric"]: x["samples"] for x in b.get("metrics", [])}
	    p = {x["key"]: x for x in b.get("parameters", [])}
	    ok = ("failure" not in b and "skip_reason" not in b
	          and len(m.get("tps", [])) == 2 and len(b["windows"]) == 2
	          and all(t > 0 for t in m["tps"])
	          and all(a <= c <= d and a > 0 for a, c, d in zip(
	              m["latency_p50_ms"], m["latency_p99_ms"],
	              m["latency_p999_ms"])))
	    print(v, ok, b.get("failure", ""), b.get("skip_reason", ""))
	    print(v + "_params", p["thp_mode"]["string_value"] == v[4:]
	          and p["db_scale"]["int_value"] == 2
	          and int(p["llc_bytes"]["int_value"]) > 0
	          and int(p["db_bytes"]["int_value"]) > 0)
	c = [c for c in r["comparisons"] if c["name"] == "db_p99_always_vs_never"]
	print("compared", len(c) == 1 and c[0].get("ratio", 0) > 0)
	print("method", r["method"]["key"], r["method"]["with_database"],
	      r["method"]["db_seconds"])
	print("figures", "; ".join("%s p99 %s ms" % (v, [round(x, 2) for x in {
	    x["metric"]: x["samples"] for x in res[v].get("metrics", [])}.get(
	    "latency_p99_ms", [])]) for v in sorted(res)))
EOF
)
check_eq "run: three variants" "$(sed -n 's/^variants //p' <<<"$facts")" True
for v in thp_never thp_madvise thp_always; do
	check_match "run: $v ok, TPS > 0, p50 <= p99 <= p99.9" \
		"$(sed -n "s/^$v //p" <<<"$facts")" "True*"
	check_eq "run: $v's parameters" \
		"$(sed -n "s/^${v}_params //p" <<<"$facts")" True
done
check_eq "run: the comparison always/never" \
	"$(sed -n 's/^compared //p' <<<"$facts")" True
check_eq "run: the method says so" "$(sed -n 's/^method //p' <<<"$facts")" \
	"quick+repeats=2+with_database=1+db_scale=2+db_rate=200+db_seconds=2+only=database True 2"
sed -n 's/^figures /figures: /p' <<<"$facts"
left run

# not asked: skipped with the reason
"$AGENT" bench --profile quick --only database --dir "$work" \
	--spool-dir "$spool" --json >"$tmp/skip.json" 2>"$tmp/skip.err"
check_eq "not asked: exit 0" "$?" 0
check_eq "not asked: every variant skipped with the reason" \
	"$(jq -r '[.benchmarks[] | .skip_reason] | unique | join(",")' \
		"$tmp/skip.json")" "not asked: --with-database"

# not root: refused
as_user nobody "$AGENT" bench "${small[@]}" --db-seconds 1 \
	>"$tmp/nobody.out" 2>"$tmp/nobody.err"
check_eq "not root: refused" "$?" 1
check_has "not root: says why" "$tmp/nobody.err" "needs root"

# pgbench missing: skipped naming it
mkdir "$tmp/bin"
ln -s "$PG_BINDIR/initdb" "$PG_BINDIR/postgres" "$tmp/bin/"
"$AGENT" bench "${small[@]}" --db-seconds 1 --pg-bindir "$tmp/bin" --json \
	>"$tmp/missing.json" 2>"$tmp/missing.err"
check_eq "no pgbench: exit 0" "$?" 0
check_eq "no pgbench: skipped naming it" \
	"$(jq -r '[.benchmarks[] | .skip_reason] | unique | join(",")' \
		"$tmp/missing.json")" "pgbench not found in $tmp/bin"
left "no pgbench"

# start NAME: the agent in the background, measuring (a pgbench window
# under a mode other than the original); sets agent_pid and child
start() {
	"$AGENT" bench "${small[@]}" --repeats 3 --db-seconds 4 --json \
		>"$tmp/$1.json" 2>"$tmp/$1.err" &
	agent_pid=$!
	child=
	measuring() {
		[ "$(mode)" != "$orig" ] &&
			compgen -G "$work/fleetbench-db-*/lat-*.out" >/dev/null
	}
	if ! wait_for 120 measuring; then
		not_ok "$1: the agent did not reach a measured window: $(tail -n 3 "$tmp/$1.err")"
	fi
	child=$(pgrep -P "$agent_pid" -x fb-database)
}

# SIGTERM mid-run
start term
kill -TERM "$agent_pid"
wait "$agent_pid"
check_eq "SIGTERM: exit 130" "$?" 130
agent_pid=
left SIGTERM

# SIGKILL of the agent mid-run: its benchmark process tears down
start kill
kill -KILL "$agent_pid"
wait "$agent_pid" 2>/dev/null
agent_pid=
wait_for 30 bash -c "! kill -0 $child" ||
	not_ok "SIGKILL: the benchmark process $child did not end"
left "SIGKILL of the agent"

# SIGKILL of the agent and its benchmark process: the next start restores
start kill2
changed=$(mode)
# stopped first, so neither sees the other die and cleans up
kill -STOP "$agent_pid" "$child"
kill -KILL "$agent_pid" "$child"
wait "$agent_pid" 2>/dev/null
agent_pid= child=
gone() {
	! pgrep -f "postgres -D $work/" >/dev/null
}
wait_for 30 gone || not_ok "SIGKILL of both: the server outlived them (PDEATHSIG)"
check_eq "SIGKILL of both: THP enabled stays changed" "$(mode)" "$changed"
check_eq "SIGKILL of both: the spool keeps the mode before, the one left" \
	"$(awk '{ print $1, ($2 == "'"$changed"'" || $3 == "'"$changed"'") }' \
		"$spool/thp-restore")" "$orig 1"
check_eq "SIGKILL of both: the directory left until the next start" \
	"$(find "$work" -maxdepth 1 -name 'fleetbench-db-*' | wc -l)" 1
"$AGENT" bench --profile quick --only database --dir "$work" \
	--spool-dir "$spool" >"$tmp/next.out" 2>"$tmp/next.err"
check_eq "next start: exit 0" "$?" 0
check_has "next start: says it restored the mode" "$tmp/next.err" \
	"THP enabled restored to '$orig'"
check_has "next start: says it removed the directory" "$tmp/next.err" \
	"removed 1 PostgreSQL directory"
left "SIGKILL of both, then the next start"

# the benchmark's own timeout: the driver kills its process mid-run and
# cleans up at once, the directory and the kept mode too
"$AGENT" bench "${small[@]}" --repeats 3 --db-seconds 4 --bench-timeout 8 \
	--json >"$tmp/timeout.json" 2>"$tmp/timeout.err"
check_eq "timeout: exit 4, the report printed with the failure" "$?" 4
check_eq "timeout: every variant failed, timed out, and the clean-up said" \
	"$(jq -r '[.benchmarks[] | select(.benchmark == "database") | .failure
		   | test("timed out after 8 s in database.*; removed 1 PostgreSQL directory")]
		  | unique | join(",")' "$tmp/timeout.json")" true
left "timeout"

finish
