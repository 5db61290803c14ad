-- SPDX-License-Identifier: MIT
-- Provider drift (issue 39, docs/alerts.md, "Drift"): a figure that moved
-- on the hosts of one provider, instance type, method and kernel with no
-- kernel change. Each group's recent runs are one time series per
-- alerting figure; the change point is found by a rank test of the last
-- days against the weeks before, and raises a fleet alert of kind
-- 'drift' (migration 034). A function file (schema/README.md).

/*
 * The series a drift is looked for in: the group's runs of the 35 days up
 * to last_day (day: UTC) included, each run's figure figure_id as a log,
 * less its host's median over the reference days (those up to a week
 * before the latest day), so that hosts of different levels compare;
 * hosts without a reference run are left out. Only these days are read:
 * a new run never recomputes the group's history.
 */
CREATE OR REPLACE FUNCTION fleetbench_drift_series(p_provider text,
	p_instance_type text, p_method text, p_kernel text,
	figure_id integer, last_day date)
RETURNS TABLE (machine_id text, hostname text, day date,
	       c double precision)
LANGUAGE sql STABLE AS $$
	WITH v AS (
		SELECT r.machine_id, r.hostname,
		       (r.started_at AT TIME ZONE 'UTC')::date AS day,
		       ln(r.figures[figure_id]) AS v
		FROM run_figures AS r
		WHERE r.provider = p_provider
		      AND r.instance_type = p_instance_type
		      AND r.kernel_release = p_kernel AND r.method = p_method
		      AND r.started_at >= (last_day - 35)::timestamp
						AT TIME ZONE 'UTC'
		      AND r.started_at < (last_day + 1)::timestamp
						AT TIME ZONE 'UTC'
		      AND r.figures[figure_id] > 0
	), base AS (
		SELECT v.machine_id,
		       percentile_cont(0.5) WITHIN GROUP (ORDER BY v.v) AS b
		FROM v WHERE v.day <= last_day - 7
		GROUP BY v.machine_id
	)
	SELECT v.machine_id, v.hostname, v.day, v.v - base.b
	FROM v JOIN base ON base.machine_id = v.machine_id
$$;

/*
 * The drift of each alerting figure of one group (provider, instance
 * type, method, kernel), as of the day as_of (its runs up to that day
 * included; NULL: its latest run's day): for each candidate day of
 * change tau in the last week, or since a week before checked (the day
 * of the check before, when runs of several days came at once), leaving
 * at least two days after it and seven before, Mann-Whitney's test of the series' values from tau on
 * against those before (normal approximation, ranks over the whole
 * window taken once); the day with the largest |z| is the change's, p
 * its two-sided p-value. change, change_lo and change_hi are relative,
 * from the Hodges-Lehmann shift of after against before and its 95%
 * interval (computed only when p < drift_p, the alerting ones); hosts
 * count those in the series, hosts_moved names those whose own median
 * after tau moved at least half the estimate its way (20 at most), and
 * placement_changed counts the hosts whose vCPU placement changed from
 * a week before tau on (host_placement_changes). No row for a figure
 * with too few days.
 */
CREATE OR REPLACE FUNCTION fleetbench_drift_evaluate(p_provider text,
	p_instance_type text, p_method text, p_kernel text,
	as_of date DEFAULT NULL, checked date DEFAULT NULL)
RETURNS TABLE (figure text, changed_on date, detected_on date,
	       change double precision, change_lo double precision,
	       change_hi double precision, p double precision,
	       runs_before integer, runs_after integer, hosts integer,
	       hosts_moved text[], placement_changed integer)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
	last_day date;
	level double precision;
	f record;
	s record;
	h record;
	days date[];
	cs double precision[];
	names text[];
