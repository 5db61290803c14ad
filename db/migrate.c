/* SPDX-License-Identifier: MIT */
/* The schema's migrations and function files: scan, check, apply. */
#include "migrate.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "array.h"
#include "cleanup.h"
#include "file.h"

#define PG_SCRIPT_MAX (16u << 20) /* bytes of one schema file */
/* pg_advisory_xact_lock key of migrate: "fleetb" in ASCII */
#define PG_MIGRATE_LOCK "112723185853026"

/* err is an error buffer of PG_ERR_LEN bytes */
#define err_set(err, ...) snprintf(err, PG_ERR_LEN, __VA_ARGS__)

static int script_read(const char *path, char **ret, char *err);

#define PG_MIGRATIONS_TABLE                                 \
	"CREATE TABLE IF NOT EXISTS schema_migrations ("    \
	"version integer PRIMARY KEY, name text NOT NULL, " \
	"applied_at timestamptz NOT NULL DEFAULT now())"
#define PG_MIGRATION_RECORD \
	"INSERT INTO schema_migrations (version, name) VALUES ($1, $2)"

/* COMMIT of migrate's transaction: 0 or -EIO (not committed, or
 * not known to be). */
static int commit(struct pg *p, char *err)
{
	_cleanup_pqclear_ PGresult *res = NULL;

	res = PQexec(pg_conn(p), "COMMIT");
	if (!res || PQresultStatus(res) != PGRES_COMMAND_OK) {
		pg_error(p, res, "COMMIT failed", err);
		return -EIO;
	}
	/* COMMIT of a transaction that had failed answers ROLLBACK */
	if (strcmp(PQcmdStatus(res), "COMMIT")) {
		err_set(err, "COMMIT failed: the server answered '%s'",
			PQcmdStatus(res));
		return -EIO;
	}
	return 0;
}

/* ROLLBACK, best effort (a broken connection has rolled back anyway). */
static void rollback(struct pg *p)
{
	char err[PG_ERR_LEN];

	if (pg_connected(p) && PQtransactionStatus(pg_conn(p)) != PQTRANS_IDLE)
		pg_query(p, "ROLLBACK", 0, NULL, NULL, err);
}

/* How long migrate waits for its advisory lock: any login may take it,
 * and migrate must not hang on one without a word (issue 38). */
#define PG_MIGRATE_LOCK_WAIT "10s"

/* BEGIN, and migrate's advisory lock for the transaction: concurrent
 * migrate runs take turns, waiting PG_MIGRATE_LOCK_WAIT at most. 0, or
 * -EIO with nothing begun (err names the session holding the lock when
 * that was why). */
static int begin_locked(struct pg *p, char *err)
{
	char holder[128];
	int r;

	if (pg_query(p, "BEGIN", 0, NULL, NULL, err) < 0)
		return -EIO;
	r = pg_query(p, "SET LOCAL lock_timeout = '" PG_MIGRATE_LOCK_WAIT "'",
		     0, NULL, NULL, err);
	if (r == 0)
		r = pg_query(p,
			     "SELECT pg_advisory_xact_lock(" PG_MIGRATE_LOCK ")",
			     0, NULL, NULL, err);
	/* the migrations' own locks wait as long as they must */
	if (r == 0)
		r = pg_query(p, "SET LOCAL lock_timeout = 0", 0, NULL, NULL,
			     err);
	if (r == 0)
		return 0;
	rollback(p);
	if (r == -EBUSY) {
		pg_advisory_holder(p, PG_MIGRATE_LOCK, holder, sizeof(holder));
		err_set(err, "migrate's lock (advisory lock " PG_MIGRATE_LOCK
			") stayed taken for " PG_MIGRATE_LOCK_WAIT " by %s: another migrate, or a session holding it; end that session and migrate again",
			*holder ? holder : "another session");
	}
	return -EIO;
}

/* ---- migrations ---- */

/* "NNN_description.sql": at least min_digits (at most six) digits, an
 * underscore, a description of [A-Za-z0-9_-]. Returns the number or
 * -EINVAL. */
