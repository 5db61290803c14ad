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
-- same host, kernel pair and kind changes nothing.
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
			    old_run_id, new_run_id, acknowledged_at)
	VALUES (fleet.id, n.machine_id, n.hostname, n.provider,
		n.instance_type, o.kernel_release, n.kernel_release,
		alert_kind, alert_diff, o.run_id, n.run_id,
		fleet.acknowledged_at)
	ON CONFLICT ON CONSTRAINT alerts_once DO NOTHING;
	IF FOUND THEN
		-- delivered at COMMIT; identical payloads of one transaction
		-- arrive once
		PERFORM pg_notify('fleetbench_alerts', fleet.id::text);
	END IF;
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
	change double precision;
	t record;
BEGIN
	SELECT run_id, machine_id, kernel_release, started_at, method INTO n
	FROM runs WHERE run_id = run;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	-- The host's kernels, one index probe each (a loose index scan),
	-- then the latest earlier run on each of the others.
	WITH RECURSIVE k(kernel) AS (
		(SELECT kernel_release FROM runs
		 WHERE machine_id = n.machine_id
		 ORDER BY kernel_release LIMIT 1)
		UNION ALL
		SELECT (SELECT kernel_release FROM runs
			WHERE machine_id = n.machine_id
			      AND kernel_release > k.kernel
			ORDER BY kernel_release LIMIT 1)
		FROM k WHERE k.kernel IS NOT NULL
	)
	SELECT r.run_id, r.kernel_release INTO o
	FROM k, LATERAL (SELECT run_id, kernel_release, started_at FROM runs
			 WHERE machine_id = n.machine_id
			       AND kernel_release = k.kernel
			       AND method = n.method
			       AND started_at < n.started_at
			 ORDER BY started_at DESC LIMIT 1) AS r
	WHERE k.kernel <> n.kernel_release
	ORDER BY r.started_at DESC
	LIMIT 1;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	SELECT coalesce(bool_or(kind = 'fingerprint'), false) AS fingerprint,
	       coalesce(bool_or(kind = 'gain'), false) AS gain
	INTO raised
	FROM alerts
	WHERE machine_id = n.machine_id AND old_kernel = o.kernel_release
	      AND new_kernel = n.kernel_release;

	IF NOT raised.fingerprint THEN
		diff := fleetbench_io_uring_diff(o.run_id, n.run_id);
		IF diff <> '{}' THEN
			PERFORM fleetbench_alert_raise(o.run_id, n.run_id,
						       'fingerprint', diff,
						       diff);
		END IF;
	END IF;
	IF raised.gain THEN
		RETURN;
	END IF;

	-- The gain over pread of each repeat of both runs: io_uring's random
	-- read IOPS over pread's in the same round (the variants are
	-- interleaved, so a round's pair shares its drift), when both have
	-- the same number of samples and pread's are positive; their medians;
	-- the thresholds. One statement: a SQL function here would be
	-- planned again at every call.
	SELECT before, after, median_before, median_after,
	       coalesce(s.gain_min_change, 0.2) AS min_change,
	       coalesce(s.gain_alpha, 0.01) AS alpha
	INTO g
	FROM (SELECT array_agg(x ORDER BY i) FILTER (WHERE r = o.run_id) AS before,
		     array_agg(x ORDER BY i) FILTER (WHERE r = n.run_id) AS after,
		     percentile_cont(0.5) WITHIN GROUP (ORDER BY x)
			     FILTER (WHERE r = o.run_id) AS median_before,
		     percentile_cont(0.5) WITHIN GROUP (ORDER BY x)
			     FILTER (WHERE r = n.run_id) AS median_after
	      FROM (SELECT u.run_id AS r, s.a / s.b AS x, s.i
		    FROM bench_metrics u
		    JOIN bench_metrics p
			 ON p.run_id = u.run_id AND p.benchmark = 'randread'
			    AND p.variant = 'pread' AND p.metric = 'iops',
			 unnest(u.samples, p.samples) WITH ORDINALITY AS s(a, b, i)
		    WHERE u.run_id IN (o.run_id, n.run_id)
			  AND u.benchmark = 'randread'
			  AND u.variant = 'io_uring' AND u.metric = 'iops'
			  AND cardinality(u.samples) = cardinality(p.samples)
			  AND 0 < ALL (p.samples)) AS x) AS m
	LEFT JOIN alert_settings s ON true;
	IF g.median_before IS NULL OR g.median_before <= 0
	   OR g.median_after IS NULL THEN
		RETURN;
	END IF;
	change := g.median_after / g.median_before - 1;
	IF abs(change) < g.min_change THEN
		RETURN;
	END IF;
	SELECT * INTO t FROM fleetbench_mann_whitney(g.before, g.after);
	IF t.p IS NULL OR t.p >= g.alpha THEN
		RETURN;
	END IF;
	PERFORM fleetbench_alert_raise(o.run_id, n.run_id, 'gain',
		jsonb_build_object('iouring_vs_pread', jsonb_build_object(
			'before', g.median_before, 'after', g.median_after,
			'change', change,
			'before_repeats', g.before, 'after_repeats', g.after,
			'test', CASE WHEN t.exact
				     THEN 'Mann-Whitney U, exact'
				     ELSE 'Mann-Whitney U, normal approximation'
				END,
			'u', t.u, 'p', t.p, 'alpha', g.alpha,
			'min_change', g.min_change)),
		jsonb_build_object('iouring_vs_pread',
				   CASE WHEN change < 0 THEN 'decreased'
					ELSE 'increased' END));
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
-- "io_uring/pread gain decreased".
CREATE OR REPLACE FUNCTION fleetbench_alert_text(kind text, diff jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE kind
	WHEN 'gain' THEN
		CASE jsonb_typeof(diff->'iouring_vs_pread')
		WHEN 'object' THEN format('io_uring/pread gain %s -> %s (%s%%, p = %s)',
			round((diff #>> '{iouring_vs_pread,before}')::numeric, 2),
			round((diff #>> '{iouring_vs_pread,after}')::numeric, 2),
			to_char(100 * (diff #>> '{iouring_vs_pread,change}')::numeric,
				'FMSG990'),
			CASE WHEN (diff #>> '{iouring_vs_pread,p}')::numeric < 0.001
			     THEN trim(to_char((diff #>> '{iouring_vs_pread,p}')::float8,
					       '9.9EEEE'))
			     ELSE round((diff #>> '{iouring_vs_pread,p}')::numeric, 4)::text
			END)
		ELSE 'io_uring/pread gain ' || (diff->>'iouring_vs_pread')
		END
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

-- One row per fleet alert: how many hosts show the change and from which
-- old kernels, the newest first. `fleetbench alerts` prints this view.
DROP VIEW IF EXISTS alert_summary CASCADE;
CREATE VIEW alert_summary AS
SELECT f.id, f.kind, f.provider, f.instance_type,
       array_agg(DISTINCT a.old_kernel ORDER BY a.old_kernel) AS old_kernels,
       f.new_kernel, count(a.id) AS hosts,
       fleetbench_alert_text(f.kind, f.change)
       || CASE f.kind WHEN 'gain' THEN format(' by a median %s%%',
		round(100 * abs(percentile_cont(0.5) WITHIN GROUP (ORDER BY
			(a.diff #>> '{iouring_vs_pread,change}')::double precision))))
	  ELSE '' END AS summary,
       f.change, f.created_at, max(a.created_at) AS last_host_at,
       f.acknowledged_at, f.delivered_at, f.delivery_attempts,
       f.delivery_error
FROM fleet_alerts f
JOIN alerts a ON a.fleet_alert_id = f.id
GROUP BY f.id
ORDER BY f.created_at DESC, f.id DESC;
COMMENT ON VIEW alert_summary IS
	'per fleet alert: kind, group, old kernels, new kernel, hosts, change, acknowledgement and delivery';

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
