-- SPDX-License-Identifier: MIT
-- The results tables partitioned by month: bench_results, bench_metrics
-- and comparisons (104 of the 105 rows a full report becomes) by their
-- run's started_at, so that a month is dropped whole (retention) and the
-- month being written keeps small, hot indexes however large the history.
--
-- runs stays one table. Its primary key run_id is what makes delivery
-- idempotent: fleetbench_ingest() inserts ON CONFLICT (run_id) DO NOTHING
-- and stores the results only when the run was new. A partitioned table's
-- unique keys must include its partition key, so a partitioned runs could
-- only promise (run_id, started_at) unique, and a report sent again with
-- another start time would be stored twice; docs/scaling.md has the
-- reasoning. The results get their run's started_at (the partition key),
-- their primary keys gain it, and each references (run_id, started_at) of
-- runs, unique since run_id is.
--
-- Monthly partitions (TABLE_yYYYYmMM, in UTC) exist from the month of the
-- oldest run to three months ahead; a default partition (TABLE_default)
-- takes anything else, so no report is ever refused for want of one.
-- fleetbench_results_partitions() makes the months ahead (run it monthly:
-- docs/operations.md), fleetbench_results_drop_before() drops old ones.
--
-- The views over these tables, whichever migration made them, are set
-- aside and made again unchanged, with their comments and grants. Applied
-- by `fleetbench-collector migrate` inside one transaction: every results
-- row is copied once (docs/scaling.md says how long that takes).

ALTER TABLE runs ADD CONSTRAINT runs_run_id_started_at_key
	UNIQUE (run_id, started_at);

-- ---- set the views over the results tables aside ----

CREATE TEMPORARY TABLE fleetbench_006_views (
	depth integer NOT NULL,
	name text NOT NULL, -- schema-qualified, quoted
	definition text NOT NULL,
	options text[],
	owner name NOT NULL,
	comments text[] NOT NULL, -- COMMENT ON statements
	grants text[] NOT NULL -- GRANT statements
) ON COMMIT DROP;

CREATE TEMPORARY TABLE fleetbench_006_tables (
	name text NOT NULL,
	indexes text[] NOT NULL, -- CREATE INDEX of the non-key indexes
	comments text[] NOT NULL,
	grants text[] NOT NULL
) ON COMMIT DROP;

-- COMMENT ON statements for a relation and its columns
CREATE FUNCTION pg_temp.comments(rel regclass, kind text) RETURNS text[]
LANGUAGE sql AS $$
	SELECT coalesce(array_agg(CASE WHEN d.objsubid = 0
		THEN format('COMMENT ON %s %s IS %L', kind, rel, d.description)
		ELSE format('COMMENT ON COLUMN %s.%I IS %L', rel, a.attname,
			    d.description) END), '{}')
	FROM pg_description d
	LEFT JOIN pg_attribute a ON a.attrelid = d.objoid
				 AND a.attnum = d.objsubid
	WHERE d.classoid = 'pg_class'::regclass AND d.objoid = rel
$$;

-- GRANT statements that give again what a relation's ACL holds
CREATE FUNCTION pg_temp.grants(rel regclass) RETURNS text[]
LANGUAGE sql AS $$
	SELECT coalesce(array_agg(format('GRANT %s ON %s TO %s%s',
		a.privilege_type, rel,
		CASE WHEN a.grantee = 0 THEN 'PUBLIC'
		     ELSE quote_ident(pg_get_userbyid(a.grantee)) END,
		CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)),
		'{}')
	FROM pg_class c, aclexplode(c.relacl) a
	WHERE c.oid = rel AND a.grantee <> c.relowner
$$;

DO $$
DECLARE
	results regclass[] := ARRAY['bench_results', 'bench_metrics',
				    'comparisons']::regclass[];
	v record;
