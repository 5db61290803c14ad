#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Alerts on kernel upgrades (migration 005, schema/baseline.sql, collector/alert.c,
# cli/alerts.c, docs/alerts.md) on a real PostgreSQL: detection at
# COMMIT, the significance test, grouping into fleet alerts, once per host
# and kernel pair, a failing check that leaves the COMMIT alone, NOTIFY,
# `fleetbench alerts` and `alerts ack`, and the real collector's hook
# (JSON on stdin, retry with backoff, timeout, ingestion not blocked).
#
# Runs are made from tests/fixtures/reports/aws-m5.large-b.json (standard
# profile, 5 repeats) by a SQL function of the test database and stored
# by `fleetbench-collector load`, each in its own transaction, as the
# collector commits what arrives alone.
#
# Environment: SOURCE_DIR, BUILD_DIR, COLLECTOR, FLEETBENCH and ZSEND (the
# binaries, default under BUILD_DIR), PG_BINDIR.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD_DIR=${BUILD_DIR:-$SOURCE_DIR/build}
COLLECTOR=${COLLECTOR:-$BUILD_DIR/collector/fleetbench-collector}
FLEETBENCH=${FLEETBENCH:-$BUILD_DIR/cli/fleetbench}
ZSEND=${ZSEND:-$BUILD_DIR/tests/integration/zsend}
fixtures=$SOURCE_DIR/tests/fixtures/reports

require_built "$COLLECTOR" "$FLEETBENCH" "$ZSEND"

pid=
# shellcheck disable=SC2317 # called at exit by lib.sh
on_cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
}
tmp_new alerts
# the harness runs PostgreSQL as another user when we are root; the hook
# writes here as this user
chmod 0755 "$tmp"
pg_start "$tmp/pg"
export FLEETBENCH_DSN=$conninfo

# q [psql options]: runs SQL from stdin, prints unaligned rows
q() {
	"$PG_BINDIR/psql" "$conninfo" -X -q -A -t -P null=NULL \
		-v ON_ERROR_STOP=1 "$@"
}

"$COLLECTOR" migrate --schema-dir "$SOURCE_DIR/schema" --dsn "$conninfo" \
	>"$tmp/migrate.out" 2>&1
check_grep "migrate makes a new database" "$tmp/migrate.out" '^the database is current'

# test_scale(r, variants, scales): report r with the random read IOPS of
# repeat i of the randread variants named multiplied by scales[i]
# test_report(id, host, provider, type, kernel, minute, sqpoll, scales):
# report B as a run of host on kernel, started minute minutes after
# 2024-11-25 09:00, with the probe's SQPOLL result and io_uring's random
# read IOPS scaled so, with and without SQPOLL (a kernel's io_uring path
# slows both)
q <<'EOF'
CREATE FUNCTION test_scale(r jsonb, variants text[], scales float8[])
RETURNS jsonb LANGUAGE sql AS $$
SELECT jsonb_set(r, '{benchmarks}', (
	SELECT jsonb_agg(CASE WHEN b->>'benchmark' = 'randread'
				   AND b->>'variant' = ANY (variants)
	       THEN jsonb_set(b, '{metrics}', (
		       SELECT jsonb_agg(CASE WHEN m->>'metric' = 'iops'
			      THEN jsonb_set(m, '{samples}', (
				      SELECT jsonb_agg(s::float8 * scales[i])
				      FROM jsonb_array_elements_text(m->'samples')
					   WITH ORDINALITY AS x(s, i)))
			      ELSE m END)
		       FROM jsonb_array_elements(b->'metrics') m))
	       ELSE b END ORDER BY o)
	FROM jsonb_array_elements(r->'benchmarks') WITH ORDINALITY AS t(b, o)))
$$;
CREATE FUNCTION test_report(base jsonb, id uuid, host text, provider text,
			    type text, kernel text, minute integer,
			    sqpoll text, scales float8[])
RETURNS jsonb LANGUAGE sql AS $$
SELECT test_scale(jsonb_set(jsonb_set(jsonb_set(jsonb_set(jsonb_set(
       jsonb_set(jsonb_set(jsonb_set(jsonb_set(base,
	'{run_id}', to_jsonb(id::text)),
	'{host,machine_id}', to_jsonb(md5(host))),
	'{host,hostname}', to_jsonb(host)),
	'{host,provider}', to_jsonb(provider)),
	'{host,instance_type}', to_jsonb(type)),
	'{kernel,release}', to_jsonb(kernel)),
	'{started_unix_ms}', to_jsonb(1732525200000 + minute * 60000::bigint)),
	'{finished_unix_ms}', to_jsonb(1732525230000 + minute * 60000::bigint)),
	'{probe,io_uring,sqpoll}', to_jsonb(sqpoll)),
	'{io_uring,io_uring_sqpoll}', scales)
$$;
EOF

