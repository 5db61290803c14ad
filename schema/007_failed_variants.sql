-- SPDX-License-Identifier: MIT
-- Failed benchmark variants (issue 11): a variant whose process died by a
-- signal, overran its time limit or measured a figure out of bounds
-- (proto/bounds.h) is stored with status 'failed' and the agent's text
-- in bench_results.failure, and the fleet queries count them per group,
-- so that "randread/io_uring_sqpoll crashes on kernel 6.8 on b2-7" is a
-- fleet fact, not a hole in a chart. A failed variant has no metrics: it
-- adds no sample to any median.
--
-- bench_results (partitioned since 006: altered on the parent, which
-- alters every partition) gains failure; fleetbench_ingest() stores it.
-- run_figures gains failed, the run's failed variants; fleet_summary
-- gains failed and failures; fleet_compare_by() and fleet_kernels_by()
-- return them, so they and the views over them (fleet_compare,
-- fleet_kernels) are made again, with the views' grants and comments.
-- Existing rows stay valid: before this migration no variant failed.
-- Applied by `fleetbench-collector migrate` inside one transaction.

-- ---- bench_results: status 'failed' with its failure text ----

ALTER TABLE bench_results ADD COLUMN failure text;
ALTER TABLE bench_results
	DROP CONSTRAINT bench_results_status_is_ok_or_skipped,
	ADD CONSTRAINT bench_results_status_is_known
		CHECK (status IN ('ok', 'skipped', 'failed')),
	ADD CONSTRAINT bench_results_failed_has_failure
		CHECK ((status = 'failed') = (failure IS NOT NULL));
COMMENT ON COLUMN bench_results.failure IS
	'why the variant failed (status failed): a signal, a time limit or a figure out of bounds, as the agent says it';

-- ---- fleetbench_ingest(), storing failure ----

-- As 006 made it, but a benchmark's "failure" (null or text) is stored,
-- and makes the status 'failed'.
CREATE OR REPLACE FUNCTION fleetbench_ingest(report jsonb) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	host jsonb := report->'host';
	kernel jsonb := report->'kernel';
	probe jsonb := report->'probe';
	id uuid;
	started timestamptz; -- the partition key of the results
