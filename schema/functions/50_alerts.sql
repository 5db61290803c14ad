-- SPDX-License-Identifier: MIT
-- Alerts on kernel upgrades (docs/alerts.md): the checks, the fleet alerts,
-- their text and JSON. A function file (schema/README.md):
-- `fleetbench-collector migrate` runs all of them again, in name order and
-- in one transaction, whenever one of them changes or a migration ran.
-- Functions are CREATE OR REPLACE (a trigger function is never dropped: its
-- triggers depend on it); views are dropped and made again.

-- What changed in the io_uring fingerprint from one run to another: an
-- object with a member per item that differs (empty when none does). An
-- item unknown in either run is not compared. (PL/pgSQL with a test per
-- item: this runs at COMMIT for every run of a host that changed kernel.)
CREATE OR REPLACE FUNCTION fleetbench_io_uring_diff(before uuid, after uuid)
RETURNS jsonb
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
	o record;
	n record;
	d jsonb := '{}';
BEGIN
	SELECT io_uring_disabled, io_uring_setup, sqpoll, io_uring_opcodes,
	       io_uring_features
	INTO o FROM runs WHERE run_id = before;
	SELECT io_uring_disabled, io_uring_setup, sqpoll, io_uring_opcodes,
	       io_uring_features
	INTO n FROM runs WHERE run_id = after;
	IF o.io_uring_disabled <> n.io_uring_disabled THEN
		d := d || jsonb_build_object('io_uring_disabled',
			jsonb_build_object('before', o.io_uring_disabled,
					   'after', n.io_uring_disabled));
	END IF;
	IF o.io_uring_setup <> n.io_uring_setup THEN
		d := d || jsonb_build_object('io_uring_setup',
			jsonb_build_object('before', o.io_uring_setup,
					   'after', n.io_uring_setup));
	END IF;
	IF o.sqpoll <> n.sqpoll THEN
		d := d || jsonb_build_object('sqpoll',
			jsonb_build_object('before', o.sqpoll,
					   'after', n.sqpoll));
	END IF;
	-- as sets: the same names in another order are no change
	IF NOT (o.io_uring_opcodes @> n.io_uring_opcodes
		AND o.io_uring_opcodes <@ n.io_uring_opcodes) THEN
		d := d || jsonb_build_object('opcodes',
			fleetbench_set_diff(o.io_uring_opcodes,
					    n.io_uring_opcodes));
	END IF;
	IF NOT (o.io_uring_features @> n.io_uring_features
		AND o.io_uring_features <@ n.io_uring_features) THEN
		d := d || jsonb_build_object('features',
			fleetbench_set_diff(o.io_uring_features,
					    n.io_uring_features));
	END IF;
	RETURN d;
END
$$;

-- Stores one host's alert, in the fleet alert of its change (created
-- when it is the first host), and announces it; a second call for the
-- same host, kernel pair, kind and gain (a gain alert's change is
-- {"GAIN": "decreased"}) changes nothing.
CREATE OR REPLACE FUNCTION fleetbench_alert_raise(old_run uuid, new_run uuid,
				       alert_kind text, alert_diff jsonb,
				       alert_change jsonb)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	o record;
	n record;
	fleet record;
BEGIN
	SELECT run_id, kernel_release INTO o FROM runs WHERE run_id = old_run;
	SELECT run_id, machine_id, hostname, provider, instance_type,
	       kernel_release
	INTO n FROM runs WHERE run_id = new_run;
	INSERT INTO fleet_alerts (provider, instance_type, new_kernel, kind,
				  change)
	VALUES (n.provider, n.instance_type, n.kernel_release, alert_kind,
		alert_change)
	ON CONFLICT (provider, instance_type, new_kernel, kind,
		     md5(change::text)) DO NOTHING
	RETURNING id, acknowledged_at INTO fleet;
	IF NOT FOUND THEN
		SELECT id, acknowledged_at INTO fleet
		FROM fleet_alerts
		WHERE provider = n.provider AND instance_type = n.instance_type
		      AND new_kernel = n.kernel_release AND kind = alert_kind
		      AND md5(change::text) = md5(alert_change::text);
	END IF;
	-- a host that joins an acknowledged change is acknowledged with it
	INSERT INTO alerts (fleet_alert_id, machine_id, hostname, provider,
			    instance_type, old_kernel, new_kernel, kind, diff,
			    old_run_id, new_run_id, acknowledged_at, figure)
	VALUES (fleet.id, n.machine_id, n.hostname, n.provider,
		n.instance_type, o.kernel_release, n.kernel_release,
		alert_kind, alert_diff, o.run_id, n.run_id,
		fleet.acknowledged_at,
		-- a gain alert's change has one member: its gain
		CASE WHEN alert_kind = 'gain'
		     THEN (SELECT min(k) FROM jsonb_object_keys(alert_change)
				  AS c(k)) END)
	ON CONFLICT ON CONSTRAINT alerts_once DO NOTHING;
	IF FOUND THEN
		-- delivered at COMMIT; identical payloads of one transaction
		-- arrive once
		PERFORM pg_notify('fleetbench_alerts', fleet.id::text);
	END IF;
