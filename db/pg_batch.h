/* SPDX-License-Identifier: MIT */
/*
 * The collector's pipelined group commit on a pg.h connection: a batch
 * of fleetbench_ingest_run() calls (schema/functions/20_ingest.sql) in
 * one implicit transaction, sent and read without blocking. Nothing here
 * logs; failures come back as -errno with the server's message (or
 * libpq's) copied into the caller's err buffer.
 */
#ifndef FLEETBENCH_PG_BATCH_H
#define FLEETBENCH_PG_BATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "pg.h"
#include "pgparam.h"

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
	/* fleetbench_ingest_run()'s binary parameter, finished; NULL: not
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
 * it. Each item's params are one record, a fleetbench_report
 * (pgparam_record_begin). The statements are prepared on first use on each
 * connection; a database whose fleetbench_report has other attributes
 * refuses each call (SQLSTATE 42804: FAILED, not the report's fault).
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
