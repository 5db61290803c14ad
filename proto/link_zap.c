/* SPDX-License-Identifier: MIT */
/*
 * The ZAP handler (RFC 27) guarding the collector's ROUTER, written by hand
 * rather than taken from czmq's zauth actor, which cannot keep what the
 * collector promises:
 * - zauth binds its handler in czmq's own global context (zsys_init), so
 *   it guards no socket of the context the caller passes in, and only one
 *   per process;
 * - it reports no decision to its caller (no refused key and address to
 *   log, no count of refusals), only zsys_info lines in VERBOSE mode;
 * - its CURVE policy is a certificate directory it reloads by itself on
 *   any change (no atomic swap on SIGHUP) and it ignores the ZAP domain;
 * - it asserts (aborts the collector) where this handler answers: a second
 *   handler in a context, a malformed request.
 */
#include "link_private.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define LINK_ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define LINK_ZAP_FRAMES 8 /* ZAP request frames kept; the rest are drained */

struct link_zap {
	struct link_guard *g;
	void *zap; /* REP at inproc://zeromq.zap.01, the thread's */
	void *zap_control; /* the thread's end of the stop pair */
	void *control; /* our end */
	pthread_t thread;
	bool thread_running;
	char control_endpoint[64];
};

static bool frame_is(zmq_msg_t *m, const char *s)
{
	size_t len = strlen(s);

	return zmq_msg_size(m) == len && !memcmp(zmq_msg_data(m), s, len);
}

static void frame_str(zmq_msg_t *m, char *out, size_t size)
{
	size_t len = zmq_msg_size(m);

	if (len >= size)
		len = size - 1;
	memcpy(out, zmq_msg_data(m), len);
	out[len] = '\0';
}

static int zap_send(void *sock, const void *data, size_t len, bool more)
{
	return zmq_send(sock, data, len, more ? ZMQ_SNDMORE : 0) < 0 ? -errno :
								       0;
}

/*
 * Answers one ZAP request (RFC 27): version, request id, domain, address,
 * identity, mechanism, credentials. 200 only for CURVE with an allowed
 * key, or NULL when the server runs plaintext; 400 for everything else.
 */
static int zap_handle(struct link_zap *z)
{
	struct link_guard *g = z->g;
	zmq_msg_t f[LINK_ZAP_FRAMES];
	char address[128] = "", mechanism[16] = "";
	char key[LINK_KEY_LEN + 1] = "";
	const char *status = "400", *text = "not allowed";
	bool accepted = false, has_key = false;
	int nf = 0, more = 1, r = 0;

	while (more) {
		zmq_msg_t drop;
		zmq_msg_t *m = nf < LINK_ZAP_FRAMES ? &f[nf] : &drop;

		zmq_msg_init(m);
		if (zmq_msg_recv(m, z->zap, 0) < 0) {
			r = -errno;
			zmq_msg_close(m);
			goto out;
		}
		more = zmq_msg_more(m);
		if (m == &drop)
			zmq_msg_close(m);
		else
			nf++;
	}

	if (nf < 6 || !frame_is(&f[0], "1.0")) {
		status = "500";
		text = "malformed ZAP request";
	} else {
		frame_str(&f[3], address, sizeof(address));
		frame_str(&f[5], mechanism, sizeof(mechanism));
		if (!frame_is(&f[2], LINK_ZAP_DOMAIN)) {
			text = "unknown ZAP domain";
		} else if (!strcmp(mechanism, "CURVE") && nf == 7 &&
			   zmq_msg_size(&f[6]) == LINK_KEY_BYTES) {
			zmq_z85_encode(key, zmq_msg_data(&f[6]),
				       LINK_KEY_BYTES);
			has_key = true;
			pthread_mutex_lock(&g->lock);
			accepted = !g->insecure &&
				   link_allowlist_has(g->allowlist, key);
			pthread_mutex_unlock(&g->lock);
			if (!accepted)
				text = "key not in the allowlist";
		} else if (!strcmp(mechanism, "NULL") && nf == 6) {
			accepted = g->insecure;
			if (!accepted)
				text = "plaintext not allowed";
		} else {
			text = "mechanism not allowed";
		}
	}
	if (accepted) {
		status = "200";
		text = "OK";
	} else {
		pthread_mutex_lock(&g->lock);
		g->refused++;
		pthread_mutex_unlock(&g->lock);
	}
	if (g->log)
		g->log(g->log_data, accepted, address, mechanism,
		       has_key ? key : NULL);

	/* The user id becomes the "User-Id" property of every message the
	 * peer sends, so the collector can tell agents apart. */
	r = zap_send(z->zap, "1.0", 3, true);
	if (r == 0)
		r = zap_send(z->zap, nf > 1 ? zmq_msg_data(&f[1]) : "",
			     nf > 1 ? zmq_msg_size(&f[1]) : 0, true);
	if (r == 0)
		r = zap_send(z->zap, status, 3, true);
	if (r == 0)
		r = zap_send(z->zap, text, strlen(text), true);
	if (r == 0)
		r = zap_send(z->zap, key, accepted ? strlen(key) : 0, true);
	if (r == 0)
		r = zap_send(z->zap, "", 0, false);
out:
	for (int i = 0; i < nf; i++)
		zmq_msg_close(&f[i]);
	return r;
}

