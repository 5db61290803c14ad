-- SPDX-License-Identifier: MIT
-- `fleetbench kernels` as benchstat reads (issue 40): each kernel against
-- the one before it, one row per figure with the old and the new median,
-- the change with its interval, its q-value and the runs on each side.
-- A function file (schema/README.md).

/*
 * For each kernel of fleet_kernels_rows(filter, since, method_key) (the
 * default method per kernel, oldest first) and the kernel before it of the
 * same instance type, each declared figure measured on either, in the
 * declaration's order:
 *
 * - old, old_lo, old_hi, new, new_lo, new_hi: the group's median with
 *   its 95% interval, as compare and kernels print them;
 * - change, change_lo, change_hi: the Hodges-Lehmann shift of the runs'
 *   logs, as a relative change with its 95% interval (-0.63 is -63%);
 *   NULL where a run's value is 0 or below (no logarithm);
 *   (a figure measured on one kernel only has its row, the other side
 *   NULL, runs 0 there, no change and no p);
 * - p: Mann-Whitney's U test of the runs' values on the two kernels, the
 *   runs as the units, as benchstat counts them (the fleet-level alert,
 *   docs/alerts.md, counts hosts); q: Benjamini-Hochberg's q-value over
 *   the pair's figures; runs_old, runs_new: the runs on each side;
 * - capabilities: what kernels' changes says of the pair besides the
 *   figures (capability shares, THP mode, a method change, vCPU
 *   placement, alerts), NULL for none. A pair of two methods compares no
 *   figure: it has one row, figure NULL, and says so here.
 */
CREATE OR REPLACE FUNCTION fleet_kernels_delta(filter jsonb DEFAULT NULL,
					      since timestamptz DEFAULT NULL,
					      method_key text DEFAULT NULL)
RETURNS TABLE (provider text, instance_type text, method text,
	       old_kernel text, new_kernel text, capabilities text,
	       figure text, unit text, old numeric, old_lo numeric,
	       old_hi numeric, new numeric, new_lo numeric, new_hi numeric,
	       change double precision, change_lo double precision,
	       change_hi double precision, p double precision,
	       q double precision, runs_old integer, runs_new integer)
