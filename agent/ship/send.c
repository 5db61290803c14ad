/* SPDX-License-Identifier: MIT */
/* Flushing the spool to the collector: Lazy Pirate over DEALER (send.h). */
#include "send.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "cleanup.h"
#include "clock.h"
#include "codec.h"
#include "fault.h"
#include "rand.h"

/* Longest wait between two interrupted() checks. */
#define SLICE_MS 250

struct sender {
	void *zctx;
	const struct send_opts *o;
	struct send_summary *sum;
	char *err;
	void *sock; /* connected to endpoints[ep], or NULL */
	size_t ep;
	bool direct; /* endpoints[ep] takes no offers: send reports at once */
	bool returning; /* the report comes back after a retry-after hint */
	struct rng rng;
};

/* What the collector said about one report. */
struct answer {
	Fleetbench__Ack__Status status;
	char reason[CODEC_MAX_REASON + 1];
	uint32_t retry_after_ms; /* with RETRY_LATER: the hint, 0: none */
};

static int fail(char *err, int r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, SEND_ERR_LEN, fmt, ap);
	va_end(ap);
	return r;
}

static void emit_info(struct sender *sd, struct send_event_info *info)
{
	info->endpoint = sd->o->endpoints[sd->ep];
	if (sd->o->event)
		sd->o->event(sd->o->event_data, info);
}

static void emit(struct sender *sd, enum send_event ev, const char *run_id,
		 const char *detail, long delay_ms, unsigned attempt)
{
	emit_info(sd, &(struct send_event_info){
			      .event = ev,
			      .run_id = run_id,
			      .detail = detail,
			      .delay_ms = delay_ms,
			      .attempt = attempt,
		      });
}

static bool interrupted(struct sender *sd)
{
	return sd->o->interrupted && sd->o->interrupted();
}

static void disconnect(struct sender *sd)
{
	if (sd->sock)
		zmq_close(sd->sock); /* linger 0: the unanswered send is dropped */
	sd->sock = NULL;
}

static int connect_endpoint(struct sender *sd)
{
	const struct link_client_opts lo = {
		.endpoint = sd->o->endpoints[sd->ep],
		.server_public = sd->o->server_public,
		.keys = sd->o->keys,
		.heartbeat_ms = sd->o->heartbeat_ms,
	};

	sd->sock = link_client_new(sd->zctx, &lo);
	if (!sd->sock)
		return fail(sd->err, -errno, "cannot connect to '%s': %s",
			    lo.endpoint, strerror(errno));
	return 0;
}

/*
 * Waits for events on the socket until the deadline, in slices so an
 * interrupt is noticed. 1: ready, 0: deadline passed, -EINTR, -errno.
 */
static int wait_for(struct sender *sd, short events, int64_t deadline)
{
	for (;;) {
		zmq_pollitem_t it = { sd->sock, 0, events, 0 };
		int64_t left = deadline - mono_ms();
		int n;

		if (interrupted(sd))
			return -EINTR;
		if (left <= 0)
			return 0;
		n = zmq_poll(&it, 1, left < SLICE_MS ? (long)left : SLICE_MS);
		if (n < 0 && errno != EINTR)
			return fail(sd->err, -errno, "zmq_poll: %s",
				    strerror(errno));
		if (n > 0 && (it.revents & events))
			return 1;
	}
}

/* Receives one message into *ret: 1 when it was a single frame, -EBADMSG
 * for more (drained), 0 when there was none after all, or -errno. */
static int recv_frame(struct sender *sd, zmq_msg_t *ret)
{
	bool single = true;
	int more;
	size_t more_len = sizeof(more);

	if (zmq_msg_recv(ret, sd->sock, ZMQ_DONTWAIT) < 0)
		return errno == EAGAIN ? 0 :
					 fail(sd->err, -errno, "zmq_msg_recv: %s",
					      strerror(errno));
	/* an Ack is one frame: drain and ignore anything longer */
	for (;;) {
		zmq_msg_t part;

		if (zmq_getsockopt(sd->sock, ZMQ_RCVMORE, &more, &more_len) < 0 ||
		    !more)
			break;
		single = false;
		zmq_msg_init(&part);
		if (zmq_msg_recv(&part, sd->sock, 0) < 0) {
			zmq_msg_close(&part);
			break;
		}
		zmq_msg_close(&part);
	}
	return single ? 1 : -EBADMSG;
}

