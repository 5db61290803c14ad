-- SPDX-License-Identifier: MIT
-- The statistics of the fleet-level tests (issue 39, docs/alerts.md): the
-- hosts are the units. Wilcoxon's signed-rank test with the Hodges-Lehmann
-- estimate and its interval, for the same hosts measured on both kernels
-- (a change is a per-host log-ratio); the Hodges-Lehmann shift and its
-- interval beside the Mann-Whitney test (10_util.sql) for two sets of
-- hosts; Benjamini-Hochberg's q-values over the tests of one evaluation.
-- Rank tests: an outlying host moves a rank, not the mean, and with few
-- hosts the p-value and the interval are exact, not asymptotic. A
-- function file (schema/README.md).

/*
 * The counts of Wilcoxon's signed-rank statistic W+ (the sum of the ranks
 * of the positive differences) over the 2^n equally likely sign patterns
 * of n untied, nonzero differences: c[w + 1] patterns give W+ = w, for w
 * in 0 .. n(n+1)/2. Built one rank at a time: c_i(w) = c_{i-1}(w) +
 * c_{i-1}(w - i). Exact in a double up to n = 60 (2^60 < 2^53 * 2^7 and
 * every count is an integer below 2^n; the sums that matter stay exact to
 * the p-values' precision).
 */
CREATE OR REPLACE FUNCTION fleetbench_signed_rank_counts(n integer)
RETURNS double precision[]
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
	top integer := n * (n + 1) / 2;
	c double precision[] := array_fill(0::double precision, ARRAY[top + 1]);
BEGIN
	c[1] := 1;
	FOR i IN 1 .. n LOOP
		FOR w IN REVERSE i * (i + 1) / 2 .. i LOOP
			c[w + 1] := c[w + 1] + c[w + 1 - i];
		END LOOP;
	END LOOP;
	RETURN c;
END
$$;

/*
 * The largest k with P(S <= k - 1) <= alpha / 2 for a statistic S whose
 * null counts are c (c[s + 1] arrangements give S = s, symmetric): the
 * order statistic of a (1 - alpha) interval that inverts the test. 0 when
 * no interval reaches 1 - alpha (too few units).
 */
CREATE OR REPLACE FUNCTION fleetbench_rank_interval_k(c double precision[],
						      alpha double precision)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
	total double precision := 0;
	below double precision := 0;
	k integer := 0;
BEGIN
	FOR i IN 1 .. cardinality(c) LOOP
		total := total + c[i];
	END LOOP;
	FOR s IN 0 .. cardinality(c) - 1 LOOP
		below := below + c[s + 1];
		EXIT WHEN below / total > alpha / 2;
		k := s + 1;
	END LOOP;
	RETURN k;
END
$$;

/*
 * The median of sorted values and the interval from its k-th smallest to
 * its k-th largest (NULLs when k < 1: no interval reaches the level): how
 * a rank test's estimate and interval are read off the sorted Walsh
 * averages or differences.
 */
CREATE OR REPLACE FUNCTION fleetbench_sorted_interval(sorted double precision[],
						      k integer,
						      OUT estimate double precision,
						      OUT lo double precision,
						      OUT hi double precision)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT (sorted[(c.n + 1) / 2] + sorted[c.n / 2 + 1]) / 2,
	       CASE WHEN k >= 1 THEN sorted[k] END,
	       CASE WHEN k >= 1 THEN sorted[c.n + 1 - k] END
	FROM (SELECT cardinality(sorted) AS n) AS c
$$;

/*
 * Wilcoxon's two-sided signed-rank test of d (one change per host, a
 * log-ratio: the new kernel's figure over the old one's, log) against no
 * change, with the Hodges-Lehmann estimate of the change (the median of
 * the n(n+1)/2 Walsh averages (d_i + d_j) / 2, i <= j) and its 95%
 * interval (the k-th smallest and k-th largest Walsh average, k from the
 * test's null distribution: the interval holds every change the test
 * would not reject at 5%). Zeros are dropped (Wilcoxon's rule); NULLs are
 * not hosts. Exact p and interval for up to 60 differences without tied
 * magnitudes; otherwise the normal approximation of W+ with the ties'
 * correction of its variance and a continuity correction, and the
 * interval's k from it. n is the number of hosts that count; lo and hi
 * are NULL when n < 6 (no 95% interval exists: 2/2^5 = 0.0625).
 */
CREATE OR REPLACE FUNCTION fleetbench_signed_rank(d double precision[],
						  OUT n integer,
						  OUT w double precision,
						  OUT p double precision,
						  OUT exact boolean,
						  OUT estimate double precision,
						  OUT lo double precision,
						  OUT hi double precision)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
	x double precision[];
	walsh double precision[];
	top integer;
	ties double precision;
	distinct_values integer;
	c double precision[];
	below double precision := 0;
	sigma double precision;
	k integer;