nrun=0
# run HOST KERNEL MINUTE [SQPOLL [SCALES [PROVIDER TYPE [EDIT]]]]: stores a
# run in its own transaction and sets run_id; EDIT is a jsonb expression
# over r, the report, applied last
run() {
	local edit=${8:-r} scales=${5:-}

	[ -n "$scales" ] || scales='{1,1,1,1,1}'
	nrun=$((nrun + 1))
	run_id=$(printf '00000000-0000-4000-8000-%012d' "$nrun")
	out=$(q -v b="$(cat "$fixtures/aws-m5.large-b.json")" <<-EOF | load_one
		SELECT $edit
		FROM test_report(:'b', '$run_id', '$1', '${6:-aws}', '${7:-m5.large}',
				 '$2', $3, '${4:-ok}', '$scales') AS r
	EOF
	)
	[ "$out" = t ] || not_ok "run $1 $2 $3 not stored: $out"
}

# alerts_of HOST: kind:old>new of the host's alerts
alerts_of() {
	q <<-EOF
		SELECT coalesce(string_agg(kind || ':' || old_kernel || '>'
					   || new_kernel, ' ' ORDER BY id), '-')
		FROM alerts WHERE hostname = '$1'
	EOF
}

# nine: an EDIT making r a run of 9 repeats: every metric's samples 1 to 4
# (already scaled) once more, pread's times 1 + i / 1000 (i = 6 .. 9) so
# that no two per-repeat gains tie
nine() {
	cat <<-'EOF'
	jsonb_set(r, '{benchmarks}', (
		SELECT jsonb_agg(jsonb_set(b, '{metrics}', (
			SELECT coalesce(jsonb_agg(jsonb_set(m, '{samples}', (m->'samples') || (
				SELECT coalesce(jsonb_agg(s::float8 * CASE WHEN b->>'variant' = 'pread'
									   THEN 1 + (i + 5) / 1000.0
									   ELSE 1 END), '[]')
				FROM jsonb_array_elements_text(m->'samples')
					WITH ORDINALITY AS x(s, i)
				WHERE i <= 4))), '[]')
			FROM jsonb_array_elements(b->'metrics') m)) ORDER BY o)
		FROM jsonb_array_elements(r->'benchmarks') WITH ORDINALITY AS t(b, o)))
	EOF
}

# --- detection --------------------------------------------------------------

# six hosts of aws m5.large on 6.1, then five of them on 6.8
for h in h1 h2 h3 h4 h5 h6; do
	run "$h" 6.1 0
done
check_eq "no alert while every host has one kernel" \
	"$(q <<<"SELECT count(*) FROM alerts")" 0
run h1 6.8 60 EPERM
check_eq "SQPOLL denied on the new kernel alerts at once" "$(alerts_of h1)" \
	"fingerprint:6.1>6.8"
check_eq "its diff says before and after" "$(q <<-EOF
	SELECT diff, provider, instance_type, old_run_id, new_run_id = '$run_id'
	FROM alerts WHERE hostname = 'h1'
EOF
)" '{"sqpoll": {"after": "EPERM", "before": "ok"}}|aws|m5.large|00000000-0000-4000-8000-000000000001|t'
run h2 6.8 61 EPERM
check_eq "a second host with the same change joins the fleet alert" \
	"$(q <<<"SELECT count(*), min(hosts), min(old_kernels::text), min(new_kernel), min(summary) FROM alert_summary")" \
	"1|2|{6.1}|6.8|sqpoll ok -> EPERM"
# io_uring's gain over pread halves in every repeat: p = 2/252 = 0.0079
run h3 6.8 62 ok '{0.5,0.5,0.5,0.5,0.5}'
check_eq "a collapsed io_uring gain alerts" "$(alerts_of h3)" "gain:6.1>6.8"
check_eq "with the exact test's p-value and the repeats" "$(q <<-EOF
	SELECT d->>'test', round((d->>'p')::numeric, 6),
	       round((d->>'change')::numeric, 3),
	       jsonb_array_length(d->'before_repeats'),
	       jsonb_array_length(d->'after_repeats'),
	       fleetbench_alert_text(kind, diff)
	FROM alerts, LATERAL (SELECT diff->'iouring_vs_pread' AS d) x
	WHERE hostname = 'h3'
EOF
)" "Mann-Whitney U, exact|0.007937|-0.500|5|5|io_uring/pread gain 3.15 -> 1.57 (-50%, p = 0.0079)"
# within noise: 3% lower
run h4 6.8 63 ok '{0.97,0.97,0.97,0.97,0.97}'
check_eq "a gain that moves only within noise does not alert" \
	"$(alerts_of h4)" "-"
# the median drops by 30%, but one repeat overlaps the old ones: p = 0.15
run h5 6.8 64 ok '{0.7,0.7,1.01,0.7,0.7}'
check_eq "a large change that is not significant does not alert" \
	"$(alerts_of h5)" "-"
