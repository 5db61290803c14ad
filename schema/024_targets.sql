-- SPDX-License-Identifier: MIT
-- Figures that say how far to trust them (issue 19), kept by the
-- collector as the agent reports them.
--
-- Repeats until the interval is tight: each comparison of an
-- adaptive run says the half-width it aimed at, whether its interval got
-- there and after how many rounds (Comparison fields 12-14, docs/wire.md),
-- kept with the run beside c_name as the other c_ arrays are (NULL
-- elements: a comparison without a target, fixed repeats; NULL arrays:
-- runs of agents before it, nothing to backfill).
-- A run with a comparison that did not reach its target ("WIDE" in the
-- agent's table) has bit 16 of run_figures.flags (fleetbench_flags());
-- fleet_summary counts them per group in `wide`, which `fleetbench
-- compare` and `kernels` show as wide_share. Old runs and their cached
-- groups have no wide run, as they had no target: 0 is right for them.
-- The windows: why each noisy one was flagged (Window.noisy_reason, "cpu
-- pressure 61.0% > 50%; ...") and the vCPUs its measuring thread ran on
-- (Window.cpus, "0" or "0,1"), as two more w_ arrays of run_results
-- beside w_noisy (NULL arrays when no window has one: older agents);
-- bench_results' windows show them.
-- fleetbench_ingest_run() takes the five in one more parameter, `more`
-- (JSON text, DEFAULT NULL: PostgreSQL allows a function 100 parameters,
-- and the 97 before it are what older collectors send): the old one is
-- dropped here, and the function file makes the new one right after.

ALTER TABLE runs
	ADD COLUMN c_target_half_width double precision[],
	ADD COLUMN c_target_reached boolean[],
	ADD COLUMN c_rounds integer[];
COMMENT ON COLUMN runs.c_target_half_width IS
	'per comparison (as c_name): the relative half-width its interval aimed at (0.05: within 5%), NULL without a target';
COMMENT ON COLUMN runs.c_target_reached IS
	'per comparison (as c_name): whether its interval reached c_target_half_width before the budget or the most repeats ended the rounds, NULL without a target';
COMMENT ON COLUMN runs.c_rounds IS
	'per comparison (as c_name): the interleaved rounds its interval was computed from, NULL without a target';

ALTER TABLE run_results
	ADD COLUMN w_noisy_reason text[] COMPRESSION lz4,
	ADD COLUMN w_cpus text[] COMPRESSION lz4;
COMMENT ON COLUMN run_results.w_noisy_reason IS
	'per window (as w_noisy): why it was flagged noisy, NULL when it was not or the agent did not say';
COMMENT ON COLUMN run_results.w_cpus IS
	'per window (as w_noisy): the vCPUs its measuring thread ran on, at start and end ("0" or "0,1"), NULL when unknown';

ALTER TABLE fleet_summary ADD COLUMN wide bigint NOT NULL DEFAULT 0;
COMMENT ON COLUMN fleet_summary.wide IS
	'runs with a comparison whose interval did not reach its target (run_figures.flags bit 16)';

-- the 97-parameter fleetbench_ingest_run() of 021, whatever its
-- signature's spelling: every one there is
DO $$
DECLARE
	f regprocedure;
BEGIN
	FOR f IN SELECT p.oid FROM pg_proc AS p
		 WHERE p.proname = 'fleetbench_ingest_run'
		   AND p.pronamespace = to_regnamespace(current_schema())
	LOOP
		EXECUTE format('DROP FUNCTION %s', f);
	END LOOP;
END
$$;

COMMENT ON COLUMN run_figures.flags IS
	'iouring_ok, sqpoll_ok, hugepage_1g, steal_flagged (a repeat flagged noisy) and wide (a comparison that did not reach its target, 024) as bits 1, 2, 4, 8 and 16 (fleetbench_flags())';
