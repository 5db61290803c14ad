/* SPDX-License-Identifier: MIT */
/* The collector's libpq: the connection and the group commit. */
#include "pg.h"

#include <ctype.h>
#include <errno.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

/* bytes of reports handed to libpq before the socket takes them */
#define PG_SEND_CHUNK (256u << 10)

#define PG_CONNECT_TIMEOUT "5" /* seconds, unless the dsn says otherwise */
#define PG_APP_NAME "fleetbench-collector"

struct pg {
	PGconn *conn;
	char *dsn;
	/* the batch in flight (pg_batch_send) */
	struct pg_item *batch;
	size_t n_batch;
	size_t next; /* the item whose result comes next */
	size_t queued; /* items handed to libpq so far */
	bool ended; /* the end statement and the Sync are handed to libpq */
	bool synced; /* the Sync has left: the server may commit */
	bool failed; /* an error came back: nothing will commit */
	bool batch_unknown; /* lost after the Sync: outcome unknown */
	bool end_done; /* fleetbench_ingest_end()'s result has come */
	int batch_error;
	char batch_err[PG_ERR_LEN]; /* why, when not an item's fault */
	/* PG_INGEST_STMT, PG_END_STMT exist on this connection */
	bool prepared, prepared_end;
};

static void err_set(char *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void err_set(char *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, PG_ERR_LEN, fmt, ap);
	va_end(ap);
}

/* libpq's messages span lines ("...failed: ...\n\tIs the server
 * running...?\n"): fold them into one line for a log or an Ack. */
static void fold(char *s)
{
	char *w = s;
	bool space = false;

	for (char *c = s; *c; c++) {
		if (isspace((unsigned char)*c)) {
			space = w != s;
			continue;
		}
		if (space)
			*w++ = ' ';
		space = false;
		*w++ = *c;
	}
	*w = '\0';
}

static void err_conn(const struct pg *p, char *err, const char *what)
{
	const char *msg = p->conn ? PQerrorMessage(p->conn) : "";

	if (!*msg)
		msg = "not connected";
	if (what)
		err_set(err, "%s: %s", what, msg);
	else
		err_set(err, "%s", msg);
	fold(err);
}

/* The server's own words for a failed statement, else libpq's. */
static void err_result(const struct pg *p, const PGresult *res, char *err,
		       const char *what)
{
	const char *primary =
		res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;

	if (!primary) {
		err_conn(p, err, what);
		return;
	}
	if (what)
		err_set(err, "%s: %s", what, primary);
	else
		err_set(err, "%s", primary);
	fold(err);
}

/* Errors after which the connection cannot carry on: 08 (connection
 * exception) and 57P01-57P03 (the server is shutting down or starting). */
static bool connection_lost(const struct pg *p, const PGresult *res)
{
	const char *state =
		res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	if (!res || PQstatus(p->conn) != CONNECTION_OK)
		return true;
	return state && (!strncmp(state, "08", 2) || !strncmp(state, "57P", 3));
}

/* Whether the report is at fault: 22 data exception (fleetbench_ingest
 * raises 22023 for a malformed report), 23 integrity constraint. */
static bool report_at_fault(const PGresult *res)
{
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	return state && (!strncmp(state, "22", 2) || !strncmp(state, "23", 2));
}

/*
 * Runs one statement with text parameters. Returns 0 with *ret_res (if
 * given) holding a COMMAND_OK or TUPLES_OK result; else -EIO when the
 * connection is lost, -EINVAL when the data is at fault, -EAGAIN for any
 * other error, with err set.
 */
static int exec(struct pg *p, const char *sql, int nparams,
		const char *const *values, PGresult **ret_res, char *err)
{
	_cleanup_pqclear_ PGresult *res = NULL;
	ExecStatusType st;

	if (!p->conn) {
		err_set(err, "not connected to PostgreSQL");
		return -EIO;
	}
	res = PQexecParams(p->conn, sql, nparams, NULL, values, NULL, NULL, 0);
	st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
		if (ret_res)
			*ret_res = TAKE_PTR(res);
		return 0;
	}
	err_result(p, res, err, NULL);
	if (connection_lost(p, res))
		return -EIO;
	return report_at_fault(res) ? -EINVAL : -EAGAIN;
}

static void notice_drop(void *arg, const char *message)
{
	/* "relation already exists, skipping" and the like: the collector
	 * reports what its calls return, not the server's chatter */
}

struct pg *pg_new(const char *dsn)
{
	struct pg *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->dsn = strdup(dsn ? dsn : "");
	if (!p->dsn) {
		free(p);
		return NULL;
	}
	return p;
}

void pg_disconnect(struct pg *p)
{
	if (p && p->conn) {
		PQfinish(p->conn);
		p->conn = NULL;
	}
	if (p)
		p->prepared = p->prepared_end = false;
}

