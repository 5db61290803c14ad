#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fleet alerts pushed to the real Prometheus Alertmanager (Debian's
# prometheus-alertmanager, on loopback): the collector's alertmanager_url
# push thread (collector/am_push.c) and `fleetbench alerts push`
# (cli/alerts_push.c), both through common/alertmanager.c and
# fleetbench_alertmanager_alerts() (schema/functions/55_alertmanager.sql).
# Alerts are raised as test_alerts.sh raises them, by a kernel upgrade that
# denies SQPOLL; what Alertmanager shows (GET /api/v2/alerts) is compared
# with psql's alert_summary row; an acknowledged alert is resolved there;
# bad URLs are refused, an Alertmanager that is down or mute is a clear
# error. docs/alerts.md, "Alertmanager".
#
# Environment: SOURCE_DIR, BUILD_DIR, COLLECTOR, FLEETBENCH (the binaries,
# default under BUILD_DIR), PG_BINDIR, ALERTMANAGER (default
# /usr/bin/prometheus-alertmanager).
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD_DIR=${BUILD_DIR:-$SOURCE_DIR/build}
COLLECTOR=${COLLECTOR:-$BUILD_DIR/collector/fleetbench-collector}
FLEETBENCH=${FLEETBENCH:-$BUILD_DIR/cli/fleetbench}
ALERTMANAGER=${ALERTMANAGER:-/usr/bin/prometheus-alertmanager}
fixtures=$SOURCE_DIR/tests/fixtures/reports

require_built "$COLLECTOR" "$FLEETBENCH" "$ALERTMANAGER"
for tool in curl jq python3; do
	command -v "$tool" >/dev/null || {
		not_ok "'$tool' is not installed (scripts/deps)"
		finish
	}
done

am_pids=()
mute_pid=
# shellcheck disable=SC2317 # called at exit by lib.sh
on_cleanup() {
	local p

	for p in "${am_pids[@]}" $mute_pid; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
}
tmp_new alertmanager
# the harness runs PostgreSQL as another user when we are root
chmod 0755 "$tmp"
pg_start "$tmp/pg"
export FLEETBENCH_DSN=$conninfo

# q: runs SQL from stdin, prints unaligned rows
q() {
	"$PG_BINDIR/psql" "$conninfo" -X -q -A -t -P null=NULL \
		-v ON_ERROR_STOP=1 "$@"
}

"$COLLECTOR" migrate --schema-dir "$SOURCE_DIR/schema" --dsn "$conninfo" \
	>"$tmp/migrate.out" 2>&1
check_grep "migrate applies the function files" "$tmp/migrate.out" \
	'55_alertmanager'

