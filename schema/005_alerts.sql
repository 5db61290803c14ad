-- SPDX-License-Identifier: MIT
-- Alerts on kernel upgrades: each run is compared, when its transaction
-- commits, with the same host's latest earlier run on another kernel
-- release; a change of the io_uring fingerprint, or a large and
-- significant change of the io_uring gain over pread, raises an alert,
-- once per host, kernel pair and kind, grouped with the same change on
-- other hosts of the provider and instance type into a fleet alert.
--
-- Applied by `fleetbench-collector migrate` inside a transaction;
-- docs/alerts.md explains the detection and the test, docs/schema.md the
-- tables.

-- The latest run of a host on each kernel, found without walking through
-- every run since the host last changed kernel.
CREATE INDEX runs_host_kernel_idx ON runs (machine_id, kernel_release, started_at);

-- The thresholds of the gain test: one row, changed with UPDATE.
CREATE TABLE alert_settings (
	one boolean PRIMARY KEY DEFAULT true,
	-- the smallest relative change of the median io_uring/pread gain
	-- that alerts (0.2: by a fifth of the old value, up or down)
	gain_min_change double precision NOT NULL DEFAULT 0.2,
	-- the largest two-sided Mann-Whitney U p-value that alerts
	gain_alpha double precision NOT NULL DEFAULT 0.01,
	CONSTRAINT alert_settings_one_row CHECK (one),
	CONSTRAINT alert_settings_min_change_positive
		CHECK (gain_min_change > 0),
	CONSTRAINT alert_settings_alpha_probability
		CHECK (gain_alpha > 0 AND gain_alpha < 1)
);
INSERT INTO alert_settings DEFAULT VALUES;

-- One change of one kind on one new kernel, for a provider and instance
-- type: what is listed, acknowledged, announced and delivered to the hook.
CREATE TABLE fleet_alerts (
	id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	provider text NOT NULL,
	instance_type text NOT NULL,
	new_kernel text NOT NULL,
	kind text NOT NULL,
	-- what every host of the group shares: the fingerprint diff, or the
	-- direction of the gain change
	change jsonb NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now(),
	acknowledged_at timestamptz,
	-- the hook (docs/alerts.md): delivered once; until then, attempts
	-- made, when the next is due, and why the last one failed
	delivered_at timestamptz,
	delivery_attempts integer NOT NULL DEFAULT 0,
	next_delivery_at timestamptz NOT NULL DEFAULT now(),
	delivery_error text,
	CONSTRAINT fleet_alerts_kind CHECK (kind IN ('fingerprint', 'gain')),
	CONSTRAINT fleet_alerts_change_is_object
		CHECK (jsonb_typeof(change) = 'object')
);
-- a change of opcodes can be longer than a btree entry may be
CREATE UNIQUE INDEX fleet_alerts_change_key
	ON fleet_alerts (provider, instance_type, new_kernel, kind,
			 md5(change::text));
-- what the hook has still to deliver
CREATE INDEX fleet_alerts_undelivered_idx ON fleet_alerts (next_delivery_at)
	WHERE delivered_at IS NULL AND acknowledged_at IS NULL;

-- One row per host, kernel pair (an upgrade or a downgrade) and kind.
CREATE TABLE alerts (
	id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	fleet_alert_id bigint NOT NULL REFERENCES fleet_alerts ON DELETE CASCADE,
	machine_id text NOT NULL,
	hostname text NOT NULL,
	provider text NOT NULL,
	instance_type text NOT NULL,
	old_kernel text NOT NULL,
	new_kernel text NOT NULL,
	kind text NOT NULL,
	-- before and after of what changed (docs/alerts.md)
	diff jsonb NOT NULL,
	-- the two runs compared (no foreign keys: deleting a run keeps its
	-- alerts)
	old_run_id uuid NOT NULL,
	new_run_id uuid NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now(),
	acknowledged_at timestamptz,
	CONSTRAINT alerts_once UNIQUE (machine_id, old_kernel, new_kernel, kind),
	CONSTRAINT alerts_kind CHECK (kind IN ('fingerprint', 'gain')),
	CONSTRAINT alerts_diff_is_object CHECK (jsonb_typeof(diff) = 'object')
);
CREATE INDEX alerts_fleet_idx ON alerts (fleet_alert_id);