static long schema_file_number(const char *file, size_t min_digits)
{
	size_t digits = strspn(file, "0123456789");
	size_t len = strlen(file);
	const char *desc = file + digits + 1;
	long v = 0;

	if (digits < min_digits || digits > 6 || file[digits] != '_' ||
	    len < 4 || strcmp(file + len - 4, ".sql"))
		return -EINVAL;
	if (desc >= file + len - 4)
		return -EINVAL;
	for (const char *c = desc; c < file + len - 4; c++)
		if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-')
			return -EINVAL;
	for (size_t i = 0; i < digits; i++)
		v = v * 10 + (file[i] - '0');
	return v;
}

static bool is_sql(const char *file)
{
	size_t len = strlen(file);

	return len >= 4 && !strcmp(file + len - 4, ".sql");
}

static int migration_cmp(const void *x, const void *y)
{
	const struct pg_migration *a = x, *b = y;

	return (a->version > b->version) - (a->version < b->version);
}

void pg_migrations_free(struct pg_migration *m, size_t n)
{
	if (!m)
		return;
	for (size_t i = 0; i < n; i++) {
		free(m[i].name);
		free(m[i].path);
	}
	free(m);
}

/* The migration of version v among the n of m, or NULL. */
static struct pg_migration *migration_find(struct pg_migration *m, size_t n,
					   unsigned v)
{
	for (size_t i = 0; i < n; i++)
		if (m[i].version == v)
			return &m[i];
	return NULL;
}

/* Marks the migration named w (NNN_description) that the baseline at
 * path covers, adding it to *m (n, cap) when it has no file. */
static int baseline_cover(const char *path, const char *w,
			  struct pg_migration **m, size_t *n, size_t *cap,
			  char *err)
{
	_cleanup_free_ char *file = NULL;
	struct pg_migration *k;
	long v;

	if (asprintf(&file, "%s.sql", w) < 0) {
		file = NULL;
		goto nomem;
	}
	v = schema_file_number(file, 3);
	if (v <= 0) {
		err_set(err, "%s covers '%s', which is not NNN_description",
			path, w);
		return -EINVAL;
	}
	k = migration_find(*m, *n, (unsigned)v);
	if (k && strcmp(k->name, w)) {
		err_set(err, "%s covers '%s', but its file is '%s'", path, w,
			k->path);
		return -EINVAL;
	}
	if (!k) {
		if (ARRAY_RESERVE(*m, *cap, *n + 1) < 0)
			goto nomem;
		k = &(*m)[(*n)++];
		*k = (struct pg_migration){ .version = (unsigned)v };
		k->name = strdup(w);
		if (!k->name)
			goto nomem;
	}
	k->baseline = true;
	return 0;
nomem:
	err_set(err, "out of memory");
	return -ENOMEM;
}

/* Marks the migrations that dir/baseline.sql covers (its "-- covers:"
 * lines). No baseline: 0. */
static int baseline_covers(const char *dir, struct pg_migration **m,
			   size_t *n, size_t *cap, char *err)
{
	static const char tag[] = "\n-- covers:";
	_cleanup_free_ char *path = NULL, *script = NULL;
	struct stat st;
	int r;

	if (asprintf(&path, "%s/%s", dir, PG_BASELINE_FILE) < 0) {
		path = NULL;
		err_set(err, "out of memory");
		return -ENOMEM;
	}
	if (stat(path, &st) < 0 && errno == ENOENT)
		return 0;
	r = script_read(path, &script, err);
	if (r < 0)
		return r;
	for (char *line = strstr(script, tag); line;) {
		char *save = NULL, *end = strchr(line + 1, '\n');

		if (end)
			*end = '\0';
		for (char *w = strtok_r(line + sizeof(tag) - 1, " \t", &save);
		     w; w = strtok_r(NULL, " \t", &save)) {
			r = baseline_cover(path, w, m, n, cap, err);
			if (r < 0)
				return r;
		}
		if (!end)
			break;
		*end = '\n';
		line = strstr(end, tag);
	}
	return 0;
}

