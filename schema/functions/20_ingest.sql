-- SPDX-License-Identifier: MIT
-- Ingest: fleetbench_ingest_run() (the collector's hot path, one call per
-- report with binary parameters), fleetbench_ingest_end() and
-- fleetbench_runs_stored() (the commit-time work, set-based once per
-- batch: run_figures, fleet_dirty, alert checks), and run_figures_live.
-- The JSON helpers read the probe of agents before the typed probe
-- (probe_json). A function file
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
 * A probe as runs keeps it (migration 031): part, its sections that do
 * not change between runs of a host, stored once in probe_parts; rest,
 * the ones that do (times, free memory, counters), kept in the run's row.
 * probe(runs) (functions/15_results.sql) joins them again.
 */
-- The rest's sections (the collector's probe_rest_keys in
-- collector/report_params.c is checked against them at every report)
CREATE OR REPLACE FUNCTION fleetbench_probe_rest_keys() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT '{meta,host,steal,psi,vmstat}'::text[]
$$;

CREATE OR REPLACE FUNCTION fleetbench_probe_split(p jsonb, OUT part jsonb,
						  OUT rest jsonb)
LANGUAGE sql IMMUTABLE AS $$
	SELECT x.part, p - ARRAY(SELECT jsonb_object_keys(x.part))
	FROM (SELECT p - fleetbench_probe_rest_keys() AS part) AS x
$$;

-- A writer's probe_part or probe_rest (035, piece 'part' or 'rest') as
-- jsonb: the part an object without the sections that
-- fleetbench_probe_split() keeps in the rest, the rest an object of those
-- alone; else the report is refused naming the attribute.
CREATE OR REPLACE FUNCTION fleetbench_probe_piece(t text, piece text)
RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
	j jsonb := t::jsonb;
BEGIN
	IF jsonb_typeof(j) IS DISTINCT FROM 'object'
	   OR (CASE piece WHEN 'part' THEN j ?| fleetbench_probe_rest_keys()
		ELSE j - fleetbench_probe_rest_keys() <> '{}' END) THEN
		PERFORM fleetbench_reject_as('22023', CASE piece
			WHEN 'part' THEN 'probe_part: a JSON object without meta, host, steal, psi or vmstat is expected'
			ELSE 'probe_rest: a JSON object of meta, host, steal, psi and vmstat alone is expected' END);
	END IF;
	RETURN j;
END
$$;

/*
 * The form of a parameter value of kind i, d or b that bench_results reads
 * back as JSON, a regular expression without anchors or capturing groups;
 * NULL for the other kinds (s: any text; j: a jsonb report's, cast).
 */
