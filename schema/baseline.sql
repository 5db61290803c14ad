-- SPDX-License-Identifier: MIT
-- The baseline: the schema that migrations 001_init to 044_shape_names leave, for a
-- new database, which applies this file instead of them (docs/schema.md,
-- "A new database: the baseline"). Made by scripts/make-baseline from
-- those migrations; never edited by hand: a change is a new migration,
-- applied after this file on a new database and after the chain on an
-- old one. The functions that tables name are declared here by their
-- signatures; the function files, which migrate runs next, define
-- them, and serve refuses a database until they have.
--
-- covers: 001_init 002_views 004_queries 005_alerts 006_partition_results 007_failed_variants
-- covers: 008_method 009_retire_views 010_lean 011_probe_inline 012_ingest_validated 013_dirty_levels
-- covers: 014_checks_once 016_more_figures 017_method_more 018_profile_revision 019_more_columns 020_prices
-- covers: 021_tags 022_roles 023_placement 024_targets 025_costs 026_cost_allowances
-- covers: 027_figures 028_long_figures 029_ingest_contract 030_result_shapes 031_probe_parts 032_comparison_names
-- covers: 033_fleet_shift 034_drift 035_probe_in_two 036_shape_figure_positions 037_run_costs_by_trigger 038_host_gain_tiers
-- covers: 039_part_placement 040_costs_in_runs 041_runs_lz4 042_shape_lookup 043_int_params 044_shape_names

-- the roles, as migration 022 makes them
DO $$
DECLARE
	r text;
BEGIN
	FOREACH r IN ARRAY ARRAY['fleetbench_reader', 'fleetbench_writer'] LOOP
		CONTINUE WHEN EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r);
		IF NOT EXISTS (SELECT 1 FROM pg_roles
			       WHERE rolname = current_user
				 AND (rolcreaterole OR rolsuper)) THEN
			RAISE EXCEPTION 'migration 022 must create role % but role % lacks the CREATEROLE privilege',
				r, current_user
				USING ERRCODE = '42501',
				      HINT = 'as a superuser: CREATE ROLE fleetbench_reader NOLOGIN; CREATE ROLE fleetbench_writer NOLOGIN; then migrate again (docs/operations.md, "Access roles")';
		END IF;
		-- another database's migrate may make it at the same moment:
		-- roles are the cluster's, migrate's lock is the database's
		BEGIN
			EXECUTE format('CREATE ROLE %I NOLOGIN', r);
		EXCEPTION WHEN duplicate_object OR unique_violation THEN
			RAISE NOTICE 'role % was made meanwhile by another session', r;
		END;
	END LOOP;
END
$$;

CREATE TYPE fleetbench_estimate AS (
	n integer,
	median double precision,
	ci_low double precision,
	ci_high double precision
);

CREATE TYPE fleetbench_report AS (
	run_id uuid,
	schema_version integer,
	agent_version text,
	started_ms bigint,
	finished_ms bigint,
	provider text,
	instance_type text,
	region text,
	provider_source text,
	instance_type_source text,
	region_source text,
	hostname text,
	machine_id text,
	kernel_release text,
	kernel_version text,
	kernel_cmdline text,
	profile text,
	seed bigint,
	probe text,
	caps_present boolean,
	thp_enabled text,
	thp_defrag text,
	thp_shmem_enabled text,
	hugepage_size_kb bigint[],
	hugepage_nr bigint[],
	hugepage_free bigint[],
	io_uring_disabled integer,
	io_uring_setup text,
	io_uring_setup_errno integer,
	sqpoll text,
	sqpoll_errno integer,
	io_uring_opcodes text[],
	io_uring_features text[],
	vcpus integer,
	memory_kb bigint,
	cpu_model text,
	vm text,
	container text,
	method_key text,
	method_profile text,
	repeats bigint,
	chase_bytes bigint,
	chase_accesses bigint,
	fault_bytes bigint,
	file_bytes bigint,
	io_ms bigint,
	iodepth bigint,
	seq_bytes bigint,
	seq_block bigint,
	fs_increments bigint,
	method_only text[],
	randread_file boolean,
	c_name text[],
	c_benchmark text[],
	c_metric text[],
	c_numerator text[],
	c_denominator text[],
	c_ratio double precision[],
	c_ci_low double precision[],
	c_ci_high double precision[],
	c_level double precision[],
	c_method text[],
	c_reason text[],
	v_benchmark text[],
	v_variant text[],
	v_status text[],
	v_reason text[],
	v_param_end integer[],
	p_key text[],
	p_kind text[],
	p_value text[],
	v_window_end integer[],
	w_steal_pct double precision[],
	w_loadavg1 double precision[],
	w_wall_s double precision[],
	w_noisy boolean[],
	v_metric_end integer[],
	m_metric text[],
	m_unit text[],
	m_median double precision[],
	m_sample_end integer[],
	v_sample_end integer[],
	samples double precision[],
	mmap_bytes bigint,
	mmap_accesses bigint,
	bw_bytes bigint,
	scaling_ms bigint,
	wb_bytes bigint,
	wb_fsync_bytes bigint,
	with_database boolean,
	db_scale bigint,
	db_rate bigint,
	db_seconds bigint,
	writeback_dirty_bytes bigint,
	tag_keys text[],
	tag_values text[],
	c_target_half_width double precision[],
	c_target_reached boolean[],
	c_rounds integer[],
	w_noisy_reason text[],
	w_cpus text[],
	cost_benchmark text[],
	cost_wall_s double precision[],
	cost_cpu_s double precision[],
	cost_peak_memory_bytes bigint[],
	cost_written_bytes bigint[],
	cost_allowance_s double precision[],
	cost_rounds bigint[],
	probe_part text,
	probe_rest text,
	p_int bigint[],
	shape_names text,
	shape_kinds text
);

