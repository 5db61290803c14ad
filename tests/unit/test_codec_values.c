/* SPDX-License-Identifier: MIT */
/*
 * The codec's rules for values: UUIDs and UTF-8; strings within their
 * limits, valid UTF-8 without NUL (patched into the packed bytes, where
 * only the wire can put one); doubles finite and in range; samples within
 * proto/bounds.h; a failed variant that measured nothing.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "codec_internal.h"
#include "codec_test.h"

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

	/* eight bytes at a time through ASCII: a bad byte, a NUL or a
	 * character of two bytes at every place of a 24-byte text, and the
	 * text's last bytes read one at a time */
	for (size_t at = 0; at < 24; at++) {
		char t[25];

		memset(t, 'a', 24);
		t[24] = '\0';
		t[at] = '\x80';
		CHECK_EQ_INT((int)codec_utf8_invalid_at(t, 24), (int)at);
		t[at] = '\0';
		CHECK_EQ_INT((int)codec_utf8_invalid_at(t, 24), (int)at);
		t[at] = '\x7f';
		CHECK_EQ_INT((int)codec_utf8_invalid_at(t, 24), -1);
		CHECK_EQ_INT((int)codec_utf8_invalid_at(t, at), -1);
		if (at < 23) {
			t[at] = '\xc3';
			t[at + 1] = '\xa9';
			CHECK_EQ_INT((int)codec_utf8_invalid_at(t, 24), -1);
			/* cut after its first byte */
			CHECK_EQ_INT((int)codec_utf8_invalid_at(t, at + 1),
				     (int)at);
		}
	}
}

/* codec_name_repeated() finds what comparing each name with those before
 * it finds: through the hash table up to CODEC_NAMES_HASHED names, by
 * comparing beyond */
