/* SPDX-License-Identifier: MIT */
/*
 * The serve loop: receive Reports and Offers on the ROUTER, validate and
 * encode them into the batch filling up, grant offers, read signals, and
 * poll the socket and the database connections (batch.c stores and
 * answers).
 */
#include "ingest_internal.h"

#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include <zmq.h>

#include "clock.h"
#include "codec.h"
#include "fault.h"
#include "log.h"

/* ---- receiving ---- */

static void item_who(struct item *it, zmq_msg_t *m)
{
	const char *key = zmq_msg_gets(m, "User-Id");
	const char *addr = zmq_msg_gets(m, "Peer-Address");

	snprintf(it->who, sizeof(it->who), "%s%s%s%s",
		 key && *key ? "key " : "", key && *key ? key : "",
		 key && *key ? " at " : "", addr ? addr : "unknown address");
}

/* Validates one payload frame and encodes fleetbench_ingest_run()'s
 * parameters, or decides the answer. */
static void item_parse(struct item *it, zmq_msg_t *m)
{
	Fleetbench__Report *rep = NULL;
	char err[CODEC_ERR_LEN > PG_ERR_LEN ? CODEC_ERR_LEN : PG_ERR_LEN];
	int r;

	r = codec_unpack_report(zmq_msg_data(m), zmq_msg_size(m), &rep, err);
	if (rep)
		snprintf(it->run_id, sizeof(it->run_id), "%s",
			 codec_uuid_valid(rep->run_id) ? rep->run_id : "");
	if (r == 0) {
		pgparam_init(&it->params);
		r = ingest_report_params(rep, &it->params, err);
	}
	codec_free_report(rep);
	if (r == -ENOMEM) /* the report may be fine: not refused for it */
		item_decide(it, FLEETBENCH__ACK__STATUS__RETRY_LATER,
			    "the collector is out of memory: send again later");
	else if (r < 0) { /* invalid, or a value that does not fit its column */
		item_decide(it, FLEETBENCH__ACK__STATUS__REJECTED, err);
		it->reject = r == -ERANGE ? HEALTH_REJECT_RANGE :
					    HEALTH_REJECT_INVALID;
	} else
		it->ack = it->db = true;
}

/* ---- offers (admit.h) ---- */

/* Whether the report run_id is in hand: received, not yet answered. */
static bool in_hand(const struct ingest *g, const char *run_id)
{
	for (int k = 0; k < g->n_batches; k++) {
		const struct batch *b = &g->batches[k];

		for (int i = 0; i < b->n; i++)
			if (!strcmp(b->items[i].run_id, run_id))
				return true;
	}
	return false;
}

/* Answers RETRY_LATER with a hint; counted, a lost answer too. */
static void turn_away(struct ingest *g, const struct item *it,
		      const char *run_id, uint32_t hint, const char *why)
{
	g->stats.retry_later++;
	if (ack_send_after(g, it->id, it->id_len, run_id,
			   FLEETBENCH__ACK__STATUS__RETRY_LATER, why, hint) < 0)
		g->stats.ack_lost++;
}

/* While stopping: everything that comes is turned away, to come back
 * once the collector is expected up again. */
#define STOPPING_HINT_MS 2000
/* how long the answers still queued may take to go out at the stop */
#define STOP_LINGER_MS 2000
/*
 * At the stop the socket stays open (what comes turned away) until this
 * long after the last answer: libzmq 4.3 can drop messages sent just
 * before zmq_close whatever the linger (libzmq#1264). The swarm's restart
 * lost the last batch's Acks that way (54 and 63 of 500 reports, each
 * sent again after its agent's 5-s timeout and answered DUPLICATE).
 */
#define STOP_FLUSH_MS 500

/*
 * An Offer: queued for a grant, or answered at once when it is malformed,
 * its report is in hand already, admission control turns it away, the
 * collector is stopping or the queue is full.
 */