void pg_free(struct pg *p)
{
	if (!p)
		return;
	pg_disconnect(p);
	free(p->dsn);
	free(p);
}

int pg_connect(struct pg *p, char err[PG_ERR_LEN])
{
	/* Entries before dbname are defaults the dsn (expanded in place of
	 * dbname) may override. */
	const char *const keys[] = { "connect_timeout",
				     "fallback_application_name", "dbname",
				     NULL };
	const char *const values[] = { PG_CONNECT_TIMEOUT, PG_APP_NAME, p->dsn,
				       NULL };

	pg_disconnect(p);
	p->conn = PQconnectdbParams(keys, values, 1);
	if (!p->conn) {
		err_set(err, "cannot connect to PostgreSQL: out of memory");
		return -EIO;
	}
	if (PQstatus(p->conn) != CONNECTION_OK) {
		err_conn(p, err, "cannot connect to PostgreSQL");
		pg_disconnect(p);
		return -EIO;
	}
	PQsetNoticeProcessor(p->conn, notice_drop, NULL);
	/* A report is acknowledged once COMMIT returns: with
	 * synchronous_commit off a crash could still lose it. */
	if (exec(p, "SELECT set_config('synchronous_commit', 'on', false) "
		    "WHERE current_setting('synchronous_commit') = 'off'",
		 0, NULL, NULL, err) < 0) {
		pg_disconnect(p);
		return -EIO;
	}
	return 0;
}

bool pg_connected(const struct pg *p)
{
	return p->conn && PQstatus(p->conn) == CONNECTION_OK;
}

int pg_socket(const struct pg *p)
{
	return pg_connected(p) ? PQsocket(p->conn) : -1;
}

int pg_poll(struct pg *p, char err[PG_ERR_LEN])
{
	PGnotify *n;

	if (!p->conn) {
		err_set(err, "not connected to PostgreSQL");
		return -EIO;
	}
	if (!PQconsumeInput(p->conn) || PQstatus(p->conn) != CONNECTION_OK) {
		err_conn(p, err, "lost the connection to PostgreSQL");
		return -EIO;
	}
	while ((n = PQnotifies(p->conn)))
		PQfreemem(n);
	return 0;
}

int pg_query(struct pg *p, const char *sql, int nparams,
	     const char *const *values, PGresult **ret, char err[PG_ERR_LEN])
{
	return exec(p, sql, nparams, values, ret, err);
}

PGconn *pg_conn(struct pg *p)
{
	return pg_connected(p) ? p->conn : NULL;
}

void pg_error(const struct pg *p, const PGresult *res, const char *what,
	      char err[PG_ERR_LEN])
{
	err_result(p, res, err, what);
}

/* ---- pipelined group commit ---- */

#define PG_INGEST_STMT "fleetbench_ingest_run"
#define PG_END_STMT "fleetbench_ingest_end"
#define PG_END_SQL "SELECT fleetbench_ingest_end()"

/* Prepares the statements once per connection: parsed and planned once,
 * not for every report. The ingest statement takes the types of the
 * params it will be sent with, so that the server picks the function by
 * them or refuses here, never misreading binary values. */
static int prepare(struct pg *p, const struct pgparam *params, char *err)
{
	_cleanup_pqclear_ PGresult *res = NULL;
	char sql[64 + 6 * 256];
	int len;

	if (!p->prepared_end) {
		res = PQprepare(p->conn, PG_END_STMT, PG_END_SQL, 0, NULL);
		if (!res || PQresultStatus(res) != PGRES_COMMAND_OK) {
			err_result(p, res, err,
				   "cannot prepare the ingest statement");
			return connection_lost(p, res) ? -EIO : -EAGAIN;
		}
		PQclear(res);
		res = NULL;
		p->prepared_end = true;
	}
	if (p->prepared)
		return 0;
	if (params->n < 1 || params->n > 256) {
		err_set(err, "cannot prepare the ingest statement: %d parameters",
			params->n);
		return -EAGAIN;
	}
	len = snprintf(sql, sizeof(sql), "SELECT %s(", PG_INGEST_STMT);
	for (int i = 1; i <= params->n; i++)
		len += snprintf(sql + len, sizeof(sql) - (size_t)len, "%s$%d",
				i > 1 ? ", " : "", i);
	snprintf(sql + len, sizeof(sql) - (size_t)len, ")");
	res = PQprepare(p->conn, PG_INGEST_STMT, sql, params->n, params->types);
	if (!res || PQresultStatus(res) != PGRES_COMMAND_OK) {
		err_result(p, res, err, "cannot prepare the ingest statement");
		return connection_lost(p, res) ? -EIO : -EAGAIN;
	}
	p->prepared = true;
	return 0;
}

