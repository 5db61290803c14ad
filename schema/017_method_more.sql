-- SPDX-License-Identifier: MIT
-- The methods table gains the parameters of issue 15's benchmarks, the
-- optional Method fields of proto/fleetbench.proto (docs/wire.md): NULL
-- for a method whose agent did not send them (before these benchmarks).
-- fleetbench_ingest_run() takes them as eleven more parameters after
-- validated, each DEFAULT NULL: a parameter cannot be added in place, so
-- the 84-parameter signature goes here, once, and the function file makes
-- the new one right after (a call with 83 or 84 arguments finds it
-- through the defaults).

ALTER TABLE methods
	ADD COLUMN mmap_bytes bigint,
	ADD COLUMN mmap_accesses bigint,
	ADD COLUMN bw_bytes bigint,
	ADD COLUMN scaling_ms bigint,
	ADD COLUMN wb_bytes bigint,
	ADD COLUMN wb_fsync_bytes bigint,
	ADD COLUMN with_database boolean,
	ADD COLUMN db_scale bigint,
	ADD COLUMN db_rate bigint,
	ADD COLUMN db_seconds bigint,
	ADD COLUMN writeback_dirty_bytes bigint;

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
	double precision[], boolean);
