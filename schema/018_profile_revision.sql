-- SPDX-License-Identifier: MIT
-- The profiles' revision of 2026-12-03 (proto/method.c): standard's
-- thp_chase makes 20 M dependent loads per repeat (50 M before), and full's
-- 20 M (100 M), with io_ms 2000 (5000), mmap_accesses 5 M (10 M),
-- scaling_ms 1000 (2000) and db_seconds 5 (8), so that standard keeps to
-- its 3 minutes and full to its 15. A method key names what differs from
-- its profile's parameters, so the key "standard" now means the new ones:
-- every method stored with a profile's earlier parameters is keyed here by
-- them, as the collector keys the runs of agents that still have them
-- ("standard" with chase_accesses 50000000 becomes
-- "standard+chase_accesses=50000000", "standard+chase_accesses=20000000"
-- becomes "standard"). Its runs, run_figures rows and the groups noted in
-- fleet_dirty follow; run_figures' triggers note the groups of both keys
-- changed, so fleet_summary is recomputed for them at the next query.
--
-- Methods known from their profile alone (runs stored before migration
-- 008 or sent without a method) carry no parameters and keep their key.

-- A methods row's key under the new parameters: its differences from the
-- profile but those of the five changed fields, then each of those whose
-- value differs from the new one, all in the fields' order.
CREATE TEMPORARY TABLE fleetbench_018_rekey ON COMMIT DROP AS
WITH revised (profile, chase_accesses, io_ms, mmap_accesses, scaling_ms,
	      db_seconds) AS (
	VALUES ('standard', 20000000, 1500, 3000000, 1000, 5),
	       ('full', 20000000, 2000, 5000000, 1000, 5)
), field_order (names) AS (
	VALUES ('{repeats,chase_bytes,chase_accesses,fault_bytes,file_bytes,io_ms,iodepth,seq_bytes,seq_block,fs_increments,mmap_bytes,mmap_accesses,bw_bytes,scaling_ms,wb_bytes,wb_fsync_bytes,with_database,db_scale,db_rate,db_seconds,writeback_dirty_bytes,only,randread_file}'::text[])
)
SELECT m.key AS old,
       m.profile || coalesce(string_agg('+' || c.part, ''
					ORDER BY array_position(o.names, c.name)),
			     '') AS new
FROM methods AS m
JOIN revised AS d USING (profile)
CROSS JOIN field_order AS o
LEFT JOIN LATERAL (
	SELECT p AS part, split_part(p, '=', 1) AS name
	FROM unnest((string_to_array(m.key, '+'))[2:]) AS p
	WHERE split_part(p, '=', 1) NOT IN ('chase_accesses', 'io_ms',
					    'mmap_accesses', 'scaling_ms',
					    'db_seconds')
	UNION ALL
	SELECT format('%s=%s', v.name, v.value), v.name
	FROM (VALUES ('chase_accesses', m.chase_accesses, d.chase_accesses),
		     ('io_ms', m.io_ms, d.io_ms),
		     ('mmap_accesses', m.mmap_accesses, d.mmap_accesses),
		     ('scaling_ms', m.scaling_ms, d.scaling_ms),
		     ('db_seconds', m.db_seconds, d.db_seconds))
		AS v(name, value, revised)
	WHERE v.value IS NOT NULL AND v.value <> v.revised
) AS c ON true
WHERE m.chase_accesses IS NOT NULL
GROUP BY m.key, m.profile;

DELETE FROM fleetbench_018_rekey WHERE old = new;

-- every key once: two methods that become one would be a fault here
DO $$
DECLARE
	dup text;
BEGIN
	SELECT k.new INTO dup FROM fleetbench_018_rekey AS k
	GROUP BY k.new HAVING count(*) > 1 LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'two methods would both be keyed %', dup;
	END IF;
END
$$;

UPDATE runs AS r SET method = k.new
FROM fleetbench_018_rekey AS k WHERE r.method = k.old;
-- run_figures' triggers are the functions as a database migrated from
-- far back last made them, which may not know fleet_dirty's level yet:
-- the groups are noted here instead, for both levels, under the old key
-- (its cached rows go) and the new one (they are computed)
ALTER TABLE run_figures DISABLE TRIGGER USER;
UPDATE run_figures AS f SET method = k.new
FROM fleetbench_018_rekey AS k WHERE f.method = k.old;
ALTER TABLE run_figures ENABLE TRIGGER USER;
INSERT INTO fleet_dirty (provider, instance_type, kernel_release, method,
			 level)
SELECT DISTINCT f.provider, f.instance_type, f.kernel_release, m.key,
       l.level
FROM run_figures AS f
JOIN fleetbench_018_rekey AS k ON f.method = k.new
CROSS JOIN LATERAL (VALUES (k.old), (k.new)) AS m(key)
CROSS JOIN (VALUES (2::smallint), (3::smallint)) AS l(level);
-- through names no key has ([a-z0-9...] only), so that a key that is both
-- an old and a new one is never held twice
UPDATE methods AS m SET key = '~' || k.new
FROM fleetbench_018_rekey AS k WHERE m.key = k.old;
UPDATE methods SET key = substr(key, 2) WHERE key LIKE '~%';
