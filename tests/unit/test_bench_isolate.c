/* SPDX-License-Identifier: MIT */
/*
 * Issue 11: each benchmark runs in a child process. A child that dies (by
 * SIGSEGV, SIGKILL or abort, an error from its setup, or a hang past
 * --bench-timeout) costs only its own benchmark: its variants are reported
 * "failed" saying where it died, the agent exits 4, and the other
 * benchmark keeps its samples. And the bounds pass: a sample that cannot
 * be true fails its variant and the comparisons that use it.
 */
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "check.h"
#include "probe_test.h"
#include "run.h"

#define REPEATS 3
#define REPEATS_TEXT "3"

static char dir[] = "/var/tmp/fleetbench-test-isolate-XXXXXX";

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The results of one benchmark in a bench report, in order. */
static size_t results_of(struct json_object *bench, const char *name,
			 struct json_object **ret, size_t max)
{
	struct json_object *results = jget(bench, "results");
	size_t n = 0;

	for (size_t i = 0; results && i < json_object_array_length(results);
	     i++) {
		struct json_object *r = json_object_array_get_idx(results, i);

		if (!strcmp(jstr(r, "benchmark"), name) && n < max)
			ret[n++] = r;
	}
	return n;
}

/* Every result of name is ok with REPEATS samples in every metric. */
static void check_ok(struct json_object *bench, const char *name,
		     const char *who)
{
	struct json_object *res[16];
	size_t n = results_of(bench, name, res, 16);

	CHECK_(n > 0, "%s: no results of %s", who, name);
	for (size_t i = 0; i < n; i++) {
		CHECK_(!strcmp(jstr(res[i], "status"), "ok"),
		       "%s: %s/%s is %s (%s)", who, name,
		       jstr(res[i], "variant"), jstr(res[i], "status"),
		       jstr(res[i], "failure"));
		CHECK(jis(res[i], "failure", json_type_null));
		CHECK_(jlen(res[i], "metrics") > 0 &&
			       jlen(res[i], "metrics") != (size_t)-1,
		       "%s: %s/%s has no metrics", who, name,
		       jstr(res[i], "variant"));
		CHECK_EQ_INT(jlen(res[i], "metrics[0].samples"), REPEATS);
		CHECK_EQ_INT(jlen(res[i], "repeats"), REPEATS);
	}
}

/*
 * Every result of name is failed; the variant named in the failure text
 * (which starts with prefix and holds where, e.g. "(repeat 2 of 3)") says
 * it, the others "benchmark process died: " and it. Returns the text.
 */
static const char *check_failed(struct json_object *bench, const char *name,
				const char *prefix, const char *where,
				const char *who)
{
	static char text[1024];
	struct json_object *res[16];
	size_t n = results_of(bench, name, res, 16), direct = 0;
	char died[1100], in[128];

	text[0] = '\0';
	CHECK_(n > 0, "%s: no results of %s", who, name);
	for (size_t i = 0; i < n; i++) {
		const char *f = jstr(res[i], "failure");

		CHECK_EQ_STR(jstr(res[i], "status"), "failed");
		CHECK(jis(res[i], "skip_reason", json_type_null));
		CHECK_EQ_INT(jlen(res[i], "metrics"), 0);
		CHECK_EQ_INT(jlen(res[i], "repeats"), 0);
		snprintf(in, sizeof(in), " in %s/%s ", name,
			 jstr(res[i], "variant"));
		if (!strncmp(f, prefix, strlen(prefix)) && strstr(f, in)) {
			snprintf(text, sizeof(text), "%s", f);
			direct++;
		}
	}
	CHECK_(direct == 1, "%s: %zu variants of %s died of '%s'", who, direct,
	       name, prefix);
	CHECK_(strstr(text, where) != NULL, "%s: '%s' does not say '%s'", who,
	       text, where);
	snprintf(died, sizeof(died), "benchmark process died: %s", text);
	for (size_t i = 0; i < n; i++)
		if (strcmp(jstr(res[i], "failure"), text))
			CHECK_EQ_STR(jstr(res[i], "failure"), died);
	printf("%s: %s\n", who, text);
	return text;
}

