/* SPDX-License-Identifier: MIT */
/*
 * ZeroMQ transport with CURVE: the agent's DEALER and the collector's
 * ROUTER. Key files are link_keys.c, the allowlist link_allow.c, the ZAP
 * handler link_zap.c.
 */
#include "link_private.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "cleanup.h"

/* A DRAFT option in 4.3: zmq.h hides it, Debian's libzmq still honours it
 * (link_server_new checks that setsockopt succeeds). */
#ifndef ZMQ_ZAP_ENFORCE_DOMAIN
#define ZMQ_ZAP_ENFORCE_DOMAIN 93
#endif

#define LINK_HEARTBEAT_MAX_MS 600000
#define LINK_RECONNECT_MAX_MS 30000
#define LINK_ROUTER_RCVHWM 100 /* messages queued per agent */
#define LINK_ROUTER_BACKLOG 4096 /* connections waiting to be accepted */
/* ZMQ_MAXMSGSIZE counts the frame on the wire; CURVE wraps each payload in
 * a MESSAGE command: 8 bytes of name, an 8-byte nonce, a flags byte and a
 * 16-byte MAC. Adding them keeps max_msg_size about payload bytes. */
#define LINK_CURVE_OVERHEAD 33

void link_err_set(char *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(err, LINK_ERR_LEN, fmt, ap);
	va_end(ap);
}

/* ---- socket options shared by both ends ---- */

struct int_opt {
	int option;
	int value;
	const char *name;
};

#define INT_OPT(o, v) { o, v, #o }

/* Returns 0, or -errno with *ret_failed naming the option refused. */
static int set_int_opts(void *sock, const struct int_opt *opts, size_t n,
			const char **ret_failed)
{
	for (size_t i = 0; i < n; i++)
		if (zmq_setsockopt(sock, opts[i].option, &opts[i].value,
				   sizeof(int)) < 0) {
			*ret_failed = opts[i].name;
			return -errno;
		}
	return 0;
}

static int heartbeat_ivl(int ms)
{
	if (ms <= 0)
		return LINK_HEARTBEAT_DEFAULT_MS;
	return ms > LINK_HEARTBEAT_MAX_MS ? -1 : ms;
}

static int set_key(void *sock, int option, const char *z85, const char *name,
		   const char **ret_failed)
{
	if (zmq_setsockopt(sock, option, z85, LINK_KEY_LEN + 1) < 0) {
		*ret_failed = name;
		return -errno;
	}
	return 0;
}

/* ---- client ---- */

void *link_client_new(void *zctx, const struct link_client_opts *o)
{
	const char *failed = NULL;
	void *sock;
	int ivl, r;

	if (!zctx || !o || !o->endpoint ||
	    (ivl = heartbeat_ivl(o->heartbeat_ms)) < 0) {
		errno = EINVAL;
		return NULL;
	}
	if (o->server_public &&
	    (!o->keys || !link_key_valid(o->server_public) ||
	     !link_key_valid(o->keys->public_key) ||
	     !link_key_valid(o->keys->secret_key))) {
		errno = EINVAL;
		return NULL;
	}
	sock = zmq_socket(zctx, ZMQ_DEALER);
	if (!sock)
		return NULL;

	const struct int_opt opts[] = {
		INT_OPT(ZMQ_LINGER, 0),
		/* queue only on a finished handshake: a send with no
		 * collector reachable times out instead of piling up */
		INT_OPT(ZMQ_IMMEDIATE, 1),
		INT_OPT(ZMQ_HEARTBEAT_IVL, ivl),
		INT_OPT(ZMQ_HEARTBEAT_TIMEOUT, 3 * ivl),
		INT_OPT(ZMQ_HEARTBEAT_TTL, 3 * ivl),
		/* a refused agent backs off instead of knocking every 100 ms */
		INT_OPT(ZMQ_RECONNECT_IVL_MAX, LINK_RECONNECT_MAX_MS),
	};
	r = set_int_opts(sock, opts, ARRAY_SIZE(opts), &failed);
	if (r == 0 && o->server_public) {
		r = set_key(sock, ZMQ_CURVE_SERVERKEY, o->server_public,
			    "ZMQ_CURVE_SERVERKEY", &failed);
		if (r == 0)
			r = set_key(sock, ZMQ_CURVE_PUBLICKEY,
				    o->keys->public_key, "ZMQ_CURVE_PUBLICKEY",
				    &failed);
		if (r == 0)
			r = set_key(sock, ZMQ_CURVE_SECRETKEY,
				    o->keys->secret_key, "ZMQ_CURVE_SECRETKEY",
				    &failed);
	}
	if (r == 0 && zmq_connect(sock, o->endpoint) < 0)
		r = -errno;
	if (r < 0) {
		zmq_close(sock);
		errno = -r;
		return NULL;
	}
	return sock;
}

