-- SPDX-License-Identifier: MIT
-- The roll-out gate (issue 18; docs/queries.md, "gate"): may a kernel go
-- on to the rest of the fleet? Its canaries' runs on the new kernel are
-- compared with the same hosts' runs on their previous kernel by the
-- alert rules' own functions (50_alerts.sql: fleetbench_alert_previous,
-- fleetbench_io_uring_diff, fleetbench_gain_changes), one verdict per
-- provider and instance type. A function file (schema/README.md):
-- `fleetbench-collector migrate` runs all of them again, in name order and
-- in one transaction, whenever one of them changes or a migration ran.

-- A command-line duration ("30s", "10m", "1h", "90": seconds), parsed as
-- a PostgreSQL interval, in seconds; NULL for NULL. 22023 naming flag for
-- anything else or a negative one.
CREATE OR REPLACE FUNCTION fleetbench_cli_seconds(value text, flag text)
RETURNS double precision
LANGUAGE plpgsql STABLE AS $$
DECLARE
	v interval;
BEGIN
	IF value IS NULL THEN
		RETURN NULL;
	END IF;
	BEGIN
		v := value::interval;
	EXCEPTION WHEN data_exception THEN
		RAISE EXCEPTION '% ''%'': not a duration (e.g. 30s, 10m, 1h)',
			flag, value
			USING ERRCODE = 'invalid_parameter_value';
	END;
	IF extract(epoch FROM v) < 0 THEN
		RAISE EXCEPTION '% ''%'': a duration is not negative', flag, value
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	RETURN extract(epoch FROM v);
END
$$;

-- A command-line time (a date or timestamp, e.g. 2025-03-31 or
-- '2025-03-31 12:00+02'); NULL for NULL, 22023 naming flag for anything
-- else.
CREATE OR REPLACE FUNCTION fleetbench_cli_time(value text, flag text)
RETURNS timestamptz
LANGUAGE plpgsql STABLE AS $$
BEGIN
	RETURN value::timestamptz;
EXCEPTION WHEN data_exception THEN
	RAISE EXCEPTION '% ''%'': not a date or time (e.g. 2025-03-31 or ''2025-03-31 12:00+02'')',
		flag, value
		USING ERRCODE = 'invalid_parameter_value';
END
$$;

/*
 * The gate's concurrent baseline (issue 39, Kayenta's canary against a
 * baseline measured at the same time): for each provider, instance type
 * and method with canary runs on kernel (fleetbench_runs(filter, since)),
 * the hosts of the same group that ran another kernel in the same window
 * (from since, or a day before the group's first canary run) and have no
 * run on kernel; each alerting figure's per-host medians (logs) of the
 * canaries against the baseline's: the Hodges-Lehmann shift with its 95%
 * interval and Mann-Whitney's p (both sets of hosts, 12_stats.sql), and
 * q, Benjamini-Hochberg's over the figures of the group. worse: the
 * change is in the figure's worse direction (figures.higher_is_better).
 * A group with no baseline host has one row, figure NULL, baseline 0; a
 * figure that fewer than 3 hosts of a side measured has no row.
 */
CREATE OR REPLACE FUNCTION fleetbench_gate_concurrent(kernel text,
	since timestamptz DEFAULT NULL, filter jsonb DEFAULT NULL)
RETURNS TABLE (provider text, instance_type text, method text,
	       figure text, canaries integer, baseline integer,
	       baseline_kernels text[], change double precision,
	       change_lo double precision, change_hi double precision,
	       p double precision, q double precision, worse boolean)