COMMENT ON TYPE fleetbench_report IS 'one report as the collector stores it through fleetbench_ingest_run() (docs/schema.md): a new report field is a new attribute, the function''s signature stays';

CREATE FUNCTION fleetbench_comparison_names_valid(c_name text[], c_benchmark text[], c_metric text[], c_numerator text[], c_denominator text[]) RETURNS boolean
LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'fleetbench_comparison_names_valid() is made by the function files: run fleetbench-collector migrate'; END$$;

CREATE TABLE fleet_summary (
    level smallint,
    provider text,
    instance_type text,
    kernel text,
    region text,
    vm text,
    thp text,
    vcpus integer,
    host text,
    hosts bigint NOT NULL,
    runs bigint NOT NULL,
    kernels bigint NOT NULL,
    vcpus_mode integer,
    iouring_ok bigint NOT NULL,
    sqpoll_ok bigint NOT NULL,
    hugepage_1g bigint NOT NULL,
    steal_flagged bigint NOT NULL,
    thp_mode text,
    first_run timestamp with time zone NOT NULL,
    last_run timestamp with time zone NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    failures text,
    method text,
    tags text,
    wide bigint DEFAULT 0 NOT NULL,
    figures fleetbench_estimate[],
    figures_per_vcpu fleetbench_estimate[]
);

COMMENT ON TABLE fleet_summary IS 'per instance type and kernel (level 3) and per instance type (level 2): medians with intervals, kept current by fleetbench_refresh()';

COMMENT ON COLUMN fleet_summary.tags IS 'by tag.KEY: the group''s tags, "key=value, ..." in the order asked, (none) for a run without the key; NULL in the cached levels';

COMMENT ON COLUMN fleet_summary.wide IS 'runs with a comparison whose interval did not reach its target (run_figures.flags bit 16)';

COMMENT ON COLUMN fleet_summary.figures IS 'the group''s estimate of each figure: element i of the figure of id i (figures.id)';

COMMENT ON COLUMN fleet_summary.figures_per_vcpu IS 'the estimate of each run''s figure divided by its vCPUs, for the figures declared per_vcpu (NULL elsewhere)';

CREATE FUNCTION fleetbench_mark_changed() RETURNS trigger
LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'fleetbench_mark_changed() is made by the function files: run fleetbench-collector migrate'; END$$;

CREATE FUNCTION fleetbench_results_valid(v_status text[], v_reason text[], p_value text[], v_window_end integer[], w_steal_pct double precision[], w_loadavg1 double precision[], w_wall_s double precision[], w_noisy boolean[], m_median double precision[], m_sample_end integer[], v_sample_end integer[], samples double precision[]) RETURNS boolean
LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'fleetbench_results_valid() is made by the function files: run fleetbench-collector migrate'; END$$;

CREATE TABLE run_figures (
    run_id uuid NOT NULL,
    started_at timestamp with time zone NOT NULL,
    provider text NOT NULL,
    instance_type text NOT NULL,
    region text NOT NULL,
    kernel_release text NOT NULL,
    machine_id text NOT NULL,
    hostname text NOT NULL,
    vm text,
    vcpus integer,
    thp_enabled text,
    iouring_ok boolean,
    sqpoll_ok boolean,
    hugepage_1g boolean,
    steal_flagged boolean NOT NULL,
    failed text[] DEFAULT '{}'::text[] NOT NULL,
    method text NOT NULL,
    flags smallint,
    tags jsonb DEFAULT '{}'::jsonb NOT NULL,
    figures double precision[]
);

COMMENT ON TABLE run_figures IS 'one row per run: labels, capabilities and headline figures, written at commit from run_figures_live';

COMMENT ON COLUMN run_figures.failed IS 'the run''s failed variants, benchmark/variant in run order; empty when none failed';

COMMENT ON COLUMN run_figures.method IS 'the run''s method key (runs.method)';

COMMENT ON COLUMN run_figures.flags IS 'iouring_ok, sqpoll_ok, hugepage_1g, steal_flagged (a repeat flagged noisy) and wide (a comparison that did not reach its target, 024) as bits 1, 2, 4, 8 and 16 (fleetbench_flags())';

COMMENT ON COLUMN run_figures.tags IS 'runs.tags, for the queries'' --where tag.KEY=VALUE and --by tag.KEY';

COMMENT ON COLUMN run_figures.figures IS 'the run''s headline figures: element i is the figure of id i (figures.id), NULL where the run did not measure it';

CREATE FUNCTION fleetbench_runs_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'fleetbench_runs_deleted() is made by the function files: run fleetbench-collector migrate'; END$$;

CREATE FUNCTION fleetbench_runs_valid(c_ratio double precision[], c_ci_low double precision[], c_ci_high double precision[], c_level double precision[], c_method text[], c_reason text[], hugepage_sizes_kb integer[], hugepage_nr bigint[], hugepage_free bigint[], cost_benchmark text[], cost_wall_s double precision[], cost_cpu_s double precision[], cost_peak_memory_bytes bigint[], cost_written_bytes bigint[], cost_allowance_s double precision[], cost_rounds bigint[]) RETURNS boolean
LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'fleetbench_runs_valid() is made by the function files: run fleetbench-collector migrate'; END$$;

