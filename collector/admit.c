/* SPDX-License-Identifier: MIT */
/* Admission of reports by offer and grant (admit.h). */
#include "admit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "codec.h"

struct admit {
	size_t budget; /* 0: no bound */
	struct admit_control ctl;
	size_t in_hand; /* reports received, not yet answered */
	/* the rate's window: its start, reports the database answered in
	 * it, the least backlog after an answer in it */
	int64_t win_ms;
	size_t win_done;
	size_t win_min;
	/* the saturated windows' reports and milliseconds, each window's
	 * weight ADMIT_RATE_DECAY times the next one's */
	double sat_done, sat_ms;
	double slot_ms; /* the last moment promised */
	size_t held; /* bytes granted or received, not yet answered */
	/* offers waiting, a ring: queue[(head + i) % cap] for i < n */
	struct admit_offer *queue;
	size_t head, n, cap;
	/* grants whose report has not come, in no order */
	struct admit_offer *grants;
	size_t n_grants, cap_grants;
	struct admit_stats stats;
};

struct admit *admit_new(size_t budget)
{
	struct admit *a = calloc(1, sizeof(*a));

	if (a)
		a->budget = budget;
	return a;
}

void admit_free(struct admit *a)
{
	if (!a)
		return;
	free(a->queue);
	free(a->grants);
	free(a);
}

static void hold(struct admit *a, size_t bytes)
{
	a->held += bytes;
	if (a->held > a->stats.held_peak)
		a->stats.held_peak = a->held;
}

void admit_release(struct admit *a, size_t bytes)
{
	a->held = bytes < a->held ? a->held - bytes : 0;
}

/* Doubles the ring, keeping the order. */
static int queue_grow(struct admit *a)
{
	size_t cap = a->cap ? 2 * a->cap : 64;
	struct admit_offer *q;

	if (cap > ADMIT_QUEUE_MAX)
		cap = ADMIT_QUEUE_MAX;
	q = malloc(cap * sizeof(*q));
	if (!q)
		return -ENOMEM;
	for (size_t i = 0; i < a->n; i++)
		q[i] = a->queue[(a->head + i) % a->cap];
	free(a->queue);
	a->queue = q;
	a->cap = cap;
	a->head = 0;
	return 0;
}

int admit_offer(struct admit *a, const struct admit_offer *o)
{
	a->stats.offers++;
	if (a->n >= ADMIT_QUEUE_MAX) {
		a->stats.queue_full++;
		return -ENOBUFS;
	}
	if (a->n == a->cap && queue_grow(a) < 0)
		return -ENOMEM;
	a->queue[(a->head + a->n) % a->cap] = *o;
	a->n++;
	if (a->n > a->stats.queue_peak)
		a->stats.queue_peak = a->n;
	return 0;
}

/* Drops the stale offers at the head of the queue. */
static void drop_stale(struct admit *a, int64_t now)
{
	while (a->n && now - a->queue[a->head].ms > ADMIT_OFFER_STALE_MS) {
		a->head = (a->head + 1) % a->cap;
		a->n--;
		a->stats.stale++;
	}
}

bool admit_ready(const struct admit *a)
{
	const struct admit_offer *o;

	if (!a->n || a->n_grants >= ADMIT_GRANTS_MAX)
		return false;
	o = &a->queue[a->head];
	return !a->budget || !a->held || a->held + o->bytes <= a->budget;
}

bool admit_next(struct admit *a, int64_t now, struct admit_offer *ret)
{
	drop_stale(a, now);
	if (!admit_ready(a))
		return false;
	/* the test first: no call while there is room */
	if (a->n_grants == a->cap_grants &&
	    ARRAY_RESERVE(a->grants, a->cap_grants, a->n_grants + 1) < 0)
		return false; /* tried again when a report is answered */
	*ret = a->queue[a->head];
	a->head = (a->head + 1) % a->cap;
	a->n--;
	ret->ms = now + ADMIT_LAPSE_MS;
	a->grants[a->n_grants++] = *ret;
	hold(a, ret->bytes);
	a->stats.granted++;
	return true;
}

bool admit_take(struct admit *a, struct admit_offer *ret)
{
	if (!a->n)
		return false;
	*ret = a->queue[a->head];
	a->head = (a->head + 1) % a->cap;
	a->n--;
	return true;
}

