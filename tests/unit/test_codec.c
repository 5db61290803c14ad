/* SPDX-License-Identifier: MIT */
/*
 * The codec: a realistic Report survives pack and unpack unchanged; every
 * validation rule of docs/wire.md refuses what it names, with the field path
 * in the reason, both when validating a built Report and when the same
 * Report arrives as bytes; hostile bytes (garbage, truncation, huge length
 * prefixes, allocation amplification) give -EBADMSG within the unpack
 * budget; Acks round-trip and garbage Acks are refused; what the real
 * probe prints is a probe_json the codec takes.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "check.h"
#include "cleanup.h"
#include "clock.h"
#include "codec.h"
#include "pbjson.h"
#include "rand.h"
#include "run.h"

#define RUN_ID "3f2b8c1e-9a4d-4e7f-b1c2-5d6e7f809a1b"
#define MACHINE_ID "0123456789abcdef0123456789abcdef"
#define DAY_MS (24LL * 3600 * 1000)

/* ---- a realistic Report, built from parts a test may change ---- */

struct fixture {
	Fleetbench__Report r;
	Fleetbench__Host host;
	Fleetbench__Kernel kernel;
	Fleetbench__Benchmark b[2], *bp[2];
	Fleetbench__Param p[6], *pp[6];
	Fleetbench__Metric m[2], *mp[2];
	double ns[5], frac[5];
	Fleetbench__Window w[5], *wp[5];
	Fleetbench__Comparison c[2], *cp[2];
};

static const char probe_json[] =
	"{\"schema\":1,\"kernel\":{\"release\":\"6.1.0-18-cloud-amd64\"},"
	"\"thp\":{\"enabled\":\"always\",\"defrag\":\"madvise\"},"
	"\"labels\":{\"provider\":{\"value\":\"aws\",\"source\":\"flag\"}},"
	"\"hugepages\":[2048,1048576],\"steal_pct\":0.25,"
	"\"note\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xa7\",\"virt\":null}";

static void fixture_init(struct fixture *f)
{
	int64_t now = wall_ms();

	memset(f, 0, sizeof(*f));
	fleetbench__report__init(&f->r);
	fleetbench__host__init(&f->host);
	fleetbench__kernel__init(&f->kernel);

	f->host.provider = "aws";
	f->host.instance_type = "m7i.large";
	f->host.region = "eu-west-1";
	f->host.hostname = "ip-10-0-0-17";
	f->host.machine_id = MACHINE_ID;
	f->host.provider_source = "flag";
	f->host.instance_type_source = "dmi";
	f->host.region_source = "config";
	f->kernel.release = "6.1.0-18-cloud-amd64";
	f->kernel.version = "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1";
	f->kernel.cmdline = "BOOT_IMAGE=/vmlinuz root=/dev/nvme0n1p1 ro";

	for (size_t i = 0; i < 6; i++) {
		fleetbench__param__init(&f->p[i]);
		f->pp[i] = &f->p[i];
	}
	f->p[0].key = "chase_bytes";
	f->p[0].value_case = FLEETBENCH__PARAM__VALUE_INT_VALUE;
	f->p[0].int_value = 1LL << 30;
	f->p[1].key = "thp_enabled";
	f->p[1].value_case = FLEETBENCH__PARAM__VALUE_STRING_VALUE;
	f->p[1].string_value = "always";
	f->p[2].key = "target_fraction";
	f->p[2].value_case = FLEETBENCH__PARAM__VALUE_DOUBLE_VALUE;
	f->p[2].double_value = 0.975;
	f->p[3].key = "pinned";
	f->p[3].value_case = FLEETBENCH__PARAM__VALUE_BOOL_VALUE;
	f->p[3].bool_value = 1;
	/* a counter delta may be negative: no rule names it */
	f->p[4].key = "fill_thp_split_page";
	f->p[4].value_case = FLEETBENCH__PARAM__VALUE_INT_VALUE;
	f->p[4].int_value = -3;
	f->p[5].key = "sq_thread_idle_ms";
	f->p[5].value_case = FLEETBENCH__PARAM__VALUE_INT_VALUE;
	f->p[5].int_value = 0;

	for (size_t i = 0; i < 5; i++) {
		f->ns[i] = 71.5 + (double)i * 0.25;
		f->frac[i] = 0.96 + (double)i * 0.01;
		fleetbench__window__init(&f->w[i]);
		f->w[i].has_steal_pct = f->w[i].has_loadavg1 = 1;
		f->w[i].has_wall_s = f->w[i].has_noisy = 1;
		f->w[i].steal_pct = i == 3 ? 100 : 0.5 * (double)i;
		f->w[i].loadavg1 = 0.1 * (double)i;
		f->w[i].wall_s = 1.25 + (double)i;
		f->w[i].noisy = i == 3;
		f->wp[i] = &f->w[i];
	}
	f->w[4].has_steal_pct = 0; /* not measured: left out, not NaN */
	for (size_t i = 0; i < 2; i++) {
		fleetbench__metric__init(&f->m[i]);
		f->mp[i] = &f->m[i];
		f->m[i].n_samples = 5;
		f->m[i].samples = i ? f->frac : f->ns;
		fleetbench__benchmark__init(&f->b[i]);
		f->bp[i] = &f->b[i];
		f->b[i].benchmark = "thp_chase";
	}
	f->m[0].metric = "ns_per_access";
	f->m[0].unit = "ns";
	f->m[1].metric = "huge_fraction";
	f->m[1].unit = "fraction";

	f->b[0].variant = "thp_always";
	f->b[0].n_parameters = 6;
	f->b[0].parameters = f->pp;
	f->b[0].n_metrics = 2;
	f->b[0].metrics = f->mp;
	f->b[0].n_windows = 5;
	f->b[0].windows = f->wp;
	f->b[1].variant = "thp_never";
	f->b[1].skip_reason = "THP mode cannot be set: not root";

	for (size_t i = 0; i < 2; i++) {
		fleetbench__comparison__init(&f->c[i]);
		f->cp[i] = &f->c[i];
		f->c[i].benchmark = "thp_chase";
		f->c[i].metric = "ns_per_access";
		f->c[i].numerator = "thp_never";
		f->c[i].denominator = "thp_always";
	}
	f->c[0].name = "thp_gain";
	f->c[0].has_ratio = f->c[0].has_ci_low = f->c[0].has_ci_high = 1;
	f->c[0].has_level = 1;
	f->c[0].ratio = 1.42;
	f->c[0].ci_low = 1.38;
	f->c[0].ci_high = 1.47;
	f->c[0].level = 0.95;
	f->c[0].method = "ratio of medians, paired percentile bootstrap";
	f->c[1].name = "thp_gain_madvise";
	f->c[1].reason = "thp_never was skipped";

	f->r.schema_version = FLEETBENCH__SCHEMA_VERSION__CURRENT;
	f->r.run_id = RUN_ID;
	f->r.agent_version = "0.1.0";
	f->r.host = &f->host;
	f->r.kernel = &f->kernel;
	f->r.started_unix_ms = now - 90000;
	f->r.finished_unix_ms = now - 1000;
	f->r.probe_json = (char *)probe_json;
	f->r.n_benchmarks = 2;
	f->r.benchmarks = f->bp;
	f->r.n_comparisons = 2;
	f->r.comparisons = f->cp;
	f->r.profile = "quick";
	f->r.has_seed = 1;
	f->r.seed = 1234567890123LL; /* a multi-byte varint, packed last */
}

/*
 * Validating f gives exactly want (-EINVAL), or passes when want is NULL,
 * and unpacking the packed f says the same.
 */
static void expect_(struct fixture *f, const char *want, int line)
{
	char err[CODEC_ERR_LEN];
	Fleetbench__Report *u = NULL;
	uint8_t *buf = NULL;
	size_t len;
	int r, expected = want ? -EINVAL : 0;

	r = codec_validate_report(&f->r, wall_ms(), err);
	CHECK_(r == expected && !strcmp(err, want ? want : ""),
	       "line %d: validate: %d \"%s\", expected \"%s\"", line, r, err,
	       want ? want : "");
	r = codec_pack_report(&f->r, &buf, &len);
	CHECK_(r == 0, "line %d: pack: %d", line, r);
	if (r)
		return;
	r = codec_unpack_report(buf, len, &u, err);
	CHECK_(r == expected && u && !strcmp(err, want ? want : ""),
	       "line %d: unpack: %d \"%s\", expected \"%s\"", line, r, err,
	       want ? want : "");
	/* on -EINVAL too the run_id is there for the Ack */
	if (u)
		CHECK_(!strcmp(u->run_id, f->r.run_id), "line %d: run_id",
		       line);
	codec_free_report(u);
	free(buf);
}
#define expect_invalid(f, want) expect_(f, want, __LINE__)
#define expect_valid(f) expect_(f, NULL, __LINE__)

