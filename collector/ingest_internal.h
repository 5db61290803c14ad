/* SPDX-License-Identifier: MIT */
/*
 * What the serve loop's files share (not part of ingest.h's API): the
 * reports in hand, the batches and connections, and the functions of
 * batch.c that serve.c's loop calls. serve.c receives (the ZeroMQ side),
 * batch.c stores and answers (the database side and the Acks).
 */
#ifndef FLEETBENCH_INGEST_INTERNAL_H
#define FLEETBENCH_INGEST_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admit.h"
#include "complain.h"
#include "health.h"
#include "ingest.h"
#include "pg_batch.h"

/* Encoded parameter bytes one batch may hold (one batch more than there
 * are database connections is in memory, and libpq buffers a copy of each
 * one in flight): about 100 realistic reports, a few hundred small ones,
 * at least one of the largest (whose parameters take about as many bytes
 * as its 4 MiB message). */
#define BATCH_MAX_BYTES (4u << 20)
#define IDENTITY_MAX 255 /* a ZeroMQ routing id */
#define WHO_LEN (LINK_KEY_LEN + 64)

/* After a batch at least this large, freed memory goes back to the
 * kernel once the collector has been idle TRIM_IDLE_MS (trim_if_idle). */
#define TRIM_AFTER 16
#define TRIM_IDLE_MS 500

struct item {
	uint8_t id[IDENTITY_MAX];
	size_t id_len;
	char run_id[37];
	char who[WHO_LEN]; /* the agent's key, or its address */
	/* fleetbench_ingest_run()'s parameters; empty once libpq has taken
	 * them (batch_handed) or the report is answered */
	struct pgparam params;
	bool db; /* valid: its answer depends on the database */
	Fleetbench__Ack__Status status; /* UNSPECIFIED: not decided */
	char reason[PG_ERR_LEN];
	bool ack; /* whether to answer at all */
	uint8_t reject; /* REJECTED: why (enum health_reject) */
	/* its bytes, let in until handed to libpq or answered (admit.h) */
	size_t charge;
};

struct stats {
	unsigned long received, committed, duplicate, rejected, retry_later,
		unacked, dropped, ack_lost;
	unsigned long stopping; /* turned away with a hint while stopping */
	/* for /metrics (health.h): rejected by reason, malformed offers,
	 * connections made again, reports per transaction, commit time */
	unsigned long rejected_by[HEALTH_REJECT_N];
	unsigned long offers_rejected, db_reconnects;
	struct health_histogram batch_size, commit_seconds;
};

/*
 * Reports received together. They take turns: one is stored by
 * PostgreSQL on each connection (in flight) while another fills up with
 * what arrives meanwhile, so that the collector's work overlaps the
 * database's.
 */
struct batch {
	struct item *items;
	struct pg_item *pg; /* the same reports, as pg_batch_send() takes */
	int n;
	/* items from the first whose parameters libpq has taken: freed,
	 * their bytes no longer let in (batch_handed) */
	int handed;
	size_t bytes; /* of encoded parameters */
	int64_t first_ms; /* when its first report came */
	int64_t sent_ns; /* when it was handed to PostgreSQL */
};

/* A connection to PostgreSQL and the batch it stores. */
struct conn {
	struct pg *pg;
	bool own; /* made here, freed here (the first is the caller's) */
	struct batch *flight; /* in PostgreSQL, or NULL */
	/* down since, next connection attempt */
	int64_t reconnect_ms;
	int64_t backoff_ms;
	struct complaint db_down;
	bool was_up; /* connected once: the next connection is a reconnect */
};

struct ingest {
	const struct ingest_opts *o;
	void *sock;
	struct batch batches[INGEST_CONNECTIONS_MAX + 1];
	int n_batches;
	struct batch *filling;
	struct conn conns[INGEST_CONNECTIONS_MAX];
	int n_conns;
	struct stats stats;
	struct admit *admit;
	bool stop;
	bool trim_due; /* a large batch freed memory that is not trimmed yet */
	int64_t active_ms; /* when a report last came or a batch ended */
	int64_t answered_ms; /* when an answer was last handed to the socket */
	int64_t flush_from_ms; /* stopping: when only the flush was left */
	struct ratelimit rl_reject, rl_ack, rl_drop, rl_retry, rl_batch,
		rl_offer;
};

/* Decides the report's answer (status, and reason or NULL), freeing
 * its parameters. */
void item_decide(struct item *it, Fleetbench__Ack__Status status,
		 const char *reason);

/* Sends an Ack to the peer of routing id id: 0 or -errno. ack_send_after()
 * adds a retry-after hint to a RETRY_LATER (0: none). */
int ack_send(struct ingest *g, const uint8_t *id, size_t id_len,
	     const char *run_id, Fleetbench__Ack__Status status,
	     const char *reason);
int ack_send_after(struct ingest *g, const uint8_t *id, size_t id_len,
		   const char *run_id, Fleetbench__Ack__Status status,
		   const char *reason, uint32_t retry_after_ms);

/* c's connection is lost (err says why): logged, and the next attempt
 * scheduled right away. */
void db_lost(struct conn *c, const char *err);

/* Connects c and checks the schema; on failure, schedules the next try.
 * Returns whether it is connected. */
bool db_connect(struct ingest *g, struct conn *c);

/*
 * A connected connection without a batch in flight; while none is
 * connected, one that is not (sending on it answers RETRY_LATER, or
 * reconnects); NULL while every connected one has a batch.
 */
struct conn *conn_ready(struct ingest *g);

/* Whether some connection has a batch in flight. */
bool batch_any_flight(const struct ingest *g);

/* No batch in flight and none filling. */
bool batch_idle(const struct ingest *g);

/* b holds batch_max reports or BATCH_MAX_BYTES of parameters. */
bool batch_full(const struct ingest *g, const struct batch *b);

/* Sends the filling batch if it is time: a connection is free and the
 * batch is full, has waited batch_wait_ms, or now is true. */
void batch_start(struct ingest *g, bool now);

/* Moves the batch in flight on c; answers it once it has ended. */
void batch_step(struct ingest *g, struct conn *c);

/* The connections (the first is o->pg) and batches of g->o: 0, -EINVAL
 * (too many connections) or -ENOMEM; batches_release() either way. */
int batches_init(struct ingest *g);
void batches_release(struct ingest *g);

#endif
