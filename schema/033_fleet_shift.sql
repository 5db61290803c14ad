-- SPDX-License-Identifier: MIT
-- Fleet-level alerts of a kernel change (issue 39, docs/alerts.md): a
-- figure that moved on the hosts of one provider, instance type and
-- method, tested with the hosts as the units (functions/52_fleet_change.sql)
-- and kept among the many tests of a roll-out by Benjamini-Hochberg. Its
-- fleet alert is of the new kind 'shift', its change {"FIGURE":
-- "decreased"} (what it is: the alert's identity, as a gain alert's), and
-- the new column effect holds what the last evaluation measured (the
-- change with its interval, hosts, test, p and q, the old kernel), NULL
-- for the other kinds. A shift alert has no host alerts: the fleet is its
-- evidence.

ALTER TABLE fleet_alerts DROP CONSTRAINT fleet_alerts_kind,
	ADD CONSTRAINT fleet_alerts_kind
		CHECK (kind = ANY (ARRAY['fingerprint', 'gain', 'shift'])),
	ADD COLUMN effect jsonb,
	ADD CONSTRAINT fleet_alerts_effect_is_object
		CHECK (effect IS NULL OR jsonb_typeof(effect) = 'object');
COMMENT ON COLUMN fleet_alerts.effect IS
	'a shift alert''s last evaluation (033): figure, change, change_lo, change_hi (relative), hosts, paired, test, p, q, old_kernel, method, evaluated_at; NULL for the other kinds';

-- the q-value below which an evaluation's test raises a shift alert
-- (NULL: 0.01, docs/alerts.md), as gain_alpha is the host rule's
ALTER TABLE alert_settings ADD COLUMN fleet_q double precision,
	ADD CONSTRAINT alert_settings_fleet_q_probability
		CHECK (fleet_q > 0 AND fleet_q < 1);
