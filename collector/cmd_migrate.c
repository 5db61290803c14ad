/* SPDX-License-Identifier: MIT */
/*
 * fleetbench-collector migrate: the schema migrations, then the function
 * files when a migration ran or a file changed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include "cleanup.h"
#include "cmd.h"
#include "log.h"

/*
 * Pending migrations first, each in its own transaction; then, when one
 * ran or a function file differs from the one recorded, all function files
 * in one transaction (schema/README.md).
 */
/*
 * The SECURITY DEFINER functions run as the schema's owner and resolve
 * names in its schema: a role that may create there can plant a function
 * of a closer argument type (public.cardinality(float8[])) and have it run
 * as the owner (issue 38). migrate refuses such a schema, naming the
 * grant. 0, or -1 (logged).
 */
static int schema_creators_refused(struct pg *pg)
{
	_cleanup_pqclear_ PGresult *res = NULL;
	char err[PG_ERR_LEN];

	if (pg_query(pg,
		     "SELECT n.nspname, string_agg(CASE WHEN a.grantee = 0 "
		     "THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) "
		     "END, ', ' ORDER BY a.grantee) "
		     "FROM pg_namespace AS n, aclexplode(coalesce(n.nspacl, "
		     "acldefault('n', n.nspowner))) AS a "
		     "WHERE n.nspname = current_schema() "
		     "AND a.privilege_type = 'CREATE' AND a.grantee <> n.nspowner "
		     "GROUP BY n.nspname",
		     0, NULL, &res, err) < 0)
		return log_error("cannot read the schema's privileges: %s", err);
	if (PQntuples(res) == 0)
		return 0;
	return log_error("refusing to migrate: %s may create objects in schema %s, where the functions that run as its owner look up names (a planted function would run as the owner); revoke it (REVOKE CREATE ON SCHEMA %s FROM %s), or give fleetbench a schema of its own (docs/operations.md, \"Access roles\")",
			 PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 0),
			 PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1));
}

int cmd_migrate(const struct collector_config *cfg)
{
	struct db d = { 0 };
	char err[PG_ERR_LEN];
	size_t applied = 0, reapplied = 0;
	int r, ret = 1;

	if (db_open(&d, cfg) < 0 || schema_creators_refused(d.pg) < 0)
		goto out;
	r = pg_migrations_check(d.pg, d.m, d.n, err);
	if (r < 0 && r != -ENOENT) {
		log_error("refusing to migrate: %s", err);
		goto out;
	}
	for (size_t i = 0; i < d.n; i++) {
		bool ran;

		if (pg_migration_apply(d.pg, &d.m[i], &ran, err) < 0) {
			log_error("migration '%s' failed, nothing of it applied: %s",
				  d.m[i].name, err);
			goto out;
		}
		if (ran) {
			printf("applied %s\n", d.m[i].name);
			applied++;
		}
	}
	r = pg_migrations_check(d.pg, d.m, d.n, err);
	if (r != 0) {
		log_error("the database is still not current: %s",
			  r > 0 ? "migrations are missing" : err);
		goto out;
	}
	r = pg_functions_check(d.pg, d.f, d.n_f, err);
	if (r < 0) {
		log_error("cannot compare the function files: %s", err);
		goto out;
	}
	if (applied || r > 0) {
		if (pg_functions_apply(d.pg, d.f, d.n_f, err) < 0) {
			log_error("the function files failed, nothing of them applied: %s",
				  err);
			goto out;
		}
		for (size_t i = 0; i < d.n_f; i++)
			if (d.f[i].made)
				printf("re-applied %s (made from %s)\n",
				       d.f[i].name, d.f[i].path);
			else
				printf("re-applied %s/%s\n", PG_FUNCTIONS_DIR,
				       d.f[i].name);
		reapplied = d.n_f;
	}
	r = pg_functions_check(d.pg, d.f, d.n_f, err);
	if (r != 0) {
		log_error("the function files are still not current: %s", err);
		goto out;
	}
	printf("the database is current: %zu migrations, %zu applied now, %zu function files, %zu re-applied now\n",
	       d.n, applied, d.n_f, reapplied);
	ret = fflush(stdout) == 0 ? 0 : 1;
out:
	db_release(&d);
	return ret;
}