LANGUAGE sql STABLE AS $$
	WITH c AS (
		SELECT f.* FROM fleetbench_runs(coalesce(filter, '{}')
				|| jsonb_build_object('kernel', kernel), since) AS f
	), w AS (
		SELECT c.provider, c.instance_type, c.method,
		       coalesce(since, min(c.started_at) - interval '1 day')
			       AS start,
		       array_agg(DISTINCT c.machine_id) AS canary_hosts
		FROM c GROUP BY c.provider, c.instance_type, c.method
	), b AS (
		SELECT f.*
		FROM w
		CROSS JOIN LATERAL fleetbench_runs(coalesce(filter, '{}')
				|| jsonb_build_object('provider', w.provider,
						      'instance_type', w.instance_type,
						      'method', w.method), w.start) AS f
		WHERE f.kernel_release <> kernel
		      AND f.machine_id <> ALL (w.canary_hosts)
	), per_host AS (
		SELECT x.side, x.provider, x.instance_type, x.method, fg.name,
		       fg.position, fg.higher_is_better, x.machine_id,
		       ln(percentile_cont(0.5) WITHIN GROUP (
			       ORDER BY x.figures[fg.id])) AS v
		FROM (SELECT 'c' AS side, c.provider, c.instance_type, c.method,
			     c.machine_id, c.figures FROM c
		      UNION ALL
		      SELECT 'b', b.provider, b.instance_type, b.method,
			     b.machine_id, b.figures FROM b) AS x
		CROSS JOIN figures AS fg
		WHERE fg.alert_min_change IS NOT NULL AND x.figures[fg.id] > 0
		GROUP BY x.side, x.provider, x.instance_type, x.method, fg.name,
			 fg.position, fg.higher_is_better, x.machine_id
	), t AS (
		SELECT ph.provider, ph.instance_type, ph.method, ph.name,
		       ph.position, ph.higher_is_better,
		       array_agg(ph.v) FILTER (WHERE ph.side = 'c') AS cv,
		       array_agg(ph.v) FILTER (WHERE ph.side = 'b') AS bv
		FROM per_host AS ph
		GROUP BY ph.provider, ph.instance_type, ph.method, ph.name,
			 ph.position, ph.higher_is_better
		HAVING count(*) FILTER (WHERE ph.side = 'c') >= 3
		       AND count(*) FILTER (WHERE ph.side = 'b') >= 3
	), r AS (
		SELECT t.*, h.estimate, h.lo, h.hi, u.p
		FROM t,
		     LATERAL fleetbench_hodges_lehmann(t.bv, t.cv) AS h,
		     LATERAL fleetbench_mann_whitney(t.bv, t.cv) AS u
	)
	SELECT w.provider, w.instance_type, w.method, r.name,
	       cardinality(w.canary_hosts),
	       (SELECT count(DISTINCT b.machine_id)::integer FROM b
		WHERE b.provider = w.provider
		      AND b.instance_type = w.instance_type
		      AND b.method = w.method),
	       (SELECT array_agg(DISTINCT b.kernel_release) FROM b
		WHERE b.provider = w.provider
		      AND b.instance_type = w.instance_type
		      AND b.method = w.method),
	       exp(r.estimate) - 1, exp(r.lo) - 1, exp(r.hi) - 1, r.p,
	       (fleetbench_bh(array_agg(r.p) OVER g))[row_number() OVER g2],
	       CASE WHEN r.higher_is_better THEN r.estimate < 0
		    ELSE r.estimate > 0 END
	FROM w
	LEFT JOIN r ON r.provider = w.provider
		     AND r.instance_type = w.instance_type
		     AND r.method = w.method
	WINDOW g AS (PARTITION BY w.provider, w.instance_type, w.method
		     ORDER BY r.position
		     ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING),
	       g2 AS (PARTITION BY w.provider, w.instance_type, w.method
		      ORDER BY r.position)
	ORDER BY w.provider, w.instance_type, w.method, r.position
$$;

/*
 * The gate for kernel, one row per provider and instance type with runs
 * on it: those of fleetbench_runs(filter, since) (the filter may not name
 * the kernel, the gate's own). Each run on kernel is paired as the alert
 * check pairs it (fleetbench_alert_previous: the host's latest earlier
 * run on another kernel, same method), and every pair is tested by the
 * alert rules: any change of the io_uring fingerprint, and each gain that
 * moved by the per-host rule (fleetbench_gain_verdict()). Acknowledged
 * alerts do not matter: the runs are
 * compared afresh, with the settings of now.
 *
 * hosts: the hosts with runs on kernel; compared: those of them with a
 * pair (a host new on kernel, or whose method changed with it, has none
 * and is not a canary); previous_kernels: the kernels they came from.
 * verdict: 'fail' when any pair shows a change (reasons says which, in
 * words: a fingerprint change with the hosts that show it, a gain per
 * host with its most significant pair and how many of the host's pairs
 * moved), or when an alerting figure of the canaries is worse than the
 * concurrent baseline's (fleetbench_gate_concurrent: q < 0.05, the
 * change with its interval), else 'waiting' while fewer than min_hosts
 * hosts are compared, else 'pass'; a pass with no concurrent baseline,
 * or one too small to compare, says so in reasons.
 */
