-- SPDX-License-Identifier: MIT
-- The lean layout (issue 13): a report becomes one runs row and one
-- run_results row, instead of 105 rows of four tables.
--
-- run_results (partitioned by month on its run's started_at, like 006's
-- results tables) holds a run's variants as the arrays of the report:
-- statuses, parameters, repeat windows, metrics with their medians
-- (computed once, by the collector) and every sample in one float8[].
-- One row per run rather than per variant: a row that large is
-- compressed by TOAST, and a report is two heap tuples; docs/schema.md
-- and docs/performance.md have the measurements. runs gains the run's
-- comparisons as arrays, and the capabilities that reports now carry
-- typed (thp_shmem_enabled, the hugetlb pools, cpu_model). Integrity is
-- checked by CHECK constraints on each row (aligned arrays, finite
-- samples, statuses), not by foreign keys looked up row by row, and a
-- statement-level trigger deletes a run's results with it.
--
-- bench_results, bench_metrics and comparisons stay, as views over the new
-- tables with the same columns, so every query written against them keeps
-- working; a query on them that filters on started_at prunes run_results'
-- partitions. The views over the old tables (whichever migration or user
-- made them) are set aside and made again unchanged, with their comments,
-- owners and grants.
--
-- The commit-time work of migrations 004 and 005 (run_figures rows, the
-- fleet_dirty marks, the alert checks), deferred triggers fired once per
-- run, is done by fleetbench_ingest_end() set-based once per batch for the
-- runs fleetbench_ingest_run() stored in the transaction; the foreign keys
-- of runs.method and run_figures.run_id go (the ingest writes both
-- sides), and so does runs' UNIQUE (run_id, started_at) that only the
-- results' foreign keys needed.
--
-- Every row moves: runs keep their rows (gaining the comparisons), the
-- run_results rows are made from bench_results and bench_metrics with the
-- medians as stored. A variant's metrics are kept in the order of their
-- names (the old tables kept no order). Applied by `fleetbench-collector
-- migrate` inside one transaction.

-- ---- set the views over the old tables aside (as 006 did) ----

CREATE TEMPORARY TABLE fleetbench_010_views (
	depth integer NOT NULL,
	name text NOT NULL, -- schema-qualified, quoted
	definition text NOT NULL,
	options text[],
	owner name NOT NULL,
	statements text[] NOT NULL -- COMMENT ON and GRANT
) ON COMMIT DROP;

DO $$
DECLARE
	old regclass[] := ARRAY['bench_results', 'bench_metrics',
				'comparisons']::regclass[];
	v record;
