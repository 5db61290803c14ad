-- SPDX-License-Identifier: MIT
-- Indexes that find a report's shape (030) and its comparisons' names
-- (032) by the arrays themselves (issue 37, the ingest rate):
-- fleetbench_ingest_run() looks for a stored row whose arrays equal the
-- report's before it makes their digest, whose text of about 15 KB took
-- 65 us a report. Hash indexes: the kinds of a shape's parameters (one
-- letter each, a few hundred) and the names of its comparisons are only
-- ever compared whole.
CREATE INDEX result_shapes_kinds_idx ON result_shapes USING hash (p_kind);
CREATE INDEX comparison_names_name_idx ON comparison_names
	USING hash (c_name);
