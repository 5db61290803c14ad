#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The schema on a real PostgreSQL: migrations, fleetbench_ingest_run() and
# the views, with the report fixtures (stored by `fleetbench-collector
# load`) and a live probe of this machine.
#
# Environment: SOURCE_DIR (the source tree, default: this file's), AGENT
# (the fleetbench-agent binary, default BUILD_DIR/agent/fleetbench-agent),
# PG_BINDIR (the PostgreSQL 15 server binaries).
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

AGENT=${AGENT:-${BUILD_DIR:-$SOURCE_DIR/build}/agent/fleetbench-agent}
fixtures=$SOURCE_DIR/tests/fixtures/reports

tmp_new schema
# a timeout's SIGTERM still stops the server
trap 'exit 1' INT TERM HUP
pg_start "$tmp"

# q [psql options]: runs SQL from stdin, prints unaligned rows, NULL as NULL
q() {
	"$PG_BINDIR/psql" "$conninfo" -X -q -A -t -P null=NULL \
		-v ON_ERROR_STOP=1 "$@"
}

# --- migrations -----------------------------------------------------------

# the files, as migrate.c reads them: numbered in order (numbers are
# handed out to branches ahead of time: a gap is fine, a repeat or a step
# back is not), none with a BEGIN/COMMIT of its own (migrate wraps each)
n=0
last=0
for f in "$SOURCE_DIR"/schema/[0-9][0-9][0-9]_*.sql; do
	n=$((n + 1))
	name=${f##*/}
	num=$((10#${name%%_*}))
	check_eq "migration $name is numbered after the one before" \
		"$((num > last))" 1
	last=$num
	if grep -qiE '^[[:space:]]*(BEGIN|COMMIT|ROLLBACK)[[:space:]]*;' "$f"; then
		not_ok "migration $name has its own BEGIN/COMMIT (migrate wraps each file)"
	else
		ok
	fi
done
check_eq "migrations found" "$((n >= 2))" 1
# a new database: the baseline, the migrations it does not stand for, then
# the function files in one transaction, by migrate
if out=$("$COLLECTOR" migrate --schema-dir "$SOURCE_DIR/schema" \
	--dsn "$conninfo" 2>&1); then
	check_match "migrate applies the baseline" "$out" \
		"*applied the baseline (baseline.sql)*"
else
	not_ok "migrate fails on a new database: $out"
	finish
fi

# --- ingest ---------------------------------------------------------------

A=3b6f1a52-8c0e-4d7b-9a21-5e4c7f0d2b19 # aws m5.large, host ip-172-31-22-140
A2=0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5 # the same host an hour later
B=9d2e4c71-0f3a-4b86-8e57-c1a0b9d3f462 # aws m5.large, another host
C=c4a1e0b2-7d3f-4e68-b905-2f6d8a1c3e7b # DigitalOcean, odd strings
L=5e8f3c2a-1b4d-4a6e-9c70-d2b1f0e3a485 # this machine's live probe

# ingest FILE [SQL expression over r, the file's jsonb]: the report
# through `fleetbench-collector load` (load_one): t, f or why not
ingest() {
	q -v r="$(cat "$1")" <<<"SELECT ${2:-:'r'::jsonb};" | load_one
}

check_eq "report A is stored" "$(ingest "$fixtures/aws-m5.large-a.json")" t
check_eq "report B is stored" "$(ingest "$fixtures/aws-m5.large-b.json")" t
check_eq "report C is stored" "$(ingest "$fixtures/do-thp-always.json")" t
check_eq "a second run of A's host is stored" \
	"$(ingest "$fixtures/aws-m5.large-a.json" \
		"jsonb_set(jsonb_set(jsonb_set(:'r'::jsonb,
			'{run_id}', '\"$A2\"'),
			'{started_unix_ms}', '1732533600000'),
			'{finished_unix_ms}', '1732533621337')")" t

if probe=$("$AGENT" probe --json --steal-window 0 2>"$tmp/agent.err"); then
	ok
else
	not_ok "'$AGENT probe --json' failed: $(cat "$tmp/agent.err")"
	probe='{}'
fi
# The live report: the template with this machine's probe, host and kernel
live=$(
	q -v t="$(cat "$fixtures/live-template.json")" -v p="$probe" <<-'EOF'
		SELECT jsonb_set(jsonb_set(jsonb_set(jsonb_set(jsonb_set(
			t, '{probe}', p),
			'{host,hostname}',
			CASE WHEN jsonb_typeof(p #> '{host,hostname}') = 'string'
			     THEN p #> '{host,hostname}' ELSE '"unknown"' END),
			'{host,machine_id}',
			CASE WHEN jsonb_typeof(p #> '{host,machine_id}') = 'string'
			     THEN p #> '{host,machine_id}'
			     ELSE '"ffffffffffffffffffffffffffffffff"' END),
			'{kernel,release}', p #> '{kernel,release}'),
			'{kernel,version}', p #> '{kernel,version}')
		FROM (SELECT :'t'::jsonb AS t, :'p'::jsonb AS p) AS x;
	EOF
)
printf '%s\n' "$live" >"$tmp/live.json"
check_eq "the live report is stored" "$(ingest "$tmp/live.json")" t

# --- idempotency ----------------------------------------------------------

check_eq "A again returns false" "$(ingest "$fixtures/aws-m5.large-a.json")" f
check_eq "A with other content returns false" \
	"$(ingest "$fixtures/aws-m5.large-a.json" \
		"jsonb_set(:'r'::jsonb, '{host,hostname}', '\"impostor\"')")" f
check_eq "A is stored once, unchanged" \
	"$(q <<<"SELECT count(*), min(hostname) FROM runs WHERE run_id = '$A'")" \
	"1|ip-172-31-22-140"
check_eq "A's variants, metrics, comparisons are not doubled" \
	"$(q <<-EOF
		SELECT (SELECT count(*) FROM bench_results WHERE run_id = '$A'),
		       (SELECT count(*) FROM bench_metrics WHERE run_id = '$A'),
		       (SELECT count(*) FROM comparisons WHERE run_id = '$A')
	EOF
	)" "9|12|7"
check_eq "five runs in all" "$(q <<<"SELECT count(*) FROM runs")" 5

# --- typed columns from the fixtures --------------------------------------

check_eq "A: times, labels, kernel, profile" "$(q <<-EOF
	SELECT started_at, finished_at, schema_version, agent_version,
	       provider, instance_type, region, provider_source,
	       instance_type_source, region_source, hostname, machine_id,
	       kernel_release, profile, seed
	FROM runs WHERE run_id = '$A'
EOF
)" "2024-11-25 09:20:00+00|2024-11-25 09:20:21.337+00|1|0.1.0|aws|m5.large|eu-central-1|dmi|dmi|config|ip-172-31-22-140|ec2b7f3a9d1e4f6a8c0b2d4e6f809a1b|5.4.0-1103-aws|quick|1795989680817183"

cols="thp_enabled, thp_defrag, hugepage_sizes_kb, hugepage_1g_present,
      io_uring_disabled, io_uring_setup, io_uring_setup_errno, sqpoll,
      sqpoll_errno, io_uring_opcodes, io_uring_features, vcpus, memory_kb,
      vm, container"
# 5.4 on EC2: no io_uring_disabled sysctl, IORING_REGISTER_PROBE refused,
# SQPOLL refused to an unprivileged agent
check_eq "A: probe columns" \
	"$(q <<<"SELECT $cols FROM runs WHERE run_id = '$A'")" \
	"always|madvise|{2048,1048576}|t|NULL|ok|0|EPERM|1|NULL|{SINGLE_MMAP,NODROP,SUBMIT_STABLE}|2|7864804|kvm|none"
check_eq "B: probe columns (SQPOLL allowed)" \
	"$(q <<<"SELECT $cols FROM runs WHERE run_id = '$B'")" \
	"always|madvise|{2048,1048576}|t|NULL|ok|0|ok|0|NULL|{SINGLE_MMAP,NODROP,SUBMIT_STABLE}|2|7864804|kvm|none"
# io_uring_disabled=2: setup EPERM, the rest not tested (unknown, so NULL)
check_eq "C: probe columns" \
	"$(q <<<"SELECT $cols FROM runs WHERE run_id = '$C'")" \
	"always|madvise|{2048}|f|2|EPERM|1|NULL|NULL|NULL|NULL|4|8138792|kvm|docker"
# every item as sent; those newer than the fixture's agent null
check_eq "the probe is stored whole" "$(q -v r="$(cat "$fixtures/aws-m5.large-b.json")" <<-EOF
	SELECT (SELECT jsonb_object_agg(k, probe -> k)
		FROM jsonb_object_keys(probe) AS k
		WHERE :'r'::jsonb -> 'probe' ? k) = :'r'::jsonb -> 'probe',
	       (SELECT string_agg(k || '=' || (probe -> k), ' ' ORDER BY k)
		FROM jsonb_object_keys(probe) AS k
		WHERE NOT :'r'::jsonb -> 'probe' ? k)
	FROM (SELECT r.probe FROM runs AS r WHERE r.run_id = '$B') AS x
EOF
)" "t|pmu=null psi=null topology=null"

check_eq "A: variants in run order with status" "$(q <<-EOF
	SELECT string_agg(variant || ':' || status || ':' || noisy, ' '
			  ORDER BY position)
	FROM bench_results WHERE run_id = '$A'
EOF
)" "4k:ok:false thp:ok:false hugetlb_2m:skipped:false hugetlb_1g:skipped:false pread:ok:false io_uring:ok:false io_uring_sqpoll:skipped:false io_uring_fixed:ok:true libaio:ok:false"
check_eq "A: skip reason and parameters" "$(q <<-EOF
	SELECT skip_reason, parameters->>'hugetlb_pages_needed',
	       parameters->'seed', jsonb_array_length(windows)
	FROM bench_results
	WHERE run_id = '$A' AND variant = 'hugetlb_2m'
EOF
)" "2 MiB hugetlb pool has 0 free pages, needs 64|64|1795989680817183|0"
check_eq "A: samples in repeat order and their median" "$(q <<-EOF
	SELECT unit, samples, median FROM bench_metrics
	WHERE run_id = '$A' AND variant = '4k' AND metric = 'ns_per_access'
EOF
)" "ns|{145.1,142,139.5}|142"
check_eq "B: median of 5 samples" "$(q <<-EOF
	SELECT median FROM bench_metrics
	WHERE run_id = '$B' AND variant = '4k' AND metric = 'ns_per_access'
EOF
)" 138
check_eq "an even count's median is the mean of the middle two" \
	"$(ingest "$fixtures/aws-m5.large-a.json" \
		"jsonb_set(jsonb_set(:'r'::jsonb,
			'{run_id}', '\"99999999-9999-4999-8999-999999999999\"'),
			'{benchmarks,0,metrics,0,samples}', '[4, 1, 3, 2]')")
$(q <<-EOF
	SELECT samples, median FROM bench_metrics
	WHERE run_id = '99999999-9999-4999-8999-999999999999'
	      AND variant = '4k' AND metric = 'ns_per_access';
	DELETE FROM runs WHERE run_id = '99999999-9999-4999-8999-999999999999';
EOF
)" "t
{4,1,3,2}|2.5"
check_eq "A: comparisons" "$(q <<-EOF
	SELECT string_agg(concat_ws(':', name, numerator, denominator, ratio,
				    ci_low, ci_high, level, reason), ' '
			  ORDER BY name)
	FROM comparisons WHERE run_id = '$A'
EOF
)" "hugetlb_1g_speedup:4k:hugetlb_1g:hugetlb_1g was skipped hugetlb_2m_speedup:4k:hugetlb_2m:hugetlb_2m was skipped iouring_fixed_vs_iouring:io_uring_fixed:io_uring:1.0156:0.99:1.04:0.95 iouring_vs_libaio:io_uring:libaio:1.05:1.01:1.09:0.95 iouring_vs_pread:io_uring:pread:2.9:2.8:3.05:0.95 sqpoll_vs_iouring:io_uring_sqpoll:io_uring:io_uring_sqpoll was skipped thp_speedup:4k:thp:1.42:1.37:1.47:0.95"

