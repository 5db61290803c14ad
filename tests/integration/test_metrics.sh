#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The collector's /metrics (docs/operations.md, "Metrics (Prometheus)"):
# the fleet fixture (fleet_load) delivered to a collector serving metrics
# on a free loopback port, then the real Prometheus scraping it every
# second; the values read back through Prometheus' HTTP API agree with the
# database (reports committed and runs stored, a figure's gauge and its
# median in fleet_summary, the groups and the bound on them), promtool
# accepts the text format, OpenMetrics is served when asked for (ending
# in # EOF), label values are escaped, and a bad metrics_listen or a port
# in use is refused with an error naming the setting.
#
# Environment: SOURCE_DIR, BUILD_DIR, PG_BINDIR; fleet_load's COLLECTOR,
# AGENT and FLEETGEN; PROMETHEUS and PROMTOOL (default /usr/bin's).
set -uo pipefail

# a server of its own (lib.sh): it stops PostgreSQL under the collector
# shellcheck disable=SC2034 # read by lib.sh
own_server=1

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PROMETHEUS=${PROMETHEUS:-/usr/bin/prometheus}
PROMTOOL=${PROMTOOL:-/usr/bin/promtool}
PYTHON=/usr/bin/python3
require_built "$COLLECTOR" "$AGENT" "$ZSEND" "$PROMETHEUS" "$PROMTOOL" \
	"$PYTHON"

tmp_new metrics
trap 'exit 1' INT TERM HUP
prom_pid=
# shellcheck disable=SC2317 # called by the harness at exit
on_cleanup() {
	if [ -n "$prom_pid" ]; then
		kill -TERM "$prom_pid" 2>/dev/null
		wait "$prom_pid" 2>/dev/null
	fi
}

# ---- a bad metrics_listen is refused before anything starts ----

# refused NAME VALUE MESSAGE [SERVE ARGS]: serve with --metrics-listen
# VALUE exits 1 with an error naming the setting and MESSAGE
refused() {
	local name=$1 value=$2 msg=$3 status

	shift 3
	"$COLLECTOR" serve --insecure --dsn 'host=/nonexistent' \
		--metrics-listen "$value" "$@" >"$tmp/bad.out" 2>&1
	status=$?
	check_eq "$name: exit status" "$status" 1
	check_has "$name: names the setting" "$tmp/bad.out" \
		"metrics_listen (--metrics-listen): "
	check_has "$name: says why" "$tmp/bad.out" "$msg"
}
refused "no port" 127.0.0.1 "'127.0.0.1' is not HOST:PORT"
refused "port out of range" 127.0.0.1:65536 \
	"the port '65536' is not a number from 0 to 65535"
refused "port not a number" localhost:http \
	"the port 'http' is not a number from 0 to 65535"
refused "no host" :9477 "has no host"
refused "bare IPv6" ::1:9477 "an IPv6 address is written [ADDRESS]:PORT"
printf '[collector]\nmetrics_listen = 127.0.0.1:-1\n' >"$tmp/bad.conf"
"$COLLECTOR" serve --insecure --config "$tmp/bad.conf" \
	--dsn 'host=/nonexistent' >"$tmp/bad.out" 2>&1
check_eq "config file: exit status" "$?" 1
check_has "config file: names the setting" "$tmp/bad.out" \
	"metrics_listen (--metrics-listen): '127.0.0.1:-1': the port '-1'"

# ---- the fleet, delivered to a collector serving /metrics ----

# 10 of the fixture's 14 groups (7 instance types, 2 kernels each), and
# the escaped one below: the cut is seen
fleet_serve_args=(--metrics-listen 127.0.0.1:0 --metrics-max-groups 10)
fleet_load
mport=$(sed -n 's|.*metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics.*|\1|p' \
	"$fleet_log")
check_match "the port bound is logged" "$mport" '[1-9]*'
url=http://127.0.0.1:$mport/metrics

# a run whose provider needs escaping in a label value: a quote, a
# backslash and a newline. Labels refuse control characters since issue
# 38, so the newline is what a database stored before holds: put there
# by hand after the run
weird=$'we"ird\\provider\nline2'
keys=$fleet_keys endpoint=$fleet_endpoint
agent_run agent "${weird%%$'\n'*}" esc.large ||
	not_ok "the run with an odd provider: $(tail -n 5 "$tmp/agent.out")"
"$PG_BINDIR/psql" "$conninfo" -X -q -v ON_ERROR_STOP=1 -v p="$weird" \
	<<<"UPDATE runs SET provider = :'p' WHERE instance_type = 'esc.large';
UPDATE run_figures SET provider = :'p' WHERE instance_type = 'esc.large'" ||
	not_ok "the newline put in the odd provider by hand"

