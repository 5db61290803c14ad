/* SPDX-License-Identifier: MIT */
/*
 * The collector's admission (collector/admit.h): offers are granted in the
 * order they came while the bytes let in stay within the budget; a report
 * larger than the budget still goes when nothing else is in; answered
 * reports and lapsed or cancelled grants make room; a report that came
 * without an offer counts; the queue has a bound.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "admit.h"
#include "check.h"

static struct admit_offer offer(int n, uint32_t bytes)
{
	struct admit_offer o = { .id_len = 5, .bytes = bytes };

	snprintf((char *)o.id, sizeof(o.id), "id%03d", n);
	snprintf(o.run_id, sizeof(o.run_id),
		 "00000000-0000-4000-8000-%012d", n);
	return o;
}

/* Grants what admit_next() gives now; returns how many, their numbers in
 * order in got[]. */
static int grant_all(struct admit *a, int64_t now, int *got, int max)
{
	struct admit_offer o;
	int n = 0;

	while (n < max && admit_next(a, now, &o)) {
		int k = -1;

		sscanf(o.run_id + 24, "%d", &k);
		got[n++] = k;
	}
	return n;
}

static void test_budget_and_order(void)
{
	struct admit *a = admit_new(100);
	struct admit_offer o;
	int got[16];

	CHECK(a != NULL);
	if (!a)
		return;
	for (int i = 0; i < 5; i++) {
		o = offer(i, 30);
		CHECK_OK(admit_offer(a, &o));
	}
	CHECK_EQ_INT(admit_waiting(a), 5);
	/* 3 x 30 fit in 100, the fourth would not */
	CHECK_EQ_INT(grant_all(a, 0, got, 16), 3);
	CHECK(got[0] == 0 && got[1] == 1 && got[2] == 2);
	CHECK(!admit_ready(a));
	/* the first report comes, a little larger than offered */
	admit_received(a, "00000000-0000-4000-8000-000000000000", 35);
	CHECK_EQ_INT(grant_all(a, 0, got, 16), 0); /* 35 + 60 + 30 > 100 */
	/* answered: room for one more, the next in line */
	admit_release(a, 35);
	CHECK_EQ_INT(grant_all(a, 0, got, 16), 1);
	CHECK_EQ_INT(got[0], 3);
	CHECK_EQ_INT(admit_waiting(a), 1);
	CHECK_EQ_INT(admit_stats(a)->granted, 4);
	CHECK_EQ_INT(admit_stats(a)->offers, 5);
	CHECK_EQ_INT(admit_stats(a)->queue_peak, 5);
	CHECK_EQ_INT(admit_stats(a)->held_peak, 95);
	admit_free(a);
}

static void test_large_and_unbounded(void)
{
	struct admit *a = admit_new(100);
	struct admit *free_for_all = admit_new(0);
	struct admit_offer o = offer(1, 500);
	int got[16];

	/* larger than the budget: goes when nothing else is in */
	CHECK_OK(admit_offer(a, &o));
	CHECK_EQ_INT(grant_all(a, 0, got, 16), 1);
	o = offer(2, 1);
	CHECK_OK(admit_offer(a, &o));
	CHECK_EQ_INT(grant_all(a, 0, got, 16), 0);
	admit_received(a, "00000000-0000-4000-8000-000000000001", 500);
	admit_release(a, 500);
	CHECK_EQ_INT(grant_all(a, 0, got, 16), 1);
	admit_free(a);

	/* budget 0: every offer at once */
	for (int i = 0; i < 10; i++) {
		o = offer(i, 1u << 20);
		CHECK_OK(admit_offer(free_for_all, &o));
	}
	CHECK_EQ_INT(grant_all(free_for_all, 0, got, 16), 10);
	admit_free(free_for_all);
}

static void test_lapse_cancel_unoffered(void)
{
	struct admit *a = admit_new(100);
	struct admit_offer o, g;
	int got[16];

	o = offer(1, 60);
	CHECK_OK(admit_offer(a, &o));
	o = offer(2, 60);
	CHECK_OK(admit_offer(a, &o));
	CHECK(admit_next(a, 1000, &g));
	CHECK_EQ_INT(g.ms, 1000 + ADMIT_LAPSE_MS);
	CHECK_EQ_INT(admit_expire(a, 1000), 1000 + ADMIT_LAPSE_MS);
	CHECK_EQ_INT(grant_all(a, 1000, got, 16), 0);
	/* its agent never sends: the grant lapses and makes room */
	CHECK_EQ_INT(admit_expire(a, 1000 + ADMIT_LAPSE_MS), -1);
	CHECK_EQ_INT(admit_stats(a)->lapsed, 1);
	CHECK(admit_next(a, 2000, &g));
	CHECK_EQ_STR(g.run_id, "00000000-0000-4000-8000-000000000002");
	/* the GRANTED could not be sent: undone */
	admit_cancel(a, &g);
	CHECK_EQ_INT(admit_stats(a)->granted, 1);
	CHECK_EQ_INT(admit_expire(a, 2000), -1);
	/* reports without an offer count against the budget */
	admit_received(a, NULL, 90);
	o = offer(3, 20);
	CHECK_OK(admit_offer(a, &o));
	CHECK_EQ_INT(grant_all(a, 2000, got, 16), 0);
	admit_release(a, 90);
	CHECK_EQ_INT(grant_all(a, 2000, got, 16), 1);
	admit_free(a);
}

static void test_queue_bound(void)
{
	struct admit *a = admit_new(1);
	struct admit_offer o = offer(0, 1);
	int r = 0;

	for (int i = 0; i < ADMIT_QUEUE_MAX && r == 0; i++)
		r = admit_offer(a, &o);
	CHECK_OK(r);
	CHECK_EQ_INT(admit_waiting(a), ADMIT_QUEUE_MAX);
	CHECK_EQ_INT(admit_offer(a, &o), -ENOBUFS);
	CHECK_EQ_INT(admit_stats(a)->queue_full, 1);
	/* the ring stays in order across its growth and wrap */
	CHECK(admit_next(a, 0, &o));
	CHECK_EQ_INT(admit_expire(a, ADMIT_LAPSE_MS), -1);
	CHECK_OK(admit_offer(a, &o));
	admit_free(a);
}

int main(void)
{
	test_budget_and_order();
	test_large_and_unbounded();
	test_lapse_cancel_unoffered();
	test_queue_bound();
	return check_summary();
}