# --- strings land byte for byte -------------------------------------------

# Quotes, backslashes, SQL, non-ASCII (the fixture spells some of it as
# \u escapes, surrogate pair included)
hostname='drop"let\01'"'"'; DROP TABLE runs; --'
# shellcheck disable=SC1112 # the typographic apostrophe is the point
region='ams3 — Zoë’s région 日本 🚀'
cmdline='BOOT_IMAGE=/vmlinuz-6.8.0-45-generic root=LABEL=cloudimg-rootfs ro console=tty1 console=ttyS0 transparent_hugepage=always init="/sbin/init --x='"'"'a\b'"'"'" note=été'
dir='/mnt/données/it'"'"'s "here"\tab'
reason='1 GiB hugetlb pages: absent (no /sys/kernel/mm/hugepages/hugepages-1048576kB) — réservé'
bytes() {
	q <<<"SELECT encode(convert_to($1, 'UTF8'), 'hex') $2"
}
check_eq "hostname byte for byte" \
	"$(bytes hostname "FROM runs WHERE run_id = '$C'")" "$(hex "$hostname")"
check_eq "region byte for byte" \
	"$(bytes region "FROM runs WHERE run_id = '$C'")" "$(hex "$region")"
check_eq "kernel command line byte for byte" \
	"$(bytes kernel_cmdline "FROM runs WHERE run_id = '$C'")" "$(hex "$cmdline")"
check_eq "parameter value byte for byte" \
	"$(bytes "parameters->>'dir'" "FROM bench_results WHERE run_id = '$C' AND variant = 'pread'")" \
	"$(hex "$dir")"
check_eq "skip reason byte for byte" \
	"$(bytes skip_reason "FROM bench_results WHERE run_id = '$C' AND variant = 'hugetlb_1g'")" \
	"$(hex "$reason")"
