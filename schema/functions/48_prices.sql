-- SPDX-License-Identifier: MIT
-- Instance prices and price/performance (migration 020, schema/baseline.sql): the
-- current price of each instance type, the import of `fleetbench prices
-- import` (its checks and its upsert) and fleet_rank_per_price(), which
-- `fleetbench rank --per-price` and the report's price/performance charts
-- read (docs/queries.md). A function file (schema/README.md):
-- `fleetbench-collector migrate` runs all of them again, in name order and
-- in one transaction, whenever one of them changes or a migration ran.

-- The price in effect today of each provider, instance type, region and
-- currency: its row of the latest valid_from on or before today.
DROP VIEW IF EXISTS fleet_prices CASCADE;
DROP VIEW IF EXISTS instance_prices_current CASCADE;
CREATE VIEW instance_prices_current AS
SELECT DISTINCT ON (p.provider, p.instance_type, p.region, p.currency)
       p.provider, p.instance_type, p.region, p.currency, p.price_per_hour,
       p.valid_from
FROM instance_prices AS p
WHERE p.valid_from <= current_date
ORDER BY p.provider, p.instance_type, p.region, p.currency,
	 p.valid_from DESC;
COMMENT ON VIEW instance_prices_current IS
	'the price in effect today per provider, instance type, region and currency: the row of the latest valid_from on or before today';

-- `fleetbench prices list`: every price row, with whether it is the
-- current one, superseded by a later one that has begun, or future.
CREATE VIEW fleet_prices AS
SELECT p.provider, p.instance_type, p.region, p.currency, p.price_per_hour,
       p.valid_from,
       CASE WHEN p.valid_from > current_date THEN 'future'
	    WHEN c.valid_from = p.valid_from THEN 'current'
	    ELSE 'superseded' END AS status,
       p.imported_at
FROM instance_prices AS p
LEFT JOIN instance_prices_current AS c
	USING (provider, instance_type, region, currency)
ORDER BY p.provider, p.instance_type, p.region, p.currency, p.valid_from;
COMMENT ON VIEW fleet_prices IS
	'every imported price, with its status: current, superseded or future';

-- text as an ISO 8601 calendar date (YYYY-MM-DD), NULL when it is none
-- (words such as today or infinity, a 30 February, another layout).
CREATE OR REPLACE FUNCTION fleetbench_iso_date(t text) RETURNS date
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	d date;
BEGIN
	IF t !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' THEN
		RETURN NULL;
	END IF;
	d := to_date(t, 'YYYY-MM-DD');
	-- the same date written back: no year 0000 taken as 1 BC, no day
	-- carried over into the next month
	IF to_char(d, 'YYYY-MM-DD') <> t THEN
		RETURN NULL;
	END IF;
	RETURN d;
EXCEPTION WHEN data_exception THEN
	RETURN NULL;
END
$$;

/*
 * The problems of the lines of a price file that `fleetbench prices
 * import` copied into its session's temporary table
 * fleetbench_price_staging (line: the ordinal of the data line, 1 for the
 * first after the header; the six columns as text): one row per bad line,
 * line the line of the file (the header is line 1), problem every fault of
 * it, '; '-separated. No row: every line is good.
 */
CREATE OR REPLACE FUNCTION fleetbench_prices_problems()
RETURNS TABLE (line bigint, problem text)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	RETURN QUERY
	WITH s AS (
		SELECT st.*,
		       min(st.line) OVER (PARTITION BY st.provider,
				st.instance_type, st.region, st.currency,
				fleetbench_iso_date(st.valid_from)) AS first
		FROM pg_temp.fleetbench_price_staging AS st
	), b AS (
		-- each CASE checks in order: a number is cast once it is one
		SELECT s.line, concat_ws('; ',
			CASE WHEN coalesce(s.provider, '') = '' THEN 'provider is empty'
			     WHEN s.provider <> btrim(s.provider)
			     THEN format('provider %L has blanks around it', s.provider) END,
			CASE WHEN coalesce(s.instance_type, '') = '' THEN 'instance_type is empty'
			     WHEN s.instance_type <> btrim(s.instance_type)
			     THEN format('instance_type %L has blanks around it', s.instance_type) END,
			CASE WHEN coalesce(s.region, '') = '' THEN 'region is empty'
			     WHEN s.region <> btrim(s.region)
			     THEN format('region %L has blanks around it', s.region) END,
			CASE WHEN s.currency IS NULL THEN 'currency is empty'
			     WHEN s.currency !~ '^[A-Z]{3}$'
			     THEN format('currency %L is not an ISO 4217 code (three upper-case letters, e.g. USD)',
					 s.currency) END,
			CASE WHEN s.price_per_hour IS NULL THEN 'price_per_hour is empty'
			     WHEN s.price_per_hour !~ '^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)$'
			     THEN format('price_per_hour %L is not a decimal number',
					 s.price_per_hour)
			     WHEN s.price_per_hour::numeric <= 0
			     THEN format('price_per_hour %s is not above 0',
					 s.price_per_hour) END,
			CASE WHEN s.valid_from IS NULL THEN 'valid_from is empty'
			     WHEN fleetbench_iso_date(s.valid_from) IS NULL
			     THEN format('valid_from %L is not a date (YYYY-MM-DD)',
					 s.valid_from) END,
			CASE WHEN s.first < s.line
			     THEN format('the same provider, instance_type, region, currency and valid_from as line %s',
					 s.first + 1) END) AS problem
		FROM s
	)
	SELECT b.line + 1, b.problem
	FROM b
	WHERE b.problem <> ''
	ORDER BY b.line;
