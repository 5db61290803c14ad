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

/* A new database's baseline (schema/baseline.sql): applied, or not
 * needed; prints what it did. 0 or -1. */
static int baseline(const struct collector_config *cfg, struct db *d,
		    size_t *applied)
{
	char err[PG_ERR_LEN];
	size_t k = 0;
	bool ran;

	if (pg_baseline_apply(d->pg, cfg->schema_dir, d->m, d->n, &ran, err) <
	    0) {
		log_error("the baseline failed, nothing of it applied: %s",
			  err);
		return -1;
	}
	if (!ran)
		return 0;
	while (k < d->n && d->m[k].baseline)
		k++;
	printf("applied the baseline (%s), standing for %zu migrations: %s to %s\n",
	       PG_BASELINE_FILE, k, d->m[0].name, d->m[k - 1].name);
	*applied += k;
	return 0;
}

/*
 * A new database's baseline first; then the pending migrations, each in
 * its own transaction; then, when one ran or a function file differs from
 * the one recorded, all function files in one transaction
 * (schema/README.md).
 */
int cmd_migrate(const struct collector_config *cfg)
{
	struct db d = { 0 };
	char err[PG_ERR_LEN];
	size_t applied = 0, reapplied = 0;
	int r, ret = 1;

	if (db_open(&d, cfg) < 0 || db_check_creators(&d, "migrate") < 0)
		goto out;
	r = pg_migrations_check(d.pg, d.m, d.n, err);
	if (r < 0 && r != -ENOENT) {
		log_error("refusing to migrate: %s", err);
		goto out;
	}
	/* nothing applied yet: the baseline, if there is one */
	if ((r == -ENOENT || (size_t)r == d.n) &&
	    baseline(cfg, &d, &applied) < 0)
		goto out;
	for (size_t i = 0; i < d.n; i++) {
		bool ran;

		r = pg_migration_apply(d.pg, &d.m[i], &ran, err);
		if (r == -ENOEXEC) {
			log_error("refusing to migrate: %s", err);
			goto out;
		}
		if (r < 0) {
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