check_eq "the SQL in the hostname did nothing" \
	"$(q <<<"SELECT count(*) FROM runs")" 5

# --- the live probe ---------------------------------------------------------

bracketed() { # the [selected] word of a kernel mode file, or NULL
	if [ -r "$1" ]; then
		sed -n 's/.*\[\(.*\)\].*/\1/p' "$1"
	else
		echo NULL
	fi
}
sizes=NULL
if [ -d /sys/kernel/mm/hugepages ]; then
	sizes="{$(find /sys/kernel/mm/hugepages -mindepth 1 -maxdepth 1 \
		-name 'hugepages-*kB' -printf '%f\n' |
		sed 's/hugepages-\([0-9]*\)kB/\1/' | sort -n | paste -sd, -)}"
fi
g1=f
[ -d /sys/kernel/mm/hugepages/hugepages-1048576kB ] && g1=t
disabled=NULL
[ -r /proc/sys/kernel/io_uring_disabled ] &&
	disabled=$(cat /proc/sys/kernel/io_uring_disabled)
check_eq "live: labels and kernel" "$(q <<-EOF
	SELECT provider, instance_type, region, kernel_release
	FROM runs WHERE run_id = '$L'
EOF
)" "local-test|ci-runner|unknown|$(uname -r)"
check_eq "live: probe columns match /proc and /sys" "$(q <<-EOF
	SELECT thp_enabled, thp_defrag, hugepage_sizes_kb, hugepage_1g_present,
	       io_uring_disabled, vcpus, memory_kb
	FROM runs WHERE run_id = '$L'
EOF
)" "$(bracketed /sys/kernel/mm/transparent_hugepage/enabled)|$(bracketed /sys/kernel/mm/transparent_hugepage/defrag)|$sizes|$g1|$disabled|$(getconf _NPROCESSORS_ONLN)|$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)"
check_match "live: io_uring setup is ok or an errno name" \
	"$(q <<<"SELECT io_uring_setup || ':' || io_uring_setup_errno FROM runs WHERE run_id = '$L'")" \
	"@(ok:0|E+([A-Z0-9]):+([0-9]))"
check_eq "live: a probe-only run has no results" "$(q <<-EOF
	SELECT (SELECT count(*) FROM bench_results WHERE run_id = '$L'),
	       (SELECT count(*) FROM comparisons WHERE run_id = '$L')
EOF
)" "0|0"

# --- views ----------------------------------------------------------------

# what 002's views (retired by 009) said: run_figures (as
# run_figures_wide: a column per figure), comparisons, bench_metrics and
# fleet_compare say it now
check_eq "run_figures: THP per run, with its interval and medians" "$(q <<-EOF
	SELECT string_agg(concat_ws(':', f.provider, f.thp_speedup, c.ci_low,
				    c.ci_high, base.median, thp.median,
				    f.thp_huge_fraction), ' ' ORDER BY f.started_at)
	FROM run_figures_wide f
	JOIN comparisons c ON c.run_id = f.run_id AND c.name = 'thp_speedup'
	JOIN bench_metrics base ON base.run_id = f.run_id
		AND base.benchmark = c.benchmark AND base.variant = c.numerator
		AND base.metric = c.metric
	JOIN bench_metrics thp ON thp.run_id = f.run_id
		AND thp.benchmark = c.benchmark AND thp.variant = c.denominator
		AND thp.metric = c.metric
EOF
)" "aws:1.42:1.37:1.47:142:100:1 aws:1.38:1.355:1.401:138:100:1 aws:1.42:1.37:1.47:142:100:1 digitalocean:1.05:1.03:1.07:87.4:83.2:0.625"
check_eq "run_figures: io_uring per run, with intervals, reasons, SQPOLL" "$(q <<-EOF
	SELECT string_agg(concat_ws(':', f.provider, f.iouring_vs_pread,
				    p.ci_low, p.ci_high, p.reason,
				    f.iouring_vs_libaio, r.sqpoll, s.ratio,
				    sv.status, sv.skip_reason),
			  ' ' ORDER BY f.started_at)
	FROM run_figures_wide f
	JOIN runs r USING (run_id)
	JOIN comparisons p ON p.run_id = f.run_id
		AND p.name = 'iouring_vs_pread'
	LEFT JOIN comparisons s ON s.run_id = f.run_id
		AND s.name = 'sqpoll_vs_iouring'
	LEFT JOIN bench_results sv ON sv.run_id = f.run_id
		AND sv.benchmark = 'randread' AND sv.variant = 'io_uring_sqpoll'
EOF
)" "aws:2.9:2.8:3.05:1.05:EPERM:skipped:sqpoll: EPERM aws:3.1:3.02:3.19:1.1:ok:0.97:ok aws:2.9:2.8:3.05:1.05:EPERM:skipped:sqpoll: EPERM digitalocean:io_uring was skipped:skipped:sqpoll: EPERM"
check_eq "fleet_compare groups by method, provider, instance type, kernel" "$(q <<-EOF
	SELECT method, provider, instance_type, kernel, hosts, runs,
	       thp_speedup, iouring_vs_pread, iouring_vs_libaio, sqpoll_share,
	       hugepage_1g_share
	FROM fleet_compare_by(method_key => '*')
	WHERE provider <> 'local-test'
EOF
)" "quick|aws|m5.large|5.4.0-1103-aws|1|2|1.420|2.900|1.050|0.000|1.000
quick|digitalocean|s-4vcpu-8gb-intel|6.8.0-45-generic|1|1|1.050|NULL|NULL|0.000|0.000
standard|aws|m5.large|5.4.0-1103-aws|1|1|1.380|3.100|1.100|1.000|1.000"
check_eq "fleet_compare: the default method's groups" "$(q <<-EOF
	SELECT method, provider, hosts, runs, thp_speedup FROM fleet_compare
EOF
)" "standard|aws|1|1|1.380"
check_eq "fleet_compare: the live run is its own group" "$(q <<-EOF
	SELECT count(*), min(hosts), min(runs), min(kernel), min(thp_speedup)
	FROM fleet_compare_by(method_key => '*')
	WHERE provider = 'local-test'
EOF
)" "1|1|1|$(uname -r)|NULL"
check_eq "the views of 002 are retired" "$(q <<-EOF
	SELECT count(to_regclass(v))
	FROM unnest(ARRAY['thp_gain', 'iouring_gain', 'fleet_comparison']) AS v
EOF
)" 0
check_eq "the latest run of a host" "$(q <<-EOF
	SELECT run_id FROM runs
	WHERE machine_id = 'ec2b7f3a9d1e4f6a8c0b2d4e6f809a1b'
	ORDER BY started_at DESC LIMIT 1
EOF
)" "$A2"
check_match "the latest-run query can use runs_host_latest_idx" "$(q <<-EOF
	SET enable_seqscan = off;
	EXPLAIN (COSTS OFF) SELECT run_id FROM runs
	WHERE machine_id = 'ec2b7f3a9d1e4f6a8c0b2d4e6f809a1b'
	ORDER BY started_at DESC LIMIT 1;