CREATE FUNCTION fleetbench_shape_valid(v_benchmark text[], v_variant text[], v_param_end integer[], p_key text[], p_kind text, v_metric_end integer[], m_metric text[], m_unit text[]) RETURNS boolean
LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'fleetbench_shape_valid() is made by the function files: run fleetbench-collector migrate'; END$$;

CREATE TABLE alert_errors (
    run_id uuid NOT NULL,
    sqlstate text NOT NULL,
    message text NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
);

COMMENT ON TABLE alert_errors IS 'runs whose alert check raised an error (the run itself is stored)';

CREATE TABLE alert_settings (
    one boolean DEFAULT true NOT NULL,
    gain_min_change double precision,
    gain_alpha double precision DEFAULT 0.0001 NOT NULL,
    fleet_q double precision,
    drift_p double precision,
    gain_large_change double precision,
    gain_large_alpha double precision,
    CONSTRAINT alert_settings_alpha_probability CHECK (((gain_alpha > (0)::double precision) AND (gain_alpha < (1)::double precision))),
    CONSTRAINT alert_settings_drift_p_probability CHECK (((drift_p > (0)::double precision) AND (drift_p < (1)::double precision))),
    CONSTRAINT alert_settings_fleet_q_probability CHECK (((fleet_q > (0)::double precision) AND (fleet_q < (1)::double precision))),
    CONSTRAINT alert_settings_large_alpha_probability CHECK (((gain_large_alpha > (0)::double precision) AND (gain_large_alpha < (1)::double precision))),
    CONSTRAINT alert_settings_large_change_positive CHECK ((gain_large_change > (0)::double precision)),
    CONSTRAINT alert_settings_min_change_positive CHECK ((gain_min_change > (0)::double precision)),
    CONSTRAINT alert_settings_one_row CHECK (one)
);

COMMENT ON TABLE alert_settings IS 'thresholds of the gain alerts (every gain of fleetbench_alert_gains()): smallest relative change and largest p-value';

COMMENT ON COLUMN alert_settings.gain_min_change IS 'the least relative change of a gain''s median that alerts, for every figure; NULL: each figure''s own (figures.alert_min_change)';

COMMENT ON COLUMN alert_settings.gain_alpha IS 'the p-value below which a host''s gain that moved by its least change alerts (038: 1e-4, 9 repeats a side reach it)';

COMMENT ON COLUMN alert_settings.gain_large_change IS 'a very large change: the gain at least 1 + this times, or at most 1 / (1 + this) of, what it was (038; NULL: 1, doubled or halved)';

COMMENT ON COLUMN alert_settings.gain_large_alpha IS 'the p-value below which a host''s very large change alerts (038; NULL: 0.01, 5 repeats a side reach it)';

CREATE TABLE alerts (
    id bigint NOT NULL,
    fleet_alert_id bigint NOT NULL,
    machine_id text NOT NULL,
    hostname text NOT NULL,
    provider text NOT NULL,
    instance_type text NOT NULL,
    old_kernel text NOT NULL,
    new_kernel text NOT NULL,
    kind text NOT NULL,
    diff jsonb NOT NULL,
    old_run_id uuid NOT NULL,
    new_run_id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    acknowledged_at timestamp with time zone,
    figure text,
    CONSTRAINT alerts_diff_is_object CHECK ((jsonb_typeof(diff) = 'object'::text)),
    CONSTRAINT alerts_figure_of_gain CHECK (((kind = 'gain'::text) = (figure IS NOT NULL))),
    CONSTRAINT alerts_kind CHECK ((kind = ANY (ARRAY['fingerprint'::text, 'gain'::text])))
);

COMMENT ON TABLE alerts IS 'one per host, old and new kernel and kind: the before/after diff of the two runs compared';

COMMENT ON COLUMN alerts.figure IS 'the gain a gain alert is about (iouring_vs_pread, mmap_thp_speedup, ...; fleetbench_alert_gains()); NULL for a fingerprint alert';

ALTER TABLE alerts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME alerts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE comparison_names (
    names_id bigint NOT NULL,
    digest bytea NOT NULL,
    c_name text[] NOT NULL,
    c_benchmark text[] NOT NULL,
    c_metric text[] NOT NULL,
    c_numerator text[] NOT NULL,
    c_denominator text[] NOT NULL,
    CONSTRAINT comparison_names_valid CHECK (fleetbench_comparison_names_valid(c_name, c_benchmark, c_metric, c_numerator, c_denominator))
);

COMMENT ON TABLE comparison_names IS 'the names of a run''s comparisons (c_name .. c_denominator), stored once per distinct list (032); runs.comparison_names_id refers to one';

ALTER TABLE comparison_names ALTER COLUMN names_id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME comparison_names_names_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE drift_checked (
    provider text NOT NULL,
    instance_type text NOT NULL,
    method text NOT NULL,
    kernel_release text NOT NULL,
    day date NOT NULL
);

COMMENT ON TABLE drift_checked IS 'per group, the day up to which its drift was last checked (034)';

