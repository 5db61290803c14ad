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
DROP FUNCTION fleetbench_mark_dirty();
DROP FUNCTION fleetbench_mark(text, text, text, text);
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