EOF
)" "*runs_host_latest_idx*"
check_match "grouping can use runs_group_idx" "$(q <<-EOF
	SET enable_seqscan = off;
	EXPLAIN (COSTS OFF) SELECT count(*) FROM runs
	WHERE provider = 'aws' AND instance_type = 'm5.large';
EOF
)" "*runs_group_idx*"

# --- bad reports: refused with a reason, nothing stored ---------------------

# refused NAME MESSAGE-GLOB EXPR: EXPR over r, report A with a new run_id,
# must be rejected by `fleetbench-collector load` (the codec, as serve)
# with that reason
refused() {
	local out
	out=$(q -v a="$(cat "$fixtures/aws-m5.large-a.json")" <<-EOF |
		SELECT $3
		FROM (SELECT jsonb_set(:'a'::jsonb, '{run_id}',
			'"77777777-7777-4777-8777-777777777777"') AS r) AS x;
	EOF
		load_json 2>/dev/null)
	# the message's brackets are themselves, its * any text
	check_match "$1" "$out" "* rejected: $(sed 's/[][]/\\&/g' <<<"$2")"
}
refused "a run_id that is not a canonical UUID" \
	"run_id: not a canonical lowercase UUID" \
	"jsonb_set(r, '{run_id}', '\"not-a-uuid\"')"
refused "a report without hostname" \
	"host: hostname: missing, but required" \
	"r #- '{host,hostname}'"
refused "benchmarks that are not an array" \
	"benchmarks: a JSON object, not an array" \
	"jsonb_set(r, '{benchmarks}', '{}')"
refused "a variant listed twice" \
	"benchmarks[1]: same benchmark and variant as benchmarks[0]" \
	"jsonb_set(r, '{benchmarks,1,variant}', '\"4k\"')"
refused "a sample that is not a number" \
	"benchmarks[0].metrics[0].samples[1]: a JSON string, not a number" \
	"jsonb_set(r, '{benchmarks,0,metrics,0,samples}', '[1, \"x\"]')"
refused "a NaN sample (JSON holds none)" \
	"benchmarks[0].metrics[0].samples[1]: a JSON string, not a number" \
	"jsonb_set(r, '{benchmarks,0,metrics,0,samples}', '[1, \"NaN\"]')"
refused "a metric without unit" \
	"benchmarks[0].metrics[0]: unit: missing, but required" \
	"r #- '{benchmarks,0,metrics,0,unit}'"
refused "a metric listed twice" \
	"benchmarks[0].metrics[1].metric: same as metrics[0]" \
	"jsonb_set(r, '{benchmarks,0,metrics,1,metric}', '\"ns_per_access\"')"
refused "a comparison listed twice" \
	"comparisons[1].name: same as comparisons[0]" \
	"jsonb_set(r, '{comparisons,1,name}', '\"thp_speedup\"')"
refused "a variant both skipped and failed" \
	"benchmarks[0] thp_chase/4k: both failure and skip_reason*" \
	"jsonb_set(jsonb_set(r, '{benchmarks,0,skip_reason}', '\"s\"'),
		   '{benchmarks,0,failure}', '\"f\"')"
refused "a run that ends before it starts" \
	"finished_unix_ms: 0 is before 2020-01-01" \
	"jsonb_set(r, '{finished_unix_ms}', '0')"
refused "a start in the year 262143" \
	"started_unix_ms: 8210298326400000 is more than a day in the future" \
	"jsonb_set(jsonb_set(r, '{started_unix_ms}', '8210298326400000'),
		   '{finished_unix_ms}', '8210298326401000')"
refused "a provider label that acts on a terminal" \
	"host.provider: holds a control character (byte 0)" \
	"jsonb_set(r, '{host,provider}', to_jsonb(chr(27) || '[2J'))"
refused "an instance type with a newline and a forged row" \
	"host.instance_type: holds a control character (byte 8)" \
	"jsonb_set(r, '{host,instance_type}', to_jsonb('m5.large' || chr(10) || 'aws  fake'))"
refused "a machine id that is not one" \
	"host.machine_id: not 32 lowercase hex digits" \
	"jsonb_set(r, '{host,machine_id}', '\"not-a-machine-id\"')"
refused "capabilities that are not the probe's, the field named" \
	"capabilities.thp_enabled: *, but its probe says 'always' (thp.enabled.selected): a report's capabilities must be its probe's" \
	"jsonb_set(r, '{capabilities}', jsonb_build_object('sqpoll', 'ok'))"
# the array checks of a row changed by hand (one CHECK per table since
# migration 014, each rule named as the constraint it was)
hand_refused() {
	local out
	out=$(q 2>&1 <<-EOF
		\set VERBOSITY verbose
		$2
	EOF
	)
	check_match "$1" "$(printf '%s\n' "$out" | head -n 1)" "*ERROR:  23514: $3"
}
hand_refused "a shape whose units do not line up with its metrics" \
	"UPDATE result_shapes SET m_unit = m_unit[2:]" \
	"result_shapes_metrics_aligned: m_metric and m_unit must line up*"
hand_refused "a shape whose parameter kinds do not line up with its keys" \
	"UPDATE result_shapes SET p_kind = p_kind || 'i'" \
	"result_shapes_parameters_aligned: *"
hand_refused "a run_results row whose medians do not line up" \
	"UPDATE run_results SET m_median = m_median[2:]" \
	"run_results_metrics_aligned: m_median and m_sample_end must line up"
hand_refused "an infinite sample written by hand" \
	"UPDATE run_results SET samples[1] = 'Infinity'" \
	"run_results_samples_finite: a sample is NaN or infinite*"
hand_refused "a runs row whose comparisons do not line up" \
	"UPDATE runs SET c_reason = c_reason[2:] WHERE c_ratio IS NOT NULL" \
	"runs_comparisons_aligned: the six c_ arrays of values must have one length"
hand_refused "a comparison without a name" \
	"UPDATE comparison_names SET c_name[1] = NULL" \
	"comparison_names_named: *"
hand_refused "comparisons' names that do not line up" \
	"UPDATE comparison_names SET c_metric = c_metric || 'x'::text" \
	"comparison_names_aligned: *"
check_eq "nothing of the refused reports is stored" "$(q <<-EOF
	SELECT (SELECT count(*) FROM runs),
	       (SELECT count(*) FROM bench_results
		WHERE run_id = '77777777-7777-4777-8777-777777777777')
EOF
)" "5|0"

# --- fleetbench_ingest_run(): the typed parameters ------------------------

