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
 * agent went away), and an offer that waited ADMIT_OFFER_STALE_MS is
 * dropped when its turn comes. Reports that come without a grant (agents
 * older than offers) are let in as they come, unless admission control
 * has no room, and count against the budget.
 * Nothing here touches a socket: the serve loop sends the grants.
 *
 * Admission control (docs/wire.md, "Admission control"): the collector
 * measures its commit rate (reports the database answered per second,
 * over windows of ADMIT_RATE_WINDOW_MS in which the backlog never ran
 * short: what it can do, not what it was offered) and lets in only what it can
 * answer within wait_ms: its backlog (offers waiting, grants outstanding,
 * reports in hand) stays under rate x wait_ms. An offer past that bound,
 * from an agent that honours hints, is answered RETRY_LATER at once with
 * a retry-after hint: a moment of its own, spaced 1/(ADMIT_SLOT_AHEAD x
 * rate) from the previous one, after the backlog has drained a quarter
 * of the bound, and at most ADMIT_HORIZON_WAITS x wait_ms ahead, so
 * the agents turned away come back at the rate the collector stores. An
 * agent that comes back (its Offer says so) is let in before new ones,
 * which are turned away while moments promised are still ahead.
 */
#ifndef FLEETBENCH_ADMIT_H
#define FLEETBENCH_ADMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ADMIT_ID_MAX 255 /* a ZeroMQ routing id */
#define ADMIT_LAPSE_MS 2000
/* an offer that waited this long is dropped unanswered when its turn
 * comes: its agent gave up (the agents' default send_timeout_ms; one
 * with a longer timeout offers again after it), and a grant to it would
 * hold its bytes until it lapses */
#define ADMIT_OFFER_STALE_MS 5000
#define ADMIT_QUEUE_MAX 10000 /* offers waiting (320 bytes each); beyond, RETRY_LATER */
#define ADMIT_GRANTS_MAX 4096 /* grants whose report has not come */
#define ADMIT_RATE_WINDOW_MS 1000
#define ADMIT_COLD_BOUND 1000 /* reports let in before a rate is measured */
#define ADMIT_MIN_BOUND 64 /* the bound never goes below */
/* a window in which the backlog never fell below this measures the rate
 * the database can store; one in which it did counts only until the
 * first such window (as at least what was done) */
#define ADMIT_SATURATED 32
#define ADMIT_RATE_DECAY 0.75 /* a window's weight, relative to the next */
/* moments are promised at most this many wait_ms ahead */
#define ADMIT_HORIZON_WAITS 2
/* moments are promised as if the rate were this much higher: it is
 * measured while the herd's connections compete for the machine, and an
 * agent that comes early is only told again, while a collector short of
 * work idles */
#define ADMIT_SLOT_AHEAD 1.15

/* One offer: who made it and for what. */
struct admit_offer {
	uint8_t id[ADMIT_ID_MAX];
	uint8_t id_len;
	char run_id[37];
	uint32_t bytes;
	int64_t ms; /* waiting: when it came; granted: when it lapses */
};

struct admit_stats {
	unsigned long offers, granted, lapsed, queue_full;
	unsigned long stale; /* offers dropped after ADMIT_OFFER_STALE_MS */
	unsigned long turned_away; /* RETRY_LATER with a hint: over the bound */
	unsigned long returned; /* agents back after a hint, let in */
	unsigned long offers_in_hand; /* offers for a report still in hand */
	uint32_t hint_max_ms; /* the longest hint given */
	double rate; /* reports/s the database answers, as measured */
	size_t queue_peak; /* most offers waiting at once */
	size_t held_peak; /* most bytes let in at once */
};

/* Admission control's settings; wait_ms 0: none (offers only queue). */
struct admit_control {
	int64_t wait_ms; /* answer what is let in within this */
	int64_t retry_min_ms, retry_max_ms; /* the hints' range */
};

struct admit;

/* budget: bytes let in at once; 0 grants every offer at once. NULL when
 * out of memory. */
struct admit *admit_new(size_t budget);
void admit_free(struct admit *a);

/* Turns admission control on (wait_ms > 0) or off. */
void admit_set_control(struct admit *a, const struct admit_control *c);

/*
 * Whether an offer from an agent that honours hints may queue now
 * (returning: it comes back after a hint); when not, *retry_after_ms says
 * when to come back. Call before admit_offer(). Offers from agents that
 * do not honour hints queue as before (they would end their pass on a
 * RETRY_LATER).
 */
bool admit_control_offer(struct admit *a, bool returning, int64_t now,
			 uint32_t *retry_after_ms);

/*
 * Whether a report that came without a grant (from peer id) may be let in
 * now; when not, *retry_after_ms is the hint (no promise: its sender
 * offers nothing). A report whose sender holds a grant is always let in.
 */
bool admit_control_report(struct admit *a, const uint8_t *id, size_t id_len,
			  int64_t now, uint32_t *retry_after_ms);

/* A hint for an agent turned away for another reason (the collector is
 * stopping: back after down_ms, spread like the others). */
uint32_t admit_hint(struct admit *a, int64_t now, int64_t down_ms);

/* n_all reports received were answered, n_db of them by the database
 * (stored, or found stored): the backlog's measure, and the rate's. */
void admit_answered(struct admit *a, size_t n_db, size_t n_all, int64_t now);

/* The bound in reports (0: no admission control) and the backlog. */
size_t admit_bound(const struct admit *a);
size_t admit_backlog(const struct admit *a);

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

/* Takes the first waiting offer into *ret, whatever the budget (to turn
 * it away); false when none waits. */
bool admit_take(struct admit *a, struct admit_offer *ret);

/* Counts an offer whose report was in hand already. */
void admit_stats_note_in_hand(struct admit *a);

/* Undoes the grant of admit_next() that could not be sent. */
void admit_cancel(struct admit *a, const struct admit_offer *o);

/* Drops the grant of the agent with routing id `id`, if it has one (its
 * report was turned away unread: the collector is stopping). */
void admit_drop_grant(struct admit *a, const uint8_t *id, size_t id_len);

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