BEGIN
	-- what would be lost with the tables is refused, not dropped
	IF EXISTS (SELECT 1 FROM pg_trigger
		   WHERE tgrelid = ANY (results) AND NOT tgisinternal)
	   OR EXISTS (SELECT 1 FROM pg_policy WHERE polrelid = ANY (results))
	   OR EXISTS (SELECT 1 FROM pg_constraint
		      WHERE confrelid = ANY (results)
			AND conrelid <> ALL (results)) THEN
		RAISE EXCEPTION 'migration 006 cannot keep a trigger, policy or foreign key of another table on bench_results, bench_metrics or comparisons: drop it first, make it again after';
	END IF;
	INSERT INTO fleetbench_006_tables
	SELECT t::text,
	       coalesce((SELECT array_agg(pg_get_indexdef(i.indexrelid))
			 FROM pg_index i
			 WHERE i.indrelid = t AND NOT i.indisprimary), '{}'),
	       pg_temp.comments(t, 'TABLE'), pg_temp.grants(t)
	FROM unnest(results) AS t;

	-- the views over them, and views over those, deepest last
	INSERT INTO fleetbench_006_views
	WITH RECURSIVE dep(oid, depth) AS (
		SELECT DISTINCT r.ev_class, 1
		FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
		WHERE d.classid = 'pg_rewrite'::regclass
		  AND d.refclassid = 'pg_class'::regclass
		  AND d.refobjid = ANY (results)
		UNION
		SELECT r.ev_class, dep.depth + 1
		FROM dep
		JOIN pg_depend d ON d.refobjid = dep.oid
				 AND d.refclassid = 'pg_class'::regclass
				 AND d.classid = 'pg_rewrite'::regclass
		JOIN pg_rewrite r ON r.oid = d.objid
		WHERE r.ev_class <> dep.oid
	)
	SELECT max(dep.depth), dep.oid::regclass::text,
	       pg_get_viewdef(dep.oid), c.reloptions,
	       pg_get_userbyid(c.relowner), pg_temp.comments(dep.oid, 'VIEW'),
	       pg_temp.grants(dep.oid)
	FROM dep JOIN pg_class c ON c.oid = dep.oid
	WHERE c.relkind IN ('v', 'm')
	GROUP BY dep.oid, c.reloptions, c.relowner;

	FOR v IN SELECT c.relname FROM fleetbench_006_views w
		 JOIN pg_class c ON c.oid = w.name::regclass
		 WHERE c.relkind = 'm' LOOP
		RAISE EXCEPTION 'migration 006 cannot keep materialized view %: drop it first, make it again after', v.relname;
	END LOOP;
	FOR v IN SELECT name FROM fleetbench_006_views ORDER BY depth DESC LOOP
		EXECUTE format('DROP VIEW %s', v.name);
	END LOOP;
END
$$;

-- ---- the results tables, partitioned ----

ALTER TABLE bench_metrics RENAME TO bench_metrics_006;
ALTER TABLE bench_metrics_006 RENAME CONSTRAINT bench_metrics_pkey
	TO bench_metrics_006_pkey;
ALTER TABLE comparisons RENAME TO comparisons_006;
ALTER TABLE comparisons_006 RENAME CONSTRAINT comparisons_pkey
	TO comparisons_006_pkey;
ALTER TABLE bench_results RENAME TO bench_results_006;
ALTER TABLE bench_results_006 RENAME CONSTRAINT bench_results_pkey
	TO bench_results_006_pkey;

-- The same columns, defaults, checks, storage and column comments, and
-- started_at last
CREATE TABLE bench_results (
	LIKE bench_results_006 INCLUDING DEFAULTS INCLUDING CONSTRAINTS
		INCLUDING COMMENTS INCLUDING STORAGE INCLUDING COMPRESSION,
	started_at timestamptz NOT NULL,
	PRIMARY KEY (run_id, benchmark, variant, started_at)
) PARTITION BY RANGE (started_at);

CREATE TABLE bench_metrics (
	LIKE bench_metrics_006 INCLUDING DEFAULTS INCLUDING CONSTRAINTS
		INCLUDING COMMENTS INCLUDING STORAGE INCLUDING COMPRESSION,
	started_at timestamptz NOT NULL,
	PRIMARY KEY (run_id, benchmark, variant, metric, started_at)
) PARTITION BY RANGE (started_at);

CREATE TABLE comparisons (
	LIKE comparisons_006 INCLUDING DEFAULTS INCLUDING CONSTRAINTS
		INCLUDING COMMENTS INCLUDING STORAGE INCLUDING COMPRESSION,
	started_at timestamptz NOT NULL,
	PRIMARY KEY (run_id, name, started_at)
) PARTITION BY RANGE (started_at);

