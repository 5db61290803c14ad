-- SPDX-License-Identifier: MIT
-- The array checks of run_results and runs in one CHECK per table, which
-- calls a PL/pgSQL function (issue 13, ingest rate).
--
-- PostgreSQL reads a table's CHECK expressions from the catalog and
-- prepares them again for every INSERT statement, and
-- fleetbench_ingest_run() inserts each report with statements of its
-- own: the eleven array checks took 8% of the backend's time per stored
-- report. A PL/pgSQL function is compiled once per connection and its
-- expressions prepared once per transaction. The rules are the same, each
-- raising check_violation with the name of the constraint it was
-- (docs/schema.md). ADD CONSTRAINT checks every stored row again.
--
-- The functions are made here as first written, as the constraints need
-- them; schema/functions/15_results.sql holds their current definition.

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
 * run_results_valid, since migration 014) and of a runs row's comparisons
 * and hugetlb pools (runs_arrays_valid). Each rule keeps the name of the
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
	v_benchmark text[], v_variant text[], v_status text[],
	v_reason text[], v_param_end integer[], p_key text[], p_kind text,
	p_value text[], v_window_end integer[],
	w_steal_pct double precision[], w_loadavg1 double precision[],
	w_wall_s double precision[], w_noisy boolean[],
	v_metric_end integer[], m_metric text[], m_unit text[],
	m_median double precision[], m_sample_end integer[],
	v_sample_end integer[], samples double precision[])
RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	nv integer := cardinality(v_benchmark);
	np integer := coalesce(cardinality(p_key), 0);
	nw integer := coalesce(cardinality(w_steal_pct), 0);
	nm integer := coalesce(cardinality(m_metric), 0);
BEGIN
	IF (nv > 0
		    AND cardinality(v_variant) = nv
		    AND cardinality(v_status) = nv
		    AND cardinality(v_reason) = nv
		    AND cardinality(v_param_end) = nv
		    AND cardinality(v_window_end) = nv
		    AND cardinality(v_metric_end) = nv
		    AND cardinality(v_sample_end) = nv
		    AND array_position(v_benchmark, NULL) IS NULL
		    AND array_position(v_variant, NULL) IS NULL
		    AND array_position(v_param_end, NULL) IS NULL
		    AND array_position(v_window_end, NULL) IS NULL
		    AND array_position(v_metric_end, NULL) IS NULL
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
	IF (v_param_end[nv] = np
		    AND coalesce(cardinality(p_value), 0) = np
		    AND coalesce(length(p_kind), 0) = np
		    AND p_kind ~ '^[isdbj]*$'
		    AND array_position(p_key, NULL) IS NULL
		    AND array_position(p_value, NULL) IS NULL) IS FALSE THEN
		PERFORM fleetbench_check_failed('run_results_parameters_aligned',
			'p_key, p_kind and p_value must line up and end at v_param_end');
	END IF;
	IF (v_window_end[nv] = nw
		    AND coalesce(cardinality(w_loadavg1), 0) = nw
		    AND coalesce(cardinality(w_wall_s), 0) = nw
		    AND coalesce(cardinality(w_noisy), 0) = nw) IS FALSE THEN
		PERFORM fleetbench_check_failed('run_results_windows_aligned',
			'the w_ arrays must line up and end at v_window_end');
	END IF;
	IF (v_metric_end[nv] = nm
		    AND coalesce(cardinality(m_unit), 0) = nm
		    AND coalesce(cardinality(m_median), 0) = nm
		    AND coalesce(cardinality(m_sample_end), 0) = nm
		    AND array_position(m_metric, NULL) IS NULL
		    AND array_position(m_unit, NULL) IS NULL
		    AND array_position(m_sample_end, NULL) IS NULL) IS FALSE THEN
		PERFORM fleetbench_check_failed('run_results_metrics_aligned',
			'the m_ arrays must line up and end at v_metric_end');
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

CREATE OR REPLACE FUNCTION fleetbench_runs_valid(
	c_name text[], c_benchmark text[], c_metric text[],
	c_numerator text[], c_denominator text[],
	c_ratio double precision[], c_ci_low double precision[],
	c_ci_high double precision[], c_level double precision[],
	c_method text[], c_reason text[], hugepage_sizes_kb integer[],
	hugepage_nr bigint[], hugepage_free bigint[])
RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	nc integer := coalesce(cardinality(c_name), 0);
BEGIN
	IF (coalesce(cardinality(c_benchmark), 0) = nc
	    AND coalesce(cardinality(c_metric), 0) = nc
	    AND coalesce(cardinality(c_numerator), 0) = nc
	    AND coalesce(cardinality(c_denominator), 0) = nc
	    AND coalesce(cardinality(c_ratio), 0) = nc
	    AND coalesce(cardinality(c_ci_low), 0) = nc
	    AND coalesce(cardinality(c_ci_high), 0) = nc
	    AND coalesce(cardinality(c_level), 0) = nc
	    AND coalesce(cardinality(c_method), 0) = nc
	    AND coalesce(cardinality(c_reason), 0) = nc) IS FALSE THEN
		PERFORM fleetbench_check_failed('runs_comparisons_aligned',
			'the eleven c_ arrays must have one length');
	END IF;
	IF (array_position(c_name, NULL) IS NULL
	    AND array_position(c_benchmark, NULL) IS NULL
	    AND array_position(c_metric, NULL) IS NULL
	    AND array_position(c_numerator, NULL) IS NULL
	    AND array_position(c_denominator, NULL) IS NULL) IS FALSE THEN
		PERFORM fleetbench_check_failed('runs_comparisons_named',
			'a comparison''s name, benchmark, metric, numerator and denominator must not be NULL');
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
	RETURN true;
END
$$;

ALTER TABLE run_results
	DROP CONSTRAINT run_results_variants_aligned,
	DROP CONSTRAINT run_results_status_is_known,
	DROP CONSTRAINT run_results_reason_unless_ok,
	DROP CONSTRAINT run_results_parameters_aligned,
	DROP CONSTRAINT run_results_windows_aligned,
	DROP CONSTRAINT run_results_metrics_aligned,
	DROP CONSTRAINT run_results_samples_finite,
	ADD CONSTRAINT run_results_valid CHECK (fleetbench_results_valid(
		v_benchmark, v_variant, v_status, v_reason, v_param_end, p_key,
		p_kind, p_value, v_window_end, w_steal_pct, w_loadavg1,
		w_wall_s, w_noisy, v_metric_end, m_metric, m_unit, m_median,
		m_sample_end, v_sample_end, samples));

ALTER TABLE runs
	DROP CONSTRAINT runs_comparisons_aligned,
	DROP CONSTRAINT runs_comparisons_named,
	DROP CONSTRAINT runs_comparisons_finite,
	DROP CONSTRAINT runs_hugepage_pools_aligned,
	ADD CONSTRAINT runs_arrays_valid CHECK (fleetbench_runs_valid(
		c_name, c_benchmark, c_metric, c_numerator, c_denominator,
		c_ratio, c_ci_low, c_ci_high, c_level, c_method, c_reason,
		hugepage_sizes_kb, hugepage_nr, hugepage_free));