CREATE TABLE figures (
    name text NOT NULL,
    id smallint NOT NULL,
    "position" smallint NOT NULL,
    family text NOT NULL,
    kind text NOT NULL,
    benchmark text NOT NULL,
    variant text,
    base text,
    metric text NOT NULL,
    unit text NOT NULL,
    higher_is_better boolean NOT NULL,
    per_vcpu boolean NOT NULL,
    alert_min_change double precision,
    label text NOT NULL,
    note text NOT NULL,
    CONSTRAINT figures_alert_min_change_check CHECK (((alert_min_change > (0)::double precision) AND (alert_min_change <= (10)::double precision))),
    CONSTRAINT figures_alert_ratio CHECK (((alert_min_change IS NULL) OR (kind = 'ratio'::text))),
    CONSTRAINT figures_family_check CHECK ((family ~ '^[a-z][a-z0-9_]{0,39}$'::text)),
    CONSTRAINT figures_id_check CHECK (((id >= 1) AND (id <= 1000))),
    CONSTRAINT figures_kind_check CHECK ((kind = ANY (ARRAY['ratio'::text, 'value'::text]))),
    CONSTRAINT figures_name_check CHECK ((name ~ '^[a-z][a-z0-9_]{0,39}$'::text)),
    CONSTRAINT figures_position_check CHECK (("position" > 0)),
    CONSTRAINT figures_ratio_shape CHECK (((kind = 'value'::text) OR ((variant IS NULL) = (base IS NULL)))),
    CONSTRAINT figures_value_shape CHECK (((kind = 'ratio'::text) OR ((variant IS NOT NULL) AND (base IS NULL))))
);

COMMENT ON TABLE figures IS 'the headline figures, one row each, as proto/figures.def declares them (loaded by migrate: never edit)';

CREATE TABLE figures_filled (
    id smallint NOT NULL
);

COMMENT ON TABLE figures_filled IS 'the figure ids (figures.id) that run_figures.figures holds for the runs stored before the figure was declared';

CREATE TABLE fleet_alerts (
    id bigint NOT NULL,
    provider text NOT NULL,
    instance_type text NOT NULL,
    new_kernel text NOT NULL,
    kind text NOT NULL,
    change jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    acknowledged_at timestamp with time zone,
    delivered_at timestamp with time zone,
    delivery_attempts integer DEFAULT 0 NOT NULL,
    next_delivery_at timestamp with time zone DEFAULT now() NOT NULL,
    delivery_error text,
    effect jsonb,
    CONSTRAINT fleet_alerts_change_is_object CHECK ((jsonb_typeof(change) = 'object'::text)),
    CONSTRAINT fleet_alerts_effect_is_object CHECK (((effect IS NULL) OR (jsonb_typeof(effect) = 'object'::text))),
    CONSTRAINT fleet_alerts_kind CHECK ((kind = ANY (ARRAY['fingerprint'::text, 'gain'::text, 'shift'::text, 'drift'::text])))
);

COMMENT ON TABLE fleet_alerts IS 'one change on one new kernel for a provider and instance type: listed, acknowledged, delivered';

COMMENT ON COLUMN fleet_alerts.effect IS 'a shift or drift alert''s evaluation (033, 034): figure, change, change_lo, change_hi (relative), hosts, test, p, and a shift''s q and old_kernel or a drift''s changed_on and detected_on; NULL for the other kinds';

ALTER TABLE fleet_alerts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME fleet_alerts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE fleet_dirty (
    provider text NOT NULL,
    instance_type text NOT NULL,
    kernel_release text NOT NULL,
    method text NOT NULL,
    level smallint NOT NULL,
    CONSTRAINT fleet_dirty_level_check CHECK ((level = ANY (ARRAY[2, 3])))
);

COMMENT ON TABLE fleet_dirty IS 'instance types, kernels and methods with runs stored since the level (2 or 3) of fleet_summary was last refreshed';

CREATE TABLE instance_prices (
    provider text NOT NULL,
    instance_type text NOT NULL,
    region text NOT NULL,
    currency text NOT NULL,
    price_per_hour numeric NOT NULL,
    valid_from date NOT NULL,
    imported_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT instance_prices_currency_check CHECK ((currency ~ '^[A-Z]{3}$'::text)),
    CONSTRAINT instance_prices_instance_type_check CHECK (((instance_type <> ''::text) AND (instance_type = btrim(instance_type)))),
    CONSTRAINT instance_prices_price_per_hour_check CHECK ((price_per_hour > (0)::numeric)),
    CONSTRAINT instance_prices_provider_check CHECK (((provider <> ''::text) AND (provider = btrim(provider)))),
    CONSTRAINT instance_prices_region_check CHECK (((region <> ''::text) AND (region = btrim(region))))
);

COMMENT ON TABLE instance_prices IS 'what an instance type costs per hour in a region and currency, from valid_from on (fleetbench prices import)';

COMMENT ON COLUMN instance_prices.provider IS 'the provider, as the agents label it (runs.provider)';

COMMENT ON COLUMN instance_prices.instance_type IS 'the instance type, as the agents label it (runs.instance_type)';

COMMENT ON COLUMN instance_prices.region IS 'the region, as the agents label it (runs.region; ''unknown'' matches runs without a region label)';

COMMENT ON COLUMN instance_prices.currency IS 'ISO 4217 code: three upper-case letters (USD, EUR)';

COMMENT ON COLUMN instance_prices.price_per_hour IS 'the price of one instance for one hour, in currency, above 0, the digits as imported';

COMMENT ON COLUMN instance_prices.valid_from IS 'the first day the price applies; it applies until a row of a later valid_from that has begun';

COMMENT ON COLUMN instance_prices.imported_at IS 'when the row was imported or its price last changed';

