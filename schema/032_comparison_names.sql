-- SPDX-License-Identifier: MIT
-- The comparisons' names stored once (issue 37, bytes on disk): a run's
-- comparisons are named the same way in every run of an agent version
-- and method (c_name, c_benchmark, c_metric, c_numerator,
-- c_denominator: about 0.8 KB of a run's row compressed), so they move to
-- comparison_names, one row per distinct list keyed by its SHA-256, and
-- runs keeps the values (ratio, interval, level, method, reason, targets)
-- and comparison_names_id, NULL for a run without comparisons. The view
-- comparisons keeps its columns (functions/15_results.sql).
--
-- digest as fleetbench_ingest_run() (functions/20_ingest.sql) computes
-- it for a new report; were the two to differ, a list would be stored
-- twice, never shared by two lists that differ.

CREATE TABLE comparison_names (
	names_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	digest bytea NOT NULL UNIQUE,
	c_name text[] NOT NULL,
	c_benchmark text[] NOT NULL,
	c_metric text[] NOT NULL,
	c_numerator text[] NOT NULL,
	c_denominator text[] NOT NULL
);
COMMENT ON TABLE comparison_names IS
	'the names of a run''s comparisons (c_name .. c_denominator), stored once per distinct list (032); runs.comparison_names_id refers to one';

-- the views over the columns that move (the function files make them
-- again) and the old check, which reads them
DROP VIEW IF EXISTS comparisons, run_figures_live CASCADE;
ALTER TABLE runs DROP CONSTRAINT runs_arrays_valid;

INSERT INTO comparison_names (digest, c_name, c_benchmark, c_metric,
			      c_numerator, c_denominator)
SELECT DISTINCT ON (d.digest) d.*
FROM (SELECT sha256(convert_to(ROW(r.c_name, r.c_benchmark, r.c_metric,
				    r.c_numerator, r.c_denominator)::text,
			       'UTF8')) AS digest,
	     r.c_name, r.c_benchmark, r.c_metric, r.c_numerator,
	     r.c_denominator
      FROM runs AS r WHERE r.c_name IS NOT NULL) AS d;

ALTER TABLE runs ADD COLUMN comparison_names_id bigint;
UPDATE runs AS r SET comparison_names_id = n.names_id
FROM comparison_names AS n
WHERE r.c_name IS NOT NULL
      AND n.digest = sha256(convert_to(ROW(r.c_name, r.c_benchmark,
					    r.c_metric, r.c_numerator,
					    r.c_denominator)::text, 'UTF8'));
ALTER TABLE runs ADD CONSTRAINT runs_comparison_names_id_fkey
		FOREIGN KEY (comparison_names_id)
		REFERENCES comparison_names (names_id),
	DROP COLUMN c_name, DROP COLUMN c_benchmark, DROP COLUMN c_metric,
	DROP COLUMN c_numerator, DROP COLUMN c_denominator;
COMMENT ON COLUMN runs.comparison_names_id IS
	'the names of the run''s comparisons (comparison_names), NULL when it has none; element i of the c_ arrays is comparison i';

-- the checks of each table, as functions/15_results.sql defines them;
-- the rows here passed the same rules under the old check, and the
-- function files replace these bodies in this same migrate run
DROP FUNCTION fleetbench_runs_valid(text[], text[], text[], text[], text[],
	double precision[], double precision[], double precision[],
	double precision[], text[], text[], integer[], bigint[], bigint[]);
CREATE FUNCTION fleetbench_runs_valid(c_ratio double precision[],
	c_ci_low double precision[], c_ci_high double precision[],
	c_level double precision[], c_method text[], c_reason text[],
	hugepage_sizes_kb integer[], hugepage_nr bigint[],
	hugepage_free bigint[])
RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true';
CREATE FUNCTION fleetbench_comparison_names_valid(c_name text[],
	c_benchmark text[], c_metric text[], c_numerator text[],
	c_denominator text[])
RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true';
ALTER TABLE runs ADD CONSTRAINT runs_arrays_valid
	CHECK (fleetbench_runs_valid(c_ratio, c_ci_low, c_ci_high, c_level,
		c_method, c_reason, hugepage_sizes_kb, hugepage_nr,
		hugepage_free));
ALTER TABLE comparison_names ADD CONSTRAINT comparison_names_valid
	CHECK (fleetbench_comparison_names_valid(c_name, c_benchmark,
		c_metric, c_numerator, c_denominator));
