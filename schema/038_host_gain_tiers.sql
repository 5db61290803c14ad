-- SPDX-License-Identifier: MIT
-- The per-host gain rule for what one host can show (issue 39,
-- docs/alerts.md "The io_uring gain"). A roll-out tests every host of
-- every group for every alerting figure (500 tests for 10 groups of 10
-- hosts and 5 figures); at p < 0.01 with 5 repeats a side, a 20% change
-- within the noise alerted in 44-94% of simulated roll-outs with no
-- change at all (bench/detect). Now a host alerts on a change of the
-- figure's least size only at p < gain_alpha, whose default becomes 1e-4
-- (reachable with 9 repeats a side: the full profile), or on a very large
-- change, the gain at least (1 + gain_large_change) times or at most
-- 1 / (1 + gain_large_change) of what it was (NULL: 1, doubled or
-- halved), at p < gain_large_alpha (NULL: 0.01, reachable with 5 repeats).
-- Moderate changes on hosts of fewer repeats are the fleet test's
-- (033, the shift alerts).

ALTER TABLE alert_settings ALTER COLUMN gain_alpha SET DEFAULT 0.0001;
UPDATE alert_settings SET gain_alpha = 0.0001 WHERE gain_alpha = 0.01;
ALTER TABLE alert_settings ADD COLUMN gain_large_change double precision,
	ADD CONSTRAINT alert_settings_large_change_positive
		CHECK (gain_large_change > 0),
	ADD COLUMN gain_large_alpha double precision,
	ADD CONSTRAINT alert_settings_large_alpha_probability
		CHECK (gain_large_alpha > 0 AND gain_large_alpha < 1);
COMMENT ON COLUMN alert_settings.gain_alpha IS
	'the p-value below which a host''s gain that moved by its least change alerts (038: 1e-4, 9 repeats a side reach it)';
COMMENT ON COLUMN alert_settings.gain_large_change IS
	'a very large change: the gain at least 1 + this times, or at most 1 / (1 + this) of, what it was (038; NULL: 1, doubled or halved)';
COMMENT ON COLUMN alert_settings.gain_large_alpha IS
	'the p-value below which a host''s very large change alerts (038; NULL: 0.01, 5 repeats a side reach it)';
