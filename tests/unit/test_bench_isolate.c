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
#include "bench_test.h"
#include "check.h"
#include "clock.h"
#include "probe_test.h"
#include "run.h"

#define REPEATS 3
#define REPEATS_TEXT "3"

static char dir[] = "/var/tmp/fleetbench-test-isolate-XXXXXX";

/* The results of one benchmark in a bench report, in order. */
static size_t results_of(struct json_object *bench, const char *name,
			 struct json_object **ret, size_t max)
{
	struct json_object *results = jget(bench, "benchmarks");
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
		CHECK_(!strcmp(jstatus(res[i]), "ok"),
		       "%s: %s/%s is %s (%s)", who, name,
		       jstr(res[i], "variant"), jstatus(res[i]),
		       jstr(res[i], "failure"));
		CHECK(jis(res[i], "failure", json_type_null));
		CHECK_(jlen(res[i], "metrics") > 0 &&
			       jlen(res[i], "metrics") != (size_t)-1,
		       "%s: %s/%s has no metrics", who, name,
		       jstr(res[i], "variant"));
		CHECK_EQ_INT(jlen(res[i], "metrics[0].samples"), REPEATS);
		CHECK_EQ_INT(jlen(res[i], "windows"), REPEATS);
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

		CHECK_EQ_STR(jstatus(res[i]), "failed");
		CHECK(jis(res[i], "skip_reason", json_type_null));
		CHECK_EQ_INT(jlen(res[i], "metrics"), 0);
		CHECK_EQ_INT(jlen(res[i], "windows"), 0);
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
	double t0 = mono_s();
	struct json_object *j = bench(fault, "3", &status, &err);
	double took = mono_s() - t0;

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
		CHECK_EQ_STR(jstatus(res[0]), "failed");
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
	CHECK(strstr(r.out, "\"failure\":\"SIGSEGV in false_sharing/") ||
	      strstr(r.out, "\"failure\": \"SIGSEGV in false_sharing/"));
	run_result_release(&r);
}

/* ---- the bounds pass ---- */

/* The bounds pass's input is messages from malloc, as a child's unpacked
 * results are: it frees what it drops. */
static Fleetbench__Metric *metric(const char *name, const char *unit,
				  double s0, double s1)
{
	Fleetbench__Metric *m = malloc(sizeof(*m));

	fleetbench__metric__init(m);
	m->metric = strdup(name);
	m->unit = strdup(unit);
	m->samples = malloc(2 * sizeof(*m->samples));
	m->samples[0] = s0;
	m->samples[1] = s1;
	m->n_samples = 2;
	return m;
}

/* randread/variant with the metrics given (up to 2), two 0.5 s windows
 * unless skipped, and parameter engine when not NULL. */
static Fleetbench__Benchmark *variant(const char *name, const char *engine,
				      const char *skip, Fleetbench__Metric *m0,
				      Fleetbench__Metric *m1)
{
	Fleetbench__Benchmark *b = malloc(sizeof(*b));

	fleetbench__benchmark__init(b);
	b->benchmark = strdup("randread");
	b->variant = strdup(name);
	b->skip_reason = skip ? strdup(skip) : NULL;
	if (engine) {
		Fleetbench__Param *p = malloc(sizeof(*p));

		fleetbench__param__init(p);
		p->key = strdup("engine");
		p->value_case = FLEETBENCH__PARAM__VALUE_STRING_VALUE;
		p->string_value = strdup(engine);
		b->parameters = malloc(sizeof(*b->parameters));
		b->parameters[b->n_parameters++] = p;
	}
	b->metrics = calloc(2, sizeof(*b->metrics));
	if (m0)
		b->metrics[b->n_metrics++] = m0;
	if (m1)
		b->metrics[b->n_metrics++] = m1;
	b->windows = calloc(2, sizeof(*b->windows));
	for (int i = 0; !skip && i < 2; i++) {
		Fleetbench__Window *w = malloc(sizeof(*w));

		fleetbench__window__init(w);
		w->has_wall_s = 1;
		w->wall_s = 0.5;
		b->windows[b->n_windows++] = w;
	}
	return b;
}

static Fleetbench__Comparison *comparison(const char *name, const char *num,
					  const char *den, double ratio)
{
	Fleetbench__Comparison *c = malloc(sizeof(*c));

	fleetbench__comparison__init(c);
	c->name = strdup(name);
	c->benchmark = strdup("randread");
	c->metric = strdup("iops");
	c->numerator = strdup(num);
	c->denominator = strdup(den);
	c->has_ratio = c->has_ci_low = c->has_ci_high = c->has_level = 1;
	c->ratio = ratio;
	c->ci_low = ratio - 0.1;
	c->ci_high = ratio + 0.1;
	c->level = 0.95;
	c->method = strdup("m");
	return c;
}

