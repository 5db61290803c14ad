/* SPDX-License-Identifier: MIT */
/* thp_chase and thp_fault: the cycle, smaps parsing, refusals, a tiny run. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "bench_test.h"
#include "check.h"
#include "kfiles.h"
#include "probe_test.h"
#include "rand.h"
#include "thp_chase.h"

/* ---- the permutation ---- */

/* The textbook loop, for comparison with the prefetching one. */
static void sattolo_plain(uint32_t *a, size_t n, uint64_t seed)
{
	struct rng r;

	rng_seed(&r, seed);
	for (size_t i = 0; i < n; i++)
		a[i] = (uint32_t)i;
	for (size_t i = n - 1; i >= 1; i--) {
		size_t j = rng_below(&r, i);
		uint32_t t = a[i];

		a[i] = a[j];
		a[j] = t;
	}
}

/* 1 when next[] is a single cycle through all n slots. */
static int one_cycle(const uint32_t *next, size_t n)
{
	uint8_t *seen = calloc(n, 1);
	size_t steps = 0;
	uint32_t p = 0;
	int ok = 1;

	if (!seen)
		return 0;
	do {
		if (next[p] >= n || seen[p]) {
			ok = 0;
			break;
		}
		seen[p] = 1;
		p = next[p];
		steps++;
	} while (p != 0);
	free(seen);
	return ok && steps == n;
}

static void test_cycle(void)
{
	static const size_t sizes[] = { 1, 2, 3, 31, 32, 33, 1000, 65536,
					100003 };

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		uint32_t *a = malloc(n * sizeof(*a));
		uint32_t *b = malloc(n * sizeof(*b));
		uint32_t *c = malloc(n * sizeof(*c));

		CHECK(a && b && c);
		if (!a || !b || !c)
			return;
		CHECK_OK(thp_cycle_build(a, n, 42));
		CHECK_(one_cycle(a, n), "one cycle through %zu slots", n);
		/* deterministic for a seed, and exactly Sattolo's draws */
		CHECK_OK(thp_cycle_build(b, n, 42));
		CHECK_(!memcmp(a, b, n * sizeof(*a)), "same seed, n %zu", n);
		sattolo_plain(c, n, 42);
		CHECK_(!memcmp(a, c, n * sizeof(*a)), "plain Sattolo, n %zu",
		       n);
		/* no slot is its own successor (except the 1-slot cycle) */
		for (size_t i = 0; n > 1 && i < n; i++)
			if (a[i] == i) {
				CHECK_(0, "fixed point %zu of %zu", i, n);
				break;
			}
		if (n >= 1000) {
			CHECK_OK(thp_cycle_build(b, n, 43));
			CHECK_(memcmp(a, b, n * sizeof(*a)) != 0,
			       "another seed, another cycle, n %zu", n);
		}
		free(a);
		free(b);
		free(c);
	}
	CHECK_EQ_INT(thp_cycle_build(NULL, 0, 1), -EINVAL);
}

/* ---- smaps ---- */

#define VMA(head, size, kps, rss, anon, ahuge, shuge, phuge, elig, flags) \
	head "\n"                                                          \
	"Size:           " size " kB\n"                                    \
	"KernelPageSize:        " kps " kB\n"                              \
	"MMUPageSize:           " kps " kB\n"                              \
	"Rss:            " rss " kB\n"                                     \
	"Pss:            " rss " kB\n"                                     \
	"Pss_Dirty:      " anon " kB\n"                                    \
	"Shared_Clean:          0 kB\n"                                    \
	"Shared_Dirty:          0 kB\n"                                    \
	"Private_Clean:         0 kB\n"                                    \
	"Private_Dirty:  " rss " kB\n"                                     \
	"Referenced:     " rss " kB\n"                                     \
	"Anonymous:      " anon " kB\n"                                    \
	"KSM:                   0 kB\n"                                    \
	"LazyFree:              0 kB\n"                                    \
	"AnonHugePages:  " ahuge " kB\n"                                   \
	"ShmemPmdMapped:        0 kB\n"                                    \
	"FilePmdMapped:         0 kB\n"                                    \
	"Shared_Hugetlb: " shuge " kB\n"                                   \
	"Private_Hugetlb: " phuge " kB\n"                                  \
	"Swap:                  0 kB\n"                                    \
	"SwapPss:               0 kB\n"                                    \
	"Locked:                0 kB\n"                                    \
	"THPeligible:           " elig "\n"                                \
	"ProtectionKey:         0\n"                                       \
	"VmFlags: " flags " \n"

