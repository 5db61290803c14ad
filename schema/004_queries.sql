-- SPDX-License-Identifier: MIT
-- The fleet questions behind `fleetbench compare`, `rank` and `kernels`:
-- one row of headline figures per run (run_figures, kept at ingest), the
-- median of each over the runs of a group with a 95% confidence interval,
-- a summary per instance type and kernel kept current at query time
-- (fleet_summary), and the views and functions that the CLI queries, so
-- that psql users get the very same numbers.
--
-- Applied by `fleetbench-collector migrate` inside a transaction;
-- docs/queries.md describes every column, the interval and the ranking.

-- What one run says about the headline figures, as the joins of the
-- tables give it (the definition; run_figures holds its rows).
CREATE VIEW run_figures_live AS
SELECT r.run_id, r.started_at, r.provider, r.instance_type, r.region,
       r.kernel_release, r.machine_id, r.hostname, r.vm, r.vcpus,
       r.thp_enabled,
       r.io_uring_setup = 'ok' AS iouring_ok,
       r.sqpoll = 'ok' AS sqpoll_ok,
       r.hugepage_1g_present AS hugepage_1g,
       coalesce(b.noisy, false) AS steal_flagged,
       c.thp_speedup, m.thp_huge_fraction, c.hugetlb_2m_speedup,
       c.hugetlb_1g_speedup, m.thp_fault_p99_us, c.iouring_vs_pread,
       c.iouring_vs_libaio, m.iouring_iops, m.pread_iops
FROM runs r
LEFT JOIN LATERAL (
	SELECT bool_or(x.noisy) AS noisy
	FROM bench_results x WHERE x.run_id = r.run_id) AS b ON true
LEFT JOIN LATERAL (
	SELECT max(x.ratio) FILTER (WHERE x.name = 'thp_speedup') AS thp_speedup,
	       max(x.ratio) FILTER (WHERE x.name = 'hugetlb_2m_speedup')
		       AS hugetlb_2m_speedup,
	       max(x.ratio) FILTER (WHERE x.name = 'hugetlb_1g_speedup')
		       AS hugetlb_1g_speedup,
	       max(x.ratio) FILTER (WHERE x.name = 'iouring_vs_pread')
		       AS iouring_vs_pread,
	       max(x.ratio) FILTER (WHERE x.name = 'iouring_vs_libaio')
		       AS iouring_vs_libaio
	FROM comparisons x WHERE x.run_id = r.run_id) AS c ON true
LEFT JOIN LATERAL (
	SELECT max(x.median) FILTER (WHERE x.benchmark = 'thp_chase'
				     AND x.variant = 'thp'
				     AND x.metric = 'huge_fraction')
		       AS thp_huge_fraction,
	       max(x.median) FILTER (WHERE x.benchmark = 'thp_fault'
				     AND x.variant = 'thp'
				     AND x.metric = 'fault_p99_us')
		       AS thp_fault_p99_us,
	       max(x.median) FILTER (WHERE x.benchmark = 'randread'
				     AND x.variant = 'io_uring'
				     AND x.metric = 'iops') AS iouring_iops,
	       max(x.median) FILTER (WHERE x.benchmark = 'randread'
				     AND x.variant = 'pread'
				     AND x.metric = 'iops') AS pread_iops
	FROM bench_metrics x WHERE x.run_id = r.run_id) AS m ON true;

-- One row per run, written when the run's transaction commits (the
-- trigger below): the fleet queries scan this narrow table instead of
-- joining runs to their comparisons and metrics.
CREATE TABLE run_figures (
	run_id uuid PRIMARY KEY REFERENCES runs ON DELETE CASCADE,
	started_at timestamptz NOT NULL,
	provider text NOT NULL,
	instance_type text NOT NULL,
	region text NOT NULL,
	kernel_release text NOT NULL,
	machine_id text NOT NULL,
	hostname text NOT NULL,
	vm text,
	vcpus integer,
	thp_enabled text,
	iouring_ok boolean,
	sqpoll_ok boolean,
	hugepage_1g boolean,
	steal_flagged boolean NOT NULL,
	thp_speedup double precision,
	thp_huge_fraction double precision,
	hugetlb_2m_speedup double precision,
	hugetlb_1g_speedup double precision,
	thp_fault_p99_us double precision,
	iouring_vs_pread double precision,
	iouring_vs_libaio double precision,
	iouring_iops double precision,
	pread_iops double precision
);

-- An instance type's runs, with every column fleetbench_groups() reads
-- but the keys it does not group by: a refresh of one instance type and
-- kernel reads a few index pages (an index-only scan) instead of one heap
-- page per run (runs arrive interleaved from the whole fleet).
CREATE INDEX run_figures_group_idx
	ON run_figures (provider, instance_type, kernel_release)
	INCLUDE (started_at, machine_id, vcpus, thp_enabled, iouring_ok,
		 sqpoll_ok, hugepage_1g, steal_flagged, thp_speedup,
		 thp_huge_fraction, hugetlb_2m_speedup, hugetlb_1g_speedup,
		 thp_fault_p99_us, iouring_vs_pread, iouring_vs_libaio,
		 iouring_iops, pread_iops);
CREATE INDEX run_figures_started_idx ON run_figures (started_at);

-- A run's figures are known once its comparisons and metrics are in:
-- fleetbench_ingest() inserts them after the run, and a bulk loader may
-- use any order, so the row is written at COMMIT (a deferred constraint
-- trigger), from run_figures_live. A report rolled back to its savepoint
-- takes its pending trigger event with it.
CREATE FUNCTION fleetbench_run_figures_add() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO run_figures
	SELECT * FROM run_figures_live WHERE run_id = NEW.run_id
	ON CONFLICT (run_id) DO NOTHING;
	RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER runs_figures AFTER INSERT ON runs
	DEFERRABLE INITIALLY DEFERRED
	FOR EACH ROW EXECUTE FUNCTION fleetbench_run_figures_add();