void admit_stats_note_in_hand(struct admit *a)
{
	a->stats.offers_in_hand++;
}

static void grant_drop(struct admit *a, size_t i)
{
	admit_release(a, a->grants[i].bytes);
	a->grants[i] = a->grants[--a->n_grants];
}

void admit_cancel(struct admit *a, const struct admit_offer *o)
{
	for (size_t i = a->n_grants; i-- > 0;) {
		const struct admit_offer *g = &a->grants[i];

		if (g->id_len == o->id_len && !memcmp(g->id, o->id, o->id_len) &&
		    !strcmp(g->run_id, o->run_id)) {
			grant_drop(a, i);
			a->stats.granted--;
			return;
		}
	}
}

void admit_drop_grant(struct admit *a, const uint8_t *id, size_t id_len)
{
	for (size_t i = a->n_grants; i-- > 0;)
		if (a->grants[i].id_len == id_len &&
		    !memcmp(a->grants[i].id, id, id_len)) {
			grant_drop(a, i);
			return;
		}
}

void admit_received(struct admit *a, const char *run_id, size_t bytes)
{
	if (run_id && *run_id)
		for (size_t i = 0; i < a->n_grants; i++)
			if (!strcmp(a->grants[i].run_id, run_id)) {
				grant_drop(a, i);
				break;
			}
	hold(a, bytes);
	a->in_hand++;
}

int64_t admit_lapse_next(const struct admit *a)
{
	int64_t next = -1;

	for (size_t i = 0; i < a->n_grants; i++)
		if (next < 0 || a->grants[i].ms < next)
			next = a->grants[i].ms;
	return next;
}

int64_t admit_expire(struct admit *a, int64_t now)
{
	for (size_t i = 0; i < a->n_grants;) {
		if (a->grants[i].ms <= now) {
			grant_drop(a, i);
			a->stats.lapsed++;
		} else {
			i++;
		}
	}
	return admit_lapse_next(a);
}

size_t admit_waiting(const struct admit *a)
{
	return a->n;
}

const struct admit_stats *admit_stats(const struct admit *a)
{
	return &a->stats;
}

/* ---- admission control ---- */

void admit_set_control(struct admit *a, const struct admit_control *c)
{
	a->ctl = *c;
	if (a->ctl.retry_max_ms < a->ctl.retry_min_ms)
		a->ctl.retry_max_ms = a->ctl.retry_min_ms;
}

/* Closes the rate's window once it is ADMIT_RATE_WINDOW_MS long: a window
 * in which the database always had ADMIT_SATURATED reports waiting
 * measures what it can do (averaged with the last measure); one in which
 * it ran short only raises the measure. */
static void rate_roll(struct admit *a, int64_t now)
{
	int64_t dt = now - a->win_ms;
	double r;

	if (!a->win_ms) {
		a->win_ms = now;
		a->win_min = admit_backlog(a);
		return;
	}
	if (dt < ADMIT_RATE_WINDOW_MS)
		return;
	r = (double)a->win_done * 1000.0 / (double)dt;
	if (a->win_min >= ADMIT_SATURATED && a->win_done) {
		/* reports over time, not a mean of windows: a window that
		 * caught one batch more than its share weighs no more */
		a->sat_done = a->sat_done * ADMIT_RATE_DECAY +
			      (double)a->win_done;
		a->sat_ms = a->sat_ms * ADMIT_RATE_DECAY + (double)dt;
		a->stats.rate = a->sat_done * 1000.0 / a->sat_ms;
	} else if (a->sat_ms <= 0 && r > a->stats.rate) {
		/* nothing saturated yet: at least what it did */
		a->stats.rate = r;
	}
	a->win_ms = now;
	a->win_done = 0;
	a->win_min = admit_backlog(a);
}

void admit_answered(struct admit *a, size_t n_db, size_t n_all, int64_t now)
{
	size_t backlog;

	rate_roll(a, now);
	a->win_done += n_db;
	a->in_hand = n_all < a->in_hand ? a->in_hand - n_all : 0;
	backlog = admit_backlog(a);
	if (backlog < a->win_min)
		a->win_min = backlog;
}

size_t admit_backlog(const struct admit *a)
{
	return a->n + a->n_grants + a->in_hand;
}