LANGUAGE sql VOLATILE AS $$
	WITH k AS (
		SELECT x.*, row_number() OVER (
			PARTITION BY x.provider, x.instance_type
			ORDER BY x.first_run, x.kernel) AS pos
		FROM fleet_kernels_rows($1, $2, $3, NULL) AS x
	), pair AS (
		SELECT c.provider, c.instance_type, c.method, p.method AS old_method,
		       p.kernel AS old_kernel, c.kernel AS new_kernel,
		       p.est AS old_est, c.est AS new_est, c.pos,
		       -- changes' items that are not a figure's
		       (SELECT nullif(string_agg(i.item, '; ' ORDER BY i.n), '')
			FROM unnest(string_to_array(c.changes, '; '))
				WITH ORDINALITY AS i(item, n)
			WHERE i.item <> 'nothing beyond noise'
			  AND NOT EXISTS (SELECT 1 FROM figures AS f
					  WHERE i.item LIKE f.name || ' %'))
			AS capabilities
		FROM k AS c
		JOIN k AS p ON p.provider = c.provider
			   AND p.instance_type = c.instance_type
			   AND p.pos = c.pos - 1
	), v AS (
		-- each run's value of each figure, on either kernel
		SELECT pr.provider, pr.instance_type, pr.new_kernel, f.id,
		       array_agg(r.figures[f.id]) FILTER (
			       WHERE r.kernel_release = pr.old_kernel) AS xo,
		       array_agg(r.figures[f.id]) FILTER (
			       WHERE r.kernel_release = pr.new_kernel) AS xn
		FROM pair AS pr
		JOIN fleetbench_runs($1, $2) AS r
			ON r.provider = pr.provider
			   AND r.instance_type = pr.instance_type
			   AND r.method = pr.method
			   AND r.kernel_release IN (pr.old_kernel, pr.new_kernel)
		CROSS JOIN figures AS f
		WHERE pr.old_method = pr.method AND r.figures[f.id] IS NOT NULL
		GROUP BY pr.provider, pr.instance_type, pr.new_kernel, f.id
	), t AS (
		SELECT pr.provider, pr.instance_type, pr.method,
		       pr.old_kernel, pr.new_kernel, pr.capabilities, pr.pos,
		       f.name, f.unit, f.position,
		       fleetbench_round((pr.old_est[f.id]).median) AS old,
		       fleetbench_round((pr.old_est[f.id]).ci_low) AS old_lo,
		       fleetbench_round((pr.old_est[f.id]).ci_high) AS old_hi,
		       fleetbench_round((pr.new_est[f.id]).median) AS new,
		       fleetbench_round((pr.new_est[f.id]).ci_low) AS new_lo,
		       fleetbench_round((pr.new_est[f.id]).ci_high) AS new_hi,
		       h.estimate, h.lo, h.hi, u.p,
		       coalesce(cardinality(v.xo), 0) AS runs_old,
		       coalesce(cardinality(v.xn), 0) AS runs_new
		FROM pair AS pr
		JOIN v ON v.provider = pr.provider
			  AND v.instance_type = pr.instance_type
			  AND v.new_kernel = pr.new_kernel
		JOIN figures AS f ON f.id = v.id
		CROSS JOIN LATERAL fleetbench_mann_whitney(v.xo, v.xn) AS u
		-- logs only where every value has one
		CROSS JOIN LATERAL (SELECT 0 < ALL (v.xo) AND 0 < ALL (v.xn)
				    AS logs) AS l
		CROSS JOIN LATERAL fleetbench_hodges_lehmann(
			CASE WHEN l.logs THEN ARRAY(SELECT ln(x) FROM unnest(v.xo) AS x) END,
			CASE WHEN l.logs THEN ARRAY(SELECT ln(x) FROM unnest(v.xn) AS x) END) AS h
	)
	SELECT x.provider, x.instance_type, x.method, x.old_kernel,
	       x.new_kernel, x.capabilities, x.name, x.unit, x.old, x.old_lo,
	       x.old_hi, x.new, x.new_lo, x.new_hi, x.change, x.change_lo,
	       x.change_hi, x.p, x.q, x.runs_old, x.runs_new
	FROM (SELECT t.provider, t.instance_type, t.method, t.old_kernel,
		     t.new_kernel, t.capabilities, t.name, t.unit, t.old,
		     t.old_lo, t.old_hi, t.new, t.new_lo, t.new_hi,
		     exp(t.estimate) - 1 AS change, exp(t.lo) - 1 AS change_lo,
		     exp(t.hi) - 1 AS change_hi, t.p,
		     (fleetbench_bh(array_agg(t.p) OVER (w ORDER BY t.position
			ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)))[
			     row_number() OVER (w ORDER BY t.position)] AS q,
		     t.runs_old, t.runs_new, t.pos, t.position
	      FROM t
	      WINDOW w AS (PARTITION BY t.provider, t.instance_type, t.new_kernel)
	      UNION ALL
	      -- a pair of two methods: no figure compared, said once
	      SELECT pr.provider, pr.instance_type, pr.method, pr.old_kernel,
		     pr.new_kernel, pr.capabilities, NULL, NULL, NULL, NULL,
		     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
		     NULL, pr.pos, NULL
	      FROM pair AS pr
	      WHERE pr.old_method <> pr.method) AS x
	ORDER BY x.provider, x.instance_type, x.pos, x.position
$$;

COMMENT ON FUNCTION fleet_kernels_delta IS
	'each kernel of an instance type against the one before: per figure the old and new median, the change with its interval, Mann-Whitney p over the runs and its Benjamini-Hochberg q over the pair''s figures (docs/queries.md, "kernels")';
