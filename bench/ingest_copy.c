/* SPDX-License-Identifier: MIT */
/*
 * bench/ingest's baseline (ingest.h): PostgreSQL's own COPY of the rows
 * the committed reports became.
 */
#include "ingest.h"

#include <errno.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "clock.h"
#include "codec.h"
#include "log.h"
#include "measure.h"

#define COPY_CHUNK (1u << 20) /* bytes per PQputCopyData */

/*
 * The two tables a report fills (migration 010, schema/baseline.sql): its run and its
 * results. run_id is the first column of each, which the export relies on
 * and checks. Constant SQL: COPY takes no parameters; a partitioned table
 * is copied out through a query.
 */
static const struct copy_table {
	const char *name;
	const char *out;
	const char *in;
} copy_tables[] = {
	{ "runs", "COPY (SELECT * FROM runs) TO STDOUT",
	  "COPY runs FROM STDIN" },
	{ "run_results", "COPY (SELECT * FROM run_results) TO STDOUT",
	  "COPY run_results FROM STDIN" },
};

/* Bytes on disk of the rows a report adds, heap + indexes + TOAST, per
 * run, table by table (DISK_TABLES, in ingest.h's order): every table the
 * ingest writes a row per run into, and result_shapes,
 * probe_parts and comparison_names, whose rows runs share */
#define DISK_BYTES_SQL                                                        \
	"SELECT t, coalesce((SELECT sum(pg_total_relation_size(relid))"       \
	"                    FROM pg_partition_tree(t)),"                     \
	"                   pg_total_relation_size(t))::float8 /"            \
	"       greatest((SELECT count(*) FROM runs), 1)"                      \
	" FROM unnest(ARRAY['runs', 'run_results', 'result_shapes',"          \
	"                   'probe_parts', 'comparison_names',"               \
	"                   'run_figures']::regclass[])"                      \
	"      WITH ORDINALITY AS x(t, i)"                                      \
	" ORDER BY i"

struct idmap {
	char old_id[37], new_id[37];
};

static int cmp_idmap(const void *a, const void *b)
{
	return strcmp(((const struct idmap *)a)->old_id,
		      ((const struct idmap *)b)->old_id);
}

struct buf {
	char *data;
	size_t len, cap;
	size_t rows;
};

static int buf_add(struct buf *b, const char *data, size_t len)
{
	if (b->cap - b->len < len) {
		size_t cap = b->cap ? b->cap : 1 << 20;
		char *d;

		while (cap - b->len < len)
			cap *= 2;
		d = realloc(b->data, cap);
		if (!d)
			return -ENOMEM;
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, data, len);
	b->len += len;
	return 0;
}

static int pg_fail(PGconn *pg, const char *what)
{
	return log_error("%s: %s", what, PQerrorMessage(pg));
}

/* Runs constant SQL that returns no rows. */
static int pg_command(PGconn *pg, const char *sql)
{
	PGresult *res = PQexecParams(pg, sql, 0, NULL, NULL, NULL, NULL, 0);
	int r = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : pg_fail(pg, sql);

	PQclear(res);
	return r;
}

/*
 * The rows of table t in PostgreSQL's text COPY format (its escaping, not
 * ours), each with its run_id swapped for the fresh one map gives.
 */
static int copy_export(PGconn *pg, const struct copy_table *t,
		       const struct idmap *map, size_t n, struct buf *out)
{
	PGresult *res = PQexecParams(pg, t->out, 0, NULL, NULL, NULL, NULL, 0);
	char *row;
	int len, r = 0;

	if (PQresultStatus(res) != PGRES_COPY_OUT) {
		PQclear(res);
		return pg_fail(pg, t->out);
	}
	PQclear(res);
	while ((len = PQgetCopyData(pg, &row, 0)) > 0) {
		struct idmap key, *m = NULL;

		if (r == 0 && (len < 37 || row[36] != '\t')) {
			r = log_error("%s: a row does not start with a run_id",
				      t->name);
		} else if (r == 0) {
			memcpy(key.old_id, row, 36);
			key.old_id[36] = '\0';
			m = bsearch(&key, map, n, sizeof(*map), cmp_idmap);
			if (!m)
				r = log_error("%s: a row of run %s, which this benchmark did not commit",
					      t->name, key.old_id);
		}
		if (r == 0) {
			memcpy(row, m->new_id, 36);
			if (buf_add(out, row, (size_t)len) < 0)
				r = log_error("out of memory for the rows of %s",
					      t->name);
			out->rows++;
		}
		PQfreemem(row);
	}
	res = PQgetResult(pg);
	if (len == -2 || PQresultStatus(res) != PGRES_COMMAND_OK)
		r = pg_fail(pg, t->out);
	PQclear(res);
	while ((res = PQgetResult(pg)))
		PQclear(res);
	return r;
}