static void test_names_repeated(void)
{
	enum { N = CODEC_NAMES_HASHED + 8 };
	static char text[N][16];
	const char *names[N];
	size_t earlier = 99;

	for (size_t i = 0; i < N; i++) {
		snprintf(text[i], sizeof(text[i]), "name_%zu", i);
		names[i] = text[i];
	}
	CHECK_EQ_INT((int)codec_name_repeated(names, 0, &earlier), -1);
	CHECK_EQ_INT((int)codec_name_repeated(names, 1, &earlier), -1);
	for (size_t n = 2; n <= N; n += n < 70 ? 1 : 63) {
		CHECK_EQ_INT((int)codec_name_repeated(names, n, &earlier), -1);
		/* the last equal to the first, then one in the middle equal
		 * to the one before it as well */
		names[n - 1] = text[0];
		CHECK_EQ_INT((int)codec_name_repeated(names, n, &earlier),
			     (int)n - 1);
		CHECK_EQ_INT((int)earlier, 0);
		if (n >= 4) {
			names[n / 2] = text[n / 2 - 1];
			CHECK_EQ_INT((int)codec_name_repeated(names, n,
							      &earlier),
				     (int)(n / 2));
			CHECK_EQ_INT((int)earlier, (int)(n / 2 - 1));
			/* three of one name: the second is found, with the
			 * first */
			names[n / 2 + 1] = text[n / 2 - 1];
			CHECK_EQ_INT((int)codec_name_repeated(names, n,
							      &earlier),
				     (int)(n / 2));
			names[n / 2 + 1] = text[n / 2 + 1];
			names[n / 2] = text[n / 2];
		}
		names[n - 1] = text[n - 1];
	}
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
	/* past the first eight bytes, and in a string over its limit (the
	 * NUL is named, as the length up to it is within the limit) */
	fixture_init(&f);
	f.host.hostname = "host-name-of-twenty-X";
	expect_patched(&f, "twenty-X", "twenty-\0",
		       "host.hostname: NUL byte at offset 20");
	fixture_init(&f);
	s = repeat_char('a', CODEC_MAX_STRING + 1);
	memcpy(s, "hostXname", 9);
	f.host.hostname = s;
	expect_patched(&f, "hostXname", "host\0name",
		       "host.hostname: NUL byte at offset 4");
	free(s);
	fixture_init(&f);
	f.host.hostname = "host-name-of-twenty-X";
	expect_patched(&f, "twenty-X", "twenty-\xff",
		       "host.hostname: invalid UTF-8 at byte 20");
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
	/* adaptive repeats' marks (issue 19) */
	fixture_init(&f);
	f.c[0].has_target_half_width = f.c[0].has_target_reached = 1;
	f.c[0].has_rounds = 1;
	f.c[0].target_half_width = 0.05;
	f.c[0].target_reached = 1;
	f.c[0].rounds = 7;
	expect_valid(&f);
	f.c[0].target_half_width = 1.5;
	expect_invalid(&f,
		       "comparisons[0].target_half_width: 1.5 is outside (0, 1]");
	f.c[0].target_half_width = 0.05;
	f.c[0].rounds = 0;
	expect_invalid(&f, "comparisons[0].rounds: 0 is outside [1, 20000]");
	/* a window's pressure shares, its reason and its vCPUs (issue 19) */
	fixture_init(&f);
	f.w[1].has_psi_io_some_pct = f.w[1].has_psi_memory_full_pct = 1;
	f.w[1].psi_io_some_pct = 100;
	f.w[1].psi_memory_full_pct = 0;
	f.w[1].has_noisy = f.w[1].noisy = 1;
	f.w[1].noisy_reason = "cpu pressure 61.0% > 50%";
	f.w[1].cpus = "0,1";
	expect_valid(&f);
	f.w[1].psi_io_some_pct = 100.01;
	expect_invalid(&f,
		       "benchmarks[0].windows[1].psi_io_some_pct: 100.01 is out of range");
	f.w[1].psi_io_some_pct = 5;
	f.w[1].psi_memory_full_pct = -0.5;
	expect_invalid(&f,
		       "benchmarks[0].windows[1].psi_memory_full_pct: -0.5 is out of range");
	f.w[1].psi_memory_full_pct = 0;
	f.w[1].noisy = 0;
	expect_invalid(&f,
		       "benchmarks[0].windows[1].noisy_reason: set on a window that is not noisy");
	f.w[1].noisy = 1;
	f.w[1].noisy_reason = "";
	expect_invalid(&f,
		       "benchmarks[0].windows[1].noisy_reason: 0 bytes, limit 1 to 256");
	{
		char big[258];

		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		f.w[1].noisy_reason = big;
		expect_invalid(&f,
			       "benchmarks[0].windows[1].noisy_reason: 257 bytes, limit 1 to 256");
		big[256] = '\0';
		expect_valid(&f);
	}
	f.w[1].noisy_reason = "steal 7.2% > 5%";
	for (size_t i = 0; i < 4; i++) {
		static const char *const bad[] = { "", "0,", ",1", "0;1" };

		f.w[1].cpus = (char *)bad[i];
		expect_invalid(&f,
			       "benchmarks[0].windows[1].cpus: not a list of vCPU numbers");
	}
	f.w[1].cpus = "3";
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

/* Issue 36's costs: each figure within its bounds, a benchmark once. */
static void test_costs(void)
{
	Fleetbench__Cost c[2], *cp[2] = { &c[0], &c[1] }, total;
	struct fixture f;

	fixture_init(&f);
	for (int i = 0; i < 2; i++) {
		fleetbench__cost__init(&c[i]);
		c[i].benchmark = i ? "membw" : "thp_chase";
		c[i].wall_s = 2.5;
		c[i].cpu_s = 3.0;
		c[i].peak_memory_bytes = 146104320;
		c[i].written_bytes = 0;
	}
	fleetbench__cost__init(&total);
	total.benchmark = "total";
	total.wall_s = 5;
	f.r.costs = cp;
	f.r.n_costs = 2;
	f.r.cost_total = &total;
	expect_valid(&f);
	c[1].wall_s = -0.5;
	expect_invalid(&f, "costs[1].wall_s: -0.5 is outside [0, 604800]");
	c[1].wall_s = 2.5;
	c[0].cpu_s = 1e9;
	expect_invalid(&f, "costs[0].cpu_s: 1e+09 is outside [0, 604800]");
	c[0].cpu_s = 3.0;
	c[1].peak_memory_bytes = (uint64_t)INT64_MAX + 1;
	expect_invalid(&f, "costs[1]: a byte count above 9223372036854775807");
	c[1].peak_memory_bytes = 0;
	c[1].benchmark = "thp_chase";
	expect_invalid(&f, "costs[1].benchmark: 'thp_chase' again (costs[0])");
	c[1].benchmark = "membw";
	total.wall_s = NAN;
	expect_invalid(&f, "cost_total.wall_s: not finite (NaN)");
	total.wall_s = 5;
	c[0].benchmark = "";
	expect_invalid(&f, "costs[0].benchmark: empty");
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
	/* a queue depth (io_scaling's knee) is 1 to 32768 I/Os in flight */
	fixture_init(&f);
	f.m[0].metric = "knee_depth";
	f.m[0].unit = "depth";
	f.ns[1] = 64;
	expect_valid(&f);
	f.ns[1] = 0;
	expect_invalid(&f,
		       "benchmarks[0] thp_chase/thp_always: knee_depth: sample 1 is 0 depth, outside [1, 32768]");
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

int main(void)
{
	test_uuid_utf8();
	test_names_repeated();
	test_strings();
	test_numbers();
	test_bounds();
	test_costs();
	test_failures();
	return check_summary();
}
