-- SPDX-License-Identifier: MIT
-- The headline figures' declarations (issue 37): one row per figure,
-- loaded by `fleetbench-collector migrate` from proto/figures.def (the
-- function file 00_figures.sql that it makes), read by every query that
-- names a figure. docs/architecture.md, "The figures".

CREATE TABLE figures (
	name text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_]{0,39}$'),
	-- where a run and a group keep it (never changed: migrate refuses)
	id smallint NOT NULL UNIQUE CHECK (id BETWEEN 1 AND 1000),
	-- the order of every output: families, then figures
	position smallint NOT NULL CHECK (position > 0),
	family text NOT NULL CHECK (family ~ '^[a-z][a-z0-9_]{0,39}$'),
	kind text NOT NULL CHECK (kind IN ('ratio', 'value')),
	benchmark text NOT NULL,
	-- a ratio: variant over base (both NULL where the run names them);
	-- a value: variant, no base
	variant text,
	base text,
	metric text NOT NULL,
	unit text NOT NULL,
	higher_is_better boolean NOT NULL,
	per_vcpu boolean NOT NULL,
	alert_min_change double precision
		CHECK (alert_min_change > 0 AND alert_min_change <= 10),
	label text NOT NULL,
	note text NOT NULL,
	CONSTRAINT figures_position_once UNIQUE (position)
		DEFERRABLE INITIALLY DEFERRED,
	CONSTRAINT figures_value_shape CHECK (kind = 'ratio'
		OR (variant IS NOT NULL AND base IS NULL)),
	CONSTRAINT figures_ratio_shape CHECK (kind = 'value'
		OR (variant IS NULL) = (base IS NULL)),
	CONSTRAINT figures_alert_ratio CHECK (alert_min_change IS NULL
		OR kind = 'ratio')
);
COMMENT ON TABLE figures IS
	'the headline figures, one row each, as proto/figures.def declares them (loaded by migrate: never edit)';

-- The least change of a gain alert is each figure's own
-- (figures.alert_min_change) unless an operator sets one for all: NULL,
-- the new default, where it was the old default 0.2 (every alerting
-- figure's own today, so that no threshold moves).
ALTER TABLE alert_settings
	ALTER COLUMN gain_min_change DROP NOT NULL,
	ALTER COLUMN gain_min_change SET DEFAULT NULL;
UPDATE alert_settings SET gain_min_change = NULL WHERE gain_min_change = 0.2;
COMMENT ON COLUMN alert_settings.gain_min_change IS
	'the least relative change of a gain''s median that alerts, for every figure; NULL: each figure''s own (figures.alert_min_change)';
