/* SPDX-License-Identifier: MIT */
/*
 * The collector's serve loop: receive Reports on the ROUTER, validate
 * them, store each batch in one PostgreSQL transaction, and acknowledge
 * only after its COMMIT returned (docs/operations.md).
 */
#ifndef FLEETBENCH_INGEST_H
#define FLEETBENCH_INGEST_H

#include <stddef.h>

#include "fleetbench.pb-c.h"
#include "link.h"
#include "pg.h"

struct ingest_opts {
	struct link_server *server;
	/* connected and checked against migrations by the caller */
	struct pg *pg;
	const struct pg_migration *migrations;
	size_t n_migrations;
	const char *allowlist; /* reloaded on SIGHUP; NULL in plaintext */
	/* a signalfd for SIGHUP, SIGTERM and SIGINT, all three blocked in
	 * every thread */
	int sigfd;
	int batch_max; /* reports per transaction */
	int batch_wait_ms; /* how long a batch waits to fill up */
};

/*
 * Serves until SIGTERM or SIGINT, after finishing the batch in hand, and
 * logs what it did. Returns 0, or -errno when the socket fails for good.
 */
int ingest_run(const struct ingest_opts *o);

/*
 * The jsonb argument of fleetbench_ingest() (schema/001_init.sql) for a
 * validated report, as a new string (*ret, free() it), without its "probe"
 * member: pg_ingest() sets that from probe_json on the server. Returns 0 or
 * -ENOMEM.
 */
int ingest_report_json(const Fleetbench__Report *r, char **ret);

#endif