# significant (complete separation) but only 10%
run h6 6.8 65 ok '{0.9,0.9,0.9,0.9,0.9}'
check_eq "a significant change below 20% does not alert" "$(alerts_of h6)" "-"
# 25% lower in every repeat: complete separation, p = 0.0079, below 0.01 but
# not below gain_alpha (1e-4), and not halved: one host of 5 repeats is
# left to the fleet-level test
run h7 6.1 0
run h7 6.8 66 ok '{0.75,0.75,0.75,0.75,0.75}'
check_eq "a 25% drop with 5 repeats a side is not a per-host alert" \
	"$(alerts_of h7)" "-"
# the same drop with 9 repeats a side (the full profile): p = 2/48620
run f1 6.1 0 ok '{1,1,1,1,1,1,1,1,1}' aws m5.large "$(nine)"
run f1 6.8 60 ok '{0.75,0.75,0.75,0.75,0.75,0.75,0.75,0.75,0.75}' aws m5.large "$(nine)"
check_eq "with 9 repeats a side it alerts at p = 4.1e-5" "$(q <<-'EOF'
	SELECT kind, fleetbench_alert_text(kind, diff),
	       diff #>> '{iouring_vs_pread,alpha}'
	FROM alerts WHERE hostname = 'f1'
EOF
)" "gain|io_uring/pread gain 3.13 -> 2.35 (-25%, p = 4.1e-05)|0.0001"

# quick profile, 3 repeats: the smallest two-sided p is 0.1
run q1 6.1 0 ok '{1,1,1}' aws m5.large \
	"jsonb_set(r, '{benchmarks}', (SELECT jsonb_agg(jsonb_set(b, '{metrics}', (SELECT coalesce(jsonb_agg(jsonb_set(m, '{samples}', (SELECT jsonb_agg(v) FROM (SELECT v FROM jsonb_array_elements(m->'samples') WITH ORDINALITY AS s(v, i) WHERE i <= 3) x))), '[]') FROM jsonb_array_elements(b->'metrics') m))) FROM jsonb_array_elements(r->'benchmarks') b))"
run q1 6.8 60 ok '{0.5,0.5,0.5}' aws m5.large \
	"jsonb_set(r, '{benchmarks}', (SELECT jsonb_agg(jsonb_set(b, '{metrics}', (SELECT coalesce(jsonb_agg(jsonb_set(m, '{samples}', (SELECT jsonb_agg(v) FROM (SELECT v FROM jsonb_array_elements(m->'samples') WITH ORDINALITY AS s(v, i) WHERE i <= 3) x))), '[]') FROM jsonb_array_elements(b->'metrics') m))) FROM jsonb_array_elements(r->'benchmarks') b))"
check_eq "3 repeats a side cannot reach p < 0.01: no gain alert" \
	"$(alerts_of q1)" "-"

# --- once per host and kernel pair -----------------------------------------

n_before=$(q <<<"SELECT count(*) FROM alerts")
h1_run=00000000-0000-4000-8000-000000000007
check_eq "re-sending h1's run on 6.8 stores nothing" "$(q -v b="$(cat "$fixtures/aws-m5.large-b.json")" <<-EOF | load_one
	SELECT test_report(:'b', '$h1_run', 'h1', 'aws',
			   'm5.large', '6.8', 60, 'EPERM', '{1,1,1,1,1}')
EOF
)" f
run h1 6.8 120 EPERM
run h3 6.8 121 ok '{0.5,0.5,0.5,0.5,0.5}'
check_eq "re-sent and later runs on the same kernels raise nothing more" \
	"$(q <<<"SELECT count(*) FROM alerts")" "$n_before"
check_eq "the fleet alert still counts two hosts" \
	"$(q <<<"SELECT hosts FROM alert_summary WHERE kind = 'fingerprint'")" 2
run h1 6.1 180 ok
check_eq "a downgrade is a new kernel pair: it alerts" "$(alerts_of h1)" \
	"fingerprint:6.1>6.8 fingerprint:6.8>6.1"
check_eq "in a fleet alert of its own" "$(q <<-EOF
	SELECT count(*) FROM fleet_alerts WHERE new_kernel = '6.1'
EOF
)" 1
run h1 6.8 240 EPERM
check_eq "upgrading again to 6.8 raises nothing new" "$(alerts_of h1)" \
	"fingerprint:6.1>6.8 fingerprint:6.8>6.1"

# --- grouping -------------------------------------------------------------

