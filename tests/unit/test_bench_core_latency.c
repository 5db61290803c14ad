/* SPDX-License-Identifier: MIT */
/*
 * core_latency: which pairs it plans on small and large hosts, a tiny run
 * (every pair a variant with one sane sample per repeat, each in its
 * window), and a run held to one CPU, which has no pair to measure.
 */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "bench_test.h"
#include "check.h"
#include "cleanup.h"
#include "core_latency.h"
#include "probe_test.h"
#include "probe_topology.h"

#define REPEATS 3
#define MAX_CPUS 1024

/* ---- the plan ---- */

static bool has_pair(const struct core_latency_pair *p, size_t n, int a,
		     int b)
{
	for (size_t i = 0; i < n; i++)
		if (p[i].a == a && p[i].b == b)
			return true;
	return false;
}

/* Sorted by a, then b, each a < b, no pair twice. */
static void check_order(const struct core_latency_pair *p, size_t n,
			const char *what)
{
	for (size_t i = 0; i < n; i++) {
		CHECK_(p[i].a < p[i].b, "%s: pair %zu is %d-%d", what, i,
		       p[i].a, p[i].b);
		if (i)
			CHECK_(p[i - 1].a < p[i].a ||
				       (p[i - 1].a == p[i].a &&
					p[i - 1].b < p[i].b),
			       "%s: pair %zu (%d-%d) after %d-%d", what, i,
			       p[i].a, p[i].b, p[i - 1].a, p[i - 1].b);
	}
}

static void test_plan(void)
{
	struct core_latency_pair p[CORE_LATENCY_MAX_PAIRS];
	int cpus[128], core[128], unknown[128];
	size_t n, sib = 0;

	for (int i = 0; i < 128; i++) {
		cpus[i] = i;
		core[i] = i & ~1; /* SMT pairs 0-1, 2-3, ... */
		unknown[i] = -1;
	}

	/* one vCPU: nothing; two: their pair */
	CHECK_EQ_INT(core_latency_plan(cpus, core, 1, 64, p), 0);
	CHECK_EQ_INT(core_latency_plan(cpus, core, 2, 64, p), 1);
	CHECK(p[0].a == 0 && p[0].b == 1);

	/* 11 vCPUs: all 55 pairs fit in 64 */
	n = core_latency_plan(cpus, core, 11, 64, p);
	CHECK_EQ_INT(n, 55);
	check_order(p, n, "11 vCPUs");
	for (int a = 0; a < 11; a++)
		for (int b = a + 1; b < 11; b++)
			CHECK_(has_pair(p, n, a, b), "11 vCPUs: %d-%d", a, b);

	/* 12 (66 pairs): vCPU 0 with each of the 11 others, and the sibling
	 * pairs of the other 5 cores */
	n = core_latency_plan(cpus, core, 12, 64, p);
	CHECK_EQ_INT(n, 16);
	check_order(p, n, "12 vCPUs");
	for (int b = 1; b < 12; b++)
		CHECK_(has_pair(p, n, 0, b), "12 vCPUs: 0-%d", b);
	for (int c = 2; c < 12; c += 2)
		CHECK_(has_pair(p, n, c, c + 1), "12 vCPUs: %d-%d", c, c + 1);

	/* 128 vCPUs in 64 SMT pairs: 16 sibling pairs spread over the 63
	 * cores past vCPU 0's, and 48 pairs of vCPU 0 from 1 to 127 */
	n = core_latency_plan(cpus, core, 128, 64, p);
	CHECK_EQ_INT(n, 64);
	check_order(p, n, "128 vCPUs");
	for (size_t i = 0; i < n; i++)
		if (p[i].a != 0) {
			CHECK_(core[p[i].a] == core[p[i].b],
			       "128 vCPUs: %d-%d are no siblings", p[i].a,
			       p[i].b);
			sib++;
		}
	CHECK_EQ_INT(sib, 16);
	CHECK(has_pair(p, n, 2, 3)); /* the first core past vCPU 0's */
	CHECK(has_pair(p, n, 0, 1) && has_pair(p, n, 0, 127));
	CHECK(has_pair(p, n, 120, 121)); /* the 16th: sibling pair 59 of 63 */

	/* cores not known: vCPU 0 with 64 others, spread up to the last */
	n = core_latency_plan(cpus, unknown, 128, 64, p);
	CHECK_EQ_INT(n, 64);
	check_order(p, n, "128 vCPUs, no topology");
	for (size_t i = 0; i < n; i++)
		CHECK_EQ_INT(p[i].a, 0);
	CHECK(has_pair(p, n, 0, 1) && has_pair(p, n, 0, 127));

	/* vCPU numbers are the usable ones, not indices */
	{
		int some[3] = { 2, 5, 9 };

		n = core_latency_plan(some, unknown, 3, 64, p);
		CHECK_EQ_INT(n, 3);
		CHECK(has_pair(p, n, 2, 5) && has_pair(p, n, 2, 9) &&
		      has_pair(p, n, 5, 9));
	}
}

/* ---- runs ---- */

