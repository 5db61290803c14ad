/* SPDX-License-Identifier: MIT */
/*
 * Admission: which agents may send their report now (docs/wire.md, "Offer
 * and grant"). An agent offers a report (its run_id and size) before it
 * sends it; the collector grants offers, in the order they came, while
 * the bytes it has let in stay within a budget: granted and not yet
 * received, or received and not yet handed to the database (the serve
 * loop releases a report's bytes once libpq has taken its parameters, or
 * when it is answered without). So however many agents send at once,
 * only the granted reports are in libzmq's buffers and the collector's
 * batches; the rest wait as offers of a few bytes each.
 * A grant whose report does not come within ADMIT_LAPSE_MS lapses (the
 * agent went away). Reports that come without an offer (agents older
 * than offers) are let in as they come and count against the budget.
 * Nothing here touches a socket: the serve loop sends the grants.
 */
#ifndef FLEETBENCH_ADMIT_H
#define FLEETBENCH_ADMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ADMIT_ID_MAX 255 /* a ZeroMQ routing id */
#define ADMIT_LAPSE_MS 10000
#define ADMIT_QUEUE_MAX 10000 /* offers waiting (320 bytes each); beyond, RETRY_LATER */
#define ADMIT_GRANTS_MAX 4096 /* grants whose report has not come */

/* One offer: who made it and for what. */
struct admit_offer {
	uint8_t id[ADMIT_ID_MAX];
	uint8_t id_len;
	char run_id[37];
	uint32_t bytes;
	int64_t ms; /* for a grant, when it lapses */
};

struct admit_stats {
	unsigned long offers, granted, lapsed, queue_full;
	size_t queue_peak; /* most offers waiting at once */
	size_t held_peak; /* most bytes let in at once */
};

struct admit;

/* budget: bytes let in at once; 0 grants every offer at once. NULL when
 * out of memory. */
struct admit *admit_new(size_t budget);
void admit_free(struct admit *a);

/* Queues an offer. 0, or -ENOBUFS when ADMIT_QUEUE_MAX offers wait
 * already (answer RETRY_LATER), or -ENOMEM. */
int admit_offer(struct admit *a, const struct admit_offer *o);

/*
 * Takes the first waiting offer into *ret if the budget has room for it
 * (or nothing is let in: a report larger than the budget still goes) and
 * records it as granted until now + ADMIT_LAPSE_MS. True when one was
 * taken: the caller sends GRANTED, or calls admit_cancel() when it cannot.
 */
bool admit_next(struct admit *a, int64_t now, struct admit_offer *ret);

/* Undoes the grant of admit_next() that could not be sent. */
void admit_cancel(struct admit *a, const struct admit_offer *o);

/*
 * A report of `bytes` bytes arrived with run_id (NULL or "" when it could
 * not be read): its grant, if any, is used up, and the report counts
 * against the budget until admit_release(a, bytes).
 */
void admit_received(struct admit *a, const char *run_id, size_t bytes);
void admit_release(struct admit *a, size_t bytes);

/* When the next grant lapses, or -1 when none is outstanding. */
int64_t admit_lapse_next(const struct admit *a);

/* Drops the grants lapsed by now. Returns admit_lapse_next(). */
int64_t admit_expire(struct admit *a, int64_t now);

/* Offers waiting, and whether one could be granted now. */
size_t admit_waiting(const struct admit *a);
bool admit_ready(const struct admit *a);

const struct admit_stats *admit_stats(const struct admit *a);

#endif