CREATE TABLE bench_results_default PARTITION OF bench_results DEFAULT;
CREATE TABLE bench_metrics_default PARTITION OF bench_metrics DEFAULT;
CREATE TABLE comparisons_default PARTITION OF comparisons DEFAULT;

/*
 * fleetbench_results_partition(month) makes the partitions of the month
 * holding `month` (UTC) for the three results tables, named
 * TABLE_yYYYYmMM, unless they exist, first moving that month's rows out of
 * the default partitions (which would otherwise forbid the new ones).
 * Returns whether it made them. Takes the tables' ACCESS EXCLUSIVE lock
 * for a moment: the collectors wait, they do not fail.
 */
CREATE FUNCTION fleetbench_results_partition(month date) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	first timestamp := date_trunc('month', month::timestamp);
	lo timestamptz := first AT TIME ZONE 'UTC';
	hi timestamptz := (first + interval '1 month') AT TIME ZONE 'UTC';
	suffix text := to_char(first, '"_y"YYYY"m"MM');
	t text;
BEGIN
	IF to_regclass('bench_results' || suffix) IS NOT NULL THEN
		RETURN false;
	END IF;
	CREATE TEMPORARY TABLE fleetbench_move_results AS
		SELECT * FROM bench_results_default
		WHERE started_at >= lo AND started_at < hi;
	CREATE TEMPORARY TABLE fleetbench_move_metrics AS
		SELECT * FROM bench_metrics_default
		WHERE started_at >= lo AND started_at < hi;
	CREATE TEMPORARY TABLE fleetbench_move_comparisons AS
		SELECT * FROM comparisons_default
		WHERE started_at >= lo AND started_at < hi;
	DELETE FROM bench_metrics_default
	WHERE started_at >= lo AND started_at < hi;
	DELETE FROM comparisons_default
	WHERE started_at >= lo AND started_at < hi;
	DELETE FROM bench_results_default
	WHERE started_at >= lo AND started_at < hi;
	FOREACH t IN ARRAY ARRAY['bench_results', 'bench_metrics',
				 'comparisons'] LOOP
		EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
			       t || suffix, t, lo, hi);
	END LOOP;
	INSERT INTO bench_results SELECT * FROM fleetbench_move_results;
	INSERT INTO bench_metrics SELECT * FROM fleetbench_move_metrics;
	INSERT INTO comparisons SELECT * FROM fleetbench_move_comparisons;
	DROP TABLE fleetbench_move_results, fleetbench_move_metrics,
		fleetbench_move_comparisons;
	RETURN true;
END
$$;

/*
 * fleetbench_results_partitions(ahead) makes the partitions of this month
 * and the `ahead` months after it that are missing; returns how many
 * months it made. Run it monthly (cron, a systemd timer): a month without
 * a partition is not lost, it waits in the default partition until this
 * makes its own.
 */
CREATE FUNCTION fleetbench_results_partitions(ahead integer DEFAULT 3)
RETURNS integer
LANGUAGE sql AS $$
	SELECT count(*) FILTER (WHERE fleetbench_results_partition(m::date))::integer
	FROM generate_series(date_trunc('month', now() AT TIME ZONE 'UTC'),
			     date_trunc('month', now() AT TIME ZONE 'UTC')
			     + make_interval(months => ahead),
			     interval '1 month') AS m
$$;

/*
 * fleetbench_results_drop_before(before) drops the monthly partitions of
 * the three results tables that end on or before `before` (UTC): their
 * results are gone, their runs stay (DELETE FROM runs for those). Returns
 * how many months it dropped.
 */
CREATE FUNCTION fleetbench_results_drop_before(before date) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
	suffix text;
	n integer := 0;
BEGIN
	FOR suffix IN
		SELECT substr(c.relname, length('bench_results') + 1)
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'bench_results'::regclass
		  AND c.relname ~ '^bench_results_y[0-9]{4}m[0-9]{2}$'
		  AND to_date(substr(c.relname, length('bench_results_y') + 1),
			      'YYYY"m"MM') + interval '1 month' <= before
		ORDER BY 1
	LOOP
		EXECUTE format('DROP TABLE IF EXISTS %I, %I, %I',
			       'comparisons' || suffix, 'bench_metrics' || suffix,
			       'bench_results' || suffix);
		n := n + 1;
	END LOOP;
	RETURN n;
END
$$;

