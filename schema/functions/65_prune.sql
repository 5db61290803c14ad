-- SPDX-License-Identifier: MIT
-- Retention: `fleetbench-collector prune --older-than 13months`
-- (collector/cmd_prune.c; docs/operations.md, "Retention"). A function
-- file (schema/README.md): CREATE OR REPLACE, re-applied by migrate.
--
-- A month (UTC) goes whole: the monthly partitions of every partitioned
-- table of the schema (TABLE_yYYYYmMM: run_results_y2024m06, and those of
-- any later partitioned table named the same way) are dropped, and the
-- month's runs are deleted (runs is not partitioned, docs/scaling.md): the
-- trigger runs_delete_results takes their run_figures rows and any results
-- left in the default partition with them, and marks their groups in
-- fleet_dirty, so fleet_summary (and every query) stops counting them at
-- the next refresh. The default partition is never dropped. A month that
-- holds a run an open (unacknowledged) fleet alert refers to is kept
-- whole. Alerts themselves are kept (they have no foreign key to runs).

/*
 * The months (first day, UTC) that end on or before cutoff and hold a
 * monthly partition or a run, oldest first.
 */
CREATE OR REPLACE FUNCTION fleetbench_prune_months(cutoff timestamptz)
RETURNS SETOF date
LANGUAGE sql STABLE AS $$
	WITH RECURSIVE m(first) AS (
		-- the months of the old runs, one index probe each
		SELECT date_trunc('month', min(r.started_at) AT TIME ZONE 'UTC')
		FROM runs AS r WHERE r.started_at < cutoff
		UNION ALL
		SELECT date_trunc('month', (
			SELECT min(r.started_at) FROM runs AS r
			WHERE r.started_at >= (m.first + interval '1 month')
					      AT TIME ZONE 'UTC'
			  AND r.started_at < cutoff) AT TIME ZONE 'UTC')
		FROM m WHERE m.first IS NOT NULL
	)
	SELECT DISTINCT x.first::date
	FROM (SELECT m.first FROM m WHERE m.first IS NOT NULL
	      UNION ALL
	      SELECT to_timestamp(substring(c.relname FROM '_y([0-9]{4}m[0-9]{2})$'),
				  'YYYY"m"MM') AT TIME ZONE 'UTC'
	      FROM pg_inherits AS i
	      JOIN pg_class AS c ON c.oid = i.inhrelid
	      JOIN pg_class AS p ON p.oid = i.inhparent
	      WHERE p.relkind = 'p'
		AND p.relnamespace = current_schema()::regnamespace
		AND c.relnamespace = p.relnamespace
		AND c.relname ~ ('^' || p.relname || '_y[0-9]{4}m[0-9]{2}$')) AS x
	WHERE (x.first + interval '1 month') AT TIME ZONE 'UTC' <= cutoff
	ORDER BY 1
$$;

/*
 * What pruning the month holding `month` (UTC) takes: its monthly
 * partitions, their rows and bytes (pg_total_relation_size: with indexes
 * and TOAST), its runs and their bytes (pg_column_size of the rows), and
 * the open fleet alerts (fleet_alerts.id, as `fleetbench alerts` lists
 * them) that refer to one of its runs: with any, the month is kept.
 */
CREATE OR REPLACE FUNCTION fleetbench_prune_month_info(month date,
	OUT partitions text[], OUT partition_rows bigint,
	OUT partition_bytes bigint, OUT run_count bigint,
	OUT run_bytes bigint, OUT open_alerts bigint[])
LANGUAGE plpgsql STABLE AS $$
DECLARE
	first timestamp := date_trunc('month', month::timestamp);
	lo timestamptz := first AT TIME ZONE 'UTC';
	hi timestamptz := (first + interval '1 month') AT TIME ZONE 'UTC';
	suffix text := to_char(first, '"_y"YYYY"m"MM');
	rel regclass;
	n bigint;
BEGIN
	partitions := '{}';
	partition_rows := 0;
	partition_bytes := 0;
	FOR rel IN SELECT c.oid::regclass
		   FROM pg_inherits AS i
		   JOIN pg_class AS c ON c.oid = i.inhrelid
		   JOIN pg_class AS p ON p.oid = i.inhparent
		   WHERE p.relkind = 'p'
		     AND p.relnamespace = current_schema()::regnamespace
		     AND c.relnamespace = p.relnamespace
		     AND c.relname = p.relname || suffix
		   ORDER BY c.relname LOOP
		EXECUTE format('SELECT count(*) FROM %s', rel) INTO n;
		partitions := partitions || rel::text;
		partition_rows := partition_rows + n;
		partition_bytes := partition_bytes + pg_total_relation_size(rel);
	END LOOP;
	SELECT count(*), coalesce(sum(pg_column_size(r.*)), 0)
	INTO run_count, run_bytes
	FROM runs AS r WHERE r.started_at >= lo AND r.started_at < hi;
	SELECT coalesce(array_agg(DISTINCT f.id ORDER BY f.id), '{}')
	INTO open_alerts
	FROM fleet_alerts AS f
	JOIN alerts AS a ON a.fleet_alert_id = f.id
	JOIN runs AS r ON r.run_id IN (a.old_run_id, a.new_run_id)
	WHERE f.acknowledged_at IS NULL
	  AND r.started_at >= lo AND r.started_at < hi;