static const char smaps_text[] =
	VMA("55e2d76da000-55e2d76dc000 r--p 00000000 fe:00 247498                     /usr/bin/fleetbench-agent",
	    "8", "4", "8", "0", "0", "0", "0", "0", "rd mr mw me")
	VMA("55e2d8a00000-55e2d8a21000 rw-p 00000000 00:00 0                          [heap]",
	    "132", "4", "20", "20", "0", "0", "0", "0", "rd wr mr mw me ac")
	/* the THP buffer: 62 of its 64 huge pages */
	VMA("7f3a40000000-7f3a48000000 rw-p 00000000 00:00 0 ",
	    "131072", "4", "131072", "131072", "126976", "0", "0", "1",
	    "rd wr mr mw me ac sd hg")
	/* the 4 KiB buffer right after it */
	VMA("7f3a48000000-7f3a50000000 rw-p 00000000 00:00 0 ",
	    "131072", "4", "131072", "131072", "0", "0", "0", "0",
	    "rd wr mr mw me ac sd nh")
	VMA("7f3a80000000-7f3a88000000 rw-p 00000000 00:0f 31337                      /anon_hugepage (deleted)",
	    "131072", "2048", "0", "0", "0", "0", "131072", "0",
	    "rd wr mr mw me de ht sd")
	VMA("7ffd1c5e2000-7ffd1c603000 rw-p 00000000 00:00 0                          [stack]",
	    "132", "4", "16", "16", "0", "0", "0", "0",
	    "rd wr mr mw me gd ac")
	VMA("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]",
	    "4", "4", "0", "0", "0", "0", "0", "0", "ex");

