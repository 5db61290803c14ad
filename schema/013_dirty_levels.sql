-- SPDX-License-Identifier: MIT
-- fleet_dirty notes each level of fleet_summary apart: a changed
-- instance type, kernel and method is noted once for level 3 (its
-- instance type and kernel row) and once for level 2 (its instance type
-- row), and fleetbench_refresh(level) brings one level up to date. So
-- `fleetbench compare` right after new runs recomputes their instance
-- type and kernel groups only, not every run of their instance types
-- (schema/functions/30_figures.sql; docs/performance.md, "compare right
-- after new runs").

ALTER TABLE fleet_dirty ADD COLUMN level smallint;
-- a row noted before stands for both levels
INSERT INTO fleet_dirty (provider, instance_type, kernel_release, method,
			 level)
SELECT provider, instance_type, kernel_release, method, 2 FROM fleet_dirty;
UPDATE fleet_dirty SET level = 3 WHERE level IS NULL;
ALTER TABLE fleet_dirty ALTER COLUMN level SET NOT NULL,
	ADD CONSTRAINT fleet_dirty_level_check CHECK (level IN (2, 3));
DROP INDEX fleet_dirty_key_idx;
CREATE INDEX fleet_dirty_key_idx
	ON fleet_dirty (level, provider, instance_type, kernel_release, method);

COMMENT ON TABLE fleet_dirty IS
	'instance types, kernels and methods with runs stored since the level (2 or 3) of fleet_summary was last refreshed';

-- fleetbench_refresh() gains its level parameter (default NULL: both), a
-- change of signature: the old one goes here, once, and the function file
-- makes the new one.
DROP FUNCTION IF EXISTS fleetbench_refresh();
