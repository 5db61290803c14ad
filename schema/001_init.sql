-- SPDX-License-Identifier: MIT
-- Runs, benchmark results and comparisons, and fleetbench_ingest(), which
-- stores one report given as jsonb.
--
-- Applied by `fleetbench-collector migrate` inside a transaction (so no
-- BEGIN/COMMIT here); docs/schema.md describes every table and column.

-- One row per run (a probe, or a probe and a benchmark suite) of one agent.
-- The typed columns are extracted from the probe at ingest for filtering
-- and grouping; each is NULL when the probe reported the item unknown,
-- absent, or not of the expected type. The probe itself is kept whole.
CREATE TABLE runs (
	run_id uuid PRIMARY KEY,
	received_at timestamptz NOT NULL DEFAULT now(),
	started_at timestamptz NOT NULL,
	finished_at timestamptz NOT NULL,
	schema_version integer NOT NULL,
	agent_version text NOT NULL,
	-- Labels: 'unknown' when not given, so that GROUP BY keeps them.
	provider text NOT NULL DEFAULT 'unknown',
	instance_type text NOT NULL DEFAULT 'unknown',
	region text NOT NULL DEFAULT 'unknown',
	provider_source text,
	instance_type_source text,
	region_source text,
	hostname text NOT NULL,
	machine_id text NOT NULL,
	kernel_release text NOT NULL,
	kernel_version text,
	kernel_cmdline text,
	profile text,
	seed bigint,
	-- From the probe (docs/probe.md names the source of each)
	thp_enabled text,
	thp_defrag text,
	hugepage_sizes_kb integer[],
	hugepage_1g_present boolean,
	io_uring_disabled integer,
	io_uring_setup text,
	io_uring_setup_errno integer,
	sqpoll text,
	sqpoll_errno integer,
	io_uring_opcodes text[],
	io_uring_features text[],
	vcpus integer,
	memory_kb bigint,
	vm text,
	container text,
	-- lz4: pglz compression of a probe costs more than the rest of the
	-- ingest together
	probe jsonb COMPRESSION lz4 NOT NULL,
	CONSTRAINT runs_finished_after_start CHECK (finished_at >= started_at),
	CONSTRAINT runs_probe_is_object CHECK (jsonb_typeof(probe) = 'object')
);

-- fleet_comparison groups by these three
CREATE INDEX runs_group_idx ON runs (provider, instance_type, kernel_release);
-- "Which kernels deny SQPOLL" and other per-kernel questions
CREATE INDEX runs_kernel_idx ON runs (kernel_release);
-- The latest run of a host
CREATE INDEX runs_host_latest_idx ON runs (machine_id, started_at DESC);