# answers of each kind, counted by reason below (zsend, as
# test_collector.sh): a report the database refuses, garbage, an empty
# message, two frames, a duplicate, and a peer whose key is not allowed
q <<<"ALTER TABLE runs ADD CONSTRAINT test_refuse CHECK (hostname <> 'refuse-me')"
R=$(uuid) D=$(uuid)
check_match "the database refuses one" "$(zs agent --report "refuse:$R")" \
	"ack REJECTED $R *test_refuse*"
q <<<"ALTER TABLE runs DROP CONSTRAINT test_refuse"
check_match "garbage" "$(zs agent --bytes 100)" "ack REJECTED - not a Report*"
check_match "an empty message" "$(zs agent --bytes 0)" \
	"ack REJECTED - malformed framing*"
check_match "two frames" "$(zs agent --report "$(uuid)" --frames 2)" \
	"ack REJECTED - malformed framing*"
check_eq "a report" "$(zs agent --report "$D")" "ack COMMITTED $D "
check_eq "sent again" "$(zs agent --report "$D")" "ack DUPLICATE $D "
"$COLLECTOR" keygen --dir "$keys" --name stranger >/dev/null
zs stranger --report "$(uuid)" >/dev/null 2>&1
check_eq "a stranger gets no answer" "$?" 3

# ---- what the collector serves ----

curl -sS -D "$tmp/text.headers" -o "$tmp/text.prom" "$url" ||
	not_ok "curl $url"
check_grep "text format's content type" "$tmp/text.headers" \
	'^Content-Type: text/plain; version=0\.0\.4'
if "$PROMTOOL" check metrics <"$tmp/text.prom" >"$tmp/promtool.out" 2>&1; then
	ok
else
	not_ok "promtool check metrics: $(head -n 20 "$tmp/promtool.out")"
fi
check_grep "counters end in _total in the text format" "$tmp/text.prom" \
	'^# TYPE fleetbench_collector_reports_committed_total counter$'
check_grep "the escaped label value" "$tmp/text.prom" \
	'^fleetbench_fleet_runs\{provider="we\\"ird\\\\provider\\nline2",instance_type="esc\.large",'
if grep -q '# EOF' "$tmp/text.prom"; then
	not_ok "the text format has no # EOF"
else
	ok
fi

curl -sS -D "$tmp/om.headers" -o "$tmp/om.prom" \
	-H 'Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5' \
	"$url" || not_ok "curl $url (OpenMetrics)"
check_grep "OpenMetrics' content type" "$tmp/om.headers" \
	'^Content-Type: application/openmetrics-text; version=1\.0\.0'
check_eq "OpenMetrics ends in # EOF" "$(tail -n 1 "$tmp/om.prom")" "# EOF"
check_grep "an OpenMetrics counter's family has no _total" "$tmp/om.prom" \
	'^# TYPE fleetbench_collector_reports_committed counter$'
check_grep "an OpenMetrics counter's sample has _total" "$tmp/om.prom" \
	'^fleetbench_collector_reports_committed_total [0-9]+$'

curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mport/other" \
	>"$tmp/404" 2>&1
check_eq "another path is not found" "$(cat "$tmp/404")" 404
curl -sS -o /dev/null -w '%{http_code} %header{allow}' -X POST \
	--data x "http://127.0.0.1:$mport/metrics" >"$tmp/405" 2>&1
check_eq "POST is refused, naming what is allowed" "$(cat "$tmp/405")" \
	"405 GET, HEAD"
# bytes that are not HTTP, the connection left open: another client is
# still served (the idle timeout, 10 s, closes that one)
"$PYTHON" - "$mport" >"$tmp/garbage" 2>&1 <<-'EOF' &
	import socket, sys, time
	s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
	s.sendall(b"\x00\xffNOT HTTP AT ALL\r\n\r\n")
	try:
	    print((s.recv(100).split(b"\r\n")[0] or b"closed").decode())
	except TimeoutError:
	    print("no answer")
EOF
garbage=$!
sleep 0.5
check_eq "beside bytes that are not HTTP, a scrape is served" \
	"$(curl -sS -o /dev/null -w '%{http_code}' "$url")" 200
wait "$garbage"
echo "# bytes that are not HTTP: $(cat "$tmp/garbage")"

# a second collector on the same port: a clear start-up error
"$COLLECTOR" serve --schema-dir "$SOURCE_DIR/schema" --dsn "$conninfo" \
	--bind 'tcp://127.0.0.1:*' --insecure \
	--metrics-listen "127.0.0.1:$mport" >"$tmp/inuse.out" 2>&1
