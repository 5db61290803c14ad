/* SPDX-License-Identifier: MIT */
/*
 * Flushing the spool to real ROUTER sockets on 127.0.0.1 with CURVE: Ack
 * statuses, Lazy Pirate reconnects with backoff, failover, RETRY_LATER,
 * an unreachable collector, quarantine, stray Acks and interrupts
 * (test_send_cli.c: the agent's commands that send). The scripted
 * collector and the scene are in tests/send_test.h.
 */
#include <fcntl.h>
#include <unistd.h>

#include "clock.h"
#include "send_test.h"

/* ---- the tests ---- */

/* COMMITTED and DUPLICATE leave the spool, REJECTED goes to rejected/. */
static void test_statuses(void)
{
	const enum action script[] = { ACT_COMMIT, ACT_DUPLICATE, ACT_REJECT };
	unsigned rej = 9, quar = 9;
	struct scene sc;
	char third[37];
	char *reason;

	scene_start(&sc, "statuses", true, ACT_DROP, 3, script, 2);
	spool_report(sc.s, third);
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK_EQ_INT(sc.sum.sent, 3);
	/* each report offered first, the offers not counted as reports */
	CHECK_EQ_INT(sc.sum.offers, 3);
	CHECK_EQ_INT(sc.srv.offers, 3);
	CHECK_EQ_INT(count_events(&sc.log, SEND_NO_OFFERS), 0);
	CHECK_EQ_INT(sc.sum.committed, 1);
	CHECK_EQ_INT(sc.sum.duplicate, 1);
	CHECK_EQ_INT(sc.sum.rejected, 1);
	CHECK_EQ_INT(sc.sum.quarantined, 0);
	CHECK_EQ_INT(sc.sum.remaining, 0);
	CHECK(!sc.sum.retry_later && !sc.sum.unreachable);
	CHECK_EQ_INT(server_received(&sc.srv), 3);
	CHECK(server_saw(&sc.srv, sc.ids[0]) && server_saw(&sc.srv, sc.ids[1]) &&
	      server_saw(&sc.srv, third));
	CHECK_EQ_INT(spooled(sc.s), 0);
	CHECK_OK(spool_counts(sc.s, &rej, &quar));
	CHECK_EQ_INT(rej, 1);
	CHECK_EQ_INT(quar, 0);
	/* the third message the server got is the rejected one */
	reason = read_text(path_of("statuses/rejected/%s.fbr.reason",
				   sc.srv.seen[2]));
	CHECK(reason && strstr(reason, "bad"));
	CHECK(access(path_of("statuses/rejected/%s.fbr", sc.srv.seen[2]),
		     F_OK) == 0);
	CHECK_EQ_INT(count_events(&sc.log, SEND_COMMITTED), 1);
	CHECK_EQ_INT(count_events(&sc.log, SEND_DUPLICATE), 1);
	CHECK_EQ_INT(count_events(&sc.log, SEND_REJECTED), 1);
	CHECK_EQ_INT(count_events(&sc.log, SEND_TIMEOUT), 0);
	scene_stop(&sc);
}

/*
 * A collector that takes reports and never answers: each attempt times
 * out, the socket is replaced after a growing, jittered delay, and after
 * the retries the agent fails over to the second endpoint, which it keeps.
 */
static void test_failover(void)
{
	struct server good;
	struct scene sc;
	int64_t t0, elapsed;
	int backoffs = 0;

	scene_start(&sc, "failover", true, ACT_DROP, 0, NULL, 2);
	server_start(&good, true, ACT_COMMIT, 0, NULL);
	sc.ep[1] = good.endpoint;
	sc.o.n_endpoints = 2;
	sc.o.timeout_ms = 300;
	sc.o.retries = 2;
	sc.o.backoff_ms = 40;
	sc.o.backoff_max_ms = 60;
	t0 = mono_ms();
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	elapsed = mono_ms() - t0;
	CHECK_EQ_INT(sc.sum.committed, 2);
	CHECK_EQ_INT(sc.sum.remaining, 0);
	CHECK(!sc.sum.unreachable);
	CHECK_EQ_INT(spooled(sc.s), 0);
	/* 1 + retries attempts at the dead one, each on a new connection */
	CHECK_EQ_INT(server_received(&sc.srv), 3);
	/* the second report went straight to the endpoint that answered */
	CHECK_EQ_INT(server_received(&good), 2);
	CHECK_EQ_INT(sc.sum.sent, 5);
	CHECK_EQ_INT(count_events(&sc.log, SEND_TIMEOUT), 3);
	CHECK_EQ_INT(count_events(&sc.log, SEND_FAILOVER), 1);
	for (int i = 0; i < sc.log.n; i++) {
		const struct send_event_info *e = &sc.log.ev[i];

		if (e->event == SEND_TIMEOUT)
			CHECK_EQ_STR(sc.log.endpoint[i], sc.srv.endpoint);
		if (e->event == SEND_FAILOVER)
			CHECK_EQ_STR(sc.log.endpoint[i], good.endpoint);
		if (e->event != SEND_BACKOFF)
			continue;
		backoffs++;
		/* k-th delay: full jitter over min(max, base * 2^(k-1)) */
		if (e->attempt == 1)
			CHECK_(e->delay_ms >= 0 && e->delay_ms <= 40,
			       "first backoff %ld ms", e->delay_ms);
		else
			CHECK_(e->delay_ms >= 0 && e->delay_ms <= 60,
			       "second backoff %ld ms (capped at 60)",
			       e->delay_ms);
	}
	CHECK_EQ_INT(backoffs, 2);
	CHECK_(elapsed >= 3 * 300, "took %lld ms", (long long)elapsed);
	server_stop(&good);
	scene_stop(&sc);
}