# lean_run ID SAMPLE_ENDS METRIC_SAMPLE_ENDS [KINDS VALUES [MORE]]: the
# SQL of a call with typed capabilities (the probe says otherwise), a
# method, a comparison, a measured variant (two metrics, one window) and a
# skipped one; MORE, a JSON object, sets more of fleetbench_report's
# attributes by name (each one not named is NULL)
lean_run() {
	cat <<-EOF
		SELECT fleetbench_ingest_run(jsonb_populate_record(
			NULL::fleetbench_report, '{
			"run_id": "$1", "schema_version": 1, "agent_version": "t",
			"started_ms": 1732533600000, "finished_ms": 1732533601000,
			"provider": "aws", "instance_type": "c7g.large",
			"region": "eu-west-1", "provider_source": "dmi",
			"instance_type_source": "dmi", "region_source": "config",
			"hostname": "lean-host",
			"machine_id": "1ea0ac41e0000000000000000000000e",
			"kernel_release": "6.6.0", "profile": "quick", "seed": 42,
			"probe": "{\"thp\": {\"enabled\": {\"selected\": \"never\"}}}",
			"caps_present": true, "thp_enabled": "always",
			"thp_defrag": "madvise", "thp_shmem_enabled": "advise",
			"hugepage_size_kb": [2048, 1048576], "hugepage_nr": [16, 1],
			"hugepage_free": [8, 1], "io_uring_disabled": 0,
			"io_uring_setup": "ok", "io_uring_setup_errno": 0,
			"sqpoll": "EPERM", "sqpoll_errno": 1,
			"io_uring_opcodes": ["READ", "WRITE"],
			"io_uring_features": ["NODROP"], "vcpus": 2,
			"memory_kb": 4000000, "cpu_model": "Neoverse-V1", "vm": "kvm",
			"container": "none", "method_key": "quick+iodepth=4",
			"method_profile": "quick", "repeats": 3, "iodepth": 4,
			"method_only": ["randread"], "randread_file": false,
			"c_name": ["c1"], "c_benchmark": ["b"], "c_metric": ["iops"],
			"c_numerator": ["v1"], "c_denominator": ["v2"], "c_ratio": [2],
			"c_ci_low": [1.5], "c_ci_high": [2.5], "c_level": [0.95],
			"c_method": ["m"], "c_reason": [null],
			"v_benchmark": ["b", "b"], "v_variant": ["v1", "v2"],
			"v_status": ["ok", "skipped"], "v_reason": [null, "why"],
			"v_param_end": [1, 2], "p_key": ["k1", "k2"],
			"p_kind": "${4:-{i,s\}}", "p_value": "${5:-{64,x\}}",
			"v_window_end": [1, 1], "w_steal_pct": [0.5],
			"w_loadavg1": [0.25], "w_wall_s": [1.5], "w_noisy": [true],
			"v_metric_end": [2, 2], "m_metric": ["iops", "lat"],
			"m_unit": ["IO/s", "us"], "m_median": [100, 7],
			"m_sample_end": "$3", "v_sample_end": "$2",
			"samples": [90, 100, 110, 7]}'::jsonb || '${6:-{\}}'::jsonb));
	EOF
}
LR=aaaaaaaa-1111-4222-8333-444444444444
check_eq "ingest_run stores; its figures are made by ingest_end" "$(q <<-EOF
	BEGIN;
	$(lean_run $LR '{4,4}' '{3,4}')
	SELECT count(*) FROM run_figures WHERE run_id = '$LR';
	SELECT 'ended' FROM fleetbench_ingest_end();
	SELECT count(*) FROM run_figures WHERE run_id = '$LR';
	COMMIT;
EOF
)" "t
0
ended
1"
# a writer calling the function directly cannot store what the
# collector's codec would refuse (issue 37): a tag value of 100,000 bytes
out=$(q 2>&1 <<-EOF
	$(lean_run bbbbbbbb-1111-4222-8333-444444444444 '{4,4}' '{3,4}' '{i,s}' '{64,x}' \
		"{\"tag_keys\": [\"team\"], \"tag_values\": [\"$(printf 'x%.0s' {1..100000})\"]}")
EOF
)
check_match "a writer cannot store a 100,000-byte tag value" \
	"$out" "*tags: 1 keys and 1 values, *each value 1 to 64 bytes without a control character*"
check_eq "and stores nothing of it" \
	"$(q <<<"SELECT count(*) FROM runs WHERE run_id = 'bbbbbbbb-1111-4222-8333-444444444444'")" 0
check_eq "and marks its group changed" "$(q <<-EOF
	SELECT count(*) > 0 FROM fleet_dirty
	WHERE provider = 'aws' AND instance_type = 'c7g.large'
	      AND kernel_release = '6.6.0' AND method = 'quick+iodepth=4'
EOF
)" t
check_eq "the capabilities come from the typed parameters" "$(q <<-EOF
	SELECT thp_enabled, thp_defrag, thp_shmem_enabled, hugepage_sizes_kb,
	       hugepage_nr, hugepage_free, hugepage_1g_present,
	       io_uring_setup, sqpoll, sqpoll_errno, io_uring_opcodes,
	       vcpus, memory_kb, cpu_model, method
	FROM runs WHERE run_id = '$LR'
EOF
)" "always|madvise|advise|{2048,1048576}|{16,1}|{8,1}|t|ok|EPERM|1|{READ,WRITE}|2|4000000|Neoverse-V1|quick+iodepth=4"
check_eq "the method is stored" "$(q <<-EOF
	SELECT profile, repeats, iodepth, "only", randread_file FROM methods
	WHERE key = 'quick+iodepth=4'
EOF
)" "quick|3|4|{randread}|f"
# the optional Method fields (017): NULL when not given, as from an agent
# before them
LM=aaaaaaaa-1111-4222-8333-444444444445
check_eq "the optional Method fields are stored, NULL when absent" "$(q <<-EOF
	BEGIN;
	$(lean_run $LM '{4,4}' '{3,4}' '{i,s}' '{64,x}' '{"method_key": "quick+mmap_bytes=64M", "mmap_bytes": 67108864, "bw_bytes": 100663296, "scaling_ms": 200, "with_database": true, "db_seconds": 3, "writeback_dirty_bytes": 0}')
	SELECT 'ended' FROM fleetbench_ingest_end();
	COMMIT;
	SELECT mmap_bytes, mmap_accesses, bw_bytes, scaling_ms, wb_bytes,
	       with_database, db_seconds, writeback_dirty_bytes FROM methods
	WHERE key = 'quick+mmap_bytes=64M';
	SELECT count(*) FROM methods
	WHERE key = 'quick+iodepth=4' AND mmap_bytes IS NULL
	      AND with_database IS NULL AND writeback_dirty_bytes IS NULL;
EOF
)" "t
ended
67108864|NULL|100663296|200|NULL|t|3|0
1"
check_eq "one run_results row" \
	"$(q <<<"SELECT count(*), min(cardinality(v_status)) FROM run_results WHERE run_id = '$LR'")" "1|2"
check_eq "two runs of one shape share one result_shapes row, which names their variants" "$(q <<-EOF
	SELECT count(DISTINCT x.shape_id), min(array_to_string(sh.v_variant, ','))
	FROM run_results AS x JOIN result_shapes AS sh USING (shape_id)
	WHERE x.run_id IN ('$LR', '$LM')