static void offer_receive(struct ingest *g, const struct item *it,
			  zmq_msg_t *m)
{
	struct admit_offer o = { .id_len = (uint8_t)it->id_len };
	char err[CODEC_ERR_LEN];
	unsigned flags = 0;
	uint32_t hint = 0;
	int64_t now = mono_ms();
	int r;

	memcpy(o.id, it->id, it->id_len);
	r = codec_unpack_offer(zmq_msg_data(m), zmq_msg_size(m), o.run_id,
			       &o.bytes, &flags, err);
	if (r == 0 && g->stop) {
		turn_away(g, it, o.run_id,
			  admit_hint(g->admit, now, STOPPING_HINT_MS),
			  "the collector is stopping: come back later");
		return;
	}
	if (r == 0 && in_hand(g, o.run_id)) {
		/* sent before, not answered yet: not again meanwhile */
		admit_stats_note_in_hand(g->admit);
		snprintf(err, sizeof(err),
			 "report %s is in hand already: its answer comes soon",
			 o.run_id);
		turn_away(g, it, o.run_id,
			  (uint32_t)(g->o->admit.retry_min_ms > 0 ?
					     g->o->admit.retry_min_ms :
					     1000),
			  err);
		return;
	}
	if (r == 0 && (flags & CODEC_OFFER_HINTS) &&
	    !admit_control_offer(g->admit, flags & CODEC_OFFER_RETURNING, now,
				 &hint)) {
		snprintf(err, sizeof(err),
			 "%zu reports wait already, %zu is what %.0f reports/s store in %lld ms: come back in %u ms",
			 admit_backlog(g->admit), admit_bound(g->admit),
			 admit_stats(g->admit)->rate,
			 (long long)g->o->admit.wait_ms, hint);
		turn_away(g, it, o.run_id, hint, err);
		return;
	}
	o.ms = now;
	if (r == 0)
		r = admit_offer(g->admit, &o);
	if (r == 0)
		return;
	if (r == -EBADMSG) {
		g->stats.offers_rejected++;
		complain_limited(&g->rl_offer, "rejected an offer from %s: %s",
				 it->who, err);
		r = ack_send(g, it->id, it->id_len, "",
			     FLEETBENCH__ACK__STATUS__REJECTED, err);
	} else {
		snprintf(err, sizeof(err),
			 r == -ENOBUFS ?
				 "%zu offers wait already: send again later" :
				 "the collector is out of memory: send again later",
			 admit_waiting(g->admit));
		r = ack_send_after(g, it->id, it->id_len, o.run_id,
				   FLEETBENCH__ACK__STATUS__RETRY_LATER, err,
				   admit_hint(g->admit, now, 0));
	}
	if (r < 0)
		g->stats.ack_lost++;
}

/* Stopping: the offers waiting are told to come back later. */
static void offers_turn_away(struct ingest *g)
{
	struct admit_offer o;
	int64_t now = mono_ms();

	while (admit_take(g->admit, &o)) {
		struct item it = { .id_len = o.id_len };

		memcpy(it.id, o.id, o.id_len);
		turn_away(g, &it, o.run_id,
			  admit_hint(g->admit, now, STOPPING_HINT_MS),
			  "the collector is stopping: come back later");
	}
}

/* Grants waiting offers while there is room, lapsing old grants first. */
static void offers_grant(struct ingest *g)
{
	struct admit_offer o;
	int64_t now = mono_ms();

	admit_expire(g->admit, now);
	while (!g->stop && admit_next(g->admit, now, &o))
		/* EHOSTUNREACH: the agent has gone (it timed out and
		 * reconnected: its offer comes again) */
		if (ack_send(g, o.id, o.id_len, o.run_id,
			     FLEETBENCH__ACK__STATUS__GRANTED, NULL) < 0)
			admit_cancel(g->admit, &o);
}

/*
 * A report is turned away before it is decoded while the collector is
 * stopping, or when it came without a grant and admission control has no
 * room (an agent older than offers, or one sending directly to a
 * collector that once refused its offer). True when answered.
 */