/* Whether ack answers the report run_id, or its offer (see send.h). */
static const char *ack_mismatch(const Fleetbench__Ack *ack, const char *run_id,
				bool offer)
{
	if (offer && (ack->status == FLEETBENCH__ACK__STATUS__COMMITTED ||
		      ack->status == FLEETBENCH__ACK__STATUS__DUPLICATE))
		return "a COMMITTED or DUPLICATE for a report not sent yet";
	if (!offer && ack->status == FLEETBENCH__ACK__STATUS__GRANTED)
		return "a GRANTED for a report already sent";
	if (!strcmp(ack->run_id, run_id))
		return NULL;
	if (!*ack->run_id &&
	    (ack->status == FLEETBENCH__ACK__STATUS__REJECTED ||
	     ack->status == FLEETBENCH__ACK__STATUS__RETRY_LATER))
		return NULL;
	return *ack->run_id ?
		       "an Ack for another run id" :
		       "an Ack without a run id that is neither REJECTED nor RETRY_LATER";
}

/*
 * Reads what arrived until an Ack answers run_id (its offer when offer is
 * true). 1 with *ret filled, 0 when nothing answered by the deadline, or
 * -errno.
 */
static int await_ack(struct sender *sd, const char *run_id, bool offer,
		     int64_t deadline, struct answer *ret)
{
	for (;;) {
		Fleetbench__Ack *ack = NULL;
		const char *why;
		zmq_msg_t msg;
		int r = wait_for(sd, ZMQ_POLLIN, deadline);

		if (r <= 0)
			return r;
		zmq_msg_init(&msg);
		r = recv_frame(sd, &msg);
		if (r == 1 &&
		    codec_unpack_ack(zmq_msg_data(&msg), zmq_msg_size(&msg),
				     &ack) < 0)
			r = -EBADMSG;
		zmq_msg_close(&msg);
		if (r == -EBADMSG) {
			emit(sd, SEND_ACK_IGNORED, run_id, "not an Ack", 0, 0);
			continue;
		}
		if (r < 0)
			return r;
		if (r == 0) /* woken, yet nothing to read */
			continue;
		why = ack_mismatch(ack, run_id, offer);
		if (why) {
			emit(sd, SEND_ACK_IGNORED, run_id, why, 0, 0);
			codec_free_ack(ack);
			continue;
		}
		ret->status = ack->status;
		snprintf(ret->reason, sizeof(ret->reason), "%s",
			 ack->reason ? ack->reason : "");
		ret->retry_after_ms = ack->has_retry_after_ms ?
					      ack->retry_after_ms :
					      0;
		codec_free_ack(ack);
		return 1;
	}
}

/*
 * Sends one frame once the socket takes it: waits until the handshake is
 * done (ZMQ_IMMEDIATE: the socket only takes a message then). 1 when sent,
 * 0 on timeout, or -errno.
 */
static int send_frame(struct sender *sd, const void *data, size_t len,
		      int64_t deadline)
{
	for (;;) {
		int r = wait_for(sd, ZMQ_POLLOUT, deadline);

		if (r <= 0)
			return r;
		if (zmq_send(sd->sock, data, len, ZMQ_DONTWAIT) >= 0)
			return 1;
		if (errno != EAGAIN && errno != EINTR)
			return fail(sd->err, -errno, "cannot send to '%s': %s",
				    sd->o->endpoints[sd->ep], strerror(errno));
	}
}

/*
 * Offers the report and awaits the collector's answer (send.h). 1 when it
 * may be sent now (granted, or the collector takes no offers: sd->direct
 * is then set), 2 with *ret holding another answer (RETRY_LATER), 0 on
 * timeout, or -errno.
 */
static int offer(struct sender *sd, const char *run_id, size_t len,
		 struct answer *ret)
{
	_cleanup_free_ uint8_t *buf = NULL;
	int64_t deadline = mono_ms() + sd->o->timeout_ms;
	size_t blen;
	int r;

	r = codec_pack_offer(run_id, len,
			     CODEC_OFFER_HINTS |
				     (sd->returning ? CODEC_OFFER_RETURNING : 0),
			     &buf, &blen);
	if (r < 0)
		return fail(sd->err, r, "cannot offer report %s: %s", run_id,
			    strerror(-r));
	r = send_frame(sd, buf, blen, deadline);
	if (r <= 0)
		return r;
	sd->sum->offers++;
	r = await_ack(sd, run_id, true, deadline, ret);
	if (r <= 0)
		return r;
	if (ret->status == FLEETBENCH__ACK__STATUS__GRANTED)
		return 1;
	if (ret->status != FLEETBENCH__ACK__STATUS__REJECTED)
		return 2;
	/* a collector older than offers read one as a broken Report */
	sd->direct = true;
	emit(sd, SEND_NO_OFFERS, run_id, *ret->reason ? ret->reason : NULL, 0,
	     0);
	return 1;
}

/*
 * One attempt on the current socket: offers the report unless the
 * collector takes no offers, sends it once granted, awaits the Ack; each
 * step within timeout_ms. 1 with *ret filled, 0 on timeout, or -errno.
 */
