/* SPDX-License-Identifier: MIT */
/*
 * The collector's libpq: the connection and the pipelined group commit
 * of fleetbench_ingest_run() calls (schema/functions/20_ingest.sql); the
 * migrations are migrate.h's. Nothing here logs; failures come back as
 * -errno with PQerrorMessage (or the server's message) copied into the
 * caller's err buffer.
 */
#ifndef FLEETBENCH_PG_H
#define FLEETBENCH_PG_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#include "cleanup.h"
#include "pgparam.h"

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
 * (SQLSTATE classes 22 and 23, e.g. a date that is no date), -EAGAIN for
 * any other error, with the server's message in err.
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

/* ---- pipelined group commit ---- */

enum pg_item_result {
	PG_ITEM_NOT_RUN, /* not stored: the batch ended before or without it */
	PG_ITEM_SENT, /* in flight */
	PG_ITEM_STORED,
	PG_ITEM_DUPLICATE, /* its run_id already was stored */
	PG_ITEM_INVALID, /* the report is at fault (SQLSTATE class 22, 23) */
	PG_ITEM_FAILED, /* not stored for another reason: worth a retry */
};

/* One report of a batch. */
struct pg_item {
	/* fleetbench_ingest_run()'s binary parameters, finished; NULL: not
	 * sent */
	const struct pgparam *params;
	enum pg_item_result result;
	char err[PG_ERR_LEN]; /* why, for INVALID and FAILED */
};

/*
 * Sends a batch in pipeline mode, without waiting: one
 * fleetbench_ingest_run() call per item with params (all items' params of
 * one shape: count and types), one fleetbench_ingest_end() (the
 * commit-time work of the batch's runs), then a Sync. With no BEGIN, the
 * calls are one implicit transaction that the Sync commits, or that any
 * error rolls back whole. items must stay valid until pg_batch_step()
 * returns nonzero; an item's params only until pg_batch_handed() counts
 * it. The statements are prepared on first use on each
 * connection, with the parameter types of the first item's params, so
 * that a database whose function takes other types refuses them there.
 * Returns 0, -ENODATA when no item has params (nothing was sent), -EAGAIN
 * when a statement cannot be prepared (a missing function, other types),
 * or -EIO (disconnected; nothing committed).
 */
int pg_batch_send(struct pg *p, struct pg_item *items, size_t n,
		  char err[PG_ERR_LEN]);

/* What to poll the socket for while the batch is in flight. */
short pg_batch_events(const struct pg *p);

/*
 * Sends what is left to send and reads the results that have arrived.
 * Returns 0 while the batch is in flight; 1 when it committed (every sent
 * item STORED or DUPLICATE); -EINVAL when it was rolled back because a
 * report was at fault (that item INVALID, the others NOT_RUN or with the
 * result they would have had: none is stored; send them again without
 * it); -EAGAIN when it was rolled back for another reason (an item FAILED,
 * fleetbench_ingest_end() failed, or the commit failed; err says which);
 * -EIO when the connection is lost: nothing
 * committed, unless pg_batch_unknown() says the outcome is unknown (the
 * Sync had left and no error had come back). Any nonzero return ends the
 * batch.
 */
int pg_batch_step(struct pg *p, char err[PG_ERR_LEN]);

bool pg_batch_unknown(const struct pg *p);

/*
 * How many items of the batch in flight, from the first, libpq has taken:
 * their params were copied into its output buffer and may be freed; the
 * rest are still read. 0 when no batch is in flight.
 */
size_t pg_batch_handed(const struct pg *p);

#endif
