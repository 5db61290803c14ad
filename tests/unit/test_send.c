/* SPDX-License-Identifier: MIT */
/*
 * Flushing the spool to real ROUTER sockets on 127.0.0.1 with CURVE: Ack
 * statuses, Lazy Pirate reconnects with backoff, failover, RETRY_LATER,
 * an unreachable collector, quarantine, stray Acks and interrupts; then
 * the agent's run, send, spool and keygen commands and their exit statuses.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include <json-c/json.h>

#include "check.h"
#include "cleanup.h"
#include "clock.h"
#include "codec.h"
#include "link.h"
#include "run.h"
#include "send.h"
#include "spool.h"

#define BIND "tcp://127.0.0.1:*"
#define MAX_SCRIPT 8
#define MAX_SEEN 32
#define MAX_EVENTS 64

static char root[] = "/tmp/fleetbench-test-send-XXXXXX";
static struct link_keypair server_kp, agent_kp, stranger_kp;

static char *path_of(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *path_of(const char *fmt, ...)
{
	static char buf[4][512];
	static int next;
	char *p = buf[next++ % 4], rel[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	snprintf(p, sizeof(buf[0]), "%s/%s", root, rel);
	return p;
}

/* ---- a scripted collector: a real ROUTER in a thread ---- */

enum action {
	ACT_COMMIT = 1,
	ACT_DUPLICATE,
	ACT_REJECT, /* reason "bad" */
	ACT_RETRY,
	ACT_DROP, /* never answers */
	ACT_NOISE_THEN_COMMIT, /* junk, Acks for nothing pending, then the Ack */
	ACT_EMPTY_REJECT, /* REJECTED with an empty run id */
};

/* What the scripted collector does with an Offer (docs/wire.md). */
enum offer_mode {
	OFFER_GRANT, /* GRANTED at once */
	OFFER_OLD, /* as a collector older than offers: a broken Report */
	OFFER_RETRY, /* RETRY_LATER */
};

struct server {
	void *ctx;
	struct link_server *ls;
	pthread_t thread;
	bool running;
	char endpoint[128];
	enum action script[MAX_SCRIPT]; /* answers to the first messages */
	size_t n_script;
	enum action then; /* answer to every later message */
	_Atomic enum offer_mode offer_mode; /* set while it runs */
	pthread_mutex_t lock;
	unsigned offers; /* Offers received, not counted in received */
	unsigned received;
	char seen[MAX_SEEN][37]; /* run ids, in arrival order */
	atomic_bool stop;
};

static void reply(void *router, const zmq_msg_t *id, const char *run_id,
		  Fleetbench__Ack__Status status, const char *reason)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;

	CHECK_OK(codec_pack_ack(run_id, status, reason, &buf, &len));
	zmq_send(router, zmq_msg_data((zmq_msg_t *)id),
		 zmq_msg_size((zmq_msg_t *)id), ZMQ_SNDMORE);
	zmq_send(router, buf, len, 0);
}

static void answer(struct server *srv, const zmq_msg_t *id,
		   const char *run_id, enum action act)
{
	void *router = link_server_socket(srv->ls);
	char other[37];

	switch (act) {
	case ACT_COMMIT:
		reply(router, id, run_id, FLEETBENCH__ACK__STATUS__COMMITTED,
		      NULL);
		break;
	case ACT_DUPLICATE:
		reply(router, id, run_id, FLEETBENCH__ACK__STATUS__DUPLICATE,
		      NULL);
		break;
	case ACT_REJECT:
		reply(router, id, run_id, FLEETBENCH__ACK__STATUS__REJECTED,
		      "bad");
		break;
	case ACT_RETRY:
		reply(router, id, run_id, FLEETBENCH__ACK__STATUS__RETRY_LATER,
		      "database unreachable");
		break;
	case ACT_DROP:
		break;
	case ACT_NOISE_THEN_COMMIT:
		zmq_send(router, zmq_msg_data((zmq_msg_t *)id),
			 zmq_msg_size((zmq_msg_t *)id), ZMQ_SNDMORE);
		zmq_send(router, "junk", 4, 0);
		codec_uuid_new(other);
		reply(router, id, other, FLEETBENCH__ACK__STATUS__COMMITTED,
		      NULL);
		reply(router, id, "", FLEETBENCH__ACK__STATUS__COMMITTED, NULL);
		/* a grant answers an offer, never the report */
		reply(router, id, run_id, FLEETBENCH__ACK__STATUS__GRANTED,
		      NULL);
		reply(router, id, run_id, FLEETBENCH__ACK__STATUS__COMMITTED,
		      NULL);
		break;
	case ACT_EMPTY_REJECT:
		reply(router, id, "", FLEETBENCH__ACK__STATUS__REJECTED,
		      "unreadable");
		break;
	}
}

