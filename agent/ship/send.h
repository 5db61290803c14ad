/* SPDX-License-Identifier: MIT */
/*
 * Flushes the agent's spool to the collector: each report, oldest first,
 * goes out on a DEALER socket (proto/link.h) as one message frame, and
 * leaves the spool only when its Ack says COMMITTED or DUPLICATE. Waiting
 * for an Ack is bounded; on a timeout the socket is closed and a new one
 * connected (ZeroMQ's Lazy Pirate pattern), after an exponential backoff
 * with jitter, and after `retries` reconnects the next endpoint is tried.
 * Nothing here logs: what happens is told through an event callback, and
 * errors come back as -errno with the reason in err.
 */
#ifndef FLEETBENCH_SEND_H
#define FLEETBENCH_SEND_H

#include <stdbool.h>
#include <stddef.h>

#include "link.h"
#include "rand.h"
#include "spool.h"

#define SEND_ERR_LEN 256
/* A retry-after hint is waited out plus a random tenth of it, at most
 * this: agents turned away together do not come back together. */
#define SEND_HINT_JITTER_MAX_MS 1000

enum send_event {
	SEND_COMMITTED, /* stored now: removed from the spool */
	SEND_DUPLICATE, /* stored before: removed from the spool */
	SEND_REJECTED, /* moved to rejected/; detail: the collector's reason */
	SEND_RETRY_LATER, /* the pass stops; detail: the reason, if any */
	SEND_RETRY_AFTER, /* told to come back: waiting delay_ms, then
			     offering again; detail: the reason */
	SEND_QUARANTINED, /* damaged file moved to quarantine/; detail: why */
	SEND_TIMEOUT, /* no Ack within timeout_ms: the socket is closed */
	SEND_BACKOFF, /* waiting delay_ms before reconnecting */
	SEND_FAILOVER, /* endpoint: the next endpoint to try */
	SEND_UNREACHABLE, /* every endpoint timed out: the pass stops */
	SEND_ACK_IGNORED, /* an Ack that answers nothing pending; detail: why */
	SEND_NO_OFFERS, /* endpoint answered an offer REJECTED (a collector
			   older than offers): reports go to it directly from
			   now on; detail: its reason */
};

struct send_event_info {
	enum send_event event;
	const char *run_id; /* the report concerned */
	const char *endpoint; /* the endpoint in use */
	const char *detail; /* reason or explanation; NULL when none */
	long delay_ms; /* SEND_BACKOFF, SEND_RETRY_AFTER */
	unsigned attempt; /* SEND_TIMEOUT, SEND_BACKOFF: 1 for the first */
	/* SEND_COMMITTED, SEND_DUPLICATE: the packed report delivered */
	const void *report;
	size_t report_len;
};

typedef void (*send_event_fn)(void *data, const struct send_event_info *ev);

struct send_opts {
	const char *const *endpoints; /* tried in order, at least one */
	size_t n_endpoints;
	const char *server_public; /* the collector's Z85 key; NULL: plaintext */
	const struct link_keypair *keys; /* the agent's; NULL only plaintext */
	int timeout_ms; /* per attempt: handshake, send and Ack */
	int retries; /* reconnects to one endpoint after its first timeout */
	int backoff_ms; /* delay before the first reconnect, doubling after */
	int backoff_max_ms; /* cap of the delay */
	/* a RETRY_LATER's retry-after hints are waited out within the pass
	 * while their sum for one report stays within this; a longer one
	 * (or none) ends the pass */
	int retry_wait_max_ms;
	/* the pass starts at a random endpoint (then goes round in order),
	 * not at the first */
	bool endpoints_random;
	int heartbeat_ms; /* ZMTP heartbeats; <= 0: LINK_HEARTBEAT_DEFAULT_MS */
	bool (*interrupted)(void); /* checked while waiting; NULL: never */
	send_event_fn event; /* NULL: no events */
	void *event_data;
};

struct send_summary {
	unsigned sent; /* Report messages handed to a socket, resends included */
	unsigned offers; /* Offer messages handed to a socket */
	unsigned committed, duplicate, rejected, quarantined;
	unsigned remaining; /* reports of this pass still in the spool */
	unsigned retry_after; /* RETRY_LATERs with a hint waited out */
	bool retry_later; /* the collector said RETRY_LATER: the pass stopped */
	bool unreachable; /* no endpoint answered in time: the pass stopped */
};

/*
 * One pass over the spool s with sockets in zctx. For every report, oldest
 * first: a file spool_read() finds damaged is quarantined (counted, never
 * sent); for the rest an Offer is sent (docs/wire.md, "Offer and grant")
 * and its answer awaited: GRANTED sends the report and awaits its Ack;
 * RETRY_LATER is settled like a report's; REJECTED means a collector
 * older than offers (SEND_NO_OFFERS), to which this pass sends its reports
 * without offering them until it fails over. An Ack counts when its
 * run_id is the report's, or when it is empty (the collector could not read
 * the run id) and says REJECTED or RETRY_LATER, and GRANTED only answers an
 * offer, COMMITTED and DUPLICATE only a report; any other Ack is ignored.
 * COMMITTED and DUPLICATE remove the report (spool_ack), REJECTED moves it
 * to rejected/ with the reason (spool_reject). A RETRY_LATER with a
 * retry-after hint that keeps the report's waits on hints within
 * retry_wait_max_ms closes the socket, waits
 * send_retry_after_delay() and offers the same report again (saying it
 * comes back); one without a hint, or a longer one, stops the pass
 * leaving the report spooled, as does an endpoint list that is exhausted:
 * the delay before a reconnect is a random share, from none to all, of
 * min(backoff_max_ms, backoff_ms * 2^(k-1)) for the k-th reconnect (full
 * jitter), and an endpoint that timed out 1 + retries times in a row is
 * left for the next (the last working endpoint stays in use for the
 * following reports). Reports go in spool order, one at a time: a report
 * is sent again only after a new offer, which the collector answers
 * RETRY_LATER while the earlier copy is still in its hands.
 *
 * Returns 0 when the pass ran (reports may remain: see *ret), -EINTR when
 * interrupted() became true, -EINVAL for bad opts, or another -errno when
 * the spool or ZeroMQ failed, with err saying what. *ret is filled in every
 * case.
 */
int send_flush(void *zctx, struct spool *s, const struct send_opts *o,
	       struct send_summary *ret, char err[SEND_ERR_LEN]);

/* The k-th reconnect's delay (k >= 1): uniform in [0, min(cap, base *
 * 2^(k-1))]. */
uint64_t send_backoff_full_jitter(struct rng *rng, uint64_t base,
				  uint64_t cap, unsigned k);

/* The wait for a retry-after hint: the hint plus up to a tenth of it
 * (at most SEND_HINT_JITTER_MAX_MS), never less than the hint. */
uint64_t send_retry_after_delay(struct rng *rng, uint32_t hint_ms);

#endif
