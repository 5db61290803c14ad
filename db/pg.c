/* SPDX-License-Identifier: MIT */
/* The connection to PostgreSQL and pg_query(), for both programs. */
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
#include "log.h"
#include "pg_internal.h"

#define PG_CONNECT_TIMEOUT "5" /* seconds, unless the dsn says otherwise */
#define PG_APP_NAME "fleetbench-collector"

void pg_err_set(char *err, const char *fmt, ...)
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
		pg_err_set(err, "%s: %s", what, msg);
	else
		pg_err_set(err, "%s", msg);
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
		pg_err_set(err, "%s: %s", what, primary);
	else
		pg_err_set(err, "%s", primary);
	fold(err);
}

/* Errors after which the connection cannot carry on: 08 (connection
 * exception) and 57P01-57P03 (the server is shutting down or starting). */
bool pg_connection_lost(const struct pg *p, const PGresult *res)
{
	const char *state =
		res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	if (!res || PQstatus(p->conn) != CONNECTION_OK)
		return true;
	return state && (!strncmp(state, "08", 2) || !strncmp(state, "57P", 3));
}

/* Whether the report is at fault: 22 data exception (fleetbench_ingest
 * raises 22023 for a malformed report), 23 integrity constraint. */
bool pg_report_at_fault(const PGresult *res)
{
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	return state && (!strncmp(state, "22", 2) || !strncmp(state, "23", 2));
}

/* 55P03: a lock not taken within lock_timeout (or NOWAIT) */
static bool lock_not_available(const PGresult *res)
{
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	return state && !strcmp(state, "55P03");
}

/*
 * Runs one statement with text parameters. Returns 0 with *ret_res (if
 * given) holding a COMMAND_OK or TUPLES_OK result; else -EIO when the
 * connection is lost, -EINVAL when the data is at fault, -EBUSY when a
 * lock was not taken in time (lock_timeout), -EAGAIN for any other error,
 * with err set.
 */
static int exec(struct pg *p, const char *sql, int nparams,
		const char *const *values, PGresult **ret_res, char *err)
{
	_cleanup_pqclear_ PGresult *res = NULL;
	ExecStatusType st;

	if (!p->conn) {
		pg_err_set(err, "not connected to PostgreSQL");
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
	if (pg_connection_lost(p, res))
		return -EIO;
	if (lock_not_available(res))
		return -EBUSY;
	return pg_report_at_fault(res) ? -EINVAL : -EAGAIN;
}

/*
 * "relation already exists, skipping" and the like are dropped: the
 * collector reports what its calls return, not the server's chatter. An
 * INFO that starts "fleetbench: " is the schema telling the operator what
 * it did (a figure filled in stored runs, 30_figures.sql): logged.
 */
static void notice_drop(void *arg, const char *message)
{
	static const char tag[] = "INFO:  fleetbench: ";
	size_t n;

	if (strncmp(message, tag, sizeof(tag) - 1))
		return;
	message += sizeof(tag) - 1;
	n = strcspn(message, "\n");
	log_info("%.*s", (int)n, message);
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
		pg_err_set(err, "cannot connect to PostgreSQL: out of memory");
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
		pg_err_set(err, "not connected to PostgreSQL");
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

void pg_advisory_holder(struct pg *p, const char *key, char *out, size_t size)
{
	_cleanup_pqclear_ PGresult *res = NULL;
	char err[PG_ERR_LEN];
	const char *params[] = { key };

	out[0] = '\0';
	if (pg_query(p,
		     "SELECT format('pid %s (%s, %s)', a.pid, a.usename, "
		     "coalesce(nullif(a.application_name, ''), 'no application name')) "
		     "FROM pg_locks AS l JOIN pg_stat_activity AS a USING (pid) "
		     "WHERE l.locktype = 'advisory' AND l.granted "
		     "AND l.database = (SELECT oid FROM pg_database "
		     "WHERE datname = current_database()) "
		     "AND ((l.classid::bigint << 32) | l.objid::bigint) = $1::bigint "
		     "LIMIT 1",
		     1, params, &res, err) == 0 &&
	    PQntuples(res) == 1)
		snprintf(out, size, "%s", PQgetvalue(res, 0, 0));
}