static void offer_answer(struct server *srv, const zmq_msg_t *id,
			 zmq_msg_t *payload)
{
	void *router = link_server_socket(srv->ls);
	Fleetbench__Report *rep = NULL;
	char err[CODEC_ERR_LEN], run_id[37];
	uint32_t bytes;

	pthread_mutex_lock(&srv->lock);
	srv->offers++;
	pthread_mutex_unlock(&srv->lock);
	switch (atomic_load(&srv->offer_mode)) {
	case OFFER_GRANT:
	case OFFER_RETRY:
		CHECK_OK(codec_unpack_offer(zmq_msg_data(payload),
					    zmq_msg_size(payload), run_id,
					    &bytes, err));
		CHECK(bytes > 0);
		reply(router, id, run_id,
		      atomic_load(&srv->offer_mode) == OFFER_GRANT ?
			      FLEETBENCH__ACK__STATUS__GRANTED :
			      FLEETBENCH__ACK__STATUS__RETRY_LATER,
		      NULL);
		break;
	case OFFER_OLD:
		/* what a collector without offers does: unpack a Report */
		CHECK(codec_unpack_report(zmq_msg_data(payload),
					  zmq_msg_size(payload), &rep,
					  err) == -EBADMSG);
		codec_free_report(rep);
		reply(router, id, "", FLEETBENCH__ACK__STATUS__REJECTED, err);
		break;
	}
}

static void *server_main(void *arg)
{
	struct server *srv = arg;
	void *router = link_server_socket(srv->ls);

	while (!atomic_load(&srv->stop)) {
		zmq_pollitem_t it = { router, 0, ZMQ_POLLIN, 0 };
		Fleetbench__Report *rep = NULL;
		char err[CODEC_ERR_LEN], run_id[37] = "";
		zmq_msg_t id, payload;
		enum action act;
		unsigned n;

		if (zmq_poll(&it, 1, 20) <= 0)
			continue;
		zmq_msg_init(&id);
		zmq_msg_init(&payload);
		if (zmq_msg_recv(&id, router, 0) < 0 || !zmq_msg_more(&id) ||
		    zmq_msg_recv(&payload, router, 0) < 0) {
			zmq_msg_close(&id);
			zmq_msg_close(&payload);
			continue;
		}
		if (codec_is_offer(zmq_msg_data(&payload),
				   zmq_msg_size(&payload))) {
			offer_answer(srv, &id, &payload);
			zmq_msg_close(&id);
			zmq_msg_close(&payload);
			continue;
		}
		if (codec_unpack_report(zmq_msg_data(&payload),
					zmq_msg_size(&payload), &rep, err) == 0)
			snprintf(run_id, sizeof(run_id), "%s", rep->run_id);
		codec_free_report(rep);
		pthread_mutex_lock(&srv->lock);
		n = srv->received++;
		if (n < MAX_SEEN)
			snprintf(srv->seen[n], sizeof(srv->seen[n]), "%s",
				 run_id);
		pthread_mutex_unlock(&srv->lock);
		act = n < srv->n_script ? srv->script[n] : srv->then;
		answer(srv, &id, run_id, act);
		zmq_msg_close(&id);
		zmq_msg_close(&payload);
	}
	return NULL;
}

/* Starts a CURVE server (plaintext when curve is false) answering by the
 * script, then `then`. */
static void server_start(struct server *srv, bool curve, enum action then,
			 size_t n, const enum action *script)
{
	struct link_server_opts o = { .bind = BIND };
	char err[LINK_ERR_LEN] = "";

	memset(srv, 0, sizeof(*srv));
	pthread_mutex_init(&srv->lock, NULL);
	srv->then = then;
	srv->n_script = n;
	if (n)
		memcpy(srv->script, script, n * sizeof(*script));
	if (curve) {
		o.keys = &server_kp;
		o.allowlist = link_allowlist_load(path_of("allow"), err);
		CHECK_(o.allowlist != NULL, "link_allowlist_load: %s", err);
	}
	srv->ctx = zmq_ctx_new();
	srv->ls = link_server_new(srv->ctx, &o, err);
	CHECK_(srv->ls != NULL, "link_server_new: %s", err);
	if (!srv->ls) {
		link_allowlist_free(o.allowlist);
		return;
	}
	snprintf(srv->endpoint, sizeof(srv->endpoint), "%s",
		 link_server_endpoint(srv->ls));
	srv->running = pthread_create(&srv->thread, NULL, server_main, srv) == 0;
	CHECK(srv->running);
}

static void server_stop(struct server *srv)
{
	if (!srv->ctx)
		return; /* stopped already */
	atomic_store(&srv->stop, true);
	if (srv->running)
		pthread_join(srv->thread, NULL);
	srv->running = false;
	link_server_free(srv->ls);
	srv->ls = NULL;
	zmq_ctx_term(srv->ctx);
	srv->ctx = NULL;
	pthread_mutex_destroy(&srv->lock);
}

static unsigned server_received(struct server *srv)
{
	unsigned n;

	pthread_mutex_lock(&srv->lock);
	n = srv->received;
	pthread_mutex_unlock(&srv->lock);
	return n;
}