END
$$;

/*
 * Stores the lines of fleetbench_price_staging (every one good:
 * fleetbench_prices_problems() returned no row) in instance_prices: a new
 * key is added, a key already stored takes the line's price. Returns how
 * many lines were new, changed a stored price, and were already stored
 * as they are: importing a file again changes nothing.
 */
CREATE OR REPLACE FUNCTION fleetbench_prices_upsert()
RETURNS TABLE (lines bigint, added bigint, changed bigint, unchanged bigint)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	RETURN QUERY
	WITH s AS (
		SELECT st.provider, st.instance_type, st.region, st.currency,
		       st.price_per_hour::numeric AS price_per_hour,
		       fleetbench_iso_date(st.valid_from) AS valid_from,
		       p.price_per_hour AS old
		FROM pg_temp.fleetbench_price_staging AS st
		LEFT JOIN instance_prices AS p
			ON p.provider = st.provider
			   AND p.instance_type = st.instance_type
			   AND p.region = st.region AND p.currency = st.currency
			   AND p.valid_from = fleetbench_iso_date(st.valid_from)
	), up AS (
		INSERT INTO instance_prices AS p (provider, instance_type,
			region, currency, price_per_hour, valid_from)
		SELECT s.provider, s.instance_type, s.region, s.currency,
		       s.price_per_hour, s.valid_from
		FROM s
		WHERE s.old IS NULL OR s.old <> s.price_per_hour
		ON CONFLICT (provider, instance_type, region, currency, valid_from)
		DO UPDATE SET price_per_hour = excluded.price_per_hour,
			      imported_at = now()
		RETURNING 1
	)
	SELECT count(*),
	       count(*) FILTER (WHERE s.old IS NULL),
	       count(*) FILTER (WHERE s.old <> s.price_per_hour),
	       count(*) FILTER (WHERE s.old = s.price_per_hour)
	FROM s;
END
$$;

/*
 * The figures price/performance ranks by: the declared figures that are
 * absolute rates (per_vcpu: more of the machine buys more of them; a
 * ratio per dollar means nothing) and higher-is-better, in the
 * declaration's order, with their unit, then chase_accesses_per_s is 10^9
 * over the median ns per access of the pointer chase with 4 KiB pages
 * (thp_chase/4k/ns_per_access): memory accesses per second of one thread.
 */
CREATE OR REPLACE FUNCTION fleetbench_price_metrics()
RETURNS TABLE (metric text, unit text, pos integer)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
	SELECT x.metric, x.unit, (row_number() OVER (ORDER BY x.k))::integer
	FROM (SELECT f.name, CASE f.unit WHEN 'IO/s' THEN 'IOPS'
				       ELSE f.unit END, f.position
	      FROM figures AS f
	      WHERE f.per_vcpu AND f.higher_is_better
	      UNION ALL
	      SELECT 'chase_accesses_per_s', 'accesses/s', 32767)
		AS x (metric, unit, k)
	ORDER BY x.k
$$;

/*
 * The currency price/performance is computed in: currency when given
 * (22023 unless three upper-case letters); else the one currency of the
 * prices in effect, USD when there are none, and 22023 naming them when
 * there are several.
 */
