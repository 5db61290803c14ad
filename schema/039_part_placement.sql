-- SPDX-License-Identifier: MIT
-- A probe part's vCPU placement (023: topology.placement, when a string)
-- as a column computed from its body when the part is stored (issue 37,
-- the ingest rate). fleetbench_ingest_run() read it from the body for
-- every report it stored: the body of about 5 KB detoasted and
-- decompressed each time, 7% of the function's time. The body stays the
-- one source of it.
ALTER TABLE probe_parts ADD COLUMN placement text
	GENERATED ALWAYS AS (CASE
		WHEN jsonb_typeof(body #> '{topology,placement}') = 'string'
		THEN body #>> '{topology,placement}' END) STORED;
COMMENT ON COLUMN probe_parts.placement IS
	'the part''s topology.placement when a string, else NULL (039; runs.placement is copied from it)';
