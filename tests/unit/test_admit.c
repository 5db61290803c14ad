/* SPDX-License-Identifier: MIT */
/*
 * The collector's admission (collector/admit.h): offers are granted in the
 * order they came while the bytes let in stay within the budget; a report
 * larger than the budget still goes when nothing else is in; answered
 * reports and lapsed or cancelled grants make room; a report that came
 * without an offer counts; the queue has a bound. Admission control
 * measures the rate the database answers at, bounds the backlog by what
 * it stores within wait_ms, spaces the hints it turns agents away with
 * by 1/rate, lets agents coming back in before new ones, and lets a
 * granted report in whatever the backlog.
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

/* An offer that waited ADMIT_OFFER_STALE_MS is dropped when its turn
 * comes, not granted. */
static void test_stale(void)
{
	struct admit *a = admit_new(0);
	struct admit_offer o = offer(1, 10), fresh = offer(2, 10), g;

	o.ms = 0;
	fresh.ms = 4000;
	CHECK_OK(admit_offer(a, &o));
	CHECK_OK(admit_offer(a, &fresh));
	CHECK(admit_next(a, ADMIT_OFFER_STALE_MS + 1, &g));
	CHECK_EQ_STR(g.run_id, fresh.run_id);
	CHECK_EQ_INT(admit_stats(a)->stale, 1);
	CHECK_EQ_INT(admit_waiting(a), 0);
	admit_free(a);
}

static const struct admit_control control = {
	.wait_ms = 4000,
	.retry_min_ms = 100,
	.retry_max_ms = 600000,
};

/* One tick of a database: grants what the budget allows, receives and
 * answers it all. */
static void store_tick(struct admit *a, int64_t now)
{
	struct admit_offer o;
	size_t n = 0, bytes = 0;

	while (admit_next(a, now, &o)) {
		admit_received(a, o.run_id, o.bytes);
		bytes += o.bytes;
		n++;
	}
	admit_release(a, bytes);
	admit_answered(a, n, n, now);
}

static void test_control(void)
{
	struct admit *a = admit_new(300); /* 30 offers of 10 bytes at once */
	int64_t now = 1000;
	uint32_t hint = 0, h1 = 0, h2 = 0;
	int admitted = 0, turned = 0, i;
	double rate;

	admit_set_control(a, &control);
	/* before any measure: ADMIT_COLD_BOUND, then hints */
	CHECK_EQ_INT(admit_bound(a), ADMIT_COLD_BOUND);
	for (i = 0; i < ADMIT_COLD_BOUND + 44; i++) {
		struct admit_offer o = offer(i, 10);

		o.ms = now;
		if (admit_control_offer(a, false, now, &hint)) {
			CHECK_OK(admit_offer(a, &o));
			admitted++;
		} else {
			CHECK_(hint >= control.retry_min_ms,
			       "hint %u ms below the least", hint);
			turned++;
		}
	}
	CHECK_EQ_INT(admitted, ADMIT_COLD_BOUND);
	CHECK_EQ_INT(turned, 44);
	CHECK_EQ_INT(admit_stats(a)->turned_away, 44);
	CHECK_EQ_INT(admit_backlog(a), ADMIT_COLD_BOUND);

	/* a database storing 30 reports each 100 ms, offers left waiting:
	 * the first window opened with no backlog (only at least what was
	 * done), the second full all along measures about 300/s, the bound
	 * 4 s of it */
	while (admit_backlog(a) > 100) {
		now += 100;
		store_tick(a, now);
	}
	CHECK_EQ_INT(admit_stats(a)->stale, 0);
	rate = admit_stats(a)->rate;
	CHECK_(rate >= 255 && rate <= 315, "rate %.1f reports/s", rate);
	CHECK_(admit_bound(a) == (size_t)(rate * 4),
	       "bound %zu at %.1f reports/s", admit_bound(a), rate);

	/* new offers fill the backlog up to the bound, less the agents
	 * promised a moment still ahead; then they are turned away, each a
	 * moment 1/rate after the last */
	for (i = 5000; i < 9000; i++) {
		struct admit_offer o = offer(i, 10);

		o.ms = now;
		if (!admit_control_offer(a, false, now, &hint))
			break;
		CHECK_OK(admit_offer(a, &o));
	}
	CHECK(i < 9000);
	CHECK_(admit_backlog(a) == admit_bound(a), "backlog %zu, bound %zu",
	       admit_backlog(a), admit_bound(a));
	h1 = hint;
	/* the first turned away comes back when a quarter of the bound has
	 * drained */
	CHECK_(h1 >= 950 / ADMIT_SLOT_AHEAD && h1 <= 1050 / ADMIT_SLOT_AHEAD,
	       "first hint %u ms at %.1f reports/s", h1, rate);
	CHECK(!admit_control_offer(a, false, now, &h2));
	CHECK_(h2 > h1 && h2 - h1 <= (uint32_t)(1000 / rate) + 1,
	       "hints %u then %u ms at %.1f reports/s", h1, h2, rate);
	/* room again: one coming back is let in, while new ones are not (the
	 * moments promised are still ahead) */
	now += 100;
	store_tick(a, now);
	CHECK(admit_backlog(a) < admit_bound(a));
	CHECK(!admit_control_offer(a, false, now, &hint));
	CHECK(admit_control_offer(a, true, now, &hint));
	CHECK_EQ_INT(admit_stats(a)->returned, 1);
	CHECK(!admit_control_offer(a, false, now, &hint));
	/* a hint for after a restart is at least the time down */
	CHECK(admit_hint(a, now, 2000) >= 2000);
	admit_free(a);
}

