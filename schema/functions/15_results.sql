-- SPDX-License-Identifier: MIT
-- The results of runs: the views bench_results, bench_metrics and
-- comparisons over run_results with its result_shapes row (030) and runs
-- with its comparison_names row (032) (the tables of those names until
-- migration 010), and the trigger functions that keep run_results and
-- fleet_dirty with runs and run_figures, and the functions of the array
-- checks of run_results and runs. A function file
-- (schema/README.md): `fleetbench-collector migrate` runs all of them again,
-- in name order and in one transaction, whenever one of them changes or a
-- migration ran. Functions are CREATE OR REPLACE (a trigger function is
-- never dropped: its triggers depend on it); views are dropped and made
-- again. (010_lean.sql made them first, as its triggers and the views it
-- restored needed them.)

-- Raises check_violation for the rule of a table check that a row
-- breaks: its name (a CHECK constraint's until migration 014) and what it
-- asks.
CREATE OR REPLACE FUNCTION fleetbench_check_failed(rule text, what text)
RETURNS void LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	RAISE check_violation USING CONSTRAINT = rule,
		MESSAGE = rule || ': ' || what;
END
$$;

/*
 * The checks of a run_results row (the table's one CHECK,
 * run_results_valid, since migration 014), of a result_shapes row
 * (result_shapes_valid, 030), of a runs row's comparisons' values,
 * hugetlb pools and costs (runs_arrays_valid; the costs since 040) and
 * of the comparisons' names
 * (comparison_names_valid, 032). Each rule keeps the name of the
 * constraint it was until 014 and raises check_violation naming it, as
 * that constraint did; a rule whose value is NULL passes, as a CHECK
 * does. Why a function: PostgreSQL reads a table's CHECK expressions
 * from the catalog and prepares them again for every INSERT statement,
 * and fleetbench_ingest_run() inserts each report with statements of its
 * own; the eleven expressions took 8% of the backend's time per stored
 * report. A PL/pgSQL function is compiled once per connection and its
 * expressions prepared once per transaction (docs/performance.md).
 */
CREATE OR REPLACE FUNCTION fleetbench_results_valid(
	v_status text[], v_reason text[], p_value text[],
	v_window_end integer[], w_steal_pct double precision[],
	w_loadavg1 double precision[], w_wall_s double precision[],
	w_noisy boolean[], m_median double precision[],
	m_sample_end integer[], v_sample_end integer[],
	samples double precision[])
RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	nv integer := cardinality(v_status);
	nw integer := coalesce(cardinality(w_steal_pct), 0);
BEGIN
	IF (nv > 0
		    AND cardinality(v_reason) = nv
		    AND cardinality(v_window_end) = nv
		    AND cardinality(v_sample_end) = nv
		    AND array_position(v_window_end, NULL) IS NULL
		    AND array_position(v_sample_end, NULL) IS NULL) IS FALSE THEN
		PERFORM fleetbench_check_failed('run_results_variants_aligned',
			'the v_ arrays must have one element, not NULL, per variant');
	END IF;
	IF (v_status <@ '{ok,skipped,failed}') IS FALSE THEN
		PERFORM fleetbench_check_failed('run_results_status_is_known',
			'a status must be ok, skipped or failed');
	END IF;
	IF (coalesce(array_positions(v_status, 'ok'), '{}')
		    = coalesce(array_positions(v_reason, NULL), '{}')) IS FALSE THEN
		PERFORM fleetbench_check_failed('run_results_reason_unless_ok',
			'a variant has a reason exactly when it is not ok');
	END IF;
	IF (array_position(p_value, NULL) IS NULL) IS FALSE THEN
		PERFORM fleetbench_check_failed('run_results_parameters_aligned',
			'a parameter has no value');
	END IF;
	IF (v_window_end[nv] = nw
		    AND coalesce(cardinality(w_loadavg1), 0) = nw
		    AND coalesce(cardinality(w_wall_s), 0) = nw
		    AND coalesce(cardinality(w_noisy), 0) = nw) IS FALSE THEN
		PERFORM fleetbench_check_failed('run_results_windows_aligned',
			'the w_ arrays must line up and end at v_window_end');
	END IF;
	IF (coalesce(cardinality(m_sample_end), 0)
		    = coalesce(cardinality(m_median), 0)
		    AND array_position(m_sample_end, NULL) IS NULL) IS FALSE THEN
		PERFORM fleetbench_check_failed('run_results_metrics_aligned',
			'm_median and m_sample_end must line up');
	END IF;
	IF (v_sample_end[nv] = coalesce(cardinality(samples), 0)
		    AND coalesce(array_ndims(samples), 1) = 1
		    AND NOT samples && '{NaN,Infinity,-Infinity}') IS FALSE THEN
		PERFORM fleetbench_check_failed('run_results_samples_finite',
			'a sample is NaN or infinite, or the samples are not one dimension ending at v_sample_end');
	END IF;
	RETURN true;
END
$$;

-- result_shapes_valid: the names and ends of one shape (030)
CREATE OR REPLACE FUNCTION fleetbench_shape_valid(
	v_benchmark text[], v_variant text[], v_param_end integer[],
	p_key text[], p_kind text, v_metric_end integer[],
	m_metric text[], m_unit text[])
RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	nv integer := cardinality(v_benchmark);
	np integer := coalesce(cardinality(p_key), 0);
	nm integer := coalesce(cardinality(m_metric), 0);
BEGIN
	IF (nv > 0
		    AND cardinality(v_variant) = nv
		    AND cardinality(v_param_end) = nv
		    AND cardinality(v_metric_end) = nv
		    AND array_position(v_benchmark, NULL) IS NULL
		    AND array_position(v_variant, NULL) IS NULL
		    AND array_position(v_param_end, NULL) IS NULL
		    AND array_position(v_metric_end, NULL) IS NULL) IS FALSE THEN
		PERFORM fleetbench_check_failed('result_shapes_variants_aligned',
			'the v_ arrays must have one element, not NULL, per variant');
	END IF;
	IF (v_param_end[nv] = np
		    AND coalesce(length(p_kind), 0) = np
		    AND p_kind ~ '^[isdbj]*$'
		    AND array_position(p_key, NULL) IS NULL) IS FALSE THEN
		PERFORM fleetbench_check_failed('result_shapes_parameters_aligned',
			'p_key and p_kind must line up and end at v_param_end');
	END IF;
	IF (v_metric_end[nv] = nm
		    AND coalesce(cardinality(m_unit), 0) = nm
		    AND array_position(m_metric, NULL) IS NULL
		    AND array_position(m_unit, NULL) IS NULL) IS FALSE THEN
		PERFORM fleetbench_check_failed('result_shapes_metrics_aligned',
			'm_metric and m_unit must line up and end at v_metric_end');
	END IF;
	RETURN true;
END
$$;

CREATE OR REPLACE FUNCTION fleetbench_runs_valid(
	c_ratio double precision[], c_ci_low double precision[],
	c_ci_high double precision[], c_level double precision[],
	c_method text[], c_reason text[], hugepage_sizes_kb integer[],
	hugepage_nr bigint[], hugepage_free bigint[], cost_benchmark text[],
	cost_wall_s double precision[], cost_cpu_s double precision[],
	cost_peak_memory_bytes bigint[], cost_written_bytes bigint[],
	cost_allowance_s double precision[], cost_rounds bigint[])
RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	nc integer := coalesce(cardinality(c_ratio), 0);
	nb integer := coalesce(cardinality(cost_benchmark), 0);
BEGIN
	IF (coalesce(cardinality(c_ci_low), 0) = nc
	    AND coalesce(cardinality(c_ci_high), 0) = nc
	    AND coalesce(cardinality(c_level), 0) = nc
	    AND coalesce(cardinality(c_method), 0) = nc
	    AND coalesce(cardinality(c_reason), 0) = nc) IS FALSE THEN
		PERFORM fleetbench_check_failed('runs_comparisons_aligned',
			'the six c_ arrays of values must have one length');
	END IF;
	IF (NOT (c_ratio || c_ci_low || c_ci_high || c_level)
		&& '{NaN,Infinity,-Infinity}') IS FALSE THEN
		PERFORM fleetbench_check_failed('runs_comparisons_finite',
			'a ratio, interval or level is NaN or infinite');
	END IF;
	IF ((hugepage_nr IS NULL
	     OR cardinality(hugepage_nr) = cardinality(hugepage_sizes_kb))
	    AND (hugepage_free IS NULL
		 OR cardinality(hugepage_free) = cardinality(hugepage_sizes_kb)))
	   IS FALSE THEN
		PERFORM fleetbench_check_failed('runs_hugepage_pools_aligned',
			'hugepage_nr and hugepage_free must have one element per size of hugepage_sizes_kb');
	END IF;
	-- the costs (040, run_costs' rows until then): all NULL, or one
	-- element each per benchmark
	IF (coalesce(cardinality(cost_wall_s), 0) = nb
	    AND coalesce(cardinality(cost_cpu_s), 0) = nb
	    AND coalesce(cardinality(cost_peak_memory_bytes), 0) = nb
	    AND coalesce(cardinality(cost_written_bytes), 0) = nb
	    AND coalesce(cardinality(cost_allowance_s), 0) = nb
	    AND coalesce(cardinality(cost_rounds), 0) = nb
	    AND array_position(cost_wall_s, NULL) IS NULL
	    AND array_position(cost_cpu_s, NULL) IS NULL
	    AND array_position(cost_peak_memory_bytes, NULL) IS NULL
	    AND array_position(cost_written_bytes, NULL) IS NULL) IS FALSE THEN
		PERFORM fleetbench_check_failed('runs_costs_aligned',
			'the cost_ arrays must have one element per benchmark of cost_benchmark, and a wall time, CPU time, peak memory and bytes written each');
	END IF;
	IF nb > 0 AND (array_position(cost_benchmark, NULL) IS NOT NULL
		       OR (SELECT count(DISTINCT b) FROM unnest(cost_benchmark) AS b)
			  <> nb) THEN
		PERFORM fleetbench_check_failed('runs_costs_named',
			'each benchmark of cost_benchmark must be named once');
	END IF;
	IF (0 <= ALL (cost_wall_s) AND 0 <= ALL (cost_cpu_s)
	    AND 0 <= ALL (cost_peak_memory_bytes)
	    AND 0 <= ALL (cost_written_bytes) AND 0 <= ALL (cost_allowance_s)
	    AND 0 <= ALL (cost_rounds)) IS FALSE THEN
		PERFORM fleetbench_check_failed('runs_costs_not_negative',
			'a cost (seconds, bytes, rounds) is below 0');
	END IF;
	RETURN true;
END
$$;

-- comparison_names_valid: one list of comparisons' names (032)
CREATE OR REPLACE FUNCTION fleetbench_comparison_names_valid(
	c_name text[], c_benchmark text[], c_metric text[],
	c_numerator text[], c_denominator text[])
RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	nc integer := cardinality(c_name);
BEGIN
	IF (nc > 0
	    AND cardinality(c_benchmark) = nc
	    AND cardinality(c_metric) = nc
	    AND cardinality(c_numerator) = nc
	    AND cardinality(c_denominator) = nc) IS FALSE THEN
		PERFORM fleetbench_check_failed('comparison_names_aligned',
			'the five name arrays must have one length, at least 1');
	END IF;
	IF (array_position(c_name, NULL) IS NULL
	    AND array_position(c_benchmark, NULL) IS NULL
	    AND array_position(c_metric, NULL) IS NULL
	    AND array_position(c_numerator, NULL) IS NULL
	    AND array_position(c_denominator, NULL) IS NULL) IS FALSE THEN
		PERFORM fleetbench_check_failed('comparison_names_named',
			'a comparison''s name, benchmark, metric, numerator and denominator must not be NULL');
	END IF;
	RETURN true;
END
$$;

-- runs.probe (031): the whole probe, its unchanging part (probe_parts)
-- and the sections that change (runs.probe_rest); `r.probe` calls it
CREATE OR REPLACE FUNCTION probe(r runs) RETURNS jsonb
LANGUAGE sql STABLE AS $$
	SELECT x.body || r.probe_rest FROM probe_parts AS x
	WHERE x.part_id = r.probe_part
$$;
COMMENT ON FUNCTION probe(runs) IS
	'a run''s whole probe, as runs.probe was until 031: r.probe';

-- A run's results and figures go with it (there is no foreign key to
-- cascade; its costs are in its row since 040). Updating a run's run_id
-- or started_at is not supported.
CREATE OR REPLACE FUNCTION fleetbench_runs_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'TRUNCATE' THEN
		TRUNCATE run_results, run_figures;
		RETURN NULL;
	END IF;
	DELETE FROM run_results AS v USING fleetbench_old_runs AS o
	WHERE v.run_id = o.run_id AND v.started_at = o.started_at;
	DELETE FROM run_figures AS f USING fleetbench_old_runs AS o
	WHERE f.run_id = o.run_id;
	RETURN NULL;
END
$$;


/*
 * As fleetbench_mark() of 008, for all the rows of a statement at once:
 * marks each instance type, kernel and method of the run_figures rows,
 * for each level of fleet_summary (2 and 3),
 * that a statement added, changed or removed (its transition table
 * fleetbench_figures), unless a row is there already and no refresh is
 * under way (see fleet_dirty).
 */
CREATE OR REPLACE FUNCTION fleetbench_mark_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	-- held until commit when no refresh is under way
	calm boolean := pg_try_advisory_xact_lock_shared(112723185853042);
BEGIN
	INSERT INTO fleet_dirty (provider, instance_type, kernel_release,
				 method, level)
	SELECT DISTINCT f.provider, f.instance_type, f.kernel_release, f.method,
	       l.level
	FROM fleetbench_figures AS f, (VALUES (2::smallint), (3)) AS l(level)
	WHERE NOT calm OR NOT EXISTS (
		SELECT 1 FROM fleet_dirty AS d
		WHERE d.level = l.level
		      AND d.provider = f.provider
		      AND d.instance_type = f.instance_type
		      AND d.kernel_release = f.kernel_release
		      AND d.method = f.method);
	RETURN NULL;
END
$$;

/*
 * A run's parameter values as text, in the order of their kinds (kinds,
 * one element a parameter): vals itself when ints is NULL
 * (a row stored before 043, or from a writer that sends every value as
 * text), else the values of kind i from ints and the others from vals,
 * each in its order (043).
 */
CREATE OR REPLACE FUNCTION fleetbench_param_values(kinds text[],
						   vals text[], ints bigint[])
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN ints IS NULL THEN vals ELSE ARRAY(
		SELECT CASE WHEN u.t = 'i' THEN ints[u.n]::text
			    ELSE vals[u.k - u.n] END
		FROM (SELECT x.t, x.k,
			     count(*) FILTER (WHERE x.t = 'i')
				     OVER (ORDER BY x.k) AS n
		      FROM unnest(kinds) WITH ORDINALITY AS x(t, k)) AS u
		ORDER BY u.k) END
$$;

-- One row per variant: the skip reason or failure, parameters and windows
-- as the jsonb they were. (unnest(), not generate_series(): the planner
-- expects 10 elements of an array but 1,000 rows of a series, and would
-- compile every query on these views with JIT.)
DROP VIEW IF EXISTS bench_results CASCADE;
CREATE VIEW bench_results AS
SELECT x.run_id, e.benchmark, e.variant, e.i::integer AS position, e.status,
       CASE WHEN e.status = 'skipped' THEN e.reason END AS skip_reason,
       coalesce((SELECT jsonb_object_agg(p.k, CASE WHEN p.t = 's'
						   THEN to_jsonb(p.v)
						   ELSE p.v::jsonb END)
		 FROM unnest(sh.p_key[e.pe0 + 1 : e.pe1],
			     string_to_array(substr(sh.p_kind, e.pe0 + 1,
						    e.pe1 - e.pe0), NULL),
			     pv.v[e.pe0 + 1 : e.pe1]) AS p(k, t, v)), '{}')
	       AS parameters,
       coalesce((SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
				'steal_pct', w.s, 'loadavg1', w.l,
				'wall_s', w.w, 'noisy', w.n,
				'noisy_reason', w.r, 'cpus', w.c)) ORDER BY w.k)
		 FROM unnest(x.w_steal_pct[e.we0 + 1 : e.we1],
			     x.w_loadavg1[e.we0 + 1 : e.we1],
			     x.w_wall_s[e.we0 + 1 : e.we1],
			     x.w_noisy[e.we0 + 1 : e.we1],
			     -- 024; a NULL array gives NULLs
			     x.w_noisy_reason[e.we0 + 1 : e.we1],
			     x.w_cpus[e.we0 + 1 : e.we1])
			WITH ORDINALITY AS w(s, l, w, n, r, c, k)), '[]') AS windows,
       coalesce(true = ANY (x.w_noisy[e.we0 + 1 : e.we1]), false) AS noisy,
       x.started_at,
       CASE WHEN e.status = 'failed' THEN e.reason END AS failure