EOF
)" "1|v1,v2"
check_eq "the variants, as bench_results" "$(q <<-EOF
	SELECT position, status, skip_reason, parameters, windows, noisy
	FROM bench_results WHERE run_id = '$LR' ORDER BY position
EOF
)" '1|ok|NULL|{"k1": 64}|[{"noisy": true, "wall_s": 1.5, "loadavg1": 0.25, "steal_pct": 0.5}]|t
2|skipped|why|{"k2": "x"}|[]|f'
check_eq "the metrics with the medians given, as bench_metrics" "$(q <<-EOF
	SELECT string_agg(concat_ws(':', metric, unit, samples, median), ' '
			  ORDER BY metric)
	FROM bench_metrics WHERE run_id = '$LR'
EOF
)" "iops:IO/s:{90,100,110}:100 lat:us:{7}:7"
check_eq "the comparison, as comparisons" "$(q <<-EOF
	SELECT concat_ws(':', name, numerator, denominator, ratio, ci_low,
			 ci_high, level, method, reason)
	FROM comparisons WHERE run_id = '$LR'
EOF
)" "c1:v1:v2:2:1.5:2.5:0.95:m"
check_eq "ingest_run again returns false" \
	"$(q <<<"$(lean_run $LR '{4,4}' '{3,4}')")" f
# refused_run NAME SQLSTATE MESSAGE-GLOB SAMPLE_ENDS METRIC_SAMPLE_ENDS
# [KINDS VALUES]
refused_run() {
	local out
	out=$(q 2>&1 <<-EOF
		\set VERBOSITY verbose
		$(lean_run bbbbbbbb-1111-4222-8333-444444444444 "${@:4}")
	EOF
	)
	check_match "$1" "$(printf '%s\n' "$out" | head -n 1)" "*ERROR:  $2: $3"
}
refused_run "sample ends past the samples" 22023 \
	"fleetbench_ingest: the report's arrays do not line up:*samples 5 of 4 (samples)" \
	'{5,5}' '{3,4}'
refused_run "metric sample ends that step back" 22023 \
	"fleetbench_ingest: the sample ends of b/v1 do not cover its 4 samples*" \
	'{4,4}' '{4,3}'
# with the shape stored, the ends are first checked in two passes that
# only say whether they are fine (issue 37): each way they can be wrong,
# named by the statement that runs when they are not
refused_run "metric sample ends that step back but end at the variant's samples" 22023 \
	"fleetbench_ingest: the sample ends of b/v1 do not cover its 4 samples (m_sample_end {5,4})" \
	'{4,4}' '{5,4}'
refused_run "a first metric sample end below 0" 22023 \
	"fleetbench_ingest: the sample ends of b/v1 do not cover its 4 samples (m_sample_end {-1,4})" \
	'{4,4}' '{-1,4}'
refused_run "samples of a variant without metrics" 22023 \
	"fleetbench_ingest: the sample ends of b/v2 do not cover its 1 samples (m_sample_end {})" \
	'{3,4}' '{2,3}'
refused_run "variant sample ends that step back" 22023 \
	"fleetbench_ingest: v_sample_end steps back" \
	'{5,4}' '{3,4}'
refused_run "window ends that step back" 22023 \
	"fleetbench_ingest: v_window_end steps back" \
	'{4,4}' '{3,4}' '{i,s}' '{64,x}' '{"v_window_end": [2, 1]}'
refused_run "a double parameter that JSON cannot hold" 22023 \
	"fleetbench_ingest: parameter k1: inf is not a finite number" \
	'{4,4}' '{3,4}' '{d,s}' '{inf,x}'
refused_run "a parameter of an unknown kind" 22023 \
	"fleetbench_ingest: parameter k2: x is not of a kind i, s, d or b" \
	'{4,4}' '{3,4}' '{i,q}' '{1,x}'
# the values of a kind are matched at once, joined by \x01: a value that
# holds the separator, an empty one, a kind of two letters, each named
refused_run "an integer holding the values' separator" 22023 \
	"fleetbench_ingest: parameter k1: 1?2 is not an integer" \
	'{4,4}' '{3,4}' '{i,s}' '{1\u00012,x}'
refused_run "an empty integer" 22023 \
	"fleetbench_ingest: parameter k1:  is not an integer" \
	'{4,4}' '{3,4}' '{i,s}' '{\"\",x}'
refused_run "a kind of two letters" 22023 \
	"fleetbench_ingest: parameter k1: 64 is not of a kind i, s, d or b" \
	'{4,4}' '{3,4}' '{ii,s}' '{64,x}'
refused_run "a boolean that is not true or false" 22023 \
	"fleetbench_ingest: parameter k1: yes is not true or false" \
	'{4,4}' '{3,4}' '{b,s}' '{yes,x}'
check_eq "values of every kind in their form are stored" "$(q <<-EOF
	$(lean_run cccccccc-1111-4222-8333-444444444444 '{4,4}' '{3,4}' '{i,d}' '{-5,1.5e-3}')
	$(lean_run dddddddd-1111-4222-8333-444444444444 '{4,4}' '{3,4}' '{b,s}' '{false,\"\"}')
EOF
)" "t
t"
check_eq "a run's figures keep one form: no trailing NULLs, '{}' for none" \
	"$(q <<<"SELECT fleetbench_figures_trim('{1,NULL,2,NULL,NULL}'), fleetbench_figures_trim('{NULL,NULL}'), fleetbench_figures_trim(NULL), fleetbench_figures_trim('{3}')")" \
	"{1,NULL,2}|{}|{}|{3}"
# the values of kind i as integers (p_int, 043), p_value the others':
# read back as bench_results reads the values all given as text
check_eq "integer values given as integers are stored and read back as JSON" "$(q <<-EOF
	$(lean_run ffffffff-1111-4222-8333-444444444444 '{4,4}' '{3,4}' '{i,s}' '{x}' '{"p_int": [64]}')
	SELECT string_agg(parameters::text, ' ' ORDER BY position)
	FROM bench_results WHERE run_id = 'ffffffff-1111-4222-8333-444444444444';
	SELECT p_value, p_int FROM run_results
	WHERE run_id = 'ffffffff-1111-4222-8333-444444444444';
EOF
)" 't
{"k1": 64} {"k2": "x"}
{x}|{64}'
refused_run "more integers than parameters of kind i" 22023 \
	"fleetbench_ingest: p_int holds 2 values, but 1 parameters are of kind i" \
	'{4,4}' '{3,4}' '{i,s}' '{}' '{"p_int": [64, 65]}'
refused_run "integers and text that together outnumber the parameters" 22023 \
	"fleetbench_ingest: the report's arrays do not line up:*" \
	'{4,4}' '{3,4}' '{i,s}' '{x}' '{"p_int": [64, 65]}'
refused_run "an integer parameter without its value" 23502 \
	"fleetbench_ingest: a parameter has no key, kind or value" \
	'{4,4}' '{3,4}' '{i,s}' '{x}' '{"p_int": [null]}'