BEGIN
	IF jsonb_typeof(report) IS DISTINCT FROM 'object' THEN
		PERFORM fleetbench_reject('the report is not a JSON object');
	END IF;
	IF jsonb_typeof(report->'run_id') IS DISTINCT FROM 'string'
	   OR report->>'run_id' !~
	      '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN
		PERFORM fleetbench_reject(format(
			'run_id must be a canonical lowercase UUID, not %s',
			coalesce((report->'run_id')::text, 'missing')));
	END IF;
	IF jsonb_typeof(host) IS DISTINCT FROM 'object' THEN
		PERFORM fleetbench_reject('host must be an object');
	END IF;
	IF jsonb_typeof(kernel) IS DISTINCT FROM 'object' THEN
		PERFORM fleetbench_reject('kernel must be an object');
	END IF;
	IF jsonb_typeof(probe) IS DISTINCT FROM 'object' THEN
		PERFORM fleetbench_reject('probe must be an object');
	END IF;
	IF jsonb_typeof(report->'schema_version') IS DISTINCT FROM 'number'
	   OR jsonb_typeof(report->'agent_version') IS DISTINCT FROM 'string'
	   OR jsonb_typeof(report->'started_unix_ms') IS DISTINCT FROM 'number'
	   OR jsonb_typeof(report->'finished_unix_ms') IS DISTINCT FROM 'number'
	   OR jsonb_typeof(host->'hostname') IS DISTINCT FROM 'string'
	   OR jsonb_typeof(host->'machine_id') IS DISTINCT FROM 'string'
	   OR jsonb_typeof(kernel->'release') IS DISTINCT FROM 'string' THEN
		-- The slow path says which one
		PERFORM fleetbench_reject(format('%s must be a %s, not %s',
			array_to_string(k.path::text[], '.'), k.want,
			coalesce(jsonb_typeof(report #> k.path::text[]),
				 'missing')))
		FROM (VALUES (1, '{schema_version}', 'number'),
			     (2, '{agent_version}', 'string'),
			     (3, '{started_unix_ms}', 'number'),
			     (4, '{finished_unix_ms}', 'number'),
			     (5, '{host,hostname}', 'string'),
			     (6, '{host,machine_id}', 'string'),
			     (7, '{kernel,release}', 'string')) AS k(n, path, want)
		WHERE jsonb_typeof(report #> k.path::text[])
		      IS DISTINCT FROM k.want
		ORDER BY k.n
		LIMIT 1;
	END IF;
	id := report->>'run_id';
	started := timestamptz 'epoch' + (report->>'started_unix_ms')::bigint
					   * interval '1 millisecond';

	INSERT INTO runs (run_id, started_at, finished_at, schema_version,
			  agent_version, provider, instance_type, region,
			  provider_source, instance_type_source, region_source,
			  hostname, machine_id, kernel_release, kernel_version,
			  kernel_cmdline, profile, seed, thp_enabled, thp_defrag,
			  hugepage_sizes_kb, hugepage_1g_present,
			  io_uring_disabled, io_uring_setup, io_uring_setup_errno,
			  sqpoll, sqpoll_errno, io_uring_opcodes,
			  io_uring_features, vcpus, memory_kb, vm, container,
			  probe)
	SELECT id,
	       started,
	       timestamptz 'epoch' + (report->>'finished_unix_ms')::bigint
				     * interval '1 millisecond',
	       (report->>'schema_version')::integer,
	       report->>'agent_version',
	       coalesce(nullif(host->>'provider', ''), 'unknown'),
	       coalesce(nullif(host->>'instance_type', ''), 'unknown'),
	       coalesce(nullif(host->>'region', ''), 'unknown'),
	       host->>'provider_source',
	       host->>'instance_type_source',
	       host->>'region_source',
	       host->>'hostname',
	       host->>'machine_id',
	       kernel->>'release',
	       kernel->>'version',
	       kernel->>'cmdline',
	       report->>'profile',
	       (report->>'seed')::bigint,
	       fleetbench_json_text(p.thp_enabled),
	       fleetbench_json_text(p.thp_defrag),
	       p.sizes_kb,
	       coalesce(fleetbench_json_bool(p.size_1g_present),
			1048576 = ANY (p.sizes_kb)),
	       fleetbench_json_int(p.io_uring_disabled, 0, 2147483647),
	       fleetbench_json_text(p.io_uring_setup),
	       fleetbench_json_int(p.io_uring_setup_errno, 0, 4095),
	       fleetbench_json_text(p.sqpoll),
	       fleetbench_json_int(p.sqpoll_errno, 0, 4095),
	       fleetbench_json_text_array(p.opcodes),
	       fleetbench_json_text_array(p.features),
	       fleetbench_json_int(p.vcpus, 1, 2147483647),
	       fleetbench_json_int(p.memory_kb, 0, 9223372036854775807),
	       fleetbench_json_text(p.vm),
	       fleetbench_json_text(p.container),
	       probe
	-- The probe items first, as plain columns: the fleetbench_json_*()
	-- helpers are inlined only when their argument is that cheap
	-- (OFFSET 0 keeps the planner from folding this back).
	FROM (SELECT probe #> '{thp,enabled,selected}' AS thp_enabled,
		     probe #> '{thp,defrag,selected}' AS thp_defrag,
		     CASE WHEN jsonb_typeof(probe #> '{hugetlb,sizes}') = 'array'
		     THEN ARRAY(SELECT kb::integer
				FROM jsonb_array_elements(probe #> '{hugetlb,sizes}')
				     AS t(s),
				     fleetbench_json_int(s->'size_kb', 1,
							 2147483647) AS kb
				WHERE kb IS NOT NULL
				ORDER BY kb) END AS sizes_kb,
		     probe #> '{hugetlb,size_1g_present}' AS size_1g_present,
		     probe #> '{io_uring,disabled}' AS io_uring_disabled,
		     probe #> '{io_uring,setup}' AS io_uring_setup,
		     probe #> '{io_uring,setup_errno}' AS io_uring_setup_errno,
		     probe #> '{io_uring,sqpoll}' AS sqpoll,
		     probe #> '{io_uring,sqpoll_errno}' AS sqpoll_errno,
		     probe #> '{io_uring,opcodes}' AS opcodes,
		     probe #> '{io_uring,features}' AS features,
		     probe #> '{host,vcpus_online}' AS vcpus,
		     probe #> '{host,memory_total_kb}' AS memory_kb,
		     probe #> '{virt,vm,name}' AS vm,
		     probe #> '{virt,container,name}' AS container
	      OFFSET 0) AS p
	ON CONFLICT (run_id) DO NOTHING;
	IF NOT FOUND THEN
		RETURN false;
	END IF;

	-- Variants, then their metrics, in one statement: the metrics'
	-- foreign key is checked at its end, when the variants are in.
	-- jsonb_to_recordset() converts the samples array to float8[] (and
	-- refuses anything but numbers).
	WITH b AS (
		SELECT *
		FROM ROWS FROM (jsonb_to_recordset(
				fleetbench_array(report->'benchmarks', 'benchmarks'))
				AS (benchmark text, variant text, skip_reason text,
				    failure text, parameters jsonb, metrics jsonb,
				    windows jsonb))
		     WITH ORDINALITY AS t(benchmark, variant, skip_reason,
					  failure, parameters, metrics, windows,
					  position)
	), results AS (
		INSERT INTO bench_results (run_id, benchmark, variant, position,
					   status, skip_reason, failure,
					   parameters, windows, noisy, started_at)
		SELECT id, benchmark, variant, position,
		       -- both set breaks a check (23514): refused, not guessed
		       CASE WHEN failure IS NOT NULL THEN 'failed'
			    WHEN skip_reason IS NOT NULL THEN 'skipped'
			    ELSE 'ok' END,
		       skip_reason, failure, coalesce(parameters, '{}'),
		       coalesce(windows, '[]'),
		       coalesce(jsonb_path_exists(windows,
						  '$[*] ? (@.noisy == true)'),
				false),
		       started
		FROM b
	)
	INSERT INTO bench_metrics (run_id, benchmark, variant, metric, unit,
				   samples, median, started_at)
	SELECT id, b.benchmark, b.variant, m.metric, m.unit,
	       coalesce(m.samples, '{}'),
	       (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x)
		FROM unnest(m.samples) AS x),
	       started
	FROM b,
	     jsonb_to_recordset(CASE WHEN jsonb_typeof(b.metrics) = 'array'
				     THEN b.metrics
				     ELSE fleetbench_array(b.metrics, 'metrics')
				END)
		AS m(metric text, unit text, samples double precision[]);

	INSERT INTO comparisons (run_id, name, benchmark, metric, numerator,
				 denominator, ratio, ci_low, ci_high, level,
				 method, reason, started_at)
	SELECT id, name, benchmark, metric, numerator, denominator, ratio,
	       ci_low, ci_high, level, method, reason, started
	FROM jsonb_to_recordset(fleetbench_array(report->'comparisons',
						 'comparisons'))
	     AS c(name text, benchmark text, metric text, numerator text,
		  denominator text, ratio double precision,
		  ci_low double precision, ci_high double precision,
		  level double precision, method text, reason text);

	RETURN true;
END
$$;

-- ---- run_figures and fleet_summary: the failed variants ----

ALTER TABLE run_figures ADD COLUMN failed text[] NOT NULL DEFAULT '{}';
COMMENT ON COLUMN run_figures.failed IS
	'the run''s failed variants, benchmark/variant in run order; empty when none failed';

-- As 004 made it, with the failed variants last (the column order of
-- run_figures, which takes its rows with SELECT *).
CREATE OR REPLACE VIEW run_figures_live AS
SELECT r.run_id, r.started_at, r.provider, r.instance_type, r.region,
       r.kernel_release, r.machine_id, r.hostname, r.vm, r.vcpus,
       r.thp_enabled,
       r.io_uring_setup = 'ok' AS iouring_ok,
       r.sqpoll = 'ok' AS sqpoll_ok,
       r.hugepage_1g_present AS hugepage_1g,
       coalesce(b.noisy, false) AS steal_flagged,
       c.thp_speedup, m.thp_huge_fraction, c.hugetlb_2m_speedup,
       c.hugetlb_1g_speedup, m.thp_fault_p99_us, c.iouring_vs_pread,
       c.iouring_vs_libaio, m.iouring_iops, m.pread_iops,
       coalesce(b.failed, '{}') AS failed
FROM runs r
LEFT JOIN LATERAL (
	SELECT bool_or(x.noisy) AS noisy,
	       array_agg(x.benchmark || '/' || x.variant ORDER BY x.position)
		       FILTER (WHERE x.status = 'failed') AS failed
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

-- fleetbench_groups() reads it from the index too
DROP INDEX run_figures_group_idx;
CREATE INDEX run_figures_group_idx
	ON run_figures (provider, instance_type, kernel_release)
	INCLUDE (started_at, machine_id, vcpus, thp_enabled, iouring_ok,
		 sqpoll_ok, hugepage_1g, steal_flagged, thp_speedup,
		 thp_huge_fraction, hugetlb_2m_speedup, hugetlb_1g_speedup,
		 thp_fault_p99_us, iouring_vs_pread, iouring_vs_libaio,
		 iouring_iops, pread_iops, failed);

ALTER TABLE fleet_summary
	ADD COLUMN failed bigint NOT NULL DEFAULT 0, -- runs with a failed variant
	ADD COLUMN failures text; -- 'benchmark/variant (runs)', most first
-- The rows kept so far are right as they are: no variant failed before.

/*
 * As 004 made it, with two more columns: failed, the runs with at least
 * one failed variant, and failures, each failed variant with the number
 * of runs it failed in, most first ("randread/io_uring_sqpoll (3)"), NULL
 * when none failed.
 */
CREATE OR REPLACE FUNCTION fleetbench_groups(keys text[], filter jsonb,
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
			FILTER (WHERE f.pread_iops / f.vcpus IS NOT NULL)),
	       count(*) FILTER (WHERE f.failed <> '{}'),
	       (SELECT string_agg(format('%s (%s)', v.name, v.n), ', '
				  ORDER BY v.n DESC, v.name)
		FROM (SELECT x.name, count(*) AS n
		      FROM jsonb_array_elements(jsonb_agg(to_jsonb(f.failed))
				FILTER (WHERE f.failed <> '{}')) AS r(a),
			   jsonb_array_elements_text(r.a) AS x(name)
		      GROUP BY x.name) AS v)
	FROM fleetbench_runs(filter, since) AS f
	GROUP BY 2, 3, 4, 5, 6, 7, 8, 9
$$;

-- ---- fleet_compare and fleet_kernels, with failed and failures ----

CREATE TEMPORARY TABLE fleetbench_007_views (
	name text NOT NULL,
	statements text[] NOT NULL -- COMMENT ON and GRANT
) ON COMMIT DROP;

-- What would be lost with the views: their comments and grants.
INSERT INTO fleetbench_007_views
SELECT v, array_cat(
	(SELECT coalesce(array_agg(format('COMMENT ON VIEW %s IS %L', v,
					  d.description)), '{}')
	 FROM pg_description d
	 WHERE d.classoid = 'pg_class'::regclass
	   AND d.objoid = v::regclass AND d.objsubid = 0),
	(SELECT coalesce(array_agg(format('GRANT %s ON %s TO %s%s',
		a.privilege_type, v,
		CASE WHEN a.grantee = 0 THEN 'PUBLIC'
		     ELSE quote_ident(pg_get_userbyid(a.grantee)) END,
		CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)),
		'{}')
	 FROM pg_class c, aclexplode(c.relacl) a
	 WHERE c.oid = v::regclass AND a.grantee <> c.relowner))
FROM unnest(ARRAY['fleet_compare', 'fleet_kernels']) AS v;

DO $$
BEGIN
	IF EXISTS (SELECT 1 FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
		   WHERE d.classid = 'pg_rewrite'::regclass
		     AND d.refobjid IN ('fleet_compare'::regclass,
					'fleet_kernels'::regclass)
		     AND r.ev_class NOT IN ('fleet_compare'::regclass,
					    'fleet_kernels'::regclass)) THEN
		RAISE EXCEPTION 'migration 007 cannot keep a view over fleet_compare or fleet_kernels: drop it first, make it again after';
	END IF;
END
$$;

DROP VIEW fleet_kernels, fleet_compare;
DROP FUNCTION fleet_kernels_by(jsonb, timestamptz);
DROP FUNCTION fleet_compare_by(text[], jsonb, timestamptz);

/*
 * One row per group of runs (by the keys in by, default provider,
 * instance_type, kernel), among the runs matching filter (see
 * fleetbench_runs) started at or after since: the group's keys (NULL for
 * a key not in by), hosts and runs, few_runs when there are too few runs
 * (below 6) for a 95% interval, and for each headline figure the median
 * over the runs that measured it with its interval (_lo, _hi; NULL below
 * 6 such runs), the shares of runs with each capability, and the most
 * common THP mode; failed, the runs with a failed variant, and failures,
 * each variant that failed with the number of runs it failed in (most
 * first). Ordered by the keys.
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
	first_run timestamptz, last_run timestamptz,
	failed bigint, failures text)
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
	       g.thp_mode, g.first_run, g.last_run, g.failed, g.failures
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
       thp_mode, first_run, last_run, failed, failures
FROM fleet_compare_by();

/*
 * fleet_compare_by() per provider, instance type and kernel release, each
 * instance type's kernels from oldest to newest (by their first run, then
 * name), with what changed from the kernel before: figures whose
 * intervals moved apart, capability shares, the share of runs with a
 * failed variant and the THP mode that differ; 'nothing beyond noise' when none did, NULL for the first.
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
	first_run timestamptz, last_run timestamptz, failed bigint,
	failures text, changes text)
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
	       c.last_run, c.failed, c.failures,
	       CASE WHEN p.kernel IS NOT NULL THEN coalesce(nullif(concat_ws('; ',
		fleetbench_share_change('runs with a failed variant',
					fleetbench_share(p.failed, p.runs),
					fleetbench_share(c.failed, c.runs)),
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

DO $$
DECLARE
	v record;
	s text;
BEGIN
	FOR v IN SELECT * FROM fleetbench_007_views LOOP
		FOREACH s IN ARRAY v.statements LOOP
			EXECUTE s;
		END LOOP;
	END LOOP;
END
$$;

COMMENT ON VIEW fleet_compare IS
	'per provider, instance type and kernel: median and 95% interval of each headline figure, capability shares, runs with a failed variant';
COMMENT ON VIEW fleet_kernels IS
	'per instance type and kernel, oldest kernel first: fleet_compare''s figures, failures and what changed from the kernel before';