# free_port: a TCP port of 127.0.0.1 that nothing listens on now
free_port() {
	/usr/bin/python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# am_start NAME: a real Alertmanager with a null receiver, its data under
# $tmp/NAME, gossip off; sets am to its base URL
cat >"$tmp/am.yml" <<'EOF'
route:
  receiver: "null"
receivers:
  - name: "null"
EOF
am_start() {
	local port

	port=$(free_port)
	mkdir -p "$tmp/$1"
	"$ALERTMANAGER" --config.file="$tmp/am.yml" \
		--storage.path="$tmp/$1" \
		--web.listen-address="127.0.0.1:$port" \
		--cluster.listen-address= >"$tmp/$1.log" 2>&1 &
	am_pids+=("$!")
	am=http://127.0.0.1:$port
	if ! wait_for 30 curl -sf "$am/-/ready" -o /dev/null; then
		not_ok "Alertmanager did not start: $(tail -n 5 "$tmp/$1.log")"
		finish
	fi
}

# am_alerts URL: the active alerts Alertmanager has, one line each: id,
# alertname, kind, provider, instance_type, kernel, previous_kernel,
# summary, hosts, previous_kernels, state, sorted
am_alerts() {
	curl -sf "$1/api/v2/alerts?active=true" | jq -r '
		.[] | [.labels.fleetbench_alert_id, .labels.alertname,
		       .labels.kind, .labels.provider, .labels.instance_type,
		       .labels.kernel, .labels.previous_kernel,
		       .annotations.summary, .annotations.hosts,
		       .annotations.previous_kernels, .status.state]
		    | join("|")' | sort
}

# expected [WHERE]: the same from psql's alert_summary, open alerts
expected() {
	q <<-EOF
		SELECT concat_ws('|', id,
			CASE kind WHEN 'fingerprint'
			     THEN 'FleetbenchIoUringFingerprintChanged'
			     ELSE 'FleetbenchGainChanged' END,
			kind, provider, instance_type, new_kernel,
			(SELECT old_kernel FROM alerts
			 WHERE fleet_alert_id = s.id ORDER BY id LIMIT 1),
			summary, hosts, array_to_string(old_kernels, ' '),
			'active')
		FROM alert_summary AS s
		WHERE acknowledged_at IS NULL
		ORDER BY 1
	EOF
}

# run HOST PROVIDER TYPE KERNEL MINUTE SQPOLL: stores report B as a run of
# HOST on KERNEL, MINUTE minutes after 2024-11-25 09:00, through
# `fleetbench-collector load`, in its own transaction
nrun=0
run() {
	local out

	nrun=$((nrun + 1))
	out=$(q -v b="$(cat "$fixtures/aws-m5.large-b.json")" <<-EOF | load_one
		SELECT jsonb_set(jsonb_set(jsonb_set(jsonb_set(
		       jsonb_set(jsonb_set(jsonb_set(jsonb_set(jsonb_set(:'b',
			'{run_id}', to_jsonb('$(printf '00000000-0000-4000-8000-%012d' "$nrun")'::text)),
			'{host,machine_id}', to_jsonb(md5('$1'))),
			'{host,hostname}', to_jsonb('$1'::text)),
			'{host,provider}', to_jsonb('$2'::text)),
			'{host,instance_type}', to_jsonb('$3'::text)),
			'{kernel,release}', to_jsonb('$4'::text)),
			'{started_unix_ms}', to_jsonb(1732525200000 + $5 * 60000::bigint)),
			'{finished_unix_ms}', to_jsonb(1732525230000 + $5 * 60000::bigint)),
			'{probe,io_uring,sqpoll}', to_jsonb('$6'::text))
	EOF
	)
	[ "$out" = t ] || not_ok "run $1 $4 $5 not stored: $out"
}

# alert_of PROVIDER: the id of that provider's fleet alert
alert_of() {
	q <<<"SELECT id FROM fleet_alerts WHERE provider = '$1'"
}

# gone URL ID: Alertmanager's active alerts do not hold fleet alert ID
gone() {
	local active

	active=$(am_alerts "$1") || return 1
	! grep -q "^$2|" <<<"$active"
}

# count_is URL N: Alertmanager has N active alerts
count_is() {
	[ "$(am_alerts "$1" | grep -c .)" = "$2" ]
}

# received URL STATUS: how many alerts Alertmanager was sent with that
# status (firing or resolved) through API v2
received() {
	curl -sf "$1/metrics" |
		sed -n "s/^alertmanager_alerts_received_total{status=\"$2\",version=\"v2\"} //p"
}

# --- bad settings --------------------------------------------------------------

"$COLLECTOR" --help >"$tmp/help.out"
for opt in --alertmanager-url --alertmanager-interval --alertmanager-timeout; do
	check_grep "--help lists $opt" "$tmp/help.out" "^ +$opt "
done
for url in ftp://127.0.0.1:9093 127.0.0.1:9093 'http://127.0.0.1:9093/?x=1'; do
	"$COLLECTOR" serve --schema-dir "$SOURCE_DIR/schema" --dsn "$conninfo" \
		--insecure --bind 'tcp://127.0.0.1:*' --alertmanager-url "$url" \
		>"$tmp/bad.out" 2>&1
	check_eq "the collector refuses alertmanager_url '$url'" "$?" 1
	check_grep "saying why" "$tmp/bad.out" \
		"error: alertmanager_url: '${url//\?/\\?}' (is not an http:// or https:// URL|has a query)"
done
printf '[collector]\nalertmanager_interval_ms = 50\n' >"$tmp/range.conf"
"$COLLECTOR" serve -c "$tmp/range.conf" >"$tmp/range.out" 2>&1
check_eq "an out-of-range push interval exits 2" "$?" 2
check_grep "naming the key" "$tmp/range.out" \
	"collector.alertmanager_interval_ms: 50 is out of range"
"$FLEETBENCH" alerts push --alertmanager ftp://127.0.0.1:9093 \
	>"$tmp/bad.out" 2>&1
check_eq "the CLI refuses a URL that is not http(s)" "$?" 2
check_grep "saying why" "$tmp/bad.out" \
	"error: --alertmanager: 'ftp://127.0.0.1:9093' is not an http:// or https:// URL"
"$FLEETBENCH" alerts push >"$tmp/bad.out" 2>&1
check_eq "push without --alertmanager is a usage error" "$?" 2
check_grep "saying so" "$tmp/bad.out" "push needs --alertmanager URL"
"$FLEETBENCH" alerts --alertmanager http://127.0.0.1:9093 >"$tmp/bad.out" 2>&1
check_eq "--alertmanager without push is a usage error" "$?" 2

# --- alerts --------------------------------------------------------------------

# aws m5.large: SQPOLL denied on 6.8 for h1 and h2 (from 6.1 and 6.2)
run h1 aws m5.large 6.1 0 ok
run h2 aws m5.large 6.2 1 ok
run h1 aws m5.large 6.8 60 EPERM
run h2 aws m5.large 6.8 61 EPERM
aws=$(alert_of aws)
check_eq "one fleet alert of two hosts" \
	"$(q <<<"SELECT hosts, old_kernels::text FROM alert_summary WHERE id = $aws")" \
	"2|{6.1,6.2}"

# --- the collector's push ------------------------------------------------------

am_start am1
am1=$am
log=$tmp/serve.log
"$COLLECTOR" serve --schema-dir "$SOURCE_DIR/schema" --dsn "$conninfo" \
	--insecure --bind 'tcp://127.0.0.1:*' --alertmanager-url "$am1/" \
	--alertmanager-interval 500 2>"$log" &
pid=$!
wait_for 10 grep -q 'listening on' "$log" ||
	not_ok "the collector did not start: $(cat "$log")"
check_grep "the collector says where it pushes" "$log" \
	"alertmanager: pushing to $am1/ every 500 ms"
wait_for 10 count_is "$am1" 1
check_eq "the collector pushes the open alert" "$(am_alerts "$am1")" \
	"$(expected)"
check_eq "labelled by group, kernels and kind, the summary annotated" \
	"$(am_alerts "$am1")" \
	"$aws|FleetbenchIoUringFingerprintChanged|fingerprint|aws|m5.large|6.8|6.1|sqpoll ok -> EPERM|2|6.1 6.2|active"
check_eq "startsAt is when the alert was raised" \
	"$(curl -sf "$am1/api/v2/alerts" | jq -r '.[0].startsAt')" \
	"$(q <<<"SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') FROM fleet_alerts WHERE id = $aws")"
check_eq "the figures of each host are annotated" \
	"$(curl -sf "$am1/api/v2/alerts" | jq -r '.[0].annotations.host_alerts')" \
	"h1 6.1 -> 6.8: sqpoll ok -> EPERM
h2 6.2 -> 6.8: sqpoll ok -> EPERM"
# firing for four intervals (2 s) from the last push, then resolved by
# Alertmanager itself if no push renews it
ends=$(curl -sf "$am1/api/v2/alerts" | jq -r '.[0].endsAt | sub("\\.[0-9]+Z$"; "Z") | fromdate')
now=$(date +%s)
check_eq "endsAt is four intervals ahead (${ends}s, now ${now}s)" \
	"$([ "$ends" -ge "$now" ] && [ "$ends" -le $((now + 3)) ] && echo yes)" yes
sleep 3
check_eq "and renewed by the next pushes" "$(am_alerts "$am1")" "$(expected)"

# a new alert is pushed at once (NOTIFY): gcp n2-standard-2, SQPOLL denied
run g1 gcp n2-standard-2 5.15 2 ok
run g1 gcp n2-standard-2 6.2 62 EPERM
gcp=$(alert_of gcp)
wait_for 5 count_is "$am1" 2
check_eq "a new alert reaches Alertmanager" "$(am_alerts "$am1")" "$(expected)"

"$FLEETBENCH" alerts ack "$aws" >"$tmp/ack.out"
check_eq "fleetbench acknowledges the aws alert" "$?" 0
wait_for 5 gone "$am1" "$aws"
check_eq "the acknowledged alert is resolved in Alertmanager" "$?" 0
check_eq "the open one stays" "$(am_alerts "$am1")" "$(expected)"
# resolved by the push, not expired: Alertmanager was sent it resolved
check_match "Alertmanager received it resolved" "$(received "$am1" resolved)" \
	'[1-9]*'
check_grep "the collector logs what it pushed" "$log" \
	"alertmanager: pushed 1 firing and 1 resolved alert\(s\) to $am1/"

# an Alertmanager that goes away is logged, rate-limited, and the
# collector goes on
kill -TERM "${am_pids[0]}" && wait "${am_pids[0]}" 2>/dev/null
sleep 3
n=$(grep -c 'alertmanager: cannot push the alerts' "$log")
check_eq "a push that fails is logged once, not every 500 ms ($n)" "$n" 1
check_grep "saying why" "$log" \
	"alertmanager: cannot push the alerts: POST $am1//?api/v2/alerts: .*(refused|connect)"
kill -TERM "$pid"
wait "$pid"
check_eq "the collector with a push exits 0 on SIGTERM" "$?" 0
pid=

# --- fleetbench alerts push ----------------------------------------------------

am_start am2
"$FLEETBENCH" alerts push --alertmanager "$am" >"$tmp/push.out" 2>&1
check_eq "fleetbench alerts push exits 0" "$?" 0
check_eq "it says what it pushed (the aws alert was acknowledged)" \
	"$(cat "$tmp/push.out")" \
	"pushed 1 firing and 1 resolved alert(s) to $am"
check_eq "Alertmanager shows the open alert as psql does" \
	"$(am_alerts "$am")" "$(expected)"
check_eq "the gcp alert, labelled" "$(am_alerts "$am")" \
	"$gcp|FleetbenchIoUringFingerprintChanged|fingerprint|gcp|n2-standard-2|6.2|5.15|sqpoll ok -> EPERM|1|5.15|active"
check_eq "endsAt four default intervals (240 s) ahead" \
	"$(curl -sf "$am/api/v2/alerts" | jq -r '.[0].endsAt | sub("\\.[0-9]+Z$"; "Z") | fromdate - now | . > 200 and . <= 240')" \
	true
"$FLEETBENCH" alerts ack "$gcp" >/dev/null
"$FLEETBENCH" alerts push --alertmanager "$am" >"$tmp/push.out" 2>&1
check_eq "after ack, push resolves it" "$(cat "$tmp/push.out")" \
	"pushed 0 firing and 2 resolved alert(s) to $am"
check_eq "Alertmanager has no active alert left" "$(am_alerts "$am")" ""
check_eq "it received them: 1 firing, then 1 + 2 resolved" \
	"$(received "$am" firing) $(received "$am" resolved)" "1 3"
sleep 0.5
"$FLEETBENCH" alerts push --alertmanager "$am" --interval 100 >"$tmp/push.out" 2>&1
check_eq "acknowledgements older than four intervals (400 ms) are not sent" \
	"$(cat "$tmp/push.out")" "pushed 0 firing and 0 resolved alert(s) to $am"

# a gain alert, raised as fleetbench_alert_check() raises one (h2's runs
# 2 and 4: 6.2 -> 6.8), is labelled with its gain
q >/dev/null <<'EOF'
SELECT fleetbench_alert_raise(
	'00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000004',
	'gain', '{"iouring_vs_pread": {"before": 3.15, "after": 1.57, "change": -0.5,
		  "p": 0.0079, "u": 25, "alpha": 0.01, "min_change": 0.2,
		  "test": "Mann-Whitney U, exact"}}',
	'{"iouring_vs_pread": "decreased"}')
