-- SPDX-License-Identifier: MIT
-- A run's costs go with it by the trigger that takes its results (issue
-- 37, the ingest rate). run_costs' foreign key to runs made a check of
-- runs for each of a report's rows (about 10: 60 of the 145 us the
-- insert took a report); the rows are written only by
-- fleetbench_ingest_run(), after the run's row in the same call, so the
-- key checked nothing a writer could get wrong. runs' delete and
-- truncate trigger (fleetbench_runs_deleted(), functions/15_results.sql)
-- now deletes them, as it does run_results' rows.

ALTER TABLE run_costs DROP CONSTRAINT run_costs_run_id_fkey;