static bool server_saw(struct server *srv, const char *run_id)
{
	bool seen = false;

	pthread_mutex_lock(&srv->lock);
	for (unsigned i = 0; i < srv->received && i < MAX_SEEN; i++)
		seen |= !strcmp(srv->seen[i], run_id);
	pthread_mutex_unlock(&srv->lock);
	return seen;
}

/* ---- the agent side ---- */

struct event_log {
	struct send_event_info ev[MAX_EVENTS];
	char endpoint[MAX_EVENTS][128];
	char detail[MAX_EVENTS][256];
	int n;
	int interrupt_after_timeouts; /* 0: never */
};

static atomic_bool interrupt_flag;

static bool interrupted(void)
{
	return atomic_load(&interrupt_flag);
}

static void record(void *data, const struct send_event_info *ev)
{
	struct event_log *l = data;

	if (l->n < MAX_EVENTS) {
		l->ev[l->n] = *ev;
		snprintf(l->endpoint[l->n], sizeof(l->endpoint[0]), "%s",
			 ev->endpoint);
		snprintf(l->detail[l->n], sizeof(l->detail[0]), "%s",
			 ev->detail ? ev->detail : "");
		l->n++;
	}
	if (ev->event == SEND_TIMEOUT && l->interrupt_after_timeouts &&
	    (int)ev->attempt >= l->interrupt_after_timeouts)
		atomic_store(&interrupt_flag, true);
}

static int count_events(const struct event_log *l, enum send_event e)
{
	int n = 0;

	for (int i = 0; i < l->n; i++)
		n += l->ev[i].event == e;
	return n;
}

static struct spool *spool_new(const char *name)
{
	char err[SPOOL_ERR_LEN] = "";
	struct spool *s = spool_open(path_of("%s", name), 0, err);

	CHECK_(s != NULL, "spool_open: %s", err);
	return s;
}

/* Spools a small valid report; its run id goes to run_id. */
static void spool_report(struct spool *s, char run_id[37])
{
	Fleetbench__Report r = FLEETBENCH__REPORT__INIT;
	Fleetbench__Host h = FLEETBENCH__HOST__INIT;
	Fleetbench__Kernel k = FLEETBENCH__KERNEL__INIT;
	_cleanup_free_ uint8_t *buf = NULL;
	char err[SPOOL_ERR_LEN] = "";
	struct timespec ts;
	size_t len;

	clock_gettime(CLOCK_REALTIME, &ts);
	CHECK_OK(codec_uuid_new(run_id));
	h.hostname = "test-host";
	h.machine_id = "0123456789abcdef0123456789abcdef";
	k.release = "6.1.0-test";
	r.schema_version = FLEETBENCH__SCHEMA_VERSION__CURRENT;
	r.run_id = run_id;
	r.agent_version = "test";
	r.host = &h;
	r.kernel = &k;
	r.started_unix_ms = (int64_t)ts.tv_sec * 1000;
	r.finished_unix_ms = r.started_unix_ms;
	r.probe_json = "{}";
	CHECK_OK(codec_pack_report(&r, &buf, &len));
	CHECK_OK(spool_put(s, run_id, buf, len, err));
}

static int spooled(struct spool *s)
{
	_cleanup_free_ struct spool_entry *e = NULL;

	return spool_list(s, &e);
}

static struct send_opts opts_for(const char *const *endpoints, size_t n,
				 struct event_log *log)
{
	return (struct send_opts){
		.endpoints = endpoints,
		.n_endpoints = n,
		.server_public = server_kp.public_key,
		.keys = &agent_kp,
		.timeout_ms = 2000,
		.retries = 0,
		.backoff_ms = 10,
		.backoff_max_ms = 20,
		.heartbeat_ms = 1000,
		.interrupted = interrupted,
		.event = record,
		.event_data = log,
	};
}

static char flush_err[SEND_ERR_LEN];

static int flush(struct spool *s, const struct send_opts *o,
		 struct send_summary *sum)
{
	void *ctx = zmq_ctx_new();
	int r = send_flush(ctx, s, o, sum, flush_err);

	zmq_ctx_term(ctx);
	return r;
}

static char *read_text(const char *path)
{
	static char buf[512];
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	return buf;
}

/* One test's world: a scripted server, a spool of reports, options. */
struct scene {
	struct server srv;
	struct spool *s;
	struct event_log log;
	const char *ep[2];
	char ids[2][37];
	struct send_opts o;
	struct send_summary sum;
};

static void scene_start(struct scene *sc, const char *spool, bool curve,
			enum action then, size_t n, const enum action *script,
			int reports)
{
	memset(sc, 0, sizeof(*sc));
	server_start(&sc->srv, curve, then, n, script);
	sc->s = spool_new(spool);
	sc->ep[0] = sc->srv.endpoint;
	for (int i = 0; i < reports; i++)
		spool_report(sc->s, sc->ids[i]);
	sc->o = opts_for(sc->ep, 1, &sc->log);
}

static void scene_stop(struct scene *sc)
{
	server_stop(&sc->srv);
	spool_close(sc->s);
}

/* ---- the tests ---- */