/* expect_() for cases[i] of a table, naming the case when it fails. */
static void expect_case(struct fixture *f, const char *want, size_t i)
{
	int failed = check_fail_;

	expect_(f, want, __LINE__);
	if (check_fail_ != failed)
		fprintf(stderr, "  (cases[%zu])\n", i);
}

/* Packs f, replaces the first occurrence of `from` by `to` (same length),
 * and expects the unpack to refuse it with want. */
static void expect_patched_(struct fixture *f, const char *from,
			    const char *to, size_t n, const char *want,
			    int line)
{
	char err[CODEC_ERR_LEN];
	Fleetbench__Report *u = NULL;
	uint8_t *buf = NULL, *at;
	size_t len;
	int r;

	CHECK_OK(codec_pack_report(&f->r, &buf, &len));
	at = buf ? memmem(buf, len, from, n) : NULL;
	CHECK_(at != NULL, "line %d: '%s' not in the packed report", line,
	       from);
	if (!at) {
		free(buf);
		return;
	}
	memcpy(at, to, n);
	r = codec_unpack_report(buf, len, &u, err);
	CHECK_(r == -EINVAL && !strcmp(err, want),
	       "line %d: unpack: %d \"%s\", expected \"%s\"", line, r, err,
	       want);
	codec_free_report(u);
	free(buf);
}
#define expect_patched(f, from, to, want)                                    \
	expect_patched_(f, from, to, sizeof(from) - 1, want, __LINE__)

static char *repeat_char(char c, size_t n)
{
	char *s = malloc(n + 1);

	memset(s, c, n);
	s[n] = '\0';
	return s;
}

/* ---- tests ---- */

static void test_uuid_utf8(void)
{
	char a[37], b[37];

	CHECK_OK(codec_uuid_new(a));
	CHECK_OK(codec_uuid_new(b));
	CHECK(codec_uuid_valid(a) && codec_uuid_valid(b));
	CHECK(strcmp(a, b) != 0);
	CHECK(a[14] == '4');
	CHECK(strchr("89ab", a[19]) != NULL);
	CHECK(codec_uuid_valid(RUN_ID));
	CHECK(!codec_uuid_valid("3F2B8C1E-9A4D-4E7F-B1C2-5D6E7F809A1B"));
	CHECK(!codec_uuid_valid("3f2b8c1e-9a4d-4e7f-b1c2-5d6e7f809a1"));
	CHECK(!codec_uuid_valid("3f2b8c1e-9a4d-4e7f-b1c2-5d6e7f809a1b0"));
	CHECK(!codec_uuid_valid("3f2b8c1e9a4d-4e7f-b1c2-5d6e7f809a1b0"));
	CHECK(!codec_uuid_valid("{3f2b8c1e-9a4d-4e7f-b1c2-5d6e7f809a1}"));
	CHECK(!codec_uuid_valid("3f2b8c1g-9a4d-4e7f-b1c2-5d6e7f809a1b"));
	CHECK(!codec_uuid_valid(""));
	CHECK(!codec_uuid_valid(NULL));

	CHECK(codec_utf8_valid("plain", 5));
	CHECK(codec_utf8_valid("", 0));
	CHECK(codec_utf8_valid("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xa7", 14));
	CHECK(codec_utf8_valid("\xf4\x8f\xbf\xbf", 4)); /* U+10FFFF */
	CHECK(codec_utf8_valid("\xed\x9f\xbf", 3)); /* U+D7FF */
	CHECK(!codec_utf8_valid("a\0b", 3)); /* NUL */
	CHECK(!codec_utf8_valid("\xc0\xaf", 2)); /* overlong '/' */
	CHECK(!codec_utf8_valid("\xc1\xbf", 2)); /* overlong */
	CHECK(!codec_utf8_valid("\xe0\x80\xaf", 3)); /* overlong */
	CHECK(!codec_utf8_valid("\xf0\x80\x80\xaf", 4)); /* overlong */
	CHECK(!codec_utf8_valid("\xed\xa0\x80", 3)); /* U+D800 surrogate */
	CHECK(!codec_utf8_valid("\xed\xbf\xbf", 3)); /* U+DFFF surrogate */
	CHECK(!codec_utf8_valid("\xf4\x90\x80\x80", 4)); /* U+110000 */
	CHECK(!codec_utf8_valid("\xf8\x88\x80\x80\x80", 5)); /* 5 bytes */
	CHECK(!codec_utf8_valid("\x80", 1)); /* lone continuation */
	CHECK(!codec_utf8_valid("\xe2\x82", 2)); /* truncated */
	CHECK(!codec_utf8_valid("\xe2\x28\xa1", 3)); /* bad continuation */
	CHECK(!codec_utf8_valid("\xff", 1));
}

static void test_round_trip(void)
{
	struct fixture f;
	char err[CODEC_ERR_LEN];
	Fleetbench__Report *u = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;

	fixture_init(&f);
	CHECK_OK(codec_validate_report(&f.r, wall_ms(), err));
	CHECK_EQ_STR(err, "");
	CHECK_OK(codec_pack_report(&f.r, &buf, &len));
	CHECK(len > 0 && len < 4096);
	CHECK_OK(codec_unpack_report(buf, len, &u, err));
	CHECK_EQ_STR(err, "");
	free(buf);
	if (!u)
		return;

	CHECK_EQ_INT(u->schema_version, 1);
	CHECK_EQ_STR(u->run_id, RUN_ID);
	CHECK_EQ_STR(u->agent_version, "0.1.0");
	CHECK_EQ_STR(u->host->provider, "aws");
	CHECK_EQ_STR(u->host->instance_type, "m7i.large");
	CHECK_EQ_STR(u->host->region, "eu-west-1");
	CHECK_EQ_STR(u->host->hostname, "ip-10-0-0-17");
	CHECK_EQ_STR(u->host->machine_id, MACHINE_ID);
	CHECK_EQ_STR(u->host->provider_source, "flag");
	CHECK_EQ_STR(u->host->instance_type_source, "dmi");
	CHECK_EQ_STR(u->host->region_source, "config");
	CHECK_EQ_STR(u->kernel->release, f.kernel.release);
	CHECK_EQ_STR(u->kernel->version, f.kernel.version);
	CHECK_EQ_STR(u->kernel->cmdline, f.kernel.cmdline);
	CHECK_EQ_INT(u->started_unix_ms, f.r.started_unix_ms);
	CHECK_EQ_INT(u->finished_unix_ms, f.r.finished_unix_ms);
	CHECK_EQ_STR(u->probe_json, probe_json);
	CHECK_EQ_STR(u->profile, "quick");
	CHECK(u->has_seed && u->seed == 1234567890123LL);

	CHECK_EQ_INT(u->n_benchmarks, 2);
	if (u->n_benchmarks == 2) {
		const Fleetbench__Benchmark *b = u->benchmarks[0];

		CHECK_EQ_STR(b->benchmark, "thp_chase");
		CHECK_EQ_STR(b->variant, "thp_always");
		CHECK(b->skip_reason == NULL);
		CHECK_EQ_INT(b->n_parameters, 6);
		for (size_t i = 0; i < b->n_parameters && i < 6; i++) {
			CHECK_EQ_STR(b->parameters[i]->key, f.p[i].key);
			CHECK_EQ_INT(b->parameters[i]->value_case,
				     f.p[i].value_case);
		}
		CHECK_EQ_INT(b->parameters[0]->int_value, 1LL << 30);
		CHECK_EQ_STR(b->parameters[1]->string_value, "always");
		CHECK(b->parameters[2]->double_value == 0.975);
		CHECK_EQ_INT(b->parameters[3]->bool_value, 1);
		CHECK_EQ_INT(b->parameters[4]->int_value, -3);
		CHECK_EQ_INT(b->n_metrics, 2);
		for (size_t i = 0; i < b->n_metrics && i < 2; i++) {
			CHECK_EQ_STR(b->metrics[i]->metric, f.m[i].metric);
			CHECK_EQ_STR(b->metrics[i]->unit, f.m[i].unit);
			CHECK_EQ_INT(b->metrics[i]->n_samples, 5);
			CHECK(b->metrics[i]->n_samples == 5 &&
			      !memcmp(b->metrics[i]->samples, f.m[i].samples,
				      5 * sizeof(double)));
		}
		CHECK_EQ_INT(b->n_windows, 5);
		for (size_t i = 0; i < b->n_windows && i < 5; i++) {
			const Fleetbench__Window *w = b->windows[i];

			CHECK_EQ_INT(w->has_steal_pct, i != 4);
			CHECK(w->steal_pct == f.w[i].steal_pct || i == 4);
			CHECK(w->loadavg1 == f.w[i].loadavg1);
			CHECK(w->wall_s == f.w[i].wall_s);
			CHECK_EQ_INT(w->noisy, i == 3);
		}
		CHECK_EQ_STR(u->benchmarks[1]->variant, "thp_never");
		CHECK_EQ_STR(u->benchmarks[1]->skip_reason,
			     f.b[1].skip_reason);
		CHECK_EQ_INT(u->benchmarks[1]->n_metrics, 0);
	}
	CHECK_EQ_INT(u->n_comparisons, 2);
	if (u->n_comparisons == 2) {
		const Fleetbench__Comparison *c = u->comparisons[0];

		CHECK_EQ_STR(c->name, "thp_gain");
		CHECK_EQ_STR(c->numerator, "thp_never");
		CHECK_EQ_STR(c->denominator, "thp_always");
		CHECK(c->has_ratio && c->ratio == 1.42);
		CHECK(c->has_ci_low && c->ci_low == 1.38);
		CHECK(c->has_ci_high && c->ci_high == 1.47);
		CHECK(c->has_level && c->level == 0.95);
		CHECK_EQ_STR(c->method, f.c[0].method);
		CHECK(!u->comparisons[1]->has_ratio);
		CHECK_EQ_STR(u->comparisons[1]->reason, "thp_never was skipped");
	}
	codec_free_report(u);
	codec_free_report(NULL);

	/* a probe-only run: no benchmarks, no profile, no seed */
	fixture_init(&f);
	f.r.n_benchmarks = f.r.n_comparisons = 0;
	f.r.profile = NULL;
	f.r.has_seed = 0;
	f.host.provider = f.host.provider_source = NULL;
	expect_valid(&f);
}

