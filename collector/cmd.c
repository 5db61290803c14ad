/* SPDX-License-Identifier: MIT */
/* What more than one of fleetbench-collector's commands does (cmd.h). */
#include "cmd.h"

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
	d->pg = pg_new(cfg->dsn);
	if (!d->pg)
		return log_error("out of memory");
	if (pg_connect(d->pg, err) < 0)
		return log_error("%s", err);
	return 0;
}

