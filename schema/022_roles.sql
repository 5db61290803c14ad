-- SPDX-License-Identifier: MIT
-- Access roles and retention (issue 17).
--
-- Two group roles (NOLOGIN: logins are made members, docs/operations.md
-- "Access roles"):
--   fleetbench_reader  SELECT on the tables and views users query;
--   fleetbench_writer  what `fleetbench-collector serve` needs: EXECUTE on
--                      the ingest functions (SECURITY DEFINER), SELECT,
--                      and UPDATE of the delivery columns of fleet_alerts
--                      (the alert hook); nothing that drops, truncates or
--                      alters.
-- Roles belong to the cluster, not to the database: they are made only
-- when missing (a role another database's migration makes at the same
-- moment is taken as made), which needs CREATEROLE (or a superuser). A migrating role
-- without it fails here, saying so; make the roles first as a superuser
-- (the Ansible collector role does) and migrate again. The privileges
-- themselves are granted by schema/functions/90_grants.sql, which migrate
-- runs again after every migration, so that tables and views made later
-- get them too.
--
-- Retention (`fleetbench-collector prune`, schema/functions/65_prune.sql)
-- deletes the runs of the months it drops: runs_started_idx finds them
-- (and the months that hold runs) without reading the whole table.

DO $$
DECLARE
	r text;
BEGIN
	FOREACH r IN ARRAY ARRAY['fleetbench_reader', 'fleetbench_writer'] LOOP
		CONTINUE WHEN EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r);
		IF NOT EXISTS (SELECT 1 FROM pg_roles
			       WHERE rolname = current_user
				 AND (rolcreaterole OR rolsuper)) THEN
			RAISE EXCEPTION 'migration 022 must create role % but role % lacks the CREATEROLE privilege',
				r, current_user
				USING ERRCODE = '42501',
				      HINT = 'as a superuser: CREATE ROLE fleetbench_reader NOLOGIN; CREATE ROLE fleetbench_writer NOLOGIN; then migrate again (docs/operations.md, "Access roles")';
		END IF;
		-- another database's migrate may make it at the same moment:
		-- roles are the cluster's, migrate's lock is the database's
		BEGIN
			EXECUTE format('CREATE ROLE %I NOLOGIN', r);
		EXCEPTION WHEN duplicate_object OR unique_violation THEN
			RAISE NOTICE 'role % was made meanwhile by another session', r;
		END;
	END LOOP;
END
$$;

CREATE INDEX runs_started_idx ON runs (started_at);