static void test_schema_and_ids(void)
{
	struct fixture f;
	char err[CODEC_ERR_LEN];
	uint8_t *buf;
	size_t len;

	fixture_init(&f);
	f.r.schema_version = 2;
	expect_invalid(&f, "schema_version: 2 is not supported (expected 1)");
	f.r.schema_version = 0;
	expect_invalid(&f, "schema_version: 0 is not supported (expected 1)");

	/* a run_id NULL is "missing" to validation, refused by pack */
	fixture_init(&f);
	f.r.run_id = NULL;
	CHECK_EQ_INT(codec_validate_report(&f.r, wall_ms(), err), -EINVAL);
	CHECK_EQ_STR(err, "run_id: missing");
	CHECK_EQ_INT(codec_pack_report(&f.r, &buf, &len), -EINVAL);

	fixture_init(&f);
	f.r.host = NULL;
	CHECK_EQ_INT(codec_validate_report(&f.r, wall_ms(), err), -EINVAL);
	CHECK_EQ_STR(err, "host: missing");
	CHECK_EQ_INT(codec_pack_report(&f.r, &buf, &len), -EINVAL);
	CHECK_EQ_INT(codec_validate_report(NULL, wall_ms(), err), -EINVAL);

}

/* A string field of f passes at its limit, and one byte over it gives
 * want. */
static void expect_limit_(struct fixture *f, char **field, size_t limit,
			  const char *want, int line)
{
	char *s = repeat_char('a', limit + 1);

	fixture_init(f);
	*field = s + 1;
	expect_(f, NULL, line);
	*field = s;
	expect_(f, want, line);
	free(s);
}
#define expect_limit(f, field, limit, want)                                  \
	expect_limit_(f, field, limit, want, __LINE__)

/* An input text and what is said about it. */
struct text_case {
	const char *text, *note;
};

static void test_strings(void)
{
	static const struct text_case bad[] = {
		{ "x\xc0\xaf", "overlong 2-byte" },
		{ "x\xe0\x80\xaf", "overlong 3-byte" },
		{ "x\xf0\x80\x80\xaf", "overlong 4-byte" },
		{ "x\xed\xa0\x80", "surrogate" },
		{ "x\xf4\x90\x80\x80", "above U+10FFFF" },
		{ "x\x80", "lone continuation" },
		{ "x\xe2\x82", "truncated" },
		{ "x\xff", "0xff" },
	};
	struct fixture f;
	char *s;

	expect_limit(&f, &f.host.hostname, CODEC_MAX_STRING,
		     "host.hostname: 1025 bytes, limit 1024");
	expect_limit(&f, &f.kernel.cmdline, CODEC_MAX_CMDLINE,
		     "kernel.cmdline: 8193 bytes, limit 8192");
	expect_limit(&f, &f.b[1].skip_reason, CODEC_MAX_REASON,
		     "benchmarks[1].skip_reason: 4097 bytes, limit 4096");
	expect_limit(&f, &f.c[1].reason, CODEC_MAX_REASON,
		     "comparisons[1].reason: 4097 bytes, limit 4096");

	fixture_init(&f);
	s = repeat_char(' ', CODEC_MAX_PROBE_JSON + 1);
	s[0] = '{';
	s[CODEC_MAX_PROBE_JSON] = '}';
	f.r.probe_json = s;
	expect_invalid(&f, "probe_json: 1048577 bytes, limit 1048576");
	s[CODEC_MAX_PROBE_JSON - 1] = '}';
	s[CODEC_MAX_PROBE_JSON] = '\0';
	expect_valid(&f);
	free(s);

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		fixture_init(&f);
		f.r.agent_version = (char *)bad[i].text;
		expect_case(&f, "agent_version: invalid UTF-8 at byte 1", i);
	}
	fixture_init(&f);
	f.b[0].parameters[1]->string_value = "al\xed\xb0\x80ways";
	expect_invalid(&f,
		       "benchmarks[0].parameters[1].string_value: invalid UTF-8 at byte 2");

	/* NUL can only arrive on the wire: patch it into the packed bytes */
	fixture_init(&f);
	f.host.hostname = "hostXname";
	expect_patched(&f, "hostXname", "host\0name",
		       "host.hostname: NUL byte at offset 4");
	fixture_init(&f);
	f.b[0].parameters[1]->string_value = "alwaysX";
	expect_patched(&f, "alwaysX", "always\0",
		       "benchmarks[0].parameters[1].string_value: NUL byte at offset 6");
	/* a valid UUID followed by NUL and more is not that UUID */
	fixture_init(&f);
	f.r.run_id = RUN_ID "X";
	expect_patched(&f, RUN_ID "X", RUN_ID "\0",
		       "run_id: NUL byte at offset 36");
	fixture_init(&f);
	expect_patched(&f, "\"schema\"", "\"sch\0ma\"",
		       "probe_json: NUL byte at offset 5");
}