int pg_migrations_scan(const char *dir, struct pg_migration **ret,
		       char err[PG_ERR_LEN])
{
	_cleanup_closedir_ DIR *d = NULL;
	struct pg_migration *m = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	int r = 0;

	d = opendir(dir);
	if (!d) {
		r = -errno;
		err_set(err, "cannot open schema directory '%s': %s", dir,
			strerror(-r));
		return r;
	}
	while ((errno = 0, e = readdir(d))) {
		const char *f = e->d_name;
		long v;

		/* README.md and the like; a .sql file that begins with a
		 * digit must be a well-named migration */
		if (!isdigit((unsigned char)f[0]))
			continue;
		v = schema_file_number(f, 3);
		if (v < 0) {
			if (!is_sql(f))
				continue;
			err_set(err, "schema file '%s/%s' is not named NNN_description.sql",
				dir, f);
			r = -EINVAL;
			goto fail;
		}
		if (v == 0) {
			err_set(err, "schema file '%s/%s': version 0 is not allowed",
				dir, f);
			r = -EINVAL;
			goto fail;
		}
		if (ARRAY_RESERVE(m, cap, n + 1) < 0)
			goto nomem;
		m[n] = (struct pg_migration){ .version = (unsigned)v };
		n++;
		m[n - 1].name = strndup(f, strlen(f) - 4);
		if (!m[n - 1].name ||
		    asprintf(&m[n - 1].path, "%s/%s", dir, f) < 0) {
			m[n - 1].path = NULL;
			goto nomem;
		}
	}
	if (errno) {
		r = -errno;
		err_set(err, "cannot read schema directory '%s': %s", dir,
			strerror(-r));
		goto fail;
	}
	r = baseline_covers(dir, &m, &n, &cap, err);
	if (r < 0)
		goto fail;
	if (!n) {
		err_set(err, "no NNN_description.sql migrations in '%s'", dir);
		r = -ENOENT;
		goto fail;
	}
	qsort(m, n, sizeof(*m), migration_cmp);
	for (size_t i = 1; i < n; i++)
		if (m[i].version == m[i - 1].version) {
			err_set(err, "schema files '%s' and '%s' have the same version",
				m[i - 1].path, m[i].path);
			r = -EINVAL;
			goto fail;
		}
	*ret = m;
	return (int)n;
nomem:
	err_set(err, "out of memory");
	r = -ENOMEM;
fail:
	pg_migrations_free(m, n);
	return r;
}

int pg_migrations_check(struct pg *p, const struct pg_migration *m, size_t n,
			char err[PG_ERR_LEN])
{
	_cleanup_pqclear_ PGresult *res = NULL;
	_cleanup_free_ bool *applied = NULL;
	unsigned max_applied = 0;
	int pending = 0;

	if (pg_query(p, "SELECT to_regclass('schema_migrations') IS NOT NULL", 0,
		 NULL, &res, err) < 0)
		return -EIO;
	if (PQntuples(res) != 1 || strcmp(PQgetvalue(res, 0, 0), "t")) {
		err_set(err, "the database is not migrated (no schema_migrations table)");
		return -ENOENT;
	}
	PQclear(TAKE_PTR(res));
	if (pg_query(p, "SELECT version, name FROM schema_migrations ORDER BY version",
		 0, NULL, &res, err) < 0)
		return -EIO;
	applied = calloc(n ? n : 1, sizeof(*applied));
	if (!applied) {
		err_set(err, "out of memory");
		return -ENOMEM;
	}
	for (int row = 0; row < PQntuples(res); row++) {
		const char *v = PQgetvalue(res, row, 0);
		const char *name = PQgetvalue(res, row, 1);
		unsigned version = (unsigned)strtoul(v, NULL, 10);
		size_t i = 0;

		while (i < n && m[i].version != version)
			i++;
		if (i == n) {
			err_set(err, "the database has migration %s '%s', which this collector does not know (was it migrated by a newer version?)",
				v, name);
			return -EPROTO;
		}
		if (strcmp(m[i].name, name)) {
			err_set(err, "migration %s is '%s' in the database but '%s' here",
				v, name, m[i].name);
			return -EPROTO;
		}
		applied[i] = true;
		if (version > max_applied)
			max_applied = version;
	}
	for (size_t i = 0; i < n; i++) {
		if (applied[i])
			continue;
		if (m[i].version < max_applied) {
			err_set(err, "migration '%s' is not applied but a later one is",
				m[i].name);
			return -EINVAL;
		}
		pending++;
	}
	return pending;
}