static bool report_turned_away(struct ingest *g, const struct item *it)
{
	int64_t now = mono_ms();
	uint32_t hint = 0;

	if (g->stop) {
		admit_drop_grant(g->admit, it->id, it->id_len);
		hint = admit_hint(g->admit, now, STOPPING_HINT_MS);
		g->stats.stopping++;
		turn_away(g, it, "", hint,
			  "the collector is stopping: send again later");
		return true;
	}
	if (admit_control_report(g->admit, it->id, it->id_len, now, &hint))
		return false;
	turn_away(g, it, "", hint,
		  "the collector has more reports than it can store in time: send again later");
	return true;
}

/*
 * Receives one message if one is waiting. Returns 1 with *it filled, 2
 * for an offer (answered or queued here), 0 when none is, or -errno when
 * the socket failed.
 */
static int item_receive(struct ingest *g, struct item *it)
{
	zmq_msg_t id, payload, extra;
	size_t frames = 0;
	int more, r = 0;
	bool offer;

	*it = (struct item){ 0 };
	zmq_msg_init(&id);
	if (zmq_msg_recv(&id, g->sock, ZMQ_DONTWAIT) < 0) {
		r = errno == EAGAIN ? 0 : -errno;
		zmq_msg_close(&id);
		return r;
	}
	it->id_len = zmq_msg_size(&id);
	if (it->id_len > sizeof(it->id))
		it->id_len = sizeof(it->id);
	memcpy(it->id, zmq_msg_data(&id), it->id_len);
	more = zmq_msg_more(&id);
	zmq_msg_close(&id);

	/* the rest of a message is there as soon as its first frame is */
	zmq_msg_init(&payload);
	while (more) {
		zmq_msg_t *m = frames == 0 ? &payload : &extra;

		if (m == &extra)
			zmq_msg_init(&extra);
		if (zmq_msg_recv(m, g->sock, 0) < 0) {
			r = -errno;
			if (m == &extra)
				zmq_msg_close(&extra);
			goto out;
		}
		more = zmq_msg_more(m);
		if (m == &extra)
			zmq_msg_close(&extra);
		frames++;
	}
	item_who(it, &payload);
	offer = frames == 1 && codec_is_offer(zmq_msg_data(&payload),
					      zmq_msg_size(&payload));
	if (frames && !link_server_peer_allowed(g->o->server,
					   zmq_msg_gets(&payload, "User-Id"))) {
		/* its key left the allowlist since it connected: no answer
		 * (a REJECTED would make the agent throw the report away) */
		g->stats.received++;
		g->stats.dropped++;
		complain_limited(&g->rl_drop,
				 "dropped a message from %s: the key is no longer in the allowlist",
				 it->who);
		r = offer ? 2 : 1;
		goto out;
	}
	if (offer) { /* counted as an offer, not as a message received */
		offer_receive(g, it, &payload);
		r = 2;
		goto out;
	}
	g->stats.received++;
	if (g->stop && frames != 1) { /* nothing taken while stopping */
		g->stats.dropped++;
		r = 2;
		goto out;
	}
	if (frames == 1 && report_turned_away(g, it)) {
		r = 2; /* answered: nothing to store */
		goto out;
	}
	if (frames != 1) {
		char why[64];

		snprintf(why, sizeof(why),
			 "malformed framing: %zu frames, expected one", frames);
		item_decide(it, FLEETBENCH__ACK__STATUS__REJECTED, why);
		it->reject = HEALTH_REJECT_FRAMING;
	} else if (zmq_msg_size(&payload) == 0) {
		item_decide(it, FLEETBENCH__ACK__STATUS__REJECTED,
			    "malformed framing: empty message");
		it->reject = HEALTH_REJECT_FRAMING;
	} else {
		item_parse(it, &payload);
	}
	it->charge = zmq_msg_size(&payload);
	admit_received(g->admit, it->run_id, it->charge);
	r = 1;
out:
	zmq_msg_close(&payload);
	return r;
}

/*
 * Takes what is waiting into the filling batch, up to batch_max reports
 * or BATCH_MAX_BYTES of parameters, without waiting. Returns the number taken,
 * or -errno when the socket failed.
 */
