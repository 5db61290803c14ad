-- SPDX-License-Identifier: MIT
-- Provider drift (issue 39, docs/alerts.md): a figure that moved on the
-- hosts of one provider, instance type, method and kernel with no kernel
-- change (a new host generation, hypervisor or microcode) raises a fleet
-- alert of the new kind 'drift' (functions/56_drift.sql); its effect
-- holds the day of the change, its size with an interval and the hosts
-- that show it. alert_settings.drift_p is the p-value below which a
-- drift test alerts (NULL: 1e-7).

ALTER TABLE fleet_alerts DROP CONSTRAINT fleet_alerts_kind,
	ADD CONSTRAINT fleet_alerts_kind
		CHECK (kind = ANY (ARRAY['fingerprint', 'gain', 'shift',
					 'drift']));
COMMENT ON COLUMN fleet_alerts.effect IS
	'a shift or drift alert''s evaluation (033, 034): figure, change, change_lo, change_hi (relative), hosts, test, p, and a shift''s q and old_kernel or a drift''s changed_on and detected_on; NULL for the other kinds';
ALTER TABLE alert_settings ADD COLUMN drift_p double precision,
	ADD CONSTRAINT alert_settings_drift_p_probability
		CHECK (drift_p > 0 AND drift_p < 1);

-- the last day each group's drift was checked for: the check runs once a
-- day per group, at the first batch with a run of a later day, over the
-- days before it (functions/20_ingest.sql, fleetbench_runs_stored)
CREATE TABLE drift_checked (
	provider text NOT NULL,
	instance_type text NOT NULL,
	method text NOT NULL,
	kernel_release text NOT NULL,
	day date NOT NULL,
	PRIMARY KEY (provider, instance_type, method, kernel_release)
);
COMMENT ON TABLE drift_checked IS
	'per group, the day up to which its drift was last checked (034)';
