/* SPDX-License-Identifier: MIT */
/*
 * The serve loop's database side: batches handed to PostgreSQL on each
 * connection (pg_batch.h's group commit), their outcome decided, and the
 * Acks sent once a batch has ended.
 */
#include "ingest_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "cleanup.h"
#include "clock.h"
#include "codec.h"
#include "fault.h"
#include "log.h"
#include "migrate.h"

#define RECONNECT_MIN_MS 100
/* at most this long between attempts, so that storing resumes within a
 * few seconds of the database's return (docs/reliability.md, item 5) */
#define RECONNECT_MAX_MS 2000
#define RETRY_REASON "the database is unavailable: send again later"
#define RETRY_REFUSED \
	"not stored: the database refused another report of its batch; send again"

/* ---- an answer ---- */

void item_decide(struct item *it, Fleetbench__Ack__Status status,
			const char *reason)
{
	pgparam_release(&it->params);
	it->status = status;
	it->ack = true;
	snprintf(it->reason, sizeof(it->reason), "%s", reason ? reason : "");
}

int ack_send(struct ingest *g, const uint8_t *id, size_t id_len,
	     const char *run_id, Fleetbench__Ack__Status status,
	     const char *reason)
{
	return ack_send_after(g, id, id_len, run_id, status, reason, 0);
}