/* pread ok; io_uring with a latency longer than its window; libaio with a
 * NaN; io_uring_sqpoll skipped; a comparison with io_uring and one
 * without. */
static Fleetbench__BenchRun *bounds_run(void)
{
	Fleetbench__BenchRun *b = malloc(sizeof(*b));

	fleetbench__bench_run__init(b);
	b->benchmarks = calloc(4, sizeof(*b->benchmarks));
	b->benchmarks[0] = variant("pread", "pread", NULL,
				   metric("iops", "IO/s", 1000, 1100),
				   metric("lat_p99_us", "us", 300, 310));
	b->benchmarks[1] =
		variant("io_uring", "io_uring", NULL,
			metric("iops", "IO/s", 2000, 2100),
			metric("lat_p99_us", "us", 250,
			       1.8446744073709552e+13));
	b->benchmarks[2] = variant("libaio", NULL, NULL,
				   metric("iops", "IO/s", 1500, NAN), NULL);
	b->benchmarks[3] = variant("io_uring_sqpoll", NULL, "sqpoll: EPERM",
				   NULL, NULL);
	b->n_benchmarks = 4;
	b->comparisons = calloc(2, sizeof(*b->comparisons));
	b->comparisons[0] = comparison("iouring_vs_pread", "io_uring",
				       "pread", 1.9);
	b->comparisons[1] = comparison("libaio_vs_pread", "pread", "pread",
				       1.0);
	b->n_comparisons = 2;
	return b;
}

static void test_bounds(void)
{
	Fleetbench__BenchRun *b = bounds_run();
	struct json_object *j, *uring, *libaio, *c;

	CHECK_EQ_INT(bench_check_bounds(b), 2);
	CHECK_EQ_INT(bench_report_failed(b), 2);
	j = jbench(b);
	CHECK(j != NULL);
	/* the sample longer than its window: the metric named */
	uring = jget(j, "benchmarks[1]");
	CHECK_EQ_STR(jstr(uring, "variant"), "io_uring");
	CHECK_EQ_STR(jstatus(uring), "failed");
	CHECK_EQ_STR(jstr(uring, "failure"),
		     "out of bounds: lat_p99_us: sample 1 is 1.84467e+13 us, "
		     "longer than its 0.5 s window");
	CHECK(jis(uring, "skip_reason", json_type_null));
	CHECK_EQ_INT(jlen(uring, "metrics"), 0);
	CHECK_EQ_INT(jlen(uring, "windows"), 0);
	CHECK_EQ_STR(jpstr(uring, "engine"), "io_uring");
	/* a NaN sample */
	libaio = jget(j, "benchmarks[2]");
	CHECK_EQ_STR(jstatus(libaio), "failed");
	CHECK_(strstr(jstr(libaio, "failure"),
		      "out of bounds: iops: sample 1 is nan IO/s, not a finite number") !=
		       NULL,
	       "libaio: %s", jstr(libaio, "failure"));
	/* the others as they were */
	CHECK_EQ_STR(jstatus(jget(j, "benchmarks[0]")), "ok");
	CHECK_EQ_INT(jlen(j, "benchmarks[0].metrics[1].samples"), 2);
	CHECK_EQ_INT(jlen(j, "benchmarks[0].windows"), 2);
	CHECK_EQ_STR(jstatus(jget(j, "benchmarks[3]")), "skipped");
	CHECK_EQ_STR(jstr(j, "benchmarks[3].skip_reason"), "sqpoll: EPERM");
	/* the comparison with io_uring: ratio null, the reason */
	c = jget(j, "comparisons[0]");
	CHECK_EQ_STR(jstr(c, "name"), "iouring_vs_pread");
	CHECK(!jget(c, "ratio") && !jget(c, "ci_low") &&
	      !jget(c, "ci_high") && !jget(c, "level") && !jget(c, "method"));
	CHECK_EQ_STR(jstr(c, "reason"),
		     "io_uring failed: out of bounds: lat_p99_us: sample 1 is "
		     "1.84467e+13 us, longer than its 0.5 s window");
	CHECK_EQ_STR(jstr(c, "numerator"), "io_uring");
	CHECK_EQ_STR(jstr(c, "metric"), "iops");
	c = jget(j, "comparisons[1]");
	CHECK(jis(c, "ratio", json_type_double));
	CHECK(!jget(c, "reason"));
	/* a second pass finds nothing more */
	CHECK_EQ_INT(bench_check_bounds(b), 0);
	json_object_put(j);
	bench_run_free(b);
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