/* No comparison of name; at least one of other. */
static void check_comparisons(struct json_object *bench, const char *name,
			      const char *other)
{
	struct json_object *c = jget(bench, "comparisons");
	size_t of_name = 0, of_other = 0;

	for (size_t i = 0; c && i < json_object_array_length(c); i++) {
		const char *b = jstr(json_object_array_get_idx(c, i),
				     "benchmark");

		of_name += !strcmp(b, name);
		of_other += !strcmp(b, other);
	}
	CHECK_EQ_INT(of_name, 0);
	CHECK(of_other > 0);
}

/*
 * bench --json of thp_fault and false_sharing (both small), with
 * FLEETBENCH_FAULT=fault; the bench object (put it), exit status in
 * *status.
 */
static struct json_object *bench(const char *fault, const char *timeout,
				 int *status, char **ret_err)
{
	struct run_result r;
	struct json_object *j;

	setenv("FLEETBENCH_FAULT", fault, 1);
	RUN_AGENT(&r, -1, "bench", "--json", "--profile", "quick", "--only",
		  "thp_fault,false_sharing", "--fault-bytes", "16M",
		  "--fs-increments", "200000", "--repeats", REPEATS_TEXT,
		  "--bench-timeout", (char *)timeout, "--dir", dir);
	unsetenv("FLEETBENCH_FAULT");
	*status = r.status;
	j = json_tokener_parse(r.out ? r.out : "");
	if (!j)
		fprintf(stderr, "%s: stdout is not JSON; stderr:\n%s\n", fault,
			r.err);
	*ret_err = r.err ? strdup(r.err) : NULL;
	run_result_release(&r);
	return j;
}

static void test_crash(const char *fault, const char *victim,
		       const char *other, const char *prefix,
		       const char *where)
{
	char *err = NULL;
	int status = -1;
	struct json_object *j = bench(fault, "120", &status, &err);

	CHECK_(status == 4, "%s: exit status %d, expected 4", fault, status);
	CHECK(j != NULL);
	if (j) {
		check_failed(j, victim, prefix, where, fault);
		check_ok(j, other, fault);
		check_comparisons(j, victim, other);
	}
	CHECK_(err && strstr(err, "failed: ") &&
		       strstr(err, "fault point 'bench-"),
	       "%s: stderr: %s", fault, err ? err : "");
	free(err);
	json_object_put(j);
}

/* A child that hangs is killed at its time limit. */
static void test_timeout(void)
{
	const char *fault = "bench-false_sharing@2:hang";
	char *err = NULL;
	int status = -1;
	double t0 = now();
	struct json_object *j = bench(fault, "3", &status, &err);
	double took = now() - t0;

	CHECK_(status == 4, "hang: exit status %d, expected 4", status);
	if (j) {
		check_failed(j, "false_sharing", "timed out after 3 s in ",
			     "(repeat 1 of " REPEATS_TEXT ")", "hang");
		check_ok(j, "thp_fault", "hang");
	}
	/* thp_fault's own run, plus the 3 s limit: far below the 120 s */
	CHECK_(took < 60, "hang: the run took %.1f s", took);
	free(err);
	json_object_put(j);
}

/* Setup returning -ENOMEM before any variant: one result, variant "*". */
static void test_setup_enomem(void)
{
	char *err = NULL;
	int status = -1;
	struct json_object *j =
		bench("bench-setup-thp_fault:ENOMEM", "120", &status, &err);
	struct json_object *res[4];

	CHECK_EQ_INT(status, 4);
	CHECK_EQ_INT(results_of(j, "thp_fault", res, 4), 1);
	if (j && results_of(j, "thp_fault", res, 4) == 1) {
		CHECK_EQ_STR(jstr(res[0], "variant"), "*");
		CHECK_EQ_STR(jstr(res[0], "status"), "failed");
		CHECK_EQ_STR(jstr(res[0], "failure"),
			     "Cannot allocate memory in thp_fault (setup)");
		check_ok(j, "false_sharing", "ENOMEM");
	}
	free(err);
	json_object_put(j);
}