/* COMMITTED and DUPLICATE leave the spool, REJECTED goes to rejected/. */
static void test_statuses(void)
{
	const enum action script[] = { ACT_COMMIT, ACT_DUPLICATE, ACT_REJECT };
	unsigned rej = 9, quar = 9;
	struct scene sc;
	char third[37];
	char *reason;

	scene_start(&sc, "statuses", true, ACT_DROP, 3, script, 2);
	spool_report(sc.s, third);
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK_EQ_INT(sc.sum.sent, 3);
	/* each report offered first, the offers not counted as reports */
	CHECK_EQ_INT(sc.sum.offers, 3);
	CHECK_EQ_INT(sc.srv.offers, 3);
	CHECK_EQ_INT(count_events(&sc.log, SEND_NO_OFFERS), 0);
	CHECK_EQ_INT(sc.sum.committed, 1);
	CHECK_EQ_INT(sc.sum.duplicate, 1);
	CHECK_EQ_INT(sc.sum.rejected, 1);
	CHECK_EQ_INT(sc.sum.quarantined, 0);
	CHECK_EQ_INT(sc.sum.remaining, 0);
	CHECK(!sc.sum.retry_later && !sc.sum.unreachable);
	CHECK_EQ_INT(server_received(&sc.srv), 3);
	CHECK(server_saw(&sc.srv, sc.ids[0]) && server_saw(&sc.srv, sc.ids[1]) &&
	      server_saw(&sc.srv, third));
	CHECK_EQ_INT(spooled(sc.s), 0);
	CHECK_OK(spool_counts(sc.s, &rej, &quar));
	CHECK_EQ_INT(rej, 1);
	CHECK_EQ_INT(quar, 0);
	/* the third message the server got is the rejected one */
	reason = read_text(path_of("statuses/rejected/%s.fbr.reason",
				   sc.srv.seen[2]));
	CHECK(reason && strstr(reason, "bad"));
	CHECK(access(path_of("statuses/rejected/%s.fbr", sc.srv.seen[2]),
		     F_OK) == 0);
	CHECK_EQ_INT(count_events(&sc.log, SEND_COMMITTED), 1);
	CHECK_EQ_INT(count_events(&sc.log, SEND_DUPLICATE), 1);
	CHECK_EQ_INT(count_events(&sc.log, SEND_REJECTED), 1);
	CHECK_EQ_INT(count_events(&sc.log, SEND_TIMEOUT), 0);
	scene_stop(&sc);
}

/*
 * A collector that takes reports and never answers: each attempt times
 * out, the socket is replaced after a growing, jittered delay, and after
 * the retries the agent fails over to the second endpoint, which it keeps.
 */
static void test_failover(void)
{
	struct server good;
	struct scene sc;
	int64_t t0, elapsed;
	int backoffs = 0;

	scene_start(&sc, "failover", true, ACT_DROP, 0, NULL, 2);
	server_start(&good, true, ACT_COMMIT, 0, NULL);
	sc.ep[1] = good.endpoint;
	sc.o.n_endpoints = 2;
	sc.o.timeout_ms = 300;
	sc.o.retries = 2;
	sc.o.backoff_ms = 40;
	sc.o.backoff_max_ms = 60;
	t0 = mono_ms();
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	elapsed = mono_ms() - t0;
	CHECK_EQ_INT(sc.sum.committed, 2);
	CHECK_EQ_INT(sc.sum.remaining, 0);
	CHECK(!sc.sum.unreachable);
	CHECK_EQ_INT(spooled(sc.s), 0);
	/* 1 + retries attempts at the dead one, each on a new connection */
	CHECK_EQ_INT(server_received(&sc.srv), 3);
	/* the second report went straight to the endpoint that answered */
	CHECK_EQ_INT(server_received(&good), 2);
	CHECK_EQ_INT(sc.sum.sent, 5);
	CHECK_EQ_INT(count_events(&sc.log, SEND_TIMEOUT), 3);
	CHECK_EQ_INT(count_events(&sc.log, SEND_FAILOVER), 1);
	for (int i = 0; i < sc.log.n; i++) {
		const struct send_event_info *e = &sc.log.ev[i];

		if (e->event == SEND_TIMEOUT)
			CHECK_EQ_STR(sc.log.endpoint[i], sc.srv.endpoint);
		if (e->event == SEND_FAILOVER)
			CHECK_EQ_STR(sc.log.endpoint[i], good.endpoint);
		if (e->event != SEND_BACKOFF)
			continue;
		backoffs++;
		/* k-th delay: min(max, base * 2^(k-1)), less up to half */
		if (e->attempt == 1)
			CHECK_(e->delay_ms >= 20 && e->delay_ms <= 40,
			       "first backoff %ld ms", e->delay_ms);
		else
			CHECK_(e->delay_ms >= 30 && e->delay_ms <= 60,
			       "second backoff %ld ms (capped at 60)",
			       e->delay_ms);
	}
	CHECK_EQ_INT(backoffs, 2);
	CHECK_(elapsed >= 3 * 300 + 20 + 30, "took %lld ms", (long long)elapsed);
	server_stop(&good);
	scene_stop(&sc);
}

