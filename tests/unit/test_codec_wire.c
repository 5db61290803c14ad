/* SPDX-License-Identifier: MIT */
/*
 * The codec on the wire: hostile bytes (garbage, truncation, huge length
 * prefixes, allocation amplification) give -EBADMSG within the unpack
 * budget; Acks and Offers round-trip and garbage ones are refused;
 * unpacks in parallel share nothing.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cleanup.h"
#include "codec_test.h"
#include "rand.h"

/* Appends a protobuf varint; returns its length. */
static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static long max_rss_kib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static void test_wire(void)
{
	struct fixture f;
	char err[CODEC_ERR_LEN];
	Fleetbench__Report *u = NULL;
	uint8_t *buf = NULL, *big;
	size_t len = 0, n_bad = 0, n_ok = 0, at;
	struct rng rng;
	uint8_t junk[256];
	int r;

	fixture_init(&f);
	CHECK_OK(codec_pack_report(&f.r, &buf, &len));
	if (!buf)
		return;

	/* empty input and garbage are not Reports */
	CHECK_EQ_INT(codec_unpack_report(NULL, 0, &u, err), -EBADMSG);
	CHECK(u == NULL);
	CHECK_EQ_STR(err,
		     "not a Report (malformed or truncated protobuf, or a required field missing)");
	rng_seed(&rng, 4);
	for (int i = 0; i < 2000; i++) {
		size_t n = (size_t)rng_below(&rng, sizeof(junk) + 1);

		for (size_t k = 0; k < n; k++)
			junk[k] = (uint8_t)rng_next(&rng);
		r = codec_unpack_report(junk, n, &u, err);
		n_bad += r == -EBADMSG && u == NULL;
		codec_free_report(u);
	}
	CHECK_EQ_INT(n_bad, 2000);

	/* every truncation: never a crash, almost always -EBADMSG; cut
	 * between fields after the required ones it is a shorter Report */
	n_bad = 0;
	for (size_t cut = 0; cut < len; cut++) {
		r = codec_unpack_report(buf, cut, &u, err);
		CHECK_(r == -EBADMSG || r == 0 || r == -EINVAL, "cut %zu: %d",
		       cut, r);
		n_bad += r == -EBADMSG;
		n_ok += r == 0;
		codec_free_report(u);
	}
	CHECK_(n_bad > len * 9 / 10, "%zu of %zu truncations -EBADMSG", n_bad,
	       len);
	CHECK(n_ok >= 1); /* cut before the seed field */
	CHECK_EQ_INT(codec_unpack_report(buf, len - 1, &u, err), -EBADMSG);

	/* unknown fields (a newer agent) are kept aside, not refused */
	big = malloc(len + 16);
	memcpy(big, buf, len);
	at = len;
	at += put_varint(big + at, (100 << 3) | 0); /* field 100 varint */
	at += put_varint(big + at, 7);
	at += put_varint(big + at, (101 << 3) | 2); /* field 101 bytes */
	at += put_varint(big + at, 3);
	memcpy(big + at, "new", 3);
	at += 3;
	r = codec_unpack_report(big, at, &u, err);
	CHECK_EQ_INT(r, 0);
	CHECK(u && u->base.n_unknown_fields == 2);
	codec_free_report(u);

	/* a length prefix claiming far more than there is */
	at = len;
	at += put_varint(big + at, (8 << 3) | 2); /* probe_json */
	at += put_varint(big + at, UINT64_C(1) << 62);
	big[at++] = '{';
	CHECK_EQ_INT(codec_unpack_report(big, at, &u, err), -EBADMSG);
	at = 0;
	at += put_varint(big + at, (9 << 3) | 2); /* benchmarks */
	at += put_varint(big + at, 0xffffffffu);
	CHECK_EQ_INT(codec_unpack_report(big, at, &u, err), -EBADMSG);
	free(big);

	/* over the size limit: refused before decoding */
	big = calloc(1, CODEC_MAX_MESSAGE + 1);
	memcpy(big, buf, len);
	CHECK_EQ_INT(codec_unpack_report(big, CODEC_MAX_MESSAGE + 1, &u, err),
		     -EMSGSIZE);
	CHECK(u == NULL);
	CHECK_EQ_STR(err,
		     "message of 4194305 bytes is over the limit of 4194304 bytes");
	free(big);
	free(buf);

	/* packing refuses what no collector would take */
	fixture_init(&f);
	big = (uint8_t *)repeat_char('x', CODEC_MAX_MESSAGE);
	f.r.probe_json = (char *)big;
	buf = NULL;
	CHECK_EQ_INT(codec_pack_report(&f.r, &buf, &len), -E2BIG);
	CHECK(buf == NULL);
	free(big);
}