/* ---- server ---- */

struct link_server {
	void *router;
	struct link_zap *zap;
	struct link_guard guard; /* shared with the ZAP thread */
	char endpoint[256];
};

static int router_setup(struct link_server *s, const struct link_server_opts *o,
			int ivl, char *err)
{
	const int64_t max_msg =
		(o->max_msg_size > 0 ? o->max_msg_size : LINK_MAX_MSG_DEFAULT) +
		(o->keys ? LINK_CURVE_OVERHEAD : 0);
	const char *failed = NULL;
	size_t len = sizeof(s->endpoint);
	int r;

	const struct int_opt opts[] = {
		INT_OPT(ZMQ_LINGER, 0),
		/* a send to an agent that went away fails (EHOSTUNREACH)
		 * instead of vanishing silently */
		INT_OPT(ZMQ_ROUTER_MANDATORY, 1),
		INT_OPT(ZMQ_RCVHWM, LINK_ROUTER_RCVHWM),
		/* a herd connects faster than it is accepted: libzmq's 100
		 * overflows the listen queue, and a dropped SYN is tried again
		 * only 1, 3, 7 s later (the kernel caps it at somaxconn) */
		INT_OPT(ZMQ_BACKLOG, LINK_ROUTER_BACKLOG),
		INT_OPT(ZMQ_HEARTBEAT_IVL, ivl),
		INT_OPT(ZMQ_HEARTBEAT_TIMEOUT, 3 * ivl),
		INT_OPT(ZMQ_HEARTBEAT_TTL, 3 * ivl),
		/* no ZAP handler answering means no connection */
		INT_OPT(ZMQ_ZAP_ENFORCE_DOMAIN, 1),
	};
	r = set_int_opts(s->router, opts, ARRAY_SIZE(opts), &failed);
	if (r == 0 && zmq_setsockopt(s->router, ZMQ_MAXMSGSIZE, &max_msg,
				     sizeof(max_msg)) < 0) {
		r = -errno;
		failed = "ZMQ_MAXMSGSIZE";
	}
	if (r == 0 && zmq_setsockopt(s->router, ZMQ_ZAP_DOMAIN, LINK_ZAP_DOMAIN,
				     strlen(LINK_ZAP_DOMAIN)) < 0) {
		r = -errno;
		failed = "ZMQ_ZAP_DOMAIN";
	}
	if (r == 0 && o->keys) {
		const int one = 1;

		r = set_key(s->router, ZMQ_CURVE_SECRETKEY, o->keys->secret_key,
			    "ZMQ_CURVE_SECRETKEY", &failed);
		if (r == 0)
			r = set_key(s->router, ZMQ_CURVE_PUBLICKEY,
				    o->keys->public_key, "ZMQ_CURVE_PUBLICKEY",
				    &failed);
		if (r == 0 && zmq_setsockopt(s->router, ZMQ_CURVE_SERVER, &one,
					     sizeof(one)) < 0) {
			r = -errno;
			failed = "ZMQ_CURVE_SERVER";
		}
	}
	if (r < 0) {
		link_err_set(err, "cannot set %s on the ROUTER socket: %s",
			     failed, zmq_strerror(-r));
		return r;
	}
	if (zmq_bind(s->router, o->bind) < 0) {
		r = -errno;
		link_err_set(err, "cannot bind '%s': %s", o->bind,
			     zmq_strerror(-r));
		return r;
	}
	if (zmq_getsockopt(s->router, ZMQ_LAST_ENDPOINT, s->endpoint, &len) <
	    0) {
		r = -errno;
		link_err_set(err, "cannot read the endpoint bound for '%s': %s",
			     o->bind, zmq_strerror(-r));
		return r;
	}
	return 0;
}