static void test_numbers(void)
{
	struct fixture f;
	/* one double of the fixture set to a value, and the reason */
	const struct {
		double *at, value;
		const char *want;
	} cases[] = {
		{ &f.ns[3], NAN,
		  "benchmarks[0].metrics[0].samples[3]: not finite (NaN)" },
		{ &f.ns[3], INFINITY,
		  "benchmarks[0].metrics[0].samples[3]: not finite (+inf)" },
		{ &f.ns[3], -INFINITY,
		  "benchmarks[0].metrics[0].samples[3]: not finite (-inf)" },
		{ &f.c[0].ratio, NAN, "comparisons[0].ratio: not finite (NaN)" },
		{ &f.c[0].ci_high, INFINITY,
		  "comparisons[0].ci_high: not finite (+inf)" },
		{ &f.w[2].wall_s, -INFINITY,
		  "benchmarks[0].windows[2].wall_s: not finite (-inf)" },
		{ &f.w[1].steal_pct, NAN,
		  "benchmarks[0].windows[1].steal_pct: not finite (NaN)" },
		{ &f.p[2].double_value, NAN,
		  "benchmarks[0].parameters[2].double_value: not finite (NaN)" },
		/* an absent optional double is not looked at */
		{ &f.w[4].steal_pct, NAN, NULL },
		/* ranges */
		{ &f.w[1].steal_pct, 100.5,
		  "benchmarks[0].windows[1].steal_pct: 100.5 is out of range" },
		{ &f.w[1].steal_pct, -0.5,
		  "benchmarks[0].windows[1].steal_pct: -0.5 is out of range" },
		{ &f.w[0].loadavg1, -1,
		  "benchmarks[0].windows[0].loadavg1: -1 is out of range" },
		{ &f.w[2].wall_s, -0.25,
		  "benchmarks[0].windows[2].wall_s: -0.25 is out of range" },
		{ &f.ns[1], -2,
		  "benchmarks[0] thp_chase/thp_always: ns_per_access: sample 1 is -2 ns, outside [0, inf]" },
		{ &f.frac[0], 1.5,
		  "benchmarks[0] thp_chase/thp_always: huge_fraction: sample 0 is 1.5 fraction, outside [0, 1]" },
		{ &f.c[0].level, 1.5, "comparisons[0].level: 1.5 is outside (0, 1)" },
		{ &f.c[0].level, 0, "comparisons[0].level: 0 is outside (0, 1)" },
		{ &f.c[0].ci_low, 1.5, "comparisons[0].ci_low: above ci_high" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		fixture_init(&f);
		*cases[i].at = cases[i].value;
		expect_case(&f, cases[i].want, i);
	}

	/* samples of a count cannot be negative; an unknown unit's can */
	fixture_init(&f);
	f.m[1].unit = "count";
	f.frac[4] = -1;
	expect_invalid(&f,
		       "benchmarks[0] thp_chase/thp_always: huge_fraction: sample 4 is -1 count, outside [0, inf]");
	f.m[1].unit = "delta";
	expect_valid(&f);
	/* a comparison is named once */
	fixture_init(&f);
	f.c[1].name = f.c[0].name;
	expect_invalid(&f, "comparisons[1].name: same as comparisons[0]");
	/* sizes and durations cannot be negative */
	fixture_init(&f);
	f.p[0].int_value = -1;
	expect_invalid(&f,
		       "benchmarks[0].parameters[0].int_value: -1 is negative (a size, duration or count)");
	fixture_init(&f);
	f.p[5].int_value = -10;
	expect_invalid(&f,
		       "benchmarks[0].parameters[5].int_value: -10 is negative (a size, duration or count)");
}

/* proto/bounds.h: a figure that cannot be true is refused, named. */
static void test_bounds(void)
{
	struct fixture f;

	/* 2^64 ns read as us: no I/O lasts longer than the 0.5 s it ran */
	fixture_init(&f);
	f.m[0].metric = "lat_p99_us";
	f.m[0].unit = "us";
	f.b[0].benchmark = "randread";
	f.b[0].variant = "io_uring";
	f.w[1].wall_s = 0.5;
	f.ns[1] = 18446744073709551616.0 / 1e3;
	expect_invalid(&f,
		       "benchmarks[0] randread/io_uring: lat_p99_us: sample 1 is 1.84467e+16 us, longer than its 0.5 s window");
	/* that window's wall time unknown: nothing bounds the sample */
	f.w[1].has_wall_s = 0;
	expect_valid(&f);
	/* nor does a sample past the last window */
	fixture_init(&f);
	f.b[0].n_windows = 1;
	f.ns[3] = 5e9;
	expect_valid(&f);
	/* as long as its window, within the clock's slack: fine */
	fixture_init(&f);
	f.w[0].wall_s = 1.0;
	f.ns[0] = 1e9;
	expect_valid(&f);
	f.ns[0] = 1.2e9;
	expect_invalid(&f,
		       "benchmarks[0] thp_chase/thp_always: ns_per_access: sample 0 is 1.2e+09 ns, longer than its 1 s window");
	/* rates have a ceiling */
	fixture_init(&f);
	f.m[0].metric = "iops";
	f.m[0].unit = "IO/s";
	f.ns[2] = 2e8;
	expect_invalid(&f,
		       "benchmarks[0] thp_chase/thp_always: iops: sample 2 is 2e+08 IO/s, outside [0, 1e+08]");
}

/* A variant is ok, skipped or failed; a failed one measured nothing. */
static void test_failures(void)
{
	struct fixture f;
	char *s;

	/* SIGSEGV in one variant: the report is taken, with the text */
	fixture_init(&f);
	f.b[1].skip_reason = NULL;
	f.b[1].failure = "SIGSEGV in thp_chase/thp_never (repeat 2 of 3)";
	expect_valid(&f);
	/* failed or skipped, not both */
	f.b[1].skip_reason = "THP mode cannot be set: not root";
	expect_invalid(&f,
		       "benchmarks[1] thp_chase/thp_never: both failure and skip_reason (a variant fails or is skipped)");
	/* a failed variant carries no metrics, no windows */
	fixture_init(&f);
	f.b[0].failure = "timeout after 60 s in thp_chase/thp_always";
	expect_invalid(&f,
		       "benchmarks[0] thp_chase/thp_always: failed, yet carries 2 metrics and 5 windows (a failed variant carries none)");
	f.b[0].n_metrics = 0;
	expect_invalid(&f,
		       "benchmarks[0] thp_chase/thp_always: failed, yet carries 0 metrics and 5 windows (a failed variant carries none)");
	f.b[0].n_windows = 0;
	expect_valid(&f);
	/* the text says what failed, within the reason limit */
	f.b[0].failure = "";
	expect_invalid(&f,
		       "benchmarks[0].failure: empty (a failure says what failed)");
	s = repeat_char('a', CODEC_MAX_REASON + 1);
	f.b[0].failure = s + 1;
	expect_valid(&f);
	f.b[0].failure = s;
	expect_invalid(&f, "benchmarks[0].failure: 4097 bytes, limit 4096");
	free(s);
	fixture_init(&f);
	f.b[1].skip_reason = NULL;
	f.b[1].failure = "SIGBUS \xff";
	expect_invalid(&f, "benchmarks[1].failure: invalid UTF-8 at byte 7");
}

static void method_init(Fleetbench__Method *m, const char *key,
			const char *profile)
{
	fleetbench__method__init(m);
	m->key = (char *)key;
	m->profile = (char *)profile;
	m->repeats = 3;
	m->chase_bytes = 128u << 20;
	m->chase_accesses = 1000000;
	m->fault_bytes = 64u << 20;
	m->file_bytes = 256u << 20;
	m->io_ms = 2000;
	m->iodepth = 32;
	m->seq_bytes = 256u << 20;
	m->seq_block = 1u << 20;
	m->fs_increments = 1000;
}

static void test_method(void)
{
	static char *only[CODEC_MAX_METHOD_ONLY + 1] = {
		"randread", "seqwrite", "thp_chase", "thp_fault", "randread",
		"seqwrite", "thp_chase", "thp_fault", "randread", "seqwrite",
		"thp_chase", "thp_fault", "randread", "seqwrite", "thp_chase",
		"thp_fault", "randread",
	};
	struct fixture f;
	Fleetbench__Method m;
	Fleetbench__Report *u = NULL;
	char err[CODEC_ERR_LEN], *s;
	uint8_t *buf = NULL;
	size_t len;

	/* absent (an older agent): valid, as before */
	fixture_init(&f);
	expect_valid(&f);
	method_init(&m, "quick", "quick");
	f.r.method = &m;
	expect_valid(&f);
	/* it travels */
	m.key = "quick+iodepth=64+only=randread,seqwrite";
	m.iodepth = 64;
	m.n_only = 2;
	m.only = only;
	expect_valid(&f);
	CHECK_OK(codec_pack_report(&f.r, &buf, &len));
	CHECK_OK(codec_unpack_report(buf, len, &u, err));
	CHECK_(u && u->method && !strcmp(u->method->key, m.key) &&
		       u->method->iodepth == 64 && u->method->n_only == 2 &&
		       !strcmp(u->method->only[1], "seqwrite"),
	       "%s", "method round trip");
	codec_free_report(u);
	free(buf);
	m.n_only = 0;
	m.key = "standard+chase_bytes=64M";
	m.profile = "standard";
	expect_valid(&f);
	m.key = "standard+randread_file";
	m.randread_file = 1;
	expect_valid(&f);
	/* the key starts with the profile, then ends or goes on with '+' */
	m.key = "standardx";
	expect_invalid(&f,
		       "method.key: does not start with the profile 'standard' followed by its end or '+'");
	m.key = "quick+chase_bytes=64M";
	expect_invalid(&f,
		       "method.key: does not start with the profile 'standard' followed by its end or '+'");
	m.key = "standard+Chase";
	expect_invalid(&f,
		       "method.key: byte 9 (0x43) is not one of [a-z0-9_+=,.-KMGT]");
	m.key = "standard+chase bytes";
	expect_invalid(&f,
		       "method.key: byte 14 (0x20) is not one of [a-z0-9_+=,.-KMGT]");
	m.key = "";
	expect_invalid(&f, "method.key: empty");
	s = repeat_char('a', CODEC_MAX_METHOD_KEY + 1);
	memcpy(s, "standard+", 9);
	m.key = s + 1;
	expect_invalid(&f,
		       "method.key: does not start with the profile 'standard' followed by its end or '+'");
	m.key = s;
	expect_invalid(&f, "method.key: 257 bytes, limit 256");
	s[CODEC_MAX_METHOD_KEY] = '\0';
	expect_valid(&f);
	free(s);
	/* a profile of its own: at most 64 bytes */
	s = repeat_char('p', CODEC_MAX_METHOD_PROFILE + 1);
	m.key = m.profile = s + 1;
	expect_valid(&f);
	m.key = m.profile = s;
	expect_invalid(&f, "method.profile: 65 bytes, limit 64");
	free(s);
	/* sizes and counts are positive */
	method_init(&m, "full", "full");
	m.repeats = 0;
	expect_invalid(&f, "method.repeats: 0 is not positive");
	method_init(&m, "full", "full");
	m.iodepth = -1;
	expect_invalid(&f, "method.iodepth: -1 is not positive");
	method_init(&m, "full", "full");
	m.seq_block = 0;
	expect_invalid(&f, "method.seq_block: 0 is not positive");
	/* only: benchmark names, at most 16 */
	method_init(&m, "full+only=randread", "full");
	m.n_only = 1;
	m.only = only;
	expect_valid(&f);
	m.n_only = CODEC_MAX_METHOD_ONLY + 1;
	expect_invalid(&f, "method.only: 17 entries, limit 16");
	m.n_only = 1;
	m.only = (char *[]){ "rand read" };
	expect_invalid(&f,
		       "method.only[0]: not a benchmark name ([a-z0-9_])");
	s = repeat_char('b', CODEC_MAX_METHOD_NAME + 1);
	m.only = &s;
	expect_invalid(&f, "method.only[0]: 65 bytes, expected 1 to 64");
	s[CODEC_MAX_METHOD_NAME] = '\0';
	expect_valid(&f);
	free(s);
}

/* ---- capabilities ---- */

struct caps {
	Fleetbench__Capabilities c;
	Fleetbench__HugepagePool h[2], *hp[2];
	char *ops[4], *feats[2];
};

/* What the probe of a KVM guest with 2 MiB and 1 GiB pools reports. */
static void caps_init(struct caps *k)
{
	static char *const ops[] = { "NOP", "READV", "WRITEV", "READ_FIXED" };
	static char *const feats[] = { "SINGLE_MMAP", "FAST_POLL" };

	memset(k, 0, sizeof(*k));
	fleetbench__capabilities__init(&k->c);
	memcpy(k->ops, ops, sizeof(ops));
	memcpy(k->feats, feats, sizeof(feats));
	for (size_t i = 0; i < 2; i++) {
		fleetbench__hugepage_pool__init(&k->h[i]);
		k->hp[i] = &k->h[i];
		k->h[i].has_nr = k->h[i].has_free = 1;
	}
	k->h[0].size_kb = 2048;
	k->h[0].nr = 512;
	k->h[0].free = 500;
	k->h[1].size_kb = 1048576;
	k->h[1].nr = k->h[1].free = 0;
	k->c.thp_enabled = "madvise";
	k->c.thp_defrag = "defer+madvise";
	k->c.thp_shmem_enabled = "within_size";
	k->c.n_hugepages = 2;
	k->c.hugepages = k->hp;
	k->c.has_io_uring_disabled = 1;
	k->c.io_uring_disabled = 0;
	k->c.io_uring_setup = "ok";
	k->c.has_io_uring_setup_errno = 1;
	k->c.io_uring_setup_errno = 0;
	k->c.sqpoll = "EPERM";
	k->c.has_sqpoll_errno = 1;
	k->c.sqpoll_errno = EPERM;
	k->c.n_io_uring_opcodes = 4;
	k->c.io_uring_opcodes = k->ops;
	k->c.n_io_uring_features = 2;
	k->c.io_uring_features = k->feats;
	k->c.has_vcpus = 1;
	k->c.vcpus = 2;
	k->c.has_memory_kb = 1;
	k->c.memory_kb = 4015608;
	k->c.cpu_model = "Intel\xc2\xae Xeon\xc2\xae Platinum 8259CL CPU @ 2.50GHz";
	k->c.vm = "kvm";
	k->c.container = "none";
}

/* The fixture with k's capabilities, changed by stmt, gives want. */
#define caps_case(stmt, want)                                                \
	do {                                                                 \
		fixture_init(&f);                                            \
		caps_init(&k);                                               \
		f.r.capabilities = &k.c;                                     \
		stmt;                                                        \
		expect_(&f, want, __LINE__);                                 \
	} while (0)

static void test_capabilities(void)
{
	struct fixture f;
	struct caps k;
	Fleetbench__Report *u = NULL;
	Fleetbench__HugepagePool many[CODEC_MAX_HUGEPAGE_SIZES + 1],
		*manyp[CODEC_MAX_HUGEPAGE_SIZES + 1];
	char *names[CODEC_MAX_IOURING_NAMES + 1], err[CODEC_ERR_LEN], *s;
	uint8_t *buf = NULL;
	size_t len;

	/* absent (an older agent), empty (all unknown) and full: valid */
	fixture_init(&f);
	expect_valid(&f);
	caps_case(fleetbench__capabilities__init(&k.c), NULL);
	caps_case((void)0, NULL);
	/* and every field travels */
	CHECK_OK(codec_pack_report(&f.r, &buf, &len));
	CHECK_OK(codec_unpack_report(buf, len, &u, err));
	CHECK(u && u->capabilities);
	if (u && u->capabilities) {
		const Fleetbench__Capabilities *c = u->capabilities;

		CHECK_EQ_STR(c->thp_enabled, "madvise");
		CHECK_EQ_STR(c->thp_defrag, "defer+madvise");
		CHECK_EQ_STR(c->thp_shmem_enabled, "within_size");
		CHECK(c->n_hugepages == 2 && c->hugepages[0]->size_kb == 2048 &&
		      c->hugepages[0]->nr == 512 &&
		      c->hugepages[0]->free == 500 &&
		      c->hugepages[1]->size_kb == 1048576 &&
		      c->hugepages[1]->has_free);
		CHECK(c->has_io_uring_disabled && c->io_uring_disabled == 0);
		CHECK_EQ_STR(c->io_uring_setup, "ok");
		CHECK(c->has_io_uring_setup_errno &&
		      c->io_uring_setup_errno == 0);
		CHECK_EQ_STR(c->sqpoll, "EPERM");
		CHECK(c->has_sqpoll_errno && c->sqpoll_errno == EPERM);
		CHECK(c->n_io_uring_opcodes == 4 &&
		      !strcmp(c->io_uring_opcodes[3], "READ_FIXED"));
		CHECK(c->n_io_uring_features == 2 &&
		      !strcmp(c->io_uring_features[1], "FAST_POLL"));
		CHECK(c->has_vcpus && c->vcpus == 2);
		CHECK(c->has_memory_kb && c->memory_kb == 4015608);
		CHECK_EQ_STR(c->cpu_model, k.c.cpu_model);
		CHECK_EQ_STR(c->vm, "kvm");
		CHECK_EQ_STR(c->container, "none");
	}
	codec_free_report(u);
	free(buf);

	/* THP modes */
	caps_case(k.c.thp_enabled = "always", NULL);
	caps_case(k.c.thp_enabled = "Madvise",
		  "capabilities.thp_enabled: bad bytes, not [a-z_+]");
	caps_case(k.c.thp_defrag = "defer madvise",
		  "capabilities.thp_defrag: bad bytes, not [a-z_+]");
	caps_case(k.c.thp_shmem_enabled = "",
		  "capabilities.thp_shmem_enabled: empty, not [a-z_+]");
	caps_case(k.c.thp_enabled = "madvise\xc3",
		  "capabilities.thp_enabled: invalid UTF-8 at byte 7");
	s = repeat_char('a', CODEC_MAX_CAP_NAME + 1);
	caps_case(k.c.thp_enabled = s,
		  "capabilities.thp_enabled: 65 bytes, limit 64");
	caps_case(k.c.thp_enabled = s + 1, NULL);
	free(s);

	/* setup results: "ok" with 0, an errno's name with its number */
	caps_case(k.c.io_uring_setup = "EPERM"; k.c.io_uring_setup_errno = 1,
		  NULL);
	caps_case(k.c.io_uring_setup = "ERRNO_200";
		  k.c.io_uring_setup_errno = 200, NULL);
	caps_case(k.c.io_uring_setup = "EPERM",
		  "capabilities.io_uring_setup_errno: 0 is outside [1, 4095] for a failed setup");
	caps_case(k.c.sqpoll_errno = CODEC_MAX_ERRNO + 1,
		  "capabilities.sqpoll_errno: 4096 is outside [1, 4095] for a failed setup");
	caps_case(k.c.sqpoll_errno = -1,
		  "capabilities.sqpoll_errno: -1 is outside [1, 4095] for a failed setup");
	caps_case(k.c.io_uring_setup_errno = 5,
		  "capabilities.io_uring_setup_errno: 5, but io_uring_setup is \"ok\" (expected 0)");
	caps_case(k.c.io_uring_setup = "eperm",
		  "capabilities.io_uring_setup: neither \"ok\" nor an errno name (E[A-Z0-9_]+)");
	caps_case(k.c.sqpoll = "E",
		  "capabilities.sqpoll: neither \"ok\" nor an errno name (E[A-Z0-9_]+)");
	caps_case(k.c.sqpoll = "OK",
		  "capabilities.sqpoll: neither \"ok\" nor an errno name (E[A-Z0-9_]+)");
	caps_case(k.c.sqpoll = NULL,
		  "capabilities.sqpoll_errno: set without capabilities.sqpoll");
	caps_case(k.c.sqpoll = NULL; k.c.has_sqpoll_errno = 0, NULL);
	caps_case(k.c.has_io_uring_setup_errno = 0, NULL);

	/* io_uring_disabled: 0, 1 or 2 */
	caps_case(k.c.io_uring_disabled = 2, NULL);
	caps_case(k.c.io_uring_disabled = 3,
		  "capabilities.io_uring_disabled: 3 is not 0, 1 or 2");
	caps_case(k.c.io_uring_disabled = -1,
		  "capabilities.io_uring_disabled: -1 is not 0, 1 or 2");

	/* opcode and feature names: [A-Z0-9_], each once, 256 at most */
	caps_case(k.ops[2] = "write v",
		  "capabilities.io_uring_opcodes[2]: not a name of [A-Z0-9_]");
	caps_case(k.ops[1] = "",
		  "capabilities.io_uring_opcodes[1]: not a name of [A-Z0-9_]");
	caps_case(k.ops[3] = "NOP",
		  "capabilities.io_uring_opcodes[3]: same as io_uring_opcodes[0]");
	caps_case(k.feats[1] = "fast_poll",
		  "capabilities.io_uring_features[1]: not a name of [A-Z0-9_]");
	caps_case(k.feats[1] = "SINGLE_MMAP",
		  "capabilities.io_uring_features[1]: same as io_uring_features[0]");
	s = repeat_char('A', CODEC_MAX_CAP_NAME + 1);
	caps_case(k.ops[0] = s,
		  "capabilities.io_uring_opcodes[0]: 65 bytes, limit 64");
	caps_case(k.ops[0] = s + 1, NULL);
	free(s);
	for (size_t i = 0; i <= CODEC_MAX_IOURING_NAMES; i++)
		if (asprintf(&names[i], "OP_%zu", i) < 0)
			names[i] = NULL;
	caps_case(k.c.io_uring_opcodes = names;
		  k.c.n_io_uring_opcodes = CODEC_MAX_IOURING_NAMES, NULL);
	caps_case(k.c.io_uring_features = names;
		  k.c.n_io_uring_features = CODEC_MAX_IOURING_NAMES + 1,
		  "capabilities.io_uring_features: 257 entries, limit 256");
	for (size_t i = 0; i <= CODEC_MAX_IOURING_NAMES; i++)
		free(names[i]);

	/* hugepage sizes: powers of two >= 4 KiB, ascending, each once */
	caps_case(k.h[0].size_kb = 64, NULL);
	caps_case(k.h[0].size_kb = 3000,
		  "capabilities.hugepages[0].size_kb: 3000 is not a power of two of at least 4");
	caps_case(k.h[0].size_kb = 2,
		  "capabilities.hugepages[0].size_kb: 2 is not a power of two of at least 4");
	caps_case(k.h[1].size_kb = 0,
		  "capabilities.hugepages[1].size_kb: 0 is not a power of two of at least 4");
	caps_case(k.h[1].size_kb = 1024,
		  "capabilities.hugepages[1].size_kb: 1024 is not above hugepages[0]'s (sizes ascend, each once)");
	caps_case(k.h[1].size_kb = 2048,
		  "capabilities.hugepages[1].size_kb: 2048 is not above hugepages[0]'s (sizes ascend, each once)");
	caps_case(k.h[0].free = 513,
		  "capabilities.hugepages[0].free: 513 is above nr 512");
	caps_case(k.h[0].free = 513; k.h[0].has_nr = 0, NULL);
	caps_case(k.h[0].has_free = 0, NULL);
	for (size_t i = 0; i <= CODEC_MAX_HUGEPAGE_SIZES; i++) {
		fleetbench__hugepage_pool__init(&many[i]);
		many[i].size_kb = 4ull << i;
		manyp[i] = &many[i];
	}
	caps_case(k.c.hugepages = manyp;
		  k.c.n_hugepages = CODEC_MAX_HUGEPAGE_SIZES, NULL);
	caps_case(k.c.hugepages = manyp;
		  k.c.n_hugepages = CODEC_MAX_HUGEPAGE_SIZES + 1,
		  "capabilities.hugepages: 17 entries, limit 16");

	/* the host's size */
	caps_case(k.c.vcpus = CODEC_MAX_VCPUS, NULL);
	caps_case(k.c.vcpus = 0, "capabilities.vcpus: 0 is outside [1, 65536]");
	caps_case(k.c.vcpus = CODEC_MAX_VCPUS + 1,
		  "capabilities.vcpus: 65537 is outside [1, 65536]");
	caps_case(k.c.has_vcpus = 0; k.c.vcpus = 0, NULL);
	caps_case(k.c.memory_kb = 0,
		  "capabilities.memory_kb: 0 is not positive");

	/* cpu_model: printable text; vm and container: short names */
	caps_case(k.c.cpu_model = "AMD EPYC\t7B13",
		  "capabilities.cpu_model: bad bytes, not printable");
	caps_case(k.c.cpu_model = "",
		  "capabilities.cpu_model: empty, not printable");
	s = repeat_char('x', CODEC_MAX_CPU_MODEL + 1);
	caps_case(k.c.cpu_model = s,
		  "capabilities.cpu_model: 257 bytes, limit 256");
	caps_case(k.c.cpu_model = s + 1, NULL);
	free(s);
	caps_case(k.c.vm = "qemu-tcg", NULL);
	caps_case(k.c.vm = "KVM", "capabilities.vm: bad bytes, not [a-z0-9_.+-]");
	caps_case(k.c.container = "docker/1",
		  "capabilities.container: bad bytes, not [a-z0-9_.+-]");
	caps_case(k.c.container = "",
		  "capabilities.container: empty, not [a-z0-9_.+-]");
}

static void test_times(void)
{
	struct fixture f;
	char want[CODEC_ERR_LEN];
	int64_t now = wall_ms();

	fixture_init(&f);
	f.r.started_unix_ms = 1000;
	expect_invalid(&f, "started_unix_ms: 1000 is before 2020-01-01");
	f.r.started_unix_ms = CODEC_MIN_TIME_MS - 1;
	expect_invalid(&f,
		       "started_unix_ms: 1577836799999 is before 2020-01-01");
	f.r.started_unix_ms = -5;
	expect_invalid(&f, "started_unix_ms: -5 is before 2020-01-01");
	f.r.started_unix_ms = CODEC_MIN_TIME_MS;
	expect_valid(&f);

	fixture_init(&f);
	f.r.finished_unix_ms = now + 2 * DAY_MS;
	snprintf(want, sizeof(want),
		 "finished_unix_ms: %lld is more than a day in the future",
		 (long long)f.r.finished_unix_ms);
	expect_invalid(&f, want);
	f.r.finished_unix_ms = INT64_MAX;
	snprintf(want, sizeof(want),
		 "finished_unix_ms: %lld is more than a day in the future",
		 (long long)INT64_MAX);
	expect_invalid(&f, want);
	/* a clock a few hours ahead is tolerated */
	f.r.finished_unix_ms = now + DAY_MS / 4;
	expect_valid(&f);

	fixture_init(&f);
	f.r.finished_unix_ms = f.r.started_unix_ms - 1;
	expect_invalid(&f, "finished_unix_ms: before started_unix_ms");
	f.r.finished_unix_ms = f.r.started_unix_ms;
	expect_valid(&f);
}

/* n pointers to the same element, for repeated fields past their limit */
static void *copies(void *elt, size_t n)
{
	void **v = calloc(n, sizeof(*v));

	for (size_t i = 0; i < n; i++)
		v[i] = elt;
	return v;
}

static void test_counts(void)
{
	struct fixture f;
	double *samples;

	fixture_init(&f);
	f.r.benchmarks = copies(&f.b[1], CODEC_MAX_BENCHMARKS + 1);
	f.r.n_benchmarks = CODEC_MAX_BENCHMARKS + 1;
	expect_invalid(&f, "benchmarks: 257 entries, limit 256");
	/* at the limit the count passes; the copies are then duplicates */
	f.r.n_benchmarks = CODEC_MAX_BENCHMARKS;
	expect_invalid(&f,
		       "benchmarks[1]: same benchmark and variant as benchmarks[0]");
	free(f.r.benchmarks);

	fixture_init(&f);
	f.r.comparisons = copies(&f.c[0], CODEC_MAX_COMPARISONS + 1);
	f.r.n_comparisons = CODEC_MAX_COMPARISONS + 1;
	expect_invalid(&f, "comparisons: 257 entries, limit 256");
	/* at the limit the count passes; the copies are then duplicates */
	f.r.n_comparisons = CODEC_MAX_COMPARISONS;
	expect_invalid(&f, "comparisons[1].name: same as comparisons[0]");
	free(f.r.comparisons);

	fixture_init(&f);
	f.b[0].parameters = copies(&f.p[0], CODEC_MAX_PARAMS + 1);
	f.b[0].n_parameters = CODEC_MAX_PARAMS + 1;
	expect_invalid(&f, "benchmarks[0].parameters: 65 entries, limit 64");
	free(f.b[0].parameters);

	fixture_init(&f);
	f.b[0].metrics = copies(&f.m[0], CODEC_MAX_METRICS + 1);
	f.b[0].n_metrics = CODEC_MAX_METRICS + 1;
	expect_invalid(&f, "benchmarks[0].metrics: 33 entries, limit 32");
	free(f.b[0].metrics);

	fixture_init(&f);
	samples = calloc(CODEC_MAX_SAMPLES + 1, sizeof(*samples));
	for (size_t i = 0; i <= CODEC_MAX_SAMPLES; i++)
		samples[i] = 70 + (double)(i % 7);
	f.m[0].samples = samples;
	f.m[0].n_samples = CODEC_MAX_SAMPLES + 1;
	expect_invalid(&f,
		       "benchmarks[0].metrics[0].samples: 100001 entries, limit 100000");
	f.m[0].n_samples = CODEC_MAX_SAMPLES;
	expect_valid(&f);
	free(samples);

	/* the most windows allowed still decode within the unpack budget */
	fixture_init(&f);
	f.b[0].windows = copies(&f.w[0], CODEC_MAX_WINDOWS + 1);
	f.b[0].n_windows = CODEC_MAX_WINDOWS + 1;
	expect_invalid(&f,
		       "benchmarks[0].windows: 100001 entries, limit 100000");
	f.b[0].n_windows = CODEC_MAX_WINDOWS;
	expect_valid(&f);
	free(f.b[0].windows);
}

static void test_structure(void)
{
	struct fixture f;
	/* one string of the fixture set to a value, and the reason */
	const struct {
		char **at;
		const char *value, *want;
	} cases[] = {
		{ &f.p[3].key, "chase_bytes",
		  "benchmarks[0].parameters[3].key: same as parameters[0]" },
		{ &f.m[1].metric, "ns_per_access",
		  "benchmarks[0].metrics[1].metric: same as metrics[0]" },
		{ &f.b[1].variant, "thp_always",
		  "benchmarks[1]: same benchmark and variant as benchmarks[0]" },
		/* required strings are not empty, optional ones may be */
		{ &f.b[1].benchmark, "", "benchmarks[1].benchmark: empty" },
		{ &f.host.hostname, "", "host.hostname: empty" },
		{ &f.p[2].key, "", "benchmarks[0].parameters[2].key: empty" },
		{ &f.c[0].denominator, "", "comparisons[0].denominator: empty" },
		{ &f.host.region, "", NULL },
		{ &f.r.run_id, "", "run_id: missing" },
		{ &f.r.run_id, "not-a-uuid",
		  "run_id: not a canonical lowercase UUID" },
		{ &f.r.run_id, "3F2B8C1E-9A4D-4E7F-B1C2-5D6E7F809A1B",
		  "run_id: not a canonical lowercase UUID" },
		{ &f.r.run_id, "{3f2b8c1e-9a4d-4e7f-b1c2-5d6e7f809a1b}",
		  "run_id: not a canonical lowercase UUID" },
		{ &f.host.machine_id, "0123456789ABCDEF0123456789ABCDEF",
		  "host.machine_id: not 32 lowercase hex digits" },
		{ &f.host.machine_id, "0123456789abcdef",
		  "host.machine_id: not 32 lowercase hex digits" },
		{ &f.host.region_source, "guess",
		  "host.region_source: not one of flag, config, dmi, none" },
		{ &f.host.region_source, "none", NULL },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		fixture_init(&f);
		*cases[i].at = (char *)cases[i].value;
		expect_case(&f, cases[i].want, i);
	}
	fixture_init(&f);
	f.p[1].value_case = FLEETBENCH__PARAM__VALUE__NOT_SET;
	expect_invalid(&f, "benchmarks[0].parameters[1]: no value");
}

static void test_probe_json(void)
{
	static const struct text_case cases[] = {
		{ "not json", "probe_json: not JSON (" },
		{ "{\"a\":1", "probe_json: not JSON (unexpected end of data" },
		{ "{\"a\":1,}", "probe_json: not JSON (" },
		{ "{\"a\":1} {}", "probe_json: not JSON (" },
		{ "[1,2]", "probe_json: a JSON array, not an object" },
		{ "42", "probe_json: a JSON int, not an object" },
		{ "\"text\"", "probe_json: a JSON string, not an object" },
		{ "null", "probe_json: a JSON null, not an object" },
		{ "{\"a\":NaN}", "probe_json: NaN or Infinity is not JSON" },
		{ "{\"a\":[1,{\"b\":-Infinity}]}",
		  "probe_json: NaN or Infinity is not JSON" },
		{ "{\"a\\u0000b\":1}", "probe_json: holds the escape \\u0000" },
		{ "{\"a\":\"\\\\\\u0000\"}",
		  "probe_json: holds the escape \\u0000" },
		{ "", "probe_json: empty" },
	};
	struct fixture f;
	char err[CODEC_ERR_LEN], deep[512];
	size_t n;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		fixture_init(&f);
		f.r.probe_json = (char *)cases[i].text;
		CHECK_EQ_INT(codec_validate_report(&f.r, wall_ms(), err),
			     -EINVAL);
		CHECK_(!strncmp(err, cases[i].note, strlen(cases[i].note)),
		       "%s: \"%s\", expected \"%s...\"", cases[i].text, err,
		       cases[i].note);
	}
	/* nesting: CODEC_MAX_JSON_DEPTH levels pass, one more does not */
	for (int levels = CODEC_MAX_JSON_DEPTH;
	     levels <= CODEC_MAX_JSON_DEPTH + 1; levels++) {
		n = 0;
		for (int i = 0; i < levels; i++)
			n += (size_t)snprintf(deep + n, sizeof(deep) - n,
					      "{\"a\":");
		n += (size_t)snprintf(deep + n, sizeof(deep) - n, "1");
		for (int i = 0; i < levels; i++)
			n += (size_t)snprintf(deep + n, sizeof(deep) - n, "}");
		fixture_init(&f);
		f.r.probe_json = deep;
		if (levels == CODEC_MAX_JSON_DEPTH)
			expect_valid(&f);
		else
			expect_invalid(&f,
				       "probe_json: nested deeper than 32 levels");
	}
	/* an escaped backslash and "u0000" are text, not the escape */
	fixture_init(&f);
	f.r.probe_json = "{\"a\\\\u0000\":\"\\\\u0000 \\\\\\\\u0000\"}";
	expect_valid(&f);
	/* the same through the wire, once */
	fixture_init(&f);
	f.r.probe_json = "[]";
	expect_invalid(&f, "probe_json: a JSON array, not an object");
}

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

	CHECK_OK(codec_pack_offer(RUN_ID, 22345, &buf, &len));
	CHECK(len <= CODEC_MAX_OFFER);
	CHECK(codec_is_offer(buf, len));
	CHECK_OK(codec_unpack_offer(buf, len, run_id, &bytes, err));
	CHECK_EQ_STR(run_id, RUN_ID);
	CHECK_EQ_INT(bytes, 22345);
	/* an old collector: not a Report, so REJECTED without a run id */
	CHECK_EQ_INT(codec_unpack_report(buf, len, &r, err), -EBADMSG);
	CHECK(r == NULL);
	CHECK(strstr(err, "not a Report") != NULL);
	free(buf);

	/* a Report never reads as an Offer */
	fixture_init(&f);
	CHECK_OK(codec_pack_report(&f.r, &rep_buf, &rep_len));
	CHECK(!codec_is_offer(rep_buf, rep_len));
	CHECK_EQ_INT(codec_unpack_offer(rep_buf, rep_len, run_id, &bytes, err),
		     -EBADMSG);
	free(rep_buf);
	CHECK(!codec_is_offer((const uint8_t *)"\xa2", 1));

	CHECK_EQ_INT(codec_pack_offer("not-a-uuid", 10, &buf, &len), -EINVAL);
	CHECK_EQ_INT(codec_pack_offer(RUN_ID, 0, &buf, &len), -EINVAL);
	CHECK_EQ_INT(codec_pack_offer(RUN_ID, CODEC_MAX_MESSAGE + 1, &buf, &len),
		     -EINVAL);

	raw.offer_run_id = "not-a-uuid";
	raw.offer_bytes = 10;
	len = protobuf_c_message_pack(&raw.base, packed);
	CHECK(codec_is_offer(packed, len));
	CHECK_EQ_INT(codec_unpack_offer(packed, len, run_id, &bytes, err),
		     -EBADMSG);
	CHECK(strstr(err, "offer_run_id") != NULL);
	raw.offer_run_id = RUN_ID;
	raw.offer_bytes = CODEC_MAX_MESSAGE + 1;
	len = protobuf_c_message_pack(&raw.base, packed);
	CHECK_EQ_INT(codec_unpack_offer(packed, len, run_id, &bytes, err),
		     -EBADMSG);
	CHECK(strstr(err, "offer_bytes") != NULL);
	raw.offer_bytes = 0;
	len = protobuf_c_message_pack(&raw.base, packed);
	CHECK_EQ_INT(codec_unpack_offer(packed, len, run_id, &bytes, err),
		     -EBADMSG);
	/* a field an Offer does not have: field 1 (a Report's) appended */
	raw.offer_bytes = 10;
	len = protobuf_c_message_pack(&raw.base, packed);
	packed[len++] = 0x08;
	packed[len++] = 0x01;
	CHECK_EQ_INT(codec_unpack_offer(packed, len, run_id, &bytes, err),
		     -EBADMSG);
	CHECK(strstr(err, "fields it does not have") != NULL);
	/* truncated, and too long */
	CHECK_EQ_INT(codec_unpack_offer(packed, 10, run_id, &bytes, err),
		     -EBADMSG);
	memset(packed, 0, sizeof(packed));
	CHECK_EQ_INT(codec_unpack_offer(packed, CODEC_MAX_OFFER + 1, run_id,
					&bytes, err),
		     -EBADMSG);
}

