/* SPDX-License-Identifier: MIT */
/* The CURVE link over real sockets on 127.0.0.1: ZAP admission, refusals,
 * the allowlist swap, failing closed (key files: test_link_keys.c). */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "check.h"
#include "cleanup.h"
#include "link.h"
#include "link_test.h"

#ifndef ZMQ_ZAP_ENFORCE_DOMAIN
#define ZMQ_ZAP_ENFORCE_DOMAIN 93
#endif

#define BIND "tcp://127.0.0.1:*"
#define WAIT_OK_MS 5000 /* for what must happen */
#define WAIT_NONE_MS 1000 /* for what must not */
#define SEND_REFUSED_MS 500

/* Every ZAP decision the server reports. */
struct auth_event {
	bool accepted;
	char address[64], mechanism[16], key[LINK_KEY_LEN + 1];
};

struct auth_log {
	pthread_mutex_t lock;
	struct auth_event ev[512];
	int n;
};

static void auth_log_cb(void *data, bool accepted, const char *address,
			const char *mechanism, const char *key)
{
	struct auth_log *l = data;

	pthread_mutex_lock(&l->lock);
	if (l->n < (int)ARRAY_SIZE(l->ev)) {
		struct auth_event *e = &l->ev[l->n++];

		e->accepted = accepted;
		snprintf(e->address, sizeof(e->address), "%s", address);
		snprintf(e->mechanism, sizeof(e->mechanism), "%s", mechanism);
		snprintf(e->key, sizeof(e->key), "%s", key ? key : "");
	}
	pthread_mutex_unlock(&l->lock);
}

/* Events for this mechanism and key ("" for none), accepted or not;
 * *ret_address gets the last one's peer address. */
static int auth_count(struct auth_log *l, const char *mech, const char *key,
		      bool accepted, char *ret_address)
{
	int n = 0;

	pthread_mutex_lock(&l->lock);
	for (int i = 0; i < l->n; i++) {
		struct auth_event *e = &l->ev[i];

		if (e->accepted == accepted && !strcmp(e->mechanism, mech) &&
		    !strcmp(e->key, key)) {
			n++;
			if (ret_address)
				strcpy(ret_address, e->address);
		}
	}
	pthread_mutex_unlock(&l->lock);
	return n;
}

static int auth_total(struct auth_log *l)
{
	int n;

	pthread_mutex_lock(&l->lock);
	n = l->n;
	pthread_mutex_unlock(&l->lock);
	return n;
}

static bool auth_wait(struct auth_log *l, const char *mech, const char *key,
		      bool accepted, char *ret_address)
{
	for (int t = 0; t < WAIT_OK_MS; t += 10) {
		if (auth_count(l, mech, key, accepted, ret_address))
			return true;
		usleep(10000);
	}
	return false;
}

/* One server in its own context, with a monitor on its ROUTER. */
struct fixture {
	void *ctx;
	struct link_server *s;
	void *mon;
	struct auth_log log;
};

static void *monitor_new(void *ctx, void *sock, const char *name)
{
	const int zero = 0;
	char ep[64];
	void *mon;

	snprintf(ep, sizeof(ep), "inproc://monitor-%s-%p", name, sock);
	CHECK_EQ_INT(
		zmq_socket_monitor(sock, ep,
				   ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
					   ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
					   ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
					   ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
					   ZMQ_EVENT_DISCONNECTED),
		0);
	mon = zmq_socket(ctx, ZMQ_PAIR);
	zmq_setsockopt(mon, ZMQ_LINGER, &zero, sizeof(zero));
	CHECK_EQ_INT(zmq_connect(mon, ep), 0);
	return mon;
}

/* Waits for one monitor event of this type; returns its value or -1. */
static long monitor_wait(void *mon, int event, int ms)
{
	for (;;) {
		zmq_pollitem_t it = { mon, 0, ZMQ_POLLIN, 0 };
		uint8_t head[6];
		char ep[256];
		uint16_t ev;
		uint32_t value;
		int n;

		if (zmq_poll(&it, 1, ms) <= 0)
			return -1;
		n = zmq_recv(mon, head, sizeof(head), 0);
		zmq_recv(mon, ep, sizeof(ep), 0);
		if (n != 6)
			return -1;
		memcpy(&ev, head, 2);
		memcpy(&value, head + 2, 4);
		if (ev == event)
			return value;
	}
}