/* A herd's first second, its handshakes taking the machine: the window
 * opens with no backlog, so it measures only at least what was done (20
 * reports); the bound stays ADMIT_COLD_BOUND (CI: a bound of 20 x 4.5 s
 * turned 187 of 500 agents away for up to 5 s, the collector idle while
 * they waited: test_herd's goodput 0.34 of unloaded). A window with the
 * backlog full all along then measures the rate. */
static void test_control_unsaturated(void)
{
	struct admit *a = admit_new(0);
	int64_t now = 1000;
	uint32_t hint = 0;
	int i;

	admit_set_control(a, &control);
	admit_answered(a, 0, 0, now); /* the window opens, backlog 0 */
	for (i = 0; i < 500; i++) {
		struct admit_offer o = offer(i, 10);

		CHECK(admit_control_offer(a, false, now + 1, &hint));
		CHECK_OK(admit_offer(a, &o));
	}
	admit_answered(a, 20, 0, now + 500); /* 20 stored in the first second */
	now += 1000;
	admit_answered(a, 0, 0, now); /* the window closes */
	CHECK_(admit_stats(a)->rate > 19 && admit_stats(a)->rate < 21,
	       "rate %.1f", admit_stats(a)->rate);
	CHECK_EQ_INT(admit_bound(a), ADMIT_COLD_BOUND);
	CHECK(admit_control_offer(a, false, now, &hint));
	/* a second with the backlog never short: 100 stored, measured */
	admit_answered(a, 100, 0, now + 500);
	now += 1000;
	admit_answered(a, 0, 0, now);
	CHECK_(admit_stats(a)->rate > 90 && admit_stats(a)->rate < 110,
	       "rate %.1f", admit_stats(a)->rate);
	CHECK_(admit_bound(a) == (size_t)(admit_stats(a)->rate * 4),
	       "bound %zu", admit_bound(a));
	CHECK(!admit_control_offer(a, false, now, &hint));
	admit_free(a);
}

/* A report whose sender holds a grant is let in whatever the backlog; one
 * without is turned away with a hint; with control off, all goes. */
static void test_control_report_and_off(void)
{
	struct admit *a = admit_new(0); /* no budget: grants at once */
	struct admit_offer o = offer(0, 10), g;
	struct admit_control off = control;
	uint32_t hint = 0;

	admit_set_control(a, &control);
	CHECK_OK(admit_offer(a, &o));
	for (int i = 1; i < ADMIT_COLD_BOUND; i++) {
		struct admit_offer k = offer(i, 10);

		CHECK_OK(admit_offer(a, &k));
	}
	CHECK(admit_next(a, 0, &g));
	CHECK_EQ_STR(g.run_id, o.run_id);
	CHECK(admit_control_report(a, o.id, o.id_len, 0, &hint));
	CHECK(!admit_control_report(a, (const uint8_t *)"stranger", 8, 0,
				    &hint));
	CHECK(hint >= control.retry_min_ms && hint <= control.retry_max_ms);
	off.wait_ms = 0;
	admit_set_control(a, &off);
	CHECK_EQ_INT(admit_bound(a), 0);
	CHECK(admit_control_offer(a, false, 0, &hint));
	CHECK(admit_control_report(a, (const uint8_t *)"stranger", 8, 0,
				   &hint));
	admit_free(a);
}

int main(void)
{
	test_stale();
	test_control();
	test_control_unsaturated();
	test_control_report_and_off();
	test_budget_and_order();
	test_large_and_unbounded();
	test_lapse_cancel_unoffered();
	test_queue_bound();
	return check_summary();
}