/*
 * A collector older than offers answers the first one REJECTED without a
 * run id (it read a broken Report): the report and the ones after it go
 * to it directly, and nothing is rejected.
 */
static void test_old_collector(void)
{
	unsigned rej = 9, quar = 9;
	struct scene sc;

	scene_start(&sc, "old", true, ACT_COMMIT, 0, NULL, 3);
	atomic_store(&sc.srv.offer_mode, OFFER_OLD);
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK_EQ_INT(sc.sum.offers, 1);
	CHECK_EQ_INT(sc.srv.offers, 1);
	CHECK_EQ_INT(sc.sum.sent, 3);
	CHECK_EQ_INT(sc.sum.committed, 3);
	CHECK_EQ_INT(sc.sum.rejected, 0);
	CHECK_EQ_INT(sc.sum.remaining, 0);
	CHECK_EQ_INT(server_received(&sc.srv), 3);
	CHECK_EQ_INT(count_events(&sc.log, SEND_NO_OFFERS), 1);
	CHECK_EQ_INT(count_events(&sc.log, SEND_REJECTED), 0);
	CHECK_EQ_INT(count_events(&sc.log, SEND_ACK_IGNORED), 0);
	for (int i = 0; i < sc.log.n; i++)
		if (sc.log.ev[i].event == SEND_NO_OFFERS)
			CHECK(strstr(sc.log.detail[i], "not a Report") != NULL);
	CHECK_OK(spool_counts(sc.s, &rej, &quar));
	CHECK_EQ_INT(rej, 0);
	CHECK_EQ_INT(spooled(sc.s), 0);
	scene_stop(&sc);
}

/* A spooled report over the wire's limit is neither offered nor sent (no
 * collector would ever take it): it goes to rejected/ with the reason. */
static void test_too_large(void)
{
	char run_id[37], err[SPOOL_ERR_LEN] = "";
	uint8_t *big = calloc(1, CODEC_MAX_MESSAGE + 1);
	unsigned rej = 9, quar = 9;
	struct scene sc;
	char *reason;

	scene_start(&sc, "large", true, ACT_COMMIT, 0, NULL, 1);
	CHECK_OK(codec_uuid_new(run_id));
	CHECK(big != NULL);
	if (big)
		CHECK_OK(spool_put(sc.s, run_id, big, CODEC_MAX_MESSAGE + 1,
				   err));
	free(big);
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK_EQ_INT(sc.sum.committed, 1);
	CHECK_EQ_INT(sc.sum.rejected, 1);
	CHECK_EQ_INT(sc.sum.offers, 1);
	CHECK_EQ_INT(sc.sum.sent, 1);
	CHECK_EQ_INT(server_received(&sc.srv), 1);
	CHECK_OK(spool_counts(sc.s, &rej, &quar));
	CHECK_EQ_INT(rej, 1);
	reason = read_text(path_of("large/rejected/%s.fbr.reason", run_id));
	CHECK(reason && strstr(reason, "over the 4194304-byte limit"));
	scene_stop(&sc);
}

/* An offer answered RETRY_LATER stops the pass before the report goes. */
static void test_offer_retry_later(void)
{
	struct scene sc;

	scene_start(&sc, "offer-retry", true, ACT_COMMIT, 0, NULL, 2);
	atomic_store(&sc.srv.offer_mode, OFFER_RETRY);
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK(sc.sum.retry_later);
	CHECK_EQ_INT(sc.sum.offers, 1);
	CHECK_EQ_INT(sc.sum.sent, 0);
	CHECK_EQ_INT(server_received(&sc.srv), 0);
	CHECK_EQ_INT(sc.sum.remaining, 2);
	CHECK_EQ_INT(spooled(sc.s), 2);
	CHECK_EQ_INT(count_events(&sc.log, SEND_RETRY_LATER), 1);
	scene_stop(&sc);
}

/* RETRY_LATER stops the pass: nothing leaves the spool. */
static void test_retry_later(void)
{
	const enum action script[] = { ACT_RETRY };
	struct scene sc;

	scene_start(&sc, "retry", true, ACT_COMMIT, 1, script, 2);
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK(sc.sum.retry_later);
	CHECK_EQ_INT(sc.sum.sent, 1);
	CHECK_EQ_INT(sc.sum.committed, 0);
	CHECK_EQ_INT(sc.sum.remaining, 2);
	CHECK_EQ_INT(server_received(&sc.srv), 1);
	CHECK_EQ_INT(spooled(sc.s), 2);
	CHECK_EQ_INT(count_events(&sc.log, SEND_RETRY_LATER), 1);
	for (int i = 0; i < sc.log.n; i++)
		if (sc.log.ev[i].event == SEND_RETRY_LATER)
			CHECK_EQ_STR(sc.log.detail[i], "database unreachable");

	/* the next pass delivers both */
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK_EQ_INT(sc.sum.committed, 2);
	CHECK_EQ_INT(sc.sum.remaining, 0);
	CHECK_EQ_INT(spooled(sc.s), 0);
	scene_stop(&sc);
}