static void fixture_start(struct fixture *f,
			  const struct link_server_opts *base)
{
	struct link_server_opts o = *base;
	char err[LINK_ERR_LEN] = "";

	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->log.lock, NULL);
	f->ctx = zmq_ctx_new();
	o.bind = BIND;
	o.log = auth_log_cb;
	o.log_data = &f->log;
	f->s = link_server_new(f->ctx, &o, err);
	CHECK_(f->s != NULL, "link_server_new: %s", err);
	if (f->s)
		f->mon = monitor_new(f->ctx, link_server_socket(f->s), "srv");
	else
		link_allowlist_free(o.allowlist); /* still ours */
}

/* A CURVE server admitting agents a and b; max_msg_size 0: default. */
static bool curve_start(struct fixture *f, int max_msg_size)
{
	struct link_server_opts o = {
		.keys = &server_kp,
		.allowlist = allowlist_of(path_of("agents")),
		.max_msg_size = max_msg_size,
	};

	fixture_start(f, &o);
	return f->s != NULL;
}

static void fixture_stop(struct fixture *f)
{
	if (f->mon)
		zmq_close(f->mon);
	link_server_free(f->s);
	zmq_ctx_term(f->ctx);
	pthread_mutex_destroy(&f->log.lock);
}

/* A CURVE client with kp, trusting server_public; NULL kp: plaintext. */
static void *client(void *ctx, const char *endpoint,
		    const struct link_keypair *kp, const char *server_public)
{
	struct link_client_opts o = {
		.endpoint = endpoint,
		.server_public = kp ? server_public : NULL,
		.keys = kp,
		.heartbeat_ms = 1000,
	};
	void *c = link_client_new(ctx, &o);

	CHECK_(c != NULL, "link_client_new: %s", zmq_strerror(errno));
	return c;
}

static int send_within(void *sock, const void *data, size_t len, int ms)
{
	zmq_setsockopt(sock, ZMQ_SNDTIMEO, &ms, sizeof(ms));
	return zmq_send(sock, data, len, 0) < 0 ? -errno : 0;
}

/*
 * Receives one [routing id, payload] message within ms. Returns the
 * payload size (copied to buf), or -1 when nothing came. The routing id
 * goes to id, the payload's "User-Id" to user_id.
 */
struct delivery {
	char id[256];
	size_t id_len;
	char user_id[LINK_KEY_LEN + 1];
	int frames;
};

static long recv_within(void *router, char *buf, size_t size, int ms,
			struct delivery *d)
{
	zmq_pollitem_t it = { router, 0, ZMQ_POLLIN, 0 };
	long len = -1;
	int more = 1;

	memset(d, 0, sizeof(*d));
	if (zmq_poll(&it, 1, ms) <= 0)
		return -1;
	while (more) {
		zmq_msg_t m;
		const char *uid;

		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, router, 0) < 0) {
			zmq_msg_close(&m);
			return -1;
		}
		more = zmq_msg_more(&m);
		if (d->frames++ == 0) {
			d->id_len = zmq_msg_size(&m) < sizeof(d->id) ?
					    zmq_msg_size(&m) :
					    sizeof(d->id);
			memcpy(d->id, zmq_msg_data(&m), d->id_len);
		} else {
			len = (long)zmq_msg_size(&m);
			memcpy(buf, zmq_msg_data(&m),
			       (size_t)len < size ? (size_t)len : size);
			uid = zmq_msg_gets(&m, "User-Id");
			snprintf(d->user_id, sizeof(d->user_id), "%s",
				 uid ? uid : "");
		}
		zmq_msg_close(&m);
	}
	return len;
}

/* The client's message must arrive; returns what arrived. */
static bool delivered(void *router, void *c, const char *text,
		      struct delivery *d)
{
	size_t len = strlen(text);
	_cleanup_free_ char *buf = calloc(1, len + 1);
	long n;