/* Parses fleetbench_ingest_run()'s one boolean: 1 stored, 0 duplicate. */
static int ingest_result(const PGresult *res, char *err)
{
	const char *v;

	if (PQntuples(res) != 1 || PQnfields(res) != 1 ||
	    PQgetisnull(res, 0, 0)) {
		err_set(err, "fleetbench_ingest_run() returned %d rows of %d columns, expected one boolean",
			PQntuples(res), PQnfields(res));
		return -EAGAIN;
	}
	v = PQgetvalue(res, 0, 0);
	if (strcmp(v, "t") && strcmp(v, "f")) {
		err_set(err, "fleetbench_ingest_run() returned '%s', expected a boolean",
			v);
		return -EAGAIN;
	}
	return !strcmp(v, "t");
}

/* Leaves pipeline mode, whatever state the batch ended in. */
static void batch_end(struct pg *p)
{
	p->batch = NULL;
	p->n_batch = 0;
	if (!p->conn)
		return;
	if (PQpipelineStatus(p->conn) != PQ_PIPELINE_OFF &&
	    !PQexitPipelineMode(p->conn)) {
		/* not idle: only a fresh connection is certain */
		pg_disconnect(p);
		return;
	}
	PQsetnonblocking(p->conn, 0);
}

/* The batch failed on the connection: -EIO, with err set. */
static int batch_lost(struct pg *p, char *err, const char *what)
{
	err_conn(p, err, what);
	/* A Sync that never fully left cannot have committed anything. */
	p->batch_unknown = p->synced && !p->failed;
	batch_end(p);
	pg_disconnect(p);
	return -EIO;
}

/*
 * Hands the batch to libpq a piece at a time: the next reports while less
 * than PG_SEND_CHUNK bytes of them wait to go, then, once all are queued,
 * the end statement and the Sync; and sends what the socket takes. So
 * libpq's output buffer holds about one piece, not the whole batch (it
 * keeps its largest size for good). Called again when the socket is
 * writable; p->synced once the Sync has left.
 */
static int batch_push(struct pg *p, char *err)
{
	for (;;) {
		int r = PQflush(p->conn);
		size_t bytes = 0;

		if (r < 0)
			return batch_lost(p, err, "cannot send the batch");
		if (r > 0)
			return 0; /* the rest when the socket is writable */
		if (p->ended) {
			p->synced = true;
			return 0;
		}
		while (p->queued < p->n_batch && bytes < PG_SEND_CHUNK) {
			struct pg_item *it = &p->batch[p->queued++];
			const struct pgparam *params = it->params;

			if (!params)
				continue;
			/* binary parameters, a text result */
			if (!PQsendQueryPrepared(p->conn, PG_INGEST_STMT,
						 params->n, params->values,
						 params->lengths,
						 params->formats, 0))
				return batch_lost(p, err,
						  "cannot send a report");
			it->result = PG_ITEM_SENT;
			bytes += pgparam_bytes(params);
		}
		if (p->queued < p->n_batch)
			continue;
		/* the commit-time work, set-based, once for the batch's runs */
		if (!PQsendQueryPrepared(p->conn, PG_END_STMT, 0, NULL, NULL,
					 NULL, 0))
			return batch_lost(p, err, "cannot send the batch");
		/* Without BEGIN, the statements up to the Sync are one
		 * implicit transaction: the Sync commits it, or an error
		 * rolls it all back. */
		if (!PQpipelineSync(p->conn))
			return batch_lost(p, err, "cannot send the batch");
		p->ended = true;
	}
}

int pg_batch_send(struct pg *p, struct pg_item *items, size_t n,
		  char err[PG_ERR_LEN])
{
	const struct pgparam *first = NULL;
	int r;

	for (size_t i = 0; i < n; i++) {
		const struct pgparam *params = items[i].params;

		if (!params)
			continue;
		if (!first)
			first = params;
		if (params->n != first->n ||
		    memcmp(params->types, first->types,
			   (size_t)first->n * sizeof(*first->types))) {
			err_set(err, "the reports' parameters differ in shape");
			return -EAGAIN;
		}
	}
	if (!first)
		return -ENODATA;
	if (!pg_connected(p)) {
		err_set(err, "not connected to PostgreSQL");
		return -EIO;
	}
	r = prepare(p, first, err);
	if (r < 0)
		return r;
	p->batch = items;
	p->n_batch = n;
	p->next = 0;
	p->failed = false;
	p->synced = false;
	p->batch_unknown = false;
	p->end_done = false;
	p->batch_error = 0;
	p->batch_err[0] = '\0';
	if (PQsetnonblocking(p->conn, 1) < 0 || !PQenterPipelineMode(p->conn))
		return batch_lost(p, err, "cannot start a pipeline");
	for (size_t i = 0; i < n; i++) {
		items[i].result = PG_ITEM_NOT_RUN;
		items[i].err[0] = '\0';
	}
	p->queued = 0;
	p->ended = false;
	return batch_push(p, err);
}

