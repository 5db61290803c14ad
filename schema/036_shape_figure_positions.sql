-- SPDX-License-Identifier: MIT
-- Where a shape keeps each headline figure (issue 37, the ingest rate).
-- run_figures_live found a run's value figures by testing every metric
-- of the run against every value figure's benchmark, variant and metric
-- (nine aggregates with a filter over 130 rows: about 0.18 ms of the
-- 0.23 a run that the commit-time run_figures insert costs). The
-- position of a figure's metric in run_results.m_median depends on the
-- run's shape alone, so each shape now keeps it: figure_pos[id], the
-- 1-based position of value figure id, NULL where the shape has no such
-- metric (and for ratio figures). fleetbench_ingest_run() fills it for a
-- new shape, the function files (functions/20_ingest.sql) for every
-- shape whenever the declarations change.

ALTER TABLE result_shapes ADD COLUMN figure_pos integer[];
COMMENT ON COLUMN result_shapes.figure_pos IS
	'element id: the position in run_results.m_median of value figure id (proto/figures.def) in runs of this shape; NULL where it has none (036)';