CREATE OR REPLACE FUNCTION fleetbench_price_currency(currency text)
RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
	found text[];
BEGIN
	IF currency IS NOT NULL THEN
		IF currency !~ '^[A-Z]{3}$' THEN
			RAISE EXCEPTION 'currency: ''%'' is not an ISO 4217 code (three upper-case letters, e.g. USD)',
				currency
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		RETURN currency;
	END IF;
	SELECT array_agg(DISTINCT c.currency ORDER BY c.currency) INTO found
	FROM instance_prices_current AS c;
	IF cardinality(found) > 1 THEN
		RAISE EXCEPTION 'currency: the prices are in %: choose one (--currency)',
			array_to_string(found, ', ')
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	RETURN coalesce(found[1], 'USD');
END
$$;

/*
 * The pointer chase's ns per access with 4 KiB pages per method, provider,
 * instance type and region (fleet_metric_by()), or no row when no stored
 * run measured it (fleet_metric_by() would raise).
 */
CREATE OR REPLACE FUNCTION fleetbench_chase_ns(filter jsonb,
					       since timestamptz,
					       method_key text)
RETURNS TABLE (method text, provider text, instance_type text,
	       region text, runs bigint, median numeric, median_lo numeric,
	       median_hi numeric)
LANGUAGE plpgsql STABLE AS $$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM bench_metrics AS m
		       WHERE m.benchmark = 'thp_chase' AND m.variant = '4k'
			 AND m.metric = 'ns_per_access') THEN
		RETURN;
	END IF;
	RETURN QUERY
	SELECT c.method, c.provider, c.instance_type, c.region, c.runs,
	       c.median, c.median_lo, c.median_hi
	FROM fleet_metric_by('thp_chase/4k/ns_per_access',
			     '{provider,instance_type,region}', filter, since,
			     method_key) AS c
	WHERE c.unit = 'ns';
END
$$;

/*
 * Instance types ranked by each absolute figure (fleetbench_price_metrics;
 * metric_name NULL: every one, else that one) per unit of price: the
 * median over the runs, its 95% interval, each divided by the price per
 * hour in currency_code (fleetbench_price_currency), per provider, instance
 * type and region. The price is the one in effect today
 * (instance_prices_current) of the same provider and instance type, in
 * the region of the runs; runs without a region (region 'unknown') take
 * the lowest price of any region, named in price_region and note. A type
 * without such a price is listed after the priced ones of its figure,
 * unpriced (per_price and rank NULL, note saying what is missing): never
 * given a price. rank as fleet_rank_by()'s (1 + the priced types better
 * beyond noise; tie when shared), among the priced types of a figure and
 * method. require, min_runs (default 6), filter, since and method_key as
 * fleet_rank_by()'s.
 */
CREATE OR REPLACE FUNCTION fleet_rank_per_price(metric_name text DEFAULT NULL,
				     currency_code text DEFAULT NULL,
				     require text[] DEFAULT NULL,
				     min_runs integer DEFAULT NULL,
				     filter jsonb DEFAULT NULL,
				     since timestamptz DEFAULT NULL,
				     method_key text DEFAULT NULL)
RETURNS TABLE (
	metric text, method text, rank bigint, tie boolean, provider text,
	instance_type text, region text, median numeric, median_lo numeric,
	median_hi numeric, unit text, currency text, price_per_hour numeric,
	price_region text, per_price numeric, per_price_lo numeric,
	per_price_hi numeric, per_price_unit text, runs integer, hosts bigint,
	note text)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
	need text[] := coalesce(require, '{}');
	cur text;
	chosen jsonb;