/*
 * A collector older than offers answers the first one REJECTED without a
 * run id (it read a broken Report): the report and the ones after it go
 * to it directly, and nothing is rejected.
 */
static void test_old_collector(void)
{
	unsigned rej = 9, quar = 9;
	struct scene sc;

	scene_start(&sc, "old", true, ACT_COMMIT, 0, NULL, 3);
	atomic_store(&sc.srv.offer_mode, OFFER_OLD);
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK_EQ_INT(sc.sum.offers, 1);
	CHECK_EQ_INT(sc.srv.offers, 1);
	CHECK_EQ_INT(sc.sum.sent, 3);
	CHECK_EQ_INT(sc.sum.committed, 3);
	CHECK_EQ_INT(sc.sum.rejected, 0);
	CHECK_EQ_INT(sc.sum.remaining, 0);
	CHECK_EQ_INT(server_received(&sc.srv), 3);
	CHECK_EQ_INT(count_events(&sc.log, SEND_NO_OFFERS), 1);
	CHECK_EQ_INT(count_events(&sc.log, SEND_REJECTED), 0);
	CHECK_EQ_INT(count_events(&sc.log, SEND_ACK_IGNORED), 0);
	for (int i = 0; i < sc.log.n; i++)
		if (sc.log.ev[i].event == SEND_NO_OFFERS)
			CHECK(strstr(sc.log.detail[i], "not a Report") != NULL);
	CHECK_OK(spool_counts(sc.s, &rej, &quar));
	CHECK_EQ_INT(rej, 0);
	CHECK_EQ_INT(spooled(sc.s), 0);
	scene_stop(&sc);
}

/* A spooled report over the wire's limit is neither offered nor sent (no
 * collector would ever take it): it goes to rejected/ with the reason. */
static void test_too_large(void)
{
	char run_id[37], err[SPOOL_ERR_LEN] = "";
	uint8_t *big = calloc(1, CODEC_MAX_MESSAGE + 1);
	unsigned rej = 9, quar = 9;
	struct scene sc;
	char *reason;

	scene_start(&sc, "large", true, ACT_COMMIT, 0, NULL, 1);
	CHECK_OK(codec_uuid_new(run_id));
	CHECK(big != NULL);
	if (big)
		CHECK_OK(spool_put(sc.s, run_id, big, CODEC_MAX_MESSAGE + 1,
				   err));
	free(big);
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK_EQ_INT(sc.sum.committed, 1);
	CHECK_EQ_INT(sc.sum.rejected, 1);
	CHECK_EQ_INT(sc.sum.offers, 1);
	CHECK_EQ_INT(sc.sum.sent, 1);
	CHECK_EQ_INT(server_received(&sc.srv), 1);
	CHECK_OK(spool_counts(sc.s, &rej, &quar));
	CHECK_EQ_INT(rej, 1);
	reason = read_text(path_of("large/rejected/%s.fbr.reason", run_id));
	CHECK(reason && strstr(reason, "over the 4194304-byte limit"));
	scene_stop(&sc);
}