/* The vCPUs online and in this process's affinity mask, ascending. */
static size_t usable_cpus(int *cpus)
{
	_cleanup_free_ int *online = NULL;
	_cleanup_free_ char *text = NULL;
	size_t n_online = 0, n = 0, cap = 0;
	cpu_set_t set;
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");

	if (f) {
		if (getline(&text, &cap, f) < 0) {
			free(text);
			text = NULL;
		}
		fclose(f);
	}
	CHECK(text && topology_cpulist_parse(text, &online, &n_online) == 0);
	CHECK_OK(sched_getaffinity(0, sizeof(set), &set) < 0 ? -errno : 0);
	for (size_t i = 0; i < n_online && n < MAX_CPUS; i++)
		if (online[i] < CPU_SETSIZE && CPU_ISSET(online[i], &set))
			cpus[n++] = online[i];
	return n;
}

static int run_core_latency(struct json_object **ret)
{
	struct bench_params p = { 0 };
	char err[512] = "";
	int r;

	CHECK_OK(jbench_quick(&p));
	p.repeats = REPEATS;
	r = jbench_run(&p, "core_latency", ret, err, sizeof(err));
	CHECK_(r == 0, "bench_suite_run: %d (%s)", r, err);
	return r;
}

static void test_pairs(void)
{
	static int cpus[MAX_CPUS];
	struct core_latency_pair plan[CORE_LATENCY_MAX_PAIRS];
	struct json_object *report = NULL, *benchmarks;
	size_t n = usable_cpus(cpus), npairs;
	int core[MAX_CPUS];

	if (n < 2) {
		printf("one usable vCPU: the pairs are not tested here\n");
		return;
	}
	/* which pairs is the plan's business (test_plan); which of them a
	 * large host gets depends on its siblings: here, every pair */
	for (size_t i = 0; i < n; i++)
		core[i] = -1;
	npairs = core_latency_plan(cpus, core, n, CORE_LATENCY_MAX_PAIRS, plan);
	if (run_core_latency(&report) < 0)
		return;
	benchmarks = jget(report, "benchmarks");
	CHECK_EQ_INT(jlen(report, "benchmarks"), npairs);
	if (n * (n - 1) / 2 > CORE_LATENCY_MAX_PAIRS) {
		printf("%zu usable vCPUs: %zu pairs of %zu measured\n", n,
		       jlen(report, "benchmarks"), n * (n - 1) / 2);
		CHECK(jlen(report, "benchmarks") <= CORE_LATENCY_MAX_PAIRS);
		npairs = 0; /* the pairs differ with the siblings */
	}
	for (size_t k = 0; k < npairs; k++) {
		struct json_object *res;
		char name[64], why[256];
		bool ok;

		snprintf(name, sizeof(name), "cpu%d-cpu%d", plan[k].a,
			 plan[k].b);
		res = jresult(report, "core_latency", name);
		CHECK_(res != NULL, "no variant %s", name);
		if (!res)
			continue;
		CHECK_EQ_STR(jstatus(res), "ok");
		CHECK_EQ_INT(jpint(res, "cpu_a"), plan[k].a);
		CHECK_EQ_INT(jpint(res, "cpu_b"), plan[k].b);
		CHECK_EQ_INT(jpint(res, "round_trips"), 200000);
		CHECK_EQ_INT(jpint(res, "cpus_usable"), (int64_t)n);
		CHECK_EQ_STR(jpstr(res, "pairs"), "all");
		CHECK_EQ_STR(jstr(jmetric(res, "round_trip_ns"), "unit"), "ns");
		/* a round trip moves a line twice: more than a nanosecond,
		 * and well under 10 ms even on a loaded, stolen host */
		ok = jsamples_within(res, "round_trip_ns", REPEATS, 1, 1e7, why,
				     sizeof(why));
		CHECK_(ok, "%s", why);
		/* one window per sample */
		CHECK_EQ_INT(jlen(res, "windows"), REPEATS);
		printf("%s: median %.0f ns per round trip\n", name,
		       jmedian(jmetric(res, "round_trip_ns")));
	}
	/* nothing but core_latency ran, and it compares nothing */
	for (size_t i = 0; benchmarks && i < json_object_array_length(benchmarks);
	     i++)
		CHECK_EQ_STR(jstr(json_object_array_get_idx(benchmarks, i),
				  "benchmark"),
			     "core_latency");
	CHECK(!jget(report, "comparisons") ||
	      jlen(report, "comparisons") == 0);
	json_object_put(report);
}

/* Held to one CPU: one variant, skipped, saying why. */
static void test_one_cpu(void)
{
	struct json_object *report = NULL, *res;
	cpu_set_t saved, one;
	int cpu = sched_getcpu();
	char name[32];

	CHECK_OK(sched_getaffinity(0, sizeof(saved), &saved) < 0 ? -errno : 0);
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	CHECK_OK(sched_setaffinity(0, sizeof(one), &one) < 0 ? -errno : 0);
	if (run_core_latency(&report) == 0) {
		snprintf(name, sizeof(name), "cpu%d", cpu);
		CHECK_EQ_INT(jlen(report, "benchmarks"), 1);
		res = jresult(report, "core_latency", name);
		CHECK_(res != NULL, "no variant %s", name);
		CHECK_EQ_STR(jstatus(res), "skipped");
		CHECK_EQ_STR(jstr(res, "skip_reason"), "one vCPU: no pair");
		CHECK_EQ_INT(jpint(res, "cpus_usable"), 1);
		CHECK(!jget(res, "metrics") || jlen(res, "metrics") == 0);
	}
	json_object_put(report);
	CHECK_OK(sched_setaffinity(0, sizeof(saved), &saved) < 0 ? -errno : 0);
}

int main(void)
{
	test_plan();
	test_pairs();
	test_one_cpu();
	return check_summary();
}
