/* SPDX-License-Identifier: MIT */
/*
 * The schema of the collector's database, as `fleetbench-collector
 * migrate` applies it and `serve` checks it (schema/README.md): the
 * migrations schema/NNN_description.sql, each run once and recorded in
 * schema_migrations, and the function files schema/functions/NN_name.sql
 * (functions and views), all re-applied in one transaction whenever a
 * migration ran or a file's SHA-256 differs from the one recorded in
 * schema_functions. Nothing here logs; failures come back as -errno with
 * the reason (the file and line of a failed statement) in err.
 */
#ifndef FLEETBENCH_MIGRATE_H
#define FLEETBENCH_MIGRATE_H

#include <stdbool.h>
#include <stddef.h>

#include "pg.h"

/* ---- migrations ---- */

struct pg_migration {
	unsigned version; /* NNN of schema/NNN_description.sql */
	char *name; /* "NNN_description", as recorded in schema_migrations */
	/* its file; NULL for one that only the baseline stands for (an
	 * upgrade can no longer apply it) */
	char *path;
	bool baseline; /* the baseline stands for it */
};

/* The baseline (schema/README.md): one file of the schema as a chain of
 * migrations left it, which a new database applies instead of them. Its
 * lines "-- covers: NNN_a NNN_b ..." name those migrations. */
#define PG_BASELINE_FILE "baseline.sql"

/*
 * Lists dir's NNN_*.sql files (three or more digits, an underscore, a
 * description of letters, digits, '_' and '-') and the migrations that
 * dir/baseline.sql covers, in version order, into a new array (*ret, free
 * with pg_migrations_free()). Returns the count, or -errno with err saying
 * what is wrong: -ENOENT for no migrations at all, -EINVAL for two files
 * with one version or a version 0, or a baseline that names a migration
 * unlike its file or not as NNN_description.
 */
int pg_migrations_scan(const char *dir, struct pg_migration **ret,
		       char err[PG_ERR_LEN]);
void pg_migrations_free(struct pg_migration *m, size_t n);

/*
 * Compares schema_migrations with the n migrations this collector knows.
 * Returns the number not yet applied (0: the database is current), or
 * -ENOENT when schema_migrations does not exist (an unmigrated database),
 * -EPROTO when the database has a version this collector does not know or
 * knows under another name (a newer collector migrated it), -EINVAL when a
 * known migration is missing below an applied one, -EIO on a database
 * error. err names the migration.
 */
int pg_migrations_check(struct pg *p, const struct pg_migration *m, size_t n,
			char err[PG_ERR_LEN]);

/*
 * Applies one migration in its own transaction, holding an advisory lock
 * so that concurrent migrate runs take turns, and records it in
 * schema_migrations (created if missing). *ret_applied says whether it ran
 * (false: it already was applied). The file is a trusted script of many
 * statements, sent with PQexec. Returns 0, -errno when the file cannot be
 * read, -ENOEXEC when the migration has no file (only the baseline stands
 * for it) and is not applied: the database is older than the oldest this
 * collector upgrades; or -EIO with the server's message.
 */
int pg_migration_apply(struct pg *p, const struct pg_migration *m,
		       bool *ret_applied, char err[PG_ERR_LEN]);

/*
 * Applies dir/baseline.sql to a new database: in one transaction under
 * migrate's lock, when schema_migrations holds no migration yet, runs it
 * and records every migration of m that it covers. *ret_applied says
 * whether it ran (false: the database had a migration already, or there
 * is no baseline). Returns 0, -errno when the file cannot be read, or
 * -EIO with the server's message.
 */
int pg_baseline_apply(struct pg *p, const char *dir,
		      const struct pg_migration *m, size_t n, bool *ret_applied,
		      char err[PG_ERR_LEN]);

/* ---- function files ---- */

#define PG_FUNCTIONS_DIR "functions" /* below the schema directory */
#define PG_SHA256_HEX 65 /* 64 hex digits and the NUL */

struct pg_function_file {
	char *name; /* "NN_name.sql", as recorded in schema_functions */
	char *path;
	char *script; /* the whole file */
	char sha256[PG_SHA256_HEX]; /* of the file's bytes, in hex */
	bool made; /* by the program (pg_functions_add()), from path */
};

/*
 * Reads schema_dir/functions/NN_name.sql (two or more digits, an
 * underscore, a name of letters, digits, '_' and '-') in name order into a
 * new array (*ret, free with pg_functions_free()), each with its text and
 * checksum. Other files (README.md) are skipped; no such directory means
 * no function files. Returns the count, or -errno with err naming the
 * file: -EINVAL for a badly named .sql file or one with a NUL byte.
 */
int pg_functions_scan(const char *schema_dir, struct pg_function_file **ret,
		      char err[PG_ERR_LEN]);
void pg_functions_free(struct pg_function_file *f, size_t n);

/*
 * Adds a function file that the program makes itself (name "NN_name.sql",
 * path what to call it in messages) to the n files of *f, in name order;
 * script is taken over (freed on failure too). The database records and
 * checks it as any other: a program whose file differs is refused until
 * migrate ran. Returns the new count, or -errno with err set.
 */
int pg_functions_add(struct pg_function_file **f, size_t n, const char *name,
		     const char *path, char *script, char err[PG_ERR_LEN]);

/*
 * Compares schema_functions with the n function files: returns 0 when the
 * database recorded exactly these names and checksums, else the number of
 * files that differ (not recorded, another checksum, or recorded but not
 * among the files) with err naming the first, or -EIO on a database
 * error.
 */
int pg_functions_check(struct pg *p, const struct pg_function_file *f,
		       size_t n, char err[PG_ERR_LEN]);

/*
 * Runs all n files, in order, in one transaction under migrate's advisory
 * lock, and records their names and checksums in schema_functions
 * (created if missing) in place of what it held. The grants on views are
 * kept across a view's DROP and CREATE; a view that a file's DROP VIEW ...
 * CASCADE took along and no file made again (a view of the database's
 * users over one of ours) fails the whole. Returns 0, or -EIO with err
 * saying which file and line failed: nothing was applied.
 */
int pg_functions_apply(struct pg *p, const struct pg_function_file *f,
		       size_t n, char err[PG_ERR_LEN]);

#endif
