-- SPDX-License-Identifier: MIT
-- The fleet alerts as Prometheus Alertmanager's API v2 takes them
-- (docs/alerts.md, "Alertmanager"): what the collector's alertmanager_url
-- push and `fleetbench alerts push` send, defined once. A function file
-- (schema/README.md), applied after 50_alerts.sql, whose view it reads.

/*
 * One row per fleet alert to send: the open ones, firing until valid_ms
 * from now (the sender sends them again before that), and those
 * acknowledged at or after resolved_since, resolved at their
 * acknowledgement (endsAt in the past: Alertmanager resolves an alert it
 * knows, and keeps one it did not know as resolved without notifying).
 * alert is a postable alert: labels, annotations, startsAt, endsAt.
 *
 * The labels make the alert's identity in Alertmanager, so they hold only
 * what never changes once the fleet alert exists: its id, kind, gain,
 * group, new kernel and the old kernel of its first host. What grows as
 * hosts join (their count, every old kernel, their figures) is in the
 * annotations.
 */
CREATE OR REPLACE FUNCTION fleetbench_alertmanager_alerts(
	valid_ms bigint, resolved_since timestamptz)
RETURNS TABLE (id bigint, open boolean, alert jsonb)
LANGUAGE sql STABLE AS $$
	SELECT s.id, s.acknowledged_at IS NULL,
	       jsonb_build_object(
		'labels', jsonb_strip_nulls(jsonb_build_object(
			'alertname', CASE s.kind
				WHEN 'fingerprint'
				THEN 'FleetbenchIoUringFingerprintChanged'
				WHEN 'shift' THEN 'FleetbenchFleetShift'
				WHEN 'drift' THEN 'FleetbenchDrift'
				ELSE 'FleetbenchGainChanged' END,
			'fleetbench_alert_id', s.id::text,
			'kind', s.kind,
			-- a gain alert's change has one member, its gain; a
			-- shift or drift alert's effect names its figure
			'figure', CASE WHEN s.kind IN ('shift', 'drift')
				THEN s.effect ->> 'figure'
				WHEN s.kind = 'gain' THEN
				(SELECT min(k) FROM jsonb_object_keys(s.change) AS k)
				END,
			'provider', nullif(s.provider, ''),
			'instance_type', nullif(s.instance_type, ''),
			'kernel', s.new_kernel,
			'previous_kernel', coalesce(h.first_old_kernel,
						    s.old_kernels[1]))),
		'annotations', jsonb_strip_nulls(jsonb_build_object(
			'summary', s.summary,
			'description', format('%s host(s) of %s %s on kernel %s (from %s): %s',
				s.hosts, s.provider, s.instance_type,
				s.new_kernel,
				array_to_string(s.old_kernels, ', '),
				s.summary),
			'hosts', s.hosts::text,
			'previous_kernels', array_to_string(s.old_kernels, ' '),
			'change', s.change::text,
			-- a shift alert's evaluation: change, interval, q
			'effect', s.effect::text,
			'host_alerts', h.figures,
			'acknowledged_at', s.acknowledged_at::text)),
		'startsAt', s.created_at,
		'endsAt', coalesce(s.acknowledged_at,
				   now() + valid_ms * interval '1 ms'))
	FROM alert_summary AS s
	CROSS JOIN LATERAL (
		-- the first 20 hosts' figures, one line each
		SELECT (array_agg(a.old_kernel ORDER BY a.id))[1]
			       AS first_old_kernel,
		       string_agg(format('%s %s -> %s: %s', a.hostname,
					 a.old_kernel, a.new_kernel,
					 fleetbench_alert_text(a.kind, a.diff)),
				  E'\n' ORDER BY a.id) AS figures
		FROM (SELECT * FROM alerts
		      WHERE fleet_alert_id = s.id
		      ORDER BY alerts.id LIMIT 20) AS a) AS h
	WHERE s.acknowledged_at IS NULL
	      OR s.acknowledged_at >= resolved_since
	ORDER BY s.id
$$;
COMMENT ON FUNCTION fleetbench_alertmanager_alerts(bigint, timestamptz) IS
	'the open fleet alerts, and those acknowledged since, as Alertmanager API v2 postable alerts';
