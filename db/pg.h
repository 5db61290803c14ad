/* SPDX-License-Identifier: MIT */
/*
 * The connection to PostgreSQL that both programs use: connect, poll,
 * and pg_query() for one statement. The collector's pipelined group
 * commit is pg_batch.h's, the migrations migrate.h's. Nothing here logs;
 * failures come back as -errno with PQerrorMessage (or the server's
 * message) copied into the caller's err buffer.
 */
#ifndef FLEETBENCH_PG_H
#define FLEETBENCH_PG_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#include "cleanup.h"

#define PG_ERR_LEN 512

/* A PGresult local that is PQclear()ed when it goes out of scope. */
static inline void pqclearp(PGresult **r)
{
	if (*r)
		PQclear(*r);
}

#define _cleanup_pqclear_ _cleanup_(pqclearp)

struct pg;

/*
 * A connection handle for dsn (a libpq conninfo string or URI; NULL or ""
 * takes everything from the PG* environment variables). Does not connect.
 * Returns NULL with errno set.
 */
struct pg *pg_new(const char *dsn);

/* Closes the connection and frees p; NULL is fine. */
void pg_free(struct pg *p);

/*
 * (Re)connects, blocking at most connect_timeout (5 s unless the dsn sets
 * it), and turns synchronous_commit on for the session if the server has
 * it off: an Ack promises the report survives a crash. Returns 0 or -EIO.
 */
int pg_connect(struct pg *p, char err[PG_ERR_LEN]);

/* Drops the connection (a transaction in progress is rolled back). */
void pg_disconnect(struct pg *p);

bool pg_connected(const struct pg *p);

/* The connection's socket, to poll while idle, or -1. */
int pg_socket(const struct pg *p);

/*
 * Reads what the server sent an idle connection (notices, or the error
 * and EOF of a server shutting down). Returns 0, or -EIO when the
 * connection is gone.
 */
int pg_poll(struct pg *p, char err[PG_ERR_LEN]);

/*
 * Runs one statement with text parameters (PQexecParams; values[i] NULL
 * is SQL NULL), not in pipeline mode (no batch in flight): the query side's
 * one entry point (fleetbench compare, rank, ...). Returns 0 with *ret
 * holding the COMMAND_OK or TUPLES_OK result (PQclear it); else -EIO when
 * the connection is lost, -EINVAL when the parameters are at fault
 * (SQLSTATE classes 22 and 23, e.g. a date that is no date), -EBUSY when
 * a lock was not taken within lock_timeout (55P03), -EAGAIN for any
 * other error, with the server's message in err.
 */
int pg_query(struct pg *p, const char *sql, int nparams,
	     const char *const *values, PGresult **ret, char err[PG_ERR_LEN]);

/*
 * The libpq connection, or NULL when not connected: for migrate.c, which
 * runs whole scripts (PQexec) and watches the transaction status.
 */
PGconn *pg_conn(struct pg *p);

/*
 * The server's message for the failed result res (libpq's when res holds
 * none, e.g. NULL), after "what: " unless what is NULL, on one line.
 */
void pg_error(const struct pg *p, const PGresult *res, const char *what,
	      char err[PG_ERR_LEN]);

/*
 * The session of this database holding the advisory lock key (a bigint in
 * decimal), as "pid N (user, application)", into out; "" when none, or
 * when it cannot be told.
 */
void pg_advisory_holder(struct pg *p, const char *key, char *out, size_t size);

#endif
