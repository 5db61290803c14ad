-- SPDX-License-Identifier: MIT
-- A report's shape found by its names in one text (issue 37, the ingest
-- rate). The collector sent the shape's names as five arrays and its
-- kinds as a sixth, about 940 elements a report, which PostgreSQL
-- received one by one (60 us) and fleetbench_ingest_run() compared with a
-- stored shape's arrays (35 us), every report, though a fleet has few
-- shapes. Now a writer may send them as fleetbench_report's shape_names
-- (every variant's benchmark, then every variant's name, parameter key,
-- metric and unit, in the arrays' order, joined by U+001F) and
-- shape_kinds (the kinds' letters in one text), leaving the six arrays
-- NULL; the function finds the shape by result_shapes.names (a hash
-- index) with its kinds and ends, and splits the text into the arrays
-- only for a shape not stored yet. A writer that sends the arrays is
-- served as before.
ALTER TYPE fleetbench_report ADD ATTRIBUTE shape_names text,
	ADD ATTRIBUTE shape_kinds text;
ALTER TABLE result_shapes ADD COLUMN names text COMPRESSION lz4;
COMMENT ON COLUMN result_shapes.names IS
	'the shape''s names in one text as a writer sends them in shape_names (044): v_benchmark, v_variant, p_key, m_metric and m_unit joined by U+001F; NULL when a name holds that character (such a shape is found by its arrays)';
-- the shapes stored before, as fleetbench_shape_names()
-- (functions/20_ingest.sql) joins a new one's
UPDATE result_shapes AS s SET names = x.j
FROM (SELECT y.shape_id, array_to_string(y.a, E'\x1f') AS j,
	     cardinality(y.a) AS n
      FROM (SELECT shape_id,
		   v_benchmark || v_variant || coalesce(p_key, '{}')
		   || coalesce(m_metric, '{}') || coalesce(m_unit, '{}') AS a
	    FROM result_shapes) AS y) AS x
WHERE s.shape_id = x.shape_id
  AND length(x.j) - length(replace(x.j, E'\x1f', '')) = x.n - 1;
CREATE INDEX result_shapes_names_idx ON result_shapes USING hash (names);