/* Nothing listening: every attempt times out, the reports stay. */
static void test_unreachable(void)
{
	struct scene sc;

	scene_start(&sc, "unreachable", true, ACT_COMMIT, 0, NULL, 2);
	server_stop(&sc.srv); /* its port is closed now */
	sc.o.timeout_ms = 200;
	sc.o.retries = 1;
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK(sc.sum.unreachable);
	CHECK_EQ_INT(sc.sum.sent, 0); /* no handshake, so nothing was queued */
	CHECK_EQ_INT(sc.sum.remaining, 2);
	CHECK_EQ_INT(spooled(sc.s), 2);
	CHECK_EQ_INT(count_events(&sc.log, SEND_TIMEOUT), 2);
	CHECK_EQ_INT(count_events(&sc.log, SEND_UNREACHABLE), 1);
	scene_stop(&sc);
}

/* An agent whose key is not in the allowlist, or that holds the wrong
 * server key, gets nothing through. */
static void test_refused(void)
{
	struct scene sc;

	scene_start(&sc, "refused", true, ACT_COMMIT, 0, NULL, 1);
	sc.o.timeout_ms = 300;
	sc.o.keys = &stranger_kp;
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK(sc.sum.unreachable);
	CHECK_EQ_INT(sc.sum.remaining, 1);
	sc.o.keys = &agent_kp;
	sc.o.server_public = stranger_kp.public_key;
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK(sc.sum.unreachable);
	CHECK_EQ_INT(server_received(&sc.srv), 0);
	CHECK_EQ_INT(spooled(sc.s), 1);
	scene_stop(&sc);
}

/* A damaged spool file is quarantined and never sent. */
static void test_quarantine(void)
{
	_cleanup_free_ struct spool_entry *e = NULL;
	unsigned rej = 9, quar = 9;
	const char *bad, *good;
	struct scene sc;
	char byte;
	int fd;

	scene_start(&sc, "quarantine", true, ACT_COMMIT, 0, NULL, 2);
	/* damage the one sent last, so the pass ends on a quarantined file */
	CHECK_EQ_INT(spool_list(sc.s, &e), 2);
	bad = e ? e[1].run_id : sc.ids[0];
	good = strcmp(bad, sc.ids[0]) ? sc.ids[0] : sc.ids[1];
	/* flip a payload byte: its CRC no longer matches */
	fd = open(path_of("quarantine/%s.fbr", bad), O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_EQ_INT(pread(fd, &byte, 1, 64 + 3), 1);
	byte ^= 0x10;
	CHECK_EQ_INT(pwrite(fd, &byte, 1, 64 + 3), 1);
	close(fd);

	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK_EQ_INT(sc.sum.quarantined, 1);
	CHECK_EQ_INT(sc.sum.committed, 1);
	CHECK_EQ_INT(sc.sum.sent, 1);
	CHECK_EQ_INT(sc.sum.remaining, 0);
	CHECK_EQ_INT(server_received(&sc.srv), 1);
	CHECK(!server_saw(&sc.srv, bad));
	CHECK(server_saw(&sc.srv, good));
	CHECK_EQ_INT(spooled(sc.s), 0);
	CHECK_OK(spool_counts(sc.s, &rej, &quar));
	CHECK_EQ_INT(quar, 1);
	CHECK_EQ_INT(rej, 0);
	CHECK_EQ_INT(count_events(&sc.log, SEND_QUARANTINED), 1);
	for (int i = 0; i < sc.log.n; i++)
		if (sc.log.ev[i].event == SEND_QUARANTINED)
			CHECK(strstr(sc.log.detail[i], "checksum") != NULL);
	scene_stop(&sc);
}

/* Junk and Acks that answer nothing pending are ignored; an Ack without a
 * run id that refuses answers the report in flight. */
static void test_stray_acks(void)
{
	const enum action script[] = { ACT_NOISE_THEN_COMMIT,
				       ACT_EMPTY_REJECT };
	struct scene sc;
	char *reason;

	scene_start(&sc, "stray", true, ACT_DROP, 2, script, 2);
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK_EQ_INT(sc.sum.committed, 1);
	CHECK_EQ_INT(sc.sum.rejected, 1);
	CHECK_EQ_INT(sc.sum.remaining, 0);
	CHECK_EQ_INT(count_events(&sc.log, SEND_ACK_IGNORED), 4);
	CHECK_EQ_INT(count_events(&sc.log, SEND_TIMEOUT), 0);
	reason = read_text(path_of("stray/rejected/%s.fbr.reason",
				   sc.srv.seen[1]));
	CHECK(reason && strstr(reason, "unreadable"));
	scene_stop(&sc);
}

/* Plaintext (--insecure) against a plaintext server. */
static void test_plaintext(void)
{
	struct scene sc;

	scene_start(&sc, "plain", false, ACT_COMMIT, 0, NULL, 1);
	sc.o.server_public = NULL;
	sc.o.keys = NULL;
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK_EQ_INT(sc.sum.committed, 1);
	CHECK(server_saw(&sc.srv, sc.ids[0]));
	scene_stop(&sc);
}

/* An interrupt while waiting ends the pass with -EINTR; the report stays. */
static void test_interrupt(void)
{
	struct scene sc;
	int64_t t0;

	scene_start(&sc, "interrupt", true, ACT_DROP, 0, NULL, 1);
	sc.log.interrupt_after_timeouts = 1;
	sc.o.timeout_ms = 200;
	sc.o.retries = 5;
	sc.o.backoff_ms = 10000;
	sc.o.backoff_max_ms = 10000;
	t0 = mono_ms();
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), -EINTR);
	CHECK_(mono_ms() - t0 < 2000, "took %lld ms",
	       (long long)(mono_ms() - t0));
	CHECK_EQ_INT(sc.sum.remaining, 1);
	CHECK_EQ_INT(spooled(sc.s), 1);
	atomic_store(&interrupt_flag, false);
	scene_stop(&sc);
}