/* Closes the ROUTER, then stops the ZAP thread; keeps the allowlist. */
static void server_stop(struct link_server *s)
{
	if (s->router)
		zmq_close(s->router);
	s->router = NULL;
	link_zap_stop(s->zap);
	s->zap = NULL;
}

struct link_server *link_server_new(void *zctx,
				    const struct link_server_opts *o,
				    char err[LINK_ERR_LEN])
{
	struct link_server *s;
	int ivl, r;

	if (!zctx || !o || !o->bind) {
		link_err_set(err, "no context or bind endpoint given");
		errno = EINVAL;
		return NULL;
	}
	if ((ivl = heartbeat_ivl(o->heartbeat_ms)) < 0) {
		link_err_set(err,
			     "heartbeat interval %d ms is out of range (1-%d)",
			     o->heartbeat_ms, LINK_HEARTBEAT_MAX_MS);
		errno = EINVAL;
		return NULL;
	}
	if (o->keys && (!link_key_valid(o->keys->public_key) ||
			!link_key_valid(o->keys->secret_key))) {
		link_err_set(err, "the server keypair is not two Z85 keys");
		errno = EINVAL;
		return NULL;
	}
	if (o->keys && !o->allowlist) {
		link_err_set(err, "CURVE needs an allowlist of agent keys");
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		link_err_set(err, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&s->guard.lock, NULL);
	s->guard.insecure = !o->keys;
	s->guard.log = o->log;
	s->guard.log_data = o->log_data;
	s->guard.allowlist = o->allowlist;

	/* RFC 27: the handler must be there before the socket it guards */
	s->zap = link_zap_start(zctx, &s->guard, err);
	if (!s->zap) {
		r = -errno;
		goto fail;
	}
	s->router = zmq_socket(zctx, ZMQ_ROUTER);
	if (!s->router) {
		r = -errno;
		link_err_set(err, "cannot create the ROUTER socket: %s",
			     zmq_strerror(-r));
		goto fail;
	}
	r = router_setup(s, o, ivl, err);
	if (r < 0)
		goto fail;
	return s;
fail:
	server_stop(s);
	s->guard.allowlist = NULL; /* still the caller's */
	link_server_free(s);
	errno = -r;
	return NULL;
}

void *link_server_socket(struct link_server *s)
{
	return s->router;
}

const char *link_server_endpoint(struct link_server *s)
{
	return s->endpoint;
}

void link_server_set_allowlist(struct link_server *s, struct link_allowlist *a)
{
	struct link_allowlist *old;

	if (!s) {
		link_allowlist_free(a);
		return;
	}
	pthread_mutex_lock(&s->guard.lock);
	old = s->guard.allowlist;
	s->guard.allowlist = a;
	pthread_mutex_unlock(&s->guard.lock);
	link_allowlist_free(old);
}

bool link_server_peer_allowed(struct link_server *s, const char *user_id)
{
	bool allowed;

	if (s->guard.insecure)
		return true;
	pthread_mutex_lock(&s->guard.lock);
	allowed = link_allowlist_has(s->guard.allowlist, user_id);
	pthread_mutex_unlock(&s->guard.lock);
	return allowed;
}

unsigned long link_server_refused(struct link_server *s)
{
	unsigned long n;

	pthread_mutex_lock(&s->guard.lock);
	n = s->guard.refused;
	pthread_mutex_unlock(&s->guard.lock);
	return n;
}

void link_server_free(struct link_server *s)
{
	if (!s)
		return;
	server_stop(s);
	link_allowlist_free(s->guard.allowlist);
	pthread_mutex_destroy(&s->guard.lock);
	free(s);
}
