-- SPDX-License-Identifier: MIT
-- Helpers of the other files: medians with their intervals, rounding,
-- shares, and the statistics of the alerts. A function file
-- (schema/README.md): `fleetbench-collector migrate` runs all of them again,
-- in name order and in one transaction, whenever one of them changes or a
-- migration ran. Functions are CREATE OR REPLACE (a trigger function is
-- never dropped: its triggers depend on it); views are dropped and made
-- again.

/*
 * The rank k of the distribution-free 95% confidence interval of a median,
 * [x(k), x(n+1-k)] of the n sorted values: the largest k with
 * P(B < k) <= 0.025 for B ~ Binomial(n, 1/2), so that the interval covers
 * the median with probability 1 - 2 P(B < k) >= 95% whatever the values'
 * distribution. Exact up to n = 1000 (the terms stay within a double),
 * the normal approximation with continuity correction above. 0 when no
 * interval reaches 95% (n <= 5).
 */
CREATE OR REPLACE FUNCTION fleetbench_median_rank(n integer) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
	p double precision; -- P(B = i)
	cdf double precision := 0; -- P(B <= i)
	k integer := 0;
BEGIN
	IF n > 1000 THEN
		RETURN floor(n / 2.0 + 0.5 - 0.979982 * sqrt(n));
	END IF;
	p := 0.5::double precision ^ n;
	FOR i IN 0 .. n LOOP
		cdf := cdf + p;
		EXIT WHEN cdf > 0.025;
		k := i + 1;
		p := p * (n - i) / (i + 1);
	END LOOP;
	RETURN k;
END
$$;

-- The median of sorted values (NULL: none) and its 95% interval.
CREATE OR REPLACE FUNCTION fleetbench_median_ci(sorted double precision[])
RETURNS fleetbench_estimate
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT ROW(n, (sorted[(n + 1) / 2] + sorted[n / 2 + 1]) / 2,
		   CASE WHEN k > 0 THEN sorted[k] END,
		   CASE WHEN k > 0 THEN sorted[n + 1 - k] END)::fleetbench_estimate
	FROM (SELECT coalesce(cardinality(sorted), 0) AS n) AS c,
	     LATERAL (SELECT fleetbench_median_rank(c.n) AS k) AS r
$$;

/*
 * A run's figures (run_figures.figures, element i the figure of id i) in
 * their one form, so that the same figures are the same array: no
 * trailing NULLs (an element past the end reads NULL), '{}' when none.
 * PL/pgSQL: as SQL it was not inlined into run_figures_live (its argument,
 * the array of every figure, is read three times), so each run's call
 * went through the SQL-function executor, 15 us of the commit-time work a
 * report (docs/performance.md).
 */
CREATE OR REPLACE FUNCTION fleetbench_figures_trim(a double precision[])
RETURNS double precision[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
	n integer := coalesce(cardinality(a), 0);
BEGIN
	WHILE n > 0 AND a[n] IS NULL LOOP
		n := n - 1;
	END LOOP;
	RETURN CASE WHEN n = 0 THEN '{}' ELSE a[1:n] END;
END
$$;

-- Figures are shown to three decimals, in the views as in the CLI.
CREATE OR REPLACE FUNCTION fleetbench_round(x double precision) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT round(x::numeric, 3)
$$;

-- The share of n runs that had something, to three decimals.
CREATE OR REPLACE FUNCTION fleetbench_share(count bigint, n bigint) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT round(count::numeric / nullif(n, 0), 3)
$$;

-- The upper tail of the standard normal distribution, P(Z >= z), from
-- erfc (Numerical Recipes' erfcc: fractional error below 1.2e-7), as
-- PostgreSQL 15 has no erf().
CREATE OR REPLACE FUNCTION fleetbench_normal_upper(z double precision)
RETURNS double precision
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
	x double precision := abs(z) / sqrt(2.0);
	t double precision := 1.0 / (1.0 + 0.5 * x);
	erfc double precision;
BEGIN
	erfc := t * exp(-x * x - 1.26551223 + t * (1.00002368 + t * (0.37409196
		+ t * (0.09678418 + t * (-0.18628806 + t * (0.27886807
		+ t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223
		+ t * 0.17087277)))))))));
	RETURN CASE WHEN z >= 0 THEN erfc / 2 ELSE 1 - erfc / 2 END;
END
$$;

/*
 * The counts of the Mann-Whitney statistic U over the C(m+n, m) equally
 * likely splits of m + n untied values: c[u + 1] splits give U = u, for u
 * in 0 .. mn. They are the coefficients of the Gaussian binomial
 * [m+n choose m](q) = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i), built one
 * factor at a time (O(m * m * n)).
 */
CREATE OR REPLACE FUNCTION fleetbench_mann_whitney_counts(m integer,
							  n integer)
RETURNS double precision[]
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
	big integer := m * n;
	c double precision[] := array_fill(0::double precision, ARRAY[big + 1]);
BEGIN
	c[1] := 1;
	FOR i IN 1 .. m LOOP
		FOR j IN REVERSE big .. n + i LOOP
			c[j + 1] := c[j + 1] - c[j + 1 - (n + i)];
		END LOOP;
		FOR j IN i .. big LOOP
			c[j + 1] := c[j + 1] + c[j + 1 - i];
		END LOOP;
	END LOOP;
	RETURN c;
END
$$;

/*
 * The two-sided Mann-Whitney U test of x against y: u counts the pairs
 * (x_i, y_j) with x_i > y_j, ties counting one half. Without ties and with
 * at most 30 values in all the p-value is exact: the counts of every U
 * over the C(m+n, m) equally likely arrangements are the coefficients of
 * the Gaussian binomial [m+n choose m](q) = prod_{i=1..m} (1 - q^(n+i)) /
 * (1 - q^i), built one factor at a time. Otherwise it is the normal
 * approximation with the tie correction of the variance and a continuity
 * correction. NULL for an empty side.
 */