/* Whether a window in which the database always had work has measured
 * the rate: before, stats.rate is only at least what was done (the first
 * second of a herd, while its handshakes take the machine, may store 20
 * reports, and a bound of 20 x wait_ms turned 378 of 500 agents away for
 * up to 9 s with the collector idle: goodput half the unloaded rate) */
static bool rate_measured(const struct admit *a)
{
	return a->sat_ms > 0;
}

/* Reports/s for the hints: as measured, or before any measure a guess of
 * ADMIT_COLD_BOUND a second, or what was done if more (the agents told
 * to come back then are told again, better, once the rate is measured). */
static double rate_of(const struct admit *a)
{
	if (rate_measured(a) || a->stats.rate > ADMIT_COLD_BOUND)
		return a->stats.rate;
	return ADMIT_COLD_BOUND;
}

size_t admit_bound(const struct admit *a)
{
	double b;

	if (a->ctl.wait_ms <= 0)
		return 0;
	b = a->stats.rate * (double)a->ctl.wait_ms / 1000.0;
	if (!rate_measured(a))
		return b > ADMIT_COLD_BOUND ? (size_t)b : ADMIT_COLD_BOUND;
	return b < ADMIT_MIN_BOUND ? ADMIT_MIN_BOUND : (size_t)b;
}

/* The next moment of its own for an agent turned away: 1/rate after the
 * last one promised, and not before the backlog has drained to a quarter below the
 * bound (plus down_ms). */
uint32_t admit_hint(struct admit *a, int64_t now, int64_t down_ms)
{
	double rate = rate_of(a), at, hint, horizon;
	size_t backlog = admit_backlog(a), room = admit_bound(a) * 3 / 4;

	rate_roll(a, now);
	at = (double)(now + down_ms);
	if (backlog > room)
		at += (double)(backlog - room) * 1000.0 /
		      (rate * ADMIT_SLOT_AHEAD);
	if (a->slot_ms < at)
		a->slot_ms = at;
	/* no further ahead than the horizon: the rate may change before,
	 * and those told the horizon are told again, with a fresher one */
	horizon = (double)(now + down_ms + ADMIT_HORIZON_WAITS * a->ctl.wait_ms);
	if (a->slot_ms > horizon)
		a->slot_ms = horizon;
	/* a little closer than the rate: short of work, the collector
	 * could not tell that it can do more */
	a->slot_ms += 1000.0 / (rate * ADMIT_SLOT_AHEAD);
	hint = a->slot_ms - (double)now;
	if (hint < (double)a->ctl.retry_min_ms)
		hint = (double)a->ctl.retry_min_ms;
	if (hint > (double)a->ctl.retry_max_ms)
		hint = (double)a->ctl.retry_max_ms;
	if (hint > CODEC_MAX_RETRY_AFTER_MS)
		hint = CODEC_MAX_RETRY_AFTER_MS;
	if (hint < 1)
		hint = 1;
	if ((uint32_t)hint > a->stats.hint_max_ms)
		a->stats.hint_max_ms = (uint32_t)hint;
	a->stats.turned_away++;
	return (uint32_t)hint;
}

/* Agents promised a moment still ahead. */
static size_t promised(const struct admit *a, int64_t now)
{
	double ahead = a->slot_ms - (double)now;

	return ahead > 0 ? (size_t)(ahead * rate_of(a) / 1000.0) : 0;
}

bool admit_control_offer(struct admit *a, bool returning, int64_t now,
			 uint32_t *retry_after_ms)
{
	size_t bound = admit_bound(a), backlog = admit_backlog(a);

	if (!bound)
		return true;
	rate_roll(a, now);
	if (returning ? backlog < bound :
			backlog + promised(a, now) < bound) {
		a->stats.returned += returning;
		return true;
	}
	*retry_after_ms = admit_hint(a, now, 0);
	return false;
}

bool admit_control_report(struct admit *a, const uint8_t *id, size_t id_len,
			  int64_t now, uint32_t *retry_after_ms)
{
	size_t bound = admit_bound(a);

	for (size_t i = 0; i < a->n_grants; i++)
		if (a->grants[i].id_len == id_len &&
		    !memcmp(a->grants[i].id, id, id_len))
			return true;
	if (!bound || admit_backlog(a) + promised(a, now) < bound)
		return true;
	*retry_after_ms = admit_hint(a, now, 0);
	return false;
}
