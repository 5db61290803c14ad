/* SPDX-License-Identifier: MIT */
/*
 * The set-up test_send.c and test_send_cli.c share: a scripted collector (a
 * real ROUTER with CURVE in a thread, answering by a script), the agent's
 * side (a spool of small reports, send options, an event log) and a scene
 * that holds both, in a test directory with the collector's and two
 * agents' keys. Each test includes it once; the functions are static
 * inline so that a test need not use them all.
 */
#ifndef FLEETBENCH_SEND_TEST_H
#define FLEETBENCH_SEND_TEST_H

#include <errno.h>
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
#include <zmq.h>

#include "check.h"
#include "cleanup.h"
#include "codec.h"
#include "link.h"
#include "probe_test.h"
#include "send.h"
#include "spool.h"

#define BIND "tcp://127.0.0.1:*"
#define MAX_SCRIPT 8
#define MAX_SEEN 32
#define MAX_EVENTS 64

static char *root; /* the test's directory, from send_test_setup() */
static struct link_keypair server_kp, agent_kp, stranger_kp;

static inline char *path_of(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static inline char *path_of(const char *fmt, ...)
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
	ACT_NOISE_THEN_COMMIT, /* junk, Acks for nothing pending, then the Ack
				*/
	ACT_EMPTY_REJECT, /* REJECTED with an empty run id */
};

/* What the scripted collector does with an Offer (docs/wire.md). */
enum offer_mode {
	OFFER_GRANT, /* GRANTED at once */
	OFFER_OLD, /* as a collector older than offers: a broken Report */
	OFFER_RETRY, /* RETRY_LATER */
	OFFER_HINT, /* RETRY_LATER, come back in HINT_MS; GRANTED once back */
};

#define HINT_MS 150

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
	unsigned offers_hints; /* of them, saying the agent honours hints */
	unsigned offers_returning; /* saying they come back after a hint */
	unsigned received;
	char seen[MAX_SEEN][37]; /* run ids, in arrival order */
	atomic_bool stop;
};

static inline void reply_after(void *router, const zmq_msg_t *id,
			       const char *run_id,
			       Fleetbench__Ack__Status status,
			       const char *reason, uint32_t retry_after_ms)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;

	CHECK_OK(codec_pack_ack_after(run_id, status, reason, retry_after_ms,
				      &buf, &len));
	zmq_send(router, zmq_msg_data((zmq_msg_t *)id),
		 zmq_msg_size((zmq_msg_t *)id), ZMQ_SNDMORE);
	zmq_send(router, buf, len, 0);
}

static inline void reply(void *router, const zmq_msg_t *id, const char *run_id,
			 Fleetbench__Ack__Status status, const char *reason)
{
	reply_after(router, id, run_id, status, reason, 0);
}