/* COPY FROM STDIN of rows: 0 or -1 (logged). */
static int copy_load(PGconn *pg, const struct copy_table *t,
		     const struct buf *rows)
{
	PGresult *res = PQexecParams(pg, t->in, 0, NULL, NULL, NULL, NULL, 0);
	int r = 0;

	if (PQresultStatus(res) != PGRES_COPY_IN) {
		PQclear(res);
		return pg_fail(pg, t->in);
	}
	PQclear(res);
	for (size_t off = 0; off < rows->len && r == 0; off += COPY_CHUNK) {
		size_t len = rows->len - off;

		if (len > COPY_CHUNK)
			len = COPY_CHUNK;
		if (PQputCopyData(pg, rows->data + off, (int)len) != 1)
			r = -1;
	}
	if (PQputCopyEnd(pg, r == 0 ? NULL : "aborted") != 1)
		r = -1;
	res = PQgetResult(pg);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		r = -1;
	else if (strtoull(PQcmdTuples(res), NULL, 10) != rows->rows)
		r = log_error("%s: COPY stored %s rows of %zu", t->name,
			      PQcmdTuples(res), rows->rows);
	if (r < 0 && PQresultStatus(res) != PGRES_COMMAND_OK)
		pg_fail(pg, t->in);
	PQclear(res);
	while ((res = PQgetResult(pg)))
		PQclear(res);
	return r;
}

double ingest_copy_rate(const struct fleet *b, const struct phase *ph,
			size_t *ret_rows, double *ret_cpu,
			double ret_disk[DISK_TABLES + 1])
{
	double cpu0;
	struct buf rows[ARRAY_SIZE(copy_tables)] = { 0 };
	struct idmap *map = calloc(ph->committed, sizeof(*map));
	PGconn *pg = PQconnectdb(b->conninfo);
	double rate = -1;
	int64_t start;
	int r = 0;

	if (PQstatus(pg) != CONNECTION_OK) {
		pg_fail(pg, "cannot connect to PostgreSQL");
		goto out;
	}
	if (!map) {
		log_error("out of memory");
		goto out;
	}
	for (size_t i = 0; i < ph->committed && r == 0; i++) {
		memcpy(map[i].old_id, ph->committed_ids[i], 37);
		r = codec_uuid_new(map[i].new_id);
	}
	if (r < 0) {
		log_error("cannot make a run_id: %s", strerror(-r));
		goto out;
	}
	qsort(map, ph->committed, sizeof(*map), cmp_idmap);
	{
		PGresult *res = PQexec(pg, DISK_BYTES_SQL);
		bool ok = PQresultStatus(res) == PGRES_TUPLES_OK &&
			  PQntuples(res) == DISK_TABLES;

		ret_disk[0] = 0;
		for (int i = 0; ok && i < DISK_TABLES; i++) {
			ret_disk[i + 1] = strtod(PQgetvalue(res, i, 1), NULL);
			ret_disk[0] += ret_disk[i + 1];
		}
		PQclear(res);
		if (!ok) {
			pg_fail(pg, "cannot measure the tables' size");
			goto out;
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(copy_tables); i++)
		if (copy_export(pg, &copy_tables[i], map, ph->committed,
				&rows[i]) < 0)
			goto out;
	if (rows[0].rows != ph->committed) {
		log_error("runs holds %zu rows, %zu reports were committed",
			  rows[0].rows, ph->committed);
		goto out;
	}

	cpu0 = proc_cpu_ms(PQbackendPID(pg));
	start = mono_ns();
	if (pg_command(pg, "BEGIN") < 0)
		goto out;
	for (size_t i = 0; i < ARRAY_SIZE(copy_tables); i++)
		if (copy_load(pg, &copy_tables[i], &rows[i]) < 0)
			goto out;
	if (pg_command(pg, "COMMIT") < 0)
		goto out;
	rate = (double)ph->committed / ((double)(mono_ns() - start) / 1e9);
	*ret_cpu = cpu0 >= 0 ? (proc_cpu_ms(PQbackendPID(pg)) - cpu0) /
				      (double)ph->committed :
			       -1;
	*ret_rows = 0;
	for (size_t i = 0; i < ARRAY_SIZE(copy_tables); i++)
		*ret_rows += rows[i].rows;
out:
	for (size_t i = 0; i < ARRAY_SIZE(copy_tables); i++)
		free(rows[i].data);
	free(map);
	PQfinish(pg);
	return rate;
}
