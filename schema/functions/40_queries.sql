-- SPDX-License-Identifier: MIT
-- The queries of the fleetbench CLI and psql: compare, kernels, rank
-- (docs/queries.md). A function file (schema/README.md):
-- `fleetbench-collector migrate` runs all of them again, in name order and
-- in one transaction, whenever one of them changes or a migration ran.
-- Functions are CREATE OR REPLACE (a trigger function is never dropped: its
-- triggers depend on it); views are dropped and made again.

-- fleet_compare_by() and fleet_kernels_by() return a column per headline
-- figure (three: the median and its interval's ends), made from the table
-- figures over the fixed cores fleet_compare_rows() and
-- fleet_kernels_rows(), which return each figure at its id in an array: a
-- new figure changes the wrappers' return type, which CREATE OR REPLACE
-- refuses, so they are dropped and made again here, with their views
-- first (migrate keeps the views' grants over the function files, and
-- refuses, naming it, a view of the database's users over them that the
-- CASCADE took along). Their EXECUTE is PUBLIC's default again after each
-- run of this file. The cores are never dropped.
DROP VIEW IF EXISTS fleet_kernels CASCADE;
DROP VIEW IF EXISTS fleet_compare CASCADE;
DROP FUNCTION IF EXISTS fleet_kernels_by(jsonb, timestamptz, text);
-- with by (issue 17: tag keys) and the tags column
DROP FUNCTION IF EXISTS fleet_kernels_by(jsonb, timestamptz, text, text[]);
-- fleet_rank_by() too, since it took by and returned tags (issue 17)
DROP VIEW IF EXISTS fleet_rank CASCADE;
DROP FUNCTION IF EXISTS fleet_rank_by(text, text, text[], integer, jsonb,
				      timestamptz, text);
DROP FUNCTION IF EXISTS fleet_rank_by(text, text, text[], integer, jsonb,
				      timestamptz, text, text[]);
DROP FUNCTION IF EXISTS fleet_compare_by(text[], jsonb, timestamptz, text);

/*
 * fleetbench_figure_list(templ, sep): templ formatted for each declared
 * figure in the declaration's order (%1$s its id, %2$I its name),
 * joined by sep (NULL without figures): the
 * per-figure lists of the objects this file makes from the table
 * figures.
 */
CREATE OR REPLACE FUNCTION fleetbench_figure_list(templ text, sep text)
RETURNS text
LANGUAGE sql STABLE AS $$
	SELECT string_agg(format(templ, f.id, f.name), sep
			  ORDER BY f.position)
	FROM figures AS f
$$;

/*
 * fleetbench_make_wide(wide, view, core, hidden): makes the function wide
 * with core's parameters and columns, core's array est spread into three
 * columns per declared figure (NAME, NAME_lo and NAME_hi: the median and
 * its interval, rounded, at the place of est, in the declaration's
 * order), and the
 * view named view over wide() with its defaults, without the columns in
 * hidden. For the column-per-figure forms of compare and kernels, made
 * again whenever this file runs (a new declaration runs it).
 */
CREATE OR REPLACE FUNCTION fleetbench_make_wide(wide text, view text,
						core regprocedure, hidden text[])
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	cols text[] := '{}'; -- wide's columns with their types
	sel text[] := '{}'; -- its select list over core's row c
	shown text[] := '{}'; -- the view's columns
	params text;
	c record;
BEGIN
	FOR c IN SELECT a.name, format_type(a.type, NULL) AS type
		 FROM pg_proc AS p,
		      unnest(p.proargnames, p.proallargtypes,
			     p.proargmodes::text[]) WITH ORDINALITY
			AS a(name, type, mode, i)
		 WHERE p.oid = core AND a.mode = 't'
		 ORDER BY a.i LOOP
		IF c.name = 'est' THEN
			cols := cols || fleetbench_figure_list(
				'%2$I numeric, %2$I_lo numeric, %2$I_hi numeric', E',\n\t');
			sel := sel || fleetbench_figure_list(
				'fleetbench_round((c.est[%1$s]).median), fleetbench_round((c.est[%1$s]).ci_low), fleetbench_round((c.est[%1$s]).ci_high)',
				E',\n\t       ');
			shown := shown || fleetbench_figure_list(
				'%2$I, %2$I_lo, %2$I_hi', E',\n       ');
		ELSE
			cols := cols || format('%I %s', c.name, c.type);
			sel := sel || format('c.%I', c.name);
			IF NOT c.name = ANY (hidden) THEN
				shown := shown || quote_ident(c.name);
			END IF;
		END IF;
	END LOOP;
	SELECT string_agg('$' || i, ', ' ORDER BY i) INTO params
	FROM generate_series(1, (SELECT p.pronargs FROM pg_proc AS p
				 WHERE p.oid = core)) AS i;
	EXECUTE format(E'CREATE OR REPLACE FUNCTION %I(%s)\nRETURNS TABLE (\n\t%s)\nLANGUAGE sql VOLATILE AS $w$\n\tSELECT %s\n\tFROM %s(%s) AS c\n$w$',
		       wide, pg_get_function_arguments(core),
		       array_to_string(cols, E',\n\t'),
		       array_to_string(sel, E',\n\t       '),
		       core::regproc, params);
	EXECUTE format(E'CREATE VIEW %I AS\nSELECT %s\nFROM %I()',
		       view, array_to_string(shown, E',\n       '), wide);
END
$$;

/*
 * One row per group of runs (by the keys in by, default provider,
 * instance_type, kernel), among the runs of one method matching filter
 * (see fleetbench_runs) started at or after since: the group's method,
 * its keys (NULL for a key not in by; tags labels the tag.KEY keys of
 * by, fleetbench_tag_label()), hosts and runs, few_runs when there
 * are too few runs (below 6) for a 95% interval, and est, each declared
 * figure's estimate at its id (fleetbench_group_estimates(): the runs
 * that measured it, their median and its interval, NULL below 6 such
 * runs; not rounded); the shares of runs with each capability, and the most common
 * THP mode; failed, the runs with a failed variant, and failures, each
 * variant that failed with the number of runs it failed in (most
 * first). Ordered by the keys. method NULL selects the default
 * (fleetbench_method_choice: 'standard', else the method most run), a
 * key selects that method, '*' every method, each group then of one
 * method; a "method" key in filter selects as well. fleet_compare_by()
 * is this with a column per figure.
 */
CREATE OR REPLACE FUNCTION fleet_compare_rows(by text[] DEFAULT NULL,
				 filter jsonb DEFAULT NULL,
				 since timestamptz DEFAULT NULL,
				 method_key text DEFAULT NULL)
RETURNS TABLE (
	method text, provider text, instance_type text, kernel text, region text,
	vm text, thp text, vcpus integer, host text, tags text,
	hosts bigint, runs bigint, few_runs boolean,
	est fleetbench_estimate[],
	iouring_share numeric, sqpoll_share numeric, hugepage_1g_share numeric,
	steal_share numeric, wide_share numeric, thp_mode text,
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
	       g.vcpus, g.host, g.tags, g.hosts, g.runs, g.runs < 6,
	       fleetbench_group_estimates(g),
	       fleetbench_share(g.iouring_ok, g.runs),
	       fleetbench_share(g.sqpoll_ok, g.runs),
	       fleetbench_share(g.hugepage_1g, g.runs),
	       fleetbench_share(g.steal_flagged, g.runs),
	       fleetbench_share(g.wide, g.runs),
	       g.thp_mode, g.first_run, g.last_run, g.failed, g.failures
	FROM fleetbench_group_rows(keys, chosen, since) AS g
	ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10;
END
$$;

/*
 * fleet_compare_by(by, filter, since, method_key): fleet_compare_rows()
 * with three columns per declared figure, in the declaration's order:
 * NAME, its median, NAME_lo and NAME_hi, its 95% interval. The view
 * fleet_compare is `fleetbench compare` with its defaults: per provider,
 * instance type and kernel release, over all runs of the default method.
 */
SELECT fleetbench_make_wide('fleet_compare_by', 'fleet_compare',
	'fleet_compare_rows(text[], jsonb, timestamptz, text)',
	'{region,vm,thp,vcpus,host,tags}');
COMMENT ON VIEW fleet_compare IS
	'per method, provider, instance type and kernel, of the default method: median and 95% interval of each headline figure, capability shares, runs with a failed variant';

-- "+12%", "-63%": the relative change from old to new.
CREATE OR REPLACE FUNCTION fleetbench_percent(old numeric, new numeric) RETURNS text
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
CREATE OR REPLACE FUNCTION fleetbench_figure_change(name text, old numeric,
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
CREATE OR REPLACE FUNCTION fleetbench_share_change(name text, old numeric, new numeric)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN old IS DISTINCT FROM new
		    THEN format('%s %s%% -> %s%% of runs', name,
				round(100 * old), round(100 * new)) END
$$;

/*
 * The fleet-level alerts of a kernel, in words, for `kernels`' changes:
 * each shift alert of the instance type on it (the roll-out's test,
 * docs/alerts.md, with its change, interval, hosts and q) and each drift
 * seen on it, "; "-joined, NULL when none. PL/pgSQL: the words are
 * 50_alerts.sql's, made after this file.
 */
CREATE OR REPLACE FUNCTION fleetbench_kernel_alerts_text(p_provider text,
	p_instance_type text, p_kernel text)
RETURNS text
LANGUAGE plpgsql STABLE AS $$
BEGIN
	RETURN (SELECT string_agg(CASE a.kind WHEN 'shift' THEN 'fleet test: '
					 ELSE '' END
				  || fleetbench_effect_text(a.kind, a.effect),
				  '; ' ORDER BY a.id)
		FROM fleet_alerts AS a
		WHERE a.provider = p_provider
		      AND a.instance_type = p_instance_type
		      AND a.new_kernel = p_kernel
		      AND a.kind IN ('shift', 'drift'));
END
$$;

/*
 * fleet_compare_rows() per provider, instance type and kernel release, each
 * instance type's kernels from oldest to newest (by their first run, then
 * name), with what changed from the kernel before: figures whose
 * intervals moved apart, capability shares, the share of runs with a
 * failed variant and the THP mode that differ; 'nothing beyond noise'
 * when none did, NULL for the first; then the vCPU placement changes and
 * the kernel's fleet-level alerts (shift, drift) in words. With a method column. method NULL (the default)
 * chooses per kernel: the standard method when the kernel has runs of
 * it, else its method most run; a kernel whose method differs from the
 * kernel before says 'method OLD -> NEW: figures not compared' in
 * changes and compares no figures. A key (or filter's "method") selects
 * one method; '*' every method, each a sequence of kernels of its own.
 * by (tag keys only, tag.KEY: fleetbench_tag_by()) splits each instance
 * type by those tags, as fleet_compare_by()'s: a sequence of kernels per
 * instance type and tags value, labelled in the tags column (NULL
 * without by), its figures those of its tagged runs. The figures are
 * compared in the declaration's order. fleet_kernels_by() is this with a
 * column per figure.
 */
CREATE OR REPLACE FUNCTION fleet_kernels_rows(filter jsonb DEFAULT NULL,
				 since timestamptz DEFAULT NULL,
				 method_key text DEFAULT NULL,
				 by text[] DEFAULT NULL)
RETURNS TABLE (
	method text, provider text, instance_type text, tags text, kernel text,
	hosts bigint, runs bigint, few_runs boolean,
	est fleetbench_estimate[],
	iouring_share numeric, sqpoll_share numeric, hugepage_1g_share numeric,
	steal_share numeric, wide_share numeric, thp_mode text,
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
		FROM o, fleet_compare_rows('{provider,instance_type,kernel}'::text[]
					 || fleetbench_tag_by($4, 'by'), $1,
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
					AND b.tags IS NOT DISTINCT FROM a.tags
					AND b.kernel = a.kernel
				  ORDER BY b.method = 'standard' DESC, b.runs DESC,
					   b.method
				  LIMIT 1)
	), c AS (
		SELECT x.*, row_number() OVER (
				PARTITION BY x.provider, x.instance_type, x.tags,
					     CASE WHEN o.all_methods THEN x.method END
				ORDER BY x.first_run, x.kernel, x.method) AS pos,
		       o.all_methods
		FROM k AS x, o
	)
	SELECT c.method, c.provider, c.instance_type, c.tags, c.kernel, c.hosts,
	       c.runs,
	       c.few_runs, c.est,
	       c.iouring_share, c.sqpoll_share,
	       c.hugepage_1g_share, c.steal_share, c.wide_share, c.thp_mode,
	       c.first_run,
	       c.last_run, c.failed, c.failures,
	       -- a host's vCPUs placed otherwise explains a moved figure
	       nullif(concat_ws('; ', CASE WHEN p.method <> c.method
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
		(SELECT string_agg(fleetbench_figure_change(f.name,
				fleetbench_round((p.est[f.id]).median),
				fleetbench_round((p.est[f.id]).ci_low),
				fleetbench_round((p.est[f.id]).ci_high),
				fleetbench_round((c.est[f.id]).median),
				fleetbench_round((c.est[f.id]).ci_low),
				fleetbench_round((c.est[f.id]).ci_high)),
				'; ' ORDER BY f.position)
		 FROM figures AS f)),
		''), 'nothing beyond noise') END,
		fleetbench_placement_text(c.provider, c.instance_type, c.kernel,
					  $2),
		fleetbench_kernel_alerts_text(c.provider, c.instance_type,
					      c.kernel)), '')
	FROM c
	LEFT JOIN c AS p
		ON p.provider = c.provider AND p.instance_type = c.instance_type
		   AND p.tags IS NOT DISTINCT FROM c.tags
		   AND (NOT c.all_methods OR p.method = c.method)
		   AND p.pos = c.pos - 1
	ORDER BY c.provider, c.instance_type, c.tags,
		 CASE WHEN c.all_methods THEN c.method END, c.pos