FROM run_results x
JOIN result_shapes sh ON sh.shape_id = x.shape_id,
     LATERAL (SELECT fleetbench_param_values(
			     string_to_array(sh.p_kind, NULL), x.p_value,
			     x.p_int) AS v) AS pv,
     LATERAL (SELECT v.*, coalesce(sh.v_param_end[v.i - 1], 0) AS pe0,
		     coalesce(x.v_window_end[v.i - 1], 0) AS we0
	      FROM unnest(sh.v_benchmark, sh.v_variant, x.v_status, x.v_reason,
			  sh.v_param_end, x.v_window_end)
		      WITH ORDINALITY AS v(benchmark, variant, status, reason,
					   pe1, we1, i)) AS e;

-- One row per metric of a variant, with its samples and median.
DROP VIEW IF EXISTS bench_metrics CASCADE;
CREATE VIEW bench_metrics AS
SELECT x.run_id, e.benchmark, e.variant, m.metric, m.unit,
       (coalesce(x.samples, '{}'))[e.se0 + coalesce(
						(x.m_sample_end[e.me0 + 1 : e.me1])[m.k - 1], 0) + 1
				   : e.se0 + m.se] AS samples,
       m.median, x.started_at
FROM run_results x
JOIN result_shapes sh ON sh.shape_id = x.shape_id,
     LATERAL (SELECT v.*, coalesce(sh.v_metric_end[v.i - 1], 0) AS me0,
		     coalesce(x.v_sample_end[v.i - 1], 0) AS se0
	      FROM unnest(sh.v_benchmark, sh.v_variant, sh.v_metric_end)
		      WITH ORDINALITY AS v(benchmark, variant, me1, i)) AS e,
     unnest(sh.m_metric[e.me0 + 1 : e.me1], sh.m_unit[e.me0 + 1 : e.me1],
	    x.m_median[e.me0 + 1 : e.me1], x.m_sample_end[e.me0 + 1 : e.me1])
	     WITH ORDINALITY AS m(metric, unit, median, se, k);

