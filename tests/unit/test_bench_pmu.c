/* SPDX-License-Identifier: MIT */
/*
 * Counter groups (agent/bench/pmu.c) counted for real with software events
 * (this machine has no hardware counters), their scaling and per-access
 * division, and thp_chase's report of whether it could count.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"
#include "bench_test.h"
#include "check.h"
#include "cleanup.h"
#include "pmu.h"
#include "probe_test.h"
#include "sys/sys.h"
#include "pmu_bench.h"
#include "thp_chase.h"

/* The shadow pages AddressSanitizer touches when n pages are written
 * (a shadow byte per 8 bytes), 0 without it. */
#if defined(__SANITIZE_ADDRESS__)
#define ASAN_SHADOW(n) ((n) / 8 + 1)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN_SHADOW(n) ((n) / 8 + 1)
#endif
#endif
#ifndef ASAN_SHADOW
#define ASAN_SHADOW(n) 0
#endif

static const struct pmu_event sw_faults = {
	.name = "page_faults_min",
	.type = PERF_TYPE_SOFTWARE,
	.config = PERF_COUNT_SW_PAGE_FAULTS_MIN,
};

static const struct pmu_event sw_task_clock = {
	.name = "task_clock",
	.type = PERF_TYPE_SOFTWARE,
	.config = PERF_COUNT_SW_TASK_CLOCK,
};

