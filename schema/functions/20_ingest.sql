-- SPDX-License-Identifier: MIT
-- Ingest: fleetbench_ingest() and its JSON checks, run_figures_live, and the
-- trigger functions that do the commit-time work of a stored run
-- (run_figures, fleet_dirty, alert checks). A function file
-- (schema/README.md): `fleetbench-collector migrate` runs all of them again,
-- in name order and in one transaction, whenever one of them changes or a
-- migration ran. Functions are CREATE OR REPLACE (a trigger function is
-- never dropped: its triggers depend on it); views are dropped and made
-- again.

CREATE OR REPLACE FUNCTION fleetbench_json_text(v jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN jsonb_typeof(v) = 'string' THEN v #>> '{}' END
$$;

-- An integral number in [lo, hi], else NULL.
CREATE OR REPLACE FUNCTION fleetbench_json_int(v jsonb, lo bigint, hi bigint)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN jsonb_typeof(v) = 'number'
			 AND v::numeric = trunc(v::numeric)
			 AND v::numeric BETWEEN lo AND hi
		    THEN v::numeric::bigint END
$$;

CREATE OR REPLACE FUNCTION fleetbench_json_bool(v jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN jsonb_typeof(v) = 'boolean' THEN v::boolean END
$$;

-- An array of strings, in order; NULL unless every element is a string.
-- (PL/pgSQL: a SQL function with a subquery would not be inlined, and a
-- SQL function call costs more than this.)
CREATE OR REPLACE FUNCTION fleetbench_json_text_array(v jsonb) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
	IF jsonb_typeof(v) IS DISTINCT FROM 'array'
	   OR jsonb_path_exists(v, 'strict $[*] ? (@.type() != "string")') THEN
		RETURN NULL;
	END IF;
	RETURN ARRAY(SELECT jsonb_array_elements_text(v));
END
$$;

-- Raises the error for a malformed report (SQLSTATE 22023).
CREATE OR REPLACE FUNCTION fleetbench_reject(problem text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'fleetbench_ingest: %', problem
		USING ERRCODE = 'invalid_parameter_value';
END
$$;

-- v when it is an array, '[]' when it is NULL or JSON null; else raises,
-- naming what (a jsonb_to_recordset() on a non-array would not say which).
CREATE OR REPLACE FUNCTION fleetbench_array(v jsonb, what text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
	IF v IS NULL OR v = 'null' THEN
		RETURN '[]';
	END IF;
	IF jsonb_typeof(v) <> 'array' THEN
		PERFORM fleetbench_reject(format('%s must be an array, not %s',
						 what, jsonb_typeof(v)));
	END IF;
	RETURN v;
END
$$;

/*
 * fleetbench_ingest(report jsonb) stores one report and returns true, or
 * returns false and changes nothing when a run with its run_id is already
 * stored (ON CONFLICT (run_id) DO NOTHING: delivery is idempotent).
 *
 * The collector builds the jsonb from a validated Report
 * (proto/fleetbench.proto), with the probe_json text parsed into "probe":
 *
 *   { "run_id": "<canonical lowercase UUID>",             required
 *     "schema_version": N, "agent_version": "0.1.0",       required
 *     "started_unix_ms": N, "finished_unix_ms": N,         required
 *     "profile": "quick" | null, "seed": N | null,
 *     "method": { "key", "profile", ... } | null,          the method key
 *     "host": { "provider", "instance_type", "region",     null or "": 'unknown'
 *               "hostname", "machine_id",                  required
 *               "provider_source", "instance_type_source",
 *               "region_source" },
 *     "kernel": { "release" (required), "version", "cmdline" },
 *     "probe": { the whole probe report },                 required object
 *     "benchmarks": [ { "benchmark", "variant",            required
 *                       "skip_reason": null | "why",       set: skipped
 *                       "failure": null | "why",           set: failed
 *                       "parameters": { "key": value, ... },
 *                       "metrics": [ { "metric", "unit",   required
 *                                      "samples": [N, ...] } ],
 *                       "windows": [ { "steal_pct", "loadavg1",
 *                                      "wall_s", "noisy" } ] } ],
 *     "comparisons": [ { "name", "benchmark", "metric",
 *                        "numerator", "denominator",       required
 *                        "ratio", "ci_low", "ci_high", "level": N | null,
 *                        "method", "reason": "text" | null } ] }
 *
 * Absent optional members are NULL; "benchmarks", "comparisons", "metrics",
 * "windows" and "samples" may be absent (empty). The results carry their
 * run's started_at (the partition key, docs/operations.md); the run's
 * method is stored in methods and runs.method (the profile when the
 * report has none). A bad report raises an
 * error naming the problem, with SQLSTATE class 22 (data exception: 22023
 * for a malformed member, 22P02 for a value that is not a number) or 23
 * (integrity: 23502 a required member is missing, 23505 a benchmark
 * variant, metric or comparison is listed twice, 23514 a check failed):
 * both are permanent, while any other class (connection, 40001, 53xxx,
 * 57xxx) is worth a retry. An error aborts the surrounding transaction.
 *
 * The ingest runs a handful of set-based INSERTs and leaves element checks
 * to the column types and constraints: it is on the collector's hot path.
 */
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
COMMENT ON FUNCTION fleetbench_ingest(jsonb) IS
	'stores one report (contract in docs/schema.md); true when stored, false when its run_id already was';

-- What one run says about the headline figures, as the joins of the
-- tables give it (the definition; run_figures holds its rows), in the
-- column order of run_figures, which takes its rows with SELECT *: the
-- failed variants, then the method, last.
DROP VIEW IF EXISTS run_figures_live CASCADE;
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
COMMENT ON VIEW run_figures_live IS
	'per run: the headline figures from runs, comparisons, bench_metrics and bench_results';

-- A run's figures are known once its comparisons and metrics are in:
-- fleetbench_ingest() inserts them after the run, and a bulk loader may
-- use any order, so the row is written at COMMIT (a deferred constraint
-- trigger), from run_figures_live. A report rolled back to its savepoint
-- takes its pending trigger event with it.
CREATE OR REPLACE FUNCTION fleetbench_run_figures_add() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO run_figures
	SELECT * FROM run_figures_live WHERE run_id = NEW.run_id
	ON CONFLICT (run_id) DO NOTHING;
	RETURN NULL;
END
$$;

-- Marks an instance type, kernel and method as changed (see fleet_dirty).
CREATE OR REPLACE FUNCTION fleetbench_mark(p text, t text, k text, m text) RETURNS void
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

-- The constraint trigger's function: runs at COMMIT, once the run's
-- benchmarks and comparisons are in. An error here would fail the COMMIT
-- of the collector's whole batch (and every retry of it): it is caught,
-- logged and kept in alert_errors instead.
CREATE OR REPLACE FUNCTION fleetbench_alert_trigger()
RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	state text;
	message text;
BEGIN
	BEGIN
		PERFORM fleetbench_alert_check(NEW.run_id);
	EXCEPTION WHEN OTHERS THEN
		GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE,
					message = MESSAGE_TEXT;
		RAISE WARNING 'fleetbench: alert check of run % failed: %',
			NEW.run_id, message;
		INSERT INTO alert_errors (run_id, sqlstate, message)
		VALUES (NEW.run_id, state, message);
	END;
	RETURN NULL;
END
$$;