END
$$;

/*
 * The gains whose change from one kernel to another raises a gain alert
 * (docs/alerts.md), the figures declared with an alert
 * (proto/figures.def): figure, the comparison's name (and the alert's
 * figure); label, its name in words; the benchmark, the numerator and
 * denominator variants and the metric of its per-repeat ratios when a
 * run does not carry the comparison (a run that does is read by its own:
 * io_scaling's variants are named after the run's job count); the least
 * change that alerts, unless alert_settings sets one for all.
 */
-- 027 added min_change to what it returns
DROP FUNCTION IF EXISTS fleetbench_alert_gains();
CREATE OR REPLACE FUNCTION fleetbench_alert_gains()
RETURNS TABLE (figure text, label text, benchmark text, numerator text,
	       denominator text, metric text, min_change double precision)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
	SELECT f.name, f.label, f.benchmark, f.variant, f.base, f.metric,
	       f.alert_min_change
	FROM figures AS f
	WHERE f.alert_min_change IS NOT NULL
	ORDER BY f.position
$$;

/*
 * The run a run is compared with (docs/alerts.md): the host's latest run
 * that started before before_time on a kernel release other than
 * run_kernel, with the same method (of two that started at the same
 * moment, the greater run_id: the same one whatever order the rows are
 * stored in); no row when there is none. The alert check and the gate
 * (70_gate.sql) pair runs with this one function.
 */
CREATE OR REPLACE FUNCTION fleetbench_alert_previous(host text,
				     run_kernel text, run_method text,
				     before_time timestamptz,
				     OUT old_run uuid, OUT old_kernel text)
RETURNS SETOF record
LANGUAGE plpgsql STABLE AS $$
BEGIN
	-- The host's kernels, one index probe each (a loose index scan),
	-- then the latest earlier run on each of the others.
	RETURN QUERY
	WITH RECURSIVE k(kernel) AS (
		(SELECT kernel_release FROM runs
		 WHERE machine_id = host
		 ORDER BY kernel_release LIMIT 1)
		UNION ALL
		SELECT (SELECT kernel_release FROM runs
			WHERE machine_id = host
			      AND kernel_release > k.kernel
			ORDER BY kernel_release LIMIT 1)
		FROM k WHERE k.kernel IS NOT NULL
	)
	SELECT r.run_id, r.kernel_release
	FROM k, LATERAL (SELECT run_id, kernel_release, started_at FROM runs
			 WHERE machine_id = host
			       AND kernel_release = k.kernel
			       AND method = run_method
			       AND started_at < before_time
			 ORDER BY started_at DESC, run_id DESC LIMIT 1) AS r
	WHERE k.kernel <> run_kernel
	ORDER BY r.started_at DESC, r.run_id DESC
	LIMIT 1;
END
$$;

/*
 * The per-host gain rule (docs/alerts.md, "The io_uring gain") on one
 * gain's per-repeat ratios before and after: moved, the relative change
 * of their medians; u and p, Mann-Whitney's (exact, whether exactly); and,
 * when the change alerts, the rule that raised it: its least change and
 * its level. A change alerts when it is at least min_change (the
 * figure's, or alert_settings.gain_min_change) and either p < gain_alpha
 * (1e-4: 9 repeats a side reach it) or the gain at least doubled or
 * halved (1 + gain_large_change, default 1) at p < gain_large_alpha
 * (0.01: 5 repeats a side reach it). The alert check, the gate and
 * bench/detect decide with this one function.
 */
CREATE OR REPLACE FUNCTION fleetbench_gain_verdict(before double precision[],
				   after double precision[],
				   min_change double precision,
				   OUT median_before double precision,
				   OUT median_after double precision,
				   OUT moved double precision,
				   OUT u double precision, OUT p double precision,
				   OUT exact boolean, OUT rule_change double precision,
				   OUT rule_alpha double precision)