/* An offer answered RETRY_LATER stops the pass before the report goes. */
static void test_offer_retry_later(void)
{
	struct scene sc;

	scene_start(&sc, "offer-retry", true, ACT_COMMIT, 0, NULL, 2);
	atomic_store(&sc.srv.offer_mode, OFFER_RETRY);
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK(sc.sum.retry_later);
	CHECK_EQ_INT(sc.sum.offers, 1);
	CHECK_EQ_INT(sc.sum.sent, 0);
	CHECK_EQ_INT(server_received(&sc.srv), 0);
	CHECK_EQ_INT(sc.sum.remaining, 2);
	CHECK_EQ_INT(spooled(sc.s), 2);
	CHECK_EQ_INT(count_events(&sc.log, SEND_RETRY_LATER), 1);
	scene_stop(&sc);
}

/*
 * A RETRY_LATER with a retry-after hint is waited out within the pass:
 * the agent offers again no sooner than the hint, saying it comes back,
 * and the report goes once granted. A hint longer than retry_wait_max_ms
 * ends the pass as a RETRY_LATER without one does.
 */
static void test_retry_after(void)
{
	struct scene sc;
	int64_t t0, elapsed;
	int waits = 0;

	scene_start(&sc, "retry-after", true, ACT_COMMIT, 0, NULL, 2);
	atomic_store(&sc.srv.offer_mode, OFFER_HINT);
	t0 = mono_ms();
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	elapsed = mono_ms() - t0;
	CHECK(!sc.sum.retry_later);
	CHECK_EQ_INT(sc.sum.committed, 2);
	CHECK_EQ_INT(sc.sum.retry_after, 2);
	CHECK_EQ_INT(spooled(sc.s), 0);
	/* each report: offered, told to wait, offered again, sent once */
	CHECK_EQ_INT(sc.sum.offers, 4);
	CHECK_EQ_INT(sc.sum.sent, 2);
	CHECK_EQ_INT(server_received(&sc.srv), 2);
	pthread_mutex_lock(&sc.srv.lock);
	CHECK_EQ_INT(sc.srv.offers_hints, 4);
	CHECK_EQ_INT(sc.srv.offers_returning, 2);
	pthread_mutex_unlock(&sc.srv.lock);
	for (int i = 0; i < sc.log.n; i++) {
		const struct send_event_info *e = &sc.log.ev[i];

		if (e->event != SEND_RETRY_AFTER)
			continue;
		waits++;
		/* the hint, plus up to a tenth of it */
		CHECK_(e->delay_ms >= HINT_MS && e->delay_ms <= HINT_MS * 11 / 10,
		       "waited %ld ms for a %d ms hint", e->delay_ms, HINT_MS);
		CHECK_EQ_STR(sc.log.detail[i], "busy");
	}
	CHECK_EQ_INT(waits, 2);
	CHECK_(elapsed >= 2 * HINT_MS, "took %lld ms", (long long)elapsed);
	scene_stop(&sc);

	/* a hint beyond what the agent waits: the pass ends */
	scene_start(&sc, "retry-after-long", true, ACT_COMMIT, 0, NULL, 2);
	atomic_store(&sc.srv.offer_mode, OFFER_HINT);
	sc.o.retry_wait_max_ms = HINT_MS - 1;
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK(sc.sum.retry_later);
	CHECK_EQ_INT(sc.sum.retry_after, 0);
	CHECK_EQ_INT(sc.sum.offers, 1);
	CHECK_EQ_INT(sc.sum.sent, 0);
	CHECK_EQ_INT(spooled(sc.s), 2);
	scene_stop(&sc);
}

/* The delays: full jitter stays within [0, min(cap, base * 2^(k-1))] and
 * spreads over it; a hint's wait within [hint, hint + min(hint/10, 1 s)]. */
static void test_delays(void)
{
	struct rng rng;
	uint64_t lo = UINT64_MAX, hi = 0, sum = 0;
	const int n = 10000;

	rng_seed(&rng, 7);
	for (int i = 0; i < n; i++) {
		uint64_t d = send_backoff_full_jitter(&rng, 500, 30000, 3);

		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
		sum += d;
	}
	CHECK_(hi <= 2000 && hi >= 1900, "largest of 3rd backoffs %llu ms",
	       (unsigned long long)hi);
	CHECK_(lo <= 100, "smallest of 3rd backoffs %llu ms",
	       (unsigned long long)lo);
	/* uniform over [0, 2000]: the mean near 1000 */
	CHECK_(sum / n >= 950 && sum / n <= 1050, "mean %llu ms",
	       (unsigned long long)(sum / n));
	for (int i = 0; i < n; i++)
		CHECK(send_backoff_full_jitter(&rng, 500, 30000, 40) <= 30000);
	CHECK_EQ_INT(send_backoff_full_jitter(&rng, 0, 0, 1), 0);
	for (int i = 0; i < n; i++) {
		uint64_t d = send_retry_after_delay(&rng, 5000);
		uint64_t l = send_retry_after_delay(&rng, 60000);

		CHECK(d >= 5000 && d <= 5500);
		CHECK(l >= 60000 && l <= 61000);
	}
}