END
$$;

/*
 * The plan of `prune --older-than HORIZON --dry-run`: every month that
 * ends on or before now() - older_than, oldest first, with what pruning
 * it takes (fleetbench_prune_month_info); `kept` when an open alert holds
 * it. Changes nothing.
 */
DROP FUNCTION IF EXISTS fleetbench_prune_plan(interval);
CREATE FUNCTION fleetbench_prune_plan(older_than interval)
RETURNS TABLE (month date, partitions text[], partition_rows bigint,
	       partition_bytes bigint, run_count bigint, run_bytes bigint,
	       open_alerts bigint[], kept boolean)
LANGUAGE plpgsql STABLE AS $$
BEGIN
	IF older_than IS NULL OR older_than <= interval '0' THEN
		RAISE EXCEPTION 'fleetbench_prune_plan: the horizon must be positive, not %',
			coalesce(older_than::text, 'NULL')
			USING ERRCODE = '22023';
	END IF;
	RETURN QUERY
	SELECT m, i.partitions, i.partition_rows, i.partition_bytes,
	       i.run_count, i.run_bytes, i.open_alerts,
	       cardinality(i.open_alerts) > 0
	FROM fleetbench_prune_months(now() - older_than) AS m,
	     fleetbench_prune_month_info(m) AS i
	ORDER BY m;
END
$$;

/*
 * Prunes the month holding `month` unless an open alert holds it: drops
 * its monthly partitions, then deletes its runs (their run_figures go with
 * them and fleet_dirty notes their groups). Refuses a month that does
 * not end on or before now() - older_than. Returns what it dropped, or,
 * with kept true, what it kept and the alerts that hold it. Run each month
 * in a transaction of its own: dropping a partition takes its parent's
 * ACCESS EXCLUSIVE lock until COMMIT (the collectors wait, they do not
 * fail).
 */
DROP FUNCTION IF EXISTS fleetbench_prune_month(date, interval);
CREATE FUNCTION fleetbench_prune_month(month date, older_than interval)
RETURNS TABLE (partitions text[], partition_rows bigint,
	       partition_bytes bigint, run_count bigint, run_bytes bigint,
	       open_alerts bigint[], kept boolean)
LANGUAGE plpgsql AS $$
DECLARE
	first timestamp := date_trunc('month', month::timestamp);
	lo timestamptz := first AT TIME ZONE 'UTC';
	hi timestamptz := (first + interval '1 month') AT TIME ZONE 'UTC';
	i record;
	rel text;
BEGIN
	IF older_than IS NULL OR older_than <= interval '0' THEN
		RAISE EXCEPTION 'fleetbench_prune_month: the horizon must be positive, not %',
			coalesce(older_than::text, 'NULL')
			USING ERRCODE = '22023';
	END IF;
	IF hi > now() - older_than THEN
		RAISE EXCEPTION 'fleetbench_prune_month: month % ends after % (now less %)',
			to_char(first, 'YYYY-MM'), now() - older_than, older_than
			USING ERRCODE = '22023';
	END IF;
	i := fleetbench_prune_month_info(month);
	partitions := i.partitions;
	partition_rows := i.partition_rows;
	partition_bytes := i.partition_bytes;
	run_count := i.run_count;
	run_bytes := i.run_bytes;
	open_alerts := i.open_alerts;
	kept := cardinality(i.open_alerts) > 0;
	IF NOT kept THEN
		FOREACH rel IN ARRAY i.partitions LOOP
			EXECUTE format('DROP TABLE %s', rel);
		END LOOP;
		DELETE FROM runs AS r WHERE r.started_at >= lo AND r.started_at < hi;
	END IF;
	RETURN NEXT;
END
$$;

COMMENT ON FUNCTION fleetbench_prune_months(timestamptz) IS
	'the months (UTC) ending on or before a time that hold a monthly partition or a run';
COMMENT ON FUNCTION fleetbench_prune_month_info(date) IS
	'a month''s partitions with their rows and bytes, its runs, and the open alerts that refer to them';
COMMENT ON FUNCTION fleetbench_prune_plan(interval) IS
	'what prune --older-than would drop, month by month; changes nothing';
COMMENT ON FUNCTION fleetbench_prune_month(date, interval) IS
	'drops a month''s partitions and deletes its runs, unless an open alert refers to one';