run g1 6.1 0 ok '{1,1,1,1,1}' aws c5.large
run g1 6.8 60 EPERM '{1,1,1,1,1}' aws c5.large
run g2 6.1 0 ok '{1,1,1,1,1}' hetzner cx22
run g2 6.8 60 EPERM '{1,1,1,1,1}' hetzner cx22
check_eq "the same change on other instance types is grouped apart" "$(q <<-EOF
	SELECT string_agg(provider || '/' || instance_type || ':' || hosts, ' '
			  ORDER BY provider, instance_type)
	FROM alert_summary WHERE new_kernel = '6.8' AND kind = 'fingerprint'
EOF
)" "aws/c5.large:1 aws/m5.large:2 hetzner/cx22:1"
# another change on the same kernel and type is another fleet alert
run g3 6.1 0 ok '{1,1,1,1,1}' hetzner cx22
run g3 6.8 60 ok '{1,1,1,1,1}' hetzner cx22 \
	"jsonb_set(jsonb_set(jsonb_set(r, '{probe,io_uring,setup}', '\"EPERM\"'), '{probe,io_uring,disabled}', '2'), '{probe,io_uring,features}', '[\"SINGLE_MMAP\", \"NODROP\"]')"
check_eq "every changed item is in the diff, unknown ones are not" "$(q <<<"SELECT diff FROM alerts WHERE hostname = 'g3'")" \
	'{"features": {"added": [], "removed": ["SUBMIT_STABLE"]}, "io_uring_setup": {"after": "EPERM", "before": "ok"}}'
check_eq "a different change is another fleet alert" \
	"$(q <<<"SELECT count(*) FROM fleet_alerts WHERE provider = 'hetzner'")" 2
run g4 6.1 0 ok '{1,1,1,1,1}' hetzner cx22 \
	"jsonb_set(r, '{probe,io_uring,opcodes}', '[\"READ\", \"FSYNC\"]')"
run g4 6.8 60 ok '{1,1,1,1,1}' hetzner cx22 \
	"jsonb_set(r, '{probe,io_uring,opcodes}', '[\"READ\", \"SEND_ZC\", \"URING_CMD\"]')"
check_eq "opcodes added and removed" \
	"$(q <<<"SELECT fleetbench_alert_text(kind, diff) FROM alerts WHERE hostname = 'g4'")" \
	"opcodes +SEND_ZC +URING_CMD -FSYNC"

# a late report: a run on the old kernel older than everything on the new
run g5 6.8 60 ok
run g5 6.1 0 EPERM
check_eq "a run compares only with earlier runs" "$(alerts_of g5)" "-"

# --- settings -------------------------------------------------------------

q <<<"UPDATE alert_settings SET gain_min_change = 0.6"
run s1 6.1 0
run s1 6.8 60 ok '{0.5,0.5,0.5,0.5,0.5}'
check_eq "gain_min_change 0.6: a 50% drop does not alert" "$(alerts_of s1)" "-"
q <<<"UPDATE alert_settings SET gain_min_change = NULL, gain_large_alpha = 0.005"
run s2 6.1 0
run s2 6.8 60 ok '{0.5,0.5,0.5,0.5,0.5}'
check_eq "gain_large_alpha 0.005: a halving at p = 0.0079 does not alert" \
	"$(alerts_of s2)" "-"
q <<<"UPDATE alert_settings SET gain_large_alpha = NULL, gain_large_change = 0.25"
run s3 6.1 0
run s3 6.8 60 ok '{0.75,0.75,0.75,0.75,0.75}'
check_eq "gain_large_change 0.25: a 25% drop at p = 0.0079 is very large" \
	"$(alerts_of s3)" "gain:6.1>6.8"
q <<<"UPDATE alert_settings SET gain_large_change = NULL, gain_alpha = 0.01"
run s4 6.1 0
run s4 6.8 60 ok '{0.75,0.75,0.75,0.75,0.75}'
check_eq "gain_alpha 0.01: the figure's least change at p = 0.0079 alerts" \
	"$(alerts_of s4)" "gain:6.1>6.8"
q <<<"UPDATE alert_settings SET gain_alpha = DEFAULT"
check_eq "gain_alpha's default is 1e-4" \
	"$(q <<<"SELECT gain_alpha FROM alert_settings")" 0.0001

# --- issue 15's gains, by the same rule ------------------------------------