-- One row per comparison of a run.
DROP VIEW IF EXISTS comparisons CASCADE;
CREATE VIEW comparisons AS
SELECT r.run_id, c.name, c.benchmark, c.metric, c.numerator, c.denominator,
       c.ratio, c.ci_low, c.ci_high, c.level, c.method, c.reason,
       r.started_at, c.target_half_width, c.target_reached, c.rounds
FROM runs r
JOIN comparison_names n ON n.names_id = r.comparison_names_id,
     -- the targets' arrays are NULL for a run without any (024): NULLs
     unnest(n.c_name, n.c_benchmark, n.c_metric, n.c_numerator,
	    n.c_denominator, r.c_ratio, r.c_ci_low, r.c_ci_high, r.c_level,
	    r.c_method, r.c_reason, r.c_target_half_width,
	    r.c_target_reached, r.c_rounds)
	     AS c(name, benchmark, metric, numerator, denominator, ratio,
		  ci_low, ci_high, level, method, reason, target_half_width,
		  target_reached, rounds);

COMMENT ON VIEW bench_results IS
	'one row per benchmark variant of a run: status, parameters, repeat windows (over run_results)';
COMMENT ON VIEW bench_metrics IS
	'one row per metric of a variant: raw samples in repeat order and their median (over run_results)';
COMMENT ON VIEW comparisons IS
	'ratio of two variants'' medians with its confidence interval, as the agent computed it (over runs)';
