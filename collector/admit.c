/* SPDX-License-Identifier: MIT */
/* Admission of reports by offer and grant (admit.h). */
#include "admit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"

struct admit {
	size_t budget; /* 0: no bound */
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

void admit_received(struct admit *a, const char *run_id, size_t bytes)
{
	if (run_id && *run_id)
		for (size_t i = 0; i < a->n_grants; i++)
			if (!strcmp(a->grants[i].run_id, run_id)) {
				grant_drop(a, i);
				break;
			}
	hold(a, bytes);
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
