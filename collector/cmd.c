/* SPDX-License-Identifier: MIT */
/* What more than one of fleetbench-collector's commands does (cmd.h). */
#include "cmd.h"

#include <errno.h>

#include "cleanup.h"
#include "figures_sql.h"
#include "log.h"

void db_release(struct db *d)
{
	pg_free(d->pg);
	pg_migrations_free(d->m, d->n);
	pg_functions_free(d->f, d->n_f);
}

int db_open(struct db *d, const struct collector_config *cfg)
{
	char err[PG_ERR_LEN];
	int r;

	r = pg_migrations_scan(cfg->schema_dir, &d->m, err);
	if (r < 0)
		return log_error("%s", err);
	d->n = (size_t)r;
	r = pg_functions_scan(cfg->schema_dir, &d->f, err);
	if (r < 0)
		return log_error("%s", err);
	d->n_f = (size_t)r;
	/* the figures' declarations go with the function files that read
	 * them (a schema of migrations alone, as the upgrade tests step
	 * through, has neither) */
	r = d->n_f ? figures_function_file(&d->f, d->n_f, err) : 0;
	if (r < 0)
		return log_error("%s", err);
	d->n_f = (size_t)r;
	d->pg = pg_new(cfg->dsn);
	if (!d->pg)
		return log_error("out of memory");
	if (pg_connect(d->pg, err) < 0)
		return log_error("%s", err);
	return 0;
}

/*
 * The SECURITY DEFINER functions run as the schema's owner and resolve
 * names in its schema: a role that may create there can plant a function
 * of a closer argument type (public.cardinality(float8[])) and have it run
 * as the owner (issue 38). migrate, serve and prune refuse such a schema,
 * naming the grant (and the functions themselves refuse to run in it:
 * fleetbench_schema_guard(), schema/functions/10_util.sql).
 */
int db_check_creators(struct db *d, const char *verb)
{
	_cleanup_pqclear_ PGresult *res = NULL;
	char err[PG_ERR_LEN];

	if (pg_query(d->pg,
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
	return log_error("refusing to %s: %s may create objects in schema %s, where the functions that run as its owner look up names (a planted function would run as the owner); revoke it (REVOKE CREATE ON SCHEMA %s FROM %s), or give fleetbench a schema of its own (docs/operations.md, \"Access roles\")",
			 verb, PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 0),
			 PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1));
}

/* The database must be this collector's and migrated: what `verb` (serve,
 * prune) checks before it starts. */
int db_check_schema(struct db *d, const char *verb)
{
	char err[PG_ERR_LEN];
	int r = pg_migrations_check(d->pg, d->m, d->n, err);

	if (r == -ENOENT || (r > 0 && (size_t)r == d->n))
		return log_error("the database is not migrated: run 'fleetbench-collector migrate' first");
	if (r > 0)
		return log_error("the database lacks %d of this collector's %zu migrations: run 'fleetbench-collector migrate' first",
				 r, d->n);
	if (r == -EPROTO)
		return log_error("refusing to %s a newer database: %s", verb,
				 err);
	if (r < 0)
		return log_error("%s", err);
	r = pg_functions_check(d->pg, d->f, d->n_f, err);
	if (r == 0)
		return db_check_creators(d, verb);
	if (r > 0)
		return log_error("the database's functions and views are not this collector's: %s: run 'fleetbench-collector migrate' first",
				 err);
	return log_error("%s", err);
}