LANGUAGE plpgsql STABLE AS $$
DECLARE
	s record;
	t record;
	large double precision;
BEGIN
	SELECT coalesce(a.gain_min_change, min_change) AS min_change,
	       coalesce(a.gain_alpha, 0.0001) AS alpha,
	       coalesce(a.gain_large_change, 1) AS large_change,
	       coalesce(a.gain_large_alpha, 0.01) AS large_alpha
	INTO s
	FROM (SELECT 1) AS one LEFT JOIN alert_settings AS a ON true;
	SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY v) INTO median_before
	FROM unnest(before) AS v;
	SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY v) INTO median_after
	FROM unnest(after) AS v;
	IF median_before IS NULL OR median_before <= 0 OR median_after IS NULL
	THEN
		RETURN;
	END IF;
	moved := median_after / median_before - 1;
	IF abs(moved) < s.min_change THEN
		RETURN;
	END IF;
	SELECT * INTO t FROM fleetbench_mann_whitney(before, after);
	u := t.u;
	p := t.p;
	exact := t.exact;
	IF p IS NULL THEN
		RETURN;
	END IF;
	-- doubled or halved (by default): as far up as down on a log scale
	large := greatest(1 + s.large_change, 1 + s.min_change);
	IF p < s.alpha THEN
		rule_change := s.min_change;
		rule_alpha := s.alpha;
	ELSIF p < s.large_alpha AND (1 + moved >= large OR 1 + moved <= 1 / large)
	THEN
		rule_change := large - 1;
		rule_alpha := s.large_alpha;
	END IF;
END
$$;

/*
 * The gains of fleetbench_alert_gains() that changed from run old_run to
 * run new_run by the per-host rule (fleetbench_gain_verdict()) on their
 * per-repeat ratios. One row per gain that moved, in figure
 * order, but for those in skip: its figure, the diff of its gain alert and
 * its change ({"FIGURE": "decreased"}). The alert check and the gate
 * (70_gate.sql) test gains with this one function.
 */
CREATE OR REPLACE FUNCTION fleetbench_gain_changes(old_run uuid, new_run uuid,
				   skip text[] DEFAULT '{}',
				   OUT figure text, OUT diff jsonb,
				   OUT change jsonb)
RETURNS SETOF record
LANGUAGE plpgsql STABLE AS $$
DECLARE
	g record;
	t record;
BEGIN
	-- Each gain not yet raised for this pair: the per-repeat ratios of
	-- both runs, the numerator's sample over the denominator's in the
	-- same round (the variants are interleaved, so a round's pair
	-- shares its drift), when both have the same number of samples and
	-- the denominator's are positive; their medians. One statement: a
	-- SQL function here would be planned again at every call.
	FOR g IN
		WITH p AS MATERIALIZED (
			SELECT a.figure, a.label, a.min_change, r.run_id,
			       coalesce(n.c_benchmark[i.i], a.benchmark) AS b,
			       coalesce(n.c_numerator[i.i], a.numerator) AS num,
			       coalesce(n.c_denominator[i.i], a.denominator) AS den,
			       coalesce(n.c_metric[i.i], a.metric) AS metric
			FROM fleetbench_alert_gains() AS a
			CROSS JOIN runs AS r
			LEFT JOIN comparison_names AS n
				ON n.names_id = r.comparison_names_id
			CROSS JOIN LATERAL (SELECT array_position(n.c_name,
						   a.figure) AS i) AS i
			WHERE r.run_id IN (old_run, new_run)
			      AND a.figure <> ALL (skip)
		), m AS (
			SELECT x.run_id, x.benchmark, x.variant, x.metric,
			       x.samples
			FROM bench_metrics AS x
			WHERE x.run_id IN (old_run, new_run)
		)
		SELECT p.figure, min(p.min_change) AS min_change,
		       array_agg(x.v ORDER BY x.i) FILTER (WHERE p.run_id = old_run)
			       AS before,
		       array_agg(x.v ORDER BY x.i) FILTER (WHERE p.run_id = new_run)
			       AS after
		FROM p
		JOIN m AS u ON u.run_id = p.run_id AND u.benchmark = p.b
			       AND u.variant = p.num AND u.metric = p.metric
		JOIN m AS d ON d.run_id = p.run_id AND d.benchmark = p.b
			       AND d.variant = p.den AND d.metric = p.metric
		CROSS JOIN LATERAL (
			SELECT q.a / q.b AS v, q.i
			FROM unnest(u.samples, d.samples) WITH ORDINALITY
				AS q(a, b, i)) AS x
		WHERE cardinality(u.samples) = cardinality(d.samples)
		      AND 0 < ALL (d.samples)
		GROUP BY p.figure
		ORDER BY p.figure
	LOOP
		SELECT * INTO t
		FROM fleetbench_gain_verdict(g.before, g.after, g.min_change);
		CONTINUE WHEN t.rule_alpha IS NULL;
		figure := g.figure;
		diff := jsonb_build_object(g.figure, jsonb_build_object(
				'before', t.median_before, 'after', t.median_after,
				'change', t.moved,
				'before_repeats', g.before, 'after_repeats', g.after,
				'test', CASE WHEN t.exact
					     THEN 'Mann-Whitney U, exact'
					     ELSE 'Mann-Whitney U, normal approximation'
					END,
				'u', t.u, 'p', t.p, 'alpha', t.rule_alpha,
				'min_change', t.rule_change));
		change := jsonb_build_object(g.figure,
					   CASE WHEN t.moved < 0 THEN 'decreased'
						ELSE 'increased' END);
		RETURN NEXT;
	END LOOP;
