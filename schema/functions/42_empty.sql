-- SPDX-License-Identifier: MIT
-- Why an answer is empty (issue 40): the sentence `fleetbench` prints on
-- standard error when compare, rank or kernels has no row, saying what
-- the selection holds and what to ask instead. A function file
-- (schema/README.md).

-- The selection in words: "provider=aws, kernel=6.1 or 6.2, since
-- 2025-03-31 00:00:00+00", or "the whole database".
CREATE OR REPLACE FUNCTION fleetbench_selection_text(filter jsonb,
						     since timestamptz)
RETURNS text
LANGUAGE sql STABLE AS $$
	SELECT coalesce(nullif(concat_ws(', ',
		(SELECT string_agg(k || '=' || array_to_string(
				fleetbench_filter_values(filter, k), ' or '),
			', ' ORDER BY k)
		 FROM jsonb_object_keys(coalesce(filter, '{}')) AS k),
		'since ' || since::text), ''), 'the whole database')
$$;

/*
 * what: compare, rank or kernels, the other arguments as the command
 * passed them to its *_by() function (metric_name and min_runs: rank's);
 * or prices; or alerts, with since and method_key 'open' for --open.
 * NULL when the answer would not be empty.
 */
CREATE OR REPLACE FUNCTION fleetbench_why_empty(what text, filter jsonb,
						since timestamptz,
						method_key text,
						metric_name text DEFAULT NULL,
						min_runs integer DEFAULT NULL,
						require text[] DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
	total bigint;
	types bigint;
	chosen text;
	methods text;
	top text;
	fid smallint;
	need integer := greatest(coalesce(min_runs, 6), 1);
	measured text;
	enough bigint;
	sel text := fleetbench_selection_text(filter, since);
BEGIN
	IF what = 'prices' THEN
		RETURN 'no price is stored: fleetbench prices import FILE.csv stores them (docs/queries.md, "Prices")';
	END IF;
	IF what = 'alerts' THEN
		SELECT count(*) INTO total FROM fleet_alerts;
		RETURN CASE WHEN total = 0
			THEN 'no alert has been raised: the collector raises one when a kernel upgrade changes io_uring, THP or a gain on the hosts that took it (docs/alerts.md)'
			ELSE format('no alert matches %s; %s alert%s in all (fleetbench alerts lists them)',
				    concat_ws(', ', CASE WHEN method_key = 'open' THEN 'the open ones' END,
					      'since ' || since::text),
				    total, CASE WHEN total = 1 THEN '' ELSE 's' END) END;
	END IF;
	SELECT count(*), count(DISTINCT (r.provider, r.instance_type))
	INTO total, types FROM run_figures AS r;
	IF total = 0 THEN
		RETURN 'the database holds no run yet: run fleetbench-agent on a host that sends to this collector (README.md, "Run it")';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM fleetbench_runs(filter, since)) THEN
		-- an instance type asked for: the ones the rest selects
		IF coalesce(filter ? 'instance_type', false) THEN
			SELECT string_agg(format('%s (%s run%s)', t.instance_type,
						 t.n, CASE WHEN t.n = 1 THEN '' ELSE 's' END),
					  ', ' ORDER BY t.instance_type)
			INTO methods
			FROM (SELECT r.instance_type, count(*) AS n
			      FROM fleetbench_runs(filter - 'instance_type', since) AS r
			      GROUP BY r.instance_type) AS t;
			IF methods IS NOT NULL THEN
				RETURN format('no run matches %s; instance types of %s: %s',
					      sel, fleetbench_selection_text(
						filter - 'instance_type', since),
					      methods);
			END IF;
		END IF;
		RETURN format('no run matches %s; the database holds %s run%s of %s instance type%s (fleetbench compare --by provider,instance_type lists them)',
			      sel, total, CASE WHEN total = 1 THEN '' ELSE 's' END,
			      types, CASE WHEN types = 1 THEN '' ELSE 's' END);
	END IF;
	chosen := fleetbench_method_choice(method_key, filter, since);
	SELECT string_agg(format('%s (%s run%s)', m.method, m.n,
				 CASE WHEN m.n = 1 THEN '' ELSE 's' END),
			  ', ' ORDER BY m.n DESC, m.method),
	       (array_agg(m.method ORDER BY m.n DESC, m.method))[1]
	INTO methods, top
	FROM (SELECT r.method, count(*) AS n
	      FROM fleetbench_runs(filter, since) AS r
	      GROUP BY r.method) AS m;
	IF chosen IS NOT NULL AND NOT EXISTS (
		SELECT 1 FROM fleetbench_runs(filter, since) AS r
		WHERE r.method = chosen) THEN
		RETURN format('no run of method %s in %s; methods present: %s; add --method %s (or --all-methods)',
			      chosen, sel, methods, top);
	END IF;
	IF what = 'rank' AND metric_name IS NOT NULL THEN
		SELECT f.id INTO fid FROM figures AS f WHERE f.name = metric_name;
		-- per instance type of the method shown, the runs that measured it
		SELECT count(*) FILTER (WHERE t.n >= need),
		       CASE WHEN count(*) = 0 THEN 'no run that measured it'
			    ELSE format('%s type%s with %s', count(*),
					CASE WHEN count(*) = 1 THEN '' ELSE 's' END,
					CASE WHEN min(t.n) = max(t.n)
					     THEN format('%s run%s', max(t.n),
							 CASE WHEN max(t.n) = 1 THEN '' ELSE 's' END)
					     ELSE format('%s to %s runs', min(t.n), max(t.n))
					END) END
		INTO enough, measured
		FROM (SELECT r.provider, r.instance_type, count(*) AS n
		      FROM fleetbench_runs(fleetbench_method_filter(method_key,
								   filter, since),
					   since) AS r
		      WHERE r.figures[fid] IS NOT NULL
		      GROUP BY r.provider, r.instance_type) AS t;
		IF enough > 0 AND cardinality(require) > 0 THEN
			RETURN format('%s instance type%s measured %s in %s runs or more, but none had %s on every run (--require)',
				      enough, CASE WHEN enough = 1 THEN '' ELSE 's' END,
				      metric_name, need, array_to_string(require, ' and '));
		END IF;
		RETURN format('rank needs at least %s runs of an instance type that measured %s; %s has %s%s',
			      need, metric_name, sel, measured,
			      CASE WHEN need > 1 THEN ' (--min-runs 1 ranks with fewer, without intervals)' ELSE '' END);
	END IF;
	RETURN NULL;
END
$$;

COMMENT ON FUNCTION fleetbench_why_empty IS
	'why compare, rank or kernels has no row for this selection, and what to ask instead (docs/queries.md, "Empty answers"); NULL when it has rows';