	CHECK_OK(send_within(c, text, len, WAIT_OK_MS));
	n = recv_within(router, buf, len, WAIT_OK_MS, d);
	CHECK_EQ_INT(n, (long)len);
	CHECK_EQ_STR(buf, text);
	return n == (long)len && !strcmp(buf, text);
}

/* Nothing from this client gets through: a send cannot complete (no
 * handshake finished, ZMQ_IMMEDIATE) and the ROUTER receives nothing. */
static void refused(void *router, void *c)
{
	char buf[64];
	struct delivery d;

	CHECK_EQ_INT(send_within(c, "let me in", 9, SEND_REFUSED_MS), -EAGAIN);
	CHECK_EQ_INT(recv_within(router, buf, sizeof(buf), WAIT_NONE_MS, &d),
		     -1);
}

static void close_socket(void *s)
{
	if (s)
		zmq_close(s);
}

/* ---- keys ---- */

/* ---- the server ---- */

static void test_allowed_and_reply(void)
{
	struct fixture f;
	struct delivery d;
	char buf[64] = "", address[64] = "";
	int v = -1;
	size_t vlen = sizeof(v);
	void *c;

	if (!curve_start(&f, 0)) {
		fixture_stop(&f);
		return;
	}
	CHECK(!strncmp(link_server_endpoint(f.s), "tcp://127.0.0.1:", 16));
	c = client(f.ctx, link_server_endpoint(f.s), &a_kp,
		   server_kp.public_key);
	zmq_getsockopt(c, ZMQ_HEARTBEAT_IVL, &v, &vlen);
	CHECK_EQ_INT(v, 1000);

	/* the message arrives, tagged with the agent's key */
	if (delivered(link_server_socket(f.s), c, "report", &d)) {
		CHECK_EQ_INT(d.frames, 2);
		CHECK_EQ_STR(d.user_id, a_kp.public_key);
		CHECK(link_server_peer_allowed(f.s, d.user_id));
		/* and the reply comes back */
		CHECK_EQ_INT(zmq_send(link_server_socket(f.s), d.id, d.id_len,
				      ZMQ_SNDMORE),
			     (int)d.id_len);
		CHECK_EQ_INT(zmq_send(link_server_socket(f.s), "ack", 3, 0), 3);
		zmq_setsockopt(c, ZMQ_RCVTIMEO, &(int){ WAIT_OK_MS },
			       sizeof(int));
		CHECK_EQ_INT(zmq_recv(c, buf, sizeof(buf), 0), 3);
		CHECK_EQ_STR(buf, "ack");
	}
	/* the acceptance is logged with address and key */
	CHECK(auth_wait(&f.log, "CURVE", a_kp.public_key, true, address));
	CHECK_EQ_STR(address, "127.0.0.1");
	CHECK_EQ_INT(link_server_refused(f.s), 0);
	CHECK(!link_server_peer_allowed(f.s, c_kp.public_key));
	CHECK(!link_server_peer_allowed(f.s, NULL));

	/* ROUTER_MANDATORY: a reply to an unknown peer is an error */
	CHECK_EQ_INT(
		zmq_send(link_server_socket(f.s), "nobody", 6, ZMQ_SNDMORE),
		-1);
	CHECK_EQ_INT(errno, EHOSTUNREACH);
	close_socket(c);
	fixture_stop(&f);
}

/*
 * A client with kp (NULL: plaintext) trusting server_public gets nothing
 * through; returns the value of the monitor event the server reports.
 */
static long refused_with(struct fixture *f, const struct link_keypair *kp,
			 const char *server_public, int event)
{
	void *c = client(f->ctx, link_server_endpoint(f->s), kp, server_public);
	long value;

	refused(link_server_socket(f->s), c);
	value = monitor_wait(f->mon, event, WAIT_OK_MS);
	close_socket(c);
	return value;
}