static int attempt(struct sender *sd, const char *run_id, const void *payload,
		   size_t len, struct answer *ret)
{
	int r;

	if (len > CODEC_MAX_MESSAGE) { /* no collector takes it, ever */
		ret->status = FLEETBENCH__ACK__STATUS__REJECTED;
		snprintf(ret->reason, sizeof(ret->reason),
			 "%zu bytes, over the %u-byte limit of a report (not sent)",
			 len, CODEC_MAX_MESSAGE);
		return 1;
	}
	r = sd->direct ? 1 : offer(sd, run_id, len, ret);
	if (r == 2)
		return 1; /* answered without the report */
	if (r == 1)
		r = send_frame(sd, payload, len,
			       mono_ms() + sd->o->timeout_ms);
	if (r <= 0)
		return r;
	sd->sum->sent++;
	return await_ack(sd, run_id, false, mono_ms() + sd->o->timeout_ms,
			 ret);
}

/* The k-th reconnect's delay (k >= 1): full jitter, a random share of
 * the capped exponential (send.h). */
static long backoff_delay(struct sender *sd, unsigned k)
{
	return (long)send_backoff_full_jitter(&sd->rng,
					      (uint64_t)sd->o->backoff_ms,
					      (uint64_t)sd->o->backoff_max_ms,
					      k);
}

uint64_t send_backoff_full_jitter(struct rng *rng, uint64_t base,
				  uint64_t cap, unsigned k)
{
	uint64_t d = base;

	for (unsigned i = 1; i < k && d < cap; i++)
		d *= 2;
	if (d > cap)
		d = cap;
	return rng_below(rng, d + 1);
}

uint64_t send_retry_after_delay(struct rng *rng, uint32_t hint_ms)
{
	uint64_t spread = hint_ms / 10 < SEND_HINT_JITTER_MAX_MS ?
				  hint_ms / 10 :
				  SEND_HINT_JITTER_MAX_MS;

	return (uint64_t)hint_ms + rng_below(rng, spread + 1);
}

static int pause_ms(struct sender *sd, long ms)
{
	int64_t deadline = mono_ms() + ms;

	for (;;) {
		int64_t left = deadline - mono_ms();
		struct timespec ts;

		if (interrupted(sd))
			return -EINTR;
		if (left <= 0)
			return 0;
		if (left > SLICE_MS)
			left = SLICE_MS;
		ts.tv_sec = left / 1000;
		ts.tv_nsec = (long)(left % 1000) * 1000000;
		nanosleep(&ts, NULL); /* EINTR: the loop looks again */
	}
}

/*
 * Delivers one report, reconnecting and failing over as send.h says.
 * 1 with *ret filled, 0 when no endpoint answered, or -errno.
 */
static int deliver(struct sender *sd, const char *run_id, const void *payload,
		   size_t len, struct answer *ret)
{
	size_t failed_endpoints = 0;
	unsigned timeouts = 0;
	int64_t waited = 0; /* on hints, for this report */

	sd->returning = false;
	for (;;) {
		int r = sd->sock ? 0 : connect_endpoint(sd);

		if (r == 0)
			r = attempt(sd, run_id, payload, len, ret);
		if (r == 1 && ret->status == FLEETBENCH__ACK__STATUS__RETRY_LATER &&
		    ret->retry_after_ms &&
		    waited + ret->retry_after_ms <= sd->o->retry_wait_max_ms) {
			/* told when to come back: wait, then offer again on
			 * a new connection (the collector keeps none) */
			long d = (long)send_retry_after_delay(&sd->rng,
							      ret->retry_after_ms);

			disconnect(sd);
			waited += d;
			sd->sum->retry_after++;
			emit(sd, SEND_RETRY_AFTER, run_id,
			     *ret->reason ? ret->reason : NULL, d, 0);
			r = pause_ms(sd, d);
			if (r < 0)
				return r;
			sd->returning = true;
			timeouts = 0;
			continue;
		}
		if (r != 0)
			return r;
		/* Lazy Pirate: the socket may be wedged, so drop it whole */
		disconnect(sd);
		timeouts++;
		emit(sd, SEND_TIMEOUT, run_id, NULL, 0, timeouts);
		if (timeouts <= (unsigned)sd->o->retries) {
			long d = backoff_delay(sd, timeouts);

			emit(sd, SEND_BACKOFF, run_id, NULL, d, timeouts);
			r = pause_ms(sd, d);
			if (r < 0)
				return r;
			continue;
		}
		if (++failed_endpoints >= sd->o->n_endpoints) {
			emit(sd, SEND_UNREACHABLE, run_id, NULL, 0, timeouts);
			return 0;
		}
		sd->ep = (sd->ep + 1) % sd->o->n_endpoints;
		sd->direct = false; /* perhaps a newer collector */
		timeouts = 0;
		emit(sd, SEND_FAILOVER, run_id, NULL, 0, 0);
	}
}

