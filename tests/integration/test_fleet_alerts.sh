#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 5's alert acceptance on the fleet fixture (tests/fixtures/README.md)
# loaded through the real collector and agent: exactly the four real changes
# alert (aws c6i.xlarge's new kernel denies SQPOLL, gcp n2-standard-2's
# io_uring gain collapses; issue 15's: aws m6i.large's mmap THP speedup
# goes, hetzner ccx23's database p99 under THP always grows), the
# noise-only change (gcp e2-standard-4) does
# not, re-sending the fleet raises no second alert, NOTIFY
# fleetbench_alerts arrives, and the collector's hook receives each fleet
# alert as valid JSON.
#
# Environment: SOURCE_DIR, BUILD_DIR, COLLECTOR, AGENT, FLEETGEN and
# FLEETBENCH (the binaries, default under BUILD_DIR), PG_BINDIR.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD_DIR=${BUILD_DIR:-$SOURCE_DIR/build}
FLEETBENCH=${FLEETBENCH:-$BUILD_DIR/cli/fleetbench}
require_built "$FLEETBENCH"

tmp_new fleet-alerts

# q: runs SQL from stdin, prints unaligned rows
q() {
	"$PG_BINDIR/psql" "$conninfo" -X -q -A -t -v ON_ERROR_STOP=1 "$@"
}

# The hook saves each input as hook.N.json
cat >"$tmp/hook" <<EOF
#!/bin/sh
n=\$(( \$(cat $tmp/hook.count 2>/dev/null || echo 0) + 1 ))
echo \$n >$tmp/hook.count
exec cat >$tmp/hook.\$n.json
EOF
chmod 0755 "$tmp/hook"
fleet_serve_args=(--alert-hook "$tmp/hook")

listen_pid=
# shellcheck disable=SC2317 # called at exit by lib.sh
on_cleanup() {
	[ -n "$listen_pid" ] && kill "$listen_pid" 2>/dev/null
}

# A psql session that LISTENs while the fleet is sent: it reads its
# commands from a FIFO, and prints the notifications after the next one.
# shellcheck disable=SC2317 # called by fleet_load
fleet_before_send() {
	mkfifo "$tmp/listen.fifo"
	"$PG_BINDIR/psql" "$conninfo" -X -q <"$tmp/listen.fifo" \
		>"$tmp/listen.out" 2>&1 &
	listen_pid=$!
	exec 3>"$tmp/listen.fifo"
	echo "LISTEN fleetbench_alerts;" >&3
	wait_for 10 listening
}
listening() {
	[ "$(q <<<"SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'psql' AND query = 'LISTEN fleetbench_alerts;' AND state = 'idle'")" = 1 ]
}

fleet_load
check_eq "the fleet is stored" "$(q <<<"SELECT count(*) FROM runs")" \
	"$(wc -l <"$fleet_manifest")"

# --- exactly the four real changes -----------------------------------------

check_eq "exactly the four real changes alert, each once for its three hosts" \
	"$(q <<-'EOF'
	SELECT kind, provider, instance_type, old_kernels, new_kernel, hosts
	FROM alert_summary ORDER BY provider, instance_type
EOF
)" "fingerprint|aws|c6i.xlarge|{6.1.0-18-cloud-amd64}|6.5.0-0.deb12.4-cloud-amd64|3
gain|aws|m6i.large|{6.1.0-18-cloud-amd64}|6.1.0-21-cloud-amd64|3
gain|gcp|n2-standard-2|{5.15.0-1042-gcp}|6.2.0-1014-gcp|3
gain|hetzner|ccx23|{6.1.0-18-amd64}|6.1.0-21-amd64|3"
check_eq "SQPOLL denied: the diff of c6i.xlarge's hosts" "$(q <<-'EOF'
	SELECT string_agg(DISTINCT hostname, ' '), count(*),
	       string_agg(DISTINCT diff::text, ' ')
	FROM alerts WHERE instance_type = 'c6i.xlarge'