int ack_send_after(struct ingest *g, const uint8_t *id, size_t id_len,
		   const char *run_id, Fleetbench__Ack__Status status,
		   const char *reason, uint32_t retry_after_ms)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;
	int r;

	r = codec_pack_ack_after(run_id, status, reason, retry_after_ms, &buf,
				 &len);
	if (r == 0 && zmq_send(g->sock, id, id_len,
			       ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
		r = -errno;
	/* ROUTER sends the parts of one message all or nothing */
	if (r == 0 && zmq_send(g->sock, buf, len, ZMQ_DONTWAIT) < 0)
		r = -errno;
	if (r == 0)
		g->answered_ms = mono_ms();
	return r;
}

/* ---- the database ---- */

void db_lost(struct conn *c, const char *err)
{
	pg_disconnect(c->pg);
	complain(&c->db_down, "PostgreSQL is unavailable: %s", err);
	/* the first attempt right away: a restarted server is back at once */
	c->backoff_ms = RECONNECT_MIN_MS;
	c->reconnect_ms = mono_ms();
}

/* Connects and checks the schema; on failure, schedules the next try. */
bool db_connect(struct ingest *g, struct conn *c)
{
	const struct ingest_opts *o = g->o;
	char err[PG_ERR_LEN];
	int r;

	r = pg_connect(c->pg, err);
	if (r == 0) {
		r = pg_migrations_check(c->pg, o->migrations, o->n_migrations,
					err);
		if (r > 0)
			snprintf(err, sizeof(err),
				 "the database lacks %d migration(s) this collector needs: run 'fleetbench-collector migrate'",
				 r);
		if (r != 0)
			pg_disconnect(c->pg);
	}
	if (r == 0) {
		complain_release(&c->db_down,
				 "connected to PostgreSQL again: storing reports");
		c->backoff_ms = RECONNECT_MIN_MS;
		g->stats.db_reconnects += c->was_up;
		c->was_up = true;
		return true;
	}
	complain(&c->db_down,
		 "PostgreSQL is unavailable: %s (answering RETRY_LATER, next attempt in %lld ms)",
		 err, (long long)c->backoff_ms);
	c->reconnect_ms = mono_ms() + c->backoff_ms;
	c->backoff_ms = c->backoff_ms * 2 > RECONNECT_MAX_MS ?
				RECONNECT_MAX_MS :
				c->backoff_ms * 2;
	return false;
}

/* Nothing of the batch was stored: send again later, for why. */
static void batch_retry_all(struct batch *b, const char *why)
{
	for (int i = 0; i < b->n; i++) {
		struct item *it = &b->items[i];

		if (it->db && !it->status)
			item_decide(it, FLEETBENCH__ACK__STATUS__RETRY_LATER,
				    why);
	}
}

/*
 * Frees the parameters of b's reports that libpq has taken and lets their
 * bytes out of the admission budget: they are in libpq's output buffer or
 * sent. So a report costs the collector memory from its grant until it is
 * handed over, not until the commit, and the next grants need not wait
 * for the database (docs/performance.md). The price: a batch that
 * PostgreSQL rolls back cannot be sent again from here; its reports are
 * answered RETRY_LATER (batch_done).
 */
static void batch_handed(struct ingest *g, struct conn *c, struct batch *b)
{
	int handed = (int)pg_batch_handed(c->pg);

	for (; b->handed < handed && b->handed < b->n; b->handed++) {
		struct item *it = &b->items[b->handed];

		pgparam_release(&it->params);
		admit_release(g->admit, it->charge);
		it->charge = 0;
	}
}

/* Hands the batch's undecided reports to PostgreSQL; those it cannot
 * take are decided at once. Returns whether the batch is in flight. */
static bool batch_send(struct ingest *g, struct conn *c, struct batch *b)
{
	struct pg *pg = c->pg;
	char err[PG_ERR_LEN];
	int r, sent = 0;

	for (int i = 0; i < b->n; i++) {
		struct item *it = &b->items[i];

		/* undecided and valid: a dropped message has neither status
		 * nor parameters */
		b->pg[i] = (struct pg_item){
			.params = it->db && !it->status ? &it->params : NULL,
		};
		sent += b->pg[i].params != NULL;
	}
	if (!pg_connected(pg) &&
	    (mono_ms() < c->reconnect_ms || !db_connect(g, c))) {
		batch_retry_all(b, RETRY_REASON);
		return false;
	}
	b->sent_ns = mono_ns();
	r = pg_batch_send(pg, b->pg, (size_t)b->n, err);
	if (r == -ENODATA)
		return false;
	if (r == -EAGAIN)
		complain_limited(&g->rl_batch,
				 "cannot store a batch of %d reports: %s", b->n,
				 err);
	else if (r < 0)
		db_lost(c, err);
	if (r < 0) {
		batch_retry_all(b, RETRY_REASON);
		return false;
	}
	health_observe(&g->stats.batch_size, health_batch_size_le,
		       health_n_batch_size_le, sent);
	batch_handed(g, c, b);
	/* a crash here leaves the server a batch whose Sync may or may not
	 * have arrived: committed or not, nobody is answered */
	fault_point("collector-after-sync");
	return true;
}

/*
 * The batch in flight has ended with r (pg_batch_step()). Decides its
 * reports: only a commit that returned makes COMMITTED and DUPLICATE
 * answers true; one whose outcome is unknown leaves them unanswered (the
 * agents send again and get DUPLICATE). A report at fault is rejected and
 * the rest answered RETRY_LATER (batch_handed).
 */
static void batch_done(struct ingest *g, struct conn *c, struct batch *b,
		       int r, const char *err)
{
	int pending = 0;

	for (int i = 0; i < b->n; i++)
		pending += b->pg[i].params != NULL;
	if (r == 1) {
		health_observe(&g->stats.commit_seconds,
			       health_commit_seconds_le,
			       health_n_commit_seconds_le,
			       (double)(mono_ns() - b->sent_ns) * 1e-9);
		for (int i = 0; i < b->n; i++) {
			struct item *it = &b->items[i];

			if (!b->pg[i].params)
				continue;
			it->status = b->pg[i].result == PG_ITEM_STORED ?
					     FLEETBENCH__ACK__STATUS__COMMITTED :
					     FLEETBENCH__ACK__STATUS__DUPLICATE;
		}
		/* a crash here leaves stored reports unanswered: sent again,
		 * DUPLICATE (tests/reliability/test_commit_ack.sh) */
		fault_point("collector-after-commit");
		return;
	}
	if (r == -EINVAL) {
		/* nothing committed: reject the culprit; the rest were handed
		 * over and freed, so their agents send them again */
		for (int i = 0; i < b->n; i++)
			if (b->pg[i].params &&
			    b->pg[i].result == PG_ITEM_INVALID) {
				item_decide(&b->items[i],
					    FLEETBENCH__ACK__STATUS__REJECTED,
					    b->pg[i].err);
				b->items[i].reject = HEALTH_REJECT_DATABASE;
			}
		batch_retry_all(b, RETRY_REFUSED);
		return;
	}
	if (r == -EAGAIN) {
		for (int i = 0; i < b->n; i++)
			if (b->pg[i].params &&
			    b->pg[i].result == PG_ITEM_FAILED)
				complain_limited(&g->rl_retry,
						 "report %s from %s not stored, answering RETRY_LATER: %s",
						 b->items[i].run_id,
						 b->items[i].who, b->pg[i].err);
		complain_limited(&g->rl_batch,
				 "a batch of %d reports was rolled back: %s",
				 pending, err);
		batch_retry_all(b, RETRY_REASON);
		return;
	}
	if (!pg_batch_unknown(c->pg)) {
		db_lost(c, err);
		batch_retry_all(b, RETRY_REASON);
		return;
	}
	/* no Ack for what it may have stored */
	for (int i = 0; i < b->n; i++) {
		struct item *it = &b->items[i];

		if (b->pg[i].params) {
			pgparam_release(&it->params);
			it->ack = false;
		}
	}
	g->stats.unacked += (unsigned long)pending;
	log_error("%s: %d reports left unacknowledged (their agents will send them again)",
		  err, pending);
	db_lost(c, err);
}

/* ---- answering ---- */

static void item_answer(struct ingest *g, struct item *it)
{
	int r;

	switch (it->status) {
	case FLEETBENCH__ACK__STATUS__COMMITTED:
		g->stats.committed++;
		break;
	case FLEETBENCH__ACK__STATUS__DUPLICATE:
		g->stats.duplicate++;
		break;
	case FLEETBENCH__ACK__STATUS__REJECTED:
		g->stats.rejected++;
		g->stats.rejected_by[it->reject < HEALTH_REJECT_N ?
					     it->reject :
					     HEALTH_REJECT_INVALID]++;
		complain_limited(&g->rl_reject,
				 "rejected report %s from %s: %s",
				 *it->run_id ? it->run_id : "(no run id)",
				 it->who, it->reason);
		break;
	default:
		g->stats.retry_later++;
		break;
	}
	r = ack_send(g, it->id, it->id_len, it->run_id, it->status,
		     *it->reason ? it->reason : NULL);
	if (r < 0) {
		g->stats.ack_lost++;
		complain_limited(&g->rl_ack, "cannot answer report %s to %s: %s",
				 *it->run_id ? it->run_id : "(no run id)",
				 it->who,
				 r == -EHOSTUNREACH ? "the agent has gone" :
						      zmq_strerror(-r));
	}
}

static void batch_answer(struct ingest *g, struct batch *b)
{
	int n = b->n;
	size_t n_db = 0;

	for (int i = 0; i < n; i++) {
		struct item *it = &b->items[i];

		n_db += it->db &&
			(it->status == FLEETBENCH__ACK__STATUS__COMMITTED ||
			 it->status == FLEETBENCH__ACK__STATUS__DUPLICATE);
		if (it->ack)
			item_answer(g, it);
		pgparam_release(&it->params);
		admit_release(g->admit, it->charge);
		it->charge = 0;
	}
	admit_answered(g->admit, n_db, (size_t)n, mono_ms());
	b->n = 0;
	b->handed = 0;
	b->bytes = 0;
	g->active_ms = mono_ms();
	if (n >= TRIM_AFTER)
		g->trim_due = true;
}

/* ---- taking turns ---- */

bool batch_full(const struct ingest *g, const struct batch *b)
{
	return b->n >= g->o->batch_max || b->bytes >= BATCH_MAX_BYTES;
}

/* A connected connection without a batch in flight; while none is
 * connected, one that is not (sending on it answers RETRY_LATER, or
 * reconnects); NULL while every connected one has a batch. */
struct conn *conn_ready(struct ingest *g)
{
	struct conn *down = NULL;
	bool up = false;

	for (int i = 0; i < g->n_conns; i++) {
		struct conn *c = &g->conns[i];

		if (pg_connected(c->pg)) {
			up = true;
			if (!c->flight)
				return c;
		} else if (!c->flight && !down) {
			down = c;
		}
	}
	return up ? NULL : down;
}

static bool in_flight(const struct ingest *g, const struct batch *b)
{
	for (int i = 0; i < g->n_conns; i++)
		if (g->conns[i].flight == b)
			return true;
	return false;
}

bool batch_any_flight(const struct ingest *g)
{
	for (int i = 0; i < g->n_conns; i++)
		if (g->conns[i].flight)
			return true;
	return false;
}

bool batch_idle(const struct ingest *g)
{
	return !batch_any_flight(g) && !g->filling->n;
}

/* Sends the filling batch if it is time: a connection is free and the
 * batch is full, has waited batch_wait_ms, or now is true. */
void batch_start(struct ingest *g, bool now)
{
	struct batch *b = g->filling;
	struct conn *c;

	if (!b->n)
		return;
	c = conn_ready(g);
	if (!c)
		return;
	if (!now && !batch_full(g, b) &&
	    mono_ms() - b->first_ms < g->o->batch_wait_ms)
		return;
	/* a batch neither filling nor in flight: there is one more batch
	 * than connections */
	for (int i = 0; i < g->n_batches; i++) {
		struct batch *n = &g->batches[i];

		if (n != b && !in_flight(g, n)) {
			g->filling = n;
			break;
		}
	}
	if (batch_send(g, c, b))
		c->flight = b;
	else
		batch_answer(g, b);
}

/* Moves the batch in flight on c; answers it once it has ended. */
void batch_step(struct ingest *g, struct conn *c)
{
	struct batch *b = c->flight;
	char err[PG_ERR_LEN];
	int r = pg_batch_step(c->pg, err);

	if (r == 0) {
		batch_handed(g, c, b);
		return;
	}
	batch_done(g, c, b, r, err);
	c->flight = NULL;
	batch_answer(g, b);
}

int batches_init(struct ingest *g)
{
	const struct ingest_opts *o = g->o;

	g->n_conns = o->connections < 1 ? 1 : o->connections;
	if (g->n_conns > INGEST_CONNECTIONS_MAX)
		return -EINVAL;
	g->n_batches = g->n_conns + 1;
	for (int i = 0; i < g->n_conns; i++) {
		struct conn *c = &g->conns[i];

		c->backoff_ms = RECONNECT_MIN_MS;
		if (i == 0) {
			c->pg = o->pg; /* connected by the caller */
			c->was_up = true;
			continue;
		}
		/* connected by the loop, checked as after an outage */
		c->pg = pg_new(o->dsn);
		if (!c->pg)
			return -ENOMEM;
		c->own = true;
	}
	for (int i = 0; i < g->n_batches; i++) {
		struct batch *b = &g->batches[i];

		b->items = calloc((size_t)o->batch_max, sizeof(*b->items));
		b->pg = calloc((size_t)o->batch_max, sizeof(*b->pg));
		if (!b->items || !b->pg)
			return -ENOMEM;
	}
	g->filling = &g->batches[0];
	return 0;
}

void batches_release(struct ingest *g)
{
	for (int i = 0; i < g->n_batches; i++) {
		free(g->batches[i].items);
		free(g->batches[i].pg);
	}
	for (int i = 0; i < g->n_conns; i++)
		if (g->conns[i].own)
			pg_free(g->conns[i].pg);
}
