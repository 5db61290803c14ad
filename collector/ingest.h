/* SPDX-License-Identifier: MIT */
/*
 * The collector's serve loop: receive Reports on the ROUTER, validate
 * them, store each batch in one PostgreSQL transaction, and acknowledge
 * only after its COMMIT returned (docs/operations.md).
 */
#ifndef FLEETBENCH_INGEST_H
#define FLEETBENCH_INGEST_H

#include <stddef.h>

#include "admit.h"
#include "fleetbench.pb-c.h"
#include "link.h"
#include "metrics.h"
#include "pg.h"
#include "pgparam.h"

struct ingest_opts {
	struct link_server *server;
	/* connected and checked against migrations by the caller */
	struct pg *pg;
	/* connections to PostgreSQL, each storing a batch at a time
	 * (1..INGEST_CONNECTIONS_MAX); those beyond pg are made from dsn */
	int connections;
	const char *dsn;
	const struct pg_migration *migrations;
	size_t n_migrations;
	const char *allowlist; /* reloaded on SIGHUP; NULL in plaintext */
	/* a signalfd for SIGHUP, SIGTERM and SIGINT, all three blocked in
	 * every thread */
	int sigfd;
	int batch_max; /* reports per transaction */
	int batch_wait_ms; /* how long a batch waits to fill up */
	/* report bytes let in at once: granted to an offer and not yet
	 * received, or received and not yet answered (admit.h); 0: every
	 * offer is granted at once */
	size_t admit_bytes;
	/* admission control (admit.h); wait_ms 0: none */
	struct admit_control admit;
	/* /metrics: the loop publishes its health here; NULL: none */
	struct metrics *metrics;
};

/*
 * Serves until SIGTERM or SIGINT, after finishing the batch in hand, and
 * logs what it did. Returns 0, or -errno when the socket fails for good.
 */
int ingest_run(const struct ingest_opts *o);

#define INGEST_CONNECTIONS_MAX 4

/* The attributes of fleetbench_report, fleetbench_ingest_run()'s one
 * parameter (schema/029_ingest_contract.sql and the migrations after it
 * that add attributes). */
#define INGEST_ATTRS 113

/*
 * Encodes a validated report as fleetbench_ingest_run()'s one binary
 * parameter, a fleetbench_report of INGEST_ATTRS attributes, in p (reset
 * first): the host, kernel, probe text, capabilities, method,
 * comparisons, and the variants with their parameters, windows, metrics
 * (with their medians, computed here as the agent does: common/stats.c)
 * and samples as arrays, the tags, targets and costs. Returns 0, -ENOMEM,
 * or -ERANGE when a value does not fit its attribute (an unsigned field
 * over a bigint's range; the report is at fault), with err naming the
 * field.
 */
int ingest_report_params(const Fleetbench__Report *r, struct pgparam *p,
			 char err[PG_ERR_LEN]);

#endif