BEGIN
	IF metric_name IS NOT NULL AND NOT EXISTS (
		SELECT 1 FROM fleetbench_price_metrics() AS m
		WHERE m.metric = metric_name) THEN
		RAISE EXCEPTION 'metric: per price ranks the absolute figures, one of %; ''%'' is not one',
			(SELECT string_agg(m.metric, ', ')
			 FROM fleetbench_price_metrics() AS m), metric_name
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- the require values, as rank checks them
	PERFORM fleetbench_check_require(require);
	PERFORM fleetbench_check_filter(filter);
	cur := fleetbench_price_currency(currency_code);
	chosen := fleetbench_method_filter(method_key, filter, since);
	RETURN QUERY
	WITH g AS MATERIALIZED (
		SELECT s.*, fleetbench_group_estimates(s) AS est
		FROM fleetbench_group_rows('{provider,instance_type,region}',
					   chosen, since) AS s
	), e AS (
		SELECT m.metric, m.unit, m.pos, g.method, g.provider, g.instance_type,
		       g.region, g.hosts, g.runs AS all_runs, g.iouring_ok,
		       g.sqpoll_ok, g.hugepage_1g, (x.est).n,
		       fleetbench_round((x.est).median) AS median,
		       fleetbench_round((x.est).ci_low) AS lo,
		       fleetbench_round((x.est).ci_high) AS hi
		FROM fleetbench_price_metrics() AS m, g,
		     figures AS f,
		     LATERAL (SELECT g.est[f.id] AS est) AS x
		WHERE f.name = m.metric
		  AND (metric_name IS NULL OR m.metric = metric_name)
		UNION ALL
		-- accesses per second: 10^9 over ns per access, the
		-- interval's ends swapped
		SELECT 'chase_accesses_per_s', 'accesses/s', 5, g.method,
		       g.provider, g.instance_type, g.region, g.hosts, g.runs,
		       g.iouring_ok, g.sqpoll_ok, g.hugepage_1g, c.runs::integer,
		       round(1e9 / nullif(c.median, 0), 3),
		       round(1e9 / nullif(c.median_hi, 0), 3),
		       round(1e9 / nullif(c.median_lo, 0), 3)
		FROM fleetbench_chase_ns(chosen, since,
					 CASE WHEN method_key = '*' THEN '*' END) AS c
		JOIN g ON g.method = c.method AND g.provider = c.provider
			  AND g.instance_type = c.instance_type
			  AND g.region = c.region
		WHERE metric_name IS NULL OR metric_name = 'chase_accesses_per_s'
	), p AS (
		SELECT e.*, pr.price_per_hour, pr.region AS price_region,
		       round(e.median / pr.price_per_hour, 3) AS pp,
		       round(e.lo / pr.price_per_hour, 3) AS plo,
		       round(e.hi / pr.price_per_hour, 3) AS phi
		FROM e
		LEFT JOIN LATERAL (
			SELECT c.price_per_hour, c.region
			FROM instance_prices_current AS c
			WHERE c.provider = e.provider
			  AND c.instance_type = e.instance_type
			  AND c.currency = cur
			  AND (c.region = e.region OR e.region = 'unknown')
			ORDER BY c.region = e.region DESC, c.price_per_hour,
				 c.region
			LIMIT 1) AS pr ON true
		WHERE e.n >= greatest(coalesce(min_runs, 6), 1)
		  AND e.median IS NOT NULL
		  AND (NOT 'sqpoll' = ANY (need) OR e.sqpoll_ok = e.all_runs)
		  AND (NOT 'io_uring' = ANY (need) OR e.iouring_ok = e.all_runs)
		  AND (NOT 'hugepages-1g' = ANY (need) OR e.hugepage_1g = e.all_runs)
	), r AS (
		SELECT p.*,
		       CASE WHEN p.pp IS NOT NULL THEN
		       1 + (SELECT count(*) FROM p AS o
			    WHERE o.metric = p.metric AND o.method = p.method
			      AND o.pp IS NOT NULL
			      AND coalesce(o.plo, o.pp) > coalesce(p.phi, p.pp))
		       END AS rank
		FROM p
	)
	SELECT r.metric, r.method, r.rank,
	       CASE WHEN r.rank IS NOT NULL THEN
		       count(*) OVER (PARTITION BY r.metric, r.method, r.rank) > 1
	       END,
	       r.provider, r.instance_type, r.region, r.median, r.lo, r.hi,
	       r.unit, cur, r.price_per_hour, r.price_region, r.pp, r.plo,
	       r.phi, r.unit || ' per ' || cur || '/h', r.n, r.hosts,
	       CASE WHEN r.price_per_hour IS NULL THEN
			CASE WHEN r.region = 'unknown'
			     THEN format('unpriced: no %s price of %s %s in any region',
					 cur, r.provider, r.instance_type)
			     ELSE format('unpriced: no %s price of %s %s in region %s',
					 cur, r.provider, r.instance_type, r.region) END
		    WHEN r.price_region <> r.region
		    THEN format('runs without a region: the lowest price, region %s',
				r.price_region) END
	FROM r
	ORDER BY r.pos, r.method, r.rank IS NULL, r.rank, r.pp DESC, r.provider,
		 r.instance_type, r.region;
END
$$;
