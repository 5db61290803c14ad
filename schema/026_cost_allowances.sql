-- SPDX-License-Identifier: MIT
-- Each benchmark's time allowance and the rounds it measured (issue 36):
-- Cost.allowance_s (its share of the run's max_seconds; the total's row:
-- the run's max_seconds) and Cost.rounds (fewer than the method's repeats
-- when the allowance ran out first). Null for agents before them.

ALTER TABLE run_costs
	ADD COLUMN allowance_s double precision
		CHECK (allowance_s >= 0),
	ADD COLUMN rounds bigint CHECK (rounds >= 0);
COMMENT ON COLUMN run_costs.allowance_s IS
	'the seconds the benchmark was allowed (the total: the run''s max_seconds); null from agents before 026';
COMMENT ON COLUMN run_costs.rounds IS
	'the rounds the benchmark measured; null in the total and from agents before 026';