# more BW QD [ONE]: r with membw's 4k_all and thp_all triad GB/s, thp_all's
# repeat i at BW times 4k_all's (times 1 + i / 100, no ties), 4k_1t's at ONE
# times (default 0.5: a thread scaling of about 2), and io_scaling's
# j2_qd1 and j2_qd32 IOPS likewise at QD times, named by the run's own
# comparison iouring_qd32_vs_qd1 (fleetbench_alert_gains() has no
# variants of its own for it)
more() {
	cat <<-EOF
	jsonb_set(jsonb_set(r, '{benchmarks}', (r->'benchmarks') || (
		SELECT jsonb_agg(jsonb_build_object('benchmark', v.b,
			'variant', v.v, 'metrics', jsonb_build_array(
				jsonb_build_object('metric', v.m, 'unit', v.u,
					'samples', (SELECT jsonb_agg(x * v.k * (1 + (i - 1) * v.s / 100.0))
						    FROM unnest(v.base) WITH ORDINALITY AS t(x, i))))))
		FROM (VALUES ('membw', '4k_all', 'triad_gbps', 'GB/s', 1.0, 0, '{10,10.2,9.9,10.1,10}'::float8[]),
			     ('membw', 'thp_all', 'triad_gbps', 'GB/s', $1, 1, '{10,10.2,9.9,10.1,10}'),
			     ('membw', '4k_1t', 'triad_gbps', 'GB/s', ${3:-0.5}, 1, '{10,10.2,9.9,10.1,10}'),
			     ('io_scaling', 'j2_qd1', 'iops', 'IO/s', 1.0, 0, '{9000,9100,8900,9050,9000}'),
			     ('io_scaling', 'j2_qd32', 'iops', 'IO/s', $2, 1, '{9000,9100,8900,9050,9000}'))
		     AS v(b, v, m, u, k, s, base))),
		'{comparisons}', (r->'comparisons') || jsonb_build_array(jsonb_build_object(
			'name', 'iouring_qd32_vs_qd1', 'benchmark', 'io_scaling',
			'metric', 'iops', 'numerator', 'j2_qd32', 'denominator', 'j2_qd1')))
	EOF
}
run m1 6.1 0 ok '' aws m6a.large "$(more 1.3 10)"
run m1 6.8 60 ok '{0.5,0.5,0.5,0.5,0.5}' aws m6a.large "$(more 0.6 4)"
check_eq "each gain that moved is an alert of its own: io_uring's, membw's THP gain, QD32/QD1" \
	"$(q <<-'EOF'
	SELECT string_agg(kind || ':' || figure || ':' || old_kernel || '>' || new_kernel,
			  ' ' ORDER BY figure)
	FROM alerts WHERE hostname = 'm1'
EOF
)" "gain:iouring_qd32_vs_qd1:6.1>6.8 gain:iouring_vs_pread:6.1>6.8 gain:membw_thp_gain:6.1>6.8"
check_eq "three fleet alerts, each in words" \
	"$(q <<-'EOF'
	SELECT string_agg(summary, '; ' ORDER BY summary)
	FROM alert_summary WHERE instance_type = 'm6a.large'
