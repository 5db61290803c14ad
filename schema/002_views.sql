-- SPDX-License-Identifier: MIT
-- Views for psql users: THP and io_uring gains per run, and the fleet
-- summary per provider, instance type and kernel.
--
-- Applied by `fleetbench-collector migrate` inside a transaction;
-- docs/schema.md describes every column, with example queries.

-- Per run with a thp_chase comparison: what THP buys on this host.
-- speedup = median ns_per_access with 4 KiB pages / with THP (above 1: THP
-- is faster); NULL with a reason when a side was skipped. huge_fraction is
-- the median share of the THP buffer the kernel really backed with huge
-- pages.
CREATE VIEW thp_gain AS
SELECT r.run_id, r.started_at, r.provider, r.instance_type, r.region,
       r.kernel_release, r.machine_id, r.hostname, r.thp_enabled,
       r.thp_defrag,
       c.ratio AS speedup, c.ci_low, c.ci_high, c.level, c.reason,
       base.median AS ns_per_access_4k,
       thp.median AS ns_per_access_thp,
       hf.median AS huge_fraction
FROM runs r
JOIN comparisons c ON c.run_id = r.run_id AND c.name = 'thp_speedup'
LEFT JOIN bench_metrics base
	ON base.run_id = r.run_id AND base.benchmark = c.benchmark
	   AND base.variant = c.numerator AND base.metric = c.metric
LEFT JOIN bench_metrics thp
	ON thp.run_id = r.run_id AND thp.benchmark = c.benchmark
	   AND thp.variant = c.denominator AND thp.metric = c.metric
LEFT JOIN bench_metrics hf
	ON hf.run_id = r.run_id AND hf.benchmark = c.benchmark
	   AND hf.variant = c.denominator AND hf.metric = 'huge_fraction';

-- Per run with a randread comparison: io_uring's random read IOPS over
-- pread and over libaio, with their intervals (NULL with a reason when a
-- side was skipped), and whether SQPOLL was allowed.
CREATE VIEW iouring_gain AS
SELECT r.run_id, r.started_at, r.provider, r.instance_type, r.region,
       r.kernel_release, r.machine_id, r.hostname,
       r.io_uring_disabled, r.io_uring_setup, r.io_uring_setup_errno,
       r.sqpoll, r.sqpoll_errno,
       p.ratio AS vs_pread, p.ci_low AS vs_pread_ci_low,
       p.ci_high AS vs_pread_ci_high, p.reason AS vs_pread_reason,
       l.ratio AS vs_libaio, l.ci_low AS vs_libaio_ci_low,
       l.ci_high AS vs_libaio_ci_high, l.reason AS vs_libaio_reason,
       s.ratio AS sqpoll_vs_iouring, s.ci_low AS sqpoll_vs_iouring_ci_low,
       s.ci_high AS sqpoll_vs_iouring_ci_high,
       sv.status AS sqpoll_variant_status,
       sv.skip_reason AS sqpoll_skip_reason
FROM runs r
LEFT JOIN comparisons p ON p.run_id = r.run_id AND p.name = 'iouring_vs_pread'
LEFT JOIN comparisons l ON l.run_id = r.run_id AND l.name = 'iouring_vs_libaio'
LEFT JOIN comparisons s ON s.run_id = r.run_id AND s.name = 'sqpoll_vs_iouring'
LEFT JOIN bench_results sv
	ON sv.run_id = r.run_id AND sv.benchmark = 'randread'
	   AND sv.variant = 'io_uring_sqpoll'
WHERE p.run_id IS NOT NULL OR l.run_id IS NOT NULL;

-- Per provider, instance type and kernel release: how many hosts and runs,
-- the median over runs of each gain (runs where it could not be measured
-- are left out of that median), the share of runs where SQPOLL could be
-- set up and the share whose kernel offers 1 GiB huge pages (unknown
-- counts as no, in both).
CREATE VIEW fleet_comparison AS
SELECT r.provider, r.instance_type, r.kernel_release,
       count(DISTINCT r.machine_id) AS hosts,
       count(*) AS runs,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY t.ratio) AS thp_speedup,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY p.ratio) AS iouring_vs_pread,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY l.ratio) AS iouring_vs_libaio,
       avg(CASE WHEN r.sqpoll = 'ok' THEN 1 ELSE 0 END)::double precision
	       AS sqpoll_ok_share,
       avg(CASE WHEN r.hugepage_1g_present THEN 1 ELSE 0 END)::double precision
	       AS hugepage_1g_share,
       max(r.started_at) AS last_run
FROM runs r
LEFT JOIN comparisons t ON t.run_id = r.run_id AND t.name = 'thp_speedup'
LEFT JOIN comparisons p ON p.run_id = r.run_id AND p.name = 'iouring_vs_pread'
LEFT JOIN comparisons l ON l.run_id = r.run_id AND l.name = 'iouring_vs_libaio'
GROUP BY r.provider, r.instance_type, r.kernel_release
ORDER BY r.provider, r.instance_type, r.kernel_release;

COMMENT ON VIEW thp_gain IS
	'per run: 4k/THP ns_per_access ratio with its interval, and the huge page share of the THP buffer';
COMMENT ON VIEW iouring_gain IS
	'per run: io_uring random read IOPS over pread and libaio with intervals, and SQPOLL status';
COMMENT ON VIEW fleet_comparison IS
	'per provider, instance type and kernel: hosts, runs, median gains, SQPOLL and 1 GiB page shares';