END
$$;

/*
 * Compares run with the same host's latest earlier run on another kernel
 * release with the same method and raises what changed (docs/alerts.md):
 * a host whose method changed with its kernel is not alerted on. Callable
 * by hand, for runs stored before the alerts existed:
 *   SELECT fleetbench_alert_check(run_id) FROM runs ORDER BY started_at;
 */
CREATE OR REPLACE FUNCTION fleetbench_alert_check(run uuid)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	n record;
	o record;
	raised record;
	g record;
	diff jsonb;
BEGIN
	SELECT run_id, machine_id, kernel_release, started_at, method INTO n
	FROM runs WHERE run_id = run;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	SELECT * INTO o
	FROM fleetbench_alert_previous(n.machine_id, n.kernel_release,
				       n.method, n.started_at);
	IF NOT FOUND THEN
		RETURN;
	END IF;
	SELECT coalesce(bool_or(kind = 'fingerprint'), false) AS fingerprint,
	       coalesce(array_agg(figure) FILTER (WHERE kind = 'gain'), '{}')
		       AS gains
	INTO raised
	FROM alerts
	WHERE machine_id = n.machine_id AND old_kernel = o.old_kernel
	      AND new_kernel = n.kernel_release;

	IF NOT raised.fingerprint THEN
		diff := fleetbench_io_uring_diff(o.old_run, n.run_id);
		IF diff <> '{}' THEN
			PERFORM fleetbench_alert_raise(o.old_run, n.run_id,
						       'fingerprint', diff,
						       diff);
		END IF;
	END IF;

	FOR g IN SELECT * FROM fleetbench_gain_changes(o.old_run, n.run_id,
						       raised.gains) LOOP
		PERFORM fleetbench_alert_raise(o.old_run, n.run_id, 'gain',
					       g.diff, g.change);
	END LOOP;
END
$$;
COMMENT ON FUNCTION fleetbench_alert_check(uuid) IS
	'compares a run with its host''s latest earlier run on another kernel and raises alerts (docs/alerts.md)';

-- Acknowledges a fleet alert and its hosts' alerts: the time it was
-- acknowledged (now, or earlier when it already was) and whether it
-- already was; no row when there is no such alert.
CREATE OR REPLACE FUNCTION fleetbench_alert_ack(alert bigint,
				     OUT acknowledged_at timestamptz,
				     OUT already boolean)
RETURNS SETOF record
LANGUAGE plpgsql AS $$
BEGIN
	SELECT f.acknowledged_at, f.acknowledged_at IS NOT NULL
	INTO acknowledged_at, already
	FROM fleet_alerts f WHERE f.id = alert
	-- not FOR UPDATE: that would hold up a COMMIT adding a host alert
	-- (whose foreign key check takes FOR KEY SHARE)
	FOR NO KEY UPDATE;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	IF NOT already THEN
		acknowledged_at := now();
		UPDATE fleet_alerts f SET acknowledged_at = now()
		WHERE f.id = alert;
	END IF;
	UPDATE alerts a SET acknowledged_at = fleetbench_alert_ack.acknowledged_at
	WHERE a.fleet_alert_id = alert AND a.acknowledged_at IS NULL;
	RETURN NEXT;