EOF
)" "io_uring QD32/QD1 gain decreased by a median 60%; io_uring/pread gain decreased by a median 50%; memory bandwidth THP gain decreased by a median 54%"
check_eq "a gain alert's diff: the per-repeat ratios and the test" \
	"$(q <<-'EOF'
	SELECT round((diff #>> '{membw_thp_gain,before}')::numeric, 3),
	       round((diff #>> '{membw_thp_gain,after}')::numeric, 3),
	       jsonb_array_length(diff #> '{membw_thp_gain,before_repeats}'),
	       diff #>> '{membw_thp_gain,test}',
	       round((diff #>> '{membw_thp_gain,p}')::numeric, 6)
	FROM alerts WHERE hostname = 'm1' AND figure = 'membw_thp_gain'
EOF
)" "1.326|0.612|5|Mann-Whitney U, exact|0.007937"
run m1 6.8 61 ok '{0.5,0.5,0.5,0.5,0.5}' aws m6a.large "$(more 0.6 4)"
check_eq "a later run on the same pair adds nothing" \
	"$(q <<<"SELECT count(*) FROM alerts WHERE hostname = 'm1'")" 3
run m2 6.1 0 ok '' aws m6a.large "$(more 1.3 10)"
run m2 6.8 60 ok '' aws m6a.large "$(more 1.25 10)"
check_eq "gains that moved within noise raise nothing" "$(alerts_of m2)" "-"
run m3 6.1 0 ok '' aws m6a.large "$(more 1.3 10 0.5)"
run m3 6.8 60 ok '' aws m6a.large "$(more 1.3 10 1.0)"
check_eq "the thread scaling that collapsed is an alert of its own (019's gains)" \
	"$(q <<<"SELECT string_agg(figure, ' ') FROM alerts WHERE hostname = 'm3'")" \
	membw_thread_scaling

# SQPOLL's gain, a figure declared after the others (issue 37): a kernel
# that slows the SQPOLL ring alone raises a gain alert of its own
run q1 6.1 0 ok '' aws c7a.large
run q1 6.8 60 ok '' aws c7a.large "test_scale(r, '{io_uring_sqpoll}', '{0.5,0.5,0.5,0.5,0.5}')"
check_eq "SQPOLL's gain halved: an alert of its own, in words" \
	"$(q <<<"SELECT string_agg(a.figure || '|' || s.summary, ' ')
		 FROM alerts AS a JOIN alert_summary AS s
		   ON s.instance_type = a.instance_type
		 WHERE a.hostname = 'q1'")" \
	"sqpoll_vs_iouring|SQPOLL gain decreased by a median 50%"

# --- a failing check never fails the COMMIT --------------------------------

q <<<"ALTER TABLE alerts ADD CONSTRAINT test_refuse CHECK (hostname <> 'boom')"
run boom 6.1 0
run boom 6.8 60 EPERM
check_eq "the run whose check failed is stored" \
	"$(q <<<"SELECT count(*) FROM runs WHERE run_id = '$run_id'")" 1
check_eq "the error is kept with its run" "$(q <<-EOF
	SELECT sqlstate, message FROM alert_errors WHERE run_id = '$run_id'
EOF
)" '23514|new row for relation "alerts" violates check constraint "test_refuse"'
check_eq "no fleet alert is left half made" \
	"$(q <<<"SELECT count(*) FROM alerts WHERE hostname = 'boom'")" 0
# a batch of reports, as the collector commits them: one transaction
# (load stores up to batch_max reports in one)
out=$(q -v b="$(cat "$fixtures/aws-m5.large-b.json")" <<-'EOF' | load_json 2>/dev/null
	SELECT test_report(:'b', '10000000-0000-4000-8000-000000000001', 'boom', 'aws', 'm5.large', '6.9', 90, 'ENOSYS', '{1,1,1,1,1}');
	SELECT test_report(:'b', '10000000-0000-4000-8000-000000000002', 'b2', 'aws', 'm5.large', '6.1', 0, 'ok', '{1,1,1,1,1}');
	SELECT test_report(:'b', '10000000-0000-4000-8000-000000000003', 'b2', 'aws', 'm5.large', '6.9', 90, 'ENOSYS', '{1,1,1,1,1}');
EOF
)
check_eq "a batch with a failing check commits whole" "$out|$(q <<-EOF
	SELECT count(*) FROM runs WHERE run_id::text LIKE '10000000-%'
EOF
)" "10000000-0000-4000-8000-000000000001 stored
10000000-0000-4000-8000-000000000002 stored
10000000-0000-4000-8000-000000000003 stored|3"
check_eq "and the other runs of the batch still alert" "$(alerts_of b2)" \
	"fingerprint:6.1>6.9"
q <<<"ALTER TABLE alerts DROP CONSTRAINT test_refuse"

# --- NOTIFY ----------------------------------------------------------------

# psql prints what it was notified of after a command: the listener
# sleeps until both runs are stored (however long that takes on a loaded
# machine), is woken by a cancel, and runs one more command
"$PG_BINDIR/psql" "$conninfo" -X -q -c "LISTEN fleetbench_alerts" \
	-c "SELECT pg_sleep(120)" -c "SELECT 'woken'" >"$tmp/listen.out" 2>&1 &
lpid=$!
listening() {
	[ "$(q <<<"SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query = 'SELECT pg_sleep(120)'")" = 1 ]
}
wait_for 5 listening
run n1 6.1 0
run n1 7.0 60 EPERM
q <<<"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query = 'SELECT pg_sleep(120)'" >/dev/null
wait "$lpid"
fleet=$(q <<<"SELECT fleet_alert_id FROM alerts WHERE hostname = 'n1'")
check_grep "NOTIFY fleetbench_alerts carries the fleet alert id at COMMIT" \
	"$tmp/listen.out" \
	"^Asynchronous notification \"fleetbench_alerts\" with payload \"$fleet\" received"

# --- fleetbench alerts ------------------------------------------------------

total=$(q <<<"SELECT count(*) FROM fleet_alerts")
"$FLEETBENCH" alerts --format csv >"$tmp/list.csv"
check_eq "fleetbench alerts lists every fleet alert" \
	"$(($(wc -l <"$tmp/list.csv") - 1))" "$total"
check_eq "newest first, with hosts and summary" \
	"$(sed -n 2p "$tmp/list.csv" | cut -d, -f1,2,3,4,6,7,8)" \
	"$fleet,fingerprint,aws,m5.large,7.0,1,sqpoll ok -> EPERM"
m5=$(q <<<"SELECT id FROM fleet_alerts WHERE instance_type = 'm5.large' AND new_kernel = '6.8' AND kind = 'fingerprint'")
"$FLEETBENCH" alerts ack "$m5" >"$tmp/ack.out" 2>&1
check_eq "alerts ack exits 0" "$?" 0
check_grep "it says what it acknowledged" "$tmp/ack.out" \
	"^acknowledged alert $m5 and its 2 host alert\(s\) at "
"$FLEETBENCH" alerts ack "$m5" >"$tmp/ack2.out" 2>&1
check_eq "acknowledging again exits 0" "$?" 0
check_grep "and says when it was" "$tmp/ack2.out" \
	"^alert $m5 was already acknowledged at "
check_eq "its hosts' alerts are acknowledged with it" "$(q <<-EOF
	SELECT count(*) FILTER (WHERE acknowledged_at IS NOT NULL), count(*)
	FROM alerts WHERE fleet_alert_id = $m5
EOF
)" "2|2"
"$FLEETBENCH" alerts --open --format csv >"$tmp/open.csv"
check_eq "--open leaves it out" \
	"$(cut -d, -f1 "$tmp/open.csv" | grep -cx "$m5")" 0
check_eq "--open lists the others" "$(($(wc -l <"$tmp/open.csv") - 1))" \
	"$((total - 1))"
run h7 6.1 0
run h7 6.8 300 EPERM
check_eq "a host joining an acknowledged change is acknowledged too" \
	"$(q <<<"SELECT fleet_alert_id, acknowledged_at IS NOT NULL FROM alerts WHERE hostname = 'h7'")" "$m5|t"
"$FLEETBENCH" alerts --since '2999-01-01' --format csv >"$tmp/since.csv"
check_eq "--since in the future lists nothing" "$(wc -l <"$tmp/since.csv")" 1
"$FLEETBENCH" alerts --hosts --format json >"$tmp/hosts.json"
check_eq "--hosts --format json: one object per host alert, valid JSON" \
	"$(q -v j="$(cat "$tmp/hosts.json")" <<<"SELECT jsonb_array_length(:'j'::jsonb)")" \
	"$(q <<<"SELECT count(*) FROM alerts")"
"$FLEETBENCH" alerts ack 999999 >"$tmp/ack3.out" 2>&1
check_eq "ack of an unknown alert exits 1" "$?" 1
check_grep "and names it" "$tmp/ack3.out" "there is no alert 999999"
"$FLEETBENCH" alerts ack 1x >"$tmp/ack4.out" 2>&1
check_eq "ack of a malformed ID exits 2" "$?" 2
"$FLEETBENCH" alerts --since 'not a date' >"$tmp/since2.out" 2>&1
check_eq "a bad --since exits 2" "$?" 2
check_grep "with the server's reason" "$tmp/since2.out" \
	'invalid input syntax for type timestamp with time zone: "not a date"'

# --- the hook ------------------------------------------------------------------

"$COLLECTOR" --help >"$tmp/help.out"
for opt in --alert-hook --alert-hook-timeout --alert-hook-retry; do
	check_grep "--help lists $opt" "$tmp/help.out" "^ +$opt "
done
printf '[collector]\nalert_hook_timeout_ms = 50\n' >"$tmp/range.conf"
"$COLLECTOR" serve -c "$tmp/range.conf" >"$tmp/range.out" 2>&1
check_eq "an out-of-range hook timeout exits 2" "$?" 2
check_grep "naming the key" "$tmp/range.out" \
	"collector.alert_hook_timeout_ms: 50 is out of range"

# The hook saves its input and environment; while $tmp/fail exists it
# fails, while $tmp/slow exists it takes 3 s.
cat >"$tmp/hook" <<EOF
#!/bin/sh
n=\$(( \$(cat $tmp/hook.count 2>/dev/null || echo 0) + 1 ))
echo \$n >$tmp/hook.count
cat >$tmp/hook.\$n.json
echo "\$FLEETBENCH_ALERT_ID" >$tmp/hook.\$n.id
[ -e $tmp/slow ] && touch $tmp/hook.\$n.started && sleep 3 && touch $tmp/hook.\$n.done
[ -e $tmp/fail ] && exit 3
exit 0
EOF
chmod 0755 "$tmp/hook"

nserve=0
# serve [FLAGS...]: the collector in the background; sets pid, log, endpoint
serve() {
	nserve=$((nserve + 1))
	log=$tmp/serve.$nserve.log
	"$COLLECTOR" serve --schema-dir "$SOURCE_DIR/schema" --dsn "$conninfo" \
		--insecure --bind 'tcp://127.0.0.1:*' --alert-hook "$tmp/hook" \
		"$@" 2>"$log" &
	pid=$!
	if ! wait_for 10 grep -q 'listening on' "$log"; then
		not_ok "the collector did not start: $(cat "$log")"
		finish
	fi
	endpoint=$(sed -n 's/.*listening on \(tcp:[^ ]*\) .*/\1/p' "$log")
}

stop() {
	kill -TERM "$pid"
	wait "$pid"
	local status=$?
	pid=
	return "$status"
}

undelivered() {
	q <<<"SELECT count(*) FROM fleet_alerts WHERE delivered_at IS NULL AND acknowledged_at IS NULL"
}
all_delivered() {
	[ "$(undelivered)" = 0 ]
}

open=$(undelivered)
touch "$tmp/fail"
serve --alert-hook-retry 300
wait_for 10 grep -q 'failed for alert' "$log"
check_eq "a failing hook is logged" "$?" 0
check_grep "with the exit status and the next attempt" "$log" \
	"alert hook: '$tmp/hook' failed for alert [0-9]+ \(attempt 1\): exit status 3; next attempt in 300 ms"
check_eq "and recorded" "$(q <<<"SELECT count(*) FROM fleet_alerts WHERE delivery_error = 'exit status 3'")" 1
wait_for 10 grep -q 'next attempt in 1200 ms' "$log"
check_eq "it is retried later, the delay doubling while the hook fails" \
	"$(grep -o 'next attempt in [0-9]* ms' "$log" | head -n 3 | cut -d' ' -f4 | paste -sd' ')" \
	"300 600 1200"
rm "$tmp/fail"
wait_for 10 all_delivered
check_eq "once the hook works, every open alert is delivered" "$?" 0
failures=$(grep -c 'failed for alert' "$log")
check_eq "each once, after the failed attempts" "$(q <<-EOF
	SELECT count(*) FILTER (WHERE delivered_at IS NOT NULL),
	       sum(delivery_attempts) - $failures,
	       count(*) FILTER (WHERE delivery_error IS NOT NULL)
	FROM fleet_alerts WHERE acknowledged_at IS NULL
EOF
)" "$open|$open|0"
check_eq "the acknowledged alert is not delivered" \
	"$(q <<<"SELECT delivered_at IS NULL, delivery_attempts FROM fleet_alerts WHERE id = $m5")" "t|0"

# every input is valid JSON naming its alert, as FLEETBENCH_ALERT_ID does
bad=0
for f in "$tmp"/hook.*.json; do
	n=${f%.json}
	n=${n##*.}
	got=$(q -v j="$(cat "$f")" <<<"SELECT (:'j'::jsonb)->>'id', jsonb_typeof((:'j'::jsonb)->'host_alerts')" 2>&1)
	[ "$got" = "$(cat "$tmp/hook.$n.id")|array" ] || bad=$((bad + 1))
done
check_eq "the hook receives valid JSON on stdin with FLEETBENCH_ALERT_ID" "$bad" 0
count=$(cat "$tmp/hook.count")
run w1 6.1 0
run w1 7.1 60 EPERM
wait_for 5 test -e "$tmp/hook.$((count + 1)).id"
check_eq "a new alert is delivered at once (NOTIFY wakes the hook)" "$?" 0
check_eq "its JSON is the alert, with hosts and their diffs" "$(q -v j="$(cat "$tmp/hook.$(cat "$tmp/hook.count").json")" <<-'EOF'
	SELECT j->>'kind', j->>'provider', j->>'instance_type', j->>'new_kernel',
	       j->'old_kernels', j->>'hosts', j->>'summary', j->>'attempt',
	       j #>> '{host_alerts,0,hostname}', j #> '{host_alerts,0,diff}'
	FROM (SELECT :'j'::jsonb AS j) x
EOF
)" 'fingerprint|aws|m5.large|7.1|["6.1"]|1|sqpoll ok -> EPERM|1|w1|{"sqpoll": {"after": "EPERM", "before": "ok"}}'
check_grep "deliveries are logged" "$log" \
	"alert hook: delivered alert [0-9]+ \(attempt 1\)"
stop
check_eq "the collector with a hook exits 0 on SIGTERM" "$?" 0

# a hook that takes too long is stopped and retried
touch "$tmp/slow"
serve --alert-hook-timeout 1000 --alert-hook-retry 60000
run t1 6.1 0
run t1 7.2 60 EPERM
wait_for 10 grep -q 'timed out' "$log"
check_grep "a hook over its timeout is stopped and retried later" "$log" \
	"failed for alert [0-9]+ \(attempt 1\): timed out after 1000 ms; next attempt in 60000 ms"
count=$(cat "$tmp/hook.count")
check_eq "it was stopped before it finished" \
	"$(test -e "$tmp/hook.$count.started" && ! test -e "$tmp/hook.$count.done" && echo yes)" yes
stop

# a slow hook does not hold up ingestion
q <<<"UPDATE fleet_alerts SET next_delivery_at = now() WHERE delivered_at IS NULL"
count=$(($(cat "$tmp/hook.count") + 1))
serve --alert-hook-timeout 10000
wait_for 5 test -e "$tmp/hook.$count.started"
check_eq "a collector delivers at start what is due" "$?" 0
U=$(cat /proc/sys/kernel/random/uuid)
out=$("$ZSEND" --endpoint "$endpoint" --insecure --report "$U" --timeout 2000)
check_eq "a report is committed while the hook runs" \
	"$out|$(test -e "$tmp/hook.$count.done" || echo running)" \
	"ack COMMITTED $U |running"
rm "$tmp/slow"
wait_for 10 all_delivered
check_eq "and the slow hook's alert is delivered" "$?" 0
stop
check_eq "the collector exits 0" "$?" 0

finish