check_eq "port in use: exit status" "$?" 1
check_has "port in use: names the setting and the error" "$tmp/inuse.out" \
	"metrics_listen (--metrics-listen): cannot listen on 127.0.0.1:$mport: Address already in use"

# ---- Prometheus scrapes it ----

pport=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: fleetbench
    static_configs:
      - targets: ['127.0.0.1:$mport']
EOF
"$PROMETHEUS" --config.file="$tmp/prometheus.yml" \
	--storage.tsdb.path="$tmp/prom-data" \
	--web.listen-address="127.0.0.1:$pport" >"$tmp/prometheus.log" 2>&1 &
prom_pid=$!

# promq EXPR: each result of an instant query, one line each: its labels
# (provider, instance_type, kernel, method; tab-separated, escapes as
# Python writes them) then its value
promq() {
	curl -sS -G --data-urlencode "query=$1" \
		"http://127.0.0.1:$pport/api/v1/query" |
		"$PYTHON" -c '
import json, sys
d = json.load(sys.stdin)
assert d["status"] == "success", d
for r in d["data"]["result"]:
    m = r["metric"]
    print("\t".join([repr(m.get(k, "")) for k in
                     ("provider", "instance_type", "kernel", "method")]
                    + [r["value"][1]]))
'
}

# value EXPR: the value of the query's first result
value() {
	promq "$1" | sed -n 1p | cut -f 5
}

# shellcheck disable=SC2317 # called by wait_for
scraped() {
	[ "$(value 'up{job="fleetbench"}')" = 1 ] &&
		[ -n "$(value fleetbench_fleet_groups)" ]
}
if ! wait_for 60 scraped; then
	not_ok "Prometheus did not scrape the collector: $(tail -n 5 "$tmp/prometheus.log")"
	finish
fi

runs=$(q <<<"SELECT count(*) FROM runs")
check_eq "committed == runs stored" \
	"$(value fleetbench_collector_reports_committed_total)" "$runs"
check_eq "received: runs stored, the 4 rejected and the duplicate" \
	"$(value fleetbench_collector_reports_received_total)" $((runs + 5))
check_eq "one duplicate" \
	"$(value fleetbench_collector_reports_duplicate_total)" 1