refused_run "a number among the text values, named" 22023 \
	"fleetbench_ingest: parameter k2: inf is not a finite number" \
	'{4,4}' '{3,4}' '{i,d}' '{inf}' '{"p_int": [64]}'
# the shape's names in one text (shape_names, 044) and its kinds
# (shape_kinds), the six arrays NULL: a stored shape found by them (no
# new row), a new one split into its arrays and stored with its names
NAMES_OF='"v_benchmark": null, "v_variant": null, "p_key": null, "p_kind": null, "m_metric": null, "m_unit": null, "shape_kinds": "is"'
LR_NAMES='b\u001fb\u001fv1\u001fv2\u001fk1\u001fk2\u001fiops\u001flat\u001fIO/s\u001fus'
shapes_before=$(q <<<"SELECT count(*) FROM result_shapes")
check_eq "a report whose shape comes as its names is stored with the stored shape, and read back as the arrays' would be" "$(q <<-EOF
	$(lean_run 11111111-aaaa-4222-8333-444444444444 '{4,4}' '{3,4}' '' '' "{$NAMES_OF, \"shape_names\": \"$LR_NAMES\"}")
	SELECT count(*) - $shapes_before FROM result_shapes;
	SELECT x.shape_id = y.shape_id FROM run_results AS x, run_results AS y
	WHERE x.run_id = '11111111-aaaa-4222-8333-444444444444' AND y.run_id = '$LR';
	SELECT string_agg(format('%s/%s %s', benchmark, variant, parameters), ' ' ORDER BY position)
	FROM bench_results WHERE run_id = '11111111-aaaa-4222-8333-444444444444';
	SELECT string_agg(format('%s %s %s', metric, unit, median), ' ' ORDER BY metric)
	FROM bench_metrics WHERE run_id = '11111111-aaaa-4222-8333-444444444444';
EOF
)" 't
0
t
b/v1 {"k1": 64} b/v2 {"k2": "x"}
iops IO/s 100 lat us 7'
check_eq "a new shape that comes as its names is split into its arrays and stored with its names" "$(q <<-EOF
	$(lean_run 22222222-aaaa-4222-8333-444444444444 '{4,4}' '{3,4}' '' '' "{$NAMES_OF, \"shape_names\": \"${LR_NAMES/k2/k3}\"}")
	SELECT s.v_benchmark, s.v_variant, s.p_key, s.p_kind, s.m_metric, s.m_unit,
	       s.names = fleetbench_shape_names(s.v_benchmark, s.v_variant, s.p_key, s.m_metric, s.m_unit),
	       s.names LIKE '%k3%'
	FROM run_results AS x JOIN result_shapes AS s USING (shape_id)
	WHERE x.run_id = '22222222-aaaa-4222-8333-444444444444';
EOF
)" 't
{b,b}|{v1,v2}|{k1,k3}|is|{iops,lat}|{IO/s,us}|t|t'
refused_run "a shape's names that the ends do not ask for, counted" 22023 \
	"fleetbench_ingest: shape_names holds 11 names and shape_kinds 2 kinds, where the ends ask for 10 and 2 (2 variants, 2 parameters, 2 metrics)" \
	'{4,4}' '{3,4}' '' '' "{$NAMES_OF, \"shape_names\": \"$LR_NAMES\\u001fextra\"}"
refused_run "a shape's kinds that the ends do not ask for, counted" 22023 \
	"fleetbench_ingest: shape_names holds 10 names and shape_kinds 3 kinds, where the ends ask for 10 and 2 (2 variants, 2 parameters, 2 metrics)" \
	'{4,4}' '{3,4}' '' '' "{$NAMES_OF, \"shape_names\": \"${LR_NAMES/k2/k4}\", \"shape_kinds\": \"isd\"}"
refused_run "a shape given both as its names and as arrays" 22023 \
	"fleetbench_ingest: the shape: either shape_names and shape_kinds, or the arrays of names and kinds" \
	'{4,4}' '{3,4}' '' '' "{\"shape_names\": \"$LR_NAMES\", \"shape_kinds\": \"is\"}"
refused_run "a shape's names without its kinds" 22023 \
	"fleetbench_ingest: the shape: either shape_names and shape_kinds, or the arrays of names and kinds" \
	'{4,4}' '{3,4}' '' '' "{$NAMES_OF, \"shape_kinds\": null, \"shape_names\": \"$LR_NAMES\"}"
# found by its names, a report whose values do not line up is named with
# the stored shape's names
refused_run "sample ends that do not fit a shape found by its names, named" 22023 \
	"fleetbench_ingest: the sample ends of b/v1 do not cover its 4 samples (m_sample_end {5,4})" \
	'{4,4}' '{5,4}' '' '' "{$NAMES_OF, \"shape_names\": \"$LR_NAMES\"}"
refused_run "statuses that do not line up with a shape found by its names" 22023 \
	"fleetbench_ingest: the report's arrays do not line up: 2 variants (v_benchmark), ends of parameters 2 of 2 (p_key)*" \
	'{4,4}' '{3,4}' '' '' "{$NAMES_OF, \"shape_names\": \"$LR_NAMES\", \"v_status\": [\"ok\"]}"
check_eq "a shape with a name holding U+001F is stored from its arrays without names" "$(q <<-EOF
	$(lean_run 33333333-aaaa-4222-8333-444444444444 '{4,4}' '{3,4}' '' '' '{"p_key": ["k1", "k\u001f2"]}')
	SELECT s.names IS NULL, s.p_key[2] = E'k\\x1f2'
	FROM run_results AS x JOIN result_shapes AS s USING (shape_id)
	WHERE x.run_id = '33333333-aaaa-4222-8333-444444444444';
EOF
)" 't
t|t'
# the checks that read only the shape (names and ends) are made for a
# shape not stored before (the refusals above are of $LR's shape, stored:
# the checks of samples and values are made whatever the shape)
refused_run "a variant listed twice, stored directly" 23505 \
	"fleetbench_ingest: benchmark variant b/v1 is listed twice" \
	'{4,4}' '{3,4}' '{i,s}' '{64,x}' '{"v_variant": ["v1", "v1"]}'
refused_run "a metric listed twice, stored directly" 23505 \
	"fleetbench_ingest: metric iops of b/v1 is listed twice" \
	'{4,4}' '{3,4}' '{i,s}' '{64,x}' '{"m_metric": ["iops", "iops"]}'
refused_run "metric ends that step back, stored directly" 22023 \
	"fleetbench_ingest: v_metric_end steps back" \
	'{4,4}' '{3,4}' '{i,s}' '{64,x}' '{"v_metric_end": [3, 2]}'
refused_run "a comparison listed twice, stored directly" 23505 \
	"fleetbench_ingest: comparison c1 is listed twice" \
	'{4,4}' '{3,4}' '{i,s}' '{64,x}' '{"c_name": ["c1", "c1"],
	"c_benchmark": ["b", "b"], "c_metric": ["iops", "lat"],
	"c_numerator": ["v1", "v1"], "c_denominator": ["v2", "v2"],
	"c_ratio": [2, 2], "c_ci_low": [1.5, 1.5], "c_ci_high": [2.5, 2.5],
	"c_level": [0.95, 0.95], "c_method": ["m", "m"],
	"c_reason": [null, null]}'