/*
 * What the real agent's probe prints, on this machine and on the fixture
 * trees, is a probe_json the codec takes.
 */
/*
 * A probe message's unknown map must agree with its fields: an item set and
 * unknown at once, a key twice and a key naming the map are refused by
 * index; a key that names no field (a newer agent's item) is taken, and the
 * walk shows it.
 */
static void check_probe_unknown(struct fixture *f)
{
	Fleetbench__ProbeHost *h = f->r.probe->host;
	Fleetbench__ProbeHost__UnknownEntry e[2];
	Fleetbench__ProbeHost__UnknownEntry **saved = h->unknown, *list[2];
	size_t n_saved = h->n_unknown;
	struct json_object *o, *item;
	char err[CODEC_ERR_LEN];
	char *hostname = h->hostname;

	for (size_t i = 0; i < 2; i++) {
		fleetbench__probe_host__unknown_entry__init(&e[i]);
		list[i] = &e[i];
	}
	h->unknown = list;
	h->n_unknown = 1;
	h->hostname = "web-1";
	e[0].key = "hostname";
	e[0].value = "EACCES";
	CHECK_EQ_INT(codec_validate_report(&f->r, wall_ms(), err), -EINVAL);
	CHECK_EQ_STR(err, "probe.host.unknown[0]: names hostname, which is set: an item is read or unknown, not both");
	e[0].key = "unknown";
	CHECK_EQ_INT(codec_validate_report(&f->r, wall_ms(), err), -EINVAL);
	CHECK_EQ_STR(err, "probe.host.unknown[0]: names the map itself, not an item");

	e[0].key = e[1].key = "cpu_sockets";
	e[1].value = "ENOENT";
	h->n_unknown = 2;
	CHECK_EQ_INT(codec_validate_report(&f->r, wall_ms(), err), -EINVAL);
	CHECK_EQ_STR(err, "probe.host.unknown[1]: the same key as [0]");

	h->n_unknown = 1;
	CHECK_OK(codec_validate_report(&f->r, wall_ms(), err));
	o = pbjson_from_message(&h->base);
	CHECK_(o && json_object_object_get_ex(o, "cpu_sockets", &item) &&
		       !strcmp(json_object_to_json_string_ext(
				       item, JSON_C_TO_STRING_PLAIN),
			       "{\"unknown\":\"EACCES\"}"),
	       "%s", "an unknown item the .proto does not name shows");
	json_object_put(o);

	h->unknown = saved;
	h->n_unknown = n_saved;
	h->hostname = hostname;
}