-- every month with runs, through three months ahead
SELECT count(fleetbench_results_partition(m::date))
FROM generate_series(
	date_trunc('month', coalesce((SELECT min(started_at) FROM runs), now())
			    AT TIME ZONE 'UTC'),
	date_trunc('month', now() AT TIME ZONE 'UTC') + interval '3 months',
	interval '1 month') AS m;

-- the rows, each with its run's start
INSERT INTO bench_results
SELECT b.*, r.started_at FROM bench_results_006 b JOIN runs r USING (run_id);
INSERT INTO bench_metrics
SELECT m.*, r.started_at FROM bench_metrics_006 m JOIN runs r USING (run_id);
INSERT INTO comparisons
SELECT c.*, r.started_at FROM comparisons_006 c JOIN runs r USING (run_id);
DROP TABLE bench_metrics_006, comparisons_006, bench_results_006;

ALTER TABLE bench_results ADD CONSTRAINT bench_results_run_fkey
	FOREIGN KEY (run_id, started_at) REFERENCES runs (run_id, started_at)
	ON DELETE CASCADE;
-- The metrics reference their run, no longer their variant: a foreign key
-- to a partitioned table costs PostgreSQL 15 about 80 us a row to check
-- (75 metrics a report: three times the whole ingest), and
-- fleetbench_ingest() writes a variant and its metrics in one statement.
ALTER TABLE bench_metrics ADD CONSTRAINT bench_metrics_run_fkey
	FOREIGN KEY (run_id, started_at) REFERENCES runs (run_id, started_at)
	ON DELETE CASCADE;
ALTER TABLE comparisons ADD CONSTRAINT comparisons_run_fkey
	FOREIGN KEY (run_id, started_at) REFERENCES runs (run_id, started_at)
	ON DELETE CASCADE;

-- ---- the views, indexes, comments and grants again ----

DO $$
DECLARE
	v record;
	s text;
BEGIN
	FOR v IN SELECT * FROM fleetbench_006_tables LOOP
		FOREACH s IN ARRAY v.indexes || v.comments || v.grants LOOP
			EXECUTE s;
		END LOOP;
	END LOOP;
	FOR v IN SELECT * FROM fleetbench_006_views ORDER BY depth LOOP
		EXECUTE format('CREATE VIEW %s%s AS %s', v.name,
			       CASE WHEN v.options IS NULL THEN ''
				    ELSE ' WITH (' ||
					 array_to_string(v.options, ', ') || ')'
			       END, v.definition);
		IF v.owner <> current_user THEN
			EXECUTE format('ALTER VIEW %s OWNER TO %I', v.name,
				       v.owner);
		END IF;
		FOREACH s IN ARRAY v.comments || v.grants LOOP
			EXECUTE s;
		END LOOP;
	END LOOP;
END
$$;

DROP FUNCTION pg_temp.comments(regclass, text), pg_temp.grants(regclass);

COMMENT ON COLUMN bench_results.started_at IS
	'its run''s started_at: the partition key (monthly, UTC)';
COMMENT ON COLUMN bench_metrics.started_at IS
	'its run''s started_at: the partition key (monthly, UTC)';
COMMENT ON COLUMN comparisons.started_at IS
	'its run''s started_at: the partition key (monthly, UTC)';
COMMENT ON FUNCTION fleetbench_results_partition(date) IS
	'makes the month''s partitions of the results tables, moving its rows out of the default partitions';
COMMENT ON FUNCTION fleetbench_results_partitions(integer) IS
	'makes the missing partitions of this month and the next ones; run monthly';
COMMENT ON FUNCTION fleetbench_results_drop_before(date) IS
	'drops the results tables'' monthly partitions that end on or before a date';

-- ---- fleetbench_ingest(), writing the partition key ----

-- As 001_init.sql made it, but the results carry their run's started_at.
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
				    parameters jsonb, metrics jsonb, windows jsonb))
		     WITH ORDINALITY AS t(benchmark, variant, skip_reason,
					  parameters, metrics, windows, position)
	), results AS (
		INSERT INTO bench_results (run_id, benchmark, variant, position,
					   status, skip_reason, parameters,
					   windows, noisy, started_at)
		SELECT id, benchmark, variant, position,
		       CASE WHEN skip_reason IS NULL THEN 'ok' ELSE 'skipped' END,
		       skip_reason, coalesce(parameters, '{}'),
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