/*
 * Closes the handler's sockets. The explicit unbind matters: zmq_close
 * leaves an inproc endpoint registered until the reaper gets to it, and
 * a bind racing that reports EADDRINUSE and can hang zmq_ctx_term.
 */
static void zap_close(struct link_zap *z)
{
	if (z->zap) {
		zmq_unbind(z->zap, LINK_ZAP_ENDPOINT);
		zmq_close(z->zap);
	}
	if (z->zap_control)
		zmq_close(z->zap_control);
	z->zap = z->zap_control = NULL;
}

static void *zap_thread(void *arg)
{
	struct link_zap *z = arg;

	for (;;) {
		zmq_pollitem_t items[] = {
			{z->zap_control, 0, ZMQ_POLLIN, 0},
			{z->zap, 0, ZMQ_POLLIN, 0},
		};

		if (zmq_poll(items, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break; /* ETERM: the context is going away */
		}
		if (items[0].revents & ZMQ_POLLIN)
			break; /* link_zap_stop */
		/* A malformed request is answered, not an error. Only a
		 * dying context (or a broken REP state) fails here; then
		 * the handler goes, and with ZAP_ENFORCE_DOMAIN every new
		 * handshake is refused: it fails closed. */
		if ((items[1].revents & ZMQ_POLLIN) && zap_handle(z) < 0)
			break;
	}
	zap_close(z);
	return NULL;
}

/* Binds the handler and its stop pair, then starts the thread with every
 * signal blocked, so SIGHUP and SIGTERM reach the main loop only. */
static int zap_open(struct link_zap *z, void *zctx, char *err)
{
	static atomic_ulong serial;
	const int zero = 0;
	const char *control = z->control_endpoint;
	sigset_t all, old;
	int r;

	snprintf(z->control_endpoint, sizeof(z->control_endpoint),
		 "inproc://fleetbench-zap-stop-%lu",
		 atomic_fetch_add(&serial, 1));
	z->zap = zmq_socket(zctx, ZMQ_REP);
	z->zap_control = zmq_socket(zctx, ZMQ_PAIR);
	z->control = zmq_socket(zctx, ZMQ_PAIR);
	if (!z->zap || !z->zap_control || !z->control) {
		r = -errno;
		link_err_set(err, "cannot create the ZAP handler sockets: %s",
			     zmq_strerror(-r));
		return r;
	}
	zmq_setsockopt(z->zap, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_setsockopt(z->zap_control, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_setsockopt(z->control, ZMQ_LINGER, &zero, sizeof(zero));
	if (zmq_bind(z->zap, LINK_ZAP_ENDPOINT) < 0) {
		r = -errno;
		if (r == -EADDRINUSE)
			link_err_set(err,
				     "a ZAP handler is already bound at '%s' "
				     "in this context",
				     LINK_ZAP_ENDPOINT);
		else
			link_err_set(err,
				     "cannot bind the ZAP handler '%s': %s",
				     LINK_ZAP_ENDPOINT, zmq_strerror(-r));
		return r;
	}
	if (zmq_bind(z->control, control) < 0 ||
	    zmq_connect(z->zap_control, control) < 0) {
		r = -errno;
		link_err_set(err, "cannot bind '%s': %s", control,
			     zmq_strerror(-r));
		return r;
	}

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&z->thread, NULL, zap_thread, z);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0) {
		link_err_set(err, "cannot start the ZAP handler thread: %s",
			     strerror(-r));
		return r;
	}
	z->thread_running = true;
	return 0;
}

struct link_zap *link_zap_start(void *zctx, struct link_guard *g,
				char err[LINK_ERR_LEN])
{
	struct link_zap *z = calloc(1, sizeof(*z));
	int r;

	if (!z) {
		link_err_set(err, "out of memory");
		return NULL;
	}
	z->g = g;
	r = zap_open(z, zctx, err);
	if (r < 0) {
		link_zap_stop(z);
		errno = -r;
		return NULL;
	}
	return z;
}

void link_zap_stop(struct link_zap *z)
{
	if (!z)
		return;
	if (z->thread_running) {
		/* DONTWAIT: a thread that already left has no pipe to fill */
		zmq_send(z->control, "", 0, ZMQ_DONTWAIT);
		pthread_join(z->thread, NULL);
	} else {
		zap_close(z);
	}
	if (z->control) {
		zmq_unbind(z->control, z->control_endpoint);
		zmq_close(z->control);
	}
	free(z);
}