static inline void answer(struct server *srv, const zmq_msg_t *id,
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

static inline void offer_answer(struct server *srv, const zmq_msg_t *id,
				zmq_msg_t *payload)
{
	void *router = link_server_socket(srv->ls);
	Fleetbench__Report *rep = NULL;
	char err[CODEC_ERR_LEN], run_id[37];
	uint32_t bytes;
	unsigned flags = 0;
	enum offer_mode mode = atomic_load(&srv->offer_mode);

	if (mode != OFFER_OLD) {
		CHECK_OK(codec_unpack_offer(zmq_msg_data(payload),
					    zmq_msg_size(payload), run_id,
					    &bytes, &flags, err));
		CHECK(bytes > 0);
	}
	pthread_mutex_lock(&srv->lock);
	srv->offers++;
	srv->offers_hints += !!(flags & CODEC_OFFER_HINTS);
	srv->offers_returning += !!(flags & CODEC_OFFER_RETURNING);
	pthread_mutex_unlock(&srv->lock);
	switch (mode) {
	case OFFER_HINT:
		if (flags & CODEC_OFFER_RETURNING)
			reply(router, id, run_id,
			      FLEETBENCH__ACK__STATUS__GRANTED, NULL);
		else
			reply_after(router, id, run_id,
				    FLEETBENCH__ACK__STATUS__RETRY_LATER,
				    "busy", HINT_MS);
		break;
	case OFFER_GRANT:
	case OFFER_RETRY:
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

static inline void *server_main(void *arg)
{
	struct server *srv = arg;
	void *router = link_server_socket(srv->ls);

	while (!atomic_load(&srv->stop)) {
		zmq_pollitem_t it = {router, 0, ZMQ_POLLIN, 0};
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
static inline void server_start(struct server *srv, bool curve,
				enum action then, size_t n,
				const enum action *script)
{
	struct link_server_opts o = {.bind = BIND};
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
	srv->running =
		pthread_create(&srv->thread, NULL, server_main, srv) == 0;
	CHECK(srv->running);
}

static inline void server_stop(struct server *srv)
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

static inline unsigned server_received(struct server *srv)
{
	unsigned n;

	pthread_mutex_lock(&srv->lock);
	n = srv->received;
	pthread_mutex_unlock(&srv->lock);
	return n;
}

static inline bool server_saw(struct server *srv, const char *run_id)
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

static inline bool interrupted(void)
{
	return atomic_load(&interrupt_flag);
}

static inline void record(void *data, const struct send_event_info *ev)
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

static inline int count_events(const struct event_log *l, enum send_event e)
{
	int n = 0;

	for (int i = 0; i < l->n; i++)
		n += l->ev[i].event == e;
	return n;
}

static inline struct spool *spool_new(const char *name)
{
	char err[SPOOL_ERR_LEN] = "";
	struct spool *s = spool_open(path_of("%s", name), 0, err);

	CHECK_(s != NULL, "spool_open: %s", err);
	return s;
}

/* Spools a small valid report; its run id goes to run_id. */
static inline void spool_report(struct spool *s, char run_id[37])
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

static inline int spooled(struct spool *s)
{
	_cleanup_free_ struct spool_entry *e = NULL;

	return spool_list(s, &e);
}

static inline struct send_opts opts_for(const char *const *endpoints, size_t n,
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
		.retry_wait_max_ms = 60000,
		.heartbeat_ms = 1000,
		.interrupted = interrupted,
		.event = record,
		.event_data = log,
	};
}

static char flush_err[SEND_ERR_LEN];

static inline int flush(struct spool *s, const struct send_opts *o,
			struct send_summary *sum)
{
	void *ctx = zmq_ctx_new();
	int r = send_flush(ctx, s, o, sum, flush_err);

	zmq_ctx_term(ctx);
	return r;
}

static inline char *read_text(const char *path)
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

static inline void scene_start(struct scene *sc, const char *spool, bool curve,
			       enum action then, size_t n,
			       const enum action *script, int reports)
{
	memset(sc, 0, sizeof(*sc));
	server_start(&sc->srv, curve, then, n, script);
	sc->s = spool_new(spool);
	sc->ep[0] = sc->srv.endpoint;
	for (int i = 0; i < reports; i++)
		spool_report(sc->s, sc->ids[i]);
	sc->o = opts_for(sc->ep, 1, &sc->log);
}

static inline void scene_stop(struct scene *sc)
{
	server_stop(&sc->srv);
	spool_close(sc->s);
}

/* Makes the test directory with the collector's key (server), an agent's
 * key in the allowlist (allow/agent) and a stranger's key outside it. */
static inline void send_test_setup(void)
{
	root = tree_new();
	CHECK_EQ_INT(mkdir(path_of("allow"), 0700), 0);
	CHECK_OK(link_keygen(root, "server", &server_kp));
	CHECK_OK(link_keygen(path_of("allow"), "agent", &agent_kp));
	CHECK_OK(link_keygen(root, "stranger", &stranger_kp));
}

/* Removes the test directory. */
static inline void send_test_teardown(void)
{
	tree_free(root);
	root = NULL;
}

#endif
