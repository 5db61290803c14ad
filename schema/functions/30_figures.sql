-- SPDX-License-Identifier: MIT
-- The groups of runs behind the queries: filters and keys, the runs of a
-- filter, the cached group figures of fleet_summary and their refresh, and
-- the default method. A function file (schema/README.md):
-- `fleetbench-collector migrate` runs all of them again, in name order and
-- in one transaction, whenever one of them changes or a migration ran.
-- Functions are CREATE OR REPLACE (a trigger function is never dropped: its
-- triggers depend on it); views are dropped and made again.

CREATE OR REPLACE FUNCTION fleetbench_query_keys() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT '{provider,instance_type,kernel,region,vm,thp,vcpus,host,method}'::text[]
$$;

-- Raises 22023 naming the first of keys that is not a query key (or a
-- tag key, tag.KEY: 25_tags.sql).
CREATE OR REPLACE FUNCTION fleetbench_check_keys(keys text[], what text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	bad text;
BEGIN
	SELECT k INTO bad FROM unnest(keys) AS k
	WHERE k IS NULL OR NOT (k = ANY (fleetbench_query_keys())
				OR fleetbench_is_tag_key(k)) LIMIT 1;
	IF FOUND AND bad LIKE 'tag.%' THEN
		RAISE EXCEPTION '%: bad tag key ''%'': tag.KEY, KEY 1 to 32 of [a-z0-9_] starting with a letter',
			what, bad
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF FOUND THEN
		RAISE EXCEPTION '%: unknown key ''%'', one of %, tag.KEY', what,
			coalesce(bad, 'NULL'),
			array_to_string(fleetbench_query_keys(), ', ')
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
END
$$;

-- Checks a filter object: 22023 for an unknown key or a value that is
-- not a string, a number or an array of them.
CREATE OR REPLACE FUNCTION fleetbench_check_filter(filter jsonb) RETURNS void
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
 * (any of a key's values; NULL: all; the method key included) and started
 * at or after since (NULL: all). The filter's keys are for the caller to
 * check (fleetbench_check_filter).
 */
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
		     fleetbench_filter_values(filter, 'method') AS method,
		     -- tag.KEY (25_tags.sql): NULL without, folded away
		     fleetbench_tag_filter(filter) AS tags,
		     fleetbench_tag_single(filter) AS tags_single) AS w
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
	  AND (w.tags_single IS NULL OR f.tags @> w.tags_single)
	  AND (w.tags IS NULL OR fleetbench_tags_match(f.tags, w.tags))
$$;

/*
 * The groups of fleetbench_runs(filter, since) by keys (a subset of
 * fleetbench_query_keys(); the caller checks them), as fleet_summary rows
 * with level NULL. Every figure is the median over the group's runs that
 * measured it; per_vcpu figures divide each run's by its vCPUs first.
 * failed counts the runs with at least one failed variant, and failures
 * lists each failed variant with the number of runs it failed in, most
 * first ("randread/io_uring_sqpoll (3)"), NULL when none failed. Every
 * group is of one method: the method column is always filled, whatever
 * keys holds. The estimates are arrays indexed by the figure's id (028),
 * made from the table figures: one aggregate per figure, so that the
 * plan stays an index-only scan of the group index and one pass; the
 * capability counts read run_figures.flags (019), which the group index
 * holds. With tag keys (tag.KEY) in keys, the tags column labels
 * each group (fleetbench_tag_label(): "team=storage", "team=(none)");
 * NULL without, folded away by the planner, so that the group index
 * still covers the query.
 */
DO $do$
DECLARE
	est text; -- each figure's estimate, in id order
	per text; -- each per_vcpu figure's per vCPU, NULL for the others
	elems text; -- each run's figure i as column v<i>
BEGIN
	SELECT string_agg(CASE WHEN f.id IS NULL THEN 'NULL' ELSE format(
			E'fleetbench_median_ci(array_agg(f.v%1$s ORDER BY f.v%1$s)\n\t\t\tFILTER (WHERE f.v%1$s IS NOT NULL))',
			i) END, E',\n\t\t' ORDER BY i),
	       string_agg(CASE WHEN f.per_vcpu THEN format(
			E'fleetbench_median_ci(array_agg(f.v%1$s / f.vcpus ORDER BY f.v%1$s / f.vcpus)\n\t\t\tFILTER (WHERE f.v%1$s / f.vcpus IS NOT NULL))',
			i) ELSE 'NULL' END, E',\n\t\t' ORDER BY i),
	       string_agg(format(', r.figures[%1$s] AS v%1$s', i), '' ORDER BY i)
	INTO est, per, elems
	FROM generate_series(1, (SELECT max(x.id) FROM figures AS x)) AS i
	LEFT JOIN figures AS f ON f.id = i;
	EXECUTE format($f$
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
	       count(*) FILTER (WHERE f.flags & 1 <> 0), -- iouring_ok
	       count(*) FILTER (WHERE f.flags & 2 <> 0), -- sqpoll_ok
	       count(*) FILTER (WHERE f.flags & 4 <> 0), -- hugepage_1g
	       count(*) FILTER (WHERE f.flags & 8 <> 0), -- steal_flagged
	       mode() WITHIN GROUP (ORDER BY f.thp_enabled),
	       min(f.started_at),
	       max(f.started_at),
	       count(*) FILTER (WHERE f.failed <> '{}'),
	       (SELECT string_agg(format('%%s (%%s)', v.name, v.n), ', '
				  ORDER BY v.n DESC, v.name)
		FROM (SELECT x.name, count(*) AS n
		      FROM jsonb_array_elements(jsonb_agg(to_jsonb(f.failed))
				FILTER (WHERE f.failed <> '{}')) AS r(a),
			   jsonb_array_elements_text(r.a) AS x(name)
		      GROUP BY x.name) AS v),
	       f.method,
	       fleetbench_tag_label(f.tags, fleetbench_tag_keys(keys)),
	       count(*) FILTER (WHERE f.flags & 16 <> 0), -- wide (024)
	       ARRAY[%s]::fleetbench_estimate[],
	       ARRAY[%s]::fleetbench_estimate[]
	-- each element read once per run (OFFSET 0 keeps the subquery
	-- from being pulled up into three reads per aggregate)
	FROM (SELECT r.*%s FROM fleetbench_runs(filter, since) AS r
	      OFFSET 0) AS f
	GROUP BY 2, 3, 4, 5, 6, 7, 8, 9, f.method,
		 fleetbench_tag_label(f.tags, fleetbench_tag_keys(keys))
$$$f$, coalesce(est, ''), coalesce(per, ''), coalesce(elems, ''));
END
$do$;

/*
 * Brings level lvl (3: instance type and kernel; 2: instance type) of
 * fleet_summary up to date with fleet_dirty: recomputes the rows of that
 * level of every instance type, kernel and method with a changed run (a
 * superset: the product of their providers, instance types, kernels and
 * methods) and takes their level's rows out of fleet_dirty; lvl NULL does
 * both. Runs committed meanwhile stay dirty for the next call. Returns
 * false, and changes nothing, when it cannot: in a read-only transaction,
 * or when the refresh lock stays taken for 200 ms (another transaction is
 * refreshing, or writers keep committing); the caller then computes from
 * run_figures directly. A level is refreshed only when a query reads it,
 * so `compare` right after new runs does not pay for the level 2 rows,
 * which aggregate every run of their instance types (013).
 */
CREATE OR REPLACE FUNCTION fleetbench_refresh(lvl smallint DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql
-- the filters are constants to the planner: index scans for a few
-- changed instance types, a sort in memory for many
SET plan_cache_mode = force_custom_plan
SET work_mem = '256MB'
-- at 1,000,000 runs the planner's cost for one group's recompute passes
-- jit_above_cost, and compiling its expressions took 31 of its 50 ms
-- (docs/performance.md); the rows of a few groups never repay that
SET jit = off
AS $$
DECLARE
	levels smallint[] := CASE WHEN lvl IS NULL THEN '{2,3}'
				  ELSE ARRAY[lvl] END;
	changed jsonb;
BEGIN
	PERFORM fleetbench_schema_guard();
	IF NOT EXISTS (SELECT 1 FROM fleet_dirty AS d
		       WHERE d.level = ANY (levels)) THEN
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
	FOREACH lvl IN ARRAY levels LOOP
		WITH gone AS (DELETE FROM fleet_dirty AS d
			      WHERE d.level = lvl RETURNING *)
		SELECT jsonb_build_object(
			       'provider', jsonb_agg(DISTINCT provider),
			       'instance_type', jsonb_agg(DISTINCT instance_type),
			       'kernel', jsonb_agg(DISTINCT kernel_release),
			       'method', jsonb_agg(DISTINCT method))
		INTO changed
		FROM gone
		HAVING count(*) > 0;
		CONTINUE WHEN changed IS NULL;
		IF lvl = 2 THEN
			changed := changed - 'kernel';
		END IF;
		DELETE FROM fleet_summary AS s
		WHERE s.level = lvl
		  AND s.provider = ANY (fleetbench_filter_values(changed, 'provider'))
		  AND s.instance_type = ANY (fleetbench_filter_values(changed, 'instance_type'))
		  AND s.method = ANY (fleetbench_filter_values(changed, 'method'))
		  AND (lvl = 2
		       OR s.kernel = ANY (fleetbench_filter_values(changed, 'kernel')));
		-- keys a constant to the planner (each branch typed), so
		-- that it can read only the group index's columns
		INSERT INTO fleet_summary
		SELECT * FROM fleetbench_groups(
			CASE lvl WHEN 3 THEN '{provider,instance_type,kernel}'::text[]
				 ELSE '{provider,instance_type}'::text[] END,
			changed, NULL);
		UPDATE fleet_summary SET level = lvl WHERE level IS NULL;
	END LOOP;
	RETURN true;
END
$$;

/*
 * fleetbench_groups(keys, filter, since), from fleet_summary when it
 * holds them (keys provider, instance_type and kernel, or provider and
 * instance_type, with the method; a filter on those keys only; no since)
 * and can be brought up to date, else computed from run_figures: the same
 * rows either way.
 */
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
	   AND fleetbench_refresh(lvl) THEN
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

/*
 * The method key a fleet query selects among the runs of filter since
 * since: method itself when given ('*': every method, NULL returned);
 * NULL when filter chooses by its "method" key; else the default, the
 * standard profile's method 'standard' when the selection holds a run of
 * it, else the method with the most runs (then the first by name).
 * Runs counted from fleet_summary when it can (as fleetbench_group_rows).
 */
CREATE OR REPLACE FUNCTION fleetbench_method_choice(method text, filter jsonb,
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
	-- from the level 3 rows: the runs of a method are the same sum, and
	-- `compare`, which reads level 3, need not refresh level 2
	SELECT g.method INTO chosen
	FROM fleetbench_group_rows('{provider,instance_type,kernel}', filter,
				   since) AS g
	GROUP BY g.method
	ORDER BY g.method = 'standard' DESC, sum(g.runs) DESC, g.method
	LIMIT 1;
	RETURN coalesce(chosen, 'standard');
END
$$;

-- filter with the method fleetbench_method_choice() selects added as its
-- "method" key (unchanged when it selects every method).
CREATE OR REPLACE FUNCTION fleetbench_method_filter(method text, filter jsonb,
					 since timestamptz)
RETURNS jsonb
LANGUAGE sql VOLATILE AS $$
	SELECT CASE WHEN m IS NULL THEN filter
		    ELSE coalesce(filter, '{}') || jsonb_build_object('method', m)
	       END
	FROM fleetbench_method_choice(method, filter, since) AS m
$$;

/*
 * The long views (issue 37): a run's figures and a group's estimates as
 * rows keyed by the figure, one per declared figure (the table figures,
 * proto/figures.def) that has a value, so that a query names a figure as
 * data (WHERE figure = 'thp_speedup') and a figure declared later needs
 * no new query. They read the stored arrays (028) by the figures' ids.
 */
DROP VIEW IF EXISTS run_figure_values CASCADE;
CREATE VIEW run_figure_values AS
SELECT r.run_id, r.started_at, r.provider, r.instance_type,
       r.kernel_release, r.method, f.name AS figure, f.family, v.value
FROM run_figures AS r
CROSS JOIN LATERAL (SELECT r.figures[i] AS value, i AS id
		    FROM generate_subscripts(r.figures, 1) AS i) AS v
JOIN figures AS f ON f.id = v.id
WHERE v.value IS NOT NULL;
COMMENT ON VIEW run_figure_values IS
	'each run''s value of each declared figure it measured, one row per run and figure (docs/queries.md, "Long views")';

/*
 * A figure declared after runs were stored (not yet in figures_filled) is
 * filled in their run_figures.figures from what they stored: the run's
 * figures as run_figures_live computes them for a new run (the others
 * unchanged: the same stored data), over the runs that can have it only
 * (a ratio: those with the comparison of its name; a value: those with
 * results of its benchmark). The update marks their groups
 * changed (fleet_dirty), so the summaries take the figure on their next
 * refresh. Once per figure.
 */
DO $do$
DECLARE
	f record;
	n bigint;
BEGIN
	FOR f IN SELECT x.id, x.name, x.kind, x.benchmark FROM figures AS x
		 WHERE NOT EXISTS (SELECT 1 FROM figures_filled AS d
				   WHERE d.id = x.id)
		 ORDER BY x.id LOOP
		UPDATE run_figures AS r SET figures = l.figures
		FROM run_figures_live AS l
		WHERE l.run_id = r.run_id
		  AND l.run_id IN (SELECT c.run_id FROM runs AS c
				   JOIN comparison_names AS n
					ON n.names_id = c.comparison_names_id
				   WHERE f.kind = 'ratio'
				     AND n.c_name @> ARRAY[f.name]
				   UNION ALL
				   SELECT v.run_id FROM run_results AS v
				   JOIN result_shapes AS sh
					ON sh.shape_id = v.shape_id
				   WHERE f.kind = 'value'
				     AND sh.v_benchmark @> ARRAY[f.benchmark])
		  AND l.figures[f.id] IS NOT NULL;
		GET DIAGNOSTICS n = ROW_COUNT;
		INSERT INTO figures_filled (id) VALUES (f.id);
		IF n > 0 THEN
			RAISE INFO 'fleetbench: figure % (id %) filled in % stored runs',
				f.name, f.id, n;
		END IF;
	END LOOP;
END
$do$;

/*
 * fleetbench_group_estimates(g, per): a group's estimates as an array
 * indexed by the figure's id (figures.id): element i is the estimate of
 * figure i, or with per 'vcpu' its per-vCPU estimate (NULL for a figure
 * without one, figures.per_vcpu). What compare, kernels, rank, prices,
 * /metrics and the long view read a fleet_summary row's figures through.
 */
CREATE OR REPLACE FUNCTION fleetbench_group_estimates(g fleet_summary,
						      per text DEFAULT NULL)
RETURNS fleetbench_estimate[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN per = 'vcpu' THEN g.figures_per_vcpu ELSE g.figures END
$$;

/*
 * A group's estimates as rows, one per declared figure and one more per
 * per-vCPU estimate (per_vcpu true), in the declaration's order, with
 * the ones it did not measure (est NULL or est.n 0) left to the caller.
 */
CREATE OR REPLACE FUNCTION fleetbench_group_figures(g fleet_summary)
RETURNS TABLE (id smallint, figure text, family text, per_vcpu boolean,
	       est fleetbench_estimate)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
	SELECT f.id, f.name, f.family, v.per,
	       (fleetbench_group_estimates(g, CASE WHEN v.per THEN 'vcpu' END))[f.id]
	FROM figures AS f
	CROSS JOIN (VALUES (false), (true)) AS v (per)
	WHERE NOT v.per OR f.per_vcpu
	ORDER BY f.position, v.per
$$;

DROP VIEW IF EXISTS fleet_summary_figures CASCADE;
CREATE VIEW fleet_summary_figures AS
SELECT s.level, s.method, s.provider, s.instance_type, s.kernel, s.region,
       s.vm, s.thp, s.vcpus, s.host, s.tags, x.figure, x.family,
       x.per_vcpu, (x.est).n, (x.est).median, (x.est).ci_low,
       (x.est).ci_high
FROM fleet_summary AS s
CROSS JOIN LATERAL fleetbench_group_figures(s) AS x
WHERE (x.est).n > 0;
COMMENT ON VIEW fleet_summary_figures IS
	'each group''s estimate of each declared figure (and its per-vCPU estimate where the figure has one), one row per group and figure (docs/queries.md, "Long views")';

/*
 * run_figures_wide: run_figures with a column per declared figure in
 * place of the array figures, named as the figure (as run_figures' own
 * columns were before 028), for psql. Made from the table figures.
 */
DROP VIEW IF EXISTS run_figures_wide CASCADE;
DO $do$
BEGIN
	EXECUTE format($f$
CREATE VIEW run_figures_wide AS
SELECT r.run_id, r.started_at, r.provider, r.instance_type, r.region,
       r.kernel_release, r.machine_id, r.hostname, r.vm, r.vcpus,
       r.thp_enabled, r.iouring_ok, r.sqpoll_ok, r.hugepage_1g,
       r.steal_flagged, r.failed, r.method, r.flags, r.tags%s
FROM run_figures AS r$f$,
		(SELECT string_agg(format(E',\n       r.figures[%s] AS %I', f.id, f.name),
				   '' ORDER BY f.position)
		 FROM figures AS f));
END
$do$;
COMMENT ON VIEW run_figures_wide IS
	'run_figures with a column per declared figure, named as the figure (docs/queries.md, "Long views")';