$$;

/*
 * fleet_kernels_by(filter, since, method_key, by): fleet_kernels_rows()
 * with three columns per declared figure, as fleet_compare_by()'s. The
 * view fleet_kernels is `fleetbench kernels` for every instance type (the
 * CLI picks one); no tags column, which only by fills.
 */
SELECT fleetbench_make_wide('fleet_kernels_by', 'fleet_kernels',
	'fleet_kernels_rows(jsonb, timestamptz, text, text[])', '{tags}');
COMMENT ON VIEW fleet_kernels IS
	'per instance type and kernel, oldest kernel first, of the default method per kernel: fleet_compare''s figures, failures and what changed from the kernel before';

/*
 * The figures an instance type can be ranked by: which way is better, and
 * whether --per vcpu makes sense (absolute rates only: a ratio per vCPU
 * means nothing), as proto/figures.def declares them.
 */
CREATE OR REPLACE FUNCTION fleetbench_rank_metrics()
RETURNS TABLE (metric text, higher_is_better boolean, per_vcpu boolean)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
	SELECT f.name, f.higher_is_better, f.per_vcpu
	FROM figures AS f ORDER BY f.position
$$;

-- Raises 22023 for a require value (a capability) rank does not know.
CREATE OR REPLACE FUNCTION fleetbench_check_require(require text[])
RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	bad text;
BEGIN
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