EOF
gain=$(q <<<"SELECT id FROM fleet_alerts WHERE kind = 'gain'")
"$FLEETBENCH" alerts push --alertmanager "$am" >"$tmp/push.out" 2>&1
check_eq "a gain alert is pushed" "$(cat "$tmp/push.out")" \
	"pushed 1 firing and 2 resolved alert(s) to $am"
check_eq "named for gains, with its gain and its figures" \
	"$(curl -sf "$am/api/v2/alerts" | jq -r '.[] | [.labels.fleetbench_alert_id,
		.labels.alertname, .labels.kind, .labels.figure,
		.labels.previous_kernel, .annotations.summary,
		.annotations.host_alerts] | join("|")')" \
	"$gain|FleetbenchGainChanged|gain|iouring_vs_pread|6.2|$(q <<<"SELECT summary FROM alert_summary WHERE id = $gain")|h2 6.2 -> 6.8: io_uring/pread gain 3.15 -> 1.57 (-50%, p = 0.0079)"

# errors: nothing listening, then a listener that never answers
port=$(free_port)
"$FLEETBENCH" alerts push --alertmanager "http://127.0.0.1:$port" \
	>"$tmp/down.out" 2>&1
check_eq "an Alertmanager that is down fails the push" "$?" 1
check_grep "with curl's reason" "$tmp/down.out" \
	"error: cannot push the alerts to Alertmanager: POST http://127.0.0.1:$port/api/v2/alerts: .*(refused|connect)"
/usr/bin/python3 -c 'import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
print(s.getsockname()[1], flush=True)
time.sleep(60)' >"$tmp/mute.port" &
mute_pid=$!
wait_for 5 test -s "$tmp/mute.port"
start=$(date +%s%N)
"$FLEETBENCH" alerts push --alertmanager "http://127.0.0.1:$(cat "$tmp/mute.port")" \
	--timeout 300 >"$tmp/mute.out" 2>&1
status=$?
took=$((($(date +%s%N) - start) / 1000000))
check_eq "an Alertmanager that does not answer fails the push" "$status" 1
# (libcurl may say 299: its timer ticks a millisecond at a time)
check_grep "after the timeout" "$tmp/mute.out" \
	"error: cannot push the alerts to Alertmanager: POST .*: Operation timed out after (29[0-9]|3[0-9][0-9]) milliseconds"
check_eq "which bounds it (${took} ms)" "$([ "$took" -lt 3000 ] && echo yes)" yes

finish