BEGIN
	IF EXISTS (SELECT 1 FROM pg_trigger
		   WHERE tgrelid = ANY (old) AND NOT tgisinternal)
	   OR EXISTS (SELECT 1 FROM pg_policy WHERE polrelid = ANY (old))
	   OR EXISTS (SELECT 1 FROM pg_constraint
		      WHERE confrelid = ANY (old) AND conrelid <> ALL (old)) THEN
		RAISE EXCEPTION 'migration 010 cannot keep a trigger, policy or foreign key of another table on bench_results, bench_metrics or comparisons: drop it first, make it again after';
	END IF;
	INSERT INTO fleetbench_010_views
	WITH RECURSIVE dep(oid, depth) AS (
		SELECT DISTINCT r.ev_class, 1
		FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
		WHERE d.classid = 'pg_rewrite'::regclass
		  AND d.refclassid = 'pg_class'::regclass
		  AND d.refobjid = ANY (old)
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
	       pg_get_userbyid(c.relowner),
	       array_cat(
		(SELECT coalesce(array_agg(CASE WHEN d.objsubid = 0
			THEN format('COMMENT ON VIEW %s IS %L', dep.oid::regclass,
				    d.description)
			ELSE format('COMMENT ON COLUMN %s.%I IS %L',
				    dep.oid::regclass, a.attname, d.description)
			END), '{}')
		 FROM pg_description d
		 LEFT JOIN pg_attribute a ON a.attrelid = d.objoid
					  AND a.attnum = d.objsubid
		 WHERE d.classoid = 'pg_class'::regclass AND d.objoid = dep.oid),
		(SELECT coalesce(array_agg(format('GRANT %s ON %s TO %s%s',
			a.privilege_type, dep.oid::regclass,
			CASE WHEN a.grantee = 0 THEN 'PUBLIC'
			     ELSE quote_ident(pg_get_userbyid(a.grantee)) END,
			CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION'
			     ELSE '' END)), '{}')
		 FROM aclexplode(c.relacl) a WHERE a.grantee <> c.relowner))
	FROM dep JOIN pg_class c ON c.oid = dep.oid
	WHERE c.relkind IN ('v', 'm')
	GROUP BY dep.oid, c.reloptions, c.relowner, c.relacl;

	FOR v IN SELECT c.relname FROM fleetbench_010_views w
		 JOIN pg_class c ON c.oid = w.name::regclass
		 WHERE c.relkind = 'm' LOOP
		RAISE EXCEPTION 'migration 010 cannot keep materialized view %: drop it first, make it again after', v.relname;
	END LOOP;
	FOR v IN SELECT name FROM fleetbench_010_views ORDER BY depth DESC LOOP
		EXECUTE format('DROP VIEW %s', v.name);
	END LOOP;
END
$$;

-- ---- runs: typed capabilities and the comparisons ----

ALTER TABLE runs
	ADD COLUMN thp_shmem_enabled text,
	-- the hugetlb pools, element i of the size hugepage_sizes_kb[i]
	ADD COLUMN hugepage_nr bigint[],
	ADD COLUMN hugepage_free bigint[],
	ADD COLUMN cpu_model text,
	-- the run's comparisons, element i of each array the i-th; NULL
	-- when the run has none
	ADD COLUMN c_name text[] COMPRESSION lz4,
	ADD COLUMN c_benchmark text[] COMPRESSION lz4,
	ADD COLUMN c_metric text[] COMPRESSION lz4,
	ADD COLUMN c_numerator text[] COMPRESSION lz4,
	ADD COLUMN c_denominator text[] COMPRESSION lz4,
	ADD COLUMN c_ratio double precision[] COMPRESSION lz4,
	ADD COLUMN c_ci_low double precision[] COMPRESSION lz4,
	ADD COLUMN c_ci_high double precision[] COMPRESSION lz4,
	ADD COLUMN c_level double precision[] COMPRESSION lz4,
	ADD COLUMN c_method text[] COMPRESSION lz4,
	ADD COLUMN c_reason text[] COMPRESSION lz4;

-- Alerting needs no lock on methods rows (a FOR KEY SHARE per run, on the
-- one row every run of a method shares); fleetbench_ingest_run() writes
-- the method first.
ALTER TABLE runs DROP CONSTRAINT runs_method_fkey;
ALTER TABLE run_figures DROP CONSTRAINT run_figures_run_id_fkey;

-- the old rows: the comparisons and the new typed columns (from the
-- probe, as fleetbench_ingest_run() derives them from a report without
-- capabilities)
UPDATE runs AS r
SET c_name = c.name, c_benchmark = c.benchmark, c_metric = c.metric,
    c_numerator = c.numerator, c_denominator = c.denominator,
    c_ratio = c.ratio, c_ci_low = c.ci_low, c_ci_high = c.ci_high,
    c_level = c.level, c_method = c.method, c_reason = c.reason,
    thp_shmem_enabled = fleetbench_json_text(
	    r.probe #> '{thp,shmem_enabled,selected}'),
    cpu_model = fleetbench_json_text(r.probe #> '{host,cpu_model}'),
    hugepage_nr = h.nr, hugepage_free = h.free
FROM runs AS r2
LEFT JOIN LATERAL (
	SELECT array_agg(x.name ORDER BY x.name) AS name,
	       array_agg(x.benchmark ORDER BY x.name) AS benchmark,
	       array_agg(x.metric ORDER BY x.name) AS metric,
	       array_agg(x.numerator ORDER BY x.name) AS numerator,
	       array_agg(x.denominator ORDER BY x.name) AS denominator,
	       array_agg(x.ratio ORDER BY x.name) AS ratio,
	       array_agg(x.ci_low ORDER BY x.name) AS ci_low,
	       array_agg(x.ci_high ORDER BY x.name) AS ci_high,
	       array_agg(x.level ORDER BY x.name) AS level,
	       array_agg(x.method ORDER BY x.name) AS method,
	       array_agg(x.reason ORDER BY x.name) AS reason
	FROM comparisons x WHERE x.run_id = r2.run_id) AS c ON true
LEFT JOIN LATERAL (
	SELECT CASE WHEN jsonb_typeof(r2.probe #> '{hugetlb,sizes}') = 'array'
		    THEN ARRAY(SELECT fleetbench_json_int(s->'nr', 0,
					9223372036854775807)
			       FROM jsonb_array_elements(r2.probe #> '{hugetlb,sizes}')
				    AS t(s),
				    fleetbench_json_int(s->'size_kb', 1,
							2147483647) AS kb
			       WHERE kb IS NOT NULL ORDER BY kb) END AS nr,
	       CASE WHEN jsonb_typeof(r2.probe #> '{hugetlb,sizes}') = 'array'
		    THEN ARRAY(SELECT fleetbench_json_int(s->'free', 0,
					9223372036854775807)
			       FROM jsonb_array_elements(r2.probe #> '{hugetlb,sizes}')
				    AS t(s),
				    fleetbench_json_int(s->'size_kb', 1,
							2147483647) AS kb
			       WHERE kb IS NOT NULL ORDER BY kb) END AS free)
	AS h ON true
WHERE r2.run_id = r.run_id;

ALTER TABLE runs
	ADD CONSTRAINT runs_comparisons_aligned CHECK (
		coalesce(cardinality(c_name), 0) = coalesce(cardinality(c_benchmark), 0)
		AND coalesce(cardinality(c_name), 0) = coalesce(cardinality(c_metric), 0)
		AND coalesce(cardinality(c_name), 0) = coalesce(cardinality(c_numerator), 0)
		AND coalesce(cardinality(c_name), 0) = coalesce(cardinality(c_denominator), 0)
		AND coalesce(cardinality(c_name), 0) = coalesce(cardinality(c_ratio), 0)
		AND coalesce(cardinality(c_name), 0) = coalesce(cardinality(c_ci_low), 0)
		AND coalesce(cardinality(c_name), 0) = coalesce(cardinality(c_ci_high), 0)
		AND coalesce(cardinality(c_name), 0) = coalesce(cardinality(c_level), 0)
		AND coalesce(cardinality(c_name), 0) = coalesce(cardinality(c_method), 0)
		AND coalesce(cardinality(c_name), 0) = coalesce(cardinality(c_reason), 0)),
	-- what the comparisons table's NOT NULL columns required
	ADD CONSTRAINT runs_comparisons_named CHECK (
		array_position(c_name, NULL) IS NULL
		AND array_position(c_benchmark, NULL) IS NULL
		AND array_position(c_metric, NULL) IS NULL
		AND array_position(c_numerator, NULL) IS NULL
		AND array_position(c_denominator, NULL) IS NULL),
	ADD CONSTRAINT runs_comparisons_finite CHECK (
		NOT (c_ratio || c_ci_low || c_ci_high || c_level)
		    && '{NaN,Infinity,-Infinity}'),
	ADD CONSTRAINT runs_hugepage_pools_aligned CHECK (
		(hugepage_nr IS NULL
		 OR cardinality(hugepage_nr) = cardinality(hugepage_sizes_kb))
		AND (hugepage_free IS NULL
		     OR cardinality(hugepage_free) = cardinality(hugepage_sizes_kb)));

COMMENT ON COLUMN runs.thp_shmem_enabled IS
	'the selected mode of /sys/kernel/mm/transparent_hugepage/shmem_enabled';
COMMENT ON COLUMN runs.hugepage_nr IS
	'the hugetlb pool of each size of hugepage_sizes_kb, in pages (nr_hugepages)';
COMMENT ON COLUMN runs.hugepage_free IS
	'the free pages of each pool of hugepage_nr';
COMMENT ON COLUMN runs.cpu_model IS 'the CPU model name';
COMMENT ON COLUMN runs.c_name IS
	'the run''s comparisons, one element each (view comparisons): name; c_benchmark, c_metric, c_numerator, c_denominator, c_ratio, c_ci_low, c_ci_high, c_level, c_method and c_reason are aligned with it';

-- ---- run_results: a run's variants, metrics and samples in one row ----

/*
 * One row per run with benchmark results, holding its variants as the
 * arrays of the report (docs/schema.md): v_* one element per variant in
 * run order; a variant's parameters, windows, metrics and samples are
 * slices of the p_*, w_*, m_* arrays and of samples, given by the
 * cumulative ends v_param_end, v_window_end, v_metric_end and
 * v_sample_end (variant i owns elements end[i-1]+1 .. end[i]); the samples
 * of a metric are given by m_sample_end, relative to its variant's. One
 * row instead of one per variant: the row is large enough for TOAST to
 * compress its arrays (a third of the bytes), and a report is one heap
 * tuple and one index entry.
 */
CREATE TABLE run_results (
	run_id uuid NOT NULL,
	-- its run's started_at: the partition key (monthly, UTC)
	started_at timestamptz NOT NULL,
	v_benchmark text[] COMPRESSION lz4 NOT NULL,
	v_variant text[] COMPRESSION lz4 NOT NULL,
	v_status text[] COMPRESSION lz4 NOT NULL, -- ok, skipped, failed
	v_reason text[] COMPRESSION lz4 NOT NULL, -- skipped: why; failed: the failure
	v_param_end integer[] COMPRESSION lz4 NOT NULL,
	p_key text[] COMPRESSION lz4,
	-- one letter per parameter: i integer, s string, d double, b
	-- boolean (j JSON: stored before 010 only)
	p_kind text COMPRESSION lz4,
	p_value text[] COMPRESSION lz4, -- as text; integers in decimal, doubles "%.17g"
	v_window_end integer[] COMPRESSION lz4 NOT NULL,
	w_steal_pct double precision[] COMPRESSION lz4,
	w_loadavg1 double precision[] COMPRESSION lz4,
	w_wall_s double precision[] COMPRESSION lz4,
	w_noisy boolean[] COMPRESSION lz4,
	v_metric_end integer[] COMPRESSION lz4 NOT NULL,
	m_metric text[] COMPRESSION lz4,
	m_unit text[] COMPRESSION lz4,
	m_median double precision[] COMPRESSION lz4,
	m_sample_end integer[] COMPRESSION lz4,
	v_sample_end integer[] COMPRESSION lz4 NOT NULL,
	samples double precision[] COMPRESSION lz4,
	CONSTRAINT run_results_variants_aligned CHECK (
		cardinality(v_benchmark) > 0
		AND cardinality(v_variant) = cardinality(v_benchmark)
		AND cardinality(v_status) = cardinality(v_benchmark)
		AND cardinality(v_reason) = cardinality(v_benchmark)
		AND cardinality(v_param_end) = cardinality(v_benchmark)
		AND cardinality(v_window_end) = cardinality(v_benchmark)
		AND cardinality(v_metric_end) = cardinality(v_benchmark)
		AND cardinality(v_sample_end) = cardinality(v_benchmark)
		AND array_position(v_benchmark, NULL) IS NULL
		AND array_position(v_variant, NULL) IS NULL
		AND array_position(v_param_end, NULL) IS NULL
		AND array_position(v_window_end, NULL) IS NULL
		AND array_position(v_metric_end, NULL) IS NULL
		AND array_position(v_sample_end, NULL) IS NULL),
	CONSTRAINT run_results_status_is_known
		CHECK (v_status <@ '{ok,skipped,failed}'),
	-- a reason exactly for the variants that are not ok
	CONSTRAINT run_results_reason_unless_ok CHECK (
		coalesce(array_positions(v_status, 'ok'), '{}')
		= coalesce(array_positions(v_reason, NULL), '{}')),
	CONSTRAINT run_results_parameters_aligned CHECK (
		v_param_end[cardinality(v_param_end)] = coalesce(cardinality(p_key), 0)
		AND coalesce(cardinality(p_value), 0) = coalesce(cardinality(p_key), 0)
		AND coalesce(length(p_kind), 0) = coalesce(cardinality(p_key), 0)
		AND p_kind ~ '^[isdbj]*$'
		AND array_position(p_key, NULL) IS NULL
		AND array_position(p_value, NULL) IS NULL),
	CONSTRAINT run_results_windows_aligned CHECK (
		v_window_end[cardinality(v_window_end)] = coalesce(cardinality(w_steal_pct), 0)
		AND coalesce(cardinality(w_loadavg1), 0) = coalesce(cardinality(w_steal_pct), 0)
		AND coalesce(cardinality(w_wall_s), 0) = coalesce(cardinality(w_steal_pct), 0)
		AND coalesce(cardinality(w_noisy), 0) = coalesce(cardinality(w_steal_pct), 0)),
	CONSTRAINT run_results_metrics_aligned CHECK (
		v_metric_end[cardinality(v_metric_end)] = coalesce(cardinality(m_metric), 0)
		AND coalesce(cardinality(m_unit), 0) = coalesce(cardinality(m_metric), 0)
		AND coalesce(cardinality(m_median), 0) = coalesce(cardinality(m_metric), 0)
		AND coalesce(cardinality(m_sample_end), 0) = coalesce(cardinality(m_metric), 0)
		AND array_position(m_metric, NULL) IS NULL
		AND array_position(m_unit, NULL) IS NULL
		AND array_position(m_sample_end, NULL) IS NULL),
	CONSTRAINT run_results_samples_finite CHECK (
		v_sample_end[cardinality(v_sample_end)] = coalesce(cardinality(samples), 0)
		AND coalesce(array_ndims(samples), 1) = 1
		AND NOT samples && '{NaN,Infinity,-Infinity}')
) PARTITION BY RANGE (started_at);

-- a run's results (no unique key: fleetbench_ingest_run() writes a run's
-- row once, with its run)
CREATE INDEX run_results_run_idx ON run_results (run_id);

CREATE TABLE run_results_default PARTITION OF run_results DEFAULT;

COMMENT ON TABLE run_results IS
	'one row per run with results: its variants, parameters, repeat windows, metrics with medians and samples, as arrays (docs/schema.md)';

-- every month with runs, through three months ahead
DO $$
DECLARE
	m timestamp;
BEGIN
	FOR m IN SELECT generate_series(
		date_trunc('month', coalesce((SELECT min(started_at) FROM runs),
					     now()) AT TIME ZONE 'UTC'),
		date_trunc('month', now() AT TIME ZONE 'UTC') + interval '3 months',
		interval '1 month')
	LOOP
		EXECUTE format('CREATE TABLE %I PARTITION OF run_results FOR VALUES FROM (%L) TO (%L)',
			       to_char(m, '"run_results_y"YYYY"m"MM'),
			       m AT TIME ZONE 'UTC',
			       (m + interval '1 month') AT TIME ZONE 'UTC');
	END LOOP;
END
$$;

-- the old rows: each variant's arrays first, then a run's
CREATE TEMPORARY TABLE fleetbench_010_variants ON COMMIT DROP AS
SELECT b.run_id, b.started_at, b.position, b.benchmark, b.variant,
       b.status, CASE b.status WHEN 'skipped' THEN b.skip_reason
			       WHEN 'failed' THEN b.failure END AS reason,
       p.k AS p_key, p.kinds AS p_kind, p.v AS p_value,
       w.steal_pct AS w_steal_pct, w.loadavg1 AS w_loadavg1,
       w.wall_s AS w_wall_s, w.noisy AS w_noisy,
       m.metric AS m_metric, m.unit AS m_unit, m.median AS m_median,
       m.sample_end AS m_sample_end, s.samples
FROM bench_results b
LEFT JOIN LATERAL (
	SELECT array_agg(e.key ORDER BY e.key) AS k,
	       string_agg(t.kind, '' ORDER BY e.key) AS kinds,
	       array_agg(CASE t.kind WHEN 's' THEN e.value #>> '{}'
				     ELSE e.value::text END ORDER BY e.key) AS v
	FROM jsonb_each(b.parameters) AS e,
	     LATERAL (SELECT CASE jsonb_typeof(e.value)
			WHEN 'string' THEN 's'
			WHEN 'boolean' THEN 'b'
			WHEN 'number' THEN CASE WHEN e.value::text ~ '^-?[0-9]+$'
						THEN 'i' ELSE 'd' END
			ELSE 'j' END AS kind) AS t) AS p ON true
LEFT JOIN LATERAL (
	SELECT array_agg((x->>'steal_pct')::double precision ORDER BY i) AS steal_pct,
	       array_agg((x->>'loadavg1')::double precision ORDER BY i) AS loadavg1,
	       array_agg((x->>'wall_s')::double precision ORDER BY i) AS wall_s,
	       array_agg((x->>'noisy')::boolean ORDER BY i) AS noisy
	FROM jsonb_array_elements(b.windows) WITH ORDINALITY AS w(x, i)) AS w
	ON true
LEFT JOIN LATERAL (
	SELECT array_agg(x.metric ORDER BY x.metric) AS metric,
	       array_agg(x.unit ORDER BY x.metric) AS unit,
	       array_agg(x.median ORDER BY x.metric) AS median,
	       array_agg(x.e ORDER BY x.metric) AS sample_end
	FROM (SELECT y.metric, y.unit, y.median,
		     (sum(cardinality(y.samples)) OVER (ORDER BY y.metric))::integer
			     AS e
	      FROM bench_metrics y
	      WHERE y.run_id = b.run_id AND y.benchmark = b.benchmark
		    AND y.variant = b.variant) AS x) AS m ON true
LEFT JOIN LATERAL (
	SELECT array_agg(z ORDER BY y.metric, i) AS samples
	FROM bench_metrics y, unnest(y.samples) WITH ORDINALITY AS u(z, i)
	WHERE y.run_id = b.run_id AND y.benchmark = b.benchmark
	      AND y.variant = b.variant) AS s ON true;
-- concatenates arrays in the aggregate's order (NULL adds nothing)
CREATE AGGREGATE pg_temp.fleetbench_cat(anycompatiblearray) (
	SFUNC = array_cat, STYPE = anycompatiblearray);

INSERT INTO run_results
SELECT x.run_id, min(x.started_at),
       array_agg(x.benchmark ORDER BY x.position),
       array_agg(x.variant ORDER BY x.position),
       array_agg(x.status ORDER BY x.position),
       array_agg(x.reason ORDER BY x.position),
       array_agg(x.pe ORDER BY x.position),
       pg_temp.fleetbench_cat(x.p_key ORDER BY x.position),
       string_agg(x.p_kind, '' ORDER BY x.position),
       pg_temp.fleetbench_cat(x.p_value ORDER BY x.position),
       array_agg(x.we ORDER BY x.position),
       pg_temp.fleetbench_cat(x.w_steal_pct ORDER BY x.position),
       pg_temp.fleetbench_cat(x.w_loadavg1 ORDER BY x.position),
       pg_temp.fleetbench_cat(x.w_wall_s ORDER BY x.position),
       pg_temp.fleetbench_cat(x.w_noisy ORDER BY x.position),
       array_agg(x.me ORDER BY x.position),
       pg_temp.fleetbench_cat(x.m_metric ORDER BY x.position),
       pg_temp.fleetbench_cat(x.m_unit ORDER BY x.position),
       pg_temp.fleetbench_cat(x.m_median ORDER BY x.position),
       pg_temp.fleetbench_cat(x.m_sample_end ORDER BY x.position),
       array_agg(x.se ORDER BY x.position),
       pg_temp.fleetbench_cat(x.samples ORDER BY x.position)
FROM (SELECT y.*,
	     (sum(coalesce(cardinality(y.p_key), 0)) OVER o)::integer AS pe,
	     (sum(coalesce(cardinality(y.w_steal_pct), 0)) OVER o)::integer AS we,
	     (sum(coalesce(cardinality(y.m_metric), 0)) OVER o)::integer AS me,
	     (sum(coalesce(cardinality(y.samples), 0)) OVER o)::integer AS se
      FROM fleetbench_010_variants y
      WINDOW o AS (PARTITION BY y.run_id ORDER BY y.position)) AS x
GROUP BY x.run_id;

DROP TABLE bench_metrics, comparisons, bench_results;
-- only the results' foreign keys needed it
ALTER TABLE runs DROP CONSTRAINT runs_run_id_started_at_key;

-- ---- the old tables, as views ----

-- One row per variant: the skip reason or failure, parameters and windows
-- as the jsonb they were. (unnest(), not generate_series(): the planner
-- expects 10 elements of an array but 1,000 rows of a series, and would
-- compile every query on these views with JIT.)
CREATE VIEW bench_results AS
SELECT x.run_id, e.benchmark, e.variant, e.i::integer AS position, e.status,
       CASE WHEN e.status = 'skipped' THEN e.reason END AS skip_reason,
       coalesce((SELECT jsonb_object_agg(p.k, CASE WHEN p.t = 's'
						   THEN to_jsonb(p.v)
						   ELSE p.v::jsonb END)
		 FROM unnest(x.p_key[e.pe0 + 1 : e.pe1],
			     string_to_array(substr(x.p_kind, e.pe0 + 1,
						    e.pe1 - e.pe0), NULL),
			     x.p_value[e.pe0 + 1 : e.pe1]) AS p(k, t, v)), '{}')
	       AS parameters,
       coalesce((SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
				'steal_pct', w.s, 'loadavg1', w.l,
				'wall_s', w.w, 'noisy', w.n)) ORDER BY w.k)
		 FROM unnest(x.w_steal_pct[e.we0 + 1 : e.we1],
			     x.w_loadavg1[e.we0 + 1 : e.we1],
			     x.w_wall_s[e.we0 + 1 : e.we1],
			     x.w_noisy[e.we0 + 1 : e.we1])
			WITH ORDINALITY AS w(s, l, w, n, k)), '[]') AS windows,
       coalesce(true = ANY (x.w_noisy[e.we0 + 1 : e.we1]), false) AS noisy,
       x.started_at,
       CASE WHEN e.status = 'failed' THEN e.reason END AS failure
FROM run_results x,
     LATERAL (SELECT v.*, coalesce(x.v_param_end[v.i - 1], 0) AS pe0,
		     coalesce(x.v_window_end[v.i - 1], 0) AS we0
	      FROM unnest(x.v_benchmark, x.v_variant, x.v_status, x.v_reason,
			  x.v_param_end, x.v_window_end)
		      WITH ORDINALITY AS v(benchmark, variant, status, reason,
					   pe1, we1, i)) AS e;

-- One row per metric of a variant, with its samples and median.
CREATE VIEW bench_metrics AS
SELECT x.run_id, e.benchmark, e.variant, m.metric, m.unit,
       (coalesce(x.samples, '{}'))[e.se0 + coalesce(
						(x.m_sample_end[e.me0 + 1 : e.me1])[m.k - 1], 0) + 1
				   : e.se0 + m.se] AS samples,
       m.median, x.started_at
FROM run_results x,
     LATERAL (SELECT v.*, coalesce(x.v_metric_end[v.i - 1], 0) AS me0,
		     coalesce(x.v_sample_end[v.i - 1], 0) AS se0
	      FROM unnest(x.v_benchmark, x.v_variant, x.v_metric_end)
		      WITH ORDINALITY AS v(benchmark, variant, me1, i)) AS e,
     unnest(x.m_metric[e.me0 + 1 : e.me1], x.m_unit[e.me0 + 1 : e.me1],
	    x.m_median[e.me0 + 1 : e.me1], x.m_sample_end[e.me0 + 1 : e.me1])
	     WITH ORDINALITY AS m(metric, unit, median, se, k);

-- One row per comparison of a run.
CREATE VIEW comparisons AS
SELECT r.run_id, c.name, c.benchmark, c.metric, c.numerator, c.denominator,
       c.ratio, c.ci_low, c.ci_high, c.level, c.method, c.reason,
       r.started_at
FROM runs r,
     unnest(r.c_name, r.c_benchmark, r.c_metric, r.c_numerator,
	    r.c_denominator, r.c_ratio, r.c_ci_low, r.c_ci_high, r.c_level,
	    r.c_method, r.c_reason)
	     AS c(name, benchmark, metric, numerator, denominator, ratio,
		  ci_low, ci_high, level, method, reason);

COMMENT ON VIEW bench_results IS
	'one row per benchmark variant of a run: status, parameters, repeat windows (over run_results)';
COMMENT ON VIEW bench_metrics IS
	'one row per metric of a variant: raw samples in repeat order and their median (over run_results)';
COMMENT ON VIEW comparisons IS
	'ratio of two variants'' medians with its confidence interval, as the agent computed it (over runs)';

-- ---- the views over the old tables again ----

DO $$
DECLARE
	v record;
	s text;
BEGIN
	FOR v IN SELECT * FROM fleetbench_010_views ORDER BY depth LOOP
		EXECUTE format('CREATE VIEW %s%s AS %s', v.name,
			       CASE WHEN v.options IS NULL THEN ''
				    ELSE ' WITH (' ||
					 array_to_string(v.options, ', ') || ')'
			       END, v.definition);
		IF v.owner <> current_user THEN
			EXECUTE format('ALTER VIEW %s OWNER TO %I', v.name,
				       v.owner);
		END IF;
		FOREACH s IN ARRAY v.statements LOOP
			EXECUTE s;
		END LOOP;
	END LOOP;
END
$$;

-- ---- deleting runs; fleet_dirty marked once per statement ----

-- The commit-time triggers of 004 and 005: fleetbench_ingest_end() does
-- their work.
DROP TRIGGER runs_figures ON runs;
DROP TRIGGER runs_alert_check ON runs;
DROP FUNCTION fleetbench_run_figures_add();
DROP FUNCTION fleetbench_alert_trigger();

-- A run's results and figures go with it (there is no foreign key to
-- cascade). Updating a run's run_id or started_at is not supported.
CREATE FUNCTION fleetbench_runs_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'TRUNCATE' THEN
		TRUNCATE run_results, run_figures;
		RETURN NULL;
	END IF;
	DELETE FROM run_results AS v USING fleetbench_old_runs AS o
	WHERE v.run_id = o.run_id AND v.started_at = o.started_at;
	DELETE FROM run_figures AS f USING fleetbench_old_runs AS o
	WHERE f.run_id = o.run_id;
	RETURN NULL;
END
$$;

CREATE TRIGGER runs_delete_results AFTER DELETE ON runs
	REFERENCING OLD TABLE AS fleetbench_old_runs
	FOR EACH STATEMENT EXECUTE FUNCTION fleetbench_runs_deleted();
CREATE TRIGGER runs_truncate_results AFTER TRUNCATE ON runs
	FOR EACH STATEMENT EXECUTE FUNCTION fleetbench_runs_deleted();

/*
 * As fleetbench_mark() of 008, for all the rows of a statement at once:
 * marks each instance type, kernel and method of the run_figures rows
 * that a statement added, changed or removed (its transition table
 * fleetbench_figures), unless a row is there already and no refresh is
 * under way (see fleet_dirty).
 */
CREATE FUNCTION fleetbench_mark_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	-- held until commit when no refresh is under way
	calm boolean := pg_try_advisory_xact_lock_shared(112723185853042);
BEGIN
	INSERT INTO fleet_dirty (provider, instance_type, kernel_release,
				 method)
	SELECT DISTINCT f.provider, f.instance_type, f.kernel_release, f.method
	FROM fleetbench_figures AS f
	WHERE NOT calm OR NOT EXISTS (
		SELECT 1 FROM fleet_dirty AS d
		WHERE d.provider = f.provider
		      AND d.instance_type = f.instance_type
		      AND d.kernel_release = f.kernel_release
		      AND d.method = f.method);
	RETURN NULL;
END
$$;

DROP TRIGGER run_figures_dirty ON run_figures;
-- (a trigger with a transition table takes one event, and one table)
CREATE TRIGGER run_figures_dirty_insert AFTER INSERT ON run_figures
	REFERENCING NEW TABLE AS fleetbench_figures
	FOR EACH STATEMENT EXECUTE FUNCTION fleetbench_mark_changed();
CREATE TRIGGER run_figures_dirty_update_old AFTER UPDATE ON run_figures
	REFERENCING OLD TABLE AS fleetbench_figures
	FOR EACH STATEMENT EXECUTE FUNCTION fleetbench_mark_changed();
CREATE TRIGGER run_figures_dirty_update_new AFTER UPDATE ON run_figures
	REFERENCING NEW TABLE AS fleetbench_figures
	FOR EACH STATEMENT EXECUTE FUNCTION fleetbench_mark_changed();
CREATE TRIGGER run_figures_dirty_delete AFTER DELETE ON run_figures
	REFERENCING OLD TABLE AS fleetbench_figures
	FOR EACH STATEMENT EXECUTE FUNCTION fleetbench_mark_changed();

-- ==== functions (move to schema/functions/20_ingest.sql) ====

-- Raises the error for a malformed report with SQLSTATE state (class 22
-- or 23: the report is at fault), naming the problem.
CREATE OR REPLACE FUNCTION fleetbench_reject_as(state text, problem text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'fleetbench_ingest: %', problem USING ERRCODE = state;
END
$$;

/*
 * fleetbench_ingest_run(...) stores one report given as typed parameters
 * (the contract of docs/schema.md; the collector sends them in binary)
 * and returns true, or returns false and stores nothing when a run with
 * its run_id is already stored. _end arrays are cumulative 1-based ends:
 * item i owns elements end[i-1]+1 .. end[i]; m_sample_end restarts at each
 * variant. caps_present false: the typed capability columns are read
 * from probe, as migration 008 did. A malformed report raises SQLSTATE
 * class 22 or 23 naming what is wrong. The run is queued for
 * fleetbench_ingest_end(), which the caller runs once before COMMIT.
 */
CREATE OR REPLACE FUNCTION fleetbench_ingest_run(
	run_id uuid, schema_version integer, agent_version text,
	started_ms bigint, finished_ms bigint,
	provider text, instance_type text, region text,
	provider_source text, instance_type_source text, region_source text,
	hostname text, machine_id text,
	kernel_release text, kernel_version text, kernel_cmdline text,
	profile text, seed bigint,
	probe text,
	caps_present boolean,
	thp_enabled text, thp_defrag text, thp_shmem_enabled text,
	hugepage_size_kb bigint[], hugepage_nr bigint[], hugepage_free bigint[],
	io_uring_disabled integer, io_uring_setup text,
	io_uring_setup_errno integer, sqpoll text, sqpoll_errno integer,
	io_uring_opcodes text[], io_uring_features text[],
	vcpus integer, memory_kb bigint, cpu_model text,
	vm text, container text,
	method_key text, method_profile text, repeats bigint,
	chase_bytes bigint, chase_accesses bigint, fault_bytes bigint,
	file_bytes bigint, io_ms bigint, iodepth bigint,
	seq_bytes bigint, seq_block bigint, fs_increments bigint,
	method_only text[], randread_file boolean,
	c_name text[], c_benchmark text[], c_metric text[],
	c_numerator text[], c_denominator text[], c_ratio double precision[],
	c_ci_low double precision[], c_ci_high double precision[],
	c_level double precision[], c_method text[], c_reason text[],
	v_benchmark text[], v_variant text[], v_status text[], v_reason text[],
	v_param_end integer[], p_key text[], p_kind text[], p_value text[],
	v_window_end integer[], w_steal_pct double precision[],
	w_loadavg1 double precision[], w_wall_s double precision[],
	w_noisy boolean[],
	v_metric_end integer[], m_metric text[], m_unit text[],
	m_median double precision[], m_sample_end integer[],
	v_sample_end integer[], samples double precision[])
RETURNS boolean
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	started timestamptz; -- the partition key of run_results
	mkey text; -- the run's method key
	bare boolean; -- its methods row has no parameters
	p jsonb; -- the probe
	nv integer := coalesce(cardinality(v_benchmark), 0);
	nc integer := coalesce(cardinality(c_name), 0);
	problem text;
	state text;
	-- the typed capabilities, from caps or the probe
	t_thp_enabled text; t_thp_defrag text; t_thp_shmem text;
	t_sizes integer[]; t_nr bigint[]; t_free bigint[]; t_1g boolean;
	t_disabled integer; t_setup text; t_setup_errno integer;
	t_sqpoll text; t_sqpoll_errno integer; t_opcodes text[];
	t_features text[]; t_vcpus integer; t_memory bigint; t_cpu text;
	t_vm text; t_container text;
BEGIN
	started := timestamptz 'epoch' + started_ms * interval '1 millisecond';
	p := probe::jsonb;

	-- the arrays line up: one cheap test, then the slow path says how
	IF coalesce(cardinality(v_variant), 0) <> nv
	   OR coalesce(cardinality(v_status), 0) <> nv
	   OR coalesce(cardinality(v_reason), 0) <> nv
	   OR coalesce(cardinality(v_param_end), 0) <> nv
	   OR coalesce(cardinality(v_window_end), 0) <> nv
	   OR coalesce(cardinality(v_metric_end), 0) <> nv
	   OR coalesce(cardinality(v_sample_end), 0) <> nv
	   OR coalesce(v_param_end[nv], 0) <> coalesce(cardinality(p_key), 0)
	   OR coalesce(cardinality(p_kind), 0) <> coalesce(cardinality(p_key), 0)
	   OR coalesce(cardinality(p_value), 0) <> coalesce(cardinality(p_key), 0)
	   OR coalesce(v_window_end[nv], 0) <> coalesce(cardinality(w_steal_pct), 0)
	   OR coalesce(cardinality(w_loadavg1), 0) <> coalesce(cardinality(w_steal_pct), 0)
	   OR coalesce(cardinality(w_wall_s), 0) <> coalesce(cardinality(w_steal_pct), 0)
	   OR coalesce(cardinality(w_noisy), 0) <> coalesce(cardinality(w_steal_pct), 0)
	   OR coalesce(v_metric_end[nv], 0) <> coalesce(cardinality(m_metric), 0)
	   OR coalesce(cardinality(m_unit), 0) <> coalesce(cardinality(m_metric), 0)
	   OR coalesce(cardinality(m_median), 0) <> coalesce(cardinality(m_metric), 0)
	   OR coalesce(cardinality(m_sample_end), 0) <> coalesce(cardinality(m_metric), 0)
	   OR coalesce(v_sample_end[nv], 0) <> coalesce(cardinality(samples), 0)
	   OR array_position(v_benchmark, NULL) IS NOT NULL
	   OR array_position(v_variant, NULL) IS NOT NULL
	   OR array_position(v_param_end, NULL) IS NOT NULL
	   OR array_position(v_window_end, NULL) IS NOT NULL
	   OR array_position(v_metric_end, NULL) IS NOT NULL
	   OR array_position(v_sample_end, NULL) IS NOT NULL
	   OR array_position(m_metric, NULL) IS NOT NULL
	   OR array_position(m_unit, NULL) IS NOT NULL
	   OR array_position(m_sample_end, NULL) IS NOT NULL
	   OR array_position(p_key, NULL) IS NOT NULL
	   OR array_position(p_kind, NULL) IS NOT NULL
	   OR array_position(p_value, NULL) IS NOT NULL THEN
		SELECT x.state, x.problem INTO state, problem
		FROM (VALUES
			(1, v_benchmark IS NOT NULL AND array_position(v_benchmark, NULL) IS NOT NULL,
			 '23502', format('variant %s has no benchmark', array_position(v_benchmark, NULL))),
			(2, v_variant IS NOT NULL AND array_position(v_variant, NULL) IS NOT NULL,
			 '23502', format('variant %s of %s has no variant name', array_position(v_variant, NULL),
					 v_benchmark[array_position(v_variant, NULL)])),
			(3, m_metric IS NOT NULL AND array_position(m_metric, NULL) IS NOT NULL,
			 '23502', format('metric %s has no "metric" name', array_position(m_metric, NULL))),
			(4, m_unit IS NOT NULL AND array_position(m_unit, NULL) IS NOT NULL,
			 '23502', format('metric %s has no "unit"', coalesce(
				m_metric[array_position(m_unit, NULL)],
				array_position(m_unit, NULL)::text))),
			(5, p_key IS NOT NULL AND (array_position(p_key, NULL) IS NOT NULL
				OR array_position(p_kind, NULL) IS NOT NULL
				OR array_position(p_value, NULL) IS NOT NULL),
			 '23502', 'a parameter has no key, kind or value'),
			(9, true, '22023', format(
				'the report''s arrays do not line up: %s variants (v_benchmark), ends of parameters %s of %s (p_key), windows %s of %s (w_steal_pct), metrics %s of %s (m_metric), samples %s of %s (samples)',
				nv, v_param_end[nv], cardinality(p_key),
				v_window_end[nv], cardinality(w_steal_pct),
				v_metric_end[nv], cardinality(m_metric),
				v_sample_end[nv], cardinality(samples))))
		     AS x(n, bad, state, problem)
		WHERE x.bad
		ORDER BY x.n LIMIT 1;
		PERFORM fleetbench_reject_as(state, problem);
	END IF;
	IF coalesce(cardinality(c_benchmark), 0) <> nc
	   OR coalesce(cardinality(c_metric), 0) <> nc
	   OR coalesce(cardinality(c_numerator), 0) <> nc
	   OR coalesce(cardinality(c_denominator), 0) <> nc
	   OR coalesce(cardinality(c_ratio), 0) <> nc
	   OR coalesce(cardinality(c_ci_low), 0) <> nc
	   OR coalesce(cardinality(c_ci_high), 0) <> nc
	   OR coalesce(cardinality(c_level), 0) <> nc
	   OR coalesce(cardinality(c_method), 0) <> nc
	   OR coalesce(cardinality(c_reason), 0) <> nc THEN
		PERFORM fleetbench_reject_as('22023', format(
			'the comparisons'' arrays do not line up with c_name (%s)',
			nc));
	END IF;

	-- ends that never step back, sample ends within their variant,
	-- each variant, metric of a variant and comparison named once,
	-- parameter values that bench_results can read back as JSON: one
	-- statement, the first problem found
	IF nv > 0 OR nc > 0 THEN
		SELECT x.state, x.problem INTO state, problem
		FROM (SELECT '22023' AS state, CASE
			WHEN v_param_end <> ARRAY(SELECT unnest(v_param_end) ORDER BY 1)
			     OR v_param_end[1] < 0 THEN 'v_param_end steps back'
			WHEN v_window_end <> ARRAY(SELECT unnest(v_window_end) ORDER BY 1)
			     OR v_window_end[1] < 0 THEN 'v_window_end steps back'
			WHEN v_metric_end <> ARRAY(SELECT unnest(v_metric_end) ORDER BY 1)
			     OR v_metric_end[1] < 0 THEN 'v_metric_end steps back'
			WHEN v_sample_end <> ARRAY(SELECT unnest(v_sample_end) ORDER BY 1)
			     OR v_sample_end[1] < 0 THEN 'v_sample_end steps back'
			END AS problem
		      UNION ALL
		      SELECT '23505', coalesce(
			(SELECT format('benchmark variant %s/%s is listed twice', b, v)
			 FROM unnest(v_benchmark, v_variant) AS x(b, v)
			 GROUP BY b, v HAVING count(*) > 1 LIMIT 1),
			(SELECT format('comparison %s is listed twice', c)
			 FROM unnest(c_name) AS c
			 GROUP BY c HAVING count(*) > 1 LIMIT 1),
			(SELECT format('metric %s of %s/%s is listed twice',
				       m.metric, v.b, v.v)
			 FROM unnest(v_benchmark, v_variant, v_metric_end)
				 WITH ORDINALITY AS v(b, v, e, i),
			      unnest(m_metric[coalesce(v_metric_end[v.i - 1], 0) + 1
					      : v.e]) AS m(metric)
			 GROUP BY v.i, v.b, v.v, m.metric HAVING count(*) > 1
			 LIMIT 1))
		      UNION ALL
		      SELECT '22023',
			(SELECT format('the sample ends of %s/%s do not cover its %s samples (m_sample_end %s)',
				       v.b, v.v, v.se - v.se0, v.s::text)
			 FROM (SELECT u.b, u.v, u.se,
				      coalesce(v_sample_end[u.i - 1], 0) AS se0,
				      m_sample_end[coalesce(v_metric_end[u.i - 1], 0) + 1
						   : u.me] AS s
			       FROM unnest(v_benchmark, v_variant, v_metric_end,
					   v_sample_end)
				       WITH ORDINALITY AS u(b, v, me, se, i)) AS v
			 WHERE CASE WHEN cardinality(v.s) > 0
				    THEN v.s <> ARRAY(SELECT unnest(v.s) ORDER BY 1)
					 OR v.s[1] < 0
					 OR v.s[cardinality(v.s)] <> v.se - v.se0
				    ELSE v.se <> v.se0 END
			 LIMIT 1)
		      UNION ALL
		      SELECT '22023',
			(SELECT format('parameter %s: %s is not %s', x.k, x.v,
				       CASE x.t WHEN 'i' THEN 'an integer'
						WHEN 'd' THEN 'a finite number'
						WHEN 'b' THEN 'true or false'
						ELSE 'of a kind i, s, d or b' END)
			 FROM unnest(p_key, p_kind, p_value) AS x(k, t, v)
			 WHERE CASE x.t
				WHEN 's' THEN false
				WHEN 'i' THEN x.v !~ '^-?(0|[1-9][0-9]*)$'
				WHEN 'd' THEN x.v !~ '^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$'
				WHEN 'b' THEN x.v NOT IN ('true', 'false')
				-- JSON (jsonb reports only): a bad one fails the cast
				WHEN 'j' THEN x.v::jsonb IS NULL
				ELSE true END
			 LIMIT 1)) AS x
		WHERE x.problem IS NOT NULL
		LIMIT 1;
		IF problem IS NOT NULL THEN
			PERFORM fleetbench_reject_as(state, problem);
		END IF;
	END IF;

	-- the method: stored once per key; a report without one (an agent
	-- before 008) is keyed by its profile alone, or 'unknown'
	mkey := coalesce(method_key, nullif(profile, ''), 'unknown');
	-- one index probe when the method is known, as it mostly is
	SELECT m.repeats IS NULL INTO bare FROM methods AS m WHERE m.key = mkey;
	IF NOT FOUND AND method_key IS NULL THEN
		-- a report without a method (an agent before 008) is keyed
		-- by its profile alone, or 'unknown'
		INSERT INTO methods (key, profile) VALUES (mkey, mkey)
		ON CONFLICT (key) DO NOTHING;
	ELSIF NOT FOUND THEN
		INSERT INTO methods (key, profile, repeats, chase_bytes,
				     chase_accesses, fault_bytes, file_bytes,
				     io_ms, iodepth, seq_bytes, seq_block,
				     fs_increments, "only", randread_file)
		VALUES (mkey, method_profile, repeats, chase_bytes,
			chase_accesses, fault_bytes, file_bytes, io_ms, iodepth,
			seq_bytes, seq_block, fs_increments, method_only,
			randread_file)
		ON CONFLICT (key) DO NOTHING;
	ELSIF bare AND method_key IS NOT NULL AND repeats IS NOT NULL THEN
		-- a key first stored from a profile alone gains its
		-- parameters
		UPDATE methods AS m
		SET repeats = fleetbench_ingest_run.repeats,
		    chase_bytes = fleetbench_ingest_run.chase_bytes,
		    chase_accesses = fleetbench_ingest_run.chase_accesses,
		    fault_bytes = fleetbench_ingest_run.fault_bytes,
		    file_bytes = fleetbench_ingest_run.file_bytes,
		    io_ms = fleetbench_ingest_run.io_ms,
		    iodepth = fleetbench_ingest_run.iodepth,
		    seq_bytes = fleetbench_ingest_run.seq_bytes,
		    seq_block = fleetbench_ingest_run.seq_block,
		    fs_increments = fleetbench_ingest_run.fs_increments,
		    "only" = method_only,
		    randread_file = fleetbench_ingest_run.randread_file
		WHERE m.key = mkey AND m.repeats IS NULL;
	END IF;

	IF caps_present THEN
		t_thp_enabled := thp_enabled;
		t_thp_defrag := thp_defrag;
		t_thp_shmem := thp_shmem_enabled;
		t_sizes := hugepage_size_kb;
		t_nr := hugepage_nr;
		t_free := hugepage_free;
		t_1g := 1048576 = ANY (hugepage_size_kb);
		t_disabled := io_uring_disabled;
		t_setup := io_uring_setup;
		t_setup_errno := io_uring_setup_errno;
		t_sqpoll := sqpoll;
		t_sqpoll_errno := sqpoll_errno;
		t_opcodes := io_uring_opcodes;
		t_features := io_uring_features;
		t_vcpus := vcpus;
		t_memory := memory_kb;
		t_cpu := cpu_model;
		t_vm := vm;
		t_container := container;
	ELSE
		-- as 008's fleetbench_ingest() read them from the probe
		SELECT fleetbench_json_text(x.thp_enabled),
		       fleetbench_json_text(x.thp_defrag),
		       fleetbench_json_text(x.thp_shmem),
		       x.sizes_kb, x.nr, x.free,
		       coalesce(fleetbench_json_bool(x.size_1g_present),
				1048576 = ANY (x.sizes_kb)),
		       fleetbench_json_int(x.io_uring_disabled, 0, 2147483647),
		       fleetbench_json_text(x.io_uring_setup),
		       fleetbench_json_int(x.io_uring_setup_errno, 0, 4095),
		       fleetbench_json_text(x.sqpoll),
		       fleetbench_json_int(x.sqpoll_errno, 0, 4095),
		       fleetbench_json_text_array(x.opcodes),
		       fleetbench_json_text_array(x.features),
		       fleetbench_json_int(x.vcpus, 1, 2147483647),
		       fleetbench_json_int(x.memory_kb, 0, 9223372036854775807),
		       fleetbench_json_text(x.cpu),
		       fleetbench_json_text(x.vm),
		       fleetbench_json_text(x.container)
		INTO t_thp_enabled, t_thp_defrag, t_thp_shmem, t_sizes, t_nr,
		     t_free, t_1g, t_disabled, t_setup, t_setup_errno, t_sqpoll,
		     t_sqpoll_errno, t_opcodes, t_features, t_vcpus, t_memory,
		     t_cpu, t_vm, t_container
		-- the probe items first, as plain columns: the
		-- fleetbench_json_*() helpers are inlined only when their
		-- argument is that cheap (OFFSET 0 keeps it so)
		FROM (SELECT p #> '{thp,enabled,selected}' AS thp_enabled,
			     p #> '{thp,defrag,selected}' AS thp_defrag,
			     p #> '{thp,shmem_enabled,selected}' AS thp_shmem,
			     h.sizes_kb, h.nr, h.free,
			     p #> '{hugetlb,size_1g_present}' AS size_1g_present,
			     p #> '{io_uring,disabled}' AS io_uring_disabled,
			     p #> '{io_uring,setup}' AS io_uring_setup,
			     p #> '{io_uring,setup_errno}' AS io_uring_setup_errno,
			     p #> '{io_uring,sqpoll}' AS sqpoll,
			     p #> '{io_uring,sqpoll_errno}' AS sqpoll_errno,
			     p #> '{io_uring,opcodes}' AS opcodes,
			     p #> '{io_uring,features}' AS features,
			     p #> '{host,vcpus_online}' AS vcpus,
			     p #> '{host,memory_total_kb}' AS memory_kb,
			     p #> '{host,cpu_model}' AS cpu,
			     p #> '{virt,vm,name}' AS vm,
			     p #> '{virt,container,name}' AS container
		      FROM (SELECT CASE WHEN jsonb_typeof(p #> '{hugetlb,sizes}') = 'array'
				   THEN array_agg(s.kb::integer ORDER BY s.kb) END
					   AS sizes_kb,
				   CASE WHEN jsonb_typeof(p #> '{hugetlb,sizes}') = 'array'
				   THEN array_agg(s.nr ORDER BY s.kb) END AS nr,
				   CASE WHEN jsonb_typeof(p #> '{hugetlb,sizes}') = 'array'
				   THEN array_agg(s.free ORDER BY s.kb) END AS free
			    FROM (SELECT fleetbench_json_int(e->'size_kb', 1,
							     2147483647) AS kb,
					 fleetbench_json_int(e->'nr', 0,
						9223372036854775807) AS nr,
					 fleetbench_json_int(e->'free', 0,
						9223372036854775807) AS free
				  FROM jsonb_array_elements(
					CASE WHEN jsonb_typeof(p #> '{hugetlb,sizes}') = 'array'
					     THEN p #> '{hugetlb,sizes}'
					     ELSE '[]' END) AS e) AS s
			    WHERE s.kb IS NOT NULL) AS h
		      OFFSET 0) AS x;
		-- an array with no size is '{}', as 008 stored it
		IF jsonb_typeof(p #> '{hugetlb,sizes}') = 'array' AND t_sizes IS NULL THEN
			t_sizes := '{}';
			t_nr := '{}';
			t_free := '{}';
			t_1g := coalesce(fleetbench_json_bool(p #> '{hugetlb,size_1g_present}'),
					 false);
		END IF;
	END IF;

	INSERT INTO runs (run_id, started_at, finished_at, schema_version,
			  agent_version, provider, instance_type, region,
			  provider_source, instance_type_source, region_source,
			  hostname, machine_id, kernel_release, kernel_version,
			  kernel_cmdline, profile, seed, thp_enabled, thp_defrag,
			  hugepage_sizes_kb, hugepage_1g_present,
			  io_uring_disabled, io_uring_setup, io_uring_setup_errno,
			  sqpoll, sqpoll_errno, io_uring_opcodes,
			  io_uring_features, vcpus, memory_kb, vm, container,
			  probe, method, thp_shmem_enabled, hugepage_nr,
			  hugepage_free, cpu_model, c_name, c_benchmark,
			  c_metric, c_numerator, c_denominator, c_ratio,
			  c_ci_low, c_ci_high, c_level, c_method, c_reason)
	VALUES (run_id, started,
		timestamptz 'epoch' + finished_ms * interval '1 millisecond',
		schema_version, agent_version,
		coalesce(nullif(provider, ''), 'unknown'),
		coalesce(nullif(instance_type, ''), 'unknown'),
		coalesce(nullif(region, ''), 'unknown'),
		provider_source, instance_type_source, region_source,
		hostname, machine_id, kernel_release, kernel_version,
		kernel_cmdline, profile, seed, t_thp_enabled, t_thp_defrag,
		t_sizes, t_1g, t_disabled, t_setup, t_setup_errno, t_sqpoll,
		t_sqpoll_errno, t_opcodes, t_features, t_vcpus, t_memory,
		t_vm, t_container, p, mkey, t_thp_shmem, t_nr, t_free, t_cpu,
		CASE WHEN nc > 0 THEN c_name END,
		CASE WHEN nc > 0 THEN c_benchmark END,
		CASE WHEN nc > 0 THEN c_metric END,
		CASE WHEN nc > 0 THEN c_numerator END,
		CASE WHEN nc > 0 THEN c_denominator END,
		CASE WHEN nc > 0 THEN c_ratio END,
		CASE WHEN nc > 0 THEN c_ci_low END,
		CASE WHEN nc > 0 THEN c_ci_high END,
		CASE WHEN nc > 0 THEN c_level END,
		CASE WHEN nc > 0 THEN c_method END,
		CASE WHEN nc > 0 THEN c_reason END)
	ON CONFLICT (run_id) DO NOTHING;
	IF NOT FOUND THEN
		RETURN false;
	END IF;

	IF nv > 0 THEN
		INSERT INTO run_results
		VALUES (fleetbench_ingest_run.run_id, started, v_benchmark,
			v_variant, v_status, v_reason, v_param_end, p_key,
			array_to_string(p_kind, ''), p_value, v_window_end,
			w_steal_pct, w_loadavg1, w_wall_s, w_noisy, v_metric_end,
			m_metric, m_unit, m_median, m_sample_end, v_sample_end,
			samples);
	END IF;

	-- for fleetbench_ingest_end()
	IF to_regclass('pg_temp.fleetbench_ingested') IS NULL THEN
		CREATE TEMPORARY TABLE fleetbench_ingested (run_id uuid NOT NULL)
			ON COMMIT DELETE ROWS;
	END IF;
	INSERT INTO pg_temp.fleetbench_ingested VALUES (fleetbench_ingest_run.run_id);
	RETURN true;
END
$$;

/*
 * The commit-time work for the runs given: their run_figures rows (which
 * mark fleet_dirty), then the alert check of each run whose host has a
 * run on another kernel, oldest first. An alert check that fails is
 * logged and kept in alert_errors, never fails the caller. Callable by
 * hand for runs stored without fleetbench_ingest_run().
 */
CREATE OR REPLACE FUNCTION fleetbench_runs_stored(ids uuid[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	r record;
	state text;
	message text;
BEGIN
	INSERT INTO run_figures
	SELECT * FROM run_figures_live WHERE run_id = ANY (ids)
	ON CONFLICT (run_id) DO NOTHING;

	-- the host's first and last kernel: two probes of
	-- runs_host_kernel_idx
	FOR r IN SELECT n.run_id FROM runs AS n
		 WHERE n.run_id = ANY (ids)
		   AND ((SELECT min(o.kernel_release) FROM runs AS o
			 WHERE o.machine_id = n.machine_id) < n.kernel_release
			OR (SELECT max(o.kernel_release) FROM runs AS o
			    WHERE o.machine_id = n.machine_id) > n.kernel_release)
		 ORDER BY n.started_at, n.run_id
	LOOP
		BEGIN
			PERFORM fleetbench_alert_check(r.run_id);
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE,
						message = MESSAGE_TEXT;
			RAISE WARNING 'fleetbench: alert check of run % failed: %',
				r.run_id, message;
			INSERT INTO alert_errors (run_id, sqlstate, message)
			VALUES (r.run_id, state, message);
		END;
	END LOOP;
END
$$;

/*
 * Does the commit-time work (fleetbench_runs_stored) once for every run
 * fleetbench_ingest_run() stored in this transaction and not yet
 * processed. The collector runs it once per batch, before COMMIT.
 */
CREATE OR REPLACE FUNCTION fleetbench_ingest_end() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	ids uuid[];
BEGIN
	IF to_regclass('pg_temp.fleetbench_ingested') IS NULL THEN
		RETURN;
	END IF;
	WITH gone AS (DELETE FROM pg_temp.fleetbench_ingested RETURNING run_id)
	SELECT array_agg(run_id) INTO ids FROM gone;
	IF ids IS NOT NULL THEN
		PERFORM fleetbench_runs_stored(ids);
	END IF;
END
$$;

/*
 * fleetbench_ingest(report jsonb) stores one report given as jsonb (the
 * contract in docs/schema.md): it checks the report as 008 did, converts
 * it to fleetbench_ingest_run()'s parameters, stores it, and does the
 * commit-time work (fleetbench_ingest_end). True when stored, false when
 * a run with its run_id already was.
 */
CREATE OR REPLACE FUNCTION fleetbench_ingest(report jsonb) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	host jsonb := report->'host';
	kernel jsonb := report->'kernel';
	mt methods; -- the method's parameters
	b record; -- the variants' arrays
	c record; -- the comparisons' arrays
	stored boolean;
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
	IF jsonb_typeof(report->'probe') IS DISTINCT FROM 'object' THEN
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
	IF jsonb_typeof(report->'method') = 'object' THEN
		IF jsonb_typeof(report #> '{method,key}') IS DISTINCT FROM 'string'
		   OR jsonb_typeof(report #> '{method,profile}')
		      IS DISTINCT FROM 'string' THEN
			PERFORM fleetbench_reject(
				'method.key and method.profile must be strings');
		END IF;
		mt := jsonb_populate_record(NULL::methods, report->'method');
	ELSIF jsonb_typeof(report->'method') IS DISTINCT FROM 'null'
	      AND report ? 'method' THEN
		PERFORM fleetbench_reject(format('method must be an object, not %s',
			jsonb_typeof(report->'method')));
	END IF;

	-- The variants, flattened in run order; jsonb_to_recordset()
	-- converts the samples to float8[] (and refuses anything but numbers).
	WITH v AS MATERIALIZED (
		SELECT t.pos, t.benchmark, t.variant,
		       CASE WHEN t.failure IS NOT NULL THEN 'failed'
			    WHEN t.skip_reason IS NOT NULL THEN 'skipped'
			    ELSE 'ok' END AS status,
		       coalesce(t.failure, t.skip_reason) AS reason,
		       t.failure IS NOT NULL AND t.skip_reason IS NOT NULL AS both,
		       t.parameters, t.metrics, t.windows
		FROM ROWS FROM (jsonb_to_recordset(
				fleetbench_array(report->'benchmarks', 'benchmarks'))
				AS (benchmark text, variant text, skip_reason text,
				    failure text, parameters jsonb, metrics jsonb,
				    windows jsonb))
		     WITH ORDINALITY AS t(benchmark, variant, skip_reason,
					  failure, parameters, metrics, windows,
					  pos)
	), p AS MATERIALIZED (
		SELECT v.pos, e.key, e.ord,
		       CASE jsonb_typeof(e.value)
			    WHEN 'string' THEN 's' WHEN 'boolean' THEN 'b'
			    WHEN 'number' THEN CASE WHEN e.value::text ~ '^-?[0-9]+$'
						    THEN 'i' ELSE 'd' END
			    ELSE 'j' END AS kind,
		       CASE WHEN jsonb_typeof(e.value) = 'string'
			    THEN e.value #>> '{}' ELSE e.value::text END AS value
		FROM v, jsonb_each(coalesce(v.parameters, '{}'))
			WITH ORDINALITY AS e(key, value, ord)
	), w AS MATERIALIZED (
		SELECT v.pos, x.*
		FROM v, ROWS FROM (jsonb_to_recordset(
				CASE WHEN jsonb_typeof(v.windows) = 'array'
				     THEN v.windows
				     ELSE fleetbench_array(v.windows, 'windows') END)
				AS (steal_pct double precision,
				    loadavg1 double precision,
				    wall_s double precision, noisy boolean))
			WITH ORDINALITY AS x(steal_pct, loadavg1, wall_s, noisy,
					     ord)
	), m AS MATERIALIZED (
		SELECT v.pos, x.ord, x.metric, x.unit,
		       coalesce(x.samples, '{}') AS samples,
		       (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY s)
			FROM unnest(x.samples) AS s) AS median,
		       (sum(coalesce(cardinality(x.samples), 0))
				OVER (PARTITION BY v.pos ORDER BY x.ord))::integer
			       AS sample_end
		FROM v, ROWS FROM (jsonb_to_recordset(
				CASE WHEN jsonb_typeof(v.metrics) = 'array'
				     THEN v.metrics
				     ELSE fleetbench_array(v.metrics, 'metrics') END)
				AS (metric text, unit text,
				    samples double precision[]))
			WITH ORDINALITY AS x(metric, unit, samples, ord)
	), ends AS (
		SELECT v.pos,
		       (sum(coalesce((SELECT count(*) FROM p WHERE p.pos = v.pos), 0))
				OVER o)::integer AS pe,
		       (sum(coalesce((SELECT count(*) FROM w WHERE w.pos = v.pos), 0))
				OVER o)::integer AS we,
		       (sum(coalesce((SELECT count(*) FROM m WHERE m.pos = v.pos), 0))
				OVER o)::integer AS me,
		       (sum(coalesce((SELECT sum(cardinality(m.samples))
				      FROM m WHERE m.pos = v.pos), 0))
				OVER o)::integer AS se
		FROM v WINDOW o AS (ORDER BY v.pos)
	)
	SELECT (SELECT array_agg(v.benchmark ORDER BY v.pos) FROM v) AS benchmark,
	       (SELECT array_agg(v.variant ORDER BY v.pos) FROM v) AS variant,
	       (SELECT array_agg(v.status ORDER BY v.pos) FROM v) AS status,
	       (SELECT array_agg(v.reason ORDER BY v.pos) FROM v) AS reason,
	       (SELECT format('benchmark %s/%s has both a skip_reason and a failure',
			      v.benchmark, v.variant)
		FROM v WHERE v.both ORDER BY v.pos LIMIT 1) AS both,
	       (SELECT array_agg(pe ORDER BY pos) FROM ends) AS param_end,
	       (SELECT array_agg(we ORDER BY pos) FROM ends) AS window_end,
	       (SELECT array_agg(me ORDER BY pos) FROM ends) AS metric_end,
	       (SELECT array_agg(se ORDER BY pos) FROM ends) AS sample_end,
	       (SELECT array_agg(p.key ORDER BY p.pos, p.ord) FROM p) AS p_key,
	       (SELECT array_agg(p.kind ORDER BY p.pos, p.ord) FROM p) AS p_kind,
	       (SELECT array_agg(p.value ORDER BY p.pos, p.ord) FROM p) AS p_value,
	       (SELECT array_agg(w.steal_pct ORDER BY w.pos, w.ord) FROM w) AS w_steal_pct,
	       (SELECT array_agg(w.loadavg1 ORDER BY w.pos, w.ord) FROM w) AS w_loadavg1,
	       (SELECT array_agg(w.wall_s ORDER BY w.pos, w.ord) FROM w) AS w_wall_s,
	       (SELECT array_agg(w.noisy ORDER BY w.pos, w.ord) FROM w) AS w_noisy,
	       (SELECT array_agg(m.metric ORDER BY m.pos, m.ord) FROM m) AS m_metric,
	       (SELECT array_agg(m.unit ORDER BY m.pos, m.ord) FROM m) AS m_unit,
	       (SELECT array_agg(m.median ORDER BY m.pos, m.ord) FROM m) AS m_median,
	       (SELECT array_agg(m.sample_end ORDER BY m.pos, m.ord) FROM m)
		       AS m_sample_end,
	       (SELECT array_agg(s.x ORDER BY m.pos, m.ord, s.i)
		FROM m, unnest(m.samples) WITH ORDINALITY AS s(x, i)) AS samples
	INTO b;
	IF b.both IS NOT NULL THEN
		PERFORM fleetbench_reject_as('23514', b.both);
	END IF;

	SELECT array_agg(x.name ORDER BY x.ord) AS name,
	       array_agg(x.benchmark ORDER BY x.ord) AS benchmark,
	       array_agg(x.metric ORDER BY x.ord) AS metric,
	       array_agg(x.numerator ORDER BY x.ord) AS numerator,
	       array_agg(x.denominator ORDER BY x.ord) AS denominator,
	       array_agg(x.ratio ORDER BY x.ord) AS ratio,
	       array_agg(x.ci_low ORDER BY x.ord) AS ci_low,
	       array_agg(x.ci_high ORDER BY x.ord) AS ci_high,
	       array_agg(x.level ORDER BY x.ord) AS level,
	       array_agg(x.method ORDER BY x.ord) AS method,
	       array_agg(x.reason ORDER BY x.ord) AS reason
	INTO c
	FROM ROWS FROM (jsonb_to_recordset(fleetbench_array(
				report->'comparisons', 'comparisons'))
			AS (name text, benchmark text, metric text,
			    numerator text, denominator text,
			    ratio double precision, ci_low double precision,
			    ci_high double precision, level double precision,
			    method text, reason text))
	     WITH ORDINALITY AS x(name, benchmark, metric, numerator,
				  denominator, ratio, ci_low, ci_high, level,
				  method, reason, ord);

	stored := fleetbench_ingest_run(
		(report->>'run_id')::uuid,
		(report->>'schema_version')::integer,
		report->>'agent_version',
		(report->>'started_unix_ms')::bigint,
		(report->>'finished_unix_ms')::bigint,
		host->>'provider', host->>'instance_type', host->>'region',
		host->>'provider_source', host->>'instance_type_source',
		host->>'region_source',
		host->>'hostname', host->>'machine_id',
		kernel->>'release', kernel->>'version', kernel->>'cmdline',
		report->>'profile', (report->>'seed')::bigint,
		(report->'probe')::text,
		false,
		NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
		NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
		mt.key, mt.profile, mt.repeats, mt.chase_bytes,
		mt.chase_accesses, mt.fault_bytes, mt.file_bytes, mt.io_ms,
		mt.iodepth, mt.seq_bytes, mt.seq_block, mt.fs_increments,
		mt."only", mt.randread_file,
		c.name, c.benchmark, c.metric, c.numerator, c.denominator,
		c.ratio, c.ci_low, c.ci_high, c.level, c.method, c.reason,
		b.benchmark, b.variant, b.status, b.reason,
		b.param_end, b.p_key, b.p_kind, b.p_value,
		b.window_end, b.w_steal_pct, b.w_loadavg1, b.w_wall_s,
		b.w_noisy,
		b.metric_end, b.m_metric, b.m_unit, b.m_median, b.m_sample_end,
		b.sample_end, b.samples);
	PERFORM fleetbench_ingest_end();
	RETURN stored;
END
$$;

COMMENT ON FUNCTION fleetbench_ingest(jsonb) IS
	'stores one report given as jsonb (contract in docs/schema.md) through fleetbench_ingest_run(); true when stored, false when its run_id already was';

-- What one run says about the headline figures (the definition;
-- run_figures holds its rows): as 008 made it, read from runs and the
-- run's run_results row (of its month's partition) directly.
CREATE OR REPLACE VIEW run_figures_live AS
SELECT r.run_id, r.started_at, r.provider, r.instance_type, r.region,
       r.kernel_release, r.machine_id, r.hostname, r.vm, r.vcpus,
       r.thp_enabled,
       r.io_uring_setup = 'ok' AS iouring_ok,
       r.sqpoll = 'ok' AS sqpoll_ok,
       r.hugepage_1g_present AS hugepage_1g,
       coalesce(b.noisy, false) AS steal_flagged,
       r.c_ratio[array_position(r.c_name, 'thp_speedup')] AS thp_speedup,
       b.thp_huge_fraction,
       r.c_ratio[array_position(r.c_name, 'hugetlb_2m_speedup')]
	       AS hugetlb_2m_speedup,
       r.c_ratio[array_position(r.c_name, 'hugetlb_1g_speedup')]
	       AS hugetlb_1g_speedup,
       b.thp_fault_p99_us,
       r.c_ratio[array_position(r.c_name, 'iouring_vs_pread')]
	       AS iouring_vs_pread,
       r.c_ratio[array_position(r.c_name, 'iouring_vs_libaio')]
	       AS iouring_vs_libaio,
       b.iouring_iops, b.pread_iops,
       coalesce(b.failed, '{}') AS failed, r.method
FROM runs r
LEFT JOIN LATERAL (
	SELECT true = ANY (x.w_noisy) AS noisy, m.*
	FROM run_results x,
	     LATERAL (
		SELECT (SELECT array_agg(f.b || '/' || f.v ORDER BY f.i)
			FROM unnest(x.v_benchmark, x.v_variant, x.v_status)
				WITH ORDINALITY AS f(b, v, s, i)
			WHERE f.s = 'failed') AS failed,
		       max(x.m_median[v.me0 + k.j]) FILTER (
			       WHERE v.b = 'thp_chase' AND v.v = 'thp'
				     AND k.metric = 'huge_fraction')
			       AS thp_huge_fraction,
		       max(x.m_median[v.me0 + k.j]) FILTER (
			       WHERE v.b = 'thp_fault' AND v.v = 'thp'
				     AND k.metric = 'fault_p99_us')
			       AS thp_fault_p99_us,
		       max(x.m_median[v.me0 + k.j]) FILTER (
			       WHERE v.b = 'randread' AND v.v = 'io_uring'
				     AND k.metric = 'iops') AS iouring_iops,
		       max(x.m_median[v.me0 + k.j]) FILTER (
			       WHERE v.b = 'randread' AND v.v = 'pread'
				     AND k.metric = 'iops') AS pread_iops
		FROM (SELECT u.*, coalesce(x.v_metric_end[u.i - 1], 0) AS me0
		      FROM unnest(x.v_benchmark, x.v_variant, x.v_status,
				  x.v_metric_end)
			      WITH ORDINALITY AS u(b, v, s, me1, i)) AS v
		LEFT JOIN LATERAL unnest(x.m_metric[v.me0 + 1 : v.me1])
			WITH ORDINALITY AS k(metric, j) ON true) AS m
	WHERE x.run_id = r.run_id AND x.started_at = r.started_at) AS b ON true;

/*
 * fleetbench_results_partition(month) makes the partition of run_results
 * for the month holding `month` (UTC), named run_results_yYYYYmMM, unless it
 * exists, first moving that month's rows out of the default partition
 * (which would otherwise forbid the new one). Returns whether it made it.
 * Takes the table's ACCESS EXCLUSIVE lock for a moment: the collectors
 * wait, they do not fail.
 */
CREATE OR REPLACE FUNCTION fleetbench_results_partition(month date)
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	first timestamp := date_trunc('month', month::timestamp);
	lo timestamptz := first AT TIME ZONE 'UTC';
	hi timestamptz := (first + interval '1 month') AT TIME ZONE 'UTC';
	name text := to_char(first, '"run_results_y"YYYY"m"MM');
BEGIN
	IF to_regclass(name) IS NOT NULL THEN
		RETURN false;
	END IF;
	CREATE TEMPORARY TABLE fleetbench_move_results AS
		SELECT * FROM run_results_default
		WHERE started_at >= lo AND started_at < hi;
	DELETE FROM run_results_default
	WHERE started_at >= lo AND started_at < hi;
	EXECUTE format('CREATE TABLE %I PARTITION OF run_results FOR VALUES FROM (%L) TO (%L)',
		       name, lo, hi);
	INSERT INTO run_results SELECT * FROM fleetbench_move_results;
	DROP TABLE fleetbench_move_results;
	RETURN true;
END
$$;

/*
 * fleetbench_results_drop_before(before) drops the monthly partitions of
 * run_results that end on or before `before` (UTC): their results are gone,
 * their runs (with their comparisons) stay (DELETE FROM runs for those).
 * Returns how many months it dropped.
 */
CREATE OR REPLACE FUNCTION fleetbench_results_drop_before(before date)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
	name text;
	n integer := 0;
BEGIN
	FOR name IN
		SELECT c.relname
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'run_results'::regclass
		  AND c.relname ~ '^run_results_y[0-9]{4}m[0-9]{2}$'
		  AND to_date(substr(c.relname, length('run_results_y') + 1),
			      'YYYY"m"MM') + interval '1 month' <= before
		ORDER BY 1
	LOOP
		EXECUTE format('DROP TABLE %I', name);
		n := n + 1;
	END LOOP;
	RETURN n;
END
$$;

COMMENT ON FUNCTION fleetbench_results_partition(date) IS
	'makes the month''s partition of run_results, moving its rows out of the default partition';
COMMENT ON FUNCTION fleetbench_results_drop_before(date) IS
	'drops the monthly partitions of run_results that end on or before a date';
COMMENT ON FUNCTION fleetbench_ingest_run IS
	'stores one report given as typed parameters (contract in docs/schema.md); true when stored, false when its run_id already was';
COMMENT ON FUNCTION fleetbench_ingest_end() IS
	'does the commit-time work (run_figures, fleet_dirty, alert checks) for the runs this transaction stored';
