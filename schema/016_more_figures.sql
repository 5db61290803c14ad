-- SPDX-License-Identifier: MIT
-- The headline figures of issue 15's benchmarks (mmap'd-file reads,
-- memory bandwidth, I/O scaling, write-back, the database under THP
-- modes) in run_figures and fleet_summary, and gain alerts for each gain
-- that kernel-change alerts watch, not io_uring's alone.
--
-- run_figures and fleet_summary gain a column per figure (after method:
-- run_figures takes its rows from run_figures_live with SELECT *, which
-- the function file makes in this order). Runs stored before this
-- migration by an agent that already ran the new benchmarks get their
-- figures here; the groups of those runs are noted in fleet_dirty by
-- run_figures' triggers, and every other group's new figures are NULL,
-- as they would be recomputed.
--
-- fleet_compare_by() and fleet_kernels_by() return the new columns: a
-- change of return type, which CREATE OR REPLACE refuses. They are
-- dropped here, with the views over them (a view of the database's users
-- over these makes the DROP fail, naming it); schema/functions/40_queries.sql
-- makes them again right after. The views are left as placeholders with
-- their grants, so that `migrate` carries the grants over to the views the
-- function file makes (it keeps the grants of the views that exist when
-- the function files run).
--
-- alerts gain figure: the gain a gain alert is about (iouring_vs_pread
-- for every gain alert so far); a host alerts once per kernel pair, kind
-- and gain.

-- ---- run_figures ----

ALTER TABLE run_figures
	ADD COLUMN mmap_thp_speedup double precision,
	ADD COLUMN membw_thp_gain double precision,
	ADD COLUMN membw_triad_gbps double precision,
	ADD COLUMN iouring_qd32_vs_qd1 double precision,
	ADD COLUMN iouring_knee_depth double precision,
	ADD COLUMN iouring_best_iops double precision,
	ADD COLUMN writeback_p99_us double precision,
	ADD COLUMN writeback_stalls double precision,
	ADD COLUMN db_p99_always_vs_never double precision;

COMMENT ON COLUMN run_figures.mmap_thp_speedup IS
	'the mmap_thp_speedup comparison: mmap''d-file reads, ns per access with 4 KiB pages over with THP';
COMMENT ON COLUMN run_figures.membw_triad_gbps IS
	'median triad bandwidth of membw/4k_all, GB/s';
COMMENT ON COLUMN run_figures.iouring_knee_depth IS
	'median knee of io_scaling: the smallest queue depth within 5% of the best IOPS';
COMMENT ON COLUMN run_figures.writeback_p99_us IS
	'median p99 buffered write() latency under the host''s own vm.dirty_* settings, µs';

-- runs stored before this migration whose agent ran the new benchmarks
UPDATE run_figures AS f
SET mmap_thp_speedup = n.mmap_thp_speedup,
    membw_thp_gain = n.membw_thp_gain,
    membw_triad_gbps = n.membw_triad_gbps,
    iouring_qd32_vs_qd1 = n.iouring_qd32_vs_qd1,
    iouring_knee_depth = n.iouring_knee_depth,
    iouring_best_iops = n.iouring_best_iops,
    writeback_p99_us = n.writeback_p99_us,
    writeback_stalls = n.writeback_stalls,
    db_p99_always_vs_never = n.db_p99_always_vs_never
FROM (
	SELECT r.run_id,
	       r.c_ratio[array_position(r.c_name, 'mmap_thp_speedup')]
		       AS mmap_thp_speedup,
	       r.c_ratio[array_position(r.c_name, 'membw_thp_gain')]
		       AS membw_thp_gain,
	       m.membw_triad_gbps,
	       r.c_ratio[array_position(r.c_name, 'iouring_qd32_vs_qd1')]
		       AS iouring_qd32_vs_qd1,
	       m.iouring_knee_depth, m.iouring_best_iops,
	       m.writeback_p99_us, m.writeback_stalls,
	       r.c_ratio[array_position(r.c_name, 'db_p99_always_vs_never')]
		       AS db_p99_always_vs_never
	FROM runs AS r
	LEFT JOIN (
		SELECT x.run_id,
		       max(x.median) FILTER (WHERE x.benchmark = 'membw'
					     AND x.variant = '4k_all'
					     AND x.metric = 'triad_gbps')
			       AS membw_triad_gbps,
		       max(x.median) FILTER (WHERE x.benchmark = 'io_scaling'
					     AND x.variant = 'knee'
					     AND x.metric = 'knee_depth')
			       AS iouring_knee_depth,
		       max(x.median) FILTER (WHERE x.benchmark = 'io_scaling'
					     AND x.variant = 'knee'
					     AND x.metric = 'best_iops')
			       AS iouring_best_iops,
		       max(x.median) FILTER (WHERE x.benchmark = 'writeback'
					     AND x.variant = 'host'
					     AND x.metric = 'write_p99_us')
			       AS writeback_p99_us,
		       max(x.median) FILTER (WHERE x.benchmark = 'writeback'
					     AND x.variant = 'host'
					     AND x.metric = 'stalls_100ms')
			       AS writeback_stalls
		FROM bench_metrics AS x
		WHERE x.benchmark IN ('membw', 'io_scaling', 'writeback')
		GROUP BY x.run_id) AS m ON m.run_id = r.run_id
	WHERE r.c_name && '{mmap_thp_speedup,membw_thp_gain,iouring_qd32_vs_qd1,db_p99_always_vs_never}'
	      OR m.run_id IS NOT NULL) AS n