-- ---- the median of a figure over runs, with its confidence interval ----

CREATE TYPE fleetbench_estimate AS (
	n integer, -- runs with a value
	median double precision,
	ci_low double precision, -- NULL when n is too small (below 6)
	ci_high double precision
);

/*
 * The rank k of the distribution-free 95% confidence interval of a median,
 * [x(k), x(n+1-k)] of the n sorted values: the largest k with
 * P(B < k) <= 0.025 for B ~ Binomial(n, 1/2), so that the interval covers
 * the median with probability 1 - 2 P(B < k) >= 95% whatever the values'
 * distribution. Exact up to n = 1000 (the terms stay within a double),
 * the normal approximation with continuity correction above. 0 when no
 * interval reaches 95% (n <= 5).
 */
CREATE FUNCTION fleetbench_median_rank(n integer) RETURNS integer
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
CREATE FUNCTION fleetbench_median_ci(sorted double precision[])
RETURNS fleetbench_estimate
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT ROW(n, (sorted[(n + 1) / 2] + sorted[n / 2 + 1]) / 2,
		   CASE WHEN k > 0 THEN sorted[k] END,
		   CASE WHEN k > 0 THEN sorted[n + 1 - k] END)::fleetbench_estimate
	FROM (SELECT coalesce(cardinality(sorted), 0) AS n) AS c,
	     LATERAL (SELECT fleetbench_median_rank(c.n) AS k) AS r
$$;

-- Figures are shown to three decimals, in the views as in the CLI.
CREATE FUNCTION fleetbench_round(x double precision) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT round(x::numeric, 3)
$$;

-- The share of n runs that had something, to three decimals.
CREATE FUNCTION fleetbench_share(count bigint, n bigint) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT round(count::numeric / nullif(n, 0), 3)
$$;

-- ---- filters: --where KEY=VALUE and --by KEY ----

-- The keys a fleet query groups and filters by, and the run_figures
-- column each stands for.
CREATE FUNCTION fleetbench_query_keys() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT '{provider,instance_type,kernel,region,vm,thp,vcpus,host}'::text[]
$$;