EOF
)" 'aws-c6i-1 aws-c6i-2 aws-c6i-3|3|{"sqpoll": {"after": "EPERM", "before": "ok"}}'
check_eq "the collapse: n2-standard-2's hosts, each significant and large" \
	"$(q <<-'EOF'
	SELECT string_agg(hostname, ' ' ORDER BY hostname), count(*),
	       bool_and((diff #>> '{iouring_vs_pread,p}')::float8 < 0.01),
	       bool_and((diff #>> '{iouring_vs_pread,change}')::float8 < -0.5),
	       bool_and((diff #>> '{iouring_vs_pread,before}')::float8
			BETWEEN 2.7 AND 3.3),
	       bool_and((diff #>> '{iouring_vs_pread,after}')::float8
			BETWEEN 0.9 AND 1.3)
	FROM alerts WHERE instance_type = 'n2-standard-2'
EOF
)" "gcp-n2-1 gcp-n2-2 gcp-n2-3|3|t|t|t|t"
# issue 15's gains alert by the same rule: m6i.large loses its mmap THP
# speedup, ccx23's database p99 under THP always grows
check_eq "m6i.large: the mmap THP speedup's collapse on each host" \
	"$(q <<-'EOF'
	SELECT string_agg(hostname, ' ' ORDER BY hostname), count(*),
	       string_agg(DISTINCT figure, ' '),
	       bool_and((diff #>> '{mmap_thp_speedup,p}')::float8 < 0.01),
	       bool_and((diff #>> '{mmap_thp_speedup,change}')::float8
			BETWEEN -0.25 AND -0.2),
	       bool_and(jsonb_array_length(diff #> '{mmap_thp_speedup,after_repeats}') = 9)
	FROM alerts WHERE instance_type = 'm6i.large'
EOF
)" "aws-m6i-1 aws-m6i-2 aws-m6i-3|3|mmap_thp_speedup|t|t|t"
check_eq "ccx23: the database's p99 always/never rises on each host" \
	"$(q <<-'EOF'
	SELECT count(*), string_agg(DISTINCT figure, ' '),
	       bool_and((diff #>> '{db_p99_always_vs_never,p}')::float8 < 0.01),
	       bool_and((diff #>> '{db_p99_always_vs_never,change}')::float8 > 0.4)
	FROM alerts WHERE instance_type = 'ccx23'
EOF
)" "3|db_p99_always_vs_never|t|t"
check_match "the summary names the gain and its direction" \
	"$(q <<<"SELECT summary FROM alert_summary WHERE instance_type = 'm6i.large'")" \
	'mmap THP speedup decreased by a median 2[0-5]%'
check_match "a host alert in words" \
	"$(q <<<"SELECT fleetbench_alert_text(kind, diff) FROM alerts WHERE hostname = 'hz-ccx23-1'")" \
	'database p99 THP always/never 1.[01]? -> 1.6? (+*%, p = 4.1e-05)'
# gcp-e2-2 moves by +23%, large, but within noise
check_eq "the noise-only change on e2-standard-4 does not alert" \
	"$(q <<<"SELECT count(*) FROM alerts WHERE instance_type = 'e2-standard-4'")" 0
check_eq "no check failed" "$(q <<<"SELECT count(*) FROM alert_errors")" 0
"$FLEETBENCH" --dsn "$conninfo" alerts --format csv >"$tmp/alerts.csv"
check_eq "fleetbench alerts lists the four" \
	"$(tail -n +2 "$tmp/alerts.csv" | cut -d, -f2,3,4,7 | sort)" \
	"fingerprint,aws,c6i.xlarge,3
gain,aws,m6i.large,3
gain,gcp,n2-standard-2,3
gain,hetzner,ccx23,3"

# --- re-sending raises nothing ----------------------------------------------

"$FLEETGEN" --spool "$tmp/again" >/dev/null 2>"$tmp/fleetgen2.log"
fleet_send "$tmp/again"
check_eq "the whole fleet sent again exits 0" "$?" 0
check_grep "every report is a duplicate" "$tmp/send.log" \
	"committed 0, duplicate $(wc -l <"$fleet_manifest")"
check_eq "re-sending raises no second alert" \
	"$(q <<<"SELECT count(*), (SELECT count(*) FROM fleet_alerts) FROM alerts")" "12|4"

# --- NOTIFY -------------------------------------------------------------------

echo "SELECT 1;" >&3
exec 3>&-
wait "$listen_pid"
listen_pid=
check_eq "NOTIFY fleetbench_alerts arrives with each fleet alert's id" \
	"$(sed -n 's/^Asynchronous notification "fleetbench_alerts" with payload "\([0-9]*\)" received.*/\1/p' \
		"$tmp/listen.out" | sort -u | paste -sd' ')" \
	"$(q <<<"SELECT string_agg(id::text, ' ' ORDER BY id::text) FROM fleet_alerts")"

# --- the hook -------------------------------------------------------------------

delivered() {
	[ "$(q <<<"SELECT count(*) FROM fleet_alerts WHERE delivered_at IS NOT NULL")" = 4 ]
}
wait_for 20 delivered
check_eq "the collector's hook delivers the four" "$?" 0
check_eq "once each" "$(cat "$tmp/hook.count")" 4
for n in 1 2 3 4; do
	q -v j="$(cat "$tmp/hook.$n.json")" <<-'EOF' 2>&1
		SELECT j->>'kind', j->>'instance_type', j->>'new_kernel',
		       (j->>'hosts')::int BETWEEN 1 AND 3,
		       jsonb_array_length(j->'host_alerts') = (j->>'hosts')::int,
		       j->>'id' = (SELECT id::text FROM fleet_alerts
				   WHERE instance_type = j->>'instance_type')
		FROM (SELECT :'j'::jsonb AS j) x
	EOF
done >"$tmp/hook.checked"
check_eq "the hook receives each alert as valid JSON" \
	"$(sort "$tmp/hook.checked")" \
	"fingerprint|c6i.xlarge|6.5.0-0.deb12.4-cloud-amd64|t|t|t
gain|ccx23|6.1.0-21-amd64|t|t|t
gain|m6i.large|6.1.0-21-cloud-amd64|t|t|t
gain|n2-standard-2|6.2.0-1014-gcp|t|t|t"
check_grep "the collector logs the deliveries" "$fleet_log" \
	"alert hook: delivered alert [0-9]+ \(attempt 1\)"

# --- a method changed with the kernel --------------------------------------

# another gcp-n2-1 (another machine id): quick on the old kernel, standard
# on the new, whose io_uring gain collapses as its neighbours' did
"$FLEETGEN" --spool "$tmp/switch-old" --seed 12 --host gcp-n2-1 --kernel old \
	--method quick >/dev/null 2>&1 && fleet_send "$tmp/switch-old"
"$FLEETGEN" --spool "$tmp/switch-new" --seed 12 --host gcp-n2-1 --kernel new \
	--method standard >/dev/null 2>&1 && fleet_send "$tmp/switch-new"
check_eq "a host whose method changed with its kernel is not alerted on" \
	"$(q <<-'EOF'
	SELECT (SELECT count(*) FROM runs WHERE method IN ('quick', 'standard')),
	       (SELECT count(*) FROM alerts a JOIN runs r ON r.run_id = a.new_run_id
		WHERE r.method <> 'full'),
	       (SELECT string_agg(kind || ' ' || instance_type || ' ' || hosts, ','
				  ORDER BY kind, instance_type)
		FROM alert_summary),
	       (SELECT count(*) FROM alert_errors)
EOF
)" "6|0|fingerprint c6i.xlarge 3,gain ccx23 3,gain m6i.large 3,gain n2-standard-2 3|0"
# the same host's quick runs on the new kernel are comparable: they alert
"$FLEETGEN" --spool "$tmp/switch-quick" --seed 12 --host gcp-n2-1 --kernel new \
	--method quick >/dev/null 2>&1 && fleet_send "$tmp/switch-quick"
check_eq "its quick runs on both kernels are compared" "$(q <<-'EOF'
	SELECT string_agg(a.kind || ' ' || r.method, ',')
	FROM alerts a JOIN runs r ON r.run_id = a.new_run_id
	WHERE r.method <> 'full'
EOF
)" "gain quick"

finish
