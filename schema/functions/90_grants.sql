-- SPDX-License-Identifier: MIT
-- The privileges of the access roles fleetbench_reader and
-- fleetbench_writer (migration 022 makes them; docs/operations.md, "Access
-- roles"). A function file (schema/README.md), the last one: `migrate`
-- runs all of them again after every migration, so the tables and views of
-- later migrations get the grants too, and CREATE OR REPLACE FUNCTION in
-- an earlier file (which resets SECURITY DEFINER and SET) is followed by
-- the ALTER FUNCTIONs below.
--
-- The ingest functions are SECURITY DEFINER with a fixed search_path: they
-- run as the schema's owner, so the writer needs no INSERT, UPDATE or
-- DELETE on any table, nor USAGE on the sequences, and can store only
-- what they check. EXECUTE on them is the writer's alone (PUBLIC holds
-- EXECUTE on every function by default). fleetbench_refresh(), which any
-- query runs to bring fleet_summary up to date from fleet_dirty, is
-- SECURITY DEFINER too and stays PUBLIC: a reader's `fleetbench compare`
-- keeps the summary current without any write privilege of its own.

DO $$
DECLARE
	s name := current_schema();
	rel regclass;
	f regprocedure;
BEGIN
	IF (SELECT count(*) FROM pg_roles
	    WHERE rolname IN ('fleetbench_reader', 'fleetbench_writer')) < 2 THEN
		RAISE EXCEPTION 'functions/90_grants.sql: the roles fleetbench_reader and fleetbench_writer are missing (migration 022_roles makes them)';
	END IF;

	-- connecting: the database's owner grants it (the Ansible role
	-- revokes CONNECT from PUBLIC)
	IF has_database_privilege(current_database(),
				  'CONNECT WITH GRANT OPTION') THEN
		EXECUTE format('GRANT CONNECT ON DATABASE %I TO fleetbench_reader, fleetbench_writer',
			       current_database());
	END IF;
	EXECUTE format('GRANT USAGE ON SCHEMA %I TO fleetbench_reader, fleetbench_writer',
		       s);

	-- SELECT on every table and view of the schema that we own (not on
	-- a table of another role that only shares the schema); the writer
	-- reads too: serve checks schema_migrations and schema_functions,
	-- the alert hook reads alert_summary and alerts
	FOR rel IN SELECT c.oid::regclass FROM pg_class AS c
		   WHERE c.relnamespace = s::regnamespace
		     AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
		     AND pg_has_role(c.relowner, 'USAGE')
		   ORDER BY c.oid LOOP
		EXECUTE format('GRANT SELECT ON %s TO fleetbench_reader, fleetbench_writer',
			       rel);
	END LOOP;
	-- and on what we make later (partitions, tables made by hand) before
	-- the next migrate
	EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT ON TABLES TO fleetbench_reader, fleetbench_writer',
		       s);

	-- the alert hook's bookkeeping (collector/alert.c): which delivery
	-- is due, and its outcome; never acknowledged_at
	GRANT UPDATE (delivery_attempts, next_delivery_at, delivered_at,
		      delivery_error) ON fleet_alerts TO fleetbench_writer;

	-- the ingest: every overload of these, whatever their parameters
	FOR f IN SELECT p.oid::regprocedure FROM pg_proc AS p
		 WHERE p.pronamespace = s::regnamespace
		   AND p.proname IN ('fleetbench_ingest_run',
				     'fleetbench_ingest_end')
		 ORDER BY p.oid LOOP
		EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = %I, pg_temp',
			       f, s);
		EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
		EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO fleetbench_writer',
			       f);
	END LOOP;
	FOR f IN SELECT p.oid::regprocedure FROM pg_proc AS p
		 WHERE p.pronamespace = s::regnamespace
		   AND p.proname = 'fleetbench_refresh'
		 ORDER BY p.oid LOOP
		EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = %I, pg_temp',
			       f, s);
	END LOOP;
END
$$;