# what the writer could once store past every check by calling the
# ingest directly (issue 37): refused whatever the caller says it checked
refused_run "a start in the year 262143, stored directly" 22023 \
	"fleetbench_ingest: started_ms 8210298326400000, finished_ms 8210298326401000: a run starts from 2020-01-01*" \
	'{4,4}' '{3,4}' '{i,s}' '{64,x}' \
	'{"started_ms": 8210298326400000, "finished_ms": 8210298326401000}'
refused_run "a provider label that acts on a terminal, stored directly" 22023 \
	"fleetbench_ingest: provider holds a control character" \
	'{4,4}' '{3,4}' '{i,s}' '{64,x}' '{"provider": "\u001b[2J"}'
refused_run "an instance type with a newline, stored directly" 22023 \
	"fleetbench_ingest: instance_type holds a control character" \
	'{4,4}' '{3,4}' '{i,s}' '{64,x}' '{"instance_type": "m5.large\naws  fake"}'
refused_run "a machine id that is not one, stored directly" 22023 \
	"fleetbench_ingest: machine_id 'not-a-machine-id': not 32 lowercase hex digits" \
	'{4,4}' '{3,4}' '{i,s}' '{64,x}' '{"machine_id": "not-a-machine-id"}'
# the costs, in the run's row since 040: runs' check asks what
# run_costs' key and checks asked
costs() {
	printf '{"cost_benchmark": %s, "cost_wall_s": %s, "cost_cpu_s": [1, 1], "cost_peak_memory_bytes": [1, 1], "cost_written_bytes": [0, 0], "cost_allowance_s": [2, null], "cost_rounds": [3, null]}' "$1" "$2"
}
refused_run "a benchmark's costs given twice, stored directly" 23514 \
	"runs_costs_named: each benchmark of cost_benchmark must be named once" \
	'{4,4}' '{3,4}' '{i,s}' '{64,x}' "$(costs '["b", "b"]' '[1, 1]')"
refused_run "a negative wall time, stored directly" 23514 \
	"runs_costs_not_negative: a cost (seconds, bytes, rounds) is below 0" \
	'{4,4}' '{3,4}' '{i,s}' '{64,x}' "$(costs '["b", "total"]' '[-1, 1]')"
refused_run "a cost without its wall time, stored directly" 23514 \
	"runs_costs_aligned: the cost_ arrays must have one element per benchmark*" \
	'{4,4}' '{3,4}' '{i,s}' '{64,x}' "$(costs '["b", "total"]' '[null, 1]')"
check_eq "costs as given are stored, a row each in run_costs" "$(q <<-EOF
	$(lean_run eeeeeeee-1111-4222-8333-444444444444 '{4,4}' '{3,4}' '{i,s}' '{64,x}' "$(costs '["b", "total"]' '[1.5, 2]')")
	SELECT string_agg(concat_ws(':', benchmark, wall_s, cpu_s, allowance_s, rounds), ' ')
	FROM run_costs WHERE run_id = 'eeeeeeee-1111-4222-8333-444444444444';
EOF
)" "t
b:1.5:1:2:3 total:2:1"
check_eq "nothing of the refused calls is stored" \
	"$(q <<<"SELECT count(*) FROM runs WHERE run_id = 'bbbbbbbb-1111-4222-8333-444444444444'")" 0
# the probe in two (035), as the collector writes it: stored as the whole
# probe would be, the part found again by the digest of its text, the
# split checked
P2_PART='"probe": null, "probe_part": "{\"thp\": {\"enabled\": {\"selected\": \"never\"}}, \"topology\": {\"placement\": \"threads=2\"}}"'
P2_REST='"probe_rest": "{\"host\": {\"uptime_s\": 5}}"'
LP1=aaaaaaaa-1111-4222-8333-444444444446
LP2=aaaaaaaa-1111-4222-8333-444444444447
check_eq "a probe in two is stored as the whole probe, its part once" "$(q <<-EOF
	$(lean_run $LP1 '{4,4}' '{3,4}' '{i,s}' '{64,x}' "{$P2_PART, $P2_REST}");
	$(lean_run $LP2 '{4,4}' '{3,4}' '{i,s}' '{64,x}' "{$P2_PART, $P2_REST}");
	SELECT r.probe = '{"thp": {"enabled": {"selected": "never"}},
			  "topology": {"placement": "threads=2"},
			  "host": {"uptime_s": 5}}'::jsonb,
	       r.probe_rest, r.placement,
	       (SELECT count(DISTINCT x.probe_part) FROM runs AS x
		WHERE x.run_id IN ('$LP1', '$LP2'))
	FROM runs AS r WHERE r.run_id IN ('$LP1', '$LP2');
EOF
)" 't
t
t|{"host": {"uptime_s": 5}}|threads=2|1
t|{"host": {"uptime_s": 5}}|threads=2|1'
LP3=aaaaaaaa-1111-4222-8333-444444444448
check_eq "without capabilities, a probe in two gives its typed columns" "$(q <<-EOF
	$(lean_run $LP3 '{4,4}' '{3,4}' '{i,s}' '{64,x}' "{$P2_PART, $P2_REST, \"caps_present\": false}");
	SELECT thp_enabled, placement FROM runs WHERE run_id = '$LP3';
EOF
)" 't
never|threads=2'
refused_run "a probe given whole and in two" 22023 \
	"fleetbench_ingest: probe: either probe or both probe_part and probe_rest" \
	'{4,4}' '{3,4}' '{i,s}' '{64,x}' "{$P2_REST}"
BAD_REST='"probe_rest": "{\"kernel\": {}}"'
refused_run "a probe's rest holding a section of its part" 22023 \
	"fleetbench_ingest: probe_rest: a JSON object of meta, host, steal, psi and vmstat alone is expected" \
	'{4,4}' '{3,4}' '{i,s}' '{64,x}' "{$P2_PART, $BAD_REST}"
BAD_PART='"probe": null, "probe_part": "{\"vmstat\": {}}"'
refused_run "a probe's part holding a section of its rest" 22023 \
	"fleetbench_ingest: probe_part: a JSON object without meta, host, steal, psi or vmstat is expected" \
	'{4,4}' '{3,4}' '{i,s}' '{64,x}' "{$BAD_PART, $P2_REST}"
q <<<"DELETE FROM runs WHERE run_id IN ('$LR', '$LP1', '$LP2', '$LP3')"

# --- deleting a run deletes its rows --------------------------------------

check_eq "deleting a run cascades" "$(q <<-EOF
	DELETE FROM runs WHERE run_id = '$B';
	SELECT (SELECT count(*) FROM bench_results WHERE run_id = '$B'),
	       (SELECT count(*) FROM bench_metrics WHERE run_id = '$B'),
	       (SELECT count(*) FROM comparisons WHERE run_id = '$B');
EOF
)" "0|0|0"

finish
