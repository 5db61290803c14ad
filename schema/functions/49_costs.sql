-- SPDX-License-Identifier: MIT
-- What runs cost their hosts (issue 36): the view run_costs and
-- `fleetbench compare --figures cost`.

-- A row per benchmark of a run's costs and one for its total, as the
-- table run_costs held them from 025 until 040 put them in the run's row
-- (runs.cost_benchmark .. cost_rounds); none for a run of an agent before
-- 025.
DROP VIEW IF EXISTS run_costs CASCADE;
CREATE VIEW run_costs AS
SELECT r.run_id, c.benchmark, c.wall_s, c.cpu_s, c.peak_memory_bytes,
       c.written_bytes, c.allowance_s, c.rounds
FROM runs AS r,
     unnest(r.cost_benchmark, r.cost_wall_s, r.cost_cpu_s,
	    r.cost_peak_memory_bytes, r.cost_written_bytes,
	    r.cost_allowance_s, r.cost_rounds)
	     AS c(benchmark, wall_s, cpu_s, peak_memory_bytes, written_bytes,
		  allowance_s, rounds);
COMMENT ON VIEW run_costs IS
	'what each benchmark of a run cost its host (issue 36), and the run''s total (benchmark ''total''): a row per element of runs.cost_benchmark .. cost_rounds (040)';

/*
 * Per group (by, filter, since and method_key as fleet_compare_by()'s; by
 * default provider, instance type and kernel) and benchmark ('total': the
 * whole run's benchmarks together), the runs that reported their cost and
 * the median over them of the wall seconds (with its distribution-free 95%
 * interval), CPU seconds, peak memory and bytes written, and the most
 * wall seconds one run took. Runs of agents before issue 36 have no cost
 * and are not counted. method_key NULL: every method ('*' too), each in
 * its own rows, since a profile's cost is the point of comparing them.
 */
DROP FUNCTION IF EXISTS fleet_cost_by(text[], jsonb, timestamptz, text);
CREATE FUNCTION fleet_cost_by(by text[] DEFAULT NULL,
			      filter jsonb DEFAULT NULL,
			      since timestamptz DEFAULT NULL,
			      method_key text DEFAULT NULL)
RETURNS TABLE (
	method text, provider text, instance_type text, kernel text,
	region text, vm text, thp text, vcpus integer, host text,
	benchmark text, hosts bigint, runs bigint,
	wall_s numeric, wall_s_lo numeric, wall_s_hi numeric,
	wall_s_max numeric, cpu_s numeric, peak_memory_mib numeric,
	written_mib numeric)
LANGUAGE plpgsql STABLE
SET work_mem = '256MB'
AS $$
#variable_conflict use_column
DECLARE
	keys text[] := coalesce(by, '{provider,instance_type,kernel}');
BEGIN
	PERFORM fleetbench_check_keys(keys, 'by');
	PERFORM fleetbench_check_filter(filter);
	RETURN QUERY
	WITH f AS MATERIALIZED (
		SELECT r.* FROM fleetbench_runs(
			fleetbench_filter_method(filter,
				nullif(method_key, '*')), since) AS r
	), g AS (
		SELECT f.method,
		       CASE WHEN 'provider' = ANY (keys) THEN f.provider END AS provider,
		       CASE WHEN 'instance_type' = ANY (keys) THEN f.instance_type END AS instance_type,
		       CASE WHEN 'kernel' = ANY (keys) THEN f.kernel_release END AS kernel,
		       CASE WHEN 'region' = ANY (keys) THEN f.region END AS region,
		       CASE WHEN 'vm' = ANY (keys) THEN f.vm END AS vm,
		       CASE WHEN 'thp' = ANY (keys) THEN f.thp_enabled END AS thp,
		       CASE WHEN 'vcpus' = ANY (keys) THEN f.vcpus END AS vcpus,
		       CASE WHEN 'host' = ANY (keys) THEN f.hostname END AS host,
		       c.benchmark,
		       count(DISTINCT f.machine_id) AS hosts,
		       fleetbench_median_ci(array_agg(c.wall_s ORDER BY c.wall_s)) AS w,
		       max(c.wall_s) AS wall_max,
		       percentile_cont(0.5) WITHIN GROUP (ORDER BY c.cpu_s) AS cpu,
		       percentile_cont(0.5) WITHIN GROUP (ORDER BY c.peak_memory_bytes) AS peak,
		       percentile_cont(0.5) WITHIN GROUP (ORDER BY c.written_bytes) AS written
		FROM f JOIN run_costs AS c ON c.run_id = f.run_id
		GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
	)
	SELECT g.method, g.provider, g.instance_type, g.kernel, g.region,
	       g.vm, g.thp, g.vcpus, g.host, g.benchmark, g.hosts, (g.w).n::bigint,
	       round((g.w).median::numeric, 1), round((g.w).ci_low::numeric, 1),
	       round((g.w).ci_high::numeric, 1), round(g.wall_max::numeric, 1),
	       round(g.cpu::numeric, 1), round((g.peak / 1048576)::numeric, 1),
	       round((g.written / 1048576)::numeric, 1)
	FROM g
	ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9, g.benchmark = 'total' DESC, 10;
END
$$;

COMMENT ON FUNCTION fleet_cost_by(text[], jsonb, timestamptz, text) IS
	'what runs cost their hosts per group and benchmark (total: the whole run): median wall seconds with its 95% interval, CPU seconds, peak memory and bytes written (issue 36; fleetbench compare --figures cost)';