/* Reads a whole schema file, refusing a NUL (PQexec would stop there
 * and run half of it). */
static int script_read(const char *path, char **ret, char *err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	ssize_t k;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		int r = -errno;

		err_set(err, "cannot read '%s': %s", path, strerror(-r));
		return r;
	}
	/* a file that grew past the limit since fstat() is refused alike */
	k = -EFBIG;
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size <= PG_SCRIPT_MAX)
		k = read_full_fd(fd, PG_SCRIPT_MAX, &buf);
	if (k == -EFBIG) {
		err_set(err, "'%s' is not a regular file of at most %u bytes",
			path, PG_SCRIPT_MAX);
		return -EINVAL;
	}
	if (k == -ENOMEM) {
		err_set(err, "out of memory");
		return -ENOMEM;
	}
	if (k < 0) {
		err_set(err, "cannot read '%s': %s", path, strerror((int)-k));
		return (int)k;
	}
	if (strlen(buf) != (size_t)k) {
		err_set(err, "'%s' contains a NUL byte", path);
		return -EINVAL;
	}
	*ret = TAKE_PTR(buf);
	return 0;
}

/* The line of a 1-based character position in script (PostgreSQL
 * counts characters; the scripts are UTF-8). */
static unsigned script_line(const char *script, const char *position)
{
	long pos = position ? strtol(position, NULL, 10) : 0;
	unsigned line = 1;

	for (const unsigned char *c = (const unsigned char *)script;
	     *c && pos > 1; c++) {
		if ((*c & 0xc0) == 0x80)
			continue;
		if (*c == '\n')
			line++;
		pos--;
	}
	return line;
}

/* Runs the script of the file path inside the transaction begun by
 * begin_locked(); a failed statement is reported as path:line, with the
 * server's detail. */
static int script_run(struct pg *p, const char *path, const char *script,
		      char *err)
{
	/* PQexec: a trusted file of many statements */
	_cleanup_pqclear_ PGresult *res = PQexec(pg_conn(p), script);
	ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	char why[PG_ERR_LEN];

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK &&
	    st != PGRES_EMPTY_QUERY) {
		const char *pos =
			res ? PQresultErrorField(res, PG_DIAG_STATEMENT_POSITION) :
			      NULL;
		const char *detail =
			res ? PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL) :
			      NULL;

		pg_error(p, res, NULL, why);
		/* what stands in the way: "view my_thp depends on column
		 * thp_speedup of table run_figures" */
		if (detail) {
			size_t n = strlen(why);

			snprintf(why + n, sizeof(why) - n, " (%s)", detail);
		}
		if (pos)
			err_set(err, "%s:%u: %s", path,
				script_line(script, pos), why);
		else
			err_set(err, "%s: %s", path, why);
		return -EIO;
	}
	if (PQtransactionStatus(pg_conn(p)) != PQTRANS_INTRANS) {
		err_set(err, "%s: the script ended the transaction (no BEGIN or COMMIT in a schema file)",
			path);
		return -EIO;
	}
	return 0;
}

