-- SPDX-License-Identifier: MIT
-- What a run cost the host that ran it (issue 36): one row per benchmark
-- of the run (Report.costs) and one 'total' (Report.cost_total), each the
-- wall seconds, CPU seconds, peak memory and bytes written of the
-- benchmark's process, as the agent measured them (docs/wire.md, Cost).
-- A long table, not columns of runs: a benchmark added later is rows, not
-- a migration. Runs of agents before it have no rows. A run's rows go
-- with it (ON DELETE CASCADE: `fleetbench-collector prune`).
-- fleetbench_ingest_run() takes them in its `more` parameter (JSON text,
-- key "costs"), as 024's fields; the view fleet_costs gives the median per
-- provider, instance type, kernel, method and benchmark (`fleetbench
-- compare --figures cost` reads it).

CREATE TABLE run_costs (
	run_id uuid NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
	benchmark text NOT NULL,
	wall_s double precision NOT NULL CHECK (wall_s >= 0),
	cpu_s double precision NOT NULL CHECK (cpu_s >= 0),
	peak_memory_bytes bigint NOT NULL CHECK (peak_memory_bytes >= 0),
	written_bytes bigint NOT NULL CHECK (written_bytes >= 0),
	PRIMARY KEY (run_id, benchmark)
);
COMMENT ON TABLE run_costs IS
	'what each benchmark of a run cost its host (issue 36), and the run''s total (benchmark ''total'')';