CREATE TABLE methods (
    key text NOT NULL,
    profile text NOT NULL,
    repeats bigint,
    chase_bytes bigint,
    chase_accesses bigint,
    fault_bytes bigint,
    file_bytes bigint,
    io_ms bigint,
    iodepth bigint,
    seq_bytes bigint,
    seq_block bigint,
    fs_increments bigint,
    "only" text[],
    randread_file boolean,
    mmap_bytes bigint,
    mmap_accesses bigint,
    bw_bytes bigint,
    scaling_ms bigint,
    wb_bytes bigint,
    wb_fsync_bytes bigint,
    with_database boolean,
    db_scale bigint,
    db_rate bigint,
    db_seconds bigint,
    writeback_dirty_bytes bigint
);

COMMENT ON TABLE methods IS 'one row per method key: the profile and the parameters that change what a run measures';

CREATE TABLE probe_parts (
    part_id bigint NOT NULL,
    digest bytea NOT NULL,
    body jsonb NOT NULL,
    placement text GENERATED ALWAYS AS (
CASE
    WHEN (jsonb_typeof((body #> '{topology,placement}'::text[])) = 'string'::text) THEN (body #>> '{topology,placement}'::text[])
    ELSE NULL::text
END) STORED,
    CONSTRAINT probe_parts_body_is_object CHECK ((jsonb_typeof(body) = 'object'::text))
);

COMMENT ON TABLE probe_parts IS 'the sections of probes that do not change between runs of a host, stored once per distinct value (031); runs.probe_part refers to one';

COMMENT ON COLUMN probe_parts.placement IS 'the part''s topology.placement when a string, else NULL (039; runs.placement is copied from it)';

ALTER TABLE probe_parts ALTER COLUMN part_id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME probe_parts_part_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE result_shapes (
    shape_id bigint NOT NULL,
    digest bytea NOT NULL,
    v_benchmark text[] NOT NULL,
    v_variant text[] NOT NULL,
    v_param_end integer[] NOT NULL,
    p_key text[],
    p_kind text,
    v_metric_end integer[] NOT NULL,
    m_metric text[],
    m_unit text[],
    figure_pos integer[],
    names text,
    CONSTRAINT result_shapes_valid CHECK (fleetbench_shape_valid(v_benchmark, v_variant, v_param_end, p_key, p_kind, v_metric_end, m_metric, m_unit))
);
ALTER TABLE ONLY result_shapes ALTER COLUMN p_key SET COMPRESSION lz4;
ALTER TABLE ONLY result_shapes ALTER COLUMN m_metric SET COMPRESSION lz4;
ALTER TABLE ONLY result_shapes ALTER COLUMN m_unit SET COMPRESSION lz4;
ALTER TABLE ONLY result_shapes ALTER COLUMN names SET COMPRESSION lz4;

COMMENT ON TABLE result_shapes IS 'the names, units and ends of a report''s variants, parameters and metrics, stored once per distinct shape (030); run_results.shape_id refers to one';

COMMENT ON COLUMN result_shapes.figure_pos IS 'element id: the position in run_results.m_median of value figure id (proto/figures.def) in runs of this shape; NULL where it has none (036)';

COMMENT ON COLUMN result_shapes.names IS 'the shape''s names in one text as a writer sends them in shape_names (044): v_benchmark, v_variant, p_key, m_metric and m_unit joined by U+001F; NULL when a name holds that character (such a shape is found by its arrays)';

ALTER TABLE result_shapes ALTER COLUMN shape_id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME result_shapes_shape_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE run_results (
    run_id uuid NOT NULL,
    started_at timestamp with time zone NOT NULL,
    v_status text[] NOT NULL,
    v_reason text[] NOT NULL,
    p_value text[],
    v_window_end integer[] NOT NULL,
    w_steal_pct double precision[],
    w_loadavg1 double precision[],
    w_wall_s double precision[],
    w_noisy boolean[],
    m_median double precision[],
    m_sample_end integer[],
    v_sample_end integer[] NOT NULL,
    samples double precision[],
    w_noisy_reason text[],
    w_cpus text[],
    shape_id bigint NOT NULL,
    p_int bigint[],
    CONSTRAINT run_results_valid CHECK (fleetbench_results_valid(v_status, v_reason, p_value, v_window_end, w_steal_pct, w_loadavg1, w_wall_s, w_noisy, m_median, m_sample_end, v_sample_end, samples))
)
PARTITION BY RANGE (started_at);
ALTER TABLE ONLY run_results ALTER COLUMN v_status SET COMPRESSION lz4;
ALTER TABLE ONLY run_results ALTER COLUMN v_reason SET COMPRESSION lz4;
ALTER TABLE ONLY run_results ALTER COLUMN p_value SET COMPRESSION lz4;
ALTER TABLE ONLY run_results ALTER COLUMN v_window_end SET COMPRESSION lz4;
ALTER TABLE ONLY run_results ALTER COLUMN w_steal_pct SET COMPRESSION lz4;
ALTER TABLE ONLY run_results ALTER COLUMN w_loadavg1 SET COMPRESSION lz4;
ALTER TABLE ONLY run_results ALTER COLUMN w_wall_s SET COMPRESSION lz4;
ALTER TABLE ONLY run_results ALTER COLUMN w_noisy SET COMPRESSION lz4;
ALTER TABLE ONLY run_results ALTER COLUMN m_median SET COMPRESSION lz4;
ALTER TABLE ONLY run_results ALTER COLUMN m_sample_end SET COMPRESSION lz4;
ALTER TABLE ONLY run_results ALTER COLUMN v_sample_end SET COMPRESSION lz4;
ALTER TABLE ONLY run_results ALTER COLUMN samples SET COMPRESSION lz4;
ALTER TABLE ONLY run_results ALTER COLUMN w_noisy_reason SET COMPRESSION lz4;
ALTER TABLE ONLY run_results ALTER COLUMN w_cpus SET COMPRESSION lz4;
ALTER TABLE ONLY run_results ALTER COLUMN p_int SET COMPRESSION lz4;

COMMENT ON TABLE run_results IS 'one row per run with results: its variants, parameters, repeat windows, metrics with medians and samples, as arrays (docs/schema.md)';

COMMENT ON COLUMN run_results.w_noisy_reason IS 'per window (as w_noisy): why it was flagged noisy, NULL when it was not or the agent did not say';

COMMENT ON COLUMN run_results.w_cpus IS 'per window (as w_noisy): the vCPUs its measuring thread ran on, at start and end ("0" or "0,1"), NULL when unknown';

COMMENT ON COLUMN run_results.p_int IS 'the values of the parameters of kind i, in their order (043); NULL: p_value holds every kind''s, as before 043';

CREATE TABLE runs (
    run_id uuid NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone NOT NULL,
    schema_version integer NOT NULL,
    agent_version text NOT NULL,
    provider text DEFAULT 'unknown'::text NOT NULL,
    instance_type text DEFAULT 'unknown'::text NOT NULL,
    region text DEFAULT 'unknown'::text NOT NULL,
    provider_source text,
    instance_type_source text,
    region_source text,
    hostname text NOT NULL,
    machine_id text NOT NULL,
    kernel_release text NOT NULL,
    kernel_version text,
    kernel_cmdline text,
    profile text,
    seed bigint,
    thp_enabled text,
    thp_defrag text,
    hugepage_sizes_kb integer[],
    hugepage_1g_present boolean,
    io_uring_disabled integer,
    io_uring_setup text,
    io_uring_setup_errno integer,
    sqpoll text,
    sqpoll_errno integer,
    io_uring_opcodes text[],
    io_uring_features text[],
    vcpus integer,
    memory_kb bigint,
    vm text,
    container text,
    method text NOT NULL,
    thp_shmem_enabled text,
    hugepage_nr bigint[],
    hugepage_free bigint[],
    cpu_model text,
    c_ratio double precision[],
    c_ci_low double precision[],
    c_ci_high double precision[],
    c_level double precision[],
    c_method text[],
    c_reason text[],
    tags jsonb DEFAULT '{}'::jsonb NOT NULL,
    placement text,
    c_target_half_width double precision[],
    c_target_reached boolean[],
    c_rounds integer[],
    probe_part bigint NOT NULL,
    probe_rest jsonb NOT NULL,
    comparison_names_id bigint,
    cost_benchmark text[],
    cost_wall_s double precision[],
    cost_cpu_s double precision[],
    cost_peak_memory_bytes bigint[],
    cost_written_bytes bigint[],
    cost_allowance_s double precision[],
    cost_rounds bigint[],
    CONSTRAINT runs_arrays_valid CHECK (fleetbench_runs_valid(c_ratio, c_ci_low, c_ci_high, c_level, c_method, c_reason, hugepage_sizes_kb, hugepage_nr, hugepage_free, cost_benchmark, cost_wall_s, cost_cpu_s, cost_peak_memory_bytes, cost_written_bytes, cost_allowance_s, cost_rounds)),
    CONSTRAINT runs_finished_after_start CHECK ((finished_at >= started_at)),
    CONSTRAINT runs_probe_rest_is_object CHECK ((jsonb_typeof(probe_rest) = 'object'::text))
);
ALTER TABLE ONLY runs ALTER COLUMN kernel_version SET COMPRESSION lz4;
ALTER TABLE ONLY runs ALTER COLUMN kernel_cmdline SET COMPRESSION lz4;
ALTER TABLE ONLY runs ALTER COLUMN io_uring_opcodes SET COMPRESSION lz4;
ALTER TABLE ONLY runs ALTER COLUMN io_uring_features SET COMPRESSION lz4;
ALTER TABLE ONLY runs ALTER COLUMN c_ratio SET COMPRESSION lz4;
ALTER TABLE ONLY runs ALTER COLUMN c_ci_low SET COMPRESSION lz4;
ALTER TABLE ONLY runs ALTER COLUMN c_ci_high SET COMPRESSION lz4;
ALTER TABLE ONLY runs ALTER COLUMN c_level SET COMPRESSION lz4;
ALTER TABLE ONLY runs ALTER COLUMN c_method SET COMPRESSION lz4;
ALTER TABLE ONLY runs ALTER COLUMN c_reason SET COMPRESSION lz4;
ALTER TABLE ONLY runs ALTER COLUMN tags SET COMPRESSION lz4;
ALTER TABLE ONLY runs ALTER COLUMN probe_rest SET COMPRESSION lz4;
ALTER TABLE ONLY runs ALTER COLUMN cost_benchmark SET COMPRESSION lz4;
ALTER TABLE ONLY runs ALTER COLUMN cost_wall_s SET COMPRESSION lz4;
ALTER TABLE ONLY runs ALTER COLUMN cost_cpu_s SET COMPRESSION lz4;
ALTER TABLE ONLY runs ALTER COLUMN cost_peak_memory_bytes SET COMPRESSION lz4;
ALTER TABLE ONLY runs ALTER COLUMN cost_written_bytes SET COMPRESSION lz4;
ALTER TABLE ONLY runs ALTER COLUMN cost_allowance_s SET COMPRESSION lz4;
ALTER TABLE ONLY runs ALTER COLUMN cost_rounds SET COMPRESSION lz4;

COMMENT ON TABLE runs IS 'one row per agent run: labels, kernel, typed probe columns and the whole probe';

COMMENT ON COLUMN runs.method IS 'the method key (methods); runs stored before migration 008 are keyed by their profile alone';

COMMENT ON COLUMN runs.thp_shmem_enabled IS 'the selected mode of /sys/kernel/mm/transparent_hugepage/shmem_enabled';

COMMENT ON COLUMN runs.hugepage_nr IS 'the hugetlb pool of each size of hugepage_sizes_kb, in pages (nr_hugepages)';

COMMENT ON COLUMN runs.hugepage_free IS 'the free pages of each pool of hugepage_nr';

COMMENT ON COLUMN runs.cpu_model IS 'the CPU model name';

COMMENT ON COLUMN runs.tags IS 'the run''s tags, {"key": "value"} (Report.tags; {} without any)';

COMMENT ON COLUMN runs.placement IS 'the vCPU placement the guest saw (probe topology.placement), NULL when unknown';

COMMENT ON COLUMN runs.c_target_half_width IS 'per comparison (as c_name): the relative half-width its interval aimed at (0.05: within 5%), NULL without a target';

COMMENT ON COLUMN runs.c_target_reached IS 'per comparison (as c_name): whether its interval reached c_target_half_width before the budget or the most repeats ended the rounds, NULL without a target';

COMMENT ON COLUMN runs.c_rounds IS 'per comparison (as c_name): the interleaved rounds its interval was computed from, NULL without a target';

COMMENT ON COLUMN runs.probe_part IS 'the probe''s sections that do not change between runs (probe_parts); r.probe is the whole probe (probe(runs))';

COMMENT ON COLUMN runs.probe_rest IS 'the probe''s sections that change between runs: meta, host, steal, psi, vmstat';

COMMENT ON COLUMN runs.comparison_names_id IS 'the names of the run''s comparisons (comparison_names), NULL when it has none; element i of the c_ arrays is comparison i';

COMMENT ON COLUMN runs.cost_benchmark IS 'what the run cost its host (issue 36, 040): the benchmark of each element of the cost_ arrays, the run''s total named ''total''; NULL from agents before 025. The view run_costs gives a row per element';

COMMENT ON COLUMN runs.cost_allowance_s IS 'the seconds each benchmark was allowed (the total: the run''s max_seconds); NULL elements from agents before 026';

COMMENT ON COLUMN runs.cost_rounds IS 'the rounds each benchmark measured; NULL for the total and from agents before 026';

ALTER TABLE ONLY alert_settings
    ADD CONSTRAINT alert_settings_pkey PRIMARY KEY (one);

ALTER TABLE ONLY alerts
    ADD CONSTRAINT alerts_once UNIQUE NULLS NOT DISTINCT (machine_id, old_kernel, new_kernel, kind, figure);

ALTER TABLE ONLY alerts
    ADD CONSTRAINT alerts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY comparison_names
    ADD CONSTRAINT comparison_names_digest_key UNIQUE (digest);

ALTER TABLE ONLY comparison_names
    ADD CONSTRAINT comparison_names_pkey PRIMARY KEY (names_id);

ALTER TABLE ONLY drift_checked
    ADD CONSTRAINT drift_checked_pkey PRIMARY KEY (provider, instance_type, method, kernel_release);

ALTER TABLE ONLY figures_filled
    ADD CONSTRAINT figures_filled_pkey PRIMARY KEY (id);

ALTER TABLE ONLY figures
    ADD CONSTRAINT figures_id_key UNIQUE (id);

ALTER TABLE ONLY figures
    ADD CONSTRAINT figures_pkey PRIMARY KEY (name);

ALTER TABLE ONLY figures
    ADD CONSTRAINT figures_position_once UNIQUE ("position") DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY fleet_alerts
    ADD CONSTRAINT fleet_alerts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY instance_prices
    ADD CONSTRAINT instance_prices_pkey PRIMARY KEY (provider, instance_type, region, currency, valid_from);

ALTER TABLE ONLY methods
    ADD CONSTRAINT methods_pkey PRIMARY KEY (key);

ALTER TABLE ONLY probe_parts
    ADD CONSTRAINT probe_parts_digest_key UNIQUE (digest);

ALTER TABLE ONLY probe_parts
    ADD CONSTRAINT probe_parts_pkey PRIMARY KEY (part_id);

ALTER TABLE ONLY result_shapes
    ADD CONSTRAINT result_shapes_digest_key UNIQUE (digest);

ALTER TABLE ONLY result_shapes
    ADD CONSTRAINT result_shapes_pkey PRIMARY KEY (shape_id);

ALTER TABLE ONLY run_figures
    ADD CONSTRAINT run_figures_pkey PRIMARY KEY (run_id);

ALTER TABLE ONLY runs
    ADD CONSTRAINT runs_pkey PRIMARY KEY (run_id);

CREATE INDEX alerts_fleet_idx ON alerts USING btree (fleet_alert_id);

CREATE INDEX comparison_names_name_idx ON comparison_names USING hash (c_name);

CREATE UNIQUE INDEX fleet_alerts_change_key ON fleet_alerts USING btree (provider, instance_type, new_kernel, kind, md5((change)::text));

CREATE INDEX fleet_alerts_undelivered_idx ON fleet_alerts USING btree (next_delivery_at) WHERE ((delivered_at IS NULL) AND (acknowledged_at IS NULL));

CREATE INDEX fleet_dirty_key_idx ON fleet_dirty USING btree (level, provider, instance_type, kernel_release, method);

CREATE INDEX fleet_summary_key_idx ON fleet_summary USING btree (level, provider, instance_type, kernel, method);

CREATE INDEX result_shapes_kinds_idx ON result_shapes USING hash (p_kind);

CREATE INDEX result_shapes_names_idx ON result_shapes USING hash (names);

CREATE INDEX run_figures_group_idx ON run_figures USING btree (provider, instance_type, kernel_release, method) INCLUDE (started_at, machine_id, vcpus, thp_enabled, flags, failed, figures);

CREATE INDEX run_figures_started_idx ON run_figures USING btree (started_at);

CREATE INDEX run_figures_tags_idx ON run_figures USING gin (tags jsonb_path_ops);

CREATE INDEX run_results_run_idx ON ONLY run_results USING btree (run_id);

CREATE INDEX runs_group_idx ON runs USING btree (provider, instance_type, kernel_release);

CREATE INDEX runs_host_kernel_idx ON runs USING btree (machine_id, kernel_release, method, started_at);

CREATE INDEX runs_host_latest_idx ON runs USING btree (machine_id, started_at DESC);

CREATE INDEX runs_kernel_idx ON runs USING btree (kernel_release);

CREATE INDEX runs_placement_idx ON runs USING btree (machine_id, started_at, run_id) INCLUDE (placement, kernel_release, provider, instance_type) WHERE (placement IS NOT NULL);

CREATE INDEX runs_started_idx ON runs USING btree (started_at);

CREATE INDEX runs_tags_idx ON runs USING gin (tags jsonb_path_ops);

CREATE TRIGGER run_figures_dirty_delete AFTER DELETE ON run_figures REFERENCING OLD TABLE AS fleetbench_figures FOR EACH STATEMENT EXECUTE FUNCTION fleetbench_mark_changed();

CREATE TRIGGER run_figures_dirty_insert AFTER INSERT ON run_figures REFERENCING NEW TABLE AS fleetbench_figures FOR EACH STATEMENT EXECUTE FUNCTION fleetbench_mark_changed();

CREATE TRIGGER run_figures_dirty_update_new AFTER UPDATE ON run_figures REFERENCING NEW TABLE AS fleetbench_figures FOR EACH STATEMENT EXECUTE FUNCTION fleetbench_mark_changed();

CREATE TRIGGER run_figures_dirty_update_old AFTER UPDATE ON run_figures REFERENCING OLD TABLE AS fleetbench_figures FOR EACH STATEMENT EXECUTE FUNCTION fleetbench_mark_changed();

CREATE TRIGGER runs_delete_results AFTER DELETE ON runs REFERENCING OLD TABLE AS fleetbench_old_runs FOR EACH STATEMENT EXECUTE FUNCTION fleetbench_runs_deleted();

CREATE TRIGGER runs_truncate_results AFTER TRUNCATE ON runs FOR EACH STATEMENT EXECUTE FUNCTION fleetbench_runs_deleted();

ALTER TABLE ONLY alerts
    ADD CONSTRAINT alerts_fleet_alert_id_fkey FOREIGN KEY (fleet_alert_id) REFERENCES fleet_alerts(id) ON DELETE CASCADE;

ALTER TABLE run_results
    ADD CONSTRAINT run_results_shape_id_fkey FOREIGN KEY (shape_id) REFERENCES result_shapes(shape_id);

ALTER TABLE ONLY runs
    ADD CONSTRAINT runs_comparison_names_id_fkey FOREIGN KEY (comparison_names_id) REFERENCES comparison_names(names_id);

ALTER TABLE ONLY runs
    ADD CONSTRAINT runs_probe_part_fkey FOREIGN KEY (probe_part) REFERENCES probe_parts(part_id);

-- the partitions, after their parents' indexes, which they take
CREATE TABLE run_results_default PARTITION OF run_results DEFAULT;

-- the rows the migrations left
INSERT INTO alert_settings VALUES (true, NULL, 0.0001, NULL, NULL, NULL, NULL);
INSERT INTO figures_filled VALUES (1);
INSERT INTO figures_filled VALUES (2);
INSERT INTO figures_filled VALUES (3);
INSERT INTO figures_filled VALUES (4);
INSERT INTO figures_filled VALUES (5);
INSERT INTO figures_filled VALUES (6);
INSERT INTO figures_filled VALUES (7);
INSERT INTO figures_filled VALUES (8);
INSERT INTO figures_filled VALUES (9);
INSERT INTO figures_filled VALUES (10);
INSERT INTO figures_filled VALUES (11);
INSERT INTO figures_filled VALUES (12);
INSERT INTO figures_filled VALUES (13);
INSERT INTO figures_filled VALUES (14);
INSERT INTO figures_filled VALUES (15);
INSERT INTO figures_filled VALUES (16);
INSERT INTO figures_filled VALUES (17);
INSERT INTO figures_filled VALUES (18);
INSERT INTO figures_filled VALUES (19);
INSERT INTO figures_filled VALUES (20);
INSERT INTO figures_filled VALUES (21);

-- this month's partition of run_results and the next three, as migration
-- 006 made them (then `SELECT fleetbench_results_partitions()` monthly)
DO $$
DECLARE
	m date;
BEGIN
	FOR m IN SELECT generate_series(date_trunc('month', now()),
					date_trunc('month', now()) + interval '3 months',
					interval '1 month')::date LOOP
		EXECUTE format('CREATE TABLE %I PARTITION OF run_results FOR VALUES FROM (%L) TO (%L)',
			       to_char(m, '"run_results_y"YYYY"m"MM'), m,
			       (m + interval '1 month')::date);
	END LOOP;
END
$$;
