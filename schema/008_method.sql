-- SPDX-License-Identifier: MIT
-- The method of a run (issue 12): the profile and its parameters change
-- the measured quantity (quick chases 128 MiB, standard 1 GiB), so the
-- fleet queries never put runs of two methods in one group, and an alert
-- compares a host's runs on two kernels only when they share a method.
--
-- methods holds each method key once, with its parameters (the agent's
-- Report.method, docs/wire.md); runs.method names the run's. Runs stored
-- before this migration are keyed by their profile alone ('standard',
-- or 'unknown' without one), and so are reports of agents that send no
-- method: their methods rows carry the profile only, no parameters.
-- run_figures, fleet_summary and fleet_dirty gain method; every grouping
-- of fleetbench_groups() is by method too. fleet_compare_by(),
-- fleet_rank_by() and fleet_kernels_by() take a method argument (NULL:
-- the default selection, '*': every method, else one key) and return a
-- method column, so they and their views are made again, with the views'
-- grants and comments. The alert check looks for the host's latest
-- earlier run on another kernel with the same method.
-- Applied by `fleetbench-collector migrate` inside one transaction.

-- ---- methods and runs.method ----

CREATE TABLE methods (
	key text PRIMARY KEY, -- canonical: "standard", "quick+iodepth=64"
	profile text NOT NULL,
	-- the parameters (docs/wire.md, Method); NULL for a method known
	-- from a profile alone (runs stored before 008, older agents)
	repeats bigint,
	chase_bytes bigint,
	chase_accesses bigint,
	fault_bytes bigint,
	file_bytes bigint,
	io_ms bigint,
	iodepth bigint,
	seq_bytes bigint,
	seq_block bigint,
	fs_increments bigint,
	"only" text[], -- the benchmarks chosen by --only; empty: all
	randread_file boolean
);
COMMENT ON TABLE methods IS
	'one row per method key: the profile and the parameters that change what a run measures';

INSERT INTO methods (key, profile)
SELECT DISTINCT coalesce(profile, 'unknown'), coalesce(profile, 'unknown')
FROM runs;

ALTER TABLE runs ADD COLUMN method text;
UPDATE runs SET method = coalesce(profile, 'unknown');
ALTER TABLE runs ALTER COLUMN method SET NOT NULL,
	ADD CONSTRAINT runs_method_fkey FOREIGN KEY (method) REFERENCES methods;
COMMENT ON COLUMN runs.method IS
	'the method key (methods); runs stored before migration 008 are keyed by their profile alone';

-- The alert check's lookup: a host's latest run on a kernel by method.
DROP INDEX runs_host_kernel_idx;
CREATE INDEX runs_host_kernel_idx
	ON runs (machine_id, kernel_release, method, started_at);

-- ---- fleetbench_ingest(), storing the method ----

