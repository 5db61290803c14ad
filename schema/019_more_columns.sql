-- SPDX-License-Identifier: MIT
-- The three comparisons of issue 15's benchmarks that 016 left out of
-- run_figures and fleet_summary, now headline figures too:
-- mmap_hugetlb_speedup (mmap'd-file reads, 4 KiB pages over a hugetlb
-- memfd), membw_thread_scaling (triad GB/s with every vCPU over one) and
-- writeback_tuned_vs_host (p99 write() latency under the asked
-- vm.dirty_bytes over under the host's own settings).
--
-- fleetbench_groups() reads every figure from run_figures_group_idx,
-- whose 32 columns (INDEX_MAX_KEYS) were all taken, so that a group's
-- refresh is an index-only scan (docs/performance.md). The four capability
-- flags it counts (iouring_ok, sqpoll_ok, hugepage_1g, steal_flagged) take
-- one column of it now: run_figures.flags, the four as bits 1, 2, 4 and 8
-- (fleetbench_flags(), which run_figures_live computes it with), which
-- frees the three the new figures take. The new columns come after
-- db_p99_always_vs_never, flags last: run_figures_live's order.
--
-- Runs stored before this migration that carry the comparisons get their
-- figures here, and their groups are noted in fleet_dirty;
-- every other group's new figures are NULL, as a recompute gives.
-- fleet_compare_by() and fleet_kernels_by() return the new columns:
-- schema/functions/40_queries.sql drops and makes them again itself (016
-- did it here, keeping their views' grants by hand).

-- ---- run_figures ----

ALTER TABLE run_figures
	ADD COLUMN mmap_hugetlb_speedup double precision,
	ADD COLUMN membw_thread_scaling double precision,
	ADD COLUMN writeback_tuned_vs_host double precision;

-- run_figures' triggers are the functions as a database migrated from
-- far back last made them, which may not know fleet_dirty's level yet:
-- the groups with new figures are noted here instead, for both levels
ALTER TABLE run_figures DISABLE TRIGGER USER;
UPDATE run_figures AS f
SET mmap_hugetlb_speedup =
	r.c_ratio[array_position(r.c_name, 'mmap_hugetlb_speedup')],
    membw_thread_scaling =
	r.c_ratio[array_position(r.c_name, 'membw_thread_scaling')],
    writeback_tuned_vs_host =
	r.c_ratio[array_position(r.c_name, 'writeback_tuned_vs_host')]
FROM runs AS r
WHERE r.run_id = f.run_id
  AND r.c_name && '{mmap_hugetlb_speedup,membw_thread_scaling,writeback_tuned_vs_host}';
INSERT INTO fleet_dirty (provider, instance_type, kernel_release, method,
			 level)
SELECT DISTINCT f.provider, f.instance_type, f.kernel_release, f.method,
       l.level
FROM run_figures AS f
CROSS JOIN (VALUES (2::smallint), (3::smallint)) AS l(level)
WHERE num_nonnulls(f.mmap_hugetlb_speedup, f.membw_thread_scaling,
		   f.writeback_tuned_vs_host) > 0;

-- the flags of every run: the cached groups count the same
ALTER TABLE run_figures ADD COLUMN flags smallint;
UPDATE run_figures
SET flags = (CASE WHEN iouring_ok THEN 1 ELSE 0 END)
	    | (CASE WHEN sqpoll_ok THEN 2 ELSE 0 END)
	    | (CASE WHEN hugepage_1g THEN 4 ELSE 0 END)
	    | (CASE WHEN steal_flagged THEN 8 ELSE 0 END);
ALTER TABLE run_figures ENABLE TRIGGER USER;
COMMENT ON COLUMN run_figures.flags IS
	'iouring_ok, sqpoll_ok, hugepage_1g and steal_flagged as bits 1, 2, 4 and 8 (fleetbench_flags(): one column of run_figures_group_idx for the four)';

DROP INDEX run_figures_group_idx;
CREATE INDEX run_figures_group_idx
	ON run_figures (provider, instance_type, kernel_release, method)
	INCLUDE (started_at, machine_id, vcpus, thp_enabled, flags,
		 thp_speedup, thp_huge_fraction, hugetlb_2m_speedup,
		 hugetlb_1g_speedup, thp_fault_p99_us, iouring_vs_pread,
		 iouring_vs_libaio, iouring_iops, pread_iops, failed,
		 mmap_thp_speedup, membw_thp_gain, membw_triad_gbps,
		 iouring_qd32_vs_qd1, iouring_knee_depth, iouring_best_iops,
		 writeback_p99_us, writeback_stalls, db_p99_always_vs_never,
		 mmap_hugetlb_speedup, membw_thread_scaling,
		 writeback_tuned_vs_host);

-- ---- fleet_summary ----

ALTER TABLE fleet_summary
	ADD COLUMN mmap_hugetlb_speedup fleetbench_estimate,
	ADD COLUMN membw_thread_scaling fleetbench_estimate,
	ADD COLUMN writeback_tuned_vs_host fleetbench_estimate;