static void test_smaps(void)
{
	struct thp_smaps_vma v;
	uint64_t bytes;
	char *bad;

	CHECK_OK(thp_smaps_find(smaps_text, 0x7f3a40000000, &v));
	CHECK_EQ_INT(v.start, 0x7f3a40000000);
	CHECK_EQ_INT(v.end, 0x7f3a48000000);
	CHECK_EQ_INT(v.anon_huge_kb, 126976);
	CHECK_EQ_INT(v.rss_kb, 131072);
	CHECK_EQ_INT(v.kernel_page_kb, 4);
	CHECK(v.has_anon_huge);
	CHECK_OK(thp_smaps_find(smaps_text, 0x7f3a47ffffff, &v));
	CHECK_EQ_INT(v.start, 0x7f3a40000000);
	/* the next VMA starts where this one ends */
	CHECK_OK(thp_smaps_find(smaps_text, 0x7f3a48000000, &v));
	CHECK_EQ_INT(v.start, 0x7f3a48000000);
	CHECK_EQ_INT(v.anon_huge_kb, 0);
	CHECK_OK(thp_smaps_find(smaps_text, 0x7f3a80100000, &v));
	CHECK_EQ_INT(v.kernel_page_kb, 2048);
	CHECK_EQ_INT(v.private_hugetlb_kb, 131072);
	CHECK_EQ_INT(v.anon_huge_kb, 0);
	CHECK_OK(thp_smaps_find(smaps_text, 0x55e2d8a00010, &v));
	CHECK_EQ_INT(v.end, 0x55e2d8a21000);
	CHECK_EQ_INT(v.rss_kb, 20);
	CHECK_OK(thp_smaps_find(smaps_text, 0xffffffffff600000, &v));
	CHECK_EQ_INT(v.start, 0xffffffffff600000);
	CHECK_EQ_INT(thp_smaps_find(smaps_text, 0x7f3a60000000, &v), -ENOENT);
	CHECK_EQ_INT(thp_smaps_find(smaps_text, 0x1000, &v), -ENOENT);
	CHECK_EQ_INT(thp_smaps_find("", 0x1000, &v), -ENOENT);

	/* huge-backed bytes of a range */
	CHECK_OK(thp_smaps_huge_bytes(smaps_text, 0x7f3a40000000,
				      0x7f3a48000000, &bytes));
	CHECK_EQ_INT(bytes, 126976ULL << 10);
	CHECK_OK(thp_smaps_huge_bytes(smaps_text, 0x7f3a40000000,
				      0x7f3a50000000, &bytes));
	CHECK_EQ_INT(bytes, 126976ULL << 10);
	CHECK_OK(thp_smaps_huge_bytes(smaps_text, 0x7f3a48000000,
				      0x7f3a50000000, &bytes));
	CHECK_EQ_INT(bytes, 0);
	CHECK_OK(thp_smaps_huge_bytes(smaps_text, 0x7f3a80000000,
				      0x7f3a88000000, &bytes));
	CHECK_EQ_INT(bytes, 128ULL << 20);
	/* a part of a VMA: capped at the part */
	CHECK_OK(thp_smaps_huge_bytes(smaps_text, 0x7f3a40000000,
				      0x7f3a44000000, &bytes));
	CHECK_EQ_INT(bytes, 64ULL << 20);
	CHECK_EQ_INT(thp_smaps_huge_bytes(smaps_text, 0x7f3a48000000,
					  0x7f3a58000000, &bytes),
		     -ENOENT);

	/* malformed text is an error, not a zero */
	bad = strdup(smaps_text);
	CHECK(bad != NULL);
	if (bad) {
		char *p = strstr(bad, "AnonHugePages:  126976 kB");

		memcpy(p, "AnonHugePages:  12x976 kB", 25);
		CHECK_EQ_INT(thp_smaps_find(bad, 0x7f3a40000000, &v), -EBADMSG);
		/* the same text is fine for a VMA before the damage */
		CHECK_OK(thp_smaps_find(bad, 0x55e2d8a00000, &v));
		free(bad);
	}
	CHECK_EQ_INT(thp_smaps_find("Rss: 4 kB\n", 0x1000, &v), -EBADMSG);
	CHECK_EQ_INT(thp_smaps_find("7f00-7e00 rw-p 0 00:00 0\n", 0x7f00, &v),
		     -EBADMSG);
	CHECK_EQ_INT(thp_smaps_find("7f00-8000 rw-p 0 00:00 0\n"
				    "this is not smaps\n",
				    0x7f00, &v),
		     -EBADMSG);
	CHECK_EQ_INT(thp_smaps_find("7f00-8000 rw-p 0 00:00 0\n"
				    "AnonHugePages: 4\n",
				    0x7f00, &v),
		     -EBADMSG);
	CHECK_EQ_INT(thp_smaps_find("7f00-", 0x7f00, &v), -EBADMSG);
	CHECK_EQ_INT(thp_smaps_huge_bytes("Rss: 4 kB\n", 1, 2, &bytes),
		     -EBADMSG);
}

/* ---- a fixture tree ---- */

#define VMSTAT                                                              \
	"nr_free_pages 5000000\ncompact_stall 7\nthp_fault_alloc 11\n"      \
	"thp_fault_fallback 2\nthp_split_page 3\n"

/* A fixture tree (tree_new()) with meminfo and the kernel files the THP
 * benchmarks read; free it with tree_free(). */
