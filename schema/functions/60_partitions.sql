-- SPDX-License-Identifier: MIT
-- The monthly partitions of run_results (docs/operations.md). A
-- function file (schema/README.md): `fleetbench-collector migrate` runs all
-- of them again, in name order and in one transaction, whenever one of them
-- changes or a migration ran. Functions are CREATE OR REPLACE (a trigger
-- function is never dropped: its triggers depend on it); views are dropped
-- and made again.

/*
 * fleetbench_results_partition(month) makes the partition of run_results
 * for the month holding `month` (UTC), named run_results_yYYYYmMM, unless it
 * exists, first moving that month's rows out of the default partition
 * (which would otherwise forbid the new one). Returns whether it made it.
 * Takes the table's ACCESS EXCLUSIVE lock for a moment: the collectors
 * wait, they do not fail.
 */
CREATE OR REPLACE FUNCTION fleetbench_results_partition(month date)
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	first timestamp := date_trunc('month', month::timestamp);
	lo timestamptz := first AT TIME ZONE 'UTC';
	hi timestamptz := (first + interval '1 month') AT TIME ZONE 'UTC';
	name text := to_char(first, '"run_results_y"YYYY"m"MM');
BEGIN
	IF to_regclass(name) IS NOT NULL THEN
		RETURN false;
	END IF;
	CREATE TEMPORARY TABLE fleetbench_move_results AS
		SELECT * FROM run_results_default
		WHERE started_at >= lo AND started_at < hi;
	DELETE FROM run_results_default
	WHERE started_at >= lo AND started_at < hi;
	EXECUTE format('CREATE TABLE %I PARTITION OF run_results FOR VALUES FROM (%L) TO (%L)',
		       name, lo, hi);
	INSERT INTO run_results SELECT * FROM fleetbench_move_results;
	DROP TABLE fleetbench_move_results;
	RETURN true;
END
$$;

COMMENT ON FUNCTION fleetbench_results_partition(date) IS
	'makes the month''s partition of run_results, moving its rows out of the default partition';

/*
 * fleetbench_results_partitions(ahead) makes the partitions of this month
 * and the `ahead` months after it that are missing; returns how many
 * months it made. Run it monthly (cron, a systemd timer): a month without
 * a partition is not lost, it waits in the default partition until this
 * makes its own.
 */
CREATE OR REPLACE FUNCTION fleetbench_results_partitions(ahead integer DEFAULT 3)
RETURNS integer
LANGUAGE sql AS $$
	SELECT count(*) FILTER (WHERE fleetbench_results_partition(m::date))::integer
	FROM generate_series(date_trunc('month', now() AT TIME ZONE 'UTC'),
			     date_trunc('month', now() AT TIME ZONE 'UTC')
			     + make_interval(months => ahead),
			     interval '1 month') AS m
$$;
COMMENT ON FUNCTION fleetbench_results_partitions(integer) IS
	'makes the missing partitions of this month and the next ones; run monthly';

/*
 * fleetbench_results_drop_before(before) drops the monthly partitions of
 * run_results that end on or before `before` (UTC): their results are gone,
 * their runs (with their comparisons) stay (DELETE FROM runs for those).
 * Returns how many months it dropped.
 */
CREATE OR REPLACE FUNCTION fleetbench_results_drop_before(before date)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
	name text;
	n integer := 0;
BEGIN
	FOR name IN
		SELECT c.relname
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'run_results'::regclass
		  AND c.relname ~ '^run_results_y[0-9]{4}m[0-9]{2}$'
		  AND to_date(substr(c.relname, length('run_results_y') + 1),
			      'YYYY"m"MM') + interval '1 month' <= before
		ORDER BY 1
	LOOP
		EXECUTE format('DROP TABLE %I', name);
		n := n + 1;
	END LOOP;
	RETURN n;
END
$$;
COMMENT ON FUNCTION fleetbench_results_drop_before(date) IS
	'drops the monthly partitions of run_results that end on or before a date';
