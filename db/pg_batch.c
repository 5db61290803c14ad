/* SPDX-License-Identifier: MIT */
/* The pipelined group commit of fleetbench_ingest_run() calls. */
#include "pg_batch.h"

#include <errno.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "pg_internal.h"

/* bytes of reports handed to libpq before the socket takes them */
#define PG_SEND_CHUNK (256u << 10)

#define PG_INGEST_STMT "fleetbench_ingest_run"
#define PG_INGEST_SQL "SELECT fleetbench_ingest_run($1::fleetbench_report)"
#define PG_END_STMT "fleetbench_ingest_end"
#define PG_END_SQL "SELECT fleetbench_ingest_end()"

/* Prepares the statements once per connection: parsed and planned once,
 * not for every report. The ingest statement takes one fleetbench_report
 * (the composite type of schema/029_ingest_contract.sql), sent as a
 * binary record whose every attribute carries its type: the server
 * refuses a record whose attributes are not the type's (42804), never
 * misreading binary values. */
static int prepare(struct pg *p, const struct pgparam *params, char *err)
{
	_cleanup_pqclear_ PGresult *res = NULL;

	if (!p->prepared_end) {
		res = PQprepare(p->conn, PG_END_STMT, PG_END_SQL, 0, NULL);
		if (!res || PQresultStatus(res) != PGRES_COMMAND_OK) {
			pg_error(p, res, "cannot prepare the ingest statement",
				 err);
			return pg_connection_lost(p, res) ? -EIO : -EAGAIN;
		}
		PQclear(res);
		res = NULL;
		p->prepared_end = true;
	}
	if (p->prepared)
		return 0;
	if (params->n != 1) {
		pg_err_set(err, "cannot prepare the ingest statement: %d parameters, expected one record",
			params->n);
		return -EAGAIN;
	}
	res = PQprepare(p->conn, PG_INGEST_STMT, PG_INGEST_SQL, 1,
			params->types);
	if (!res || PQresultStatus(res) != PGRES_COMMAND_OK) {
		pg_error(p, res, "cannot prepare the ingest statement", err);
		return pg_connection_lost(p, res) ? -EIO : -EAGAIN;
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
		pg_err_set(err, "fleetbench_ingest_run() returned %d rows of %d columns, expected one boolean",
			PQntuples(res), PQnfields(res));
		return -EAGAIN;
	}
	v = PQgetvalue(res, 0, 0);
	if (strcmp(v, "t") && strcmp(v, "f")) {
		pg_err_set(err, "fleetbench_ingest_run() returned '%s', expected a boolean",
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
	pg_error(p, NULL, what, err);
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
			pg_err_set(err, "the reports' parameters differ in shape");
			return -EAGAIN;
		}
	}
	if (!first)
		return -ENODATA;
	if (!pg_connected(p)) {
		pg_err_set(err, "not connected to PostgreSQL");
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
	if (pg_connection_lost(p, res)) {
		pg_error(p, res, "lost the connection to PostgreSQL", err);
		return -EIO;
	}
	pg_error(p, res, "fleetbench_ingest_end() failed", p->batch_err);
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
	if (pg_connection_lost(p, res)) {
		/* during a statement, nothing commits; during the commit,
		 * nobody knows */
		if (it)
			p->failed = true;
		pg_error(p, res,
			 it ? "lost the connection to PostgreSQL" :
			      "COMMIT outcome unknown",
			 err);
		return -EIO;
	}
	p->failed = true;
	if (it) {
		pg_error(p, res, NULL, it->err);
		if (pg_report_at_fault(res)) {
			it->result = PG_ITEM_INVALID;
			if (!p->batch_error)
				p->batch_error = -EINVAL;
		} else {
			it->result = PG_ITEM_FAILED;
			p->batch_error = -EAGAIN;
		}
	} else {
		pg_error(p, res, "COMMIT failed", p->batch_err);
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
				pg_err_set(err, "%s", p->batch_err);
			else if (r)
				pg_err_set(err, "the batch was rolled back");
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