static void test_bad_opts(void)
{
	struct event_log log = { 0 };
	struct send_summary sum;
	struct spool *s = spool_new("opts");
	const char *ep[1] = { "tcp://127.0.0.1:1" };
	struct send_opts o = opts_for(ep, 0, &log);

	CHECK_EQ_INT(flush(s, &o, &sum), -EINVAL);
	CHECK(strstr(flush_err, "no collector endpoint") != NULL);
	o = opts_for(ep, 1, &log);
	o.keys = NULL;
	CHECK_EQ_INT(flush(s, &o, &sum), -EINVAL);
	CHECK(strstr(flush_err, "keys") != NULL);
	o = opts_for(ep, 1, &log);
	o.backoff_max_ms = 1;
	CHECK_EQ_INT(flush(s, &o, &sum), -EINVAL);
	CHECK(strstr(flush_err, "backoff") != NULL);
	spool_close(s);
}

/* ---- the command line ---- */

/* The options every command below shares: no system config, the test's
 * spool, keys and endpoint. */
#define CLI_OPTS(spool, endpoint)                                           \
	"--config", path_of("empty.conf"), "--spool-dir", (spool),         \
		"--endpoint", (endpoint), "--server-key",                  \
		path_of("server.pub"), "--agent-key",                      \
		path_of("allow/agent.key"), "--send-timeout", "300",       \
		"--retries", "0", "--backoff", "10"

#define QUICK_RUN                                                           \
	"--profile", "quick", "--only", "false_sharing", "--fs-increments",  \
		"1000", "--repeats", "2", "--steal-window", "0", "--dir", root

