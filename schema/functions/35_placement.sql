-- SPDX-License-Identifier: MIT
-- vCPU placement (issue 19): when a host's placement changed between two
-- of its runs. runs.placement (migration 023) is the probe's canonical
-- line of SMT siblings and cache sharing; two runs of a host with
-- different lines ran on vCPUs placed differently by the hypervisor (SMT
-- siblings of one core, or separate cores), which moves false sharing and
-- core-to-core figures by itself (docs/bench.md, "vCPU placement").

-- Consecutive runs of a host (that carry a placement) whose placements
-- differ: one row per change, the newest last.
DROP VIEW IF EXISTS host_placement_changes CASCADE;
CREATE VIEW host_placement_changes AS
SELECT x.machine_id, x.hostname, x.provider, x.instance_type,
       x.prev_kernel AS old_kernel, x.kernel_release AS new_kernel,
       x.prev_run AS old_run_id, x.run_id AS new_run_id,
       x.prev_placement AS old_placement, x.placement AS new_placement,
       x.started_at AS changed_at
FROM (SELECT r.machine_id, r.hostname, r.provider, r.instance_type,
	     r.kernel_release, r.run_id, r.placement, r.started_at,
	     lag(r.placement) OVER w AS prev_placement,
	     lag(r.run_id) OVER w AS prev_run,
	     lag(r.kernel_release) OVER w AS prev_kernel
      FROM runs AS r
      WHERE r.placement IS NOT NULL
      WINDOW w AS (PARTITION BY r.machine_id
		   ORDER BY r.started_at, r.run_id)) AS x
WHERE x.prev_placement <> x.placement
ORDER BY x.started_at, x.machine_id;
COMMENT ON VIEW host_placement_changes IS
	'per host, each pair of consecutive runs whose vCPU placement (runs.placement) differs';

-- The words `fleetbench kernels` adds to a kernel's changes when hosts of
-- the instance type changed placement on their way to a run of it (since
-- since, when given): "vCPU placement changed on 2 hosts (threads=1 ...
-- -> threads=2 ...)", each distinct change once, 300 characters at most.
-- NULL when none did.
CREATE OR REPLACE FUNCTION fleetbench_placement_text(p_provider text,
				p_instance_type text, p_kernel text,
				since timestamptz DEFAULT NULL)
RETURNS text
LANGUAGE sql STABLE AS $$
	WITH x AS (
		SELECT r.machine_id, r.kernel_release, r.placement, r.started_at,
		       lag(r.placement) OVER (PARTITION BY r.machine_id
					      ORDER BY r.started_at, r.run_id)
			       AS prev
		FROM runs AS r
		WHERE r.placement IS NOT NULL AND r.provider = p_provider
		      AND r.instance_type = p_instance_type
	)
	SELECT format('vCPU placement changed on %s host%s (%s)',
		      count(DISTINCT x.machine_id),
		      CASE WHEN count(DISTINCT x.machine_id) = 1 THEN '' ELSE 's' END,
		      left(string_agg(DISTINCT x.prev || ' -> ' || x.placement,
				      '; '), 300))
	FROM x
	WHERE x.prev <> x.placement AND x.kernel_release = p_kernel
	      AND (since IS NULL OR x.started_at >= since)
	HAVING count(*) > 0
$$;

-- Of an alert's hosts, how many ran the two runs it compares on
-- differently placed vCPUs (both runs carry a placement).
CREATE OR REPLACE FUNCTION fleetbench_alert_placement_changed(alert bigint)
RETURNS bigint
LANGUAGE sql STABLE AS $$
	SELECT count(*)
	FROM alerts AS a
	JOIN runs AS o ON o.run_id = a.old_run_id
	JOIN runs AS n ON n.run_id = a.new_run_id
	WHERE a.fleet_alert_id = alert AND o.placement <> n.placement
$$;
