-- SPDX-License-Identifier: MIT
-- The monthly partitions of the results tables (docs/operations.md). A
-- function file (schema/README.md): `fleetbench-collector migrate` runs all
-- of them again, in name order and in one transaction, whenever one of them
-- changes or a migration ran. Functions are CREATE OR REPLACE (a trigger
-- function is never dropped: its triggers depend on it); views are dropped
-- and made again.

/*
 * fleetbench_results_partition(month) makes the partitions of the month
 * holding `month` (UTC) for the three results tables, named
 * TABLE_yYYYYmMM, unless they exist, first moving that month's rows out of
 * the default partitions (which would otherwise forbid the new ones).
 * Returns whether it made them. Takes the tables' ACCESS EXCLUSIVE lock
 * for a moment: the collectors wait, they do not fail.
 */
CREATE OR REPLACE FUNCTION fleetbench_results_partition(month date) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	first timestamp := date_trunc('month', month::timestamp);
	lo timestamptz := first AT TIME ZONE 'UTC';
	hi timestamptz := (first + interval '1 month') AT TIME ZONE 'UTC';
	suffix text := to_char(first, '"_y"YYYY"m"MM');
	t text;
BEGIN
	IF to_regclass('bench_results' || suffix) IS NOT NULL THEN
		RETURN false;
	END IF;
	CREATE TEMPORARY TABLE fleetbench_move_results AS
		SELECT * FROM bench_results_default
		WHERE started_at >= lo AND started_at < hi;
	CREATE TEMPORARY TABLE fleetbench_move_metrics AS
		SELECT * FROM bench_metrics_default
		WHERE started_at >= lo AND started_at < hi;
	CREATE TEMPORARY TABLE fleetbench_move_comparisons AS
		SELECT * FROM comparisons_default
		WHERE started_at >= lo AND started_at < hi;
	DELETE FROM bench_metrics_default
	WHERE started_at >= lo AND started_at < hi;
	DELETE FROM comparisons_default
	WHERE started_at >= lo AND started_at < hi;
	DELETE FROM bench_results_default
	WHERE started_at >= lo AND started_at < hi;
	FOREACH t IN ARRAY ARRAY['bench_results', 'bench_metrics',
				 'comparisons'] LOOP
		EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
			       t || suffix, t, lo, hi);
	END LOOP;
	INSERT INTO bench_results SELECT * FROM fleetbench_move_results;
	INSERT INTO bench_metrics SELECT * FROM fleetbench_move_metrics;
	INSERT INTO comparisons SELECT * FROM fleetbench_move_comparisons;
	DROP TABLE fleetbench_move_results, fleetbench_move_metrics,
		fleetbench_move_comparisons;
	RETURN true;
END
$$;
COMMENT ON FUNCTION fleetbench_results_partition(date) IS
	'makes the month''s partitions of the results tables, moving its rows out of the default partitions';

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
 * the three results tables that end on or before `before` (UTC): their
 * results are gone, their runs stay (DELETE FROM runs for those). Returns
 * how many months it dropped.
 */
CREATE OR REPLACE FUNCTION fleetbench_results_drop_before(before date) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
	suffix text;
	n integer := 0;
BEGIN
	FOR suffix IN
		SELECT substr(c.relname, length('bench_results') + 1)
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'bench_results'::regclass
		  AND c.relname ~ '^bench_results_y[0-9]{4}m[0-9]{2}$'
		  AND to_date(substr(c.relname, length('bench_results_y') + 1),
			      'YYYY"m"MM') + interval '1 month' <= before
		ORDER BY 1
	LOOP
		EXECUTE format('DROP TABLE IF EXISTS %I, %I, %I',
			       'comparisons' || suffix, 'bench_metrics' || suffix,
			       'bench_results' || suffix);
		n := n + 1;
	END LOOP;
	RETURN n;
END
$$;
COMMENT ON FUNCTION fleetbench_results_drop_before(date) IS
	'drops the results tables'' monthly partitions that end on or before a date';