/* RETRY_LATER stops the pass: nothing leaves the spool. */
static void test_retry_later(void)
{
	const enum action script[] = { ACT_RETRY };
	struct scene sc;

	scene_start(&sc, "retry", true, ACT_COMMIT, 1, script, 2);
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK(sc.sum.retry_later);
	CHECK_EQ_INT(sc.sum.sent, 1);
	CHECK_EQ_INT(sc.sum.committed, 0);
	CHECK_EQ_INT(sc.sum.remaining, 2);
	CHECK_EQ_INT(server_received(&sc.srv), 1);
	CHECK_EQ_INT(spooled(sc.s), 2);
	CHECK_EQ_INT(count_events(&sc.log, SEND_RETRY_LATER), 1);
	for (int i = 0; i < sc.log.n; i++)
		if (sc.log.ev[i].event == SEND_RETRY_LATER)
			CHECK_EQ_STR(sc.log.detail[i], "database unreachable");

	/* the next pass delivers both */
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK_EQ_INT(sc.sum.committed, 2);
	CHECK_EQ_INT(sc.sum.remaining, 0);
	CHECK_EQ_INT(spooled(sc.s), 0);
	scene_stop(&sc);
}

/* Nothing listening: every attempt times out, the reports stay. */
static void test_unreachable(void)
{
	struct scene sc;

	scene_start(&sc, "unreachable", true, ACT_COMMIT, 0, NULL, 2);
	server_stop(&sc.srv); /* its port is closed now */
	sc.o.timeout_ms = 200;
	sc.o.retries = 1;
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK(sc.sum.unreachable);
	CHECK_EQ_INT(sc.sum.sent, 0); /* no handshake, so nothing was queued */
	CHECK_EQ_INT(sc.sum.remaining, 2);
	CHECK_EQ_INT(spooled(sc.s), 2);
	CHECK_EQ_INT(count_events(&sc.log, SEND_TIMEOUT), 2);
	CHECK_EQ_INT(count_events(&sc.log, SEND_UNREACHABLE), 1);
	scene_stop(&sc);
}

/* An agent whose key is not in the allowlist, or that holds the wrong
 * server key, gets nothing through. */
static void test_refused(void)
{
	struct scene sc;

	scene_start(&sc, "refused", true, ACT_COMMIT, 0, NULL, 1);
	sc.o.timeout_ms = 300;
	sc.o.keys = &stranger_kp;
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK(sc.sum.unreachable);
	CHECK_EQ_INT(sc.sum.remaining, 1);
	sc.o.keys = &agent_kp;
	sc.o.server_public = stranger_kp.public_key;
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK(sc.sum.unreachable);
	CHECK_EQ_INT(server_received(&sc.srv), 0);
	CHECK_EQ_INT(spooled(sc.s), 1);
	scene_stop(&sc);
}