-- Raises 22023 for a metric, per or require value rank does not know.
CREATE OR REPLACE FUNCTION fleetbench_check_rank(metric text, per text, require text[])
RETURNS void
LANGUAGE plpgsql STABLE AS $$
DECLARE
	m record;
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
	PERFORM fleetbench_check_require(require);
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
 * hugepages-1g; default none), that had it in every run. Among the runs
 * of one method, chosen as by fleet_compare_by() ('*': every method, each
 * ranked on its own); the second column is the method. by (tag keys
 * only, tag.KEY: fleetbench_tag_by()) ranks the instance types within
 * each value of those tags on its own, as each method: the tags column
 * labels it as fleet_compare_by()'s does ("team=storage", "team=(none)"),
 * the figures those of its tagged runs; NULL without by.
 */
CREATE OR REPLACE FUNCTION fleet_rank_by(metric_name text,
			      per text DEFAULT NULL,
			      require text[] DEFAULT NULL,
			      min_runs integer DEFAULT NULL,
			      filter jsonb DEFAULT NULL,
			      since timestamptz DEFAULT NULL,
			      method_key text DEFAULT NULL,
			      by text[] DEFAULT NULL)
RETURNS TABLE (
	metric text, method text, tags text, rank bigint, tie boolean,
	provider text,
	instance_type text, median numeric, median_lo numeric,
	median_hi numeric, runs integer, hosts bigint, kernels bigint,
	vcpus integer, iouring_share numeric, sqpoll_share numeric,
	hugepage_1g_share numeric)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
	need text[] := coalesce(require, '{}');
	up boolean;
	fid smallint; -- the figure's id: its element of the estimates
	chosen jsonb;
	keys text[];