/*
 * The probe's JSON as the typed Probe: valid, and through pack and unpack
 * it walks back to the same JSON. Beside probe_json it is refused, and a
 * report with neither is; a probe string over its limit is named.
 */
static void check_typed_probe(struct fixture *f, const char *json,
			      const char *what)
{
	struct json_object *o = json_tokener_parse(json), *back = NULL;
	ProtobufCMessage *m = NULL;
	Fleetbench__Report *u = NULL;
	char err[CODEC_ERR_LEN], why[PBJSON_ERR_LEN];
	uint8_t *buf = NULL;
	size_t len;

	CHECK_(o && pbjson_to_message(&fleetbench__probe__descriptor, o, &m,
				      why) == 0,
	       "%s: %s", what, why);
	if (!m) {
		json_object_put(o);
		return;
	}
	f->r.probe = (Fleetbench__Probe *)m;
	f->r.probe_json = (char *)json;
	CHECK_EQ_INT(codec_validate_report(&f->r, wall_ms(), err), -EINVAL);
	CHECK_EQ_STR(err, "probe_json: set beside probe; a report holds one of them");
	f->r.probe_json = NULL;
	CHECK_OK(codec_validate_report(&f->r, wall_ms(), err));
	CHECK_(!err[0], "%s, typed: %s", what, err);
	CHECK_OK(codec_pack_report(&f->r, &buf, &len));
	if (buf) {
		CHECK_OK(codec_unpack_report(buf, len, &u, err));
		free(buf);
	}
	if (u)
		back = pbjson_from_message(&u->probe->base);
	CHECK_(back && json_object_equal(back, o), "%s: the typed probe does not walk back to itself", what);
	json_object_put(back);
	codec_free_report(u);

	/* a string in the probe is held to 8192 bytes, and named (where the
	 * probe read the command line: where it did not, the item is in
	 * kernel.unknown, and a value beside that is refused) */
	if (f->r.probe->kernel && f->r.probe->kernel->cmdline) {
		char *saved = f->r.probe->kernel->cmdline;
		char *big = malloc(CODEC_MAX_PROBE_STRING + 2);

		if (big) {
			memset(big, 'x', CODEC_MAX_PROBE_STRING + 1);
			big[CODEC_MAX_PROBE_STRING + 1] = '\0';
			f->r.probe->kernel->cmdline = big;
			CHECK_EQ_INT(codec_validate_report(&f->r, wall_ms(), err),
				     -EINVAL);
			CHECK_EQ_STR(err, "probe.kernel.cmdline: 8193 bytes, limit 8192");
			big[CODEC_MAX_PROBE_STRING] = '\0';
			CHECK_OK(codec_validate_report(&f->r, wall_ms(), err));
			f->r.probe->kernel->cmdline = saved;
			free(big);
		}
	}
	if (f->r.probe->host)
		check_probe_unknown(f);
	f->r.probe = NULL;
	CHECK_EQ_INT(codec_validate_report(&f->r, wall_ms(), err), -EINVAL);
	CHECK_EQ_STR(err, "probe: missing (and no probe_json)");
	protobuf_c_message_free_unpacked(m, NULL);
	json_object_put(o);
}