static int batch_fill(struct ingest *g)
{
	const struct ingest_opts *o = g->o;
	struct batch *b = g->filling;
	int taken = 0;

	/* stopping: every message is answered at once, none taken (so a
	 * full batch does not leave the socket readable and unread) */
	while (g->stop || (b->n < o->batch_max && b->bytes < BATCH_MAX_BYTES)) {
		struct item *it = &b->items[b->n];
		int r = item_receive(g, it);

		if (r < 0)
			return taken ? taken : r;
		if (r == 0)
			break;
		if (r == 2) /* an offer: nothing to store */
			continue;
		/* a crash here loses received reports: their agents time
		 * out and send again */
		fault_point("collector-after-receive");
		b->bytes += pgparam_bytes(&it->params);
		if (!b->n)
			b->first_ms = mono_ms();
		b->n++;
		taken++;
	}
	return taken;
}

/* ---- signals ---- */

static void reload_allowlist(struct ingest *g)
{
	const struct ingest_opts *o = g->o;
	char err[LINK_ERR_LEN];
	struct link_allowlist *a;

	if (!o->allowlist) {
		log_info("SIGHUP: no allowlist to reload in plaintext mode");
		return;
	}
	a = link_allowlist_load(o->allowlist, err);
	if (!a) {
		log_error("cannot reload the allowlist, keeping the current one: %s",
			  err);
		return;
	}
	log_info("reloaded the allowlist '%s': %zu agent keys", o->allowlist,
		 link_allowlist_count(a));
	link_server_set_allowlist(o->server, a);
}

static void log_stats(const struct ingest *g)
{
	const struct stats *s = &g->stats;
	const struct admit_stats *a = admit_stats(g->admit);

	log_info("messages received %lu: committed %lu, duplicate %lu, rejected %lu, retry later %lu, unacknowledged (commit unknown) %lu, dropped %lu, answers lost %lu; peers refused %lu; offers %lu: granted %lu, lapsed %lu, stale %lu, refused (queue full) %lu, most waiting %zu, most KiB let in %zu; admission: rate %.0f reports/s, bound %zu, backlog %zu, turned away %lu (longest hint %u ms), back after a hint %lu, offers for a report in hand %lu, turned away while stopping %lu; malformed offers rejected %lu",
		 s->received, s->committed, s->duplicate, s->rejected,
		 s->retry_later, s->unacked, s->dropped, s->ack_lost,
		 link_server_refused(g->o->server), a->offers, a->granted,
		 a->lapsed, a->stale, a->queue_full, a->queue_peak, a->held_peak >> 10,
		 a->rate, admit_bound(g->admit), admit_backlog(g->admit),
		 a->turned_away, a->hint_max_ms, a->returned,
		 a->offers_in_hand, s->stopping, s->offers_rejected);
}

/* The health snapshot for /metrics (metrics.h): a copy under its mutex,
 * once per turn of the loop. */
static void health_publish(const struct ingest *g)
{
	const struct stats *s = &g->stats;
	const struct admit_stats *a = admit_stats(g->admit);
	struct collector_health h;

	if (!g->o->metrics)
		return;
	h = (struct collector_health){
		.received = s->received,
		.committed = s->committed,
		.duplicate = s->duplicate,
		.retry_later = s->retry_later,
		.unacked = s->unacked,
		.dropped = s->dropped,
		.ack_lost = s->ack_lost,
		.refused = {
			[HEALTH_REFUSED_ADMISSION] = a->turned_away,
			[HEALTH_REFUSED_QUEUE_FULL] = a->queue_full,
			[HEALTH_REFUSED_STOPPING] = s->stopping,
		},
		.offers = a->offers,
		.offers_granted = a->granted,
		.offers_lapsed = a->lapsed,
		.offers_stale = a->stale,
		.offers_rejected = s->offers_rejected,
		.offers_in_hand = a->offers_in_hand,
		.returned = a->returned,
		.db_reconnects = s->db_reconnects,
		.backlog = (double)admit_backlog(g->admit),
		.offers_waiting = (double)admit_waiting(g->admit),
		.admission_bound = (double)admit_bound(g->admit),
		.admission_rate = a->rate,
		.db_connections = g->n_conns,
		.batch_size = s->batch_size,
		.commit_seconds = s->commit_seconds,
	};
	memcpy(h.rejected, s->rejected_by, sizeof(h.rejected));
	for (int i = 0; i < g->n_conns; i++)
		h.db_connections_up += pg_connected(g->conns[i].pg);
	metrics_publish(g->o->metrics, &h);
}