/*
 * Allocation amplification: two bytes on the wire per empty Window cost
 * protobuf-c about 130 bytes, so 4 MiB of them would cost some 270 MiB.
 * The budget refuses it at CODEC_UNPACK_BUDGET, and the process's peak RSS
 * shows it; decoding the same bytes without the budget shows the test has
 * teeth.
 */
static void test_budget(void)
{
	struct fixture f;
	char err[CODEC_ERR_LEN];
	Fleetbench__Report *u = NULL;
	ProtobufCMessage *m;
	uint8_t *buf = NULL, *msg;
	size_t len, at, body, n_windows;
	long before, after;

	fixture_init(&f);
	f.r.n_benchmarks = f.r.n_comparisons = 0;
	CHECK_OK(codec_pack_report(&f.r, &buf, &len));
	if (!buf)
		return;
	msg = malloc(CODEC_MAX_MESSAGE);
	memcpy(msg, buf, len);
	at = len;
	n_windows = (CODEC_MAX_MESSAGE - len - 1 - 10 - 6) / 2;
	body = 6 + 2 * n_windows;
	at += put_varint(msg + at, (9 << 3) | 2); /* one more benchmark */
	at += put_varint(msg + at, body);
	memcpy(msg + at, "\x0a\x01" "b" "\x12\x01" "v", 6); /* names */
	at += 6;
	for (size_t i = 0; i < n_windows; i++) {
		msg[at++] = (6 << 3) | 2; /* windows */
		msg[at++] = 0; /* an empty Window */
	}
	CHECK(at <= CODEC_MAX_MESSAGE && at > CODEC_MAX_MESSAGE - 32);

	before = max_rss_kib();
	CHECK_EQ_INT(codec_unpack_report(msg, at, &u, err), -EBADMSG);
	after = max_rss_kib();
	CHECK(u == NULL);
	CHECK_EQ_STR(err, "Report needs more than 16384 KiB to decode (the unpack budget)");
	CHECK_(after - before < (long)(CODEC_UNPACK_BUDGET >> 10) + 4096,
	       "peak RSS grew by %ld KiB", after - before);
	printf("budgeted decode of %zu bytes: peak RSS +%ld KiB\n", at,
	       after - before);

	/* without the budget protobuf-c takes it all */
	m = protobuf_c_message_unpack(&fleetbench__report__descriptor, NULL,
				      at, msg);
	CHECK(m != NULL);
	CHECK_(max_rss_kib() - before > 4 * (long)(CODEC_UNPACK_BUDGET >> 10),
	       "unbudgeted decode grew peak RSS by only %ld KiB",
	       max_rss_kib() - before);
	printf("unbudgeted decode: peak RSS +%ld KiB\n",
	       max_rss_kib() - before);
	protobuf_c_message_free_unpacked(m, NULL);

	free(msg);
	free(buf);
}