size_t pg_batch_handed(const struct pg *p)
{
	return p->batch ? p->queued : 0;
}

short pg_batch_events(const struct pg *p)
{
	return p->synced ? POLLIN : (POLLIN | POLLOUT);
}

/* fleetbench_ingest_end()'s result: any error of its fails the batch. */
static int end_result(struct pg *p, PGresult *res, char *err)
{
	ExecStatusType st = PQresultStatus(res);

	p->end_done = true;
	if (st == PGRES_TUPLES_OK || st == PGRES_PIPELINE_ABORTED)
		return 0;
	/* before the commit: nothing of the batch is stored */
	p->failed = true;
	if (connection_lost(p, res)) {
		err_result(p, res, err, "lost the connection to PostgreSQL");
		return -EIO;
	}
	err_result(p, res, p->batch_err, "fleetbench_ingest_end() failed");
	p->batch_error = -EAGAIN;
	return 0;
}

/* One result of the batch: the next sent item's, fleetbench_ingest_end()'s,
 * the commit's error, or the Sync's. */
static int batch_result(struct pg *p, PGresult *res, char *err)
{
	ExecStatusType st = PQresultStatus(res);
	struct pg_item *it = NULL;

	while (p->next < p->n_batch &&
	       p->batch[p->next].result != PG_ITEM_SENT)
		p->next++;
	if (p->next < p->n_batch)
		it = &p->batch[p->next];

	if (st == PGRES_PIPELINE_SYNC)
		return 1;
	if (!it && !p->end_done)
		return end_result(p, res, err);
	if (st == PGRES_PIPELINE_ABORTED) {
		/* skipped after an earlier error */
		if (it)
			it->result = PG_ITEM_NOT_RUN;
		return 0;
	}
	if (st == PGRES_TUPLES_OK && it) {
		int r = ingest_result(res, it->err);

		if (r < 0) {
			it->result = PG_ITEM_FAILED;
			p->failed = true;
			p->batch_error = -EAGAIN;
		} else {
			it->result = r ? PG_ITEM_STORED : PG_ITEM_DUPLICATE;
		}
		return 0;
	}
	/* an error: a report's, or the commit's at the Sync (no item) */
	if (connection_lost(p, res)) {
		/* during a statement, nothing commits; during the commit,
		 * nobody knows */
		if (it)
			p->failed = true;
		err_result(p, res, err,
			   it ? "lost the connection to PostgreSQL" :
				"COMMIT outcome unknown");
		return -EIO;
	}
	p->failed = true;
	if (it) {
		err_result(p, res, it->err, NULL);
		if (report_at_fault(res)) {
			it->result = PG_ITEM_INVALID;
			if (!p->batch_error)
				p->batch_error = -EINVAL;
		} else {
			it->result = PG_ITEM_FAILED;
			p->batch_error = -EAGAIN;
		}
	} else {
		err_result(p, res, p->batch_err, "COMMIT failed");
		p->batch_error = -EAGAIN;
	}
	return 0;
}

int pg_batch_step(struct pg *p, char err[PG_ERR_LEN])
{
	int nulls = 0;

	if (!p->conn || !p->batch)
		return batch_lost(p, err, "no batch in flight");
	if (!p->synced && batch_push(p, err) < 0)
		return -EIO;
	if (!PQconsumeInput(p->conn))
		return batch_lost(p, err, "lost the connection to PostgreSQL");
	while (!PQisBusy(p->conn)) {
		_cleanup_pqclear_ PGresult *res = PQgetResult(p->conn);
		int r;

		if (!res) {
			/* the end of one statement's results; a second NULL
			 * in a row: nothing more has arrived yet */
			if (nulls++)
				break;
			continue;
		}
		nulls = 0;
		r = batch_result(p, res, err);
		if (r < 0) {
			p->batch_unknown = p->synced && !p->failed;
			batch_end(p);
			pg_disconnect(p);
			return -EIO;
		}
		if (r > 0) {
			r = p->batch_error;
			if (r && p->batch_err[0])
				err_set(err, "%s", p->batch_err);
			else if (r)
				err_set(err, "the batch was rolled back");
			batch_end(p);
			return r ? r : 1;
		}
	}
	if (PQstatus(p->conn) != CONNECTION_OK)
		return batch_lost(p, err, "lost the connection to PostgreSQL");
	return 0;
}

bool pg_batch_unknown(const struct pg *p)
{
	return p->batch_unknown;
}
