-- SPDX-License-Identifier: MIT
-- vCPU placement (issue 19): the probe's topology.placement, one canonical
-- line of SMT siblings and cache sharing ("threads=2 cores=1 sockets=1
-- smt=0-1 L1d=0-1 ..."), kept as a column of its run so that a host's runs
-- can be compared without reading their probes: a figure that moved with
-- the placement is explained by it (view host_placement_changes, `fleetbench
-- kernels`, alert_summary). NULL for runs of agents before it, whose
-- probes have no topology: nothing to backfill.

ALTER TABLE runs ADD COLUMN placement text;
COMMENT ON COLUMN runs.placement IS
	'the vCPU placement the guest saw (probe topology.placement), NULL when unknown';

-- a host's runs in order, read without the rows' probes
CREATE INDEX runs_placement_idx ON runs (machine_id, started_at, run_id)
	INCLUDE (placement, kernel_release, provider, instance_type)
	WHERE placement IS NOT NULL;