static char *make_tree(const char *meminfo)
{
	static const char *const files[][2] = {
		{ "proc/vmstat", VMSTAT },
		{ "proc/stat", "cpu  100 0 100 1000 0 0 0 0 0 0\n" },
		{ "proc/loadavg", "0.10 0.20 0.30 1/100 1234\n" },
		{ "sys/kernel/mm/transparent_hugepage/enabled",
		  "always [madvise] never\n" },
		{ "sys/kernel/mm/transparent_hugepage/defrag",
		  "always defer defer+madvise [madvise] never\n" },
		{ "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",
		  "0\n" },
		{ "sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages",
		  "0\n" },
		{ "sys/kernel/mm/hugepages/hugepages-2048kB/resv_hugepages",
		  "0\n" },
	};
	char *root = tree_new();

	tree_put(root, "proc/meminfo", meminfo, -1);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		tree_put(root, files[i][0], files[i][1], -1);
	return root;
}

static long long vm_hwm_kb(void)
{
	char line[256];
	long long kb = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* ---- the report ---- */

/* The samples of metric: n of them, each within [lo, hi]. */
static void check_samples(struct json_object *res, const char *metric,
			  size_t n, double lo, double hi)
{
	struct json_object *m = jmetric(res, metric);
	struct json_object *s = jget(m, "samples");

	CHECK_(m != NULL, "metric %s of %s", metric, jstr(res, "variant"));
	CHECK_EQ_INT(jlen(m, "samples"), n);
	for (size_t i = 0; s && i < json_object_array_length(s); i++) {
		double v = json_object_get_double(
			json_object_array_get_idx(s, i));

		CHECK_(v >= lo && v <= hi, "%s %s sample %g in [%g, %g]",
		       jstr(res, "variant"), metric, v, lo, hi);
	}
}

static void base_params(struct bench_params *p)
{
	CHECK_OK(jbench_quick(p));
}

/* Too big for MemAvailable: every variant refused, nothing allocated. */
static void test_refusal(void)
{
	static const char *const chase[] = { "4k", "thp", "hugetlb_2m",
					     "hugetlb_1g" };
	static const char *const fault[] = { "nohuge", "thp" };
	char *root = make_tree("MemTotal: 1048576 kB\nMemFree: 65536 kB\n"
			       "MemAvailable: 65536 kB\n");
	struct json_object *report = NULL;
	struct bench_params p;
	char err[512] = "";
	long long hwm0, hwm1;

	/* a kernel without THP counters: their absence is a parameter */
	tree_put(root, "proc/vmstat", "compact_stall 1\n", -1);
	base_params(&p);
	p.root = root;
	p.chase_bytes = 1ULL << 30;
	p.fault_bytes = 1ULL << 30;
	p.repeats = 2;
	hwm0 = vm_hwm_kb();
	CHECK_OK(jbench_run(&p, "thp_chase,thp_fault", &report, err,
				 sizeof(err)));
	hwm1 = vm_hwm_kb();
	CHECK_(hwm0 > 0 && hwm1 - hwm0 < 64 * 1024,
	       "peak RSS grew by %lld kB", hwm1 - hwm0);
	for (size_t i = 0; report && i < 4; i++) {
		struct json_object *r = jresult(report, "thp_chase", chase[i]);

		CHECK_EQ_STR(jstatus(r), "skipped");
		CHECK_(!strncmp(jstr(r, "skip_reason"), "refused: ", 9),
		       "thp_chase %s: %s", chase[i], jstr(r, "skip_reason"));
		CHECK_EQ_INT(jlen(r, "metrics"), 0);
		CHECK_EQ_STR(jpstr(r, "vmstat_missing"),
			     "thp_fault_alloc thp_fault_fallback thp_split_page");
	}
	for (size_t i = 0; report && i < 2; i++) {
		struct json_object *r = jresult(report, "thp_fault", fault[i]);

		CHECK_EQ_STR(jstatus(r), "skipped");
		CHECK_(!strncmp(jstr(r, "skip_reason"), "refused: ", 9),
		       "thp_fault %s: %s", fault[i], jstr(r, "skip_reason"));
	}
	CHECK(jcomparison(report, "thp_speedup") &&
	      !jget(jcomparison(report, "thp_speedup"), "ratio"));
	json_object_put(report);
	tree_free(root);
}

/*
 * thp_chase with --reserve-hugetlb 4 against a fixture pool of 0 pages,
 * with FLEETBENCH_FAULT=fault (NULL: none); the report, and the pool size
 * in the fixture afterwards in pool.
 */
static struct json_object *reserve_run(const char *fault, char *pool,
				       size_t len)
{
	char *root = make_tree("MemTotal: 67108864 kB\n"
			       "MemAvailable: 67108864 kB\n");
	struct json_object *report = NULL;
	struct bench_params p;
	char err[512] = "", path[PATH_MAX];
	FILE *f;

	pool[0] = '\0';
	base_params(&p);
	p.root = root;
	p.chase_bytes = 2ULL << 20;
	p.chase_accesses = 1000;
	p.repeats = 1;
	p.reserve_hugetlb = 4;
	if (fault)
		setenv("FLEETBENCH_FAULT", fault, 1);
	CHECK_OK(jbench_run(&p, "thp_chase", &report, err, sizeof(err)));
	unsetenv("FLEETBENCH_FAULT");
	snprintf(path, sizeof(path),
		 "%s/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",
		 root);
	f = fopen(path, "re");
	CHECK(f && fgets(pool, (int)len, f));
	if (f)
		fclose(f);
	tree_free(root);
	return report;
}

/*
 * --reserve-hugetlb against a fixture pool: the pool file is grown, the
 * result recorded, and the old size written back in teardown.
 */
static void test_reserve(void)
{
	char pool[32];
	struct json_object *report = reserve_run(NULL, pool, sizeof(pool));
	struct json_object *r;

	r = jresult(report, "thp_chase", "hugetlb_2m");
	CHECK_EQ_STR(jpstr(r, "reserve_hugetlb_result"), "ok");
	CHECK_EQ_INT(jpint(r, "reserve_hugetlb_requested"), 4);
	CHECK_EQ_INT(jpint(r, "reserve_hugetlb_pool_before"), 0);
	CHECK_EQ_INT(jpint(r, "reserve_hugetlb_pool_after"), 4);
	CHECK_EQ_STR(jpstr(r, "reserve_hugetlb_restored"), "ok");
	CHECK(jparam(r, "vmstat_missing") == NULL);
	/* the fixture's free count did not move: skipped with the numbers */
	CHECK_EQ_STR(jstr(r, "skip_reason"),
		     "2 MiB hugetlb pool has 0 free pages, needs 1");
	r = jresult(report, "thp_chase", "hugetlb_1g");
	CHECK_(strstr(jstr(r, "skip_reason"), "absent") != NULL, "1g: %s",
	       jstr(r, "skip_reason"));
	CHECK_EQ_STR(pool, "0");
	json_object_put(report);
}

/*
 * --reserve-hugetlb, and the benchmark's process dies (SIGKILL in its
 * first window) before its teardown: the agent writes the pool size back.
 */
static void test_reserve_crash(void)
{
	char pool[32];
	struct json_object *report =
		reserve_run("bench-thp_chase", pool, sizeof(pool));
	struct json_object *r = jresult(report, "thp_chase", "hugetlb_2m");

	CHECK_EQ_STR(jstatus(r), "failed");
	CHECK_(!strncmp(jstr(r, "failure"),
			"benchmark process died: SIGKILL in thp_chase/", 45),
	       "hugetlb_2m: %s", jstr(r, "failure"));
	CHECK_EQ_INT(jfailed(report), 4);
	CHECK_EQ_STR(pool, "0");
	json_object_put(report);
}

/* A tiny real run on this host. */
static void test_tiny_run(void)
{
	struct json_object *report = NULL, *r4, *rt, *c;
	struct bench_params p;
	double ratio, lo, hi;
	char err[512] = "";

	base_params(&p);
	p.chase_bytes = 8ULL << 20;
	p.chase_accesses = 200000;
	p.fault_bytes = 8ULL << 20;
	p.repeats = 2;
	CHECK_OK(jbench_run(&p, "thp_chase,thp_fault", &report, err,
				 sizeof(err)));
	if (!report) {
		fprintf(stderr, "bench_suite_run: %s\n", err);
		return;
	}
	r4 = jresult(report, "thp_chase", "4k");
	rt = jresult(report, "thp_chase", "thp");
	CHECK_EQ_STR(jstatus(r4), "ok");
	check_samples(r4, "ns_per_access", 2, 1e-3, 1e6);
	check_samples(r4, "huge_fraction", 2, 0, 0); /* MADV_NOHUGEPAGE */
	check_samples(r4, "compact_stall", 2, 0, 1e12);
	CHECK_EQ_INT(jpint(r4, "slots"), (8 << 20) / 64);
	CHECK_EQ_INT(jpint(r4, "accesses"), 200000);
	CHECK_EQ_INT(jpint(r4, "seed"), 42);
	CHECK_EQ_INT(jlen(r4, "windows"), 2);
	if (!strcmp(jstatus(rt), "ok")) {
		check_samples(rt, "ns_per_access", 2, 1e-3, 1e6);
		check_samples(rt, "huge_fraction", 2, 0, 1);
		check_samples(rt, "thp_fault_alloc", 2, 0, 1e12);
		c = jcomparison(report, "thp_speedup");
		CHECK(jdouble(c, "ratio", &ratio) && jdouble(c, "ci_low", &lo) &&
		      jdouble(c, "ci_high", &hi));
		CHECK_(lo <= ratio && ratio <= hi, "thp_speedup %g [%g, %g]",
		       ratio, lo, hi);
		CHECK_EQ_STR(jstr(c, "numerator"), "4k");
		CHECK_EQ_STR(jstr(c, "denominator"), "thp");
	} else {
		printf("thp variant skipped here: %s\n",
		       jstr(rt, "skip_reason"));
	}
	/* hugetlb: measured or skipped with a reason, never silent */
	for (int i = 0; i < 2; i++) {
		struct json_object *h = jresult(
			report, "thp_chase", i ? "hugetlb_1g" : "hugetlb_2m");

		CHECK(h != NULL);
		if (!strcmp(jstatus(h), "skipped"))
			CHECK(strlen(jstr(h, "skip_reason")) > 0);
		else
			check_samples(h, "ns_per_access", 2, 1e-3, 1e6);
	}

	for (int i = 0; i < 2; i++) {
		struct json_object *f = jresult(report, "thp_fault",
						i ? "thp" : "nohuge");
		double m50, m99, mmax;

		if (!strcmp(jstatus(f), "skipped")) {
			CHECK(i == 1 && strlen(jstr(f, "skip_reason")) > 0);
			continue;
		}
		check_samples(f, "fault_p50_us", 2, 0, 1e7);
		check_samples(f, "fault_max_us", 2, 0, 1e7);
		check_samples(f, "total_ms", 2, 1e-6, 1e7);
		check_samples(f, "huge_fraction", 2, 0, i ? 1 : 0);
		m50 = jmedian(jmetric(f, "fault_p50_us"));
		m99 = jmedian(jmetric(f, "fault_p99_us"));
		mmax = jmedian(jmetric(f, "fault_max_us"));
		CHECK(m50 <= m99 && m99 <= mmax);
		CHECK_EQ_INT(jpint(f, "touches"), (8 << 20) / 4096);
	}
	c = jcomparison(report, "thp_fault_total_speedup");
	CHECK(c != NULL);
	json_object_put(report);
}

int main(void)
{
	test_cycle();
	test_smaps();
	test_refusal();
	test_reserve();
	test_reserve_crash();
	test_tiny_run();
	return check_summary();
}