static void test_refusals(void)
{
	struct fixture f;
	char address[64] = "";

	/* an unknown key: ZAP refuses it (400), logged with the key */
	if (curve_start(&f, 0)) {
		CHECK_EQ_INT(refused_with(&f, &c_kp, server_kp.public_key,
					  ZMQ_EVENT_HANDSHAKE_FAILED_AUTH),
			     400);
		CHECK(auth_wait(&f.log, "CURVE", c_kp.public_key, false,
				address));
		CHECK_EQ_STR(address, "127.0.0.1");
		CHECK(link_server_refused(f.s) >= 1);
		CHECK_EQ_INT(auth_count(&f.log, "CURVE", c_kp.public_key, true,
					NULL),
			     0);
	}
	fixture_stop(&f);

	/* a plaintext client: NULL against CURVE is a mechanism mismatch
	 * in the greeting, dropped before any ZAP request: nothing logged */
	if (curve_start(&f, 0)) {
		CHECK(refused_with(&f, NULL, NULL,
				   ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) >= 0);
		CHECK_EQ_INT(auth_total(&f.log), 0);
	}
	fixture_stop(&f);

	/* an allowed agent key trusting another server key: the server
	 * cannot open its HELLO, so the handshake fails before ZAP and the
	 * server never learns who it was */
	if (curve_start(&f, 0)) {
		CHECK_EQ_INT(refused_with(&f, &a_kp, c_kp.public_key,
					  ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL),
			     ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC);
		CHECK_EQ_INT(auth_total(&f.log), 0);
		CHECK_EQ_INT(link_server_refused(f.s), 0);
	}
	fixture_stop(&f);
}

static void test_allowlist_swap(void)
{
	struct fixture f;
	struct delivery d;
	char text[128];
	void *a1, *b1, *a2, *b2;

	if (!curve_start(&f, 0)) {
		fixture_stop(&f);
		return;
	}
	a1 = client(f.ctx, link_server_endpoint(f.s), &a_kp,
		    server_kp.public_key);
	b1 = client(f.ctx, link_server_endpoint(f.s), &b_kp,
		    server_kp.public_key);
	delivered(link_server_socket(f.s), a1, "a1 before", &d);
	delivered(link_server_socket(f.s), b1, "b1 before", &d);

	/* SIGHUP: the new list holds only b */
	snprintf(text, sizeof(text), "%s\n", b_kp.public_key);
	write_text(path_of("only-b.txt"), text, 0644);
	link_server_set_allowlist(f.s, allowlist_of(path_of("only-b.txt")));

	/* a new connection with a's key is refused and logged */
	a2 = client(f.ctx, link_server_endpoint(f.s), &a_kp,
		    server_kp.public_key);
	refused(link_server_socket(f.s), a2);
	CHECK(auth_wait(&f.log, "CURVE", a_kp.public_key, false, NULL));
	CHECK(link_server_refused(f.s) >= 1);

	/* b still works, on a new connection and on the old one */
	b2 = client(f.ctx, link_server_endpoint(f.s), &b_kp,
		    server_kp.public_key);
	if (delivered(link_server_socket(f.s), b2, "b2 after", &d))
		CHECK(link_server_peer_allowed(f.s, d.user_id));
	if (delivered(link_server_socket(f.s), b1, "b1 after", &d))
		CHECK(link_server_peer_allowed(f.s, d.user_id));

	/* a's old connection outlives the swap (CURVE does not handshake
	 * again), which is why the collector checks every message */
	if (delivered(link_server_socket(f.s), a1, "a1 after", &d)) {
		CHECK_EQ_STR(d.user_id, a_kp.public_key);
		CHECK(!link_server_peer_allowed(f.s, d.user_id));
	}
	close_socket(a1);
	close_socket(b1);
	close_socket(a2);
	close_socket(b2);
	fixture_stop(&f);
}

