-- SPDX-License-Identifier: MIT
-- A report's shape stored once (issue 37, bytes on disk): the names of a
-- run's variants, parameters and metrics, their units and the ends that
-- slice them are the same in every run of an agent version and method
-- (about 2.7 of the 10.5 KB a report's run_results row took), so they
-- move to result_shapes, one row per distinct shape, and run_results
-- keeps the values (statuses, parameter values, windows, medians,
-- samples) and shape_id. The views bench_results and bench_metrics read
-- both and keep their columns (functions/15_results.sql).
--
-- digest is SHA-256 of the shape's eight arrays as one row's text, as
-- fleetbench_shape_id() (functions/20_ingest.sql) computes it for a new
-- report; were the two to differ, a shape would be stored twice, never
-- shared by two shapes that differ.

CREATE TABLE result_shapes (
	shape_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	digest bytea NOT NULL UNIQUE,
	v_benchmark text[] NOT NULL,
	v_variant text[] NOT NULL,
	v_param_end integer[] NOT NULL,
	p_key text[],
	p_kind text,
	v_metric_end integer[] NOT NULL,
	m_metric text[],
	m_unit text[]
);
ALTER TABLE result_shapes ALTER COLUMN p_key SET COMPRESSION lz4,
	ALTER COLUMN m_metric SET COMPRESSION lz4,
	ALTER COLUMN m_unit SET COMPRESSION lz4;
COMMENT ON TABLE result_shapes IS
	'the names, units and ends of a report''s variants, parameters and metrics, stored once per distinct shape (030); run_results.shape_id refers to one';

INSERT INTO result_shapes (digest, v_benchmark, v_variant, v_param_end,
			   p_key, p_kind, v_metric_end, m_metric, m_unit)
SELECT DISTINCT ON (d.digest) d.*
FROM (SELECT sha256(convert_to(ROW(x.v_benchmark, x.v_variant,
				    x.v_param_end, x.p_key, x.p_kind,
				    x.v_metric_end, x.m_metric,
				    x.m_unit)::text, 'UTF8')) AS digest,
	     x.v_benchmark, x.v_variant, x.v_param_end, x.p_key, x.p_kind,
	     x.v_metric_end, x.m_metric, x.m_unit
      FROM run_results AS x) AS d;

-- the views over the columns that move (the function files make them
-- again after the migrations) and the old check, which reads them; the
-- new one is made below
DROP VIEW IF EXISTS bench_results, bench_metrics, run_figures_live CASCADE;
ALTER TABLE run_results DROP CONSTRAINT run_results_valid;
ALTER TABLE run_results ADD COLUMN shape_id bigint;
UPDATE run_results AS x SET shape_id = s.shape_id
FROM result_shapes AS s
WHERE s.digest = sha256(convert_to(ROW(x.v_benchmark, x.v_variant,
				       x.v_param_end, x.p_key, x.p_kind,
				       x.v_metric_end, x.m_metric,
				       x.m_unit)::text, 'UTF8'));
ALTER TABLE run_results ALTER COLUMN shape_id SET NOT NULL,
	ADD CONSTRAINT run_results_shape_id_fkey FOREIGN KEY (shape_id)
		REFERENCES result_shapes (shape_id),
	DROP COLUMN v_benchmark, DROP COLUMN v_variant,
	DROP COLUMN v_param_end, DROP COLUMN p_key, DROP COLUMN p_kind,
	DROP COLUMN v_metric_end, DROP COLUMN m_metric, DROP COLUMN m_unit;

-- the checks of each table, as functions/15_results.sql defines them;
-- the rows here passed the same rules under the old check, and the
-- function files replace these bodies in this same migrate run
DROP FUNCTION fleetbench_results_valid(text[], text[], text[], text[],
	integer[], text[], text, text[], integer[], double precision[],
	double precision[], double precision[], boolean[], integer[], text[],
	text[], double precision[], integer[], integer[], double precision[]);
CREATE FUNCTION fleetbench_results_valid(v_status text[], v_reason text[],
	p_value text[], v_window_end integer[],
	w_steal_pct double precision[], w_loadavg1 double precision[],
	w_wall_s double precision[], w_noisy boolean[],
	m_median double precision[], m_sample_end integer[],
	v_sample_end integer[], samples double precision[])
RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true';
CREATE FUNCTION fleetbench_shape_valid(v_benchmark text[], v_variant text[],
	v_param_end integer[], p_key text[], p_kind text,
	v_metric_end integer[], m_metric text[], m_unit text[])
RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true';
ALTER TABLE run_results ADD CONSTRAINT run_results_valid
	CHECK (fleetbench_results_valid(v_status, v_reason, p_value,
		v_window_end, w_steal_pct, w_loadavg1, w_wall_s, w_noisy,
		m_median, m_sample_end, v_sample_end, samples));
ALTER TABLE result_shapes ADD CONSTRAINT result_shapes_valid
	CHECK (fleetbench_shape_valid(v_benchmark, v_variant, v_param_end,
		p_key, p_kind, v_metric_end, m_metric, m_unit));
