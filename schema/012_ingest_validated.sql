-- SPDX-License-Identifier: MIT
-- fleetbench_ingest_run() gains an 84th parameter, validated (default
-- false; schema/functions/20_ingest.sql): a parameter cannot be added in
-- place, so the 83-parameter signature goes here, once, and the function
-- file makes the new one right after (a call with 83 arguments finds it
-- through the default).

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
	double precision[]);
