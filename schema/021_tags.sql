-- SPDX-License-Identifier: MIT
-- Tags (issue 17): the operator's key=value labels of a run
-- (`fleetbench-agent run --tag env=prod`, Report.tags, docs/wire.md),
-- stored with the run as one jsonb object of text values, {} without tags.
-- run_figures, the per-run table the queries read, holds a copy, so
-- that `--where tag.env=prod` and `--by tag.team` never join runs; both
-- columns have a GIN index (jsonb_path_ops: containment, @>).
-- fleet_summary gains the group's tags column, filled only in rows
-- computed on demand (level NULL) for `--by tag.KEY`: the cached levels
-- are keyed by provider, instance type and kernel, and a query by or on a
-- tag reads run_figures instead (fleetbench_group_rows).
-- fleetbench_ingest_run() takes the tags as two more parameters, keys
-- and values (text[], DEFAULT NULL): its 95-parameter signature goes here,
-- once, and the function file makes the new one right after.

ALTER TABLE runs ADD COLUMN tags jsonb NOT NULL DEFAULT '{}';
COMMENT ON COLUMN runs.tags IS
	'the run''s tags, {"key": "value"} (Report.tags; {} without any)';
CREATE INDEX runs_tags_idx ON runs USING gin (tags jsonb_path_ops);

-- run_figures' column order is run_figures_live's: tags last
ALTER TABLE run_figures ADD COLUMN tags jsonb NOT NULL DEFAULT '{}';
COMMENT ON COLUMN run_figures.tags IS
	'runs.tags, for the queries'' --where tag.KEY=VALUE and --by tag.KEY';
CREATE INDEX run_figures_tags_idx ON run_figures
	USING gin (tags jsonb_path_ops);

ALTER TABLE fleet_summary ADD COLUMN tags text;
COMMENT ON COLUMN fleet_summary.tags IS
	'by tag.KEY: the group''s tags, "key=value, ..." in the order asked, (none) for a run without the key; NULL in the cached levels';

DROP FUNCTION IF EXISTS fleetbench_ingest_run(uuid, integer, text, bigint,
	bigint, text, text, text, text, text, text, text, text, text, text, text,
	text, bigint, text, boolean, text, text, text, bigint[], bigint[],
	bigint[], integer, text, integer, text, integer, text[], text[], integer,
	bigint, text, text, text, text, text, bigint, bigint, bigint, bigint,
	bigint, bigint, bigint, bigint, bigint, bigint, text[], boolean, text[],
	text[], text[], text[], text[], double precision[], double precision[],
	double precision[], double precision[], text[], text[], text[], text[],
	text[], text[], integer[], text[], text[], text[], integer[],
	double precision[], double precision[], double precision[], boolean[],
	integer[], text[], text[], double precision[], integer[], integer[],
	double precision[], boolean, bigint, bigint, bigint, bigint, bigint,
	bigint, boolean, bigint, bigint, bigint, bigint);
