-- SPDX-License-Identifier: MIT
-- Integer parameter values as integers (issue 37, the ingest rate).
-- Every report's few hundred parameter values came as text, and
-- fleetbench_ingest_run() picked out those of kind i and matched them
-- against an integer's form, 90 us a report, so that bench_results can
-- read them back as JSON. Now a writer may send them as fleetbench_report's
-- p_int (bigint[], the values of kind i in their order), with p_value
-- holding the values of the other kinds alone: a bigint needs no check.
-- run_results.p_int keeps them so; a row stored before, or from a writer
-- that leaves p_int NULL, keeps every value in p_value as before, and
-- fleetbench_param_values() (functions/15_results.sql) reads either.
ALTER TYPE fleetbench_report ADD ATTRIBUTE p_int bigint[];
-- (the compression given with the column, as 024 did: every partition
-- gets it)
ALTER TABLE run_results ADD COLUMN p_int bigint[] COMPRESSION lz4;
COMMENT ON COLUMN run_results.p_int IS
	'the values of the parameters of kind i, in their order (043); NULL: p_value holds every kind''s, as before 043';