static void test_real_probe(void)
{
	static const char *const roots[] = { "/", FIXTURE_DIR "/kvm-guest",
					     FIXTURE_DIR "/malformed",
					     FIXTURE_DIR "/old-kernel" };
	const char *agent = getenv("AGENT");
	struct fixture f;
	char err[CODEC_ERR_LEN];

	CHECK_(agent != NULL, "%s", "AGENT is not set (ctest sets it)");
	if (!agent)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(roots); i++) {
		char *const argv[] = { (char *)agent, "probe", "--json",
				       "--steal-window", "0", "--root",
				       (char *)roots[i], NULL };
		struct run_result res;
		int r = run_program(argv, (uid_t)-1, &res);

		CHECK_OK(r);
		if (r < 0)
			continue;
		CHECK_EQ_INT(res.status, 0);
		fixture_init(&f);
		f.r.probe_json = res.out;
		CHECK_OK(codec_validate_report(&f.r, wall_ms(), err));
		CHECK_(!err[0], "%s: %s", roots[i], err);
		check_typed_probe(&f, res.out, roots[i]);
		run_result_release(&res);
	}
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
	test_uuid_utf8();
	test_round_trip();
	test_schema_and_ids();
	test_strings();
	test_numbers();
	test_bounds();
	test_failures();
	test_method();
	test_capabilities();
	test_times();
	test_counts();
	test_structure();
	test_probe_json();
	test_wire();
	test_ack();
	test_offer();
	test_threads();
	test_real_probe();
	return check_summary();
}