static void test_cli(void)
{
	char spool_dir[600], cli_dir[600], unreachable[128];
	struct run_result r;
	struct json_object *j;
	struct scene sc;
	struct stat st;
	FILE *f;

	CHECK(getenv("AGENT") != NULL);
	if (!getenv("AGENT"))
		return;
	f = fopen(path_of("empty.conf"), "we");
	if (f)
		fclose(f);
	snprintf(cli_dir, sizeof(cli_dir), "%s", path_of("cli-keys"));
	CHECK_EQ_INT(mkdir(cli_dir, 0700), 0);

	/* keygen: 0600 secret, public beside it, never overwritten */
	RUN_AGENT(&r, -1, "keygen", "--dir", cli_dir, "--name", "a1");
	CHECK_EQ_INT(r.status, 0);
	CHECK(strstr(r.out, "a1.pub") != NULL);
	CHECK(stat(path_of("cli-keys/a1.key"), &st) == 0 &&
	      (st.st_mode & 0777) == 0600);
	CHECK(access(path_of("cli-keys/a1.pub"), R_OK) == 0);
	run_result_release(&r);
	RUN_AGENT(&r, -1, "keygen", "--dir", cli_dir, "--name", "a1");
	CHECK_EQ_INT(r.status, 1);
	CHECK(strstr(r.err, "already exists") != NULL);
	run_result_release(&r);

	scene_start(&sc, "cli", true, ACT_COMMIT, 0, NULL, 0);
	snprintf(spool_dir, sizeof(spool_dir), "%s", path_of("cli"));

	/* run --no-send: spooled, not sent */
	RUN_AGENT(&r, -1, "run", CLI_OPTS(spool_dir, sc.srv.endpoint), QUICK_RUN,
		  "--no-send");
	CHECK_EQ_INT(r.status, 0);
	CHECK(strstr(r.err, "spooled in") != NULL);
	CHECK(strstr(r.out, "false_sharing") != NULL);
	run_result_release(&r);
	CHECK_EQ_INT(spooled(sc.s), 1);
	CHECK_EQ_INT(server_received(&sc.srv), 0);

	/* without a collector and without --no-send: a local run only */
	RUN_AGENT(&r, -1, "run", "--config", path_of("empty.conf"), "--spool-dir",
		  spool_dir, QUICK_RUN);
	CHECK_EQ_INT(r.status, 0);
	run_result_release(&r);
	CHECK_EQ_INT(spooled(sc.s), 1);

	/* spool lists it */
	RUN_AGENT(&r, -1, "spool", "--spool-dir", spool_dir, "--json");
	CHECK_EQ_INT(r.status, 0);
	j = json_tokener_parse(r.out);
	CHECK(j && json_object_array_length(
			   json_object_object_get(j, "reports")) == 1);
	json_object_put(j);
	run_result_release(&r);

	/* no room: refused before benchmarking, the spool untouched */
	RUN_AGENT(&r, -1, "run", CLI_OPTS(spool_dir, sc.srv.endpoint), QUICK_RUN,
		  "--spool-limit", "20K");
	CHECK_EQ_INT(r.status, 1);
	CHECK(strstr(r.err, "has no room for this run") != NULL);
	CHECK(strstr(r.out, "false_sharing") == NULL); /* never benchmarked */
	run_result_release(&r);
	CHECK_EQ_INT(spooled(sc.s), 1);
	CHECK_EQ_INT(server_received(&sc.srv), 0);

	/* send delivers: exit 0 */
	RUN_AGENT(&r, -1, "send", CLI_OPTS(spool_dir, sc.srv.endpoint));
	CHECK_EQ_INT(r.status, 0);
	CHECK(strstr(r.out, "committed 1") && strstr(r.out, "remaining 0"));
	run_result_release(&r);
	CHECK_EQ_INT(spooled(sc.s), 0);
	CHECK_EQ_INT(server_received(&sc.srv), 1);

	/* run: spooled, then sent at once */
	RUN_AGENT(&r, -1, "run", CLI_OPTS(spool_dir, sc.srv.endpoint), QUICK_RUN);
	CHECK_EQ_INT(r.status, 0);
	CHECK(strstr(r.err, "committed 1") != NULL);
	run_result_release(&r);
	CHECK_EQ_INT(spooled(sc.s), 0);
	CHECK_EQ_INT(server_received(&sc.srv), 2);

	/* the collector down: spooled but not delivered, exit 3 */
	snprintf(unreachable, sizeof(unreachable), "%s", sc.srv.endpoint);
	server_stop(&sc.srv);
	RUN_AGENT(&r, -1, "run", CLI_OPTS(spool_dir, unreachable), QUICK_RUN);
	CHECK_EQ_INT(r.status, 3);
	CHECK(strstr(r.err, "no collector answered") != NULL);
	run_result_release(&r);
	CHECK_EQ_INT(spooled(sc.s), 1);
	RUN_AGENT(&r, -1, "send", CLI_OPTS(spool_dir, unreachable));
	CHECK_EQ_INT(r.status, 3);
	CHECK(strstr(r.out, "remaining 1") != NULL);
	run_result_release(&r);
	scene_stop(&sc);

	/* a collector that rejects it: exit 1, the report in rejected/ */
	scene_start(&sc, "cli", true, ACT_REJECT, 0, NULL, 0);
	RUN_AGENT(&r, -1, "send", CLI_OPTS(spool_dir, sc.srv.endpoint));
	CHECK_EQ_INT(r.status, 1);
	CHECK(strstr(r.out, "rejected 1") != NULL);
	CHECK(strstr(r.err, "bad") != NULL);
	run_result_release(&r);
	CHECK_EQ_INT(spooled(sc.s), 0);

	/* what sending needs is checked first */
	RUN_AGENT(&r, -1, "send", "--config", path_of("empty.conf"), "--spool-dir",
		  spool_dir);
	CHECK_EQ_INT(r.status, 2);
	CHECK(strstr(r.err, "no collector configured") != NULL);
	run_result_release(&r);
	RUN_AGENT(&r, -1, "send", CLI_OPTS(spool_dir, "udp://127.0.0.1:1"));
	CHECK_EQ_INT(r.status, 2);
	CHECK(strstr(r.err, "bad collector endpoint") != NULL);
	run_result_release(&r);
	chmod(path_of("allow/agent.key"), 0640);
	RUN_AGENT(&r, -1, "send", CLI_OPTS(spool_dir, sc.srv.endpoint));
	CHECK_EQ_INT(r.status, 1);
	CHECK(strstr(r.err, "readable by group or others") != NULL);
	run_result_release(&r);
	chmod(path_of("allow/agent.key"), 0600);
	scene_stop(&sc);
}

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	remove(path);
	return 0;
}

int main(void)
{
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	CHECK_EQ_INT(mkdir(path_of("allow"), 0700), 0);
	CHECK_OK(link_keygen(root, "server", &server_kp));
	CHECK_OK(link_keygen(path_of("allow"), "agent", &agent_kp));
	CHECK_OK(link_keygen(root, "stranger", &stranger_kp));

	test_statuses();
	test_failover();
	test_retry_later();
	test_old_collector();
	test_offer_retry_later();
	test_too_large();
	test_unreachable();
	test_refused();
	test_quarantine();
	test_stray_acks();
	test_plaintext();
	test_interrupt();
	test_bad_opts();
	test_cli();

	nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return check_summary();
}
