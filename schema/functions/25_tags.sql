-- SPDX-License-Identifier: MIT
-- Tags in the queries (issue 17, 021): `--where tag.KEY=VALUE` and
-- `--by tag.KEY` (docs/queries.md). A query key "tag.KEY" names the tag
-- KEY of runs.tags (run_figures.tags). A function file
-- (schema/README.md), before 30_figures.sql, whose functions use these.

-- Whether k is a tag query key: "tag." and a tag key of docs/wire.md.
CREATE OR REPLACE FUNCTION fleetbench_is_tag_key(k text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
	SELECT k ~ '^tag\.[a-z][a-z0-9_]{0,31}$'
$$;

-- The tag keys among keys, without "tag.", in their order; NULL when
-- there are none (so that a query without them folds its tag work away:
-- fleetbench_tag_label() is strict).
CREATE OR REPLACE FUNCTION fleetbench_tag_keys(keys text[]) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT nullif(ARRAY(SELECT substr(k, 5) FROM unnest(keys)
				      WITH ORDINALITY AS x(k, i)
			    WHERE k LIKE 'tag.%' ORDER BY i), '{}')
$$;

/*
 * The tags a filter object asks for: {"KEY": ["v1", ...]} for each of
 * its "tag.KEY" keys (any of the values), NULL when it has none.
 * single is the part a containment test can take (@>, the GIN index):
 * {"KEY": "v"} for each key asked with one value.
 */
CREATE OR REPLACE FUNCTION fleetbench_tag_filter(filter jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT jsonb_object_agg(substr(k, 5),
				to_jsonb(fleetbench_filter_values(filter, k)))
	FROM jsonb_object_keys(coalesce(filter, '{}')) AS k
	WHERE k LIKE 'tag.%'
$$;

CREATE OR REPLACE FUNCTION fleetbench_tag_single(filter jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT jsonb_object_agg(k, v -> 0)
	FROM jsonb_each(fleetbench_tag_filter(filter)) AS t(k, v)
	WHERE jsonb_array_length(v) = 1
$$;

-- Whether tags match want (fleetbench_tag_filter(): every key, any of
-- its values); want NULL matches all.
CREATE OR REPLACE FUNCTION fleetbench_tags_match(tags jsonb, want jsonb)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT want IS NULL
	       OR NOT EXISTS (SELECT 1 FROM jsonb_each(want) AS w(k, v)
			      WHERE NOT coalesce(v @> to_jsonb(tags ->> k), false))
$$;

/*
 * A group's tags column for --by tag.KEY, and the key the groups are made
 * by: "KEY=VALUE" for each of keys (fleetbench_tag_keys()), joined by
 * ", ", "KEY=(none)" for a run without that tag. A value of other bytes
 * than [A-Za-z0-9_.:/@+-] is written as a JSON string ("KEY=\"(none)\"",
 * "KEY=\"a, env=prod\""), so that two groups never share a label: a run
 * tagged with the text (none) is not one without the tag (issue 38).
 * Strict: keys NULL (no tag key asked) is NULL, folded away by the
 * planner.
 */
CREATE OR REPLACE FUNCTION fleetbench_tag_label(tags jsonb, keys text[])
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
	SELECT string_agg(k || '=' || CASE
			WHEN NOT tags ? k THEN '(none)'
			WHEN tags ->> k ~ '^[A-Za-z0-9_.:/@+-]+$' THEN tags ->> k
			ELSE to_jsonb(tags ->> k)::text END, ', ' ORDER BY i)
	FROM unnest(keys) WITH ORDINALITY AS x(k, i)
$$;

/*
 * The --by of rank, kernels and report, which group by their own keys
 * (instance type; and kernel) and split those groups by tags: by's keys,
 * checked to be tag keys (tag.KEY) only, '{}' for NULL. Raises 22023
 * naming what of `what` (the parameter) is wrong.
 */
CREATE OR REPLACE FUNCTION fleetbench_tag_by(by text[], what text)
RETURNS text[]
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	bad text;
BEGIN
	PERFORM fleetbench_check_keys(by, what);
	SELECT k INTO bad FROM unnest(by) AS k
	WHERE NOT fleetbench_is_tag_key(k) LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION '%: only tag keys (tag.KEY) split these groups, not ''%'' (fleetbench compare --by groups by any key)',
			what, bad
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	RETURN coalesce(by, '{}');
END
$$;