int pg_migration_apply(struct pg *p, const struct pg_migration *m,
		       bool *ret_applied, char err[PG_ERR_LEN])
{
	_cleanup_pqclear_ PGresult *res = NULL;
	_cleanup_free_ char *script = NULL;
	char version[16];
	const char *params[2] = { version, m->name };
	int r;

	if (m->path) {
		r = script_read(m->path, &script, err);
		if (r < 0)
			return r;
	}
	snprintf(version, sizeof(version), "%u", m->version);
	/* concurrent migrate runs take turns; the second finds it applied */
	if (begin_locked(p, err) < 0)
		return -EIO;
	if (pg_query(p, PG_MIGRATIONS_TABLE, 0, NULL, NULL, err) < 0 ||
	    pg_query(p, "SELECT 1 FROM schema_migrations WHERE version = $1", 1,
		 params, &res, err) < 0)
		goto fail;
	if (PQntuples(res) > 0) {
		rollback(p);
		*ret_applied = false;
		return 0;
	}
	if (!m->path) {
		rollback(p);
		err_set(err, "the database lacks migration '%s', whose file is gone (the baseline stands for it): it is older than the oldest database this collector upgrades; migrate it first with an earlier fleetbench-collector whose schema/ holds %s.sql (docs/operations.md, \"Upgrades\")",
			m->name, m->name);
		return -ENOEXEC;
	}
	if (script_run(p, m->path, script, err) < 0)
		goto fail;
	if (pg_query(p, PG_MIGRATION_RECORD,
		 2, params, NULL, err) < 0)
		goto fail;
	r = commit(p, err);
	if (r < 0)
		return -EIO;
	*ret_applied = true;
	return 0;
fail:
	rollback(p);
	return -EIO;
}

int pg_baseline_apply(struct pg *p, const char *dir,
		      const struct pg_migration *m, size_t n, bool *ret_applied,
		      char err[PG_ERR_LEN])
{
	_cleanup_pqclear_ PGresult *res = NULL;
	_cleanup_free_ char *path = NULL, *script = NULL;
	int r;

	*ret_applied = false;
	if (!n || !m[0].baseline)
		return 0;
	if (asprintf(&path, "%s/%s", dir, PG_BASELINE_FILE) < 0) {
		path = NULL;
		err_set(err, "out of memory");
		return -ENOMEM;
	}
	r = script_read(path, &script, err);
	if (r < 0)
		return r;
	if (begin_locked(p, err) < 0)
		return -EIO;
	if (pg_query(p, PG_MIGRATIONS_TABLE, 0, NULL, NULL, err) < 0 ||
	    pg_query(p, "SELECT 1 FROM schema_migrations LIMIT 1", 0, NULL,
		     &res, err) < 0)
		goto fail;
	if (PQntuples(res) > 0) {
		rollback(p);
		return 0;
	}
	if (script_run(p, path, script, err) < 0)
		goto fail;
	for (size_t i = 0; i < n && m[i].baseline; i++) {
		char version[16];
		const char *params[2] = { version, m[i].name };

		snprintf(version, sizeof(version), "%u", m[i].version);
		if (pg_query(p, PG_MIGRATION_RECORD, 2, params, NULL, err) < 0)
			goto fail;
	}
	if (commit(p, err) < 0)
		return -EIO;
	*ret_applied = true;
	return 0;
fail:
	rollback(p);
	return -EIO;
}

/* ---- function files ---- */

/* Grants on every view, kept in a temporary table across the function
 * files: DROP VIEW and CREATE VIEW forget them. */
#define PG_VIEWS_SAVE \
	"CREATE TEMPORARY TABLE fleetbench_views ON COMMIT DROP AS " \
	"SELECT c.oid::regclass::text AS name, " \
	"ARRAY(SELECT format('GRANT %s ON %s TO %s%s', a.privilege_type, " \
	"c.oid::regclass, CASE WHEN a.grantee = 0 THEN 'PUBLIC' " \
	"ELSE quote_ident(pg_get_userbyid(a.grantee)) END, " \
	"CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END) " \
	"FROM aclexplode(c.relacl) AS a WHERE a.grantee <> c.relowner) " \
	"AS grants " \
	"FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace " \
	"WHERE c.relkind = 'v' AND n.nspname <> 'information_schema' " \
	"AND n.nspname NOT LIKE 'pg\\_%'"