-- One row per benchmark variant of a run, in run order (position).
CREATE TABLE bench_results (
	run_id uuid NOT NULL REFERENCES runs ON DELETE CASCADE,
	benchmark text NOT NULL,
	variant text NOT NULL,
	position integer NOT NULL,
	status text NOT NULL,
	skip_reason text,
	parameters jsonb NOT NULL DEFAULT '{}',
	-- One object per measured repeat: steal_pct, loadavg1, wall_s, noisy
	windows jsonb NOT NULL DEFAULT '[]',
	-- Some window was noisy (CPU steal above the agent's threshold)
	noisy boolean NOT NULL DEFAULT false,
	PRIMARY KEY (run_id, benchmark, variant),
	CONSTRAINT bench_results_status_is_ok_or_skipped
		CHECK (status IN ('ok', 'skipped')),
	CONSTRAINT bench_results_skipped_has_reason
		CHECK ((status = 'skipped') = (skip_reason IS NOT NULL)),
	CONSTRAINT bench_results_parameters_is_object
		CHECK (jsonb_typeof(parameters) = 'object'),
	CONSTRAINT bench_results_windows_is_array
		CHECK (jsonb_typeof(windows) = 'array')
);

-- One row per metric of a variant, with every raw sample in repeat order.
CREATE TABLE bench_metrics (
	run_id uuid NOT NULL,
	benchmark text NOT NULL,
	variant text NOT NULL,
	metric text NOT NULL,
	unit text NOT NULL,
	samples double precision[] NOT NULL,
	-- As the agent computes it: the mean of the two middle samples of
	-- an even count; NULL without samples
	median double precision,
	PRIMARY KEY (run_id, benchmark, variant, metric),
	CONSTRAINT bench_metrics_samples_one_dimension
		CHECK (coalesce(array_ndims(samples), 1) = 1),
	CONSTRAINT bench_metrics_samples_finite
		CHECK (NOT samples && '{NaN,Infinity,-Infinity}'),
	FOREIGN KEY (run_id, benchmark, variant)
		REFERENCES bench_results ON DELETE CASCADE
);

-- The agent's comparisons: numerator / denominator ratio of the two
-- variants' medians of metric, with a confidence interval; ratio is NULL
-- with a reason when a side was skipped.
CREATE TABLE comparisons (
	run_id uuid NOT NULL REFERENCES runs ON DELETE CASCADE,
	name text NOT NULL,
	benchmark text NOT NULL,
	metric text NOT NULL,
	numerator text NOT NULL,
	denominator text NOT NULL,
	ratio double precision,
	ci_low double precision,
	ci_high double precision,
	level double precision,
	method text,
	reason text,
	PRIMARY KEY (run_id, name),
	CONSTRAINT comparisons_finite
		CHECK (NOT ARRAY[ratio, ci_low, ci_high, level]
			   && '{NaN,Infinity,-Infinity}')
);

COMMENT ON TABLE runs IS
	'one row per agent run: labels, kernel, typed probe columns and the whole probe';
COMMENT ON TABLE bench_results IS
	'one row per benchmark variant of a run: status, parameters, repeat windows';
COMMENT ON TABLE bench_metrics IS
	'one row per metric of a variant: raw samples in repeat order and their median';
COMMENT ON TABLE comparisons IS
	'ratio of two variants'' medians with its confidence interval, as the agent computed it';

-- Typed reads of probe items: NULL for anything but a value of the type
-- ({"unknown": ...} objects, null, absent keys, other JSON types).

CREATE FUNCTION fleetbench_json_text(v jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN jsonb_typeof(v) = 'string' THEN v #>> '{}' END
$$;

-- An integral number in [lo, hi], else NULL.
CREATE FUNCTION fleetbench_json_int(v jsonb, lo bigint, hi bigint)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN jsonb_typeof(v) = 'number'
			 AND v::numeric = trunc(v::numeric)
			 AND v::numeric BETWEEN lo AND hi
		    THEN v::numeric::bigint END
$$;

CREATE FUNCTION fleetbench_json_bool(v jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN jsonb_typeof(v) = 'boolean' THEN v::boolean END
$$;

-- An array of strings, in order; NULL unless every element is a string.
-- (PL/pgSQL: a SQL function with a subquery would not be inlined, and a
-- SQL function call costs more than this.)
CREATE FUNCTION fleetbench_json_text_array(v jsonb) RETURNS text[]
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
CREATE FUNCTION fleetbench_reject(problem text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'fleetbench_ingest: %', problem
		USING ERRCODE = 'invalid_parameter_value';
END
$$;

-- v when it is an array, '[]' when it is NULL or JSON null; else raises,
-- naming what (a jsonb_to_recordset() on a non-array would not say which).
CREATE FUNCTION fleetbench_array(v jsonb, what text) RETURNS jsonb
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
 *     "host": { "provider", "instance_type", "region",     null or "": 'unknown'
 *               "hostname", "machine_id",                  required
 *               "provider_source", "instance_type_source",
 *               "region_source" },
 *     "kernel": { "release" (required), "version", "cmdline" },
 *     "probe": { the whole probe report },                 required object
 *     "benchmarks": [ { "benchmark", "variant",            required
 *                       "skip_reason": null | "why",       set: skipped
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
 * "windows" and "samples" may be absent (empty). A bad report raises an
 * error naming the problem, with SQLSTATE class 22 (data exception: 22023
 * for a malformed member, 22P02 for a value that is not a number) or 23
 * (integrity: 23502 a required member is missing, 23505 a benchmark
 * variant, metric or comparison is listed twice, 23514 a check failed):
 * both are permanent, while any other class (connection, 40001, 53xxx,
 * 57xxx) is worth a retry. An error aborts the surrounding transaction: a
 * group commit runs each call under its own SAVEPOINT.
 *
 * The ingest runs a handful of set-based INSERTs and leaves element checks
 * to the column types and constraints: it is on the collector's hot path.
 */
CREATE FUNCTION fleetbench_ingest(report jsonb) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	host jsonb := report->'host';
	kernel jsonb := report->'kernel';
	probe jsonb := report->'probe';
	id uuid;
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
	       timestamptz 'epoch' + (report->>'started_unix_ms')::bigint
				     * interval '1 millisecond',
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
				    parameters jsonb, metrics jsonb, windows jsonb))
		     WITH ORDINALITY AS t(benchmark, variant, skip_reason,
					  parameters, metrics, windows, position)
	), results AS (
		INSERT INTO bench_results (run_id, benchmark, variant, position,
					   status, skip_reason, parameters,
					   windows, noisy)
		SELECT id, benchmark, variant, position,
		       CASE WHEN skip_reason IS NULL THEN 'ok' ELSE 'skipped' END,
		       skip_reason, coalesce(parameters, '{}'),
		       coalesce(windows, '[]'),
		       coalesce(jsonb_path_exists(windows,
						  '$[*] ? (@.noisy == true)'),
				false)
		FROM b
	)
	INSERT INTO bench_metrics (run_id, benchmark, variant, metric, unit,
				   samples, median)
	SELECT id, b.benchmark, b.variant, m.metric, m.unit,
	       coalesce(m.samples, '{}'),
	       (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x)
		FROM unnest(m.samples) AS x)
	FROM b,
	     jsonb_to_recordset(CASE WHEN jsonb_typeof(b.metrics) = 'array'
				     THEN b.metrics
				     ELSE fleetbench_array(b.metrics, 'metrics')
				END)
		AS m(metric text, unit text, samples double precision[]);

	INSERT INTO comparisons (run_id, name, benchmark, metric, numerator,
				 denominator, ratio, ci_low, ci_high, level,
				 method, reason)
	SELECT id, name, benchmark, metric, numerator, denominator, ratio,
	       ci_low, ci_high, level, method, reason
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