for reason in framing:2 invalid:1 range:0 database:1; do
	check_eq "rejected, reason ${reason%:*}" "$(value \
		"fleetbench_collector_reports_rejected_total{reason=\"${reason%:*}\"}")" \
		"${reason#*:}"
done
check_match "the stranger's handshakes refused" \
	"$(value 'fleetbench_collector_refused_total{reason="peer"}')" '[1-9]*'
check_eq "reports per transaction: those stored, the duplicate, the refused" \
	"$(value fleetbench_collector_batch_size_sum)" $((runs + 2))
check_eq "each committed batch timed (the refused one rolled back)" \
	"$(value fleetbench_collector_commit_seconds_count)" \
	"$(($(value fleetbench_collector_batch_size_count) - 1))"
check_eq "both database connections up" \
	"$(value fleetbench_collector_db_connections_up)" 2
check_match "agents' handshakes counted" \
	"$(value fleetbench_collector_peers_accepted_total)" '[1-9]*'
check_eq "the fleet's figures were read" "$(value fleetbench_fleet_up)" 1

groups=$(q <<<"SELECT count(*) FROM fleet_summary WHERE level = 3")
check_eq "groups: those of fleet_summary" \
	"$(value fleetbench_fleet_groups)" "$groups"
check_eq "the fixture's 14 groups, the odd one and zsend's" "$groups" 16
check_eq "groups exported: metrics_max_groups" \
	"$(value fleetbench_fleet_groups_exported)" 10
check_eq "series of runs: metrics_max_groups" \
	"$(value 'count(fleetbench_fleet_runs)')" 10
check_eq "the escaped provider read back by Prometheus" \
	"$(promq 'fleetbench_fleet_runs{instance_type="esc.large"}' | cut -f 1,5)" \
	"$(printf '%s\t1' "$("$PYTHON" -c 'import sys; print(repr(sys.argv[1]))' "$weird")")"

# every declared figure that a group measured is exported: SQPOLL's gain,
# declared after the others (issue 37), too
promq 'fleetbench_fleet_figure{figure="sqpoll_vs_iouring"}' >"$tmp/sqpoll.tsv"
check_eq "SQPOLL's gain has series" "$(($(wc -l <"$tmp/sqpoll.tsv") > 0))" 1
while IFS=$'\t' read -r p t k m v; do
	check_eq "SQPOLL's gain of $p $t $k $m: the group's median" \
		"$(q <<<"SELECT median = $v FROM fleet_summary_figures
			 WHERE level = 3 AND figure = 'sqpoll_vs_iouring' AND NOT per_vcpu
			   AND provider = $p AND instance_type = $t AND kernel = $k
			   AND method = $m")" t
done <"$tmp/sqpoll.tsv"
# figure gauges against fleet_summary: every exported thp_speedup
promq 'fleetbench_fleet_figure{figure="thp_speedup",instance_type!="esc.large"}' >"$tmp/thp.tsv"
check_match "thp_speedup series" "$(wc -l <"$tmp/thp.tsv")" '[1-9]*'
while IFS=$'\t' read -r p t k m v; do
	want=$(q <<-EOF
		SELECT (figures[(SELECT id FROM figures WHERE name = 'thp_speedup')]).median FROM fleet_summary
		WHERE level = 3 AND provider = $p AND instance_type = $t
		  AND kernel = $k AND method = $m
	EOF
	)
	if "$PYTHON" -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(abs(a - b) > 1e-12 * max(1, abs(b)))' "$v" "$want" 2>/dev/null; then
		ok
	else
		not_ok "thp_speedup of $p $t $k $m: Prometheus $v, fleet_summary '$want'"
	fi
done <"$tmp/thp.tsv"
runs_group=$(promq 'fleetbench_fleet_runs{instance_type!="esc.large"}' | sed -n 1p)
IFS=$'\t' read -r p t k m v <<<"$runs_group"
check_eq "a group's runs gauge == fleet_summary.runs" "$v" \
	"$(q <<<"SELECT runs FROM fleet_summary WHERE level = 3 AND provider = $p AND instance_type = $t AND kernel = $k AND method = $m")"

# ---- slow clients: 500 connections sending a header byte a second ----

# from 10 source addresses (127.0.0.2-11; Prometheus scrapes from
# 127.0.0.1), for 17 s: more than the 15 s a request has (metrics.c)
"$PYTHON" "$SOURCE_DIR/tests/integration/slow_clients.py" 127.0.0.1 "$mport" \
	17 500 10 >"$tmp/slow.out" 2>&1 || not_ok "slow_clients.py: $(cat "$tmp/slow.out")"
echo "# slow clients: $(cat "$tmp/slow.out")"
# fig NAME: a figure of slow_clients.py's line
fig() {
	sed -n "s/.* \?$1=\([0-9.]*\).*/\1/p" "$tmp/slow.out"
}
check_match "slow clients: at most 4 held from one address" \
	"$(fig held_max)" '[1-4]'
check_match "slow clients: the rest refused at once" "$(fig refused)" \
	'[1-9][0-9][0-9]*'
check_match "slow clients: those held were cut" "$(fig cut)" '[1-9][0-9]*'
if "$PYTHON" -c 'import sys; sys.exit(not float(sys.argv[1]) < 17)' \
	"$(fig longest)"; then
	ok
else
	not_ok "slow clients: a connection held $(fig longest) s, over the 15 s a request has"
fi
check_eq "Prometheus's scrapes meanwhile: none failed" \
	"$(value 'min_over_time(up{job="fleetbench"}[17s])')" 1
scrapes=$(value 'count_over_time(up{job="fleetbench"}[17s])')
if [ "${scrapes:-0}" -ge 13 ]; then
	ok
else
	not_ok "Prometheus scraped $scrapes times in the 17 s, not each second"
fi
check_match "the cut connections counted" \
	"$(value fleetbench_collector_metrics_connections_cut_total)" \
	'[1-9][0-9]*'

# ---- PostgreSQL gone: the health is still served, the fleet is not ----

"$harness" stop "$pg_dir" >/dev/null 2>&1 || not_ok "stopping PostgreSQL"
# shellcheck disable=SC2317 # called by wait_for
db_down() {
	curl -sS -o "$tmp/down.prom" "$url" &&
		grep -qx 'fleetbench_collector_db_connections_up 0' "$tmp/down.prom"
}
wait_for 20 db_down ||
	not_ok "the connections were not seen down: $(grep db_connections_up "$tmp/down.prom")"
check_has "the fleet's figures could not be read" "$tmp/down.prom" \
	"fleetbench_fleet_up 0"
if grep -q '^fleetbench_fleet_\(figure\|runs\|groups\)' "$tmp/down.prom"; then
	not_ok "fleet series served without the database"
else
	ok
fi
check_grep "the health is still served" "$tmp/down.prom" \
	"^fleetbench_collector_reports_committed_total $runs\$"
if "$PROMTOOL" check metrics <"$tmp/down.prom" >"$tmp/promtool.out" 2>&1; then
	ok
else
	not_ok "promtool check metrics, database down: $(head -n 20 "$tmp/promtool.out")"
fi

finish