CREATE OR REPLACE FUNCTION fleet_gate(kernel text, min_hosts integer DEFAULT 1,
				      since timestamptz DEFAULT NULL,
				      filter jsonb DEFAULT NULL)
RETURNS TABLE (provider text, instance_type text, verdict text,
	       hosts bigint, compared bigint, previous_kernels text[],
	       reasons text[])
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
	IF coalesce(kernel, '') = '' THEN
		RAISE EXCEPTION 'gate: the kernel release is missing'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF min_hosts IS NULL OR min_hosts < 1 THEN
		RAISE EXCEPTION 'gate: min_hosts is at least 1, not %',
			coalesce(min_hosts::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	PERFORM fleetbench_check_filter(filter);
	IF filter ? 'kernel' THEN
		RAISE EXCEPTION 'where: the kernel is the gate''s own (%), not a filter key',
			kernel
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	RETURN QUERY
	WITH n AS (
		SELECT f.run_id, f.machine_id, f.hostname, f.provider,
		       f.instance_type, f.method, f.started_at
		FROM fleetbench_runs(coalesce(filter, '{}')
				     || jsonb_build_object('kernel', kernel),
				     since) AS f
	), pairs AS (
		SELECT n.*, p.old_run, p.old_kernel
		FROM n
		LEFT JOIN LATERAL fleetbench_alert_previous(n.machine_id,
				kernel, n.method, n.started_at) AS p ON true
	), compared AS (
		SELECT * FROM pairs WHERE old_run IS NOT NULL
	), groups AS (
		SELECT p.provider, p.instance_type,
		       count(DISTINCT p.machine_id) AS hosts,
		       count(DISTINCT p.machine_id)
			       FILTER (WHERE p.old_run IS NOT NULL) AS compared,
		       array_agg(DISTINCT p.old_kernel ORDER BY p.old_kernel)
			       FILTER (WHERE p.old_kernel IS NOT NULL)
			       AS previous_kernels
		FROM pairs AS p
		GROUP BY p.provider, p.instance_type
	), fingerprint AS (
		-- each change of the fingerprint, with the hosts showing it
		SELECT c.provider, c.instance_type,
		       fleetbench_alert_text('fingerprint', d.diff) AS what,
		       count(DISTINCT c.machine_id) AS changed
		FROM compared AS c
		CROSS JOIN LATERAL (SELECT fleetbench_io_uring_diff(c.old_run,
							c.run_id) AS diff) AS d
		WHERE d.diff <> '{}'
		GROUP BY c.provider, c.instance_type, d.diff
	), moved AS (
		-- each gain that moved, per host: its most significant pair
		-- (the latest of equals) and how many of the host's pairs
		SELECT DISTINCT ON (c.machine_id, g.figure)
		       c.provider, c.instance_type, c.machine_id, c.hostname,
		       g.figure, g.diff,
		       count(*) OVER (PARTITION BY c.machine_id, g.figure)
			       AS pairs_moved
		FROM compared AS c
		CROSS JOIN LATERAL fleetbench_gain_changes(c.old_run,
							   c.run_id) AS g
		ORDER BY c.machine_id, g.figure,
			 (g.diff -> g.figure ->> 'p')::double precision,
			 c.started_at DESC
	), host_pairs AS (
		SELECT c.machine_id, count(*) AS pairs
		FROM compared AS c GROUP BY c.machine_id
	), conc AS MATERIALIZED (
		-- the canaries against the hosts still on another kernel in
		-- the same window
		SELECT x.*, f.label
		FROM fleetbench_gate_concurrent(kernel, since, filter) AS x
		LEFT JOIN figures AS f ON f.name = x.figure
	), baseline AS (
		SELECT x.provider, x.instance_type, max(x.baseline) AS hosts,
		       count(x.figure) AS figures
		FROM conc AS x GROUP BY x.provider, x.instance_type
	), why AS (
		SELECT f.provider, f.instance_type, 1 AS o, f.what AS k,
		       format('%s on %s of %s hosts', f.what, f.changed,
			      gr.compared) AS reason
		FROM fingerprint AS f
		JOIN groups AS gr USING (provider, instance_type)
		UNION ALL
		SELECT m.provider, m.instance_type, 2, m.figure || ' ' || m.hostname,
		       format('%s on %s (%s of %s runs)',
			      fleetbench_alert_text('gain', m.diff), m.hostname,
			      m.pairs_moved, hp.pairs)
		FROM moved AS m
		JOIN host_pairs AS hp USING (machine_id)
		UNION ALL
		SELECT x.provider, x.instance_type, 3, x.figure,
		       format('%s %s%% [%s%%, %s%%] on %s canaries against %s hosts still on %s in the same window (q = %s)',
			      x.label,
			      to_char(100 * x.change::numeric, 'FMSG990.0'),
			      to_char(100 * x.change_lo::numeric, 'FMSG990.0'),
			      to_char(100 * x.change_hi::numeric, 'FMSG990.0'),
			      x.canaries, x.baseline,
			      array_to_string(x.baseline_kernels, ', '),
			      CASE WHEN x.q < 0.0001
				   THEN trim(to_char(x.q, '9.9EEEE'))
				   ELSE round(x.q::numeric, 4)::text END)
		FROM conc AS x
		WHERE x.q < 0.05 AND x.worse
	)
	SELECT gr.provider, gr.instance_type,
	       CASE WHEN w.reasons IS NOT NULL THEN 'fail'
		    WHEN gr.compared < min_hosts THEN 'waiting'
		    ELSE 'pass' END,
	       gr.hosts, gr.compared, coalesce(gr.previous_kernels, '{}'),
	       coalesce(w.reasons,
			CASE WHEN gr.compared < min_hosts THEN ARRAY[format(
				'%s of %s hosts compared with their previous kernel%s',
				gr.compared, min_hosts,
				CASE WHEN gr.hosts > gr.compared THEN format(
					' (%s more on %s without an earlier run of their method on another kernel)',
					gr.hosts - gr.compared, kernel)
				     ELSE '' END)]
			     -- a pass says when it had no concurrent baseline
			     WHEN coalesce(bl.hosts, 0) = 0 THEN ARRAY[
				'no concurrent baseline (no host of the type on another kernel in the same window): compared with history only']
			     WHEN bl.figures = 0 THEN ARRAY[format(
				'concurrent baseline too small (%s host(s) of the type on another kernel in the same window, 3 needed a side): compared with history only',
				bl.hosts)]
			     ELSE '{}' END)
	FROM groups AS gr
	LEFT JOIN baseline AS bl USING (provider, instance_type)
	LEFT JOIN (SELECT y.provider, y.instance_type,
			  array_agg(y.reason ORDER BY y.o, y.k) AS reasons
		   FROM why AS y GROUP BY y.provider, y.instance_type) AS w
		USING (provider, instance_type)
	ORDER BY gr.provider, gr.instance_type;
END
$$;
COMMENT ON FUNCTION fleet_gate(text, integer, timestamptz, jsonb) IS
	'the roll-out gate: per provider and instance type with runs on kernel, pass, fail (reasons) or waiting (docs/queries.md, gate)';

-- The gate as a view: for each kernel that some host runs now (its latest
-- run) after an earlier run of the same method on another kernel, the
-- verdicts of fleet_gate(kernel) with its defaults (min_hosts 1, every
-- run, no filter). Reads each host's latest run (runs_host_latest_idx),
-- then tests every pair on those kernels: for a check now and then, not
-- a dashboard refreshed each second.
DROP VIEW IF EXISTS fleet_gate_latest CASCADE;
CREATE VIEW fleet_gate_latest AS
SELECT k.new_kernel, g.*
FROM (SELECT DISTINCT l.kernel_release AS new_kernel
      FROM (SELECT DISTINCT ON (r.machine_id) r.machine_id,
		   r.kernel_release, r.method, r.started_at
	    FROM runs AS r
	    ORDER BY r.machine_id, r.started_at DESC) AS l
      WHERE EXISTS (SELECT FROM fleetbench_alert_previous(l.machine_id,
				l.kernel_release, l.method, l.started_at))) AS k
CROSS JOIN LATERAL fleet_gate(k.new_kernel) AS g
ORDER BY k.new_kernel, g.provider, g.instance_type;
COMMENT ON VIEW fleet_gate_latest IS
	'the roll-out gate of every kernel hosts moved to last, with fleet_gate()''s defaults (docs/queries.md, gate)';