-- Runs whose check failed with an error: the run is stored all the same
-- (a failing check must never fail the collector's COMMIT), the error is
-- kept here and in the server log.
CREATE TABLE alert_errors (
	run_id uuid NOT NULL,
	sqlstate text NOT NULL,
	message text NOT NULL,
	at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE alert_settings IS
	'thresholds of the io_uring gain alert: smallest relative change and largest p-value';
COMMENT ON TABLE fleet_alerts IS
	'one change on one new kernel for a provider and instance type: listed, acknowledged, delivered';
COMMENT ON TABLE alerts IS
	'one per host, old and new kernel and kind: the before/after diff of the two runs compared';
COMMENT ON TABLE alert_errors IS
	'runs whose alert check raised an error (the run itself is stored)';

-- The upper tail of the standard normal distribution, P(Z >= z), from
-- erfc (Numerical Recipes' erfcc: fractional error below 1.2e-7), as
-- PostgreSQL 15 has no erf().
CREATE FUNCTION fleetbench_normal_upper(z double precision)
RETURNS double precision
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
	x double precision := abs(z) / sqrt(2.0);
	t double precision := 1.0 / (1.0 + 0.5 * x);
	erfc double precision;
BEGIN
	erfc := t * exp(-x * x - 1.26551223 + t * (1.00002368 + t * (0.37409196
		+ t * (0.09678418 + t * (-0.18628806 + t * (0.27886807
		+ t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223
		+ t * 0.17087277)))))))));
	RETURN CASE WHEN z >= 0 THEN erfc / 2 ELSE 1 - erfc / 2 END;
END
$$;

/*
 * The two-sided Mann-Whitney U test of x against y: u counts the pairs
 * (x_i, y_j) with x_i > y_j, ties counting one half. Without ties and with
 * at most 30 values in all the p-value is exact: the counts of every U
 * over the C(m+n, m) equally likely arrangements are the coefficients of
 * the Gaussian binomial [m+n choose m](q) = prod_{i=1..m} (1 - q^(n+i)) /
 * (1 - q^i), built one factor at a time. Otherwise it is the normal
 * approximation with the tie correction of the variance and a continuity
 * correction. NULL for an empty side.
 */
CREATE FUNCTION fleetbench_mann_whitney(x double precision[],
					y double precision[],
					OUT u double precision,
					OUT p double precision,
					OUT exact boolean)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
	m integer := coalesce(cardinality(x), 0);
	n integer := coalesce(cardinality(y), 0);
	big integer := m * n;
	distinct_values integer;
	ties double precision;
	c double precision[];
	total double precision := 0;
	below double precision := 0;
	k integer;
	sigma double precision;
BEGIN
	IF m = 0 OR n = 0 THEN
		RETURN;
	END IF;
	SELECT sum(CASE WHEN a > b THEN 1.0 WHEN a = b THEN 0.5 ELSE 0 END)
	INTO u
	FROM unnest(x) a, unnest(y) b;
	-- sum of t^3 - t over the groups of tied values
	SELECT count(*), coalesce(sum(t * t * t - t), 0)
	INTO distinct_values, ties
	FROM (SELECT count(*)::double precision AS t
	      FROM (SELECT unnest(x) UNION ALL SELECT unnest(y)) AS v(v)
	      GROUP BY v) AS g;
	exact := distinct_values = m + n AND m + n <= 30;
	IF exact THEN
		-- c[j + 1] is the number of arrangements with U = j
		c := array_fill(0::double precision, ARRAY[big + 1]);
		c[1] := 1;
		FOR i IN 1..m LOOP
			k := n + i;
			FOR j IN REVERSE big..k LOOP
				c[j + 1] := c[j + 1] - c[j + 1 - k];
			END LOOP;
			FOR j IN i..big LOOP
				c[j + 1] := c[j + 1] + c[j + 1 - i];
			END LOOP;
		END LOOP;
		FOR j IN 0..big LOOP
			total := total + c[j + 1];
			IF j <= least(u, big - u) THEN
				below := below + c[j + 1];
			END IF;
		END LOOP;
		p := least(1.0, 2 * below / total);
		RETURN;
	END IF;
	sigma := sqrt(big / 12.0 * ((m + n + 1)
				    - ties / ((m + n) * (m + n - 1.0))));
	IF sigma = 0 THEN
		p := 1;
		RETURN;
	END IF;
	p := least(1.0, 2 * fleetbench_normal_upper(
		greatest(abs(u - big / 2.0) - 0.5, 0) / sigma));