END
$$;
COMMENT ON FUNCTION fleetbench_alert_ack(bigint) IS
	'acknowledges a fleet alert and its hosts'' alerts';

-- A diff or change in words, for tables: "sqpoll ok -> EPERM; opcodes
-- +SEND_ZC -FSYNC", "io_uring/pread gain 3.15 -> 1.57 (-50%, p = 0.0079)",
-- "mmap THP speedup decreased" (a gain alert's diff or change has one
-- member, its gain: fleetbench_alert_gains()).
CREATE OR REPLACE FUNCTION fleetbench_alert_text(kind text, diff jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE kind
	WHEN 'gain' THEN
		(SELECT CASE jsonb_typeof(e.v)
			WHEN 'object' THEN format('%s %s -> %s (%s%%, p = %s)',
				coalesce(a.label, e.k),
				round((e.v ->> 'before')::numeric, 2),
				round((e.v ->> 'after')::numeric, 2),
				to_char(100 * (e.v ->> 'change')::numeric, 'FMSG990'),
				CASE WHEN (e.v ->> 'p')::numeric < 0.001
				     THEN trim(to_char((e.v ->> 'p')::float8,
						       '9.9EEEE'))
				     ELSE round((e.v ->> 'p')::numeric, 4)::text
				END)
			ELSE coalesce(a.label, e.k) || ' ' || (e.v #>> '{}')
			END
		 FROM jsonb_each(diff) AS e(k, v)
		 LEFT JOIN fleetbench_alert_gains() AS a ON a.figure = e.k
		 ORDER BY e.k LIMIT 1)
	ELSE (SELECT string_agg(CASE WHEN v ? 'before'
				     THEN format('%s %s -> %s', k, v->>'before',
						 v->>'after')
				     ELSE k || (SELECT coalesce(string_agg(' +' || x, ''), '')
						FROM jsonb_array_elements_text(v->'added') x)
					    || (SELECT coalesce(string_agg(' -' || x, ''), '')
						FROM jsonb_array_elements_text(v->'removed') x)
				END, '; ' ORDER BY k)
	      FROM jsonb_each(diff) AS e(k, v))
	END
$$;

-- A shift or drift alert's effect in words (033, 034, docs/alerts.md):
-- "io_uring/pread gain -7.2% [-9.1%, -5.8%] on 30 hosts paired (Wilcoxon
-- signed-rank, exact), q = 0.0001"; "io_uring/pread gain drifted -5.0%
-- [-5.6%, -4.4%] from 2026-11-20, no kernel change, on 20 of 20 hosts
-- (p = 1.2e-15)".
CREATE OR REPLACE FUNCTION fleetbench_effect_text(kind text, effect jsonb)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
	SELECT CASE kind WHEN 'drift' THEN
	format('%s drifted %s%% [%s%%, %s%%] from %s, no kernel change, on %s of %s hosts (p = %s)%s',
		coalesce((SELECT a.label FROM fleetbench_alert_gains() AS a
			  WHERE a.figure = effect ->> 'figure'),
			 effect ->> 'figure'),
		to_char(100 * (effect ->> 'change')::numeric, 'FMSG990.0'),
		to_char(100 * (effect ->> 'change_lo')::numeric, 'FMSG990.0'),
		to_char(100 * (effect ->> 'change_hi')::numeric, 'FMSG990.0'),
		effect ->> 'changed_on',
		jsonb_array_length(coalesce(effect -> 'hosts_moved', '[]')),
		effect ->> 'hosts',
		trim(to_char((effect ->> 'p')::float8, '9.9EEEE')),
		CASE WHEN (effect ->> 'placement_changed')::integer > 0
		     THEN format(' (vCPU placement changed on %s hosts since a week before)',
				 effect ->> 'placement_changed')
		     ELSE '' END)
	ELSE
	format('%s %s%% [%s%%, %s%%] on %s hosts %s (%s), q = %s',
		coalesce((SELECT a.label FROM fleetbench_alert_gains() AS a
			  WHERE a.figure = effect ->> 'figure'),
			 effect ->> 'figure'),
		to_char(100 * (effect ->> 'change')::numeric, 'FMSG990.0'),
		coalesce(to_char(100 * (effect ->> 'change_lo')::numeric,
				 'FMSG990.0'), '?'),
		coalesce(to_char(100 * (effect ->> 'change_hi')::numeric,
				 'FMSG990.0'), '?'),
		effect ->> 'hosts',
		CASE WHEN (effect ->> 'paired')::boolean THEN 'paired'
		     ELSE 'in two sets' END,
		effect ->> 'test',
		CASE WHEN (effect ->> 'q')::numeric < 0.0001
		     THEN trim(to_char((effect ->> 'q')::float8, '9.9EEEE'))
		     ELSE round((effect ->> 'q')::numeric, 4)::text END)
	END
$$;

-- One row per fleet alert: how many hosts show the change and from which
-- old kernels, the newest first. `fleetbench alerts` prints this view. A
-- shift or drift alert (033, 034) has no host alerts: its hosts, old
-- kernel and effect are its evaluation's (effect).
DROP VIEW IF EXISTS alert_summary CASCADE;
CREATE VIEW alert_summary AS
SELECT f.id, f.kind, f.provider, f.instance_type,
       CASE WHEN f.kind IN ('shift', 'drift')
	    THEN ARRAY[f.effect ->> 'old_kernel']
	    ELSE array_agg(DISTINCT a.old_kernel ORDER BY a.old_kernel)
       END AS old_kernels,
       f.new_kernel,
       CASE WHEN f.kind IN ('shift', 'drift')
	    THEN (f.effect ->> 'hosts')::bigint
	    ELSE count(a.id) END AS hosts,
       CASE WHEN f.kind IN ('shift', 'drift')
	    THEN fleetbench_effect_text(f.kind, f.effect)
       ELSE fleetbench_alert_text(f.kind, f.change)
       || CASE f.kind WHEN 'gain' THEN format(' by a median %s%%',
		round(100 * abs(percentile_cont(0.5) WITHIN GROUP (ORDER BY
			(a.diff -> a.figure ->> 'change')::double precision))))
	  ELSE '' END
       || CASE WHEN fleetbench_alert_placement_changed(f.id) > 0
	       THEN format(' (vCPU placement changed with it on %s of %s hosts)',
			   fleetbench_alert_placement_changed(f.id), count(a.id))
	       ELSE '' END END AS summary,
       f.change, f.created_at,
       CASE WHEN f.kind IN ('shift', 'drift')
	    THEN (f.effect ->> 'evaluated_at')::timestamptz
	    ELSE max(a.created_at) END AS last_host_at,
       f.acknowledged_at, f.delivered_at, f.delivery_attempts,
       f.delivery_error, f.effect
FROM fleet_alerts f
LEFT JOIN alerts a ON a.fleet_alert_id = f.id
GROUP BY f.id
ORDER BY f.created_at DESC, f.id DESC;
COMMENT ON VIEW alert_summary IS
	'per fleet alert: kind, group, old kernels, new kernel, hosts, change, acknowledgement and delivery, and a shift alert''s effect';

-- A fleet alert as the hook receives it on standard input (with the
-- delivery attempt added), its first 100 hosts' alerts in host_alerts.
CREATE OR REPLACE FUNCTION fleetbench_alert_json(alert bigint)
RETURNS jsonb
LANGUAGE sql STABLE AS $$
	SELECT jsonb_build_object(
		'id', s.id, 'kind', s.kind, 'provider', s.provider,
		'instance_type', s.instance_type,
		'old_kernels', s.old_kernels, 'new_kernel', s.new_kernel,
		'hosts', s.hosts, 'summary', s.summary, 'change', s.change,
		'created_at', s.created_at, 'last_host_at', s.last_host_at,
		'acknowledged_at', s.acknowledged_at,
		'effect', s.effect,
		'host_alerts', (
			SELECT coalesce(jsonb_agg(jsonb_build_object(
				'id', a.id, 'machine_id', a.machine_id,
				'hostname', a.hostname,
				'old_kernel', a.old_kernel,
				'new_kernel', a.new_kernel,
				'old_run_id', a.old_run_id,
				'new_run_id', a.new_run_id,
				'created_at', a.created_at,
				'summary', fleetbench_alert_text(a.kind, a.diff),
				'diff', a.diff)
				ORDER BY a.id), '[]')
			FROM (SELECT * FROM alerts
			      WHERE fleet_alert_id = s.id
			      ORDER BY id LIMIT 100) AS a))
	FROM alert_summary s
	WHERE s.id = alert
$$;