/* The grants again; a view that is gone was taken along by a DROP VIEW
 * ... CASCADE and made by no file: refused, not lost without a word. */
#define PG_VIEWS_RESTORE \
	"DO $$ DECLARE v record; s text; BEGIN " \
	"FOR v IN SELECT * FROM pg_temp.fleetbench_views ORDER BY name LOOP " \
	"IF to_regclass(v.name) IS NULL THEN RAISE EXCEPTION " \
	"'view % depends on a view of the function files, whose DROP VIEW " \
	"... CASCADE dropped it: drop it before migrate and make it again " \
	"after, or define it in a function file', v.name; END IF; " \
	"FOREACH s IN ARRAY v.grants LOOP EXECUTE s; END LOOP; " \
	"END LOOP; END $$"

static void sha256_hex(const char *data, size_t len,
		       char hex[PG_SHA256_HEX])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;

	if (!EVP_Digest(data, len, md, &md_len, EVP_sha256(), NULL))
		md_len = 0; /* no digest: matches no recorded checksum */
	for (unsigned i = 0; i < md_len && 2 * i + 2 < PG_SHA256_HEX; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	hex[md_len ? 2 * md_len : 0] = '\0';
}

static int function_file_cmp(const void *x, const void *y)
{
	const struct pg_function_file *a = x, *b = y;

	return strcmp(a->name, b->name);
}

void pg_functions_free(struct pg_function_file *f, size_t n)
{
	if (!f)
		return;
	for (size_t i = 0; i < n; i++) {
		free(f[i].name);
		free(f[i].path);
		free(f[i].script);
	}
	free(f);
}

int pg_functions_scan(const char *schema_dir, struct pg_function_file **ret,
		      char err[PG_ERR_LEN])
{
	_cleanup_free_ char *dir = NULL;
	_cleanup_closedir_ DIR *d = NULL;
	struct pg_function_file *f = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	int r = 0;

	if (asprintf(&dir, "%s/" PG_FUNCTIONS_DIR, schema_dir) < 0) {
		dir = NULL;
		err_set(err, "out of memory");
		return -ENOMEM;
	}
	d = opendir(dir);
	if (!d && errno == ENOENT) {
		*ret = NULL;
		return 0;
	}
	if (!d) {
		r = -errno;
		err_set(err, "cannot open function directory '%s': %s", dir,
			strerror(-r));
		return r;
	}
	while ((errno = 0, e = readdir(d))) {
		const char *name = e->d_name;
		struct pg_function_file *it;

		if (!isdigit((unsigned char)name[0]) || !is_sql(name))
			continue;
		if (schema_file_number(name, 2) < 0) {
			err_set(err, "function file '%s/%s' is not named NN_name.sql",
				dir, name);
			r = -EINVAL;
			goto fail;
		}
		if (ARRAY_RESERVE(f, cap, n + 1) < 0)
			goto nomem;
		it = &f[n++];
		*it = (struct pg_function_file){ .name = strdup(name) };
		if (!it->name || asprintf(&it->path, "%s/%s", dir, name) < 0) {
			it->path = NULL;
			goto nomem;
		}
		r = script_read(it->path, &it->script, err);
		if (r < 0)
			goto fail;
		sha256_hex(it->script, strlen(it->script), it->sha256);
	}
	if (errno) {
		r = -errno;
		err_set(err, "cannot read function directory '%s': %s", dir,
			strerror(-r));
		goto fail;
	}
	if (n)
		qsort(f, n, sizeof(*f), function_file_cmp);
	*ret = f;
	return (int)n;
nomem:
	err_set(err, "out of memory");
	r = -ENOMEM;
fail:
	pg_functions_free(f, n);
	return r;
}

