-- SPDX-License-Identifier: MIT
-- The fleet-level test of a kernel change (issue 39, docs/alerts.md): for
-- one provider, instance type and method, every headline figure of the
-- hosts on the old kernel against the new one, the hosts being the units
-- (12_stats.sql). Read by hand today (psql); the alerts, `kernels` and the
-- gate will read it. A function file (schema/README.md).

/*
 * For each figure (all of them, or those named in figures_only), each
 * host's median of the figure over its runs on old_kernel and over its
 * runs on new_kernel (run_figures, the run's method), as logs. With at
 * least six hosts measured on both kernels (the common roll-out), the
 * paired test: Wilcoxon's signed-rank test of their log-ratios, the
 * Hodges-Lehmann estimate and its 95% interval; else the two sets of hosts
 * (Mann-Whitney, the Hodges-Lehmann shift). change, change_lo and
 * change_hi are relative (-0.081 is -8.1%), from the estimate of the log
 * ratio. hosts_old and hosts_new count the hosts of each kernel that have
 * the figure, hosts_paired those with both. A figure no host of one side
 * has is not listed. q is filled in by the caller over an evaluation's
 * tests (fleetbench_bh); here it is NULL.
 */
CREATE OR REPLACE FUNCTION fleetbench_fleet_change(provider text,
						   instance_type text,
						   method text,
						   old_kernel text,
						   new_kernel text,
						   figures_only text[] DEFAULT NULL)
RETURNS TABLE (figure text, hosts_old integer, hosts_new integer,
	       hosts_paired integer, paired boolean, test text,
	       change double precision, change_lo double precision,
	       change_hi double precision, p double precision)
LANGUAGE plpgsql STABLE AS $$
DECLARE
	g record;
	s record;
BEGIN
	FOR g IN
		WITH per_host AS (
			SELECT f.name, rf.machine_id,
			       rf.kernel_release = new_kernel AS new,
			       ln(percentile_cont(0.5) WITHIN GROUP (
				       ORDER BY rf.figures[f.id])) AS v
			FROM run_figures AS rf
			CROSS JOIN figures AS f
			WHERE rf.provider = fleetbench_fleet_change.provider
			      AND rf.instance_type = fleetbench_fleet_change.instance_type
			      AND rf.method = fleetbench_fleet_change.method
			      AND rf.kernel_release IN (old_kernel, new_kernel)
			      AND rf.figures[f.id] > 0
			      AND (figures_only IS NULL OR f.name = ANY (figures_only))
			GROUP BY f.name, f.position, rf.machine_id, rf.kernel_release
		)
		SELECT a.name, f.position,
		       array_agg(a.v) FILTER (WHERE NOT a.new) AS old,
		       array_agg(a.v) FILTER (WHERE a.new) AS new,
		       array_agg(b.v - a.v) FILTER (WHERE NOT a.new
						   AND b.v IS NOT NULL) AS d
		FROM per_host AS a
		JOIN figures AS f ON f.name = a.name
		LEFT JOIN per_host AS b ON b.name = a.name
			AND b.machine_id = a.machine_id AND b.new AND NOT a.new
		GROUP BY a.name, f.position
		HAVING count(*) FILTER (WHERE NOT a.new) > 0
		       AND count(*) FILTER (WHERE a.new) > 0
		ORDER BY f.position
	LOOP
		figure := g.name;
		hosts_old := cardinality(g.old);
		hosts_new := cardinality(g.new);
		hosts_paired := coalesce(cardinality(g.d), 0);
		paired := hosts_paired >= 6;
		IF paired THEN
			SELECT * INTO s FROM fleetbench_signed_rank(g.d);
			test := 'Wilcoxon signed-rank, '
				|| CASE WHEN s.exact THEN 'exact'
					ELSE 'normal approximation' END;
			p := s.p;
		ELSE
			SELECT h.*, u.p AS p_u, u.exact INTO s
			FROM fleetbench_hodges_lehmann(g.old, g.new) AS h,
			     fleetbench_mann_whitney(g.old, g.new) AS u;
			test := 'Mann-Whitney U, '
				|| CASE WHEN s.exact THEN 'exact'
					ELSE 'normal approximation' END;
			p := s.p_u;
		END IF;
		change := exp(s.estimate) - 1;
		change_lo := exp(s.lo) - 1;
		change_hi := exp(s.hi) - 1;
		RETURN NEXT;
	END LOOP;
END
$$;