END
$$;

-- {"added": [...], "removed": [...]} between two sets, sorted.
CREATE FUNCTION fleetbench_set_diff(before text[], after text[])
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT jsonb_build_object(
		'added', to_jsonb(ARRAY(SELECT unnest(after) EXCEPT
					SELECT unnest(before) ORDER BY 1)),
		'removed', to_jsonb(ARRAY(SELECT unnest(before) EXCEPT
					  SELECT unnest(after) ORDER BY 1)))
$$;

-- What changed in the io_uring fingerprint from one run to another: an
-- object with a member per item that differs (empty when none does). An
-- item unknown in either run is not compared. (PL/pgSQL with a test per
-- item: this runs at COMMIT for every run of a host that changed kernel.)
CREATE FUNCTION fleetbench_io_uring_diff(before uuid, after uuid)
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
CREATE FUNCTION fleetbench_alert_raise(old_run uuid, new_run uuid,
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
 * release and raises what changed (docs/alerts.md). Callable by hand, for
 * runs stored before this migration:
 *   SELECT fleetbench_alert_check(run_id) FROM runs ORDER BY started_at;
 */
CREATE FUNCTION fleetbench_alert_check(run uuid)
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
	SELECT run_id, machine_id, kernel_release, started_at INTO n
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

-- The constraint trigger's function: runs at COMMIT, once the run's
-- benchmarks and comparisons are in. An error here would fail the COMMIT
-- of the collector's whole batch (and every retry of it): it is caught,
-- logged and kept in alert_errors instead.
CREATE FUNCTION fleetbench_alert_trigger()
RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	state text;
	message text;
BEGIN
	BEGIN
		PERFORM fleetbench_alert_check(NEW.run_id);
	EXCEPTION WHEN OTHERS THEN
		GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE,
					message = MESSAGE_TEXT;
		RAISE WARNING 'fleetbench: alert check of run % failed: %',
			NEW.run_id, message;
		INSERT INTO alert_errors (run_id, sqlstate, message)
		VALUES (NEW.run_id, state, message);
	END;
	RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER runs_alert_check AFTER INSERT ON runs
	DEFERRABLE INITIALLY DEFERRED
	FOR EACH ROW EXECUTE FUNCTION fleetbench_alert_trigger();

-- Acknowledges a fleet alert and its hosts' alerts: the time it was
-- acknowledged (now, or earlier when it already was) and whether it
-- already was; no row when there is no such alert.
CREATE FUNCTION fleetbench_alert_ack(alert bigint,
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

-- A diff or change in words, for tables: "sqpoll ok -> EPERM; opcodes
-- +SEND_ZC -FSYNC", "io_uring/pread gain 3.15 -> 1.57 (-50%, p = 0.0079)",
-- "io_uring/pread gain decreased".
CREATE FUNCTION fleetbench_alert_text(kind text, diff jsonb)
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

-- A fleet alert as the hook receives it on standard input (with the
-- delivery attempt added), its first 100 hosts' alerts in host_alerts.
CREATE FUNCTION fleetbench_alert_json(alert bigint)
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

COMMENT ON VIEW alert_summary IS
	'per fleet alert: kind, group, old kernels, new kernel, hosts, change, acknowledgement and delivery';
COMMENT ON FUNCTION fleetbench_alert_check(uuid) IS
	'compares a run with its host''s latest earlier run on another kernel and raises alerts (docs/alerts.md)';
COMMENT ON FUNCTION fleetbench_alert_ack(bigint) IS
	'acknowledges a fleet alert and its hosts'' alerts';
