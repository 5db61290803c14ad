-- SPDX-License-Identifier: MIT
-- The fleet-level test of a kernel change (issue 39, docs/alerts.md): for
-- one provider, instance type and method, every headline figure of the
-- hosts on the old kernel against the new one, the hosts being the units
-- (12_stats.sql); one evaluation of a roll-out over every group and
-- alerting figure, q-values over its tests, and the shift alerts it
-- raises (fleetbench_runs_stored() calls it). A function file
-- (schema/README.md).

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

/*
 * One evaluation of a roll-out (docs/alerts.md, "Fleet-level alerts"):
 * every alerting figure (figures.alert_min_change set) of every provider,
 * instance type and method with hosts measured on new_kernel, each tested
 * by fleetbench_fleet_change() against the kernel those hosts ran before
 * (for each host, its latest earlier run on another kernel with the same
 * method, fleetbench_alert_previous(); the group's most common one), and
 * q, Benjamini-Hochberg's q-value of p over all of this evaluation's
 * tests. A group none of whose hosts ran another kernel before is not
 * tested.
 */
CREATE OR REPLACE FUNCTION fleetbench_fleet_evaluate(new_kernel text)
RETURNS TABLE (provider text, instance_type text, method text,
	       old_kernel text, figure text, hosts_old integer,
	       hosts_new integer, hosts_paired integer, paired boolean,
	       test text, change double precision,
	       change_lo double precision, change_hi double precision,
	       p double precision, q double precision)
LANGUAGE sql STABLE AS $$
	WITH g AS (
		SELECT h.provider, h.instance_type, h.method,
		       mode() WITHIN GROUP (ORDER BY prev.old_kernel)
			       AS old_kernel
		FROM (SELECT DISTINCT ON (r.machine_id, r.method)
			     r.machine_id, r.provider, r.instance_type,
			     r.method, r.started_at
		      FROM run_figures AS r
		      WHERE r.kernel_release = $1
		      ORDER BY r.machine_id, r.method, r.started_at) AS h
		CROSS JOIN LATERAL fleetbench_alert_previous(
			h.machine_id, $1, h.method, h.started_at) AS prev
		GROUP BY h.provider, h.instance_type, h.method
	), t AS MATERIALIZED (
		SELECT g.provider, g.instance_type, g.method, g.old_kernel,
		       c.figure, c.hosts_old, c.hosts_new, c.hosts_paired,
		       c.paired, c.test, c.change, c.change_lo, c.change_hi,
		       c.p,
		       row_number() OVER (ORDER BY g.provider, g.instance_type,
					  g.method, f.position) AS k
		FROM g
		CROSS JOIN LATERAL fleetbench_fleet_change(g.provider,
			g.instance_type, g.method, g.old_kernel, $1,
			(SELECT array_agg(x.name) FROM figures AS x
			 WHERE x.alert_min_change IS NOT NULL)) AS c
		JOIN figures AS f ON f.name = c.figure
	), b AS (
		SELECT fleetbench_bh(array_agg(t.p ORDER BY t.k)) AS qs FROM t
	)
	SELECT t.provider, t.instance_type, t.method, t.old_kernel, t.figure,
	       t.hosts_old, t.hosts_new, t.hosts_paired, t.paired, t.test,
	       t.change, t.change_lo, t.change_hi, t.p, b.qs[t.k]
	FROM t, b
	ORDER BY t.k
$$;

/*
 * Raises (or brings up to date) the shift alerts of one evaluation of
 * new_kernel: a fleet alert of kind 'shift' for each test whose q is
 * below alert_settings.fleet_q (0.01 unless set), its change {"FIGURE":
 * "decreased"} or "increased", its effect what the test measured; a new
 * one is announced (NOTIFY), one already there gets the latest effect.
 * Returns how many alerts it raised or updated.
 */
CREATE OR REPLACE FUNCTION fleetbench_fleet_alerts_raise(new_kernel text)
RETURNS integer
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	level double precision;
	e record;
	a record;
	n integer := 0;
BEGIN
	SELECT coalesce((SELECT s.fleet_q FROM alert_settings AS s), 0.01)
	INTO level;
	FOR e IN SELECT * FROM fleetbench_fleet_evaluate(
			fleetbench_fleet_alerts_raise.new_kernel) AS x
		 WHERE x.q < level AND x.change <> 0
	LOOP
		INSERT INTO fleet_alerts AS f (provider, instance_type,
					       new_kernel, kind, change, effect)
		VALUES (e.provider, e.instance_type,
			fleetbench_fleet_alerts_raise.new_kernel, 'shift',
			jsonb_build_object(e.figure, CASE WHEN e.change < 0
							  THEN 'decreased'
							  ELSE 'increased' END),
			jsonb_build_object('figure', e.figure,
				'change', e.change, 'change_lo', e.change_lo,
				'change_hi', e.change_hi,
				'hosts', greatest(e.hosts_old, e.hosts_new),
				'hosts_old', e.hosts_old,
				'hosts_new', e.hosts_new,
				'hosts_paired', e.hosts_paired,
				'paired', e.paired, 'test', e.test,
				'p', e.p, 'q', e.q, 'old_kernel', e.old_kernel,
				'method', e.method, 'evaluated_at', now()))
		ON CONFLICT (provider, instance_type, new_kernel, kind,
			     md5(change::text))
		DO UPDATE SET effect = EXCLUDED.effect
		RETURNING f.id, f.xmax = 0 AS inserted INTO a;
		IF a.inserted THEN
			PERFORM pg_notify('fleetbench_alerts', a.id::text);
		END IF;
		n := n + 1;
	END LOOP;
	RETURN n;
END
$$;