-- As 007 made it, but the method is stored in methods and runs.method.
CREATE OR REPLACE FUNCTION fleetbench_ingest(report jsonb) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	host jsonb := report->'host';
	kernel jsonb := report->'kernel';
	probe jsonb := report->'probe';
	id uuid;
	started timestamptz; -- the partition key of the results
	mkey text; -- the run's method key
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
	-- The method: stored once per key; a report without one (an agent
	-- before 008) is keyed by its profile alone, or 'unknown'.
	IF jsonb_typeof(report->'method') = 'object' THEN
		IF jsonb_typeof(report #> '{method,key}') IS DISTINCT FROM 'string'
		   OR jsonb_typeof(report #> '{method,profile}')
		      IS DISTINCT FROM 'string' THEN
			PERFORM fleetbench_reject(
				'method.key and method.profile must be strings');
		END IF;
		mkey := report #>> '{method,key}';
		-- a key first stored from a profile alone gains its parameters
		INSERT INTO methods AS m
		SELECT * FROM jsonb_populate_record(NULL::methods,
						    report->'method')
		ON CONFLICT (key) DO UPDATE
		SET repeats = excluded.repeats,
		    chase_bytes = excluded.chase_bytes,
		    chase_accesses = excluded.chase_accesses,
		    fault_bytes = excluded.fault_bytes,
		    file_bytes = excluded.file_bytes, io_ms = excluded.io_ms,
		    iodepth = excluded.iodepth, seq_bytes = excluded.seq_bytes,
		    seq_block = excluded.seq_block,
		    fs_increments = excluded.fs_increments,
		    "only" = excluded."only",
		    randread_file = excluded.randread_file
		WHERE m.repeats IS NULL AND excluded.repeats IS NOT NULL;
	ELSIF jsonb_typeof(report->'method') IS DISTINCT FROM 'null'
	      AND report ? 'method' THEN
		PERFORM fleetbench_reject(format('method must be an object, not %s',
			jsonb_typeof(report->'method')));
	ELSE
		mkey := coalesce(nullif(report->>'profile', ''), 'unknown');
		INSERT INTO methods (key, profile) VALUES (mkey, mkey)
		ON CONFLICT (key) DO NOTHING;
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
			  probe, method)
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
	       probe,
	       mkey
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


-- ---- run_figures, fleet_summary and fleet_dirty by method ----

-- fleet_summary is made again from scratch by the next refresh: every
-- group is marked changed below. The trigger is off while the column is
-- filled (each row would mark its group once more).
ALTER TABLE run_figures ADD COLUMN method text;
ALTER TABLE run_figures DISABLE TRIGGER run_figures_dirty;
UPDATE run_figures AS f SET method = r.method FROM runs AS r
WHERE r.run_id = f.run_id;
ALTER TABLE run_figures ENABLE TRIGGER run_figures_dirty;
ALTER TABLE run_figures ALTER COLUMN method SET NOT NULL;
COMMENT ON COLUMN run_figures.method IS 'the run''s method key (runs.method)';

-- As 007 made it, with the method last (the column order of
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
       coalesce(b.failed, '{}') AS failed, r.method
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

-- the groups are by method too
DROP INDEX run_figures_group_idx;
CREATE INDEX run_figures_group_idx
	ON run_figures (provider, instance_type, kernel_release, method)
	INCLUDE (started_at, machine_id, vcpus, thp_enabled, iouring_ok,
		 sqpoll_ok, hugepage_1g, steal_flagged, thp_speedup,
		 thp_huge_fraction, hugetlb_2m_speedup, hugetlb_1g_speedup,
		 thp_fault_p99_us, iouring_vs_pread, iouring_vs_libaio,
		 iouring_iops, pread_iops, failed);

TRUNCATE fleet_summary;
ALTER TABLE fleet_summary ADD COLUMN method text;
DROP INDEX fleet_summary_key_idx;
CREATE INDEX fleet_summary_key_idx
	ON fleet_summary (level, provider, instance_type, kernel, method);

TRUNCATE fleet_dirty;
ALTER TABLE fleet_dirty ADD COLUMN method text NOT NULL;
DROP INDEX fleet_dirty_key_idx;
CREATE INDEX fleet_dirty_key_idx
	ON fleet_dirty (provider, instance_type, kernel_release, method);
INSERT INTO fleet_dirty (provider, instance_type, kernel_release, method)
SELECT DISTINCT provider, instance_type, kernel_release, method
FROM run_figures;

-- Marks an instance type, kernel and method as changed (see fleet_dirty).
CREATE FUNCTION fleetbench_mark(p text, t text, k text, m text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	IF pg_try_advisory_xact_lock_shared(112723185853042)
	   AND EXISTS (SELECT 1 FROM fleet_dirty AS d
		       WHERE d.provider = p AND d.instance_type = t
			     AND d.kernel_release = k AND d.method = m) THEN
		RETURN;
	END IF;
	INSERT INTO fleet_dirty (provider, instance_type, kernel_release, method)
	VALUES (p, t, k, m);
END
$$;

CREATE OR REPLACE FUNCTION fleetbench_mark_dirty() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP <> 'INSERT' THEN
		PERFORM fleetbench_mark(OLD.provider, OLD.instance_type,
					OLD.kernel_release, OLD.method);
	END IF;
	IF TG_OP <> 'DELETE' THEN
		PERFORM fleetbench_mark(NEW.provider, NEW.instance_type,
					NEW.kernel_release, NEW.method);
	END IF;
	RETURN NULL;
END
$$;

DROP FUNCTION fleetbench_mark(text, text, text);

-- ---- keys and filters: method ----

CREATE OR REPLACE FUNCTION fleetbench_query_keys() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT '{provider,instance_type,kernel,region,vm,thp,vcpus,host,method}'::text[]
$$;

-- As 004 made it, with the method key.
CREATE OR REPLACE FUNCTION fleetbench_runs(filter jsonb DEFAULT NULL,
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
		     fleetbench_filter_values(filter, 'host') AS host,
		     fleetbench_filter_values(filter, 'method') AS method) AS w
	WHERE (since IS NULL OR f.started_at >= since)
	  AND (w.provider IS NULL OR f.provider = ANY (w.provider))
	  AND (w.instance_type IS NULL OR f.instance_type = ANY (w.instance_type))
	  AND (w.kernel IS NULL OR f.kernel_release = ANY (w.kernel))
	  AND (w.region IS NULL OR f.region = ANY (w.region))
	  AND (w.vm IS NULL OR f.vm = ANY (w.vm))
	  AND (w.thp IS NULL OR f.thp_enabled = ANY (w.thp))
	  AND (w.vcpus IS NULL OR f.vcpus::text = ANY (w.vcpus))
	  AND (w.host IS NULL OR f.hostname = ANY (w.host))
	  AND (w.method IS NULL OR f.method = ANY (w.method))
$$;


/*
 * As 007 made it, but every group is of one method: the method column
 * (last) is always filled, whatever keys holds.
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
		      GROUP BY x.name) AS v),
	       f.method
	FROM fleetbench_runs(filter, since) AS f
	GROUP BY 2, 3, 4, 5, 6, 7, 8, 9, f.method
$$;


-- As 004 made it, with fleet_summary and fleet_dirty by method.
CREATE OR REPLACE FUNCTION fleetbench_refresh() RETURNS boolean
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
		       'kernel', jsonb_agg(DISTINCT kernel_release),
		       'method', jsonb_agg(DISTINCT method))
	INTO changed
	FROM gone
	HAVING count(*) > 0;
	IF changed IS NULL THEN
		RETURN true;
	END IF;
	DELETE FROM fleet_summary AS s
	WHERE s.provider = ANY (fleetbench_filter_values(changed, 'provider'))
	  AND s.instance_type = ANY (fleetbench_filter_values(changed, 'instance_type'))
	  AND s.method = ANY (fleetbench_filter_values(changed, 'method'))
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


-- As 004 made it, with the method key.
CREATE OR REPLACE FUNCTION fleetbench_group_rows(keys text[], filter jsonb,
				      since timestamptz)
RETURNS SETOF fleet_summary
LANGUAGE plpgsql
SET plan_cache_mode = force_custom_plan
SET work_mem = '256MB'
AS $$
DECLARE
	-- every grouping is by method too (fleetbench_groups)
	lvl smallint := CASE
		WHEN keys @> '{provider,instance_type,kernel}'
		     AND keys <@ '{provider,instance_type,kernel,method}' THEN 3
		WHEN keys @> '{provider,instance_type}'
		     AND keys <@ '{provider,instance_type,method}' THEN 2 END;
	filtered text[] := ARRAY(SELECT jsonb_object_keys(coalesce(filter, '{}')));
BEGIN
	IF since IS NULL AND lvl IS NOT NULL
	   AND filtered <@ (CASE lvl WHEN 3 THEN '{provider,instance_type,kernel,method}'
			    ELSE '{provider,instance_type,method}' END)::text[]
	   AND fleetbench_refresh() THEN
		RETURN QUERY
		SELECT s.* FROM fleet_summary AS s
		WHERE s.level = lvl
		  AND (NOT 'provider' = ANY (filtered)
		       OR s.provider = ANY (fleetbench_filter_values(filter, 'provider')))
		  AND (NOT 'instance_type' = ANY (filtered)
		       OR s.instance_type = ANY (fleetbench_filter_values(filter, 'instance_type')))
		  AND (NOT 'kernel' = ANY (filtered)
		       OR s.kernel = ANY (fleetbench_filter_values(filter, 'kernel')))
		  AND (NOT 'method' = ANY (filtered)
		       OR s.method = ANY (fleetbench_filter_values(filter, 'method')));
		RETURN;
	END IF;
	RETURN QUERY SELECT * FROM fleetbench_groups(keys, filter, since);
END
$$;


-- ---- the method a fleet query shows ----

/*
 * The method key a fleet query selects among the runs of filter since
 * since: method itself when given ('*': every method, NULL returned);
 * NULL when filter chooses by its "method" key; else the default, the
 * standard profile's method 'standard' when the selection holds a run of
 * it, else the method with the most runs (then the first by name).
 * Runs counted from fleet_summary when it can (as fleetbench_group_rows).
 */
CREATE FUNCTION fleetbench_method_choice(method text, filter jsonb,
					 since timestamptz)
RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	chosen text;
BEGIN
	IF method = '*' THEN
		RETURN NULL;
	END IF;
	IF method IS NOT NULL THEN
		RETURN method;
	END IF;
	IF coalesce(filter ? 'method', false) THEN
		RETURN NULL;
	END IF;
	SELECT g.method INTO chosen
	FROM fleetbench_group_rows('{provider,instance_type}', filter, since)
	     AS g
	GROUP BY g.method
	ORDER BY g.method = 'standard' DESC, sum(g.runs) DESC, g.method
	LIMIT 1;
	RETURN coalesce(chosen, 'standard');
END
$$;

-- filter with the method fleetbench_method_choice() selects added as its
-- "method" key (unchanged when it selects every method).
CREATE FUNCTION fleetbench_method_filter(method text, filter jsonb,
					 since timestamptz)
RETURNS jsonb
LANGUAGE sql VOLATILE AS $$
	SELECT CASE WHEN m IS NULL THEN filter
		    ELSE coalesce(filter, '{}') || jsonb_build_object('method', m)
	       END
	FROM fleetbench_method_choice(method, filter, since) AS m
$$;

-- ---- fleet_compare, fleet_kernels and fleet_rank, with method ----

CREATE TEMPORARY TABLE fleetbench_008_views (
	name text NOT NULL,
	statements text[] NOT NULL -- COMMENT ON and GRANT
) ON COMMIT DROP;

-- What would be lost with the views: their comments and grants.
INSERT INTO fleetbench_008_views
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
FROM unnest(ARRAY['fleet_compare', 'fleet_kernels', 'fleet_rank']) AS v;

DO $$
BEGIN
	IF EXISTS (SELECT 1 FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
		   WHERE d.classid = 'pg_rewrite'::regclass
		     AND d.refobjid IN ('fleet_compare'::regclass,
					'fleet_kernels'::regclass,
					'fleet_rank'::regclass)
		     AND r.ev_class NOT IN ('fleet_compare'::regclass,
					    'fleet_kernels'::regclass,
					    'fleet_rank'::regclass)) THEN
		RAISE EXCEPTION 'migration 008 cannot keep a view over fleet_compare, fleet_kernels or fleet_rank: drop it first, make it again after';
	END IF;
END
$$;

DROP VIEW fleet_kernels, fleet_compare, fleet_rank;
DROP FUNCTION fleet_kernels_by(jsonb, timestamptz);
DROP FUNCTION fleet_compare_by(text[], jsonb, timestamptz);
DROP FUNCTION fleet_rank_by(text, text, text[], integer, jsonb, timestamptz);

/*
 * As 007 made it, among the runs of one method: method NULL selects the
 * default (fleetbench_method_choice: 'standard', else the method most
 * run), a key selects that method, '*' every method, each group then of
 * one method; a "method" key in filter selects as well. The first
 * column is the group's method.
 */
CREATE FUNCTION fleet_compare_by(by text[] DEFAULT NULL,
				 filter jsonb DEFAULT NULL,
				 since timestamptz DEFAULT NULL,
				 method_key text DEFAULT NULL)
RETURNS TABLE (
	method text, provider text, instance_type text, kernel text, region text,
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
	chosen jsonb;
BEGIN
	PERFORM fleetbench_check_keys(keys, 'by');
	PERFORM fleetbench_check_filter(filter);
	chosen := fleetbench_method_filter(method_key, filter,
					   since);
	RETURN QUERY
	SELECT g.method, g.provider, g.instance_type, g.kernel, g.region, g.vm, g.thp,
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
	FROM fleetbench_group_rows(keys, chosen, since) AS g
	ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9;
END
$$;


-- `fleetbench compare` with its defaults: per provider, instance type and
-- kernel release, over all runs of the default method.
CREATE VIEW fleet_compare AS
SELECT method, provider, instance_type, kernel, hosts, runs, few_runs,
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
 * As 007 made it, with a method column. method NULL (the default)
 * chooses per kernel: the standard method when the kernel has runs of
 * it, else its method most run; a kernel whose method differs from the
 * kernel before says 'method OLD -> NEW: figures not compared' in
 * changes and compares no figures. A key (or filter's "method") selects
 * one method; '*' every method, each a sequence of kernels of its own.
 */
CREATE FUNCTION fleet_kernels_by(filter jsonb DEFAULT NULL,
				 since timestamptz DEFAULT NULL,
				 method_key text DEFAULT NULL)
RETURNS TABLE (
	method text, provider text, instance_type text, kernel text,
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
	WITH o AS (
		-- every method, when the choice is per kernel
		SELECT $3 IS NULL AND NOT coalesce($1 ? 'method', false)
			       AS per_kernel,
		       coalesce($3 = '*', false) AS all_methods
	), a AS (
		SELECT x.*
		FROM o, fleet_compare_by('{provider,instance_type,kernel}', $1,
					 $2, CASE WHEN o.per_kernel THEN '*'
						  ELSE $3 END) AS x
	), k AS (
		-- per kernel: the standard method, else the one most run
		SELECT a.*
		FROM a, o
		WHERE NOT o.per_kernel
		   OR a.method = (SELECT b.method FROM a AS b
				  WHERE b.provider = a.provider
					AND b.instance_type = a.instance_type
					AND b.kernel = a.kernel
				  ORDER BY b.method = 'standard' DESC, b.runs DESC,
					   b.method
				  LIMIT 1)
	), c AS (
		SELECT x.*, row_number() OVER (
				PARTITION BY x.provider, x.instance_type,
					     CASE WHEN o.all_methods THEN x.method END
				ORDER BY x.first_run, x.kernel, x.method) AS pos,
		       o.all_methods
		FROM k AS x, o
	)
	SELECT c.method, c.provider, c.instance_type, c.kernel, c.hosts, c.runs,
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
	       CASE WHEN p.method <> c.method
		    THEN format('method %s -> %s: figures not compared',
				p.method, c.method)
		    WHEN p.kernel IS NOT NULL THEN coalesce(nullif(concat_ws('; ',
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
		   AND (NOT c.all_methods OR p.method = c.method)
		   AND p.pos = c.pos - 1
	ORDER BY c.provider, c.instance_type,
		 CASE WHEN c.all_methods THEN c.method END, c.pos
$$;

-- `fleetbench kernels` for every instance type (the CLI picks one).
CREATE VIEW fleet_kernels AS SELECT * FROM fleet_kernels_by();

/*
 * As 004 made it, among the runs of one method, chosen as by
 * fleet_compare_by() ('*': every method, each ranked on its own). The
 * second column is the method.
 */
CREATE FUNCTION fleet_rank_by(metric_name text,
			      per text DEFAULT NULL,
			      require text[] DEFAULT NULL,
			      min_runs integer DEFAULT NULL,
			      filter jsonb DEFAULT NULL,
			      since timestamptz DEFAULT NULL,
			      method_key text DEFAULT NULL)
RETURNS TABLE (
	metric text, method text, rank bigint, tie boolean, provider text,
	instance_type text, median numeric, median_lo numeric,
	median_hi numeric, runs integer, hosts bigint, kernels bigint,
	vcpus integer, iouring_share numeric, sqpoll_share numeric,
	hugepage_1g_share numeric)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
	need text[] := coalesce(require, '{}');
	up boolean;
	chosen jsonb;
BEGIN
	PERFORM fleetbench_check_rank(metric_name, per, require);
	PERFORM fleetbench_check_filter(filter);
	SELECT m.higher_is_better INTO up
	FROM fleetbench_rank_metrics() AS m WHERE m.metric = metric_name;
	chosen := fleetbench_method_filter(method_key, filter, since);
	RETURN QUERY
	WITH e AS (
		SELECT g.method, g.provider, g.instance_type, g.hosts, g.kernels,
		       g.vcpus_mode, g.runs AS all_runs, g.iouring_ok,
		       g.sqpoll_ok, g.hugepage_1g, (x.est).n,
		       fleetbench_round((x.est).median) AS median,
		       fleetbench_round((x.est).ci_low) AS lo,
		       fleetbench_round((x.est).ci_high) AS hi
		FROM fleetbench_group_rows('{provider,instance_type}', chosen,
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
			    WHERE o.method = e.method AND CASE WHEN up
				  THEN coalesce(o.lo, o.median) > coalesce(e.hi, e.median)
				  ELSE coalesce(o.hi, o.median) < coalesce(e.lo, e.median)
				  END) AS rank
		FROM e
	)
	SELECT metric_name, r.method, r.rank,
	       count(*) OVER (PARTITION BY r.method, r.rank) > 1,
	       r.provider, r.instance_type, r.median, r.lo, r.hi, r.n,
	       r.hosts, r.kernels, r.vcpus_mode,
	       fleetbench_share(r.iouring_ok, r.all_runs),
	       fleetbench_share(r.sqpoll_ok, r.all_runs),
	       fleetbench_share(r.hugepage_1g, r.all_runs)
	FROM r
	ORDER BY r.method, r.rank, CASE WHEN up THEN -r.median ELSE r.median END,
		 r.provider, r.instance_type;
END
$$;

-- `fleetbench rank --metric M` with its defaults, for every metric M.
CREATE VIEW fleet_rank AS
SELECT r.metric, r.method, r.rank, r.tie, r.provider, r.instance_type, r.median,
       r.median_lo, r.median_hi, r.runs, r.hosts, r.kernels, r.vcpus,
       r.iouring_share, r.sqpoll_share, r.hugepage_1g_share
FROM fleetbench_rank_metrics() AS m,
     LATERAL fleet_rank_by(m.metric) WITH ORDINALITY AS r
ORDER BY m.metric, r.ordinality;

DO $$
DECLARE
	v record;
	s text;
BEGIN
	FOR v IN SELECT * FROM fleetbench_008_views LOOP
		FOREACH s IN ARRAY v.statements LOOP
			EXECUTE s;
		END LOOP;
	END LOOP;
END
$$;

COMMENT ON VIEW fleet_compare IS
	'per method, provider, instance type and kernel, of the default method: median and 95% interval of each headline figure, capability shares, runs with a failed variant';
COMMENT ON VIEW fleet_kernels IS
	'per instance type and kernel, oldest kernel first, of the default method per kernel: fleet_compare''s figures, failures and what changed from the kernel before';
COMMENT ON VIEW fleet_rank IS
	'per metric, of the default method: instance types best first with the median, its interval, and ranks shared by ties within noise';

-- ---- alerts: the same method on both kernels ----

/*
 * As 005 made it, but the run compared with is the host's latest earlier
 * run on another kernel release with the same method: a host whose
 * method changed with its kernel is not alerted on (docs/alerts.md). Callable by hand, for
 * runs stored before this migration:
 *   SELECT fleetbench_alert_check(run_id) FROM runs ORDER BY started_at;
 */
CREATE OR REPLACE FUNCTION fleetbench_alert_check(run uuid)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	n record;
	o record;
	raised record;
	g record;
	diff jsonb;
	change double precision;
	t record;
BEGIN
	SELECT run_id, machine_id, kernel_release, started_at, method INTO n
	FROM runs WHERE run_id = run;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	-- The host's kernels, one index probe each (a loose index scan),
	-- then the latest earlier run on each of the others.
	WITH RECURSIVE k(kernel) AS (
		(SELECT kernel_release FROM runs
		 WHERE machine_id = n.machine_id
		 ORDER BY kernel_release LIMIT 1)
		UNION ALL
		SELECT (SELECT kernel_release FROM runs
			WHERE machine_id = n.machine_id
			      AND kernel_release > k.kernel
			ORDER BY kernel_release LIMIT 1)
		FROM k WHERE k.kernel IS NOT NULL
	)
	SELECT r.run_id, r.kernel_release INTO o
	FROM k, LATERAL (SELECT run_id, kernel_release, started_at FROM runs
			 WHERE machine_id = n.machine_id
			       AND kernel_release = k.kernel
			       AND method = n.method
			       AND started_at < n.started_at
			 ORDER BY started_at DESC LIMIT 1) AS r
	WHERE k.kernel <> n.kernel_release
	ORDER BY r.started_at DESC
	LIMIT 1;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	SELECT coalesce(bool_or(kind = 'fingerprint'), false) AS fingerprint,
	       coalesce(bool_or(kind = 'gain'), false) AS gain
	INTO raised
	FROM alerts
	WHERE machine_id = n.machine_id AND old_kernel = o.kernel_release
	      AND new_kernel = n.kernel_release;

	IF NOT raised.fingerprint THEN
		diff := fleetbench_io_uring_diff(o.run_id, n.run_id);
		IF diff <> '{}' THEN
			PERFORM fleetbench_alert_raise(o.run_id, n.run_id,
						       'fingerprint', diff,
						       diff);
		END IF;
	END IF;
	IF raised.gain THEN
		RETURN;
	END IF;

	-- The gain over pread of each repeat of both runs: io_uring's random
	-- read IOPS over pread's in the same round (the variants are
	-- interleaved, so a round's pair shares its drift), when both have
	-- the same number of samples and pread's are positive; their medians;
	-- the thresholds. One statement: a SQL function here would be
	-- planned again at every call.
	SELECT before, after, median_before, median_after,
	       coalesce(s.gain_min_change, 0.2) AS min_change,
	       coalesce(s.gain_alpha, 0.01) AS alpha
	INTO g
	FROM (SELECT array_agg(x ORDER BY i) FILTER (WHERE r = o.run_id) AS before,
		     array_agg(x ORDER BY i) FILTER (WHERE r = n.run_id) AS after,
		     percentile_cont(0.5) WITHIN GROUP (ORDER BY x)
			     FILTER (WHERE r = o.run_id) AS median_before,
		     percentile_cont(0.5) WITHIN GROUP (ORDER BY x)
			     FILTER (WHERE r = n.run_id) AS median_after
	      FROM (SELECT u.run_id AS r, s.a / s.b AS x, s.i
		    FROM bench_metrics u
		    JOIN bench_metrics p
			 ON p.run_id = u.run_id AND p.benchmark = 'randread'
			    AND p.variant = 'pread' AND p.metric = 'iops',
			 unnest(u.samples, p.samples) WITH ORDINALITY AS s(a, b, i)
		    WHERE u.run_id IN (o.run_id, n.run_id)
			  AND u.benchmark = 'randread'
			  AND u.variant = 'io_uring' AND u.metric = 'iops'
			  AND cardinality(u.samples) = cardinality(p.samples)
			  AND 0 < ALL (p.samples)) AS x) AS m
	LEFT JOIN alert_settings s ON true;
	IF g.median_before IS NULL OR g.median_before <= 0
	   OR g.median_after IS NULL THEN
		RETURN;
	END IF;
	change := g.median_after / g.median_before - 1;
	IF abs(change) < g.min_change THEN
		RETURN;
	END IF;
	SELECT * INTO t FROM fleetbench_mann_whitney(g.before, g.after);
	IF t.p IS NULL OR t.p >= g.alpha THEN
		RETURN;
	END IF;
	PERFORM fleetbench_alert_raise(o.run_id, n.run_id, 'gain',
		jsonb_build_object('iouring_vs_pread', jsonb_build_object(
			'before', g.median_before, 'after', g.median_after,
			'change', change,
			'before_repeats', g.before, 'after_repeats', g.after,
			'test', CASE WHEN t.exact
				     THEN 'Mann-Whitney U, exact'
				     ELSE 'Mann-Whitney U, normal approximation'
				END,
			'u', t.u, 'p', t.p, 'alpha', g.alpha,
			'min_change', g.min_change)),
		jsonb_build_object('iouring_vs_pread',
				   CASE WHEN change < 0 THEN 'decreased'
					ELSE 'increased' END));
END
$$;

