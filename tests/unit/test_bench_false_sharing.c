/* SPDX-License-Identifier: MIT */
/* false_sharing: a tiny run gives samples, parameters and ordered intervals. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_false_sharing.h"
#include "bench_test.h"
#include "check.h"
#include "probe_test.h"

#define INCREMENTS 200000
#define REPEATS 2

static const char *const variants[] = { "shared", "padded", "shared_atomic",
					"padded_atomic" };

/* Every sample of metric is a positive number, one per repeat. */
static void check_samples(struct json_object *res, const char *metric,
			  const char *unit)
{
	struct json_object *m = jmetric(res, metric);
	struct json_object *samples = jget(m, "samples");

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK_EQ_STR(jstr(m, "unit"), unit);
	CHECK_EQ_INT(jlen(m, "samples"), REPEATS);
	for (size_t i = 0; samples && i < json_object_array_length(samples);
	     i++) {
		double v = json_object_get_double(
			json_object_array_get_idx(samples, i));

		CHECK_(isfinite(v) && v > 0, "%s sample %zu is %g", metric, i,
		       v);
	}
}

static void check_comparison(struct json_object *report, const char *name,
			     const char *num, const char *den)
{
	struct json_object *c = jcomparison(report, name);
	double ratio = NAN, lo = NAN, hi = NAN;

	CHECK(c != NULL);
	if (!c)
		return;
	CHECK_EQ_STR(jstr(c, "metric"), "ns_per_increment");
	CHECK_EQ_STR(jstr(c, "numerator"), num);
	CHECK_EQ_STR(jstr(c, "denominator"), den);
	CHECK(jdouble(c, "ratio", &ratio) && ratio > 0);
	CHECK(jdouble(c, "ci_low", &lo) && jdouble(c, "ci_high", &hi));
	CHECK_(lo <= ratio && ratio <= hi, "%s: %g <= %g <= %g", name, lo,
	       ratio, hi);
}

/* "cpus": the vCPUs the threads were pinned to, one each, ascending
 * ("0,1"). */
static void check_cpus(const char *cpus, int64_t threads)
{
	const char *p = cpus;
	long prev = -1, n = 0;

	while (*p) {
		char *end;
		long c = strtol(p, &end, 10);

		CHECK_(end != p && c > prev && (*end == ',' || !*end),
		       "cpus \"%s\"", cpus);
		if (end == p || c <= prev)
			return;
		prev = c;
		n++;
		p = *end ? end + 1 : end;
	}
	CHECK_(n == threads, "cpus \"%s\" for %lld threads", cpus,
	       (long long)threads);
}

static void check_verify(void)
{
	uint64_t c[64] = { 0 };
	size_t bad = 99;

	/* padded: every 16th slot (128 bytes apart), 4 counters */
	for (int i = 0; i < 4; i++)
		c[i * 16] = 1000;
	CHECK_EQ_INT(false_sharing_verify(c, 128, 4, 1000, &bad), 0);
	CHECK_EQ_INT(bad, 99); /* untouched on success */
	c[2 * 16] = 999; /* a lost increment */
	CHECK_EQ_INT(false_sharing_verify(c, 128, 4, 1000, &bad), -EIO);
	CHECK_EQ_INT(bad, 2);
	c[2 * 16] = 1001; /* one too many */
	CHECK_EQ_INT(false_sharing_verify(c, 128, 4, 1000, NULL), -EIO);

	/* packed: adjacent counters of one line */
	memset(c, 0, sizeof(c));
	for (int i = 0; i < 8; i++)
		c[i] = 7;
	CHECK_EQ_INT(false_sharing_verify(c, 8, 8, 7, &bad), 0);
	c[7] = 0;
	CHECK_EQ_INT(false_sharing_verify(c, 8, 8, 7, &bad), -EIO);
	CHECK_EQ_INT(bad, 7);
	CHECK_EQ_INT(false_sharing_verify(c, 8, 7, 7, &bad), 0);
	CHECK_EQ_INT(false_sharing_verify(c, 12, 2, 7, &bad), -EINVAL);
	CHECK_EQ_INT(false_sharing_verify(c, 8, 0, 7, &bad), 0);
}

int main(void)
{
	struct bench_params p = { 0 };
	struct json_object *report = NULL, *res;
	char err[512] = "";
	int64_t threads = 0;
	int r;

	check_verify();

	CHECK_OK(bench_params_profile(&p, "quick"));
	p.profile = "quick";
	p.dir = "/tmp";
	p.repeats = REPEATS;
	p.fs_increments = INCREMENTS;
	p.steal_threshold_pct = 5;
	p.seed = 1;
	r = jbench_run(&p, "false_sharing", &report, err, sizeof(err));
	CHECK_(r == 0, "bench_suite_run: %d (%s)", r, err);
	if (r < 0)
		return check_summary();

	/* nothing but false_sharing ran */
	CHECK_EQ_INT(jlen(report, "benchmarks"), 4);
	res = jresult(report, "false_sharing", "shared");
	if (res && !strcmp(jstatus(res), "skipped")) {
		/* a host with 1 usable CPU: the skip states why */
		CHECK(strstr(jstr(res, "skip_reason"), "CPU") != NULL);
		printf("skipped: %s\n", jstr(res, "skip_reason"));
		check_summary();
		json_object_put(report);
		return check_fail_ ? 1 : 77;
	}

	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		const char *v = variants[i];
		bool atomic = strstr(v, "atomic") != NULL;
		bool padded = !strncmp(v, "padded", 6);
		int64_t line, stride;

		res = jresult(report, "false_sharing", v);
		CHECK_(res != NULL, "no result for variant %s", v);
		if (!res)
			continue;
		CHECK_EQ_STR(jstatus(res), "ok");
		check_samples(res, "ns_per_increment", "ns");
		check_samples(res, "total_ms", "ms");
		/* one window per measured repeat */
		CHECK_EQ_INT(jlen(res, "windows"), REPEATS);

		threads = jpint(res, "threads");
		CHECK_(threads >= 2, "%s: threads %lld", v, (long long)threads);
		CHECK_EQ_INT(jpint(res, "increments_per_thread"),
			     atomic ? INCREMENTS / 2 / threads : INCREMENTS);
		CHECK(jis(jparam(res, "pinned"), "int_value", json_type_int));
		CHECK(jpint(res, "pinned") == 0 ||
		      jpint(res, "pinned") == 1);
		if (jpint(res, "pinned") == 0)
			CHECK(jis(jparam(res, "pin_error"), "string_value",
				  json_type_string));
		else
			check_cpus(jpstr(res, "cpus"), threads);
		CHECK_EQ_INT(jpint(res, "counter_bytes"), 8);
		line = jpint(res, "cache_line_bytes");
		CHECK(line >= 32);
		stride = jpint(res, "stride_bytes");
		CHECK_EQ_INT(stride, padded ? 2 * line : 8);
		CHECK_EQ_INT(jpint(res, "cache_lines_written"),
			     padded ? threads :
				      (threads * 8 + line - 1) / line);
		CHECK(strstr(jpstr(res, "increment"),
			     atomic ? "atomic" : "volatile") != NULL);
	}
	check_comparison(report, "false_sharing_slowdown", "shared", "padded");
	check_comparison(report, "false_sharing_slowdown_atomic",
			 "shared_atomic", "padded_atomic");

	json_object_put(report);
	return check_summary();
}
