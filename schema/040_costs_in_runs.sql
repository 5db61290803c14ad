-- SPDX-License-Identifier: MIT
-- A run's costs as arrays in its runs row (issue 37: the ingest rate and
-- the bytes on disk). run_costs held a row per benchmark, about 10 a
-- run, with its key's index: 1.7 KB a report on disk, and an INSERT of
-- its own that took about 110 of the 870 us fleetbench_ingest_run() took
-- a report. Now runs.cost_benchmark .. cost_rounds hold one element per
-- benchmark, in the report's order (the total last), NULL for a run
-- without costs; the view run_costs (functions/49_costs.sql) gives the
-- rows it gave. runs' check (fleetbench_runs_valid) takes over what the
-- table's checks and key asked: the arrays line up, each benchmark named
-- once, no figure below 0.

ALTER TABLE runs ADD COLUMN cost_benchmark text[],
	ADD COLUMN cost_wall_s double precision[],
	ADD COLUMN cost_cpu_s double precision[],
	ADD COLUMN cost_peak_memory_bytes bigint[],
	ADD COLUMN cost_written_bytes bigint[],
	ADD COLUMN cost_allowance_s double precision[],
	ADD COLUMN cost_rounds bigint[];
-- each run's rows in the order they were stored (the report's)
UPDATE runs AS r
SET cost_benchmark = c.benchmark, cost_wall_s = c.wall_s,
    cost_cpu_s = c.cpu_s, cost_peak_memory_bytes = c.peak,
    cost_written_bytes = c.written, cost_allowance_s = c.allowance,
    cost_rounds = c.rounds
FROM (SELECT run_id, array_agg(benchmark ORDER BY ctid) AS benchmark,
	     array_agg(wall_s ORDER BY ctid) AS wall_s,
	     array_agg(cpu_s ORDER BY ctid) AS cpu_s,
	     array_agg(peak_memory_bytes ORDER BY ctid) AS peak,
	     array_agg(written_bytes ORDER BY ctid) AS written,
	     array_agg(allowance_s ORDER BY ctid) AS allowance,
	     array_agg(rounds ORDER BY ctid) AS rounds
      FROM run_costs GROUP BY run_id) AS c
WHERE c.run_id = r.run_id;
DROP TABLE run_costs;

-- runs' check, as functions/15_results.sql defines it; the rows here
-- passed the same rules as run_costs' rows, and the function files
-- replace this body in this same migrate run
ALTER TABLE runs DROP CONSTRAINT runs_arrays_valid;
DROP FUNCTION fleetbench_runs_valid(double precision[], double precision[],
	double precision[], double precision[], text[], text[], integer[],
	bigint[], bigint[]);
CREATE FUNCTION fleetbench_runs_valid(c_ratio double precision[],
	c_ci_low double precision[], c_ci_high double precision[],
	c_level double precision[], c_method text[], c_reason text[],
	hugepage_sizes_kb integer[], hugepage_nr bigint[],
	hugepage_free bigint[], cost_benchmark text[],
	cost_wall_s double precision[], cost_cpu_s double precision[],
	cost_peak_memory_bytes bigint[], cost_written_bytes bigint[],
	cost_allowance_s double precision[], cost_rounds bigint[])
RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true';
ALTER TABLE runs ADD CONSTRAINT runs_arrays_valid
	CHECK (fleetbench_runs_valid(c_ratio, c_ci_low, c_ci_high, c_level,
		c_method, c_reason, hugepage_sizes_kb, hugepage_nr,
		hugepage_free, cost_benchmark, cost_wall_s, cost_cpu_s,
		cost_peak_memory_bytes, cost_written_bytes, cost_allowance_s,
		cost_rounds));

COMMENT ON COLUMN runs.cost_benchmark IS
	'what the run cost its host (issue 36, 040): the benchmark of each element of the cost_ arrays, the run''s total named ''total''; NULL from agents before 025. The view run_costs gives a row per element';
COMMENT ON COLUMN runs.cost_allowance_s IS
	'the seconds each benchmark was allowed (the total: the run''s max_seconds); NULL elements from agents before 026';
COMMENT ON COLUMN runs.cost_rounds IS
	'the rounds each benchmark measured; NULL for the total and from agents before 026';