/* A bare CURVE ROUTER in ctx, with or without ZAP_ENFORCE_DOMAIN. */
static void *bare_curve_router(void *ctx, int enforce, char *endpoint,
			       size_t len)
{
	const int zero = 0, one = 1;
	void *r = zmq_socket(ctx, ZMQ_ROUTER);

	zmq_setsockopt(r, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_setsockopt(r, ZMQ_CURVE_SECRETKEY, server_kp.secret_key,
		       LINK_KEY_LEN + 1);
	zmq_setsockopt(r, ZMQ_CURVE_SERVER, &one, sizeof(one));
	zmq_setsockopt(r, ZMQ_ZAP_DOMAIN, LINK_ZAP_DOMAIN,
		       strlen(LINK_ZAP_DOMAIN));
	CHECK_EQ_INT(zmq_setsockopt(r, ZMQ_ZAP_ENFORCE_DOMAIN, &enforce,
				    sizeof(enforce)),
		     0);
	CHECK_EQ_INT(zmq_bind(r, BIND), 0);
	zmq_getsockopt(r, ZMQ_LAST_ENDPOINT, endpoint, &len);
	return r;
}

static void test_fail_closed(void)
{
	struct fixture f;
	struct delivery d;
	char ep[256], domain[64] = "";
	int v = -1;
	int64_t v64 = -1;
	size_t len;
	void *ctx, *r, *mon, *c;

	/* the server's socket carries the options */
	if (curve_start(&f, 12345)) {
		void *s = link_server_socket(f.s);

		len = sizeof(v);
		CHECK_EQ_INT(
			zmq_getsockopt(s, ZMQ_ZAP_ENFORCE_DOMAIN, &v, &len), 0);
		CHECK_EQ_INT(v, 1);
		len = sizeof(domain);
		zmq_getsockopt(s, ZMQ_ZAP_DOMAIN, domain, &len);
		CHECK_EQ_STR(domain, LINK_ZAP_DOMAIN);
		len = sizeof(v);
		zmq_getsockopt(s, ZMQ_CURVE_SERVER, &v, &len);
		CHECK_EQ_INT(v, 1);
		len = sizeof(v64);
		zmq_getsockopt(s, ZMQ_MAXMSGSIZE, &v64, &len);
		CHECK_EQ_INT(v64, 12345 + 33); /* plus CURVE's framing */
		len = sizeof(v);
		zmq_getsockopt(s, ZMQ_LINGER, &v, &len);
		CHECK_EQ_INT(v, 0);
		len = sizeof(v);
		zmq_getsockopt(s, ZMQ_HEARTBEAT_IVL, &v, &len);
		CHECK_EQ_INT(v, LINK_HEARTBEAT_DEFAULT_MS);
	}
	fixture_stop(&f);

	/*
	 * What the option buys: in a context with no ZAP handler, a CURVE
	 * server with ZAP_ENFORCE_DOMAIN refuses even an agent holding the
	 * right server key (HANDSHAKE_FAILED_NO_DETAIL, EFAULT)...
	 */
	ctx = zmq_ctx_new();
	r = bare_curve_router(ctx, 1, ep, sizeof(ep));
	mon = monitor_new(ctx, r, "bare");
	c = client(ctx, ep, &a_kp, server_kp.public_key);
	refused(r, c);
	CHECK_EQ_INT(monitor_wait(mon, ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL,
				  WAIT_OK_MS),
		     EFAULT);
	close_socket(c);
	close_socket(mon);
	close_socket(r);

	/* ...while without it libzmq lets anyone with the server key in
	 * (encryption without authentication) */
	r = bare_curve_router(ctx, 0, ep, sizeof(ep));
	c = client(ctx, ep, &c_kp, server_kp.public_key);
	delivered(r, c, "anyone", &d);
	close_socket(c);
	close_socket(r);
	zmq_ctx_term(ctx);
}

static void test_max_msg_size(void)
{
	char over[1025], at_limit[1025];
	struct fixture f;
	struct delivery d;
	void *c, *c2;

	if (!curve_start(&f, 1024)) {
		fixture_stop(&f);
		return;
	}
	c = client(f.ctx, link_server_endpoint(f.s), &a_kp,
		   server_kp.public_key);
	delivered(link_server_socket(f.s), c, "small first", &d);

	/* one byte over drops the connection and is never delivered */
	memset(over, 'x', sizeof(over));
	CHECK_OK(send_within(c, over, sizeof(over), WAIT_OK_MS));
	CHECK_EQ_INT(recv_within(link_server_socket(f.s), over, sizeof(over),
				 WAIT_NONE_MS, &d),
		     -1);
	CHECK(monitor_wait(f.mon, ZMQ_EVENT_DISCONNECTED, WAIT_OK_MS) >= 0);

	/* the server keeps serving, up to the limit itself */
	c2 = client(f.ctx, link_server_endpoint(f.s), &b_kp,
		    server_kp.public_key);
	memset(at_limit, 'y', sizeof(at_limit) - 1);
	at_limit[sizeof(at_limit) - 1] = '\0';
	delivered(link_server_socket(f.s), c2, at_limit, &d);
	close_socket(c);
	close_socket(c2);
	fixture_stop(&f);
}

static void test_plaintext_server(void)
{
	struct link_server_opts o = { .keys = NULL, .allowlist = NULL };
	struct fixture f;
	struct delivery d;
	char address[64] = "";
	void *c;

	fixture_start(&f, &o);
	if (!f.s)
		return;
	/* --insecure: NULL is accepted through ZAP and logged */
	c = client(f.ctx, link_server_endpoint(f.s), NULL, NULL);
	if (delivered(link_server_socket(f.s), c, "plain", &d)) {
		CHECK_EQ_STR(d.user_id, "");
		CHECK(link_server_peer_allowed(f.s, NULL));
	}
	CHECK(auth_wait(&f.log, "NULL", "", true, address));
	CHECK_EQ_STR(address, "127.0.0.1");
	close_socket(c);

	/* a CURVE client does not match a plaintext server */
	c = client(f.ctx, link_server_endpoint(f.s), &a_kp,
		   server_kp.public_key);
	refused(link_server_socket(f.s), c);
	close_socket(c);
	fixture_stop(&f);
}

static void test_server_errors(void)
{
	struct link_server_opts o = {
		.bind = BIND,
		.keys = &server_kp,
		.allowlist = allowlist_of(path_of("agents")),
	};
	struct link_allowlist *a = o.allowlist;
	char err[LINK_ERR_LEN] = "";
	struct link_server *s, *s2;
	void *ctx = zmq_ctx_new();

	/* CURVE without an allowlist */
	o.allowlist = NULL;
	errno = 0;
	CHECK(link_server_new(ctx, &o, err) == NULL);
	CHECK_EQ_INT(errno, EINVAL);
	CHECK_(strstr(err, "allowlist") != NULL, "err \"%s\"", err);

	/* a bad endpoint is named; the allowlist stays ours */
	o.allowlist = a;
	o.bind = "tcp://127.0.0.1:notaport";
	CHECK(link_server_new(ctx, &o, err) == NULL);
	CHECK_(strstr(err, "cannot bind 'tcp://127.0.0.1:notaport'") != NULL,
	       "err \"%s\"", err);
	CHECK_EQ_INT(link_allowlist_count(a), 2);

	/* one ZAP handler per context */
	o.bind = BIND;
	s = link_server_new(ctx, &o, err);
	CHECK_(s != NULL, "link_server_new: %s", err);
	o.allowlist = allowlist_of(path_of("agents"));
	errno = 0;
	s2 = link_server_new(ctx, &o, err);
	CHECK(s2 == NULL);
	CHECK_EQ_INT(errno, EADDRINUSE);
	CHECK_(strstr(err, "ZAP handler is already bound") != NULL,
	       "err \"%s\"", err);
	link_allowlist_free(o.allowlist);
	if (!s)
		link_allowlist_free(a);
	link_server_free(s);
	link_server_free(NULL);

	/* clients check their keys */
	struct link_client_opts co = {
		.endpoint = "tcp://127.0.0.1:1",
		.server_public = "too short",
		.keys = &a_kp,
	};
	errno = 0;
	CHECK(link_client_new(ctx, &co) == NULL);
	CHECK_EQ_INT(errno, EINVAL);
	co.server_public = server_kp.public_key;
	co.keys = NULL;
	CHECK(link_client_new(ctx, &co) == NULL);
	CHECK_EQ_INT(errno, EINVAL);
	zmq_ctx_term(ctx);
}
int main(void)
{
	int r = link_test_setup();

	if (r)
		return r;
	test_allowed_and_reply();
	test_refusals();
	test_allowlist_swap();
	test_fail_closed();
	test_max_msg_size();
	test_plaintext_server();
	test_server_errors();
	return link_test_finish();
}