static void test_ack(void)
{
	static const Fleetbench__Ack__Status statuses[] = {
		FLEETBENCH__ACK__STATUS__COMMITTED,
		FLEETBENCH__ACK__STATUS__DUPLICATE,
		FLEETBENCH__ACK__STATUS__REJECTED,
		FLEETBENCH__ACK__STATUS__RETRY_LATER,
		FLEETBENCH__ACK__STATUS__GRANTED,
	};
	Fleetbench__Ack *a = NULL, raw = FLEETBENCH__ACK__INIT;
	uint8_t *buf = NULL, junk[64], packed[64];
	size_t len, n;
	char *reason;
	struct rng rng;
	int r, n_bad = 0;

	for (size_t i = 0; i < ARRAY_SIZE(statuses); i++) {
		CHECK_OK(codec_pack_ack(RUN_ID, statuses[i], "why not", &buf,
					&len));
		CHECK_OK(codec_unpack_ack(buf, len, &a));
		if (a) {
			CHECK_EQ_STR(a->run_id, RUN_ID);
			CHECK_EQ_INT(a->status, statuses[i]);
			CHECK_EQ_STR(a->reason, "why not");
		}
		codec_free_ack(a);
		a = NULL;
		free(buf);
	}
	/* no reason; a run_id that could not be read goes out empty */
	CHECK_OK(codec_pack_ack("garbage \xff", FLEETBENCH__ACK__STATUS__REJECTED,
				NULL, &buf, &len));
	CHECK_OK(codec_unpack_ack(buf, len, &a));
	if (a) {
		CHECK_EQ_STR(a->run_id, "");
		CHECK(a->reason == NULL);
	}
	codec_free_ack(a);
	a = NULL;
	free(buf);
	CHECK_OK(codec_pack_ack(NULL, FLEETBENCH__ACK__STATUS__REJECTED, "x",
				&buf, &len));
	CHECK_OK(codec_unpack_ack(buf, len, &a));
	codec_free_ack(a);
	a = NULL;
	free(buf);

	/* retry_after_ms: kept with RETRY_LATER, cut to its limit, left out
	 * of other statuses; an Ack carrying it otherwise is refused */
	CHECK_OK(codec_pack_ack_after(RUN_ID, FLEETBENCH__ACK__STATUS__RETRY_LATER,
				      NULL, 2500, &buf, &len));
	CHECK_OK(codec_unpack_ack(buf, len, &a));
	CHECK(a && a->has_retry_after_ms && a->retry_after_ms == 2500);
	codec_free_ack(a);
	a = NULL;
	free(buf);
	CHECK_OK(codec_pack_ack_after(RUN_ID, FLEETBENCH__ACK__STATUS__RETRY_LATER,
				      NULL, UINT32_MAX, &buf, &len));
	CHECK_OK(codec_unpack_ack(buf, len, &a));
	CHECK(a && a->retry_after_ms == CODEC_MAX_RETRY_AFTER_MS);
	codec_free_ack(a);
	a = NULL;
	free(buf);
	CHECK_OK(codec_pack_ack_after(RUN_ID, FLEETBENCH__ACK__STATUS__GRANTED,
				      NULL, 2500, &buf, &len));
	CHECK_OK(codec_unpack_ack(buf, len, &a));
	CHECK(a && !a->has_retry_after_ms);
	codec_free_ack(a);
	a = NULL;
	free(buf);
	raw.run_id = RUN_ID;
	raw.has_retry_after_ms = true;
	raw.retry_after_ms = 100;
	raw.status = FLEETBENCH__ACK__STATUS__COMMITTED;
	len = protobuf_c_message_pack(&raw.base, packed);
	CHECK_EQ_INT(codec_unpack_ack(packed, len, &a), -EBADMSG);
	raw.status = FLEETBENCH__ACK__STATUS__RETRY_LATER;
	raw.retry_after_ms = CODEC_MAX_RETRY_AFTER_MS + 1;
	len = protobuf_c_message_pack(&raw.base, packed);
	CHECK_EQ_INT(codec_unpack_ack(packed, len, &a), -EBADMSG);
	raw.has_retry_after_ms = false;

	/* a long reason is cut at the limit on a character boundary, a bad
	 * one before its first invalid byte */
	reason = repeat_char('a', CODEC_MAX_REASON + 8);
	memcpy(reason + CODEC_MAX_REASON - 1, "\xc3\xa9", 2);
	CHECK_OK(codec_pack_ack(RUN_ID, FLEETBENCH__ACK__STATUS__REJECTED,
				reason, &buf, &len));
	CHECK_OK(codec_unpack_ack(buf, len, &a));
	CHECK(a && strlen(a->reason) == CODEC_MAX_REASON - 1);
	codec_free_ack(a);
	a = NULL;
	free(buf);
	free(reason);
	CHECK_OK(codec_pack_ack(RUN_ID, FLEETBENCH__ACK__STATUS__REJECTED,
				"bad\xffrest", &buf, &len));
	CHECK_OK(codec_unpack_ack(buf, len, &a));
	if (a)
		CHECK_EQ_STR(a->reason, "bad");
	codec_free_ack(a);
	a = NULL;
	free(buf);

	/* garbage, truncations, unknown statuses, bad strings */
	rng_seed(&rng, 9);
	for (int i = 0; i < 2000; i++) {
		n = (size_t)rng_below(&rng, sizeof(junk) + 1);
		for (size_t k = 0; k < n; k++)
			junk[k] = (uint8_t)rng_next(&rng);
		r = codec_unpack_ack(junk, n, &a);
		if (r == 0) {
			/* random bytes can make a valid Ack; then it is one */
			CHECK(a->status >= 1 && a->status <= 5);
			codec_free_ack(a);
			a = NULL;
		} else {
			n_bad += r == -EBADMSG;
		}
	}
	CHECK(n_bad > 1900);
	CHECK_EQ_INT(codec_unpack_ack(NULL, 0, &a), -EBADMSG);
	CHECK_OK(codec_pack_ack(RUN_ID, FLEETBENCH__ACK__STATUS__COMMITTED,
				"ok", &buf, &len));
	for (size_t cut = 0; cut < len; cut++)
		if (cut != 40) /* run_id and status only: complete */
			CHECK_EQ_INT(codec_unpack_ack(buf, cut, &a), -EBADMSG);
	free(buf);
	CHECK_EQ_INT(codec_unpack_ack(junk, CODEC_MAX_ACK + 1, &a), -EBADMSG);

	raw.run_id = RUN_ID;
	raw.status = FLEETBENCH__ACK__STATUS__STATUS_UNSPECIFIED;
	len = protobuf_c_message_pack(&raw.base, packed);
	CHECK_EQ_INT(codec_unpack_ack(packed, len, &a), -EBADMSG);
	raw.status = 6;
	len = protobuf_c_message_pack(&raw.base, packed);
	CHECK_EQ_INT(codec_unpack_ack(packed, len, &a), -EBADMSG);
	raw.status = FLEETBENCH__ACK__STATUS__COMMITTED;
	raw.run_id = "not-a-uuid";
	len = protobuf_c_message_pack(&raw.base, packed);
	CHECK_EQ_INT(codec_unpack_ack(packed, len, &a), -EBADMSG);
	raw.run_id = RUN_ID;
	raw.reason = "bad\xc0\xafreason";
	len = protobuf_c_message_pack(&raw.base, packed);
	CHECK_EQ_INT(codec_unpack_ack(packed, len, &a), -EBADMSG);
	raw.reason = "badXreason";
	len = protobuf_c_message_pack(&raw.base, packed);
	((uint8_t *)memmem(packed, len, "X", 1))[0] = 0;
	CHECK_EQ_INT(codec_unpack_ack(packed, len, &a), -EBADMSG);
}