WHERE f.run_id = n.run_id;

-- fleetbench_groups() reads them from the index too. That index holds
-- at most 32 columns (INDEX_MAX_KEYS), and now does: the comparisons
-- mmap_hugetlb_speedup, membw_thread_scaling and writeback_tuned_vs_host
-- are not headline figures (a hugetlb pool is rarely free, the thread
-- scaling is read beside membw_triad_gbps, the tuned write-back is an
-- experiment a flag asks for); they stay in comparisons and the report.
DROP INDEX run_figures_group_idx;
CREATE INDEX run_figures_group_idx
	ON run_figures (provider, instance_type, kernel_release, method)
	INCLUDE (started_at, machine_id, vcpus, thp_enabled, iouring_ok,
		 sqpoll_ok, hugepage_1g, steal_flagged, thp_speedup,
		 thp_huge_fraction, hugetlb_2m_speedup, hugetlb_1g_speedup,
		 thp_fault_p99_us, iouring_vs_pread, iouring_vs_libaio,
		 iouring_iops, pread_iops, failed, mmap_thp_speedup,
		 membw_thp_gain, membw_triad_gbps, iouring_qd32_vs_qd1,
		 iouring_knee_depth, iouring_best_iops, writeback_p99_us,
		 writeback_stalls, db_p99_always_vs_never);

-- ---- fleet_summary ----

-- The rows kept so far hold no run with the new figures but those the
-- UPDATE above noted dirty: NULL is what a recompute gives the others.
ALTER TABLE fleet_summary
	ADD COLUMN mmap_thp_speedup fleetbench_estimate,
	ADD COLUMN membw_thp_gain fleetbench_estimate,
	ADD COLUMN membw_triad_gbps fleetbench_estimate,
	ADD COLUMN membw_triad_gbps_per_vcpu fleetbench_estimate,
	ADD COLUMN iouring_qd32_vs_qd1 fleetbench_estimate,
	ADD COLUMN iouring_knee_depth fleetbench_estimate,
	ADD COLUMN iouring_best_iops fleetbench_estimate,
	ADD COLUMN iouring_best_iops_per_vcpu fleetbench_estimate,
	ADD COLUMN writeback_p99_us fleetbench_estimate,
	ADD COLUMN writeback_stalls fleetbench_estimate,
	ADD COLUMN db_p99_always_vs_never fleetbench_estimate;

-- ---- compare and kernels: a new return type ----

CREATE TEMPORARY TABLE fleetbench_016_grants ON COMMIT DROP AS
SELECT c.oid::regclass::text AS name,
       ARRAY(SELECT format('GRANT %s ON %s TO %s%s', a.privilege_type,
			   c.oid::regclass,
			   CASE WHEN a.grantee = 0 THEN 'PUBLIC'
				ELSE quote_ident(pg_get_userbyid(a.grantee)) END,
			   CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION'
				ELSE '' END)
	     FROM aclexplode(c.relacl) AS a
	     WHERE a.grantee <> c.relowner) AS grants
FROM pg_class AS c
WHERE c.oid IN (to_regclass('fleet_compare'), to_regclass('fleet_kernels'));

DROP VIEW IF EXISTS fleet_compare;
DROP VIEW IF EXISTS fleet_kernels;
DROP FUNCTION IF EXISTS fleet_compare_by(text[], jsonb, timestamptz, text);
DROP FUNCTION IF EXISTS fleet_kernels_by(jsonb, timestamptz, text);

DO $$
DECLARE
	v record;
	s text;
BEGIN
	FOR v IN SELECT * FROM fleetbench_016_grants LOOP
		-- a placeholder until schema/functions/40_queries.sql
		EXECUTE format('CREATE VIEW %s AS SELECT NULL::text AS method',
			       v.name);
		FOREACH s IN ARRAY v.grants LOOP
			EXECUTE s;
		END LOOP;
	END LOOP;
END
$$;

-- ---- alerts: one gain alert per gain ----

ALTER TABLE alerts ADD COLUMN figure text;
UPDATE alerts SET figure = 'iouring_vs_pread' WHERE kind = 'gain';
ALTER TABLE alerts
	DROP CONSTRAINT alerts_once,
	ADD CONSTRAINT alerts_once
		UNIQUE NULLS NOT DISTINCT (machine_id, old_kernel, new_kernel,
					   kind, figure),
	ADD CONSTRAINT alerts_figure_of_gain
		CHECK ((kind = 'gain') = (figure IS NOT NULL));
COMMENT ON COLUMN alerts.figure IS
	'the gain a gain alert is about (iouring_vs_pread, mmap_thp_speedup, ...; fleetbench_alert_gains()); NULL for a fingerprint alert';
COMMENT ON TABLE alert_settings IS
	'thresholds of the gain alerts (every gain of fleetbench_alert_gains()): smallest relative change and largest p-value';