static void signals_read(struct ingest *g)
{
	struct signalfd_siginfo si;

	while (read(g->o->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			reload_allowlist(g);
			log_stats(g);
		} else {
			log_info("%s: stopping", strsignal((int)si.ssi_signo));
			g->stop = true;
		}
	}
}

/* ---- the loop ---- */
/*
 * A burst of large reports leaves freed heap that glibc keeps; it goes
 * back to the kernel once the collector has been idle TRIM_IDLE_MS, so an
 * idle collector's RSS returns to its baseline. Not after every batch:
 * under load malloc_trim()'s madvise (a TLB shootdown on every CPU) and
 * the page faults that follow were a quarter of the collector's CPU
 * (docs/performance.md).
 */
static void trim_if_idle(struct ingest *g)
{
	if (g->trim_due && batch_idle(g) &&
	    mono_ms() - g->active_ms >= TRIM_IDLE_MS) {
		malloc_trim(0);
		g->trim_due = false;
	}
}

/* Lowers *t (ms, -1: no deadline yet) to the wait until deadline_ms, 0 if
 * it has passed. */
static void sooner(int64_t *t, int64_t deadline_ms, int64_t now)
{
	int64_t left = deadline_ms > now ? deadline_ms - now : 0;

	if (*t < 0 || left < *t)
		*t = left;
}

/* Stopping with nothing left to store or grant: when the flush ends,
 * STOP_FLUSH_MS after the last answer, at most STOP_LINGER_MS from its
 * start (answers to late comers would otherwise keep it open). */
static int64_t stop_flush_end(struct ingest *g, int64_t now)
{
	int64_t end = g->answered_ms + STOP_FLUSH_MS;

	if (!g->flush_from_ms)
		g->flush_from_ms = now;
	if (end > g->flush_from_ms + STOP_LINGER_MS)
		end = g->flush_from_ms + STOP_LINGER_MS;
	return end;
}

/*
 * After SIGTERM, once what was in hand is stored and answered, the
 * collector waits for the reports it granted before the signal (at most
 * ADMIT_LAPSE_MS, as long as a grant lasts), so that their agents are told
 * to come back instead of waiting out a send timeout for a report that
 * went unread into the closing socket; then it flushes (stop_flush_end).
 */
static bool stop_grace(struct ingest *g, int64_t now)
{
	return admit_expire(g->admit, now) >= 0 || now < stop_flush_end(g, now);
}

/* The poll timeout in ms (-1: none): the filling batch's wait for more
 * while a connection is free, the next reconnection attempt, or the trim
 * of an idle collector. */
static long poll_timeout(struct ingest *g)
{
	const struct ingest_opts *o = g->o;
	int64_t now = mono_ms(), t = -1;

	if (g->stop) {
		if (batch_any_flight(g))
			return 100;
		if (stop_grace(g, now)) { /* the next lapse, or the flush */
			int64_t lapse = admit_lapse_next(g->admit);

			sooner(&t, lapse >= 0 ? lapse : stop_flush_end(g, now),
			       now);
		}
		return t < 0 ? 0 : (long)t;
	}
	if (g->filling->n && conn_ready(g))
		sooner(&t, g->filling->first_ms + o->batch_wait_ms, now);
	for (int i = 0; i < g->n_conns; i++)
		if (!pg_connected(g->conns[i].pg))
			sooner(&t, g->conns[i].reconnect_ms, now);
	if (g->trim_due && batch_idle(g))
		sooner(&t, g->active_ms + TRIM_IDLE_MS, now);
	if (admit_waiting(g->admit)) {
		int64_t lapse = admit_lapse_next(g->admit);

		if (lapse >= 0)
			sooner(&t, lapse, now);
	}
	return (long)t;
}