BEGIN
	SELECT coalesce((SELECT x.drift_p FROM alert_settings AS x), 1e-7)
	INTO level;
	SELECT coalesce(as_of, (max(r.started_at) AT TIME ZONE 'UTC')::date)
	INTO last_day
	FROM run_figures AS r
	WHERE r.provider = p_provider AND r.instance_type = p_instance_type
	      AND r.kernel_release = p_kernel AND r.method = p_method;
	-- nine days at least: seven before a change, two after
	IF last_day IS NULL OR NOT EXISTS (
		SELECT 1 FROM run_figures AS r
		WHERE r.provider = p_provider
		      AND r.instance_type = p_instance_type
		      AND r.kernel_release = p_kernel AND r.method = p_method
		      AND r.started_at >= (last_day - 35)::timestamp
						AT TIME ZONE 'UTC'
		      AND r.started_at < (last_day - 8)::timestamp
						AT TIME ZONE 'UTC') THEN
		RETURN;
	END IF;
	FOR f IN SELECT x.id, x.name FROM figures AS x
		 WHERE x.alert_min_change IS NOT NULL ORDER BY x.position
	LOOP
		-- the series once, as arrays in the order of its values
		SELECT array_agg(y.day ORDER BY y.c, y.day),
		       array_agg(y.c ORDER BY y.c, y.day),
		       array_agg(y.hostname ORDER BY y.c, y.day)
		INTO days, cs, names
		FROM fleetbench_drift_series(p_provider, p_instance_type,
					     p_method, p_kernel, f.id,
					     last_day) AS y;
		IF days IS NULL THEN
			CONTINUE;
		END IF;
		-- the best split (ranks with ties averaged: the values are
		-- sorted, so a value's rank is its place)
		WITH v AS (
			SELECT u.day,
			       avg(u.i) OVER (PARTITION BY u.c) AS rnk
			FROM unnest(days, cs) WITH ORDINALITY AS u(day, c, i)
		), d AS (
			SELECT v.day, count(*) AS runs, sum(v.rnk) AS r
			FROM v GROUP BY v.day
		), k AS (
			SELECT d.day AS tau,
			       sum(d.runs) OVER w AS n, sum(d.r) OVER w AS r,
			       sum(d.runs) OVER () AS big,
			       count(*) OVER (ORDER BY d.day) - 1 AS days_before
			FROM d
			WINDOW w AS (ORDER BY d.day DESC)
		)
		SELECT t.tau, t.m, t.n, t.z,
		       2 * fleetbench_normal_upper(abs(t.z)) AS p
		INTO s
		FROM (SELECT k.tau, k.big - k.n AS m, k.n,
			     (k.r - k.n * (k.n + 1) / 2.0
			      - (k.big - k.n) * k.n / 2.0)
			     / nullif(sqrt((k.big - k.n) * k.n * (k.big + 1)
					   / 12.0), 0) AS z
		      FROM k
		      WHERE k.tau > least(last_day, checked) - 7
			    AND k.tau <= last_day - 1
			    AND k.days_before >= 7) AS t
		WHERE t.z IS NOT NULL
		ORDER BY abs(t.z) DESC, t.tau
		LIMIT 1;
		IF NOT FOUND THEN
			CONTINUE;
		END IF;
		figure := f.name;
		changed_on := s.tau;
		detected_on := last_day;
		p := s.p;
		runs_before := s.m;
		runs_after := s.n;
		change := NULL;
		change_lo := NULL;
		change_hi := NULL;
		hosts_moved := NULL;
		placement_changed := NULL;
		SELECT count(DISTINCT u.h) INTO hosts FROM unnest(names) AS u(h);
		IF s.p < level THEN
			SELECT x.* INTO h
			FROM fleetbench_hodges_lehmann(
				ARRAY(SELECT u.c FROM unnest(days, cs) AS u(day, c)
				      WHERE u.day < s.tau),
				ARRAY(SELECT u.c FROM unnest(days, cs) AS u(day, c)
				      WHERE u.day >= s.tau)) AS x;
			change := exp(h.estimate) - 1;
			change_lo := exp(h.lo) - 1;
			change_hi := exp(h.hi) - 1;
			SELECT array_agg(m.h ORDER BY m.h) INTO hosts_moved
			FROM (SELECT u.h, percentile_cont(0.5) WITHIN GROUP (
					ORDER BY u.c) AS med
			      FROM unnest(days, cs, names) AS u(day, c, h)
			      WHERE u.day >= s.tau
			      GROUP BY u.h) AS m
			WHERE m.med * sign(h.estimate) >= abs(h.estimate) / 2;
			hosts_moved := hosts_moved[1:20];
			SELECT count(DISTINCT c.machine_id) INTO placement_changed
			FROM host_placement_changes AS c
			WHERE c.provider = p_provider
			      AND c.instance_type = p_instance_type
			      AND c.new_kernel = p_kernel
			      AND c.changed_at >= (s.tau - 7)::timestamp
						AT TIME ZONE 'UTC';
		END IF;
		RETURN NEXT;
	END LOOP;
END
$$;

/*
 * Raises the drift alerts of one group as of the day as_of (NULL: its
 * latest run's; checked: the day it was checked for before, if any): a
 * fleet
 * alert of kind 'drift' for each figure whose drift test has p below
 * alert_settings.drift_p (1e-7 unless set), its change {"FIGURE":
 * "decreased" (or "increased"), "since": DAY}, its effect what was
 * measured, announced with NOTIFY. A drift already raised for the figure
 * and direction whose day is within the last 35 days is the same drift:
 * nothing new. Returns how many it raised.
 */
CREATE OR REPLACE FUNCTION fleetbench_drift_raise(p_provider text,
	p_instance_type text, p_method text, p_kernel text,
	as_of date DEFAULT NULL, checked date DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	e record;
	direction text;
	raised bigint;
	n integer := 0;
BEGIN
	FOR e IN SELECT * FROM fleetbench_drift_evaluate(p_provider,
			p_instance_type, p_method, p_kernel, as_of, checked) AS x
		 WHERE x.change IS NOT NULL AND x.change <> 0
	LOOP
		direction := CASE WHEN e.change < 0 THEN 'decreased'
				  ELSE 'increased' END;
		IF EXISTS (SELECT 1 FROM fleet_alerts AS a
			   WHERE a.provider = p_provider
				 AND a.instance_type = p_instance_type
				 AND a.new_kernel = p_kernel
				 AND a.kind = 'drift'
				 AND a.change ->> e.figure = direction
				 AND (a.effect ->> 'changed_on')::date
				     > e.changed_on - 35) THEN
			CONTINUE;
		END IF;
		INSERT INTO fleet_alerts (provider, instance_type, new_kernel,
					  kind, change, effect)
		VALUES (p_provider, p_instance_type, p_kernel, 'drift',
			jsonb_build_object(e.figure, direction,
					   'since', e.changed_on),
			jsonb_build_object('figure', e.figure,
				'change', e.change, 'change_lo', e.change_lo,
				'change_hi', e.change_hi, 'hosts', e.hosts,
				'hosts_moved', to_jsonb(e.hosts_moved),
				'placement_changed', e.placement_changed,
				'runs_before', e.runs_before,
				'runs_after', e.runs_after,
				'test', 'Mann-Whitney U, normal approximation',
				'p', e.p, 'changed_on', e.changed_on,
				'detected_on', e.detected_on,
				'old_kernel', p_kernel, 'method', p_method,
				'evaluated_at', now()))
		ON CONFLICT DO NOTHING
		RETURNING fleet_alerts.id INTO raised;
		IF raised IS NOT NULL THEN
			PERFORM pg_notify('fleetbench_alerts', raised::text);
			n := n + 1;
		END IF;
	END LOOP;
	RETURN n;
END
$$;
