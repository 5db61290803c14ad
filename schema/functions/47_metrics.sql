-- SPDX-License-Identifier: MIT
-- The fleet's figures as the collector's /metrics exports them
-- (collector/metrics.c; docs/operations.md, "Metrics (Prometheus)").

/*
 * The groups of fleet_summary's level 3 (provider, instance type, kernel
 * and method; brought up to date first, as the CLI's queries do), the
 * max_groups of them with the latest runs, as rows of one value each:
 * metric 'runs' and 'hosts' for each group, and metric 'figure' for each
 * declared figure that the group measured (figure: its name, with
 * _per_vcpu for its per-vCPU estimate; value: its median), read through
 * fleetbench_group_figures(), so a new one is exported without a change
 * here. groups is the number of
 * groups before the cut. Ordered by metric, figure and group, as the
 * exposition format wants each metric's samples together.
 */
CREATE OR REPLACE FUNCTION fleetbench_metrics_figures(max_groups integer)
RETURNS TABLE (metric text, figure text, provider text, instance_type text,
	       kernel text, method text, value double precision, groups bigint)
LANGUAGE sql VOLATILE AS $$
	WITH g AS (
		SELECT s AS s, count(*) OVER () AS groups,
		       row_number() OVER (ORDER BY s.last_run DESC, s.runs DESC,
					  s.provider, s.instance_type,
					  s.kernel, s.method) AS k
		FROM fleetbench_group_rows('{provider,instance_type,kernel}',
					   NULL, NULL) AS s
	), kept AS (
		SELECT g.s, g.groups FROM g WHERE g.k <= max_groups
	)
	SELECT x.metric, x.figure, (x.s).provider, (x.s).instance_type,
	       (x.s).kernel, (x.s).method, x.value, x.groups
	FROM (SELECT 'runs' AS metric, NULL::text AS figure, kept.s,
		     (kept.s).runs::double precision AS value, kept.groups
	      FROM kept
	      UNION ALL
	      SELECT 'hosts', NULL, kept.s, (kept.s).hosts::double precision,
		     kept.groups
	      FROM kept
	      UNION ALL
	      SELECT 'figure',
		     CASE WHEN e.per_vcpu THEN e.figure || '_per_vcpu'
			  ELSE e.figure END,
		     kept.s, (e.est).median, kept.groups
	      FROM kept, fleetbench_group_figures(kept.s) AS e
	      WHERE (e.est).median IS NOT NULL) AS x
	ORDER BY x.metric, x.figure, (x.s).provider, (x.s).instance_type,
		 (x.s).kernel, (x.s).method
$$;