/* perf_event_open of ev as pmu_open() does it, here: 0 or -errno. */
static int direct(const struct pmu_event *ev)
{
	struct perf_event_attr attr;
	int fd;

	pmu_attr(ev, true, &attr);
	fd = sys_perf_event_open(&attr, 0, -1, -1, 0);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/* pmu_attr(): what the probe and the benchmarks ask for. */
static void test_attr(void)
{
	struct perf_event_attr a;

	pmu_attr(&pmu_dtlb_load_misses, true, &a);
	CHECK_EQ_INT(a.type, PERF_TYPE_HW_CACHE);
	CHECK_EQ_INT(a.config, PERF_COUNT_HW_CACHE_DTLB |
				       (PERF_COUNT_HW_CACHE_OP_READ << 8) |
				       (PERF_COUNT_HW_CACHE_RESULT_MISS << 16));
	CHECK(a.disabled && a.exclude_kernel && a.exclude_hv);
	CHECK_EQ_INT(a.size, sizeof(a));
	CHECK_EQ_INT(a.read_format, PERF_FORMAT_GROUP |
					    PERF_FORMAT_TOTAL_TIME_ENABLED |
					    PERF_FORMAT_TOTAL_TIME_RUNNING);
	pmu_attr(&pmu_cpu_cycles, false, &a);
	CHECK(!a.disabled); /* a member follows its leader */
	CHECK_EQ_INT(a.config, PERF_COUNT_HW_CPU_CYCLES);
}

/* Minor faults counted around touching N fresh 4 KiB pages: N. */
static void test_software_group(void)
{
	const size_t npages = 1000, page = 4096;
	struct pmu_event ev[2] = { sw_faults, sw_task_clock };
	struct pmu_group g;
	struct pmu_counts c;
	char *buf;

	CHECK_OK(pmu_open(&g, ev, 2));
	CHECK(g.fd[0] >= 0 && g.fd[1] >= 0);
	buf = mmap(NULL, npages * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(buf != MAP_FAILED);
	if (buf == MAP_FAILED) {
		pmu_close(&g);
		return;
	}
	(void)sys_madvise_thp(buf, npages * page, false);
	CHECK_OK(pmu_start(&g));
	for (size_t i = 0; i < npages; i++)
		((volatile char *)buf)[i * page] = 1;
	CHECK_OK(pmu_stop(&g, &c));
	munmap(buf, npages * page);
	pmu_close(&g);
	pmu_close(&g); /* twice is fine */

	CHECK_EQ_INT(c.n, 2);
	/* one fault per page; a few more for the stack or the code (and,
	 * under AddressSanitizer, one per 8 pages for their shadow) */
	CHECK_(c.raw[0] >= npages &&
		       c.raw[0] <= npages + ASAN_SHADOW(npages) + 16,
	       "%llu minor faults for %zu pages",
	       (unsigned long long)c.raw[0], npages);
	CHECK(c.raw[1] > 0); /* task-clock ns */
	CHECK(c.time_enabled > 0 && c.time_running == c.time_enabled);
	CHECK(!c.multiplexed);
	CHECK(c.value[0] == (double)c.raw[0]);
	printf("touching %zu pages: %llu minor faults, task-clock %llu ns\n",
	       npages, (unsigned long long)c.raw[0],
	       (unsigned long long)c.raw[1]);

	/* started again: counted from zero */
	CHECK_OK(pmu_open(&g, ev, 1));
	CHECK_OK(pmu_start(&g));
	CHECK_OK(pmu_stop(&g, &c));
	CHECK_(c.raw[0] < 16, "%llu faults in an empty region",
	       (unsigned long long)c.raw[0]);
	pmu_close(&g);
}

/* The hardware leader: the errno this machine gives, or counting. */
static void test_hardware(void)
{
	struct pmu_event ev[2] = { sw_faults, pmu_dtlb_load_misses };
	int want = direct(&pmu_dtlb_load_misses);
	struct pmu_group g;
	struct pmu_counts c;

	printf("dtlb_load_misses here: %s\n", pmu_errname(want));
	CHECK_EQ_INT(pmu_open(&g, &pmu_dtlb_load_misses, 1), want);
	if (want < 0) {
		CHECK(g.fd[0] < 0 && g.err[0] == want);
		CHECK_EQ_INT(pmu_start(&g), -EBADF);
		CHECK_EQ_INT(pmu_stop(&g, &c), -EBADF);
	}
	pmu_close(&g);

	/* a member that cannot open is left out; the group counts on */
	CHECK_OK(pmu_open(&g, ev, 2));
	CHECK_EQ_INT(g.err[1], want);
	CHECK_OK(pmu_start(&g));
	CHECK_OK(pmu_stop(&g, &c));
	CHECK(!isnan(c.value[0]));
	CHECK(want < 0 ? isnan(c.value[1]) : !isnan(c.value[1]));
	pmu_close(&g);

	CHECK_EQ_INT(pmu_open(&g, ev, 0), -EINVAL);
	CHECK_EQ_INT(pmu_open(&g, ev, PMU_MAX_EVENTS + 1), -EINVAL);
	pmu_close(&g);
}

/* Scaling by time_enabled / time_running, and the per-access division. */
static void test_scaling(void)
{
	struct pmu_group g = { .n = 3, .fd = { 10, -1, 11, -1 } };
	const uint64_t full[] = { 2, 200, 200, 10, 20 };
	const uint64_t half[] = { 2, 200, 100, 10, 20 };
	const uint64_t never[] = { 2, 200, 0, 0, 0 };
	const uint64_t wrong[] = { 3, 200, 200, 10, 20, 30 };
	struct pmu_counts c;

	CHECK_OK(pmu_counts_parse(&g, full, 5, &c));
	CHECK(!c.multiplexed && c.value[0] == 10 && c.value[2] == 20);
	CHECK(isnan(c.value[1])); /* did not open */
	CHECK_OK(pmu_counts_parse(&g, half, 5, &c));
	CHECK(c.multiplexed && c.value[0] == 20 && c.value[2] == 40);
	CHECK(c.raw[0] == 10 && c.raw[2] == 20);
	CHECK(pmu_per_access(&c, 0, 4) == 5.0);
	CHECK(pmu_per_access(&c, 2, 8) == 5.0);
	CHECK(isnan(pmu_per_access(&c, 1, 4)));
	CHECK(isnan(pmu_per_access(&c, 0, 0)));
	CHECK(isnan(pmu_per_access(&c, 3, 4))); /* past n */
	CHECK_OK(pmu_counts_parse(&g, never, 5, &c));
	CHECK(isnan(c.value[0]) && isnan(pmu_per_access(&c, 0, 4)));
	CHECK_EQ_INT(pmu_counts_parse(&g, wrong, 6, &c), -EBADMSG);
	CHECK_EQ_INT(pmu_counts_parse(&g, full, 4, &c), -EBADMSG);

	/* 1.5 M misses over 1 M accesses */
	c = (struct pmu_counts){ .n = 1, .value = { 1.5e6 } };
	CHECK(pmu_per_access(&c, 0, 1000000) == 1.5);
	CHECK_EQ_STR(pmu_errname(0), "ok");
	CHECK_EQ_STR(pmu_errname(-ENOENT), "ENOENT");
	CHECK_EQ_STR(pmu_errname(-EOPNOTSUPP), "EOPNOTSUPP");
}

/* A tiny thp_chase: 8 MiB, 200,000 accesses, 2 repeats. */
static void tiny_params(struct bench_params *p)
{
	CHECK_OK(jbench_quick(p));
	p->chase_bytes = 8ULL << 20;
	p->chase_accesses = 200000;
	p->repeats = 2;
}

/* thp_chase here: its variants say whether the counters opened. */
static void test_chase(void)
{
	static const char *const variants[] = { "4k", "thp" };
	int want = direct(&pmu_dtlb_load_misses);
	struct json_object *report = NULL;
	struct bench_params p;
	char err[512] = "";

	tiny_params(&p);
	CHECK_OK(jbench_run(&p, "thp_chase", &report, err, sizeof(err)));
	if (!report) {
		fprintf(stderr, "bench_suite_run: %s\n", err);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(variants); i++) {
		struct json_object *r =
			jresult(report, "thp_chase", variants[i]);

		CHECK_EQ_STR(jpstr(r, "pmu"), pmu_errname(want));
		if (strcmp(jstatus(r), "ok"))
			continue;
		if (want < 0) {
			CHECK(jmetric(r, "dtlb_misses_per_access") == NULL);
			CHECK(jmetric(r, "walk_cycles_per_access") == NULL);
			CHECK(jparam(r, "pmu_walk_cycles") == NULL);
		} else {
			CHECK(jlen(jmetric(r, "dtlb_misses_per_access"),
				   "samples") == 2);
		}
	}
	printf("thp_chase/4k pmu: %s\n",
	       jpstr(jresult(report, "thp_chase", "4k"), "pmu"));
	json_object_put(report);
}

/*
 * thp_chase's counting path, with software events in place of the dTLB
 * and walk events: minor faults (none: the buffers were touched in setup)
 * and task-clock ns (above 0) per access, counted around the chase only.
 */
static void test_chase_counting(void)
{
	struct pmu_event ev[2] = { sw_faults, sw_task_clock };
	struct json_object *report = NULL, *r, *m, *w;
	struct bench_params p;
	char err[512] = "";
	double ns, ms;

	tiny_params(&p);
	bench_pmu_test_events(ev, 2);
	CHECK_OK(jbench_run(&p, "thp_chase", &report, err, sizeof(err)));
	bench_pmu_test_events(NULL, 0);
	if (!report) {
		fprintf(stderr, "bench_suite_run: %s\n", err);
		return;
	}
	r = jresult(report, "thp_chase", "4k");
	CHECK_EQ_STR(jstatus(r), "ok");
	CHECK_EQ_STR(jpstr(r, "pmu"), "ok");
	CHECK_EQ_STR(jpstr(r, "pmu_walk_cycles"), "task_clock");
	m = jmetric(r, "dtlb_misses_per_access");
	w = jmetric(r, "walk_cycles_per_access");
	CHECK_EQ_INT(jlen(m, "samples"), 2);
	CHECK_EQ_INT(jlen(w, "samples"), 2);
	CHECK_EQ_STR(jstr(m, "unit"), "misses/access");
	CHECK_EQ_STR(jstr(w, "unit"), "cycles/access");
	/* the chase faults nothing: setup touched every page */
	CHECK_(jmedian(m) < 0.001, "%g faults per access", jmedian(m));
	/* task-clock: time on the CPU, within the measured wall time */
	ns = jmedian(jmetric(r, "ns_per_access"));
	ms = jmedian(w);
	CHECK_(ms > 0 && ms <= ns * 1.05 + 1, "task-clock %g ns per access, wall %g",
	       ms, ns);
	printf("thp_chase/4k with software events: %g faults, %g task-clock ns, %g wall ns per access\n",
	       jmedian(m), ms, ns);
	json_object_put(report);
}

/*
 * mmap_read's counting path, with the same software events: each repeat
 * maps its file afresh, so the minor faults the counters see in the
 * measured loop are the ones getrusage() sees, one per 4 KiB page first
 * touched (4k variant).
 */
static void test_mmap_counting(void)
{
	struct pmu_event ev[2] = { sw_faults, sw_task_clock };
	struct json_object *report = NULL, *r, *m;
	struct bench_params p;
	char err[512] = "";
	double per_access, per_1k;

	tiny_params(&p);
	p.mmap_bytes = 8ULL << 20;
	p.mmap_accesses = 20000;
	bench_pmu_test_events(ev, 2);
	CHECK_OK(jbench_run(&p, "mmap_read", &report, err, sizeof(err)));
	bench_pmu_test_events(NULL, 0);
	if (!report) {
		fprintf(stderr, "bench_suite_run: %s\n", err);
		return;
	}
	r = jresult(report, "mmap_read", "4k");
	CHECK_EQ_STR(jstatus(r), "ok");
	CHECK_EQ_STR(jpstr(r, "pmu"), "ok");
	m = jmetric(r, "dtlb_misses_per_access");
	CHECK_EQ_INT(jlen(m, "samples"), 2);
	CHECK_EQ_INT(jlen(jmetric(r, "walk_cycles_per_access"), "samples"), 2);
	per_access = jmedian(m);
	per_1k = jmedian(jmetric(r, "minor_faults_per_1k"));
	CHECK_(per_access > 0 && fabs(per_access * 1000 - per_1k) <=
					 0.05 * per_1k + 0.1,
	       "counted %g faults per access, getrusage %g per 1,000",
	       per_access, per_1k);
	printf("mmap_read/4k with software events: %g faults per access, getrusage %g per 1,000\n",
	       per_access, per_1k);
	json_object_put(report);
}

int main(void)
{
	test_attr();
	test_software_group();
	test_hardware();
	test_scaling();
	test_chase();
	test_chase_counting();
	test_mmap_counting();
	return check_summary();
}