-- Raises 22023 naming the first of keys that is not a query key.
CREATE FUNCTION fleetbench_check_keys(keys text[], what text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	bad text;
BEGIN
	SELECT k INTO bad FROM unnest(keys) AS k
	WHERE k IS NULL OR NOT k = ANY (fleetbench_query_keys()) LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION '%: unknown key ''%'', one of %', what,
			coalesce(bad, 'NULL'),
			array_to_string(fleetbench_query_keys(), ', ')
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
END
$$;

/*
 * The values a filter object allows for key, as an array (NULL: the key
 * is not filtered). filter is {"key": "value"} or {"key": ["v1", "v2"]}:
 * any of the values.
 */
CREATE FUNCTION fleetbench_filter_values(filter jsonb, key text)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE jsonb_typeof(filter -> key)
		WHEN 'array' THEN ARRAY(SELECT jsonb_array_elements_text(filter -> key))
		WHEN 'string' THEN ARRAY[filter ->> key]
		WHEN 'number' THEN ARRAY[filter ->> key]
	       END
$$;

-- Checks a filter object: 22023 for an unknown key or a value that is
-- not a string, a number or an array of them.
CREATE FUNCTION fleetbench_check_filter(filter jsonb) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	k text;
BEGIN
	IF filter IS NULL THEN
		RETURN;
	END IF;
	IF jsonb_typeof(filter) <> 'object' THEN
		RAISE EXCEPTION 'where: a JSON object of key: value, not %',
			jsonb_typeof(filter)
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	PERFORM fleetbench_check_keys(ARRAY(SELECT jsonb_object_keys(filter)),
				      'where');
	FOR k IN SELECT jsonb_object_keys(filter) LOOP
		IF fleetbench_filter_values(filter, k) IS NULL
		   OR jsonb_path_exists(filter -> k,
					'$[*] ? (@.type() != "string" && @.type() != "number")') THEN
			RAISE EXCEPTION 'where: the value of ''%'' must be a string, a number or an array of them', k
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
	END LOOP;
END
$$;

/*
 * The runs a fleet query looks at: those matching every key of filter
 * (any of a key's values; NULL: all) and started at or after since
 * (NULL: all). The filter's keys are for the caller to check
 * (fleetbench_check_filter).
 */
CREATE FUNCTION fleetbench_runs(filter jsonb DEFAULT NULL,
				since timestamptz DEFAULT NULL)
RETURNS SETOF run_figures
LANGUAGE sql STABLE AS $$
	SELECT f.*
	FROM run_figures f,
	     (SELECT fleetbench_filter_values(filter, 'provider') AS provider,
		     fleetbench_filter_values(filter, 'instance_type') AS instance_type,
		     fleetbench_filter_values(filter, 'kernel') AS kernel,
		     fleetbench_filter_values(filter, 'region') AS region,
		     fleetbench_filter_values(filter, 'vm') AS vm,
		     fleetbench_filter_values(filter, 'thp') AS thp,
		     fleetbench_filter_values(filter, 'vcpus') AS vcpus,
		     fleetbench_filter_values(filter, 'host') AS host) AS w
	WHERE (since IS NULL OR f.started_at >= since)
	  AND (w.provider IS NULL OR f.provider = ANY (w.provider))
	  AND (w.instance_type IS NULL OR f.instance_type = ANY (w.instance_type))
	  AND (w.kernel IS NULL OR f.kernel_release = ANY (w.kernel))
	  AND (w.region IS NULL OR f.region = ANY (w.region))
	  AND (w.vm IS NULL OR f.vm = ANY (w.vm))
	  AND (w.thp IS NULL OR f.thp_enabled = ANY (w.thp))
	  AND (w.vcpus IS NULL OR f.vcpus::text = ANY (w.vcpus))
	  AND (w.host IS NULL OR f.hostname = ANY (w.host))
$$;

-- ---- groups of runs ----

/*
 * What a fleet query knows of one group of runs: its keys (NULL for a key
 * it is not grouped by), counts, and for each figure the median over the
 * runs that measured it with its interval. fleetbench_groups() computes
 * such rows from run_figures; fleet_summary keeps them for the two
 * groupings the CLI needs fast: level 3, per provider, instance type and
 * kernel release, and level 2, per provider and instance type.
 */
CREATE TABLE fleet_summary (
	level smallint, -- 3, 2; NULL in rows computed on demand
	provider text,
	instance_type text,
	kernel text,
	region text,
	vm text,
	thp text,
	vcpus integer,
	host text,
	hosts bigint NOT NULL, -- distinct machine ids
	runs bigint NOT NULL,
	kernels bigint NOT NULL, -- distinct kernel releases
	vcpus_mode integer, -- the most common vCPU count
	iouring_ok bigint NOT NULL, -- runs where io_uring could be set up
	sqpoll_ok bigint NOT NULL, -- runs where SQPOLL could
	hugepage_1g bigint NOT NULL, -- runs whose kernel offers 1 GiB pages
	steal_flagged bigint NOT NULL, -- runs with a noisy repeat
	thp_mode text, -- the most common THP mode
	first_run timestamptz NOT NULL,
	last_run timestamptz NOT NULL,
	thp_speedup fleetbench_estimate,
	thp_huge_fraction fleetbench_estimate,
	hugetlb_2m_speedup fleetbench_estimate,
	hugetlb_1g_speedup fleetbench_estimate,
	thp_fault_p99_us fleetbench_estimate,
	iouring_vs_pread fleetbench_estimate,
	iouring_vs_libaio fleetbench_estimate,
	iouring_iops fleetbench_estimate,
	pread_iops fleetbench_estimate,
	iouring_iops_per_vcpu fleetbench_estimate,
	pread_iops_per_vcpu fleetbench_estimate
);

CREATE INDEX fleet_summary_key_idx
	ON fleet_summary (level, provider, instance_type, kernel);

/*
 * The instance types and kernels whose runs changed since fleet_summary
 * was last brought up to date. No unique key: a writer never waits for a
 * refresh. A writer adds a row unless one is there already and no refresh
 * is under way, which it knows by holding the refresh lock (advisory lock
 * 112723185853042, "fleetr" in ASCII) shared until it commits: a refresh
 * holds it exclusively from taking its rows out of fleet_dirty until its
 * transaction ends, so the row a writer saw stays until a refresh that
 * sees the writer's run takes it. While a refresh holds it, writers add
 * their rows anyway (a few duplicates, taken out by the next refresh).
 */
CREATE TABLE fleet_dirty (
	provider text NOT NULL,
	instance_type text NOT NULL,
	kernel_release text NOT NULL
);

CREATE INDEX fleet_dirty_key_idx
	ON fleet_dirty (provider, instance_type, kernel_release);

-- Marks an instance type and kernel as changed (see fleet_dirty).
CREATE FUNCTION fleetbench_mark(p text, t text, k text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	IF pg_try_advisory_xact_lock_shared(112723185853042)
	   AND EXISTS (SELECT 1 FROM fleet_dirty AS d
		       WHERE d.provider = p AND d.instance_type = t
			     AND d.kernel_release = k) THEN
		RETURN;
	END IF;
	INSERT INTO fleet_dirty VALUES (p, t, k);
END
$$;

CREATE FUNCTION fleetbench_mark_dirty() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP <> 'INSERT' THEN
		PERFORM fleetbench_mark(OLD.provider, OLD.instance_type,
					OLD.kernel_release);
	END IF;
	IF TG_OP <> 'DELETE' THEN
		PERFORM fleetbench_mark(NEW.provider, NEW.instance_type,
					NEW.kernel_release);
	END IF;
	RETURN NULL;
END
$$;

CREATE TRIGGER run_figures_dirty AFTER INSERT OR UPDATE OR DELETE
	ON run_figures FOR EACH ROW EXECUTE FUNCTION fleetbench_mark_dirty();

-- The runs stored before this migration
INSERT INTO run_figures SELECT * FROM run_figures_live;

/*
 * The groups of fleetbench_runs(filter, since) by keys (a subset of
 * fleetbench_query_keys(); the caller checks them), as fleet_summary rows
 * with level NULL. Every figure is the median over the group's runs that
 * measured it; per_vcpu figures divide each run's by its vCPUs first.
 */
CREATE FUNCTION fleetbench_groups(keys text[], filter jsonb,
				  since timestamptz)
RETURNS SETOF fleet_summary
LANGUAGE sql STABLE AS $$
	SELECT NULL::smallint,
	       CASE WHEN 'provider' = ANY (keys) THEN f.provider END,
	       CASE WHEN 'instance_type' = ANY (keys) THEN f.instance_type END,
	       CASE WHEN 'kernel' = ANY (keys) THEN f.kernel_release END,
	       CASE WHEN 'region' = ANY (keys) THEN f.region END,
	       CASE WHEN 'vm' = ANY (keys) THEN f.vm END,
	       CASE WHEN 'thp' = ANY (keys) THEN f.thp_enabled END,
	       CASE WHEN 'vcpus' = ANY (keys) THEN f.vcpus END,
	       CASE WHEN 'host' = ANY (keys) THEN f.hostname END,
	       count(DISTINCT f.machine_id),
	       count(*),
	       count(DISTINCT f.kernel_release),
	       mode() WITHIN GROUP (ORDER BY f.vcpus),
	       count(*) FILTER (WHERE f.iouring_ok),
	       count(*) FILTER (WHERE f.sqpoll_ok),
	       count(*) FILTER (WHERE f.hugepage_1g),
	       count(*) FILTER (WHERE f.steal_flagged),
	       mode() WITHIN GROUP (ORDER BY f.thp_enabled),
	       min(f.started_at),
	       max(f.started_at),
	       fleetbench_median_ci(array_agg(f.thp_speedup ORDER BY f.thp_speedup)
			FILTER (WHERE f.thp_speedup IS NOT NULL)),
	       fleetbench_median_ci(array_agg(f.thp_huge_fraction ORDER BY f.thp_huge_fraction)
			FILTER (WHERE f.thp_huge_fraction IS NOT NULL)),
	       fleetbench_median_ci(array_agg(f.hugetlb_2m_speedup ORDER BY f.hugetlb_2m_speedup)
			FILTER (WHERE f.hugetlb_2m_speedup IS NOT NULL)),
	       fleetbench_median_ci(array_agg(f.hugetlb_1g_speedup ORDER BY f.hugetlb_1g_speedup)
			FILTER (WHERE f.hugetlb_1g_speedup IS NOT NULL)),
	       fleetbench_median_ci(array_agg(f.thp_fault_p99_us ORDER BY f.thp_fault_p99_us)
			FILTER (WHERE f.thp_fault_p99_us IS NOT NULL)),
	       fleetbench_median_ci(array_agg(f.iouring_vs_pread ORDER BY f.iouring_vs_pread)
			FILTER (WHERE f.iouring_vs_pread IS NOT NULL)),
	       fleetbench_median_ci(array_agg(f.iouring_vs_libaio ORDER BY f.iouring_vs_libaio)
			FILTER (WHERE f.iouring_vs_libaio IS NOT NULL)),
	       fleetbench_median_ci(array_agg(f.iouring_iops ORDER BY f.iouring_iops)
			FILTER (WHERE f.iouring_iops IS NOT NULL)),
	       fleetbench_median_ci(array_agg(f.pread_iops ORDER BY f.pread_iops)
			FILTER (WHERE f.pread_iops IS NOT NULL)),
	       fleetbench_median_ci(array_agg(f.iouring_iops / f.vcpus ORDER BY f.iouring_iops / f.vcpus)
			FILTER (WHERE f.iouring_iops / f.vcpus IS NOT NULL)),
	       fleetbench_median_ci(array_agg(f.pread_iops / f.vcpus ORDER BY f.pread_iops / f.vcpus)
			FILTER (WHERE f.pread_iops / f.vcpus IS NOT NULL))
	FROM fleetbench_runs(filter, since) AS f
	GROUP BY 2, 3, 4, 5, 6, 7, 8, 9
$$;

/*
 * Brings fleet_summary up to date with fleet_dirty: recomputes the levels
 * 3 and 2 rows of every instance type and kernel with a changed run (a
 * superset: the product of their providers, instance types and kernels)
 * and takes them out of fleet_dirty. Runs committed meanwhile stay dirty
 * for the next call. Returns false, and changes nothing, when it cannot:
 * in a read-only transaction, or when the refresh lock stays taken for
 * 200 ms (another transaction is refreshing, or writers keep committing);
 * the caller then computes from run_figures directly.
 */
CREATE FUNCTION fleetbench_refresh() RETURNS boolean
LANGUAGE plpgsql
-- the filters are constants to the planner: index scans for a few
-- changed instance types, a sort in memory for many
SET plan_cache_mode = force_custom_plan
SET work_mem = '256MB'
AS $$
DECLARE
	changed jsonb;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM fleet_dirty) THEN
		RETURN true;
	END IF;
	IF current_setting('transaction_read_only')::boolean THEN
		RETURN false;
	END IF;
	-- the refresh lock (see fleet_dirty): writers hold it shared for
	-- the moment of their commit
	FOR i IN 1 .. 20 LOOP
		EXIT WHEN pg_try_advisory_xact_lock(112723185853042);
		IF i = 20 THEN
			RETURN false;
		END IF;
		PERFORM pg_sleep(0.01);
	END LOOP;
	WITH gone AS (DELETE FROM fleet_dirty RETURNING *)
	SELECT jsonb_build_object(
		       'provider', jsonb_agg(DISTINCT provider),
		       'instance_type', jsonb_agg(DISTINCT instance_type),
		       'kernel', jsonb_agg(DISTINCT kernel_release))
	INTO changed
	FROM gone
	HAVING count(*) > 0;
	IF changed IS NULL THEN
		RETURN true;
	END IF;
	DELETE FROM fleet_summary AS s
	WHERE s.provider = ANY (fleetbench_filter_values(changed, 'provider'))
	  AND s.instance_type = ANY (fleetbench_filter_values(changed, 'instance_type'))
	  AND (s.level = 2
	       OR s.kernel = ANY (fleetbench_filter_values(changed, 'kernel')));
	INSERT INTO fleet_summary
	SELECT * FROM fleetbench_groups('{provider,instance_type,kernel}',
					changed, NULL);
	UPDATE fleet_summary SET level = 3 WHERE level IS NULL;
	INSERT INTO fleet_summary
	SELECT * FROM fleetbench_groups('{provider,instance_type}',
					changed - 'kernel', NULL);
	UPDATE fleet_summary SET level = 2 WHERE level IS NULL;
	RETURN true;
END
$$;

/*
 * fleetbench_groups(keys, filter, since), from fleet_summary when it
 * holds them (keys provider, instance_type and kernel, or provider and
 * instance_type; a filter on those keys only; no since) and can be
 * brought up to date, else computed from run_figures: the same rows
 * either way.
 */
CREATE FUNCTION fleetbench_group_rows(keys text[], filter jsonb,
				      since timestamptz)
RETURNS SETOF fleet_summary
LANGUAGE plpgsql
SET plan_cache_mode = force_custom_plan
SET work_mem = '256MB'
AS $$
DECLARE
	lvl smallint := CASE
		WHEN keys @> '{provider,instance_type,kernel}'
		     AND keys <@ '{provider,instance_type,kernel}' THEN 3
		WHEN keys @> '{provider,instance_type}'
		     AND keys <@ '{provider,instance_type}' THEN 2 END;
	filtered text[] := ARRAY(SELECT jsonb_object_keys(coalesce(filter, '{}')));
BEGIN
	IF since IS NULL AND lvl IS NOT NULL
	   AND filtered <@ (CASE lvl WHEN 3 THEN '{provider,instance_type,kernel}'
			    ELSE '{provider,instance_type}' END)::text[]
	   AND fleetbench_refresh() THEN
		RETURN QUERY
		SELECT s.* FROM fleet_summary AS s
		WHERE s.level = lvl
		  AND (NOT 'provider' = ANY (filtered)
		       OR s.provider = ANY (fleetbench_filter_values(filter, 'provider')))
		  AND (NOT 'instance_type' = ANY (filtered)
		       OR s.instance_type = ANY (fleetbench_filter_values(filter, 'instance_type')))
		  AND (NOT 'kernel' = ANY (filtered)
		       OR s.kernel = ANY (fleetbench_filter_values(filter, 'kernel')));
		RETURN;
	END IF;
	RETURN QUERY SELECT * FROM fleetbench_groups(keys, filter, since);
END
$$;

-- ---- compare ----

/*
 * One row per group of runs (by the keys in by, default provider,
 * instance_type, kernel), among the runs matching filter (see
 * fleetbench_runs) started at or after since: the group's keys (NULL for
 * a key not in by), hosts and runs, few_runs when there are too few runs
 * (below 6) for a 95% interval, and for each headline figure the median
 * over the runs that measured it with its interval (_lo, _hi; NULL below
 * 6 such runs), the shares of runs with each capability, and the most
 * common THP mode. Ordered by the keys.
 */
CREATE FUNCTION fleet_compare_by(by text[] DEFAULT NULL,
				 filter jsonb DEFAULT NULL,
				 since timestamptz DEFAULT NULL)
RETURNS TABLE (
	provider text, instance_type text, kernel text, region text,
	vm text, thp text, vcpus integer, host text,
	hosts bigint, runs bigint, few_runs boolean,
	thp_speedup numeric, thp_speedup_lo numeric, thp_speedup_hi numeric,
	thp_huge_fraction numeric,
	hugetlb_2m_speedup numeric, hugetlb_2m_speedup_lo numeric,
	hugetlb_2m_speedup_hi numeric,
	hugetlb_1g_speedup numeric, hugetlb_1g_speedup_lo numeric,
	hugetlb_1g_speedup_hi numeric,
	thp_fault_p99_us numeric, thp_fault_p99_us_lo numeric,
	thp_fault_p99_us_hi numeric,
	iouring_vs_pread numeric, iouring_vs_pread_lo numeric,
	iouring_vs_pread_hi numeric,
	iouring_vs_libaio numeric, iouring_vs_libaio_lo numeric,
	iouring_vs_libaio_hi numeric,
	iouring_share numeric, sqpoll_share numeric, hugepage_1g_share numeric,
	steal_share numeric, thp_mode text,
	first_run timestamptz, last_run timestamptz)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
	keys text[] := coalesce(by, '{provider,instance_type,kernel}');
BEGIN
	PERFORM fleetbench_check_keys(keys, 'by');
	PERFORM fleetbench_check_filter(filter);
	RETURN QUERY
	SELECT g.provider, g.instance_type, g.kernel, g.region, g.vm, g.thp,
	       g.vcpus, g.host, g.hosts, g.runs, g.runs < 6,
	       fleetbench_round((g.thp_speedup).median),
	       fleetbench_round((g.thp_speedup).ci_low),
	       fleetbench_round((g.thp_speedup).ci_high),
	       fleetbench_round((g.thp_huge_fraction).median),
	       fleetbench_round((g.hugetlb_2m_speedup).median),
	       fleetbench_round((g.hugetlb_2m_speedup).ci_low),
	       fleetbench_round((g.hugetlb_2m_speedup).ci_high),
	       fleetbench_round((g.hugetlb_1g_speedup).median),
	       fleetbench_round((g.hugetlb_1g_speedup).ci_low),
	       fleetbench_round((g.hugetlb_1g_speedup).ci_high),
	       fleetbench_round((g.thp_fault_p99_us).median),
	       fleetbench_round((g.thp_fault_p99_us).ci_low),
	       fleetbench_round((g.thp_fault_p99_us).ci_high),
	       fleetbench_round((g.iouring_vs_pread).median),
	       fleetbench_round((g.iouring_vs_pread).ci_low),
	       fleetbench_round((g.iouring_vs_pread).ci_high),
	       fleetbench_round((g.iouring_vs_libaio).median),
	       fleetbench_round((g.iouring_vs_libaio).ci_low),
	       fleetbench_round((g.iouring_vs_libaio).ci_high),
	       fleetbench_share(g.iouring_ok, g.runs),
	       fleetbench_share(g.sqpoll_ok, g.runs),
	       fleetbench_share(g.hugepage_1g, g.runs),
	       fleetbench_share(g.steal_flagged, g.runs),
	       g.thp_mode, g.first_run, g.last_run
	FROM fleetbench_group_rows(keys, filter, since) AS g
	ORDER BY 1, 2, 3, 4, 5, 6, 7, 8;
END
$$;

-- `fleetbench compare` with its defaults: per provider, instance type and
-- kernel release, over all runs.
CREATE VIEW fleet_compare AS
SELECT provider, instance_type, kernel, hosts, runs, few_runs,
       thp_speedup, thp_speedup_lo, thp_speedup_hi, thp_huge_fraction,
       hugetlb_2m_speedup, hugetlb_2m_speedup_lo, hugetlb_2m_speedup_hi,
       hugetlb_1g_speedup, hugetlb_1g_speedup_lo, hugetlb_1g_speedup_hi,
       thp_fault_p99_us, thp_fault_p99_us_lo, thp_fault_p99_us_hi,
       iouring_vs_pread, iouring_vs_pread_lo, iouring_vs_pread_hi,
       iouring_vs_libaio, iouring_vs_libaio_lo, iouring_vs_libaio_hi,
       iouring_share, sqpoll_share, hugepage_1g_share, steal_share,
       thp_mode, first_run, last_run
FROM fleet_compare_by();

-- ---- kernels ----

-- "+12%", "-63%": the relative change from old to new.
CREATE FUNCTION fleetbench_percent(old numeric, new numeric) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN old <> 0
		    THEN to_char(round(100 * (new - old) / abs(old)), 'FMSG999990') || '%'
	       END
$$;

/*
 * What changed in one figure between two kernels, in words, or NULL when
 * nothing did beyond noise: the two 95% intervals do not overlap, or,
 * when a side has too few runs for an interval, the median moved by 20%
 * or more (said so).
 */
CREATE FUNCTION fleetbench_figure_change(name text, old numeric,
					 old_lo numeric, old_hi numeric,
					 new numeric, new_lo numeric,
					 new_hi numeric)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE
		WHEN old IS NULL AND new IS NULL THEN NULL
		WHEN old IS NULL THEN format('%s measured: %s', name, new)
		WHEN new IS NULL THEN format('%s no longer measured (was %s)',
					     name, old)
		WHEN old_lo IS NOT NULL AND new_lo IS NOT NULL THEN
			CASE WHEN new_lo > old_hi OR new_hi < old_lo
			     THEN format('%s %s -> %s (%s)', name, old, new,
					 fleetbench_percent(old, new)) END
		WHEN old <> 0 AND abs(new - old) >= 0.2 * abs(old) THEN
			format('%s %s -> %s (%s, too few runs for an interval)',
			       name, old, new, fleetbench_percent(old, new))
	       END
$$;

-- A capability share that differs between two kernels, in percent of
-- runs, or NULL.
CREATE FUNCTION fleetbench_share_change(name text, old numeric, new numeric)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN old IS DISTINCT FROM new
		    THEN format('%s %s%% -> %s%% of runs', name,
				round(100 * old), round(100 * new)) END
$$;

/*
 * fleet_compare_by() per provider, instance type and kernel release, each
 * instance type's kernels from oldest to newest (by their first run, then
 * name), with what changed from the kernel before: figures whose
 * intervals moved apart, capability shares and the THP mode that
 * differ; 'nothing beyond noise' when none did, NULL for the first.
 */
CREATE FUNCTION fleet_kernels_by(filter jsonb DEFAULT NULL,
				 since timestamptz DEFAULT NULL)
RETURNS TABLE (
	provider text, instance_type text, kernel text,
	hosts bigint, runs bigint, few_runs boolean,
	thp_speedup numeric, thp_speedup_lo numeric, thp_speedup_hi numeric,
	thp_huge_fraction numeric,
	hugetlb_2m_speedup numeric, hugetlb_2m_speedup_lo numeric,
	hugetlb_2m_speedup_hi numeric,
	hugetlb_1g_speedup numeric, hugetlb_1g_speedup_lo numeric,
	hugetlb_1g_speedup_hi numeric,
	thp_fault_p99_us numeric, thp_fault_p99_us_lo numeric,
	thp_fault_p99_us_hi numeric,
	iouring_vs_pread numeric, iouring_vs_pread_lo numeric,
	iouring_vs_pread_hi numeric,
	iouring_vs_libaio numeric, iouring_vs_libaio_lo numeric,
	iouring_vs_libaio_hi numeric,
	iouring_share numeric, sqpoll_share numeric, hugepage_1g_share numeric,
	steal_share numeric, thp_mode text,
	first_run timestamptz, last_run timestamptz, changes text)
LANGUAGE sql VOLATILE AS $$
	WITH c AS (
		SELECT x.*, row_number() OVER (
				PARTITION BY x.provider, x.instance_type
				ORDER BY x.first_run, x.kernel) AS pos
		FROM fleet_compare_by('{provider,instance_type,kernel}', filter,
				      since) AS x
	)
	SELECT c.provider, c.instance_type, c.kernel, c.hosts, c.runs,
	       c.few_runs, c.thp_speedup, c.thp_speedup_lo, c.thp_speedup_hi,
	       c.thp_huge_fraction, c.hugetlb_2m_speedup,
	       c.hugetlb_2m_speedup_lo, c.hugetlb_2m_speedup_hi,
	       c.hugetlb_1g_speedup, c.hugetlb_1g_speedup_lo,
	       c.hugetlb_1g_speedup_hi, c.thp_fault_p99_us,
	       c.thp_fault_p99_us_lo, c.thp_fault_p99_us_hi,
	       c.iouring_vs_pread, c.iouring_vs_pread_lo, c.iouring_vs_pread_hi,
	       c.iouring_vs_libaio, c.iouring_vs_libaio_lo,
	       c.iouring_vs_libaio_hi, c.iouring_share, c.sqpoll_share,
	       c.hugepage_1g_share, c.steal_share, c.thp_mode, c.first_run,
	       c.last_run,
	       CASE WHEN p.kernel IS NOT NULL THEN coalesce(nullif(concat_ws('; ',
		fleetbench_share_change('io_uring usable', p.iouring_share, c.iouring_share),
		fleetbench_share_change('SQPOLL permitted', p.sqpoll_share, c.sqpoll_share),
		fleetbench_share_change('1 GiB pages', p.hugepage_1g_share, c.hugepage_1g_share),
		CASE WHEN p.thp_mode IS DISTINCT FROM c.thp_mode
		     THEN format('THP mode %s -> %s', coalesce(p.thp_mode, 'unknown'),
				 coalesce(c.thp_mode, 'unknown')) END,
		fleetbench_figure_change('thp_speedup', p.thp_speedup, p.thp_speedup_lo, p.thp_speedup_hi,
					 c.thp_speedup, c.thp_speedup_lo, c.thp_speedup_hi),
		fleetbench_figure_change('thp_huge_fraction', p.thp_huge_fraction, NULL, NULL,
					 c.thp_huge_fraction, NULL, NULL),
		fleetbench_figure_change('hugetlb_2m_speedup', p.hugetlb_2m_speedup, p.hugetlb_2m_speedup_lo,
					 p.hugetlb_2m_speedup_hi, c.hugetlb_2m_speedup,
					 c.hugetlb_2m_speedup_lo, c.hugetlb_2m_speedup_hi),
		fleetbench_figure_change('hugetlb_1g_speedup', p.hugetlb_1g_speedup, p.hugetlb_1g_speedup_lo,
					 p.hugetlb_1g_speedup_hi, c.hugetlb_1g_speedup,
					 c.hugetlb_1g_speedup_lo, c.hugetlb_1g_speedup_hi),
		fleetbench_figure_change('thp_fault_p99_us', p.thp_fault_p99_us, p.thp_fault_p99_us_lo,
					 p.thp_fault_p99_us_hi, c.thp_fault_p99_us,
					 c.thp_fault_p99_us_lo, c.thp_fault_p99_us_hi),
		fleetbench_figure_change('iouring_vs_pread', p.iouring_vs_pread, p.iouring_vs_pread_lo,
					 p.iouring_vs_pread_hi, c.iouring_vs_pread,
					 c.iouring_vs_pread_lo, c.iouring_vs_pread_hi),
		fleetbench_figure_change('iouring_vs_libaio', p.iouring_vs_libaio, p.iouring_vs_libaio_lo,
					 p.iouring_vs_libaio_hi, c.iouring_vs_libaio,
					 c.iouring_vs_libaio_lo, c.iouring_vs_libaio_hi)),
		''), 'nothing beyond noise') END
	FROM c
	LEFT JOIN c AS p
		ON p.provider = c.provider AND p.instance_type = c.instance_type
		   AND p.pos = c.pos - 1
	ORDER BY c.provider, c.instance_type, c.pos
$$;

-- `fleetbench kernels` for every instance type (the CLI picks one).
CREATE VIEW fleet_kernels AS SELECT * FROM fleet_kernels_by();

-- ---- rank ----

/*
 * The figures an instance type can be ranked by: which way is better, and
 * whether --per vcpu makes sense (absolute rates only: a ratio per vCPU
 * means nothing).
 */
CREATE FUNCTION fleetbench_rank_metrics()
RETURNS TABLE (metric text, higher_is_better boolean, per_vcpu boolean)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	VALUES ('thp_speedup', true, false),
	       ('thp_huge_fraction', true, false),
	       ('hugetlb_2m_speedup', true, false),
	       ('hugetlb_1g_speedup', true, false),
	       ('thp_fault_p99_us', false, false),
	       ('iouring_vs_pread', true, false),
	       ('iouring_vs_libaio', true, false),
	       ('iouring_iops', true, true),
	       ('pread_iops', true, true)
$$;

-- Raises 22023 for a metric, per or require value rank does not know.
CREATE FUNCTION fleetbench_check_rank(metric text, per text, require text[])
RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	m record;
	bad text;
BEGIN
	SELECT * INTO m FROM fleetbench_rank_metrics() AS r
	WHERE r.metric = fleetbench_check_rank.metric;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'metric: %, one of %',
			CASE WHEN metric IS NULL THEN 'missing'
			     ELSE format('unknown metric ''%s''', metric) END,
			(SELECT string_agg(r.metric, ', ')
			 FROM fleetbench_rank_metrics() AS r)
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF per IS NOT NULL AND per <> 'vcpu' THEN
		RAISE EXCEPTION 'per: unknown ''%'', only vcpu', per
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF per = 'vcpu' AND NOT m.per_vcpu THEN
		RAISE EXCEPTION 'per: % is a ratio, which per vCPU means nothing; per vcpu takes %',
			metric,
			(SELECT string_agg(r.metric, ', ')
			 FROM fleetbench_rank_metrics() AS r WHERE r.per_vcpu)
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	SELECT q INTO bad FROM unnest(require) AS q
	WHERE q IS NULL OR q NOT IN ('sqpoll', 'io_uring', 'hugepages-1g')
	LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'require: unknown capability ''%'', one of sqpoll, io_uring, hugepages-1g',
			coalesce(bad, 'NULL')
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
END
$$;

/*
 * Instance types (provider and instance type) ordered by one figure, best
 * first: the median over their runs (each run's figure divided by its
 * vCPUs with per = 'vcpu') with its 95% interval. rank is 1 + the number
 * of instance types that are better beyond noise (their interval entirely
 * on the better side of this one's; a type without an interval counts as
 * its median), so types whose intervals overlap share a rank: tie says
 * so. Only types with at least min_runs (default 6) runs that measured
 * the figure, and, for each capability in require (sqpoll, io_uring,
 * hugepages-1g; default none), that had it in every run.
 */
CREATE FUNCTION fleet_rank_by(metric_name text,
			      per text DEFAULT NULL,
			      require text[] DEFAULT NULL,
			      min_runs integer DEFAULT NULL,
			      filter jsonb DEFAULT NULL,
			      since timestamptz DEFAULT NULL)
RETURNS TABLE (
	metric text, rank bigint, tie boolean, provider text,
	instance_type text, median numeric, median_lo numeric,
	median_hi numeric, runs integer, hosts bigint, kernels bigint,
	vcpus integer, iouring_share numeric, sqpoll_share numeric,
	hugepage_1g_share numeric)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
	need text[] := coalesce(require, '{}');
	up boolean;
BEGIN
	PERFORM fleetbench_check_rank(metric_name, per, require);
	PERFORM fleetbench_check_filter(filter);
	SELECT m.higher_is_better INTO up
	FROM fleetbench_rank_metrics() AS m WHERE m.metric = metric_name;
	RETURN QUERY
	WITH e AS (
		SELECT g.provider, g.instance_type, g.hosts, g.kernels,
		       g.vcpus_mode, g.runs AS all_runs, g.iouring_ok,
		       g.sqpoll_ok, g.hugepage_1g, (x.est).n,
		       fleetbench_round((x.est).median) AS median,
		       fleetbench_round((x.est).ci_low) AS lo,
		       fleetbench_round((x.est).ci_high) AS hi
		FROM fleetbench_group_rows('{provider,instance_type}', filter,
					   since) AS g,
		     LATERAL (SELECT CASE metric_name
				WHEN 'thp_speedup' THEN g.thp_speedup
				WHEN 'thp_huge_fraction' THEN g.thp_huge_fraction
				WHEN 'hugetlb_2m_speedup' THEN g.hugetlb_2m_speedup
				WHEN 'hugetlb_1g_speedup' THEN g.hugetlb_1g_speedup
				WHEN 'thp_fault_p99_us' THEN g.thp_fault_p99_us
				WHEN 'iouring_vs_pread' THEN g.iouring_vs_pread
				WHEN 'iouring_vs_libaio' THEN g.iouring_vs_libaio
				WHEN 'iouring_iops' THEN
					CASE WHEN per = 'vcpu' THEN g.iouring_iops_per_vcpu
					     ELSE g.iouring_iops END
				WHEN 'pread_iops' THEN
					CASE WHEN per = 'vcpu' THEN g.pread_iops_per_vcpu
					     ELSE g.pread_iops END
			      END AS est) AS x
		WHERE (x.est).n >= greatest(coalesce(min_runs, 6), 1)
		  AND (NOT 'sqpoll' = ANY (need) OR g.sqpoll_ok = g.runs)
		  AND (NOT 'io_uring' = ANY (need) OR g.iouring_ok = g.runs)
		  AND (NOT 'hugepages-1g' = ANY (need) OR g.hugepage_1g = g.runs)
	), r AS (
		SELECT e.*,
		       1 + (SELECT count(*) FROM e AS o
			    WHERE CASE WHEN up
				  THEN coalesce(o.lo, o.median) > coalesce(e.hi, e.median)
				  ELSE coalesce(o.hi, o.median) < coalesce(e.lo, e.median)
				  END) AS rank
		FROM e
	)
	SELECT metric_name, r.rank, count(*) OVER (PARTITION BY r.rank) > 1,
	       r.provider, r.instance_type, r.median, r.lo, r.hi, r.n,
	       r.hosts, r.kernels, r.vcpus_mode,
	       fleetbench_share(r.iouring_ok, r.all_runs),
	       fleetbench_share(r.sqpoll_ok, r.all_runs),
	       fleetbench_share(r.hugepage_1g, r.all_runs)
	FROM r
	ORDER BY r.rank, CASE WHEN up THEN -r.median ELSE r.median END,
		 r.provider, r.instance_type;
END
$$;

-- `fleetbench rank --metric M` with its defaults, for every metric M.
CREATE VIEW fleet_rank AS
SELECT r.metric, r.rank, r.tie, r.provider, r.instance_type, r.median,
       r.median_lo, r.median_hi, r.runs, r.hosts, r.kernels, r.vcpus,
       r.iouring_share, r.sqpoll_share, r.hugepage_1g_share
FROM fleetbench_rank_metrics() AS m,
     LATERAL fleet_rank_by(m.metric) WITH ORDINALITY AS r
ORDER BY m.metric, r.ordinality;

COMMENT ON TABLE run_figures IS
	'one row per run: labels, capabilities and headline figures, written at commit from run_figures_live';
COMMENT ON VIEW run_figures_live IS
	'per run: the headline figures from runs, comparisons, bench_metrics and bench_results';
COMMENT ON TABLE fleet_summary IS
	'per instance type and kernel (level 3) and per instance type (level 2): medians with intervals, kept current by fleetbench_refresh()';
COMMENT ON TABLE fleet_dirty IS
	'instance types and kernels with runs stored since fleet_summary was last refreshed';
COMMENT ON VIEW fleet_compare IS
	'per provider, instance type and kernel: median and 95% interval of each headline figure, capability shares';
COMMENT ON VIEW fleet_kernels IS
	'per instance type and kernel, oldest kernel first: fleet_compare''s figures and what changed from the kernel before';
COMMENT ON VIEW fleet_rank IS
	'per metric: instance types best first with the median, its interval, and ranks shared by ties within noise';