CREATE OR REPLACE FUNCTION fleetbench_mann_whitney(x double precision[],
					y double precision[],
					OUT u double precision,
					OUT p double precision,
					OUT exact boolean)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
	m integer := coalesce(cardinality(x), 0);
	n integer := coalesce(cardinality(y), 0);
	big integer := m * n;
	distinct_values integer;
	ties double precision;
	c double precision[];
	total double precision := 0;
	below double precision := 0;
	sigma double precision;
BEGIN
	IF m = 0 OR n = 0 THEN
		RETURN;
	END IF;
	SELECT sum(CASE WHEN a > b THEN 1.0 WHEN a = b THEN 0.5 ELSE 0 END)
	INTO u
	FROM unnest(x) a, unnest(y) b;
	-- sum of t^3 - t over the groups of tied values
	SELECT count(*), coalesce(sum(t * t * t - t), 0)
	INTO distinct_values, ties
	FROM (SELECT count(*)::double precision AS t
	      FROM (SELECT unnest(x) UNION ALL SELECT unnest(y)) AS v(v)
	      GROUP BY v) AS g;
	exact := distinct_values = m + n AND m + n <= 30;
	IF exact THEN
		c := fleetbench_mann_whitney_counts(m, n);
		FOR j IN 0..big LOOP
			total := total + c[j + 1];
			IF j <= least(u, big - u) THEN
				below := below + c[j + 1];
			END IF;
		END LOOP;
		p := least(1.0, 2 * below / total);
		RETURN;
	END IF;
	sigma := sqrt(big / 12.0 * ((m + n + 1)
				    - ties / ((m + n) * (m + n - 1.0))));
	IF sigma = 0 THEN
		p := 1;
		RETURN;
	END IF;
	p := least(1.0, 2 * fleetbench_normal_upper(
		greatest(abs(u - big / 2.0) - 0.5, 0) / sigma));
END
$$;

-- {"added": [...], "removed": [...]} between two sets, sorted.
CREATE OR REPLACE FUNCTION fleetbench_set_diff(before text[], after text[])
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT jsonb_build_object(
		'added', to_jsonb(ARRAY(SELECT unnest(after) EXCEPT
					SELECT unnest(before) ORDER BY 1)),
		'removed', to_jsonb(ARRAY(SELECT unnest(before) EXCEPT
					  SELECT unnest(after) ORDER BY 1)))
$$;

-- The capability flags of a run as one smallint (run_figures.flags, 019):
-- bit 1 io_uring usable, 2 SQPOLL permitted, 4 1 GiB pages, 8 a repeat
-- flagged noisy, 16 a comparison whose interval did not reach its target
-- (024); NULL counts as false.
CREATE OR REPLACE FUNCTION fleetbench_flags(iouring_ok boolean,
				 sqpoll_ok boolean, hugepage_1g boolean,
				 steal_flagged boolean, wide boolean)
RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT ((CASE WHEN iouring_ok THEN 1 ELSE 0 END)
		| (CASE WHEN sqpoll_ok THEN 2 ELSE 0 END)
		| (CASE WHEN hugepage_1g THEN 4 ELSE 0 END)
		| (CASE WHEN steal_flagged THEN 8 ELSE 0 END)
		| (CASE WHEN wide THEN 16 ELSE 0 END))::smallint
$$;

/*
 * Refuses to go on in a schema that a role other than its owner may
 * create objects in (issue 38): the SECURITY DEFINER functions
 * (fleetbench_refresh, the ingest) call it first, as they run as the
 * owner and resolve names in this schema, where a planted function of a
 * closer argument type (public.cardinality(float8[])) would run as the
 * owner. migrate, serve and prune refuse such a schema before this
 * (collector/cmd.c, db_check_creators); this holds when the grant came
 * later. Names are pg_catalog's, written so, and matched exactly.
 */
CREATE OR REPLACE FUNCTION fleetbench_schema_guard() RETURNS void
LANGUAGE plpgsql STABLE AS $$
DECLARE
	who text;
BEGIN
	SELECT pg_catalog.string_agg(CASE WHEN a.grantee = 0 THEN 'PUBLIC'
			ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee))
			END, ', ' ORDER BY a.grantee)
	INTO who
	FROM pg_catalog.pg_namespace AS n,
	     pg_catalog.aclexplode(coalesce(n.nspacl,
				pg_catalog.acldefault('n', n.nspowner))) AS a
	WHERE n.nspname = pg_catalog.current_schema()
	  AND a.privilege_type = 'CREATE' AND a.grantee <> n.nspowner;
	IF who IS NOT NULL THEN
		RAISE EXCEPTION 'fleetbench: refusing to run as the owner of schema %: % may create objects in it (a planted function would run as the owner)',
			pg_catalog.current_schema(), who
			USING ERRCODE = '42501',
			      HINT = pg_catalog.format('REVOKE CREATE ON SCHEMA %I FROM %s (docs/operations.md, "Access roles")',
						   pg_catalog.current_schema(), who);
	END IF;
END
$$;

/*
 * The values a filter object allows for key, as an array (NULL: the key
 * is not filtered). filter is {"key": "value"} or {"key": ["v1", "v2"]}:
 * any of the values.
 */
CREATE OR REPLACE FUNCTION fleetbench_filter_values(filter jsonb, key text)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE jsonb_typeof(filter -> key)
		WHEN 'array' THEN ARRAY(SELECT jsonb_array_elements_text(filter -> key))
		WHEN 'string' THEN ARRAY[filter ->> key]
		WHEN 'number' THEN ARRAY[filter ->> key]
	       END
$$;
