-- SPDX-License-Identifier: MIT
-- Figures as an array indexed by their id (issue 37, the long layout):
-- run_figures keeps a run's headline figures in one column, figures
-- (element i: the figure of id i, figures.id, proto/figures.def; NULL:
-- not measured), and fleet_summary a group's estimates in two, figures
-- and figures_per_vcpu, in place of a column per figure. A new figure
-- then changes no table, index or function signature, and
-- run_figures_group_idx goes from 31 of PostgreSQL's 32 columns to 11.
-- Values are moved, not recomputed: every stored figure and cached
-- estimate reads the same after (test_migrate_lean). The functions that
-- fill and read them are the function files', run after this.

DO $$
DECLARE
	-- the ids of the figures stored as columns until now, as
	-- proto/figures.def declares them (an id never changes). On an
	-- upgrade from before 027 the table figures is still empty here
	-- (migrate fills it after the migrations), so they are spelled here,
	-- once, and checked against the table when it is filled.
	ids CONSTANT jsonb := '{"thp_speedup": 1, "thp_huge_fraction": 2,
		"hugetlb_2m_speedup": 3, "hugetlb_1g_speedup": 4,
		"thp_fault_p99_us": 5, "iouring_vs_pread": 6,
		"iouring_vs_libaio": 7, "iouring_iops": 8, "pread_iops": 9,
		"mmap_thp_speedup": 10, "mmap_hugetlb_speedup": 11,
		"membw_thp_gain": 12, "membw_triad_gbps": 13,
		"membw_thread_scaling": 14, "iouring_qd32_vs_qd1": 15,
		"iouring_knee_depth": 16, "iouring_best_iops": 17,
		"writeback_p99_us": 18, "writeback_stalls": 19,
		"writeback_tuned_vs_host": 20, "db_p99_always_vs_never": 21}';
	bad text;
	cols text; -- the figure columns in id order (both tables' names)
	per_list text; -- its per-vCPU columns, NULL for the others
	run_drop text;
	est_drop text;
BEGIN
	SELECT string_agg(format('%s (id %s here, %s in figures)', d.key,
				 d.value, f.id), ', ')
	INTO bad
	FROM jsonb_each_text(ids) AS d
	JOIN figures AS f ON f.name = d.key
	WHERE f.id <> d.value::smallint;
	IF bad IS NOT NULL THEN
		RAISE EXCEPTION '028_long_figures: the table figures gives other ids than the ones stored: %',
			bad;
	END IF;

	SELECT string_agg(format('%I', d.key), ', ' ORDER BY d.value::int),
	       string_agg(CASE WHEN p.attname IS NOT NULL
			       THEN format('%I', p.attname) ELSE 'NULL' END,
			  ', ' ORDER BY d.value::int),
	       string_agg(format('DROP COLUMN %I', d.key), ', '),
	       string_agg(format('DROP COLUMN %I', d.key)
			  || CASE WHEN p.attname IS NOT NULL
				  THEN format(', DROP COLUMN %I', p.attname)
				  ELSE '' END, ', ')
	INTO cols, per_list, run_drop, est_drop
	FROM jsonb_each_text(ids) AS d
	LEFT JOIN pg_attribute AS p
		ON p.attrelid = 'fleet_summary'::regclass
		   AND p.attname = d.key || '_per_vcpu' AND NOT p.attisdropped;

	-- the long views of the function files read the rows whole
	DROP VIEW IF EXISTS run_figure_values, fleet_summary_figures;

	-- moving values marks nothing changed (as 018 and 019)
	ALTER TABLE run_figures DISABLE TRIGGER USER;
	DROP INDEX run_figures_group_idx;
	ALTER TABLE run_figures ADD COLUMN figures double precision[];
	-- without trailing NULLs, as functions/10_util.sql's
	-- fleetbench_figures_trim() keeps them (not made yet)
	EXECUTE format('UPDATE run_figures SET figures = (SELECT coalesce(x.a[1:(SELECT max(i) FROM generate_subscripts(x.a, 1) AS i WHERE x.a[i] IS NOT NULL)], ''{}'') FROM (SELECT ARRAY[%s]::double precision[] AS a) AS x)',
		       cols);
	EXECUTE format('ALTER TABLE run_figures %s', run_drop);
	ALTER TABLE run_figures ENABLE TRIGGER USER;

	ALTER TABLE fleet_summary
		ADD COLUMN figures fleetbench_estimate[],
		ADD COLUMN figures_per_vcpu fleetbench_estimate[];
	EXECUTE format('UPDATE fleet_summary SET figures = ARRAY[%s]::fleetbench_estimate[], figures_per_vcpu = ARRAY[%s]::fleetbench_estimate[]',
		       cols, per_list);
	EXECUTE format('ALTER TABLE fleet_summary %s', est_drop);
END
$$;

-- the group index: the keys, then what a group's summary reads; a new
-- figure is a new element of figures, never a new column
CREATE INDEX run_figures_group_idx ON run_figures
	(provider, instance_type, kernel_release, method)
	INCLUDE (started_at, machine_id, vcpus, thp_enabled, flags, failed,
		 figures);

-- the figures whose elements the stored runs have: a figure declared
-- later is filled in them by the function files (30_figures.sql), once
CREATE TABLE figures_filled (id smallint PRIMARY KEY);
INSERT INTO figures_filled SELECT generate_series(1, 21);
COMMENT ON TABLE figures_filled IS
	'the figure ids (figures.id) that run_figures.figures holds for the runs stored before the figure was declared';

COMMENT ON COLUMN run_figures.figures IS
	'the run''s headline figures: element i is the figure of id i (figures.id), NULL where the run did not measure it';
COMMENT ON COLUMN fleet_summary.figures IS
	'the group''s estimate of each figure: element i of the figure of id i (figures.id)';
COMMENT ON COLUMN fleet_summary.figures_per_vcpu IS
	'the estimate of each run''s figure divided by its vCPUs, for the figures declared per_vcpu (NULL elsewhere)';