CREATE OR REPLACE FUNCTION fleetbench_param_form(kind text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE kind
		WHEN 'i' THEN '-?(?:0|[1-9][0-9]*)'
		WHEN 'd' THEN '-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?'
		WHEN 'b' THEN '(?:true|false)' END
$$;

/*
 * Whether every value in vals whose kind (kinds, alike) is kind has its
 * form (fleetbench_param_form), all at once: those values are picked by
 * position, joined by \x01 and matched as one text (issue 37, the ingest
 * rate: 84 us a report where one row per value took 205; joined by
 * string_agg, 50 us, where an array made first and joined took 64). A
 * value holding the separator makes the count of separators differ and
 * the answer false; so does a NULL. False says only "look at them one by one".
 */
CREATE OR REPLACE FUNCTION fleetbench_values_match(kinds text[], vals text[],
						   kind text)
RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	pos integer[] := array_positions(kinds, kind);
	form text := fleetbench_param_form(kind);
	joined text;
BEGIN
	IF coalesce(cardinality(pos), 0) = 0 THEN
		RETURN true;
	END IF;
	joined := (SELECT string_agg(vals[p], E'\x01') FROM unnest(pos) AS p);
	RETURN length(joined) - length(replace(joined, E'\x01', ''))
		       = cardinality(pos) - 1
	       AND joined ~ ('^' || form || E'(?:\x01' || form || ')*$');
END
$$;

/*
 * A shape's names in one text (044): every variant's benchmark, then
 * every variant's name, parameter key, metric and unit, joined by U+001F,
 * as a writer sends them in shape_names and result_shapes.names keeps
 * them; NULL when a name holds that character or is NULL (such a shape
 * is found by its arrays). 044_shape_names.sql joined the shapes stored
 * before alike.
 */
CREATE OR REPLACE FUNCTION fleetbench_shape_names(b text[], v text[],
						  k text[], m text[],
						  u text[])
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN length(x.j) - length(replace(x.j, E'\x1f', ''))
			 = x.n - 1 THEN x.j END
	FROM (SELECT array_to_string(y.a, E'\x1f') AS j, cardinality(y.a) AS n
	      FROM (SELECT b || v || coalesce(k, '{}') || coalesce(m, '{}')
			   || coalesce(u, '{}') AS a) AS y) AS x
$$;

/*
 * r with its shape's arrays (v_benchmark, v_variant, p_key, p_kind,
 * m_metric, m_unit) split from shape_names and shape_kinds (044), as a
 * writer that sends the arrays gives them; rejected when the text holds
 * more or fewer names or kinds than r's ends ask for. Only for a shape
 * not stored yet, or a report whose problem is named with its names.
 */
CREATE OR REPLACE FUNCTION fleetbench_shape_arrays(r fleetbench_report)
RETURNS fleetbench_report
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	nv integer := coalesce(cardinality(r.v_param_end), 0);
	np integer := r.v_param_end[nv];
	nm integer := r.v_metric_end[nv];
	names text[] := string_to_array(r.shape_names, E'\x1f');
BEGIN
	IF nv = 0 OR cardinality(names) IS DISTINCT FROM 2 * nv + np + 2 * nm
	   OR length(r.shape_kinds) IS DISTINCT FROM np THEN
		PERFORM fleetbench_reject_as('22023', format(
			'shape_names holds %s names and shape_kinds %s kinds, where the ends ask for %s and %s (%s variants, %s parameters, %s metrics)',
			cardinality(names), length(r.shape_kinds),
			2 * nv + np + 2 * nm, np, nv, np, nm));
	END IF;
	r.v_benchmark := names[1 : nv];
	r.v_variant := names[nv + 1 : 2 * nv];
	r.p_key := names[2 * nv + 1 : 2 * nv + np];
	r.m_metric := names[2 * nv + np + 1 : 2 * nv + np + nm];
	r.m_unit := names[2 * nv + np + nm + 1 : 2 * nv + np + 2 * nm];
	r.p_kind := string_to_array(r.shape_kinds, NULL);
	RETURN r;
END
$$;

/*
 * fleetbench_ingest_run(r) stores one report, given as one value of the
 * composite type fleetbench_report (the contract of docs/schema.md, made
 * by migrations: a field added to the report is an attribute added to
 * the type, and this signature stays), and returns true, or returns false
 * and stores nothing when a run with its run_id is already stored. The
 * collector sends it in binary (collector/report_params.c). _end arrays
 * are cumulative 1-based ends: item i owns elements end[i-1]+1 .. end[i];
 * m_sample_end restarts at each variant. The shape's names and kinds come
 * as arrays or, since 044, in shape_names and shape_kinds
 * (fleetbench_shape_names()), by which a stored shape is found without
 * them. caps_present false: the typed
 * capability columns are read from probe, as migration 008 did. Every
 * check below is made for every caller: a writer cannot store rows its
 * codec did not check (the collector's codec has refused most of these
 * already, with the same words). A malformed report raises SQLSTATE class
 * 22 or 23 naming what is wrong. The run is queued for
 * fleetbench_ingest_end(), which the caller runs once before COMMIT.
 */
CREATE OR REPLACE FUNCTION fleetbench_ingest_run(r fleetbench_report)
RETURNS boolean
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	started timestamptz; -- the partition key of run_results
	mkey text; -- the run's method key
	bare boolean; -- its methods row has no parameters
	p jsonb; -- the probe
	nv integer := coalesce(cardinality(r.v_benchmark), 0);
	np integer; -- the parameters, as the ends say
	nm integer; -- the metrics, alike
	-- the shape came as shape_names (044) and was found by it: the
	-- arrays of names and kinds are NULL, and their checks were made
	-- when the shape was stored
	by_names boolean := false;
	nc integer := coalesce(cardinality(r.c_name), 0);
	targets boolean; -- some comparison has one; else the run keeps NULLs
	problem text;
	state text;
	values_fine boolean; -- every parameter value of its kind's form
	kinds text; -- the parameters' kinds, one letter each
	value_kinds text[]; -- the kinds of p_value's elements
	n_int integer; -- the parameters of kind i
	shape bigint; -- its result_shapes row, if stored before
	shape_digest bytea;
	split record; -- the probe's part and rest, split here
	part_body jsonb; -- the probe's unchanging part, when parsed
	rest_body jsonb; -- its changing sections
	t_placement text; -- its topology.placement, when a string
	names bigint; -- the comparisons' comparison_names row, if any
	names_digest bytea;
	part bigint; -- its probe_parts row
	part_digest bytea;
	-- the typed capabilities, from caps or the probe
	t_thp_enabled text; t_thp_defrag text; t_thp_shmem text;
	t_sizes integer[]; t_nr bigint[]; t_free bigint[]; t_1g boolean;
	t_disabled integer; t_setup text; t_setup_errno integer;
	t_sqpoll text; t_sqpoll_errno integer; t_opcodes text[];
	t_features text[]; t_vcpus integer; t_memory bigint; t_cpu text;
	t_vm text; t_container text;
BEGIN
	PERFORM fleetbench_schema_guard();
	started := timestamptz 'epoch' + r.started_ms * interval '1 millisecond';
	-- the probe: whole (probe), or in two as the collector writes it
	-- (probe_part and probe_rest, 035: the part is parsed only when no
	-- part with its digest is stored)
	IF r.probe_part IS NOT NULL OR r.probe_rest IS NOT NULL THEN
		IF r.probe IS NOT NULL OR r.probe_part IS NULL
		   OR r.probe_rest IS NULL THEN
			PERFORM fleetbench_reject_as('22023',
				'probe: either probe or both probe_part and probe_rest');
		END IF;
		rest_body := fleetbench_probe_piece(r.probe_rest, 'rest');
	ELSE
		p := r.probe::jsonb;
		IF jsonb_typeof(p) IS DISTINCT FROM 'object' THEN
			PERFORM fleetbench_reject_as('22023', format(
				'probe: a JSON object is expected, not %s',
				coalesce(jsonb_typeof(p), 'nothing')));
		END IF;
	END IF;
	-- the shape's names in one text (044): the shape found by them, its
	-- kinds and its ends, or the text split into the arrays a writer
	-- may send instead, and the report served as one that did
	IF r.shape_names IS NOT NULL OR r.shape_kinds IS NOT NULL THEN
		IF r.shape_names IS NULL OR r.shape_kinds IS NULL
		   OR r.v_benchmark IS NOT NULL OR r.v_variant IS NOT NULL
		   OR r.p_key IS NOT NULL OR r.p_kind IS NOT NULL
		   OR r.m_metric IS NOT NULL OR r.m_unit IS NOT NULL THEN
			PERFORM fleetbench_reject_as('22023',
				'the shape: either shape_names and shape_kinds, or the arrays of names and kinds');
		END IF;
		nv := coalesce(cardinality(r.v_param_end), 0);
		SELECT s.shape_id INTO shape FROM result_shapes AS s
		WHERE s.names = r.shape_names AND s.p_kind = r.shape_kinds
		  AND s.v_param_end = r.v_param_end
		  AND s.v_metric_end = r.v_metric_end
		LIMIT 1;
		by_names := shape IS NOT NULL;
		IF NOT by_names THEN
			r := fleetbench_shape_arrays(r);
		END IF;
	END IF;
	np := coalesce(r.v_param_end[nv], 0);
	nm := coalesce(r.v_metric_end[nv], 0);
	targets := coalesce(cardinality(array_remove(r.c_target_half_width, NULL)), 0)
		   + coalesce(cardinality(array_remove(r.c_target_reached, NULL)), 0)
		   + coalesce(cardinality(array_remove(r.c_rounds, NULL)), 0) > 0;

	-- what a writer calling this function must not get past (the
	-- codec's rules, docs/wire.md): times from 2020 to a day
	-- ahead (a start in the year 262143 would sort as the latest run
	-- forever, and never be pruned), the end not before the start, a
	-- machine id of 32 lowercase hex digits (hosts are keyed by it)
	IF r.started_ms IS NULL OR r.finished_ms IS NULL
	   OR r.started_ms < 1577836800000 OR r.finished_ms < r.started_ms
	   OR r.finished_ms > (extract(epoch FROM now()) * 1000)::bigint
			    + 86400000 THEN
		PERFORM fleetbench_reject_as('22023', format(
			'started_ms %s, finished_ms %s: a run starts from 2020-01-01 and ends after it starts, at most a day ahead',
			r.started_ms, r.finished_ms));
	END IF;
	IF r.machine_id IS NULL OR r.machine_id !~ '^[0-9a-f]{32}$' THEN
		PERFORM fleetbench_reject_as('22023', format(
			'machine_id %s: not 32 lowercase hex digits',
			coalesce(quote_literal(left(r.machine_id, 64)), 'NULL')));
	END IF;
	-- labels that tables print: no control character (the tags' rule)
	SELECT x.k INTO problem
	FROM (VALUES ('provider', r.provider), ('instance_type', r.instance_type),
		     ('region', r.region), ('hostname', r.hostname)) AS x(k, v)
	WHERE x.v ~ '[\x01-\x1f\x7f-\x9f]'
	LIMIT 1;
	IF problem IS NOT NULL THEN
		PERFORM fleetbench_reject_as('22023', format(
			'%s holds a control character', problem));
	END IF;

	-- the arrays line up: one cheap test, then the slow path says how
	-- (the names' arrays, when the shape was found by its names, are
	-- the stored shape's, which lines up with the ends it was found by)
	IF coalesce(cardinality(r.v_status), 0) <> nv
	   OR coalesce(cardinality(r.v_reason), 0) <> nv
	   OR coalesce(cardinality(r.v_param_end), 0) <> nv
	   OR coalesce(cardinality(r.v_window_end), 0) <> nv
	   OR coalesce(cardinality(r.v_metric_end), 0) <> nv
	   OR coalesce(cardinality(r.v_sample_end), 0) <> nv
	   OR coalesce(cardinality(r.p_value), 0) + coalesce(cardinality(r.p_int), 0)
	      <> np
	   OR coalesce(r.v_window_end[nv], 0) <> coalesce(cardinality(r.w_steal_pct), 0)
	   OR coalesce(cardinality(r.w_loadavg1), 0) <> coalesce(cardinality(r.w_steal_pct), 0)
	   OR coalesce(cardinality(r.w_wall_s), 0) <> coalesce(cardinality(r.w_steal_pct), 0)
	   OR coalesce(cardinality(r.w_noisy), 0) <> coalesce(cardinality(r.w_steal_pct), 0)
	   OR coalesce(cardinality(r.m_median), 0) <> nm
	   OR coalesce(cardinality(r.m_sample_end), 0) <> nm
	   OR coalesce(r.v_sample_end[nv], 0) <> coalesce(cardinality(r.samples), 0)
	   OR array_position(r.v_param_end, NULL) IS NOT NULL
	   OR array_position(r.v_window_end, NULL) IS NOT NULL
	   OR array_position(r.v_metric_end, NULL) IS NOT NULL
	   OR array_position(r.v_sample_end, NULL) IS NOT NULL
	   OR array_position(r.m_sample_end, NULL) IS NOT NULL
	   OR array_position(r.p_value, NULL) IS NOT NULL
	   OR array_position(r.p_int, NULL) IS NOT NULL
	   OR NOT by_names AND (
		coalesce(cardinality(r.v_variant), 0) <> nv
		OR np <> coalesce(cardinality(r.p_key), 0)
		OR coalesce(cardinality(r.p_kind), 0) <> np
		OR nm <> coalesce(cardinality(r.m_metric), 0)
		OR coalesce(cardinality(r.m_unit), 0) <> nm
		OR array_position(r.v_benchmark, NULL) IS NOT NULL
		OR array_position(r.v_variant, NULL) IS NOT NULL
		OR array_position(r.m_metric, NULL) IS NOT NULL
		OR array_position(r.m_unit, NULL) IS NOT NULL
		OR array_position(r.p_key, NULL) IS NOT NULL
		OR array_position(r.p_kind, NULL) IS NOT NULL) THEN
		-- the problem named with the names of the shape found
		IF by_names THEN
			r := fleetbench_shape_arrays(r);
		END IF;
		SELECT x.state, x.problem INTO state, problem
		FROM (VALUES
			(1, r.v_benchmark IS NOT NULL AND array_position(r.v_benchmark, NULL) IS NOT NULL,
			 '23502', format('variant %s has no benchmark', array_position(r.v_benchmark, NULL))),
			(2, r.v_variant IS NOT NULL AND array_position(r.v_variant, NULL) IS NOT NULL,
			 '23502', format('variant %s of %s has no variant name', array_position(r.v_variant, NULL),
					 r.v_benchmark[array_position(r.v_variant, NULL)])),
			(3, r.m_metric IS NOT NULL AND array_position(r.m_metric, NULL) IS NOT NULL,
			 '23502', format('metric %s has no "metric" name', array_position(r.m_metric, NULL))),
			(4, r.m_unit IS NOT NULL AND array_position(r.m_unit, NULL) IS NOT NULL,
			 '23502', format('metric %s has no "unit"', coalesce(
				r.m_metric[array_position(r.m_unit, NULL)],
				array_position(r.m_unit, NULL)::text))),
			(5, r.p_key IS NOT NULL AND (array_position(r.p_key, NULL) IS NOT NULL
				OR array_position(r.p_kind, NULL) IS NOT NULL
				OR array_position(r.p_value, NULL) IS NOT NULL
				OR array_position(r.p_int, NULL) IS NOT NULL),
			 '23502', 'a parameter has no key, kind or value'),
			(9, true, '22023', format(
				'the report''s arrays do not line up: %s variants (v_benchmark), ends of parameters %s of %s (p_key), windows %s of %s (w_steal_pct), metrics %s of %s (m_metric), samples %s of %s (samples)',
				nv, r.v_param_end[nv], cardinality(r.p_key),
				r.v_window_end[nv], cardinality(r.w_steal_pct),
				r.v_metric_end[nv], cardinality(r.m_metric),
				r.v_sample_end[nv], cardinality(r.samples))))
		     AS x(n, bad, state, problem)
		WHERE x.bad
		ORDER BY x.n LIMIT 1;
		PERFORM fleetbench_reject_as(state, problem);
	END IF;
	IF coalesce(cardinality(r.c_benchmark), 0) <> nc
	   OR coalesce(cardinality(r.c_metric), 0) <> nc
	   OR coalesce(cardinality(r.c_numerator), 0) <> nc
	   OR coalesce(cardinality(r.c_denominator), 0) <> nc
	   OR coalesce(cardinality(r.c_ratio), 0) <> nc
	   OR coalesce(cardinality(r.c_ci_low), 0) <> nc
	   OR coalesce(cardinality(r.c_ci_high), 0) <> nc
	   OR coalesce(cardinality(r.c_level), 0) <> nc
	   OR coalesce(cardinality(r.c_method), 0) <> nc
	   OR coalesce(cardinality(r.c_reason), 0) <> nc
	   OR coalesce(cardinality(r.c_target_half_width), nc) <> nc
	   OR coalesce(cardinality(r.c_target_reached), nc) <> nc
	   OR coalesce(cardinality(r.c_rounds), nc) <> nc THEN
		PERFORM fleetbench_reject_as('22023', format(
			'the comparisons'' arrays do not line up with c_name (%s)',
			nc));
	END IF;
	-- the windows' reasons and vCPUs (024) line up with the windows
	IF coalesce(cardinality(r.w_noisy_reason), cardinality(r.w_steal_pct), 0)
	   <> coalesce(cardinality(r.w_steal_pct), 0)
	   OR coalesce(cardinality(r.w_cpus), cardinality(r.w_steal_pct), 0)
	      <> coalesce(cardinality(r.w_steal_pct), 0) THEN
		PERFORM fleetbench_reject_as('22023', format(
			'the windows'' arrays do not line up: %s windows (w_steal_pct), %s noisy reasons (w_noisy_reason), %s cpus (w_cpus)',
			coalesce(cardinality(r.w_steal_pct), 0),
			cardinality(r.w_noisy_reason), cardinality(r.w_cpus)));
	END IF;

	-- the costs' arrays (025, 026) line up with cost_benchmark
	IF r.cost_benchmark IS NOT NULL
	   AND (coalesce(cardinality(r.cost_wall_s), -1) <> cardinality(r.cost_benchmark)
		OR coalesce(cardinality(r.cost_cpu_s), -1) <> cardinality(r.cost_benchmark)
		OR coalesce(cardinality(r.cost_peak_memory_bytes), -1) <> cardinality(r.cost_benchmark)
		OR coalesce(cardinality(r.cost_written_bytes), -1) <> cardinality(r.cost_benchmark)
		OR coalesce(cardinality(r.cost_allowance_s), -1) <> cardinality(r.cost_benchmark)
		OR coalesce(cardinality(r.cost_rounds), -1) <> cardinality(r.cost_benchmark)) THEN
		PERFORM fleetbench_reject_as('22023', format(
			'the costs'' arrays do not line up with cost_benchmark (%s)',
			cardinality(r.cost_benchmark)));
	END IF;

	-- the targets (024), as the codec checks them: a half-width in
	-- (0, 1], at least one round (each field may be absent)
	IF r.c_target_half_width IS NOT NULL OR r.c_rounds IS NOT NULL THEN
		SELECT CASE WHEN NOT (x.h > 0 AND x.h <= 1)
			    THEN format('comparison %s: target_half_width %s is outside (0, 1]',
					coalesce(r.c_name[x.i], x.i::text), x.h)
			    ELSE format('comparison %s: rounds %s is below 1',
					coalesce(r.c_name[x.i], x.i::text), x.n) END
		INTO problem
		FROM (SELECT i, r.c_target_half_width[i] AS h, r.c_rounds[i] AS n
		      FROM generate_series(1, nc) AS i) AS x
		WHERE NOT (x.h > 0 AND x.h <= 1) OR x.n < 1
		ORDER BY x.i LIMIT 1;
		IF problem IS NOT NULL THEN
			PERFORM fleetbench_reject_as('22023', problem);
		END IF;
	END IF;

	-- the report's shape (030: its names, units and ends) and its
	-- comparisons' names (032), stored once and found again: a shape
	-- or names found were stored by a report that passed the checks
	-- below, so the checks that read only them (their ends, each name
	-- once) are not made again (a fifth of the time of the checks).
	-- First by their arrays, equal to a stored row's (its kinds or
	-- first array by a hash index, 042; comparing the arrays takes half
	-- the time of their digest's text), then, when none is equal (not
	-- stored, or arrays an equality cannot match: NULL kinds), by their
	-- digests, which this function computes from the arrays as
	-- 030_result_shapes.sql and 032 did, and a new row is stored with.
	-- A shape that came as its names and was not found by them above
	-- has no stored row its arrays equal (every stored shape has its
	-- names but one with a name holding U+001F, which a split never
	-- makes): its digest alone is looked for.
	kinds := coalesce(r.shape_kinds, array_to_string(r.p_kind, ''));
	IF nv > 0 AND shape IS NULL AND r.shape_names IS NULL THEN
		SELECT s.shape_id INTO shape FROM result_shapes AS s
		WHERE s.p_kind = kinds AND s.v_metric_end = r.v_metric_end
		  AND s.v_param_end = r.v_param_end
		  AND s.v_benchmark = r.v_benchmark
		  AND s.v_variant = r.v_variant AND s.m_unit = r.m_unit
		  AND s.m_metric = r.m_metric AND s.p_key = r.p_key
		LIMIT 1;
	END IF;
	IF nv > 0 AND shape IS NULL THEN
		shape_digest := sha256(convert_to(ROW(r.v_benchmark, r.v_variant,
			r.v_param_end, r.p_key, kinds,
			r.v_metric_end, r.m_metric, r.m_unit)::text, 'UTF8'));
		SELECT s.shape_id INTO shape FROM result_shapes AS s
		WHERE s.digest = shape_digest;
	END IF;
	IF nc > 0 THEN
		SELECT x.names_id INTO names FROM comparison_names AS x
		WHERE x.c_name = r.c_name AND x.c_benchmark = r.c_benchmark
		  AND x.c_metric = r.c_metric
		  AND x.c_numerator = r.c_numerator
		  AND x.c_denominator = r.c_denominator
		LIMIT 1;
	END IF;
	IF nc > 0 AND names IS NULL THEN
		names_digest := sha256(convert_to(ROW(r.c_name, r.c_benchmark,
			r.c_metric, r.c_numerator, r.c_denominator)::text,
			'UTF8'));
		SELECT x.names_id INTO names FROM comparison_names AS x
		WHERE x.digest = names_digest;
	END IF;

	-- the values of kind i as integers (p_int, 043): one each, and
	-- p_value the other kinds' (value_kinds); else every kind's in
	-- p_value
	IF r.p_int IS NOT NULL THEN
		value_kinds := CASE WHEN by_names
				    THEN string_to_array(replace(kinds, 'i', ''), NULL)
				    ELSE array_remove(r.p_kind, 'i') END;
		n_int := np - coalesce(cardinality(value_kinds), 0);
		IF cardinality(r.p_int) <> n_int THEN
			PERFORM fleetbench_reject_as('22023', format(
				'p_int holds %s values, but %s parameters are of kind i',
				cardinality(r.p_int), n_int));
		END IF;
	ELSE
		value_kinds := coalesce(r.p_kind, string_to_array(kinds, NULL));
	END IF;

	-- the parameter values that bench_results reads back as JSON, all
	-- of a kind at once (integers as p_int need nothing); when they are
	-- not all fine (or a kind is j, from a jsonb report), one by one
	-- below, which names the first
	values_fine := kinds ~ '^[sidb]*$'
		AND length(kinds) = np
		AND (strpos(kinds, 'i') = 0 OR r.p_int IS NOT NULL
		     OR fleetbench_values_match(value_kinds, r.p_value, 'i'))
		AND (strpos(kinds, 'd') = 0
		     OR fleetbench_values_match(value_kinds, r.p_value, 'd'))
		AND (strpos(kinds, 'b') = 0
		     OR fleetbench_values_match(value_kinds, r.p_value, 'b'));

	-- ends that never step back, sample ends within their variant,
	-- each variant, metric of a variant and comparison named once,
	-- parameter values that bench_results can read back as JSON: one
	-- statement, the first problem found. With the shape and names
	-- found and the values fine, what is left to check is the windows'
	-- and samples' ends: first in two passes that only say whether they
	-- are fine (the variants', then the metrics' sample ends, each
	-- against the one before it unless it starts a variant: a third of
	-- the statement's time), the statement only when they are not, to
	-- name the problem.
	IF shape IS NOT NULL AND (names IS NOT NULL OR nc = 0) AND values_fine
	   AND NOT EXISTS (
		SELECT FROM unnest(r.v_metric_end, r.v_sample_end, r.v_window_end)
			WITH ORDINALITY AS u(me, se, we, i)
		WHERE u.we < coalesce(r.v_window_end[u.i - 1], 0)
		   OR u.se < coalesce(r.v_sample_end[u.i - 1], 0)
		   OR CASE WHEN u.me > coalesce(r.v_metric_end[u.i - 1], 0)
			   THEN r.m_sample_end[u.me]
				<> u.se - coalesce(r.v_sample_end[u.i - 1], 0)
				OR r.m_sample_end[coalesce(r.v_metric_end[u.i - 1], 0) + 1] < 0
			   ELSE u.se <> coalesce(r.v_sample_end[u.i - 1], 0) END)
	   AND NOT EXISTS (
		SELECT FROM generate_series(2, cardinality(r.m_sample_end)) AS j
		WHERE r.m_sample_end[j] < r.m_sample_end[j - 1]
		  AND NOT j - 1 = ANY (r.v_metric_end)) THEN
		NULL; -- the found shape's metric ends are in order: all fine
	ELSIF nv > 0 OR nc > 0 THEN
		-- the problem named with the names of the shape found
		IF by_names THEN
			r := fleetbench_shape_arrays(r);
		END IF;
		SELECT x.state, x.problem INTO state, problem
		FROM (SELECT '22023' AS state, CASE
			WHEN shape IS NULL
			     AND (r.v_param_end <> ARRAY(SELECT unnest(r.v_param_end) ORDER BY 1)
				  OR r.v_param_end[1] < 0) THEN 'v_param_end steps back'
			WHEN r.v_window_end <> ARRAY(SELECT unnest(r.v_window_end) ORDER BY 1)
			     OR r.v_window_end[1] < 0 THEN 'v_window_end steps back'
			WHEN shape IS NULL
			     AND (r.v_metric_end <> ARRAY(SELECT unnest(r.v_metric_end) ORDER BY 1)
				  OR r.v_metric_end[1] < 0) THEN 'v_metric_end steps back'
			WHEN r.v_sample_end <> ARRAY(SELECT unnest(r.v_sample_end) ORDER BY 1)
			     OR r.v_sample_end[1] < 0 THEN 'v_sample_end steps back'
			END AS problem
		      UNION ALL
		      SELECT '23505', coalesce(
			(SELECT format('benchmark variant %s/%s is listed twice', b, v)
			 FROM unnest(r.v_benchmark, r.v_variant) AS x(b, v)
			 WHERE shape IS NULL
			 GROUP BY b, v HAVING count(*) > 1 LIMIT 1),
			(SELECT format('comparison %s is listed twice', c)
			 FROM unnest(r.c_name) AS c
			 WHERE names IS NULL
			 GROUP BY c HAVING count(*) > 1 LIMIT 1),
			(SELECT format('metric %s of %s/%s is listed twice',
				       m.metric, v.b, v.v)
			 FROM unnest(r.v_benchmark, r.v_variant, r.v_metric_end)
				 WITH ORDINALITY AS v(b, v, e, i),
			      unnest(r.m_metric[coalesce(r.v_metric_end[v.i - 1], 0) + 1
					      : v.e]) AS m(metric)
			 WHERE shape IS NULL
			 GROUP BY v.i, v.b, v.v, m.metric HAVING count(*) > 1
			 LIMIT 1))
		      UNION ALL
		      SELECT '22023',
			(SELECT format('the sample ends of %s/%s do not cover its %s samples (m_sample_end %s)',
				       v.b, v.v, v.se - v.se0, v.s::text)
			 FROM (SELECT u.b, u.v, u.se,
				      coalesce(r.v_sample_end[u.i - 1], 0) AS se0,
				      r.m_sample_end[coalesce(r.v_metric_end[u.i - 1], 0) + 1
						   : u.me] AS s
			       FROM unnest(r.v_benchmark, r.v_variant, r.v_metric_end,
					   r.v_sample_end)
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
			 FROM unnest(r.p_key, r.p_kind,
				     fleetbench_param_values(r.p_kind, r.p_value,
							     r.p_int))
				     AS x(k, t, v)
			 WHERE values_fine IS NOT TRUE AND CASE
				WHEN x.t = 's' THEN false
				-- JSON (jsonb reports only): a bad one fails the cast
				WHEN x.t = 'j' THEN x.v::jsonb IS NULL
				WHEN fleetbench_param_form(x.t) IS NOT NULL
				THEN x.v !~ ('^' || fleetbench_param_form(x.t) || '$')
				ELSE true END
			 LIMIT 1)) AS x
		WHERE x.problem IS NOT NULL
		LIMIT 1;
		IF problem IS NOT NULL THEN
			PERFORM fleetbench_reject_as(state, problem);
		END IF;
	END IF;

	-- the tags (021): keys and values line up, each key once and of
	-- the codec's form (docs/wire.md), each value 1 to 64 bytes without
	-- a control character; one test per report
	IF r.tag_keys IS NOT NULL AND (
	   coalesce(cardinality(r.tag_values), -1) <> cardinality(r.tag_keys)
	   OR cardinality(r.tag_keys) > 16
	   OR array_position(r.tag_values, NULL) IS NOT NULL
	   OR EXISTS (SELECT 1 FROM unnest(r.tag_keys) AS k
		      WHERE k IS NULL OR k !~ '^[a-z][a-z0-9_]{0,31}$')
	   OR EXISTS (SELECT 1 FROM unnest(r.tag_values) AS v
		      WHERE octet_length(v) NOT BETWEEN 1 AND 64
			    OR v ~ '[\x01-\x1f\x7f-\x9f]')
	   OR (SELECT count(DISTINCT k) FROM unnest(r.tag_keys) AS k)
	      <> cardinality(r.tag_keys)) THEN
		PERFORM fleetbench_reject_as('22023', format(
			'tags: %s keys and %s values, at most 16 keys of [a-z][a-z0-9_]{0,31}, each once, each value 1 to 64 bytes without a control character',
			cardinality(r.tag_keys), cardinality(r.tag_values)));
	END IF;

	-- the method: stored once per key; a report without one (an agent
	-- before 008) is keyed by its profile alone, or 'unknown'
	mkey := coalesce(r.method_key, nullif(r.profile, ''), 'unknown');
	-- one index probe when the method is known, as it mostly is
	SELECT m.repeats IS NULL INTO bare FROM methods AS m WHERE m.key = mkey;
	IF NOT FOUND AND r.method_key IS NULL THEN
		-- a report without a method (an agent before 008) is keyed
		-- by its profile alone, or 'unknown'
		INSERT INTO methods (key, profile) VALUES (mkey, mkey)
		ON CONFLICT (key) DO NOTHING;
	ELSIF NOT FOUND THEN
		INSERT INTO methods (key, profile, repeats, chase_bytes,
				     chase_accesses, fault_bytes, file_bytes,
				     io_ms, iodepth, seq_bytes, seq_block,
				     fs_increments, "only", randread_file,
				     mmap_bytes, mmap_accesses, bw_bytes,
				     scaling_ms, wb_bytes, wb_fsync_bytes,
				     with_database, db_scale, db_rate,
				     db_seconds, writeback_dirty_bytes)
		VALUES (mkey, r.method_profile, r.repeats, r.chase_bytes,
			r.chase_accesses, r.fault_bytes, r.file_bytes, r.io_ms, r.iodepth,
			r.seq_bytes, r.seq_block, r.fs_increments, r.method_only,
			r.randread_file, r.mmap_bytes, r.mmap_accesses, r.bw_bytes,
			r.scaling_ms, r.wb_bytes, r.wb_fsync_bytes, r.with_database,
			r.db_scale, r.db_rate, r.db_seconds, r.writeback_dirty_bytes)
		ON CONFLICT (key) DO NOTHING;
	ELSIF bare AND r.method_key IS NOT NULL AND r.repeats IS NOT NULL THEN
		-- a key first stored from a profile alone gains its
		-- parameters
		UPDATE methods AS m
		SET repeats = r.repeats,
		    chase_bytes = r.chase_bytes,
		    chase_accesses = r.chase_accesses,
		    fault_bytes = r.fault_bytes,
		    file_bytes = r.file_bytes,
		    io_ms = r.io_ms,
		    iodepth = r.iodepth,
		    seq_bytes = r.seq_bytes,
		    seq_block = r.seq_block,
		    fs_increments = r.fs_increments,
		    "only" = r.method_only,
		    randread_file = r.randread_file,
		    mmap_bytes = r.mmap_bytes,
		    mmap_accesses = r.mmap_accesses,
		    bw_bytes = r.bw_bytes,
		    scaling_ms = r.scaling_ms,
		    wb_bytes = r.wb_bytes,
		    wb_fsync_bytes = r.wb_fsync_bytes,
		    with_database = r.with_database,
		    db_scale = r.db_scale,
		    db_rate = r.db_rate,
		    db_seconds = r.db_seconds,
		    writeback_dirty_bytes =
			    r.writeback_dirty_bytes
		WHERE m.key = mkey AND m.repeats IS NULL;
	END IF;

	IF r.caps_present THEN
		t_thp_enabled := r.thp_enabled;
		t_thp_defrag := r.thp_defrag;
		t_thp_shmem := r.thp_shmem_enabled;
		t_sizes := r.hugepage_size_kb;
		t_nr := r.hugepage_nr;
		t_free := r.hugepage_free;
		t_1g := 1048576 = ANY (r.hugepage_size_kb);
		t_disabled := r.io_uring_disabled;
		t_setup := r.io_uring_setup;
		t_setup_errno := r.io_uring_setup_errno;
		t_sqpoll := r.sqpoll;
		t_sqpoll_errno := r.sqpoll_errno;
		t_opcodes := r.io_uring_opcodes;
		t_features := r.io_uring_features;
		t_vcpus := r.vcpus;
		t_memory := r.memory_kb;
		t_cpu := r.cpu_model;
		t_vm := r.vm;
		t_container := r.container;
	ELSE
		-- as 008's fleetbench_ingest() read them from the probe (a
		-- probe in two is put together for it)
		IF p IS NULL THEN
			part_body := fleetbench_probe_piece(r.probe_part, 'part');
			p := part_body || rest_body;
		END IF;
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

	-- the probe's unchanging part (031), found by its digest (of its
	-- text as written: the collector's, or jsonb's when split here) or
	-- stored, and its placement (023, a column made from its body: 039)
	IF r.probe_part IS NULL THEN
		SELECT * INTO split FROM fleetbench_probe_split(p);
		part_body := split.part;
		rest_body := split.rest;
		part_digest := sha256(convert_to(part_body::text, 'UTF8'));
	ELSE
		part_digest := sha256(convert_to(r.probe_part, 'UTF8'));
	END IF;
	-- ({"unknown": why} when the probe could not read it: NULL; the
	-- part's column made from its body, 039)
	SELECT x.part_id, x.placement INTO part, t_placement
	FROM probe_parts AS x
	WHERE x.digest = part_digest;
	IF NOT FOUND THEN
		part_body := coalesce(part_body,
				      fleetbench_probe_piece(r.probe_part, 'part'));
		INSERT INTO probe_parts (digest, body)
		VALUES (part_digest, part_body)
		ON CONFLICT (digest) DO NOTHING
		RETURNING part_id, placement INTO part, t_placement;
		-- another transaction stored it since (and committed)
		IF part IS NULL THEN
			SELECT x.part_id, x.placement INTO part, t_placement
			FROM probe_parts AS x
			WHERE x.digest = part_digest;
		END IF;
	END IF;

	-- the comparisons' names (032), found above by their digest or
	-- stored
	IF nc > 0 AND names IS NULL THEN
		INSERT INTO comparison_names (digest, c_name, c_benchmark,
					      c_metric, c_numerator,
					      c_denominator)
		VALUES (names_digest, r.c_name, r.c_benchmark,
			r.c_metric, r.c_numerator, r.c_denominator)
		ON CONFLICT (digest) DO NOTHING
		RETURNING names_id INTO names;
		-- another transaction stored it since (and committed)
		IF names IS NULL THEN
			SELECT x.names_id INTO names
			FROM comparison_names AS x
			WHERE x.digest = names_digest;
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
			  probe_part, probe_rest, method, thp_shmem_enabled, hugepage_nr,
			  hugepage_free, cpu_model, comparison_names_id, c_ratio,
			  c_ci_low, c_ci_high, c_level, c_method, c_reason,
			  tags, placement, c_target_half_width,
			  c_target_reached, c_rounds, cost_benchmark, cost_wall_s,
			  cost_cpu_s, cost_peak_memory_bytes, cost_written_bytes,
			  cost_allowance_s, cost_rounds)
	VALUES (r.run_id, started,
		timestamptz 'epoch' + r.finished_ms * interval '1 millisecond',
		r.schema_version, r.agent_version,
		coalesce(nullif(r.provider, ''), 'unknown'),
		coalesce(nullif(r.instance_type, ''), 'unknown'),
		coalesce(nullif(r.region, ''), 'unknown'),
		r.provider_source, r.instance_type_source, r.region_source,
		r.hostname, r.machine_id, r.kernel_release, r.kernel_version,
		r.kernel_cmdline, r.profile, r.seed, t_thp_enabled, t_thp_defrag,
		t_sizes, t_1g, t_disabled, t_setup, t_setup_errno, t_sqpoll,
		t_sqpoll_errno, t_opcodes, t_features, t_vcpus, t_memory,
		t_vm, t_container, part, rest_body, mkey, t_thp_shmem, t_nr,
		t_free, t_cpu,
		names,
		CASE WHEN nc > 0 THEN r.c_ratio END,
		CASE WHEN nc > 0 THEN r.c_ci_low END,
		CASE WHEN nc > 0 THEN r.c_ci_high END,
		CASE WHEN nc > 0 THEN r.c_level END,
		CASE WHEN nc > 0 THEN r.c_method END,
		CASE WHEN nc > 0 THEN r.c_reason END,
		coalesce(jsonb_object(r.tag_keys, r.tag_values), '{}'),
		t_placement,
		-- no target anywhere (fixed repeats): NULL, as before 024
		CASE WHEN targets THEN r.c_target_half_width END,
		CASE WHEN targets THEN r.c_target_reached END,
		CASE WHEN targets THEN r.c_rounds END,
		-- what the run cost its host (025, 026, in the row since
		-- 040): an element per benchmark and the total; NULL from
		-- agents before it
		r.cost_benchmark, r.cost_wall_s, r.cost_cpu_s,
		r.cost_peak_memory_bytes, r.cost_written_bytes,
		r.cost_allowance_s, r.cost_rounds)
	ON CONFLICT (run_id) DO NOTHING;
	IF NOT FOUND THEN
		RETURN false;
	END IF;

	IF nv > 0 THEN
		-- the report's shape, found above by its digest or stored
		IF shape IS NULL THEN
			INSERT INTO result_shapes (digest, v_benchmark, v_variant,
						   v_param_end, p_key, p_kind,
						   v_metric_end, m_metric, m_unit,
						   figure_pos, names)
			VALUES (shape_digest, r.v_benchmark, r.v_variant,
				r.v_param_end, r.p_key,
				array_to_string(r.p_kind, ''), r.v_metric_end,
				r.m_metric, r.m_unit,
				fleetbench_figure_positions(r.v_benchmark,
					r.v_variant, r.v_metric_end, r.m_metric),
				fleetbench_shape_names(r.v_benchmark, r.v_variant,
					r.p_key, r.m_metric, r.m_unit))
			ON CONFLICT (digest) DO NOTHING
			RETURNING shape_id INTO shape;
			-- another transaction stored it since (and committed)
			IF shape IS NULL THEN
				SELECT s.shape_id INTO shape FROM result_shapes AS s
				WHERE s.digest = shape_digest;
			END IF;
		END IF;
		INSERT INTO run_results (run_id, started_at, shape_id, v_status,
					 v_reason, p_value, v_window_end,
					 w_steal_pct, w_loadavg1, w_wall_s,
					 w_noisy, m_median, m_sample_end,
					 v_sample_end, samples, w_noisy_reason,
					 w_cpus, p_int)
		VALUES (r.run_id, started, shape, r.v_status, r.v_reason,
			r.p_value, r.v_window_end, r.w_steal_pct, r.w_loadavg1,
			r.w_wall_s, r.w_noisy, r.m_median, r.m_sample_end,
			r.v_sample_end, r.samples,
			-- all NULL (an older agent, no window noisy): NULL
			CASE WHEN array_remove(r.w_noisy_reason, NULL) <> '{}'
			     THEN r.w_noisy_reason END,
			CASE WHEN array_remove(r.w_cpus, NULL) <> '{}'
			     THEN r.w_cpus END,
			r.p_int);
	END IF;

	-- for fleetbench_ingest_end(): a setting local to the transaction,
	-- not a temporary table (whose removal at a backend's exit is a
	-- commit of its own: one that waits for a synchronous standby
	-- forever, so a terminated backend would never exit)
	PERFORM set_config('fleetbench.ingested',
			   coalesce(current_setting('fleetbench.ingested', true),
				    '') ||
			   r.run_id::text || ',', true);
	RETURN true;
END
$$;

/*
 * The commit-time work for the runs given: their run_figures rows (which
 * mark fleet_dirty), then the alert check of each run whose host has a
 * run on another kernel, oldest first, then the fleet-level evaluation of
 * each kernel those runs are on, then the drift check of each of their
 * groups. An alert check that fails is
 * logged and kept in alert_errors, never fails the caller. Callable by
 * hand for runs stored without fleetbench_ingest_run().
 */
CREATE OR REPLACE FUNCTION fleetbench_runs_stored(ids uuid[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	r record;
	state text;
	message text;
	kernels text[] := '{}'; -- the kernels hosts moved to
	kernel_runs uuid[] := '{}';
BEGIN
	INSERT INTO run_figures (run_id, started_at, provider, instance_type,
				 region, kernel_release, machine_id, hostname,
				 vm, vcpus, thp_enabled, iouring_ok, sqpoll_ok,
				 hugepage_1g, steal_flagged, failed, method,
				 flags, tags, figures)
	SELECT l.run_id, l.started_at, l.provider, l.instance_type, l.region,
	       l.kernel_release, l.machine_id, l.hostname, l.vm, l.vcpus,
	       l.thp_enabled, l.iouring_ok, l.sqpoll_ok, l.hugepage_1g,
	       l.steal_flagged, l.failed, l.method, l.flags, l.tags, l.figures
	FROM run_figures_live AS l WHERE l.run_id = ANY (ids)
	ON CONFLICT (run_id) DO NOTHING;

	-- the host's first and last kernel: two probes of
	-- runs_host_kernel_idx
	FOR r IN SELECT n.run_id, n.kernel_release FROM runs AS n
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
		-- each new kernel once: its run is the one an error is kept
		-- against
		IF NOT r.kernel_release = ANY (kernels) THEN
			kernels := kernels || r.kernel_release;
			kernel_runs := kernel_runs || r.run_id;
		END IF;
	END LOOP;

	-- the fleet-level test of each kernel a host moved to: one
	-- evaluation of its roll-out (docs/alerts.md, "Fleet-level alerts")
	FOR i IN 1 .. coalesce(cardinality(kernels), 0) LOOP
		BEGIN
			PERFORM fleetbench_fleet_alerts_raise(kernels[i]);
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE,
						message = MESSAGE_TEXT;
			RAISE WARNING 'fleetbench: fleet evaluation of kernel % failed: %',
				kernels[i], message;
			INSERT INTO alert_errors (run_id, sqlstate, message)
			VALUES (kernel_runs[i], state, message);
		END;
	END LOOP;

	-- drift with no kernel change (56_drift.sql): each group of these
	-- runs once a day, at its first run of a later day than it was
	-- checked for, over the days before that one; four groups a batch
	-- at most
	FOR r IN WITH g AS (
			SELECT min(n.run_id::text)::uuid AS run_id, n.provider,
			       n.instance_type, n.method, n.kernel_release,
			       (max(n.started_at) AT TIME ZONE 'UTC')::date AS day
			FROM runs AS n WHERE n.run_id = ANY (ids)
			GROUP BY n.provider, n.instance_type, n.method,
				 n.kernel_release),
		      -- the batch's groups' rows only, not the whole table
		      before AS (SELECT c.* FROM drift_checked AS c
				 JOIN g USING (provider, instance_type, method,
					       kernel_release))
		 INSERT INTO drift_checked AS d (provider, instance_type, method,
						 kernel_release, day)
		 SELECT g.provider, g.instance_type, g.method,
			g.kernel_release, g.day
		 FROM g
		 -- four groups a batch at most (a check takes up to about
		 -- 0.1 s): the others at the batches after
		 WHERE NOT EXISTS (SELECT 1 FROM drift_checked AS c
				   WHERE c.provider = g.provider
					 AND c.instance_type = g.instance_type
					 AND c.method = g.method
					 AND c.kernel_release = g.kernel_release
					 AND c.day >= g.day)
		 ORDER BY g.provider, g.instance_type, g.method, g.kernel_release
		 LIMIT 4
		 ON CONFLICT (provider, instance_type, method, kernel_release)
		 DO UPDATE SET day = EXCLUDED.day WHERE d.day < EXCLUDED.day
		 RETURNING d.provider, d.instance_type, d.method,
			   d.kernel_release, d.day,
			   (SELECT g.run_id FROM g
			    WHERE g.provider = d.provider
				  AND g.instance_type = d.instance_type
				  AND g.method = d.method
				  AND g.kernel_release = d.kernel_release)
				   AS run_id,
			   -- the day it was checked for before (the statement's
			   -- snapshot)
			   (SELECT b.day FROM before AS b
			    WHERE b.provider = d.provider
				  AND b.instance_type = d.instance_type
				  AND b.method = d.method
				  AND b.kernel_release = d.kernel_release)
				   AS checked
	LOOP
		BEGIN
			PERFORM fleetbench_drift_raise(r.provider,
				r.instance_type, r.method, r.kernel_release,
				r.day - 1, r.checked);
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE,
						message = MESSAGE_TEXT;
			RAISE WARNING 'fleetbench: drift check of % % % failed: %',
				r.provider, r.instance_type, r.kernel_release,
				message;
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
	PERFORM fleetbench_schema_guard();
	ids := string_to_array(rtrim(coalesce(
		current_setting('fleetbench.ingested', true), ''), ','),
		',')::uuid[];
	PERFORM set_config('fleetbench.ingested', '', true);
	IF cardinality(ids) > 0 THEN
		PERFORM fleetbench_runs_stored(ids);
	END IF;
END
$$;

-- The jsonb entry point fleetbench_ingest(jsonb) and its helpers are gone
-- (issue 37): a report reaches the database one way, the codec and
-- fleetbench_ingest_run(); `fleetbench-collector load` takes reports as
-- JSON (docs/operations.md). The function files drop them from a database
-- that had them.
DROP FUNCTION IF EXISTS fleetbench_ingest(jsonb);
DROP FUNCTION IF EXISTS fleetbench_array(jsonb, text);
DROP FUNCTION IF EXISTS fleetbench_reject(text);

/*
 * Where runs of a shape keep each value figure (036): element id is the
 * position in run_results.m_median of the metric of value figure id (its
 * benchmark, variant and metric, proto/figures.def), NULL where the shape
 * has none; NULL for ratio figures. A shape names each variant and each
 * metric of a variant once (fleetbench_ingest_run() checks it).
 */
CREATE OR REPLACE FUNCTION fleetbench_figure_positions(b text[], v text[],
							me integer[],
							m text[])
RETURNS integer[]
LANGUAGE sql STABLE AS $$
	SELECT array_agg(p.pos ORDER BY i)
	FROM generate_series(1, (SELECT max(x.id) FROM figures AS x)) AS i
	LEFT JOIN figures AS f ON f.id = i AND f.kind = 'value'
	LEFT JOIN LATERAL (
		SELECT coalesce(me[u.k - 1], 0)
		       + array_position(m[coalesce(me[u.k - 1], 0) + 1 : u.e],
					f.metric) AS pos
		FROM unnest(b, v, me) WITH ORDINALITY AS u(b, v, e, k)
		WHERE u.b = f.benchmark AND u.v = f.variant
		LIMIT 1) AS p ON true
$$;

-- every shape's positions as the declarations say now (the function
-- files run again whenever they change); a shape whose are current is
-- not written
UPDATE result_shapes AS s SET figure_pos = x.pos
FROM (SELECT y.shape_id,
	     fleetbench_figure_positions(y.v_benchmark, y.v_variant,
					 y.v_metric_end, y.m_metric) AS pos
      FROM result_shapes AS y) AS x
WHERE x.shape_id = s.shape_id AND s.figure_pos IS DISTINCT FROM x.pos;

/*
 * What one run says about the headline figures (the definition;
 * run_figures holds its rows, in its column order), read from runs and
 * the run's run_results row (of its month's partition) directly: the
 * figures array (028, fleetbench_figures_trim()) from the table figures,
 * element i the figure of id i: a ratio the report's comparison of the figure's name, a value the
 * median of its benchmark/variant/metric (proto/figures.def), found at
 * its shape's figure_pos (036). Made again
 * whenever the declarations change (migrate re-runs the function files).
 */
DROP VIEW IF EXISTS run_figures_live CASCADE;
-- the four-flag fleetbench_flags() of 019, which it was the last to use
-- (024 added bit 16: functions/10_util.sql)
DROP FUNCTION IF EXISTS fleetbench_flags(boolean, boolean, boolean, boolean);
DO $do$
DECLARE
	elems text; -- the array's elements in id order
BEGIN
	SELECT string_agg(CASE f.kind
			WHEN 'ratio' THEN format('r.c_ratio[array_position(n.c_name, %L)]', f.name)
			WHEN 'value' THEN format('b.m_median[b.figure_pos[%s]]', f.id)
			ELSE 'NULL' END, E',\n\t       ' ORDER BY i)
	INTO elems
	FROM generate_series(1, (SELECT max(x.id) FROM figures AS x)) AS i
	LEFT JOIN figures AS f ON f.id = i;
	EXECUTE format($f$
CREATE VIEW run_figures_live AS
SELECT r.run_id, r.started_at, r.provider, r.instance_type, r.region,
       r.kernel_release, r.machine_id, r.hostname, r.vm, r.vcpus,
       r.thp_enabled,
       r.io_uring_setup = 'ok' AS iouring_ok,
       r.sqpoll = 'ok' AS sqpoll_ok,
       r.hugepage_1g_present AS hugepage_1g,
       coalesce(b.noisy, false) AS steal_flagged,
       coalesce(b.failed, '{}') AS failed, r.method,
       fleetbench_flags(r.io_uring_setup = 'ok', r.sqpoll = 'ok',
			r.hugepage_1g_present, coalesce(b.noisy, false),
			array_position(r.c_target_reached, false) IS NOT NULL)
	       AS flags,
       r.tags,
       fleetbench_figures_trim(ARRAY[%s]::double precision[]) AS figures
FROM runs r
LEFT JOIN comparison_names n ON n.names_id = r.comparison_names_id
LEFT JOIN LATERAL (
	SELECT true = ANY (x.w_noisy) AS noisy,
	       -- the variants' names only when one failed (a third of
	       -- the view's time a run went to unnesting them for none)
	       CASE WHEN 'failed' = ANY (x.v_status) THEN
	       (SELECT array_agg(f.b || '/' || f.v ORDER BY f.i)
		FROM unnest(sh.v_benchmark, sh.v_variant, x.v_status)
			WITH ORDINALITY AS f(b, v, s, i)
		WHERE f.s = 'failed') END AS failed,
	       -- decompressed once here, not once for each figure that
	       -- reads it (a third of the view's time a run)
	       x.m_median || '{}'::double precision[] AS m_median,
	       sh.figure_pos
	FROM run_results x
	JOIN result_shapes sh ON sh.shape_id = x.shape_id
	WHERE x.run_id = r.run_id AND x.started_at = r.started_at) AS b ON true$f$,
		coalesce(elems, ''));
END
$do$;

COMMENT ON FUNCTION fleetbench_ingest_run IS
	'stores one report given as one fleetbench_report (contract in docs/schema.md); true when stored, false when its run_id already was';
COMMENT ON FUNCTION fleetbench_ingest_end() IS
	'does the commit-time work (run_figures, fleet_dirty, alert checks) for the runs this transaction stored';