static int opts_check(const struct send_opts *o, char *err)
{
	if (!o || !o->endpoints || !o->n_endpoints)
		return fail(err, -EINVAL, "no collector endpoint");
	for (size_t i = 0; i < o->n_endpoints; i++)
		if (!o->endpoints[i] || !*o->endpoints[i])
			return fail(err, -EINVAL, "endpoint %zu is empty", i);
	if (o->server_public && !o->keys)
		return fail(err, -EINVAL, "CURVE without the agent's keys");
	if (o->timeout_ms <= 0 || o->retries < 0 || o->backoff_ms < 0 ||
	    o->backoff_max_ms < o->backoff_ms || o->retry_wait_max_ms < 0)
		return fail(err, -EINVAL,
			    "timeout must be positive, retries, backoff and retry_wait_max not negative, backoff_max at least backoff");
	return 0;
}

/* Acts on the collector's answer; 1 when the pass goes on, 0 stop, -errno. */
static int settle(struct sender *sd, struct spool *s,
		  const struct spool_entry *e, const struct answer *a,
		  const void *payload, size_t len)
{
	int r;

	switch (a->status) {
	case FLEETBENCH__ACK__STATUS__COMMITTED:
	case FLEETBENCH__ACK__STATUS__DUPLICATE:
		/* a crash here keeps a stored report: sent again, DUPLICATE */
		fault_point("send-after-ack");
		r = spool_ack(s, e);
		if (r < 0)
			return fail(sd->err, r,
				    "report %s was stored but cannot leave the spool: %s",
				    e->run_id, strerror(-r));
		if (a->status == FLEETBENCH__ACK__STATUS__COMMITTED)
			sd->sum->committed++;
		else
			sd->sum->duplicate++;
		emit_info(sd, &(struct send_event_info){
				      .event = a->status == FLEETBENCH__ACK__STATUS__COMMITTED ?
						       SEND_COMMITTED :
						       SEND_DUPLICATE,
				      .run_id = e->run_id,
				      .report = payload,
				      .report_len = len,
			      });
		return 1;
	case FLEETBENCH__ACK__STATUS__REJECTED: {
		const char *reason = *a->reason ? a->reason :
						  "rejected without a reason";

		r = spool_reject(s, e, reason);
		if (r < 0)
			return fail(sd->err, r,
				    "report %s was rejected (%s) but cannot move to rejected/: %s",
				    e->run_id, reason, strerror(-r));
		sd->sum->rejected++;
		emit(sd, SEND_REJECTED, e->run_id, reason, 0, 0);
		return 1;
	}
	default: /* RETRY_LATER: await_ack() lets no other through */
		sd->sum->retry_later = true;
		emit(sd, SEND_RETRY_LATER, e->run_id,
		     *a->reason ? a->reason : NULL, 0, 0);
		return 0;
	}
}

int send_flush(void *zctx, struct spool *s, const struct send_opts *o,
	       struct send_summary *ret, char err[SEND_ERR_LEN])
{
	struct sender sd = { .zctx = zctx, .o = o, .sum = ret, .err = err };
	_cleanup_free_ struct spool_entry *entries = NULL;
	struct answer answer;
	unsigned left_spool = 0;
	uint64_t seed;
	int n, r;

	memset(ret, 0, sizeof(*ret));
	err[0] = '\0';
	r = opts_check(o, err);
	if (r < 0)
		return r;
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
		seed = (uint64_t)mono_ms() ^ (uint64_t)getpid() << 32;
	rng_seed(&sd.rng, seed);
	if (o->endpoints_random)
		sd.ep = (size_t)rng_below(&sd.rng, o->n_endpoints);
	n = spool_list(s, &entries);
	if (n < 0)
		return fail(err, n, "cannot list the spool: %s", strerror(-n));

	for (int i = 0; i < n; i++) {
		const struct spool_entry *e = &entries[i];
		_cleanup_free_ uint8_t *payload = NULL;
		char serr[SPOOL_ERR_LEN] = "";
		size_t len;

		r = spool_read(s, e, &payload, &len, serr);
		if (r == -EBADMSG) {
			ret->quarantined++;
			left_spool++;
			emit(&sd, SEND_QUARANTINED, e->run_id, serr, 0, 0);
			r = 0;
			continue;
		}
		if (r == -ENOENT) { /* another send got there first */
			left_spool++;
			r = 0;
			continue;
		}
		if (r < 0) {
			fail(err, r, "%s", serr);
			break;
		}
		r = deliver(&sd, e->run_id, payload, len, &answer);
		if (r == 0)
			ret->unreachable = true;
		if (r <= 0)
			break;
		r = settle(&sd, s, e, &answer, payload, len);
		if (r <= 0)
			break;
		left_spool++;
		r = 0;
	}
	disconnect(&sd);
	ret->remaining = (unsigned)n - left_spool;
	return r < 0 ? r : 0;
}