/* The table says FAILED; run (probe + bench) exits 4 too. */
static void test_table_and_run(void)
{
	struct run_result r;

	setenv("FLEETBENCH_FAULT", "bench-false_sharing:SIGSEGV", 1);
	RUN_AGENT(&r, -1, "bench", "--profile", "quick", "--only",
		  "false_sharing", "--fs-increments", "200000", "--repeats",
		  "2", "--dir", dir);
	CHECK_EQ_INT(r.status, 4);
	CHECK_(strstr(r.out, "FAILED: SIGSEGV in false_sharing/") != NULL,
	       "table: %s", r.out);
	run_result_release(&r);
	RUN_AGENT(&r, -1, "run", "--json", "--profile", "quick", "--only",
		  "false_sharing", "--fs-increments", "200000", "--repeats",
		  "2", "--steal-window", "0", "--dir", dir);
	unsetenv("FLEETBENCH_FAULT");
	CHECK_EQ_INT(r.status, 4);
	CHECK(strstr(r.out, "\"status\":\"failed\"") ||
	      strstr(r.out, "\"status\": \"failed\""));
	run_result_release(&r);
}

/* ---- the bounds pass ---- */

static const char *const bounds_report = "{"
	"\"results\": ["
	" { \"benchmark\": \"randread\", \"variant\": \"pread\","
	"   \"status\": \"ok\", \"skip_reason\": null, \"failure\": null,"
	"   \"parameters\": { \"engine\": \"pread\" },"
	"   \"metrics\": [ { \"metric\": \"iops\", \"unit\": \"IO/s\","
	"                    \"samples\": [ 1000, 1100 ] },"
	"                  { \"metric\": \"lat_p99_us\", \"unit\": \"us\","
	"                    \"samples\": [ 300, 310 ] } ],"
	"   \"repeats\": [ { \"wall_s\": 0.5 }, { \"wall_s\": 0.5 } ],"
	"   \"noisy\": false },"
	" { \"benchmark\": \"randread\", \"variant\": \"io_uring\","
	"   \"status\": \"ok\", \"skip_reason\": null, \"failure\": null,"
	"   \"parameters\": { \"engine\": \"io_uring\" },"
	"   \"metrics\": [ { \"metric\": \"iops\", \"unit\": \"IO/s\","
	"                    \"samples\": [ 2000, 2100 ] },"
	"                  { \"metric\": \"lat_p99_us\", \"unit\": \"us\","
	"                    \"samples\": [ 250, 1.8446744073709552e+13 ] } ],"
	"   \"repeats\": [ { \"wall_s\": 0.5 }, { \"wall_s\": 0.5 } ],"
	"   \"noisy\": false },"
	" { \"benchmark\": \"randread\", \"variant\": \"libaio\","
	"   \"status\": \"ok\", \"skip_reason\": null, \"failure\": null,"
	"   \"parameters\": {},"
	"   \"metrics\": [ { \"metric\": \"iops\", \"unit\": \"IO/s\","
	"                    \"samples\": [ 1500, NaN ] } ],"
	"   \"repeats\": [ { \"wall_s\": 0.5 }, { \"wall_s\": 0.5 } ],"
	"   \"noisy\": false },"
	" { \"benchmark\": \"randread\", \"variant\": \"io_uring_sqpoll\","
	"   \"status\": \"skipped\", \"skip_reason\": \"sqpoll: EPERM\","
	"   \"failure\": null, \"parameters\": {}, \"metrics\": [],"
	"   \"repeats\": [], \"noisy\": false } ],"
	"\"comparisons\": ["
	" { \"name\": \"iouring_vs_pread\", \"benchmark\": \"randread\","
	"   \"metric\": \"iops\", \"numerator\": \"io_uring\","
	"   \"denominator\": \"pread\", \"ratio\": 1.9, \"ci_low\": 1.8,"
	"   \"ci_high\": 2.0, \"level\": 0.95, \"method\": \"m\" },"
	" { \"name\": \"libaio_vs_pread\", \"benchmark\": \"randread\","
	"   \"metric\": \"iops\", \"numerator\": \"pread\","
	"   \"denominator\": \"pread\", \"ratio\": 1.0, \"ci_low\": 1.0,"
	"   \"ci_high\": 1.0, \"level\": 0.95, \"method\": \"m\" } ] }";

