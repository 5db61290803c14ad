/* SPDX-License-Identifier: MIT */
/*
 * What pg.c (the connection) and pg_batch.c (the group commit) share:
 * the connection's state, a batch's included, and the error helpers. Not
 * for the library's users: they see pg.h and pg_batch.h.
 */
#ifndef FLEETBENCH_PG_INTERNAL_H
#define FLEETBENCH_PG_INTERNAL_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#include "pg.h"

struct pg_item;

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

/* vsnprintf into err (PG_ERR_LEN bytes). */
void pg_err_set(char *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Errors after which the connection cannot carry on (res NULL, the
 * connection gone, SQLSTATE 08 or 57P01-57P03). */
bool pg_connection_lost(const struct pg *p, const PGresult *res);

/* Whether the report is at fault (SQLSTATE classes 22 and 23). */
bool pg_report_at_fault(const PGresult *res);

#endif