/*
 * Offers (docs/wire.md, "Offer and grant"): they round-trip, their first
 * bytes tell them from a Report either way, a collector older than offers
 * reads one as no Report, and a bad run id, size or extra field is refused.
 */
static void test_offer(void)
{
	Fleetbench__Offer raw = FLEETBENCH__OFFER__INIT;
	struct fixture f;
	uint8_t *buf = NULL, *rep_buf = NULL, packed[128];
	Fleetbench__Report *r = NULL;
	char err[CODEC_ERR_LEN], run_id[37];
	size_t len, rep_len;
	uint32_t bytes = 0;
	unsigned flags = 0;

	CHECK_OK(codec_pack_offer(RUN_ID, 22345, 0, &buf, &len));
	CHECK(len <= CODEC_MAX_OFFER);
	CHECK(codec_is_offer(buf, len));
	CHECK_OK(codec_unpack_offer(buf, len, run_id, &bytes, &flags, err));
	CHECK_EQ_STR(run_id, RUN_ID);
	CHECK_EQ_INT(bytes, 22345);
	CHECK_EQ_INT(flags, 0);
	free(buf);
	/* the flags of an agent that honours hints, coming back after one */
	CHECK_OK(codec_pack_offer(RUN_ID, 22345,
				  CODEC_OFFER_HINTS | CODEC_OFFER_RETURNING, &buf,
				  &len));
	CHECK(len <= CODEC_MAX_OFFER);
	CHECK(codec_is_offer(buf, len));
	CHECK_OK(codec_unpack_offer(buf, len, run_id, &bytes, &flags, err));
	CHECK_EQ_INT(flags, CODEC_OFFER_HINTS | CODEC_OFFER_RETURNING);
	/* an old collector: not a Report, so REJECTED without a run id */
	CHECK_EQ_INT(codec_unpack_report(buf, len, &r, err), -EBADMSG);
	CHECK(r == NULL);
	CHECK(strstr(err, "not a Report") != NULL);
	free(buf);

	/* a Report never reads as an Offer */
	fixture_init(&f);
	CHECK_OK(codec_pack_report(&f.r, &rep_buf, &rep_len));
	CHECK(!codec_is_offer(rep_buf, rep_len));
	CHECK_EQ_INT(codec_unpack_offer(rep_buf, rep_len, run_id, &bytes, &flags, err),
		     -EBADMSG);
	free(rep_buf);
	CHECK(!codec_is_offer((const uint8_t *)"\xa2", 1));

	CHECK_EQ_INT(codec_pack_offer("not-a-uuid", 10, 0, &buf, &len), -EINVAL);
	CHECK_EQ_INT(codec_pack_offer(RUN_ID, 0, 0, &buf, &len), -EINVAL);
	CHECK_EQ_INT(codec_pack_offer(RUN_ID, CODEC_MAX_MESSAGE + 1, 0, &buf, &len),
		     -EINVAL);

	raw.offer_run_id = "not-a-uuid";
	raw.offer_bytes = 10;
	len = protobuf_c_message_pack(&raw.base, packed);
	CHECK(codec_is_offer(packed, len));
	CHECK_EQ_INT(codec_unpack_offer(packed, len, run_id, &bytes, &flags, err),
		     -EBADMSG);
	CHECK(strstr(err, "offer_run_id") != NULL);
	raw.offer_run_id = RUN_ID;
	raw.offer_bytes = CODEC_MAX_MESSAGE + 1;
	len = protobuf_c_message_pack(&raw.base, packed);
	CHECK_EQ_INT(codec_unpack_offer(packed, len, run_id, &bytes, &flags, err),
		     -EBADMSG);
	CHECK(strstr(err, "offer_bytes") != NULL);
	raw.offer_bytes = 0;
	len = protobuf_c_message_pack(&raw.base, packed);
	CHECK_EQ_INT(codec_unpack_offer(packed, len, run_id, &bytes, &flags, err),
		     -EBADMSG);
	/* a field an Offer does not have: field 1 (a Report's) appended */
	raw.offer_bytes = 10;
	len = protobuf_c_message_pack(&raw.base, packed);
	packed[len++] = 0x08;
	packed[len++] = 0x01;
	CHECK_EQ_INT(codec_unpack_offer(packed, len, run_id, &bytes, &flags, err),
		     -EBADMSG);
	CHECK(strstr(err, "fields it does not have") != NULL);
	/* truncated, and too long */
	CHECK_EQ_INT(codec_unpack_offer(packed, 10, run_id, &bytes, &flags, err),
		     -EBADMSG);
	memset(packed, 0, sizeof(packed));
	CHECK_EQ_INT(codec_unpack_offer(packed, CODEC_MAX_OFFER + 1, run_id,
					&bytes, &flags, err),
		     -EBADMSG);
}