int pg_functions_add(struct pg_function_file **f, size_t n, const char *name,
		     const char *path, char *script, char err[PG_ERR_LEN])
{
	struct pg_function_file *it;
	size_t cap = n;

	if (ARRAY_RESERVE(*f, cap, n + 1) < 0)
		goto nomem;
	it = &(*f)[n];
	*it = (struct pg_function_file){ .name = strdup(name),
					 .path = strdup(path),
					 .script = script,
					 .made = true };
	script = NULL;
	if (!it->name || !it->path) {
		free(it->name);
		free(it->path);
		free(it->script);
		goto nomem;
	}
	sha256_hex(it->script, strlen(it->script), it->sha256);
	qsort(*f, n + 1, sizeof(**f), function_file_cmp);
	return (int)(n + 1);
nomem:
	free(script);
	err_set(err, "out of memory");
	return -ENOMEM;
}

int pg_functions_check(struct pg *p, const struct pg_function_file *f,
		       size_t n, char err[PG_ERR_LEN])
{
	_cleanup_pqclear_ PGresult *res = NULL;
	_cleanup_free_ bool *recorded = NULL;
	int differ = 0;

	if (pg_query(p, "SELECT to_regclass('schema_functions') IS NOT NULL",
		     0, NULL, &res, err) < 0)
		return -EIO;
	if (PQntuples(res) != 1 || strcmp(PQgetvalue(res, 0, 0), "t")) {
		if (n)
			err_set(err, "the function files were never applied ('%s' is not recorded)",
				f[0].path);
		return (int)n;
	}
	PQclear(TAKE_PTR(res));
	if (pg_query(p, "SELECT name, sha256 FROM schema_functions ORDER BY name",
		     0, NULL, &res, err) < 0)
		return -EIO;
	recorded = calloc(n ? n : 1, sizeof(*recorded));
	if (!recorded) {
		err_set(err, "out of memory");
		return -ENOMEM;
	}
	for (int row = 0; row < PQntuples(res); row++) {
		const char *name = PQgetvalue(res, row, 0);
		const char *sha = PQgetvalue(res, row, 1);
		size_t i = 0;

		while (i < n && strcmp(f[i].name, name))
			i++;
		if (i == n) {
			if (!differ++)
				err_set(err, "the database has function file '%s', which this collector does not have",
					name);
			continue;
		}
		recorded[i] = true;
		if (strcmp(f[i].sha256, sha) && !differ++)
			err_set(err, "function file '%s' differs from the one applied (sha256 %.12s... here, %.12s... in the database)",
				f[i].path, f[i].sha256, sha);
	}
	for (size_t i = 0; i < n; i++)
		if (!recorded[i] && !differ++)
			err_set(err, "function file '%s' is not applied",
				f[i].path);
	return differ;
}

int pg_functions_apply(struct pg *p, const struct pg_function_file *f,
		       size_t n, char err[PG_ERR_LEN])
{
	char why[PG_ERR_LEN];

	if (begin_locked(p, err) < 0)
		return -EIO;
	if (pg_query(p, "CREATE TABLE IF NOT EXISTS schema_functions ("
			"name text PRIMARY KEY, "
			"sha256 text NOT NULL, "
			"applied_at timestamptz NOT NULL DEFAULT now())",
		     0, NULL, NULL, err) < 0 ||
	    pg_query(p, PG_VIEWS_SAVE, 0, NULL, NULL, err) < 0)
		goto fail;
	for (size_t i = 0; i < n; i++)
		if (script_run(p, f[i].path, f[i].script, err) < 0)
			goto fail;
	if (pg_query(p, PG_VIEWS_RESTORE, 0, NULL, NULL, why) < 0) {
		err_set(err, "after the function files: %s", why);
		goto fail;
	}
	if (pg_query(p, "DELETE FROM schema_functions", 0, NULL, NULL, err) < 0)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		const char *params[2] = { f[i].name, f[i].sha256 };

		if (pg_query(p, "INSERT INTO schema_functions (name, sha256) VALUES ($1, $2)",
			     2, params, NULL, err) < 0)
			goto fail;
	}
	return commit(p, err);
fail:
	rollback(p);
	return -EIO;
}