BEGIN
	PERFORM fleetbench_check_rank(metric_name, per, require);
	PERFORM fleetbench_check_filter(filter);
	-- with tag keys, fleetbench_group_rows() computes from run_figures
	keys := '{provider,instance_type}'::text[] || fleetbench_tag_by(by, 'by');
	SELECT f.higher_is_better, f.id INTO up, fid
	FROM figures AS f WHERE f.name = metric_name;
	chosen := fleetbench_method_filter(method_key, filter, since);
	RETURN QUERY
	WITH e AS (
		SELECT g.method, g.tags, g.provider, g.instance_type, g.hosts,
		       g.kernels,
		       g.vcpus_mode, g.runs AS all_runs, g.iouring_ok,
		       g.sqpoll_ok, g.hugepage_1g, (x.est).n,
		       fleetbench_round((x.est).median) AS median,
		       fleetbench_round((x.est).ci_low) AS lo,
		       fleetbench_round((x.est).ci_high) AS hi
		FROM fleetbench_group_rows(keys, chosen, since) AS g,
		     LATERAL (SELECT (fleetbench_group_estimates(g, per))[fid]
			      AS est) AS x
		WHERE (x.est).n >= greatest(coalesce(min_runs, 6), 1)
		  AND (NOT 'sqpoll' = ANY (need) OR g.sqpoll_ok = g.runs)
		  AND (NOT 'io_uring' = ANY (need) OR g.iouring_ok = g.runs)
		  AND (NOT 'hugepages-1g' = ANY (need) OR g.hugepage_1g = g.runs)
	), r AS (
		SELECT e.*,
		       1 + (SELECT count(*) FROM e AS o
			    WHERE o.method = e.method
			      AND o.tags IS NOT DISTINCT FROM e.tags
			      AND CASE WHEN up
				  THEN coalesce(o.lo, o.median) > coalesce(e.hi, e.median)
				  ELSE coalesce(o.hi, o.median) < coalesce(e.lo, e.median)
				  END) AS rank
		FROM e
	)
	SELECT metric_name, r.method, r.tags, r.rank,
	       count(*) OVER (PARTITION BY r.method, r.tags, r.rank) > 1,
	       r.provider, r.instance_type, r.median, r.lo, r.hi, r.n,
	       r.hosts, r.kernels, r.vcpus_mode,
	       fleetbench_share(r.iouring_ok, r.all_runs),
	       fleetbench_share(r.sqpoll_ok, r.all_runs),
	       fleetbench_share(r.hugepage_1g, r.all_runs)
	FROM r
	ORDER BY r.method, r.tags, r.rank,
		 CASE WHEN up THEN -r.median ELSE r.median END,
		 r.provider, r.instance_type;
END
$$;

-- `fleetbench rank --metric M` with its defaults, for every metric M.
DROP VIEW IF EXISTS fleet_rank CASCADE;
CREATE VIEW fleet_rank AS
SELECT r.metric, r.method, r.rank, r.tie, r.provider, r.instance_type, r.median,
       r.median_lo, r.median_hi, r.runs, r.hosts, r.kernels, r.vcpus,
       r.iouring_share, r.sqpoll_share, r.hugepage_1g_share
FROM fleetbench_rank_metrics() AS m,
     LATERAL fleet_rank_by(m.metric) WITH ORDINALITY AS r
ORDER BY m.metric, r.ordinality;
COMMENT ON VIEW fleet_rank IS
	'per metric, of the default method: instance types best first with the median, its interval, and ranks shared by ties within noise';
