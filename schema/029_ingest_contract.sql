-- SPDX-License-Identifier: MIT
-- A small, fixed ingest contract (issue 37): fleetbench_ingest_run()
-- takes one value of the composite type fleetbench_report, in place of
-- 98 positional parameters (PostgreSQL allows a function 100; the
-- signature was dropped and made again in 012, 017, 021 and 024). A field
-- added to the report from now on is an attribute added to this type by
-- a migration (ALTER TYPE fleetbench_report ADD ATTRIBUTE ...), and the
-- function's signature stays: functions/20_ingest.sql reads the type's
-- attributes by name. The attributes are the old parameters, in their
-- order, without two: `validated` (the writer's way past the checks: every
-- report is checked now) and `more` (024's JSON text, whose arrays are
-- attributes now: the targets, the windows' reasons and vCPUs, and the
-- costs as one array per run_costs column, element i for Cost i).
-- A collector sends it in binary, attribute by attribute with each one's
-- type (collector/report_params.c); a collector whose attributes differ
-- from the database's is refused by PostgreSQL (42804), and a collector
-- older than this migration refuses the database before that
-- (pg_migrations_check).

CREATE TYPE fleetbench_report AS (
	run_id uuid, schema_version integer, agent_version text,
	started_ms bigint, finished_ms bigint,
	provider text, instance_type text, region text,
	provider_source text, instance_type_source text, region_source text,
	hostname text, machine_id text,
	kernel_release text, kernel_version text, kernel_cmdline text,
	profile text, seed bigint,
	probe text,
	caps_present boolean,
	thp_enabled text, thp_defrag text, thp_shmem_enabled text,
	hugepage_size_kb bigint[], hugepage_nr bigint[], hugepage_free bigint[],
	io_uring_disabled integer, io_uring_setup text,
	io_uring_setup_errno integer, sqpoll text, sqpoll_errno integer,
	io_uring_opcodes text[], io_uring_features text[],
	vcpus integer, memory_kb bigint, cpu_model text,
	vm text, container text,
	method_key text, method_profile text, repeats bigint,
	chase_bytes bigint, chase_accesses bigint, fault_bytes bigint,
	file_bytes bigint, io_ms bigint, iodepth bigint,
	seq_bytes bigint, seq_block bigint, fs_increments bigint,
	method_only text[], randread_file boolean,
	c_name text[], c_benchmark text[], c_metric text[],
	c_numerator text[], c_denominator text[], c_ratio double precision[],
	c_ci_low double precision[], c_ci_high double precision[],
	c_level double precision[], c_method text[], c_reason text[],
	v_benchmark text[], v_variant text[], v_status text[], v_reason text[],
	v_param_end integer[], p_key text[], p_kind text[], p_value text[],
	v_window_end integer[], w_steal_pct double precision[],
	w_loadavg1 double precision[], w_wall_s double precision[],
	w_noisy boolean[],
	v_metric_end integer[], m_metric text[], m_unit text[],
	m_median double precision[], m_sample_end integer[],
	v_sample_end integer[], samples double precision[],
	mmap_bytes bigint, mmap_accesses bigint,
	bw_bytes bigint, scaling_ms bigint,
	wb_bytes bigint, wb_fsync_bytes bigint,
	with_database boolean, db_scale bigint,
	db_rate bigint, db_seconds bigint,
	writeback_dirty_bytes bigint,
	tag_keys text[], tag_values text[],
	c_target_half_width double precision[], c_target_reached boolean[],
	c_rounds integer[],
	w_noisy_reason text[], w_cpus text[],
	cost_benchmark text[], cost_wall_s double precision[],
	cost_cpu_s double precision[], cost_peak_memory_bytes bigint[],
	cost_written_bytes bigint[], cost_allowance_s double precision[],
	cost_rounds bigint[]
);
COMMENT ON TYPE fleetbench_report IS
	'one report as the collector stores it through fleetbench_ingest_run() (docs/schema.md): a new report field is a new attribute, the function''s signature stays';

-- the 98-parameter fleetbench_ingest_run() of 024, whatever its
-- signature's spelling
DO $$
DECLARE
	f regprocedure;
BEGIN
	FOR f IN SELECT p.oid FROM pg_proc AS p
		 WHERE p.proname = 'fleetbench_ingest_run'
		   AND p.pronamespace = to_regnamespace(current_schema())
	LOOP
		EXECUTE format('DROP FUNCTION %s', f);
	END LOOP;
END
$$;