/* A damaged spool file is quarantined and never sent. */
static void test_quarantine(void)
{
	_cleanup_free_ struct spool_entry *e = NULL;
	unsigned rej = 9, quar = 9;
	const char *bad, *good;
	struct scene sc;
	char byte;
	int fd;

	scene_start(&sc, "quarantine", true, ACT_COMMIT, 0, NULL, 2);
	/* damage the one sent last, so the pass ends on a quarantined file */
	CHECK_EQ_INT(spool_list(sc.s, &e), 2);
	bad = e ? e[1].run_id : sc.ids[0];
	good = strcmp(bad, sc.ids[0]) ? sc.ids[0] : sc.ids[1];
	/* flip a payload byte: its CRC no longer matches */
	fd = open(path_of("quarantine/%s.fbr", bad), O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_EQ_INT(pread(fd, &byte, 1, 64 + 3), 1);
	byte ^= 0x10;
	CHECK_EQ_INT(pwrite(fd, &byte, 1, 64 + 3), 1);
	close(fd);

	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK_EQ_INT(sc.sum.quarantined, 1);
	CHECK_EQ_INT(sc.sum.committed, 1);
	CHECK_EQ_INT(sc.sum.sent, 1);
	CHECK_EQ_INT(sc.sum.remaining, 0);
	CHECK_EQ_INT(server_received(&sc.srv), 1);
	CHECK(!server_saw(&sc.srv, bad));
	CHECK(server_saw(&sc.srv, good));
	CHECK_EQ_INT(spooled(sc.s), 0);
	CHECK_OK(spool_counts(sc.s, &rej, &quar));
	CHECK_EQ_INT(quar, 1);
	CHECK_EQ_INT(rej, 0);
	CHECK_EQ_INT(count_events(&sc.log, SEND_QUARANTINED), 1);
	for (int i = 0; i < sc.log.n; i++)
		if (sc.log.ev[i].event == SEND_QUARANTINED)
			CHECK(strstr(sc.log.detail[i], "checksum") != NULL);
	scene_stop(&sc);
}

/* Junk and Acks that answer nothing pending are ignored; an Ack without a
 * run id that refuses answers the report in flight. */
static void test_stray_acks(void)
{
	const enum action script[] = { ACT_NOISE_THEN_COMMIT,
				       ACT_EMPTY_REJECT };
	struct scene sc;
	char *reason;

	scene_start(&sc, "stray", true, ACT_DROP, 2, script, 2);
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK_EQ_INT(sc.sum.committed, 1);
	CHECK_EQ_INT(sc.sum.rejected, 1);
	CHECK_EQ_INT(sc.sum.remaining, 0);
	CHECK_EQ_INT(count_events(&sc.log, SEND_ACK_IGNORED), 4);
	CHECK_EQ_INT(count_events(&sc.log, SEND_TIMEOUT), 0);
	reason = read_text(path_of("stray/rejected/%s.fbr.reason",
				   sc.srv.seen[1]));
	CHECK(reason && strstr(reason, "unreadable"));
	scene_stop(&sc);
}

/* Plaintext (--insecure) against a plaintext server. */
static void test_plaintext(void)
{
	struct scene sc;

	scene_start(&sc, "plain", false, ACT_COMMIT, 0, NULL, 1);
	sc.o.server_public = NULL;
	sc.o.keys = NULL;
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), 0);
	CHECK_EQ_INT(sc.sum.committed, 1);
	CHECK(server_saw(&sc.srv, sc.ids[0]));
	scene_stop(&sc);
}

/* An interrupt while waiting ends the pass with -EINTR; the report stays. */
static void test_interrupt(void)
{
	struct scene sc;
	int64_t t0;

	scene_start(&sc, "interrupt", true, ACT_DROP, 0, NULL, 1);
	sc.log.interrupt_after_timeouts = 1;
	sc.o.timeout_ms = 200;
	sc.o.retries = 5;
	sc.o.backoff_ms = 10000;
	sc.o.backoff_max_ms = 10000;
	t0 = mono_ms();
	CHECK_EQ_INT(flush(sc.s, &sc.o, &sc.sum), -EINTR);
	CHECK_(mono_ms() - t0 < 2000, "took %lld ms",
	       (long long)(mono_ms() - t0));
	CHECK_EQ_INT(sc.sum.remaining, 1);
	CHECK_EQ_INT(spooled(sc.s), 1);
	atomic_store(&interrupt_flag, false);
	scene_stop(&sc);
}

static void test_bad_opts(void)
{
	struct event_log log = { 0 };
	struct send_summary sum;
	struct spool *s = spool_new("opts");
	const char *ep[1] = { "tcp://127.0.0.1:1" };
	struct send_opts o = opts_for(ep, 0, &log);

	CHECK_EQ_INT(flush(s, &o, &sum), -EINVAL);
	CHECK(strstr(flush_err, "no collector endpoint") != NULL);
	o = opts_for(ep, 1, &log);
	o.keys = NULL;
	CHECK_EQ_INT(flush(s, &o, &sum), -EINVAL);
	CHECK(strstr(flush_err, "keys") != NULL);
	o = opts_for(ep, 1, &log);
	o.backoff_max_ms = 1;
	CHECK_EQ_INT(flush(s, &o, &sum), -EINVAL);
	CHECK(strstr(flush_err, "backoff") != NULL);
	spool_close(s);
}

int main(void)
{
	send_test_setup();
	test_statuses();
	test_failover();
	test_retry_later();
	test_retry_after();
	test_delays();
	test_old_collector();
	test_offer_retry_later();
	test_too_large();
	test_unreachable();
	test_refused();
	test_quarantine();
	test_stray_acks();
	test_plaintext();
	test_interrupt();
	test_bad_opts();
	send_test_teardown();
	return check_summary();
}