struct job {
	const uint8_t *buf;
	size_t len;
};

/* Unpacks run in parallel share nothing. */
static void *unpack_many(void *arg)
{
	const struct job *job = arg;
	char err[CODEC_ERR_LEN];
	intptr_t fails = 0;

	for (int i = 0; i < 300; i++) {
		Fleetbench__Report *u = NULL;

		fails += codec_unpack_report(job->buf, job->len, &u, err) != 0;
		codec_free_report(u);
	}
	return (void *)fails;
}

static void test_threads(void)
{
	struct fixture f;
	uint8_t *buf = NULL;
	struct job job = { 0 };
	pthread_t t[4];

	fixture_init(&f);
	CHECK_OK(codec_pack_report(&f.r, &buf, &job.len));
	job.buf = buf;
	for (int i = 0; i < 4; i++)
		CHECK_EQ_INT(pthread_create(&t[i], NULL, unpack_many, &job), 0);
	for (int i = 0; i < 4; i++) {
		void *fails = NULL;

		pthread_join(t[i], &fails);
		CHECK_EQ_INT((intptr_t)fails, 0);
	}
	free(buf);
}

int main(void)
{
	/* first, while the peak RSS is still the current one */
	test_budget();
	test_wire();
	test_ack();
	test_offer();
	test_threads();
	return check_summary();
}