BEGIN
	x := ARRAY(SELECT v FROM unnest(d) AS v WHERE v IS NOT NULL AND v <> 0);
	n := coalesce(cardinality(x), 0);
	IF n = 0 THEN
		n := 0;
		RETURN;
	END IF;
	top := n * (n + 1) / 2;
	-- W+ with midranks of |x|
	SELECT sum(r) FILTER (WHERE v > 0), count(DISTINCT abs(v))
	INTO w, distinct_values
	FROM (SELECT v, rank() OVER (ORDER BY abs(v))
			+ (count(*) OVER (PARTITION BY abs(v)) - 1) / 2.0 AS r
	      FROM unnest(x) AS v) AS q;
	w := coalesce(w, 0);
	walsh := ARRAY(SELECT (x[i] + x[j]) / 2
		       FROM generate_series(1, n) AS i,
			    generate_series(i, n) AS j
		       ORDER BY 1);
	exact := distinct_values = n AND n <= 60;
	IF exact THEN
		c := fleetbench_signed_rank_counts(n);
		FOR s IN 0 .. least(w, top - w)::integer LOOP
			below := below + c[s + 1];
		END LOOP;
		p := least(1.0, 2 * below / 2::double precision ^ n);
		k := fleetbench_rank_interval_k(c, 0.05);
	ELSE
		SELECT coalesce(sum(t * t * t - t), 0) INTO ties
		FROM (SELECT count(*)::double precision AS t
		      FROM unnest(x) AS v GROUP BY abs(v)) AS g;
		sigma := sqrt(n * (n + 1) * (2 * n + 1) / 24.0 - ties / 48.0);
		p := CASE WHEN sigma = 0 THEN 1 ELSE least(1.0,
			2 * fleetbench_normal_upper(greatest(
				abs(w - top / 2.0) - 0.5, 0) / sigma)) END;
		k := floor(top / 2.0 - 1.959964 * sigma)::integer;
	END IF;
	SELECT * INTO estimate, lo, hi FROM fleetbench_sorted_interval(walsh, k);
END
$$;

/*
 * The Hodges-Lehmann shift of y against x (two sets of hosts, one figure
 * per host, log): the median of the m*n differences y_j - x_i, and its 95%
 * interval (the k-th smallest and k-th largest difference, k from the
 * Mann-Whitney null distribution: exact, as fleetbench_mann_whitney()'s
 * p-value, for at most 30 hosts in all, else its normal approximation).
 * lo and hi are NULL when no 95% interval exists.
 */
CREATE OR REPLACE FUNCTION fleetbench_hodges_lehmann(x double precision[],
						     y double precision[],
						     OUT estimate double precision,
						     OUT lo double precision,
						     OUT hi double precision)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
	m integer := coalesce(cardinality(x), 0);
	n integer := coalesce(cardinality(y), 0);
	big integer := m * n;
	diff double precision[];
	c double precision[];
	k integer;
BEGIN
	IF m = 0 OR n = 0 THEN
		RETURN;
	END IF;
	diff := ARRAY(SELECT b - a FROM unnest(x) AS a, unnest(y) AS b
		      ORDER BY 1);
	IF m + n <= 30 THEN
		c := fleetbench_mann_whitney_counts(m, n);
		k := fleetbench_rank_interval_k(c, 0.05);
	ELSE
		k := floor(big / 2.0 - 1.959964
			   * sqrt(big * (m + n + 1) / 12.0))::integer;
	END IF;
	SELECT * INTO estimate, lo, hi FROM fleetbench_sorted_interval(diff, k);
END
$$;

/*
 * Benjamini-Hochberg's q-values of the p-values p, in p's order: q_(i) =
 * min over j >= i of p_(j) * m / j, at most 1 (the false discovery rate
 * at which each test is a discovery). NULLs stay NULL and do not count
 * among the m tests.
 */
CREATE OR REPLACE FUNCTION fleetbench_bh(p double precision[])
RETURNS double precision[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT ARRAY(
		SELECT q.q
		FROM generate_subscripts(p, 1) AS i
		LEFT JOIN (
			SELECT o.i, least(1.0, min(o.v * o.m / o.r) OVER (
				ORDER BY o.r DESC
				ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW))
				AS q
			FROM (SELECT i, p[i] AS v,
				     row_number() OVER (ORDER BY p[i], i) AS r,
				     count(*) OVER () AS m
			      FROM generate_subscripts(p, 1) AS i
			      WHERE p[i] IS NOT NULL) AS o
		) AS q ON q.i = i.i
		ORDER BY i.i)
$$;
