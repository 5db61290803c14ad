-- SPDX-License-Identifier: MIT
-- `fleetbench compare --metric NAME`: the median over a group's runs of
-- any metric of any benchmark variant, found in bench_metrics by its name
-- as data. No function, view or CLI code names a metric here, so a new
-- benchmark or metric needs no SQL (docs/bench.md, "Adding a benchmark or
-- a metric"; tests/integration/test_metric.sh).
--
-- They read the legacy names only (run_figures through fleetbench_runs(),
-- bench_metrics), which stay whatever layout stores them.

/*
 * A metric's figure as compare --metric shows it: three decimals as the
 * headline figures, and three significant digits below 0.1 (a latency in
 * seconds would round to nothing).
 */
CREATE OR REPLACE FUNCTION fleetbench_round_metric(x double precision)
RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN x = 0 OR abs(x) >= 0.1 THEN round(x::numeric, 3)
		    ELSE round(x::numeric,
			       2 - floor(log(abs(x)::numeric))::integer)
	       END
$$;

/*
 * A metric name split into {benchmark, variant, metric}, the first two
 * NULL for a bare METRIC. Raises 22023 for anything else.
 */
CREATE OR REPLACE FUNCTION fleetbench_metric_name(name text)
RETURNS text[]
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	part text[] := string_to_array(name, '/');
BEGIN
	IF name IS NULL OR cardinality(part) NOT IN (1, 3) OR '' = ANY (part)
	THEN
		RAISE EXCEPTION 'metric: ''%'' is not BENCHMARK/VARIANT/METRIC (e.g. randread/io_uring/iops) nor a bare METRIC',
			coalesce(name, 'NULL')
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF cardinality(part) = 1 THEN
		RETURN ARRAY[NULL, NULL, part[1]];
	END IF;
	RETURN part;
END
$$;

-- filter with a "method" key for method_key when it names one method
-- (not NULL, not '*').
CREATE OR REPLACE FUNCTION fleetbench_filter_method(filter jsonb,
						    method_key text)
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN method_key IS NULL OR method_key = '*' THEN filter
		    ELSE coalesce(filter, '{}')
			 || jsonb_build_object('method', method_key)
	       END
$$;

/*
 * The runs of filter since since that measured the metric name (the
 * result of fleetbench_metric_name(); NULL: every metric) with a median:
 * one row per run and benchmark variant, with the run's keys. The runs
 * are materialized first, so the planner knows how many they are: a hash
 * join for many, an index scan of bench_metrics per run for a few (a
 * host's). The partition key is joined as a range, the same rows as an
 * equality: the planner prunes the months with it and estimates the join
 * from run_id alone (an equality on both columns of a CTE it takes for a
 * handful of rows, and sorts 700,000 to group them).
 */
CREATE OR REPLACE FUNCTION fleetbench_metric_runs(name text[], filter jsonb,
						  since timestamptz)
RETURNS TABLE (method text, provider text, instance_type text,
	       kernel_release text, region text, vm text, thp_enabled text,
	       vcpus integer, hostname text, machine_id text,
	       started_at timestamptz, benchmark text, variant text,
	       metric text, unit text, median double precision)
LANGUAGE sql STABLE AS $$
	WITH f AS MATERIALIZED (
		SELECT r.run_id, r.method, r.provider, r.instance_type,
		       r.kernel_release, r.region, r.vm, r.thp_enabled, r.vcpus,
		       r.hostname, r.machine_id, r.started_at
		FROM fleetbench_runs(filter, since) AS r)
	SELECT f.method, f.provider, f.instance_type, f.kernel_release,
	       f.region, f.vm, f.thp_enabled, f.vcpus, f.hostname,
	       f.machine_id, f.started_at, m.benchmark, m.variant, m.metric,
	       m.unit, m.median
	FROM f
	JOIN bench_metrics AS m
		ON m.run_id = f.run_id AND m.started_at >= f.started_at
		   AND m.started_at <= f.started_at
	WHERE (name[3] IS NULL OR m.metric = name[3])
	  AND (name[1] IS NULL OR (m.benchmark = name[1]
				   AND m.variant = name[2]))
	  AND m.median IS NOT NULL
	  AND (since IS NULL OR m.started_at >= since)
$$;

/*
 * fleet_compare_by() for one metric of bench_metrics: per group (by, as
 * compare's --by; filter and since as compare's), the runs whose variant
 * measured it, and the median over them of each run's median of the
 * metric with its distribution-free 95% interval (fleetbench_median_ci),
 * with the unit (a metric whose unit changed has a row per unit: medians
 * never mix units). metric_name is BENCHMARK/VARIANT/METRIC, or a bare
 * METRIC when one benchmark variant alone measured it in the selection.
 * method_key as fleet_compare_by()'s, but the default method is chosen
 * among the runs that measured the metric: 'standard', else the method
 * that measured it most. A name no stored run measured raises 22023 and
 * says how to list the names; a selection without it gives no row.
 */
CREATE OR REPLACE FUNCTION fleet_metric_by(metric_name text,
					   by text[] DEFAULT NULL,
					   filter jsonb DEFAULT NULL,
					   since timestamptz DEFAULT NULL,
					   method_key text DEFAULT NULL)
RETURNS TABLE (
	metric text, method text, provider text, instance_type text,
	kernel text, region text, vm text, thp text, vcpus integer, host text,
	hosts bigint, runs bigint, few_runs boolean,
	median numeric, median_lo numeric, median_hi numeric, unit text,
	first_run timestamptz, last_run timestamptz)
LANGUAGE plpgsql STABLE
-- as the other query functions: the runs and the sorts in memory
SET work_mem = '256MB'
AS $$
#variable_conflict use_column
DECLARE
	keys text[] := coalesce(by, '{provider,instance_type,kernel}');
	mname text[] := fleetbench_metric_name(metric_name);
	names text[] := '{}';
BEGIN
	PERFORM fleetbench_check_keys(keys, 'by');
	PERFORM fleetbench_check_filter(filter);
	FOR metric, method, provider, instance_type, kernel, region, vm, thp,
	    vcpus, host, hosts, runs, few_runs, median, median_lo, median_hi,
	    unit, first_run, last_run IN
		WITH v AS (
			SELECT * FROM fleetbench_metric_runs(mname,
				fleetbench_filter_method(filter, method_key),
				since)
		), chosen AS (
			SELECT CASE WHEN method_key IS NULL
				     AND NOT coalesce(filter ? 'method', false)
				    THEN (SELECT v.method FROM v
					  GROUP BY v.method
					  ORDER BY v.method = 'standard' DESC,
						   count(*) DESC, v.method
					  LIMIT 1) END AS method
		), g AS (
			SELECT v.benchmark || '/' || v.variant || '/' || v.metric
				       AS metric, v.method,
			       CASE WHEN 'provider' = ANY (keys) THEN v.provider END AS provider,
			       CASE WHEN 'instance_type' = ANY (keys) THEN v.instance_type END AS instance_type,
			       CASE WHEN 'kernel' = ANY (keys) THEN v.kernel_release END AS kernel,
			       CASE WHEN 'region' = ANY (keys) THEN v.region END AS region,
			       CASE WHEN 'vm' = ANY (keys) THEN v.vm END AS vm,
			       CASE WHEN 'thp' = ANY (keys) THEN v.thp_enabled END AS thp,
			       CASE WHEN 'vcpus' = ANY (keys) THEN v.vcpus END AS vcpus,
			       CASE WHEN 'host' = ANY (keys) THEN v.hostname END AS host,
			       v.unit,
			       count(DISTINCT v.machine_id) AS hosts,
			       fleetbench_median_ci(array_agg(v.median ORDER BY v.median)) AS e,
			       min(v.started_at) AS first_run,
			       max(v.started_at) AS last_run
			FROM v, chosen AS c
			WHERE c.method IS NULL OR v.method = c.method
			GROUP BY v.benchmark, v.variant, v.metric, 2, 3, 4, 5, 6,
				 7, 8, 9, 10, 11
		)
		SELECT g.metric, g.method, g.provider, g.instance_type, g.kernel,
		       g.region, g.vm, g.thp, g.vcpus, g.host, g.hosts,
		       (g.e).n, (g.e).n < 6,
		       fleetbench_round_metric((g.e).median),
		       fleetbench_round_metric((g.e).ci_low),
		       fleetbench_round_metric((g.e).ci_high),
		       g.unit, g.first_run, g.last_run
		FROM g
		ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 17
	LOOP
		IF NOT metric = ANY (names) THEN
			names := names || metric;
		END IF;
		RETURN NEXT;
	END LOOP;
	IF cardinality(names) > 1 THEN
		RAISE EXCEPTION 'metric: ''%'' is measured by %: give one as BENCHMARK/VARIANT/METRIC',
			metric_name, array_to_string(names, ', ')
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- bench_metrics alone: no run to materialize for an error
	IF cardinality(names) = 0 AND NOT EXISTS (
		SELECT 1 FROM bench_metrics AS m
		WHERE m.metric = mname[3]
		  AND (mname[1] IS NULL OR (m.benchmark = mname[1]
					    AND m.variant = mname[2]))) THEN
		RAISE EXCEPTION 'metric: unknown metric ''%'': no stored run measured it (fleetbench compare --metric list, or SELECT * FROM fleet_metric_list(), lists the metrics stored)',
			metric_name
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
END
$$;

/*
 * The metrics the runs of filter since since measured (`fleetbench
 * compare --metric list`): one row per name and unit, with the runs that
 * measured it and the first and last of them. method_key NULL or '*':
 * every method, else that one. Without a filter or a method, from
 * bench_metrics alone (every run of it is in run_figures): the names are
 * what one asks for first, and the join to the runs costs more than
 * the scan.
 */
CREATE OR REPLACE FUNCTION fleet_metric_list(filter jsonb DEFAULT NULL,
					     since timestamptz DEFAULT NULL,
					     method_key text DEFAULT NULL)
RETURNS TABLE (
	metric text, unit text, runs bigint, first_run timestamptz,
	last_run timestamptz)
LANGUAGE plpgsql STABLE
SET work_mem = '256MB'
AS $$
#variable_conflict use_column
DECLARE
	sel jsonb := fleetbench_filter_method(filter, method_key);
BEGIN
	PERFORM fleetbench_check_filter(filter);
	IF sel IS NULL THEN
		RETURN QUERY
		SELECT m.benchmark || '/' || m.variant || '/' || m.metric,
		       m.unit, count(*), min(m.started_at), max(m.started_at)
		FROM bench_metrics AS m
		WHERE m.median IS NOT NULL
		  AND (since IS NULL OR m.started_at >= since)
		GROUP BY m.benchmark, m.variant, m.metric, m.unit
		ORDER BY 1, 2;
		RETURN;
	END IF;
	RETURN QUERY
	SELECT x.benchmark || '/' || x.variant || '/' || x.metric, x.unit,
	       count(*), min(x.started_at), max(x.started_at)
	FROM fleetbench_metric_runs(NULL, sel, since) AS x
	GROUP BY x.benchmark, x.variant, x.metric, x.unit
	ORDER BY 1, 2;
END
$$;

COMMENT ON FUNCTION fleet_metric_by(text, text[], jsonb, timestamptz, text) IS
	'fleetbench compare --metric: per group, the median over runs of one bench_metrics metric (BENCHMARK/VARIANT/METRIC) with its 95% interval';
COMMENT ON FUNCTION fleet_metric_list(jsonb, timestamptz, text) IS
	'fleetbench compare --metric list: the metrics stored, with their units and runs';