static void test_bounds(void)
{
	struct json_object *j = json_tokener_parse(bounds_report);
	struct json_object *results = jget(j, "results");
	struct json_object *uring, *libaio, *c;

	CHECK(j != NULL);
	if (!j)
		return;
	CHECK_EQ_INT(bench_check_bounds(results, jget(j, "comparisons")), 2);
	CHECK_EQ_INT(bench_report_failed(j), 2);
	/* the sample longer than its window: the metric named */
	uring = jget(j, "results[1]");
	CHECK_EQ_STR(jstr(uring, "variant"), "io_uring");
	CHECK_EQ_STR(jstr(uring, "status"), "failed");
	CHECK_EQ_STR(jstr(uring, "failure"),
		     "out of bounds: lat_p99_us: sample 1 is 1.84467e+13 us, "
		     "longer than its 0.5 s window");
	CHECK(jis(uring, "skip_reason", json_type_null));
	CHECK_EQ_INT(jlen(uring, "metrics"), 0);
	CHECK_EQ_INT(jlen(uring, "repeats"), 0);
	CHECK_EQ_STR(jstr(uring, "parameters.engine"), "io_uring");
	/* a NaN sample */
	libaio = jget(j, "results[2]");
	CHECK_EQ_STR(jstr(libaio, "status"), "failed");
	CHECK_(strstr(jstr(libaio, "failure"),
		      "out of bounds: iops: sample 1 is nan IO/s, not a finite number") !=
		       NULL,
	       "libaio: %s", jstr(libaio, "failure"));
	/* the others as they were */
	CHECK_EQ_STR(jstr(j, "results[0].status"), "ok");
	CHECK_EQ_INT(jlen(j, "results[0].metrics[1].samples"), 2);
	CHECK_EQ_STR(jstr(j, "results[3].status"), "skipped");
	CHECK_EQ_STR(jstr(j, "results[3].skip_reason"), "sqpoll: EPERM");
	/* the comparison with io_uring: ratio null, the reason */
	c = jget(j, "comparisons[0]");
	CHECK_EQ_STR(jstr(c, "name"), "iouring_vs_pread");
	CHECK(jis(c, "ratio", json_type_null));
	CHECK(!jget(c, "ci_low") && !jget(c, "method"));
	CHECK_EQ_STR(jstr(c, "reason"),
		     "io_uring failed: out of bounds: lat_p99_us: sample 1 is "
		     "1.84467e+13 us, longer than its 0.5 s window");
	CHECK_EQ_STR(jstr(c, "numerator"), "io_uring");
	CHECK_EQ_STR(jstr(c, "metric"), "iops");
	c = jget(j, "comparisons[1]");
	CHECK(jis(c, "ratio", json_type_double));
	CHECK(!jget(c, "reason"));
	/* a second pass finds nothing more */
	CHECK_EQ_INT(bench_check_bounds(results, jget(j, "comparisons")), 0);
	json_object_put(j);
}

int main(void)
{
	if (!getenv("AGENT")) {
		printf("skipped: AGENT (the agent binary) is not set\n");
		return 77;
	}
	test_bounds();
	if (!mkdtemp(dir)) {
		CHECK_(0, "mkdtemp %s: %s", dir, strerror(errno));
		return check_summary();
	}
	chmod(dir, 0755);
	/* thp_fault has two variants: window 3 is repeat 2's first */
	test_crash("bench-thp_fault@3:SIGSEGV", "thp_fault", "false_sharing",
		   "SIGSEGV in ", "(repeat 2 of " REPEATS_TEXT ")");
	test_crash("bench-thp_fault@1", "thp_fault", "false_sharing",
		   "SIGKILL in ", "(repeat 1 of " REPEATS_TEXT ")");
	/* false_sharing has four: window 6 is in repeat 2 */
	test_crash("bench-false_sharing@6:SIGABRT", "false_sharing",
		   "thp_fault", "SIGABRT in ", "(repeat 2 of " REPEATS_TEXT ")");
	test_timeout();
	test_setup_enomem();
	test_table_and_run();
	CHECK_OK(rmdir(dir) < 0 ? -errno : 0);
	return check_summary();
}