int ingest_run(const struct ingest_opts *o)
{
	struct ingest g = {
		.o = o,
		.sock = link_server_socket(o->server),
		.rl_reject = { .what = "rejected reports" },
		.rl_ack = { .what = "lost answers" },
		.rl_drop = { .what = "dropped messages" },
		.rl_retry = { .what = "reports answered RETRY_LATER" },
		.rl_batch = { .what = "failed batches" },
		.rl_offer = { .what = "rejected offers" },
	};
	int ret = 0, r;

	g.admit = admit_new(o->admit_bytes);
	if (g.admit)
		admit_set_control(g.admit, &o->admit);
	r = g.admit ? batches_init(&g) : -ENOMEM;
	if (r < 0) {
		batches_release(&g);
		admit_free(g.admit);
		return r;
	}
	/* After SIGTERM: take nothing more, store and answer what is in
	 * hand, answer the reports granted before it (stop_grace), stop. */
	while (!g.stop || !batch_idle(&g) || stop_grace(&g, mono_ms())) {
		zmq_pollitem_t pi[2 + INGEST_CONNECTIONS_MAX] = {
			{ NULL, o->sigfd, ZMQ_POLLIN, 0 },
			/* stopping: what comes is turned away, not taken */
			{ g.sock, 0,
			  g.stop || !batch_full(&g, g.filling) ? ZMQ_POLLIN : 0,
			  0 },
		};
		int at[INGEST_CONNECTIONS_MAX]; /* each one's item, or -1 */
		int np = 2;

		for (int i = 0; i < g.n_conns; i++) {
			struct conn *c = &g.conns[i];
			int dbfd = pg_socket(c->pg);

			at[i] = -1;
			if (dbfd < 0)
				continue;
			at[i] = np;
			pi[np] = (zmq_pollitem_t){ NULL, dbfd, ZMQ_POLLIN, 0 };
			if (c->flight && (pg_batch_events(c->pg) & POLLOUT))
				pi[np].events |= ZMQ_POLLOUT;
			np++;
		}
		if (zmq_poll(pi, np, poll_timeout(&g)) < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			log_error("cannot poll the socket: %s", zmq_strerror(errno));
			break;
		}
		if (pi[0].revents & ZMQ_POLLIN) {
			signals_read(&g);
			if (g.stop)
				offers_turn_away(&g);
		}
		for (int i = 0; i < g.n_conns; i++) {
			struct conn *c = &g.conns[i];
			short revents = at[i] < 0 ? 0 : pi[at[i]].revents;

			if (c->flight) {
				if (pg_socket(c->pg) < 0 || revents || g.stop)
					batch_step(&g, c);
			} else if (revents) {
				char err[PG_ERR_LEN];

				if (pg_poll(c->pg, err) < 0)
					db_lost(c, err);
			}
			if (!pg_connected(c->pg) && mono_ms() >= c->reconnect_ms)
				db_connect(&g, c);
		}
		if (pi[1].revents & ZMQ_POLLIN) {
			int n = batch_fill(&g);

			if (n < 0 && n != -EINTR && n != -EAGAIN) {
				ret = n;
				log_error("cannot receive: %s", zmq_strerror(-n));
				break;
			}
			if (n > 0)
				g.active_ms = mono_ms();
		}
		batch_start(&g, g.stop);
		offers_grant(&g);
		trim_if_idle(&g);
		health_publish(&g);
	}
	/* the last answers (the batch finished, the agents told to come
	 * back) go out before the socket closes, not dropped with it */
	{
		const int linger = STOP_LINGER_MS;

		zmq_setsockopt(g.sock, ZMQ_LINGER, &linger, sizeof(linger));
	}
	health_publish(&g);
	log_stats(&g);
	batches_release(&g);
	admit_free(g.admit);
	return ret;
}
