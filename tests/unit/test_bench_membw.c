/* SPDX-License-Identifier: MIT */
/* membw: the bytes each kernel counts, and the variants here and with THP off. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"
#include "bench_test.h"
#include "check.h"
#include "membw.h"
#include "probe_test.h"

#define REPEATS 2

static const char *const variants[] = { "4k_1t", "thp_1t", "4k_all",
					"thp_all" };
static const char *const metrics[] = { "copy_gbps", "scale_gbps",
				       "add_gbps",  "triad_gbps",
				       "read_gbps", "write_gbps" };

/* ---- the kernels on a tiny run ---- */

static void check_kernel_table(void)
{
	static const unsigned int arrays[] = { 2, 2, 3, 3, 1, 1 };

	for (int k = 0; k < MEMBW_NKERNELS; k++) {
		CHECK_EQ_STR(membw_kernel_metric(k), metrics[k]);
		CHECK_EQ_INT(membw_kernel_arrays(k), arrays[k]);
	}
	CHECK(membw_kernel_metric(MEMBW_NKERNELS) == NULL);
	CHECK_EQ_INT(membw_kernel_arrays(MEMBW_NKERNELS), 0);
	/* 1 GB is 1e9 bytes */
	CHECK(fabs(membw_gbps(3000000000ULL, 1.5) - 2.0) < 1e-12);
	CHECK(membw_gbps(100, 0) == 0);
}

/*
 * One iteration from a = 1, b = 2, c = 0 with s = 3: copy c = 1, scale
 * b = 3, add c = 4, triad a = 3 + 3 * 4 = 15, read sums a (15 n), write
 * c = 3. Every element of every slice, whatever the threads.
 */
static void check_job(size_t n, unsigned int threads)
{
	size_t len = 3 * n * sizeof(double);
	struct membw_job job = { 0 };
	double *mem;
	size_t bad = n;

	mem = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(mem != MAP_FAILED);
	if (mem == MAP_FAILED)
		return;
	/* garbage the first touch must overwrite */
	memset(mem, 0xff, len);
	job.a = mem;
	job.b = mem + n;
	job.c = mem + 2 * n;
	job.n = n;
	job.threads = threads;
	job.iterations = 1;
	CHECK_OK(membw_job_run(&job));
	CHECK_EQ_INT(job.done, 1);
	for (size_t i = 0; i < n && bad == n; i++)
		if (job.a[i] != 15.0 || job.b[i] != 3.0 || job.c[i] != 3.0)
			bad = i;
	CHECK_(bad == n, "n %zu, %u threads: element %zu is %g %g %g", n,
	       threads, bad, bad < n ? job.a[bad] : 0,
	       bad < n ? job.b[bad] : 0, bad < n ? job.c[bad] : 0);
	CHECK_(job.read_sum == 15.0 * (double)n, "read_sum %g, want %g",
	       job.read_sum, 15.0 * (double)n);
	for (int k = 0; k < MEMBW_NKERNELS; k++) {
		CHECK_EQ_INT(job.bytes[k], (uint64_t)membw_kernel_arrays(k) *
						   n * sizeof(double));
		CHECK_(job.best_s[k] >= 0 && job.best_s[k] < 10,
		       "kernel %d: %g s", k, job.best_s[k]);
	}

	/* a second run of the same job: three iterations, best of three */
	job.iterations = 3;
	CHECK_OK(membw_job_run(&job));
	CHECK_EQ_INT(job.done, 3);
	CHECK(job.a[0] != 15.0); /* the values moved on: the kernels ran */
	munmap(mem, len);
}

static void check_job_invalid(void)
{
	double x[3];
	struct membw_job job = { .a = &x[0], .b = &x[1], .c = &x[2], .n = 1,
				 .threads = 1, .iterations = 1 };

	job.threads = 0;
	CHECK_EQ_INT(membw_job_run(&job), -EINVAL);
	job.threads = MEMBW_MAX_THREADS + 1;
	CHECK_EQ_INT(membw_job_run(&job), -EINVAL);
	job.threads = 1;
	job.iterations = 0;
	CHECK_EQ_INT(membw_job_run(&job), -EINVAL);
	job.iterations = 1;
	job.n = 0;
	CHECK_EQ_INT(membw_job_run(&job), -EINVAL);
}

/* ---- the benchmark ---- */

static void base_params(struct bench_params *p)
{
	memset(p, 0, sizeof(*p));
	CHECK_OK(bench_params_profile(p, "quick"));
	p->profile = "quick";
	p->dir = "/tmp";
	p->seed = 7;
	p->steal_threshold_pct = 5;
	p->repeats = REPEATS;
}

/* Every metric of an ok variant: REPEATS finite positive GB/s samples. */
static void check_ok_variant(struct json_object *res, const char *v)
{
	struct json_object *hf = jmetric(res, "huge_fraction");

	CHECK_(!strcmp(jstatus(res), "ok"), "%s: %s %s", v, jstatus(res),
	       jstr(res, "skip_reason"));
	for (size_t i = 0; i < sizeof(metrics) / sizeof(metrics[0]); i++) {
		struct json_object *m = jmetric(res, metrics[i]);
		struct json_object *s = jget(m, "samples");

		CHECK_(m != NULL, "%s: no %s", v, metrics[i]);
		if (!m)
			continue;
		CHECK_EQ_STR(jstr(m, "unit"), "GB/s");
		CHECK_EQ_INT(jlen(m, "samples"), REPEATS);
		for (size_t k = 0; s && k < json_object_array_length(s); k++) {
			double x = json_object_get_double(
				json_object_array_get_idx(s, k));

			CHECK_(isfinite(x) && x > 0, "%s %s sample %zu: %g", v,
			       metrics[i], k, x);
		}
	}
	/* the arrays' own coverage, from smaps */
	CHECK_(hf != NULL, "%s: no huge_fraction (%s)", v,
	       jpstr(res, "huge_fraction_unavailable"));
	CHECK_EQ_INT(jlen(res, "windows"), REPEATS);
	CHECK_EQ_STR(jpstr(res, "bw_bytes_is"), "one array (of 3)");
	CHECK_EQ_INT(jpint(res, "total_bytes"), 3 * jpint(res, "bw_bytes"));
	/* the size is the method's on every host; the figure says how far
	 * it passes the LLC, and when it may be partly the cache's */
	if (jpint(res, "llc_bytes") > 0) {
		char want[32];

		snprintf(want, sizeof(want), "%.2f",
			 3.0 * (double)jpint(res, "bw_bytes") /
				 (double)jpint(res, "llc_bytes"));
		CHECK_EQ_STR(jpstr(res, "llc_factor"), want);
		CHECK_EQ_INT(jparam(res, "from_cache") != NULL,
			     3 * jpint(res, "bw_bytes") <
				     4 * jpint(res, "llc_bytes"));
	}
}

/* This machine, as it is: LLC from sysfs, THP as configured. */
static void test_here(void)
{
	struct json_object *report = NULL, *res;
	struct bench_params p;
	char err[512] = "", thp[32] = "";
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	int r;

	base_params(&p);
	p.bw_bytes = 1 << 20; /* rounded up to a 2 MiB page, no more */
	r = jbench_run(&p, "membw", &report, err, sizeof(err));
	CHECK_(r == 0, "bench_suite_run: %d (%s)", r, err);
	if (r < 0)
		return;
	/*
	 * The mode the benchmark read: other programs on this machine may
	 * switch it (the database benchmark does), so it is not read again.
	 */
	snprintf(thp, sizeof(thp), "%s",
		 jpstr(jresult(report, "membw", "4k_1t"), "thp_enabled"));
	CHECK_(!strcmp(thp, "always") || !strcmp(thp, "madvise") ||
		       !strcmp(thp, "never"),
	       "thp_enabled %s", thp);
	CHECK_EQ_INT(jlen(report, "benchmarks"), 4);
	for (size_t i = 0; i < 4; i++) {
		bool is_thp = !strncmp(variants[i], "thp", 3);

		res = jresult(report, "membw", variants[i]);
		CHECK_(res != NULL, "no %s", variants[i]);
		if (!res)
			continue;
		CHECK_EQ_INT(jpint(res, "threads"),
			     strstr(variants[i], "_all") ? online : 1);
		CHECK_EQ_INT(jpint(res, "bw_bytes_requested"), 1 << 20);
		CHECK_EQ_INT(jpint(res, "bw_bytes"), 2 << 20);
		CHECK(jpint(res, "llc_bytes") > 0);
		CHECK_EQ_STR(jpstr(res, "thp_enabled"), thp);
		if (is_thp && !strcmp(thp, "never")) {
			CHECK_EQ_STR(jstatus(res), "skipped");
			CHECK_EQ_STR(jstr(res, "skip_reason"),
				     "THP enabled=never");
			continue;
		}
		check_ok_variant(res, variants[i]);
		if (is_thp) {
			CHECK_EQ_STR(jpstr(res, "page_mode"),
				     "THP (MADV_HUGEPAGE)");
		} else {
			/* MADV_NOHUGEPAGE: not one huge page */
			struct json_object *hf = jmetric(res, "huge_fraction");

			CHECK_EQ_STR(jpstr(res, "page_mode"),
				     "4 KiB pages (MADV_NOHUGEPAGE)");
			CHECK(hf && jmedian(hf) == 0);
		}
	}
	if (strcmp(thp, "never")) {
		struct json_object *c = jcomparison(report, "membw_thp_gain");
		double ratio = NAN;

		CHECK(c && jdouble(c, "ratio", &ratio) && ratio > 0);
		CHECK_EQ_STR(jstr(c, "numerator"), "thp_all");
		CHECK_EQ_STR(jstr(c, "denominator"), "4k_all");
		CHECK_EQ_STR(jstr(c, "metric"), "triad_gbps");
	}
	res = jcomparison(report, "membw_thread_scaling");
	CHECK(res && jis(res, "ratio", json_type_double));
	CHECK_EQ_STR(jstr(res, "numerator"), "4k_all");
	CHECK_EQ_STR(jstr(res, "denominator"), "4k_1t");
	CHECK_EQ_INT(jfailed(report), 0);
	json_object_put(report);
}

/*
 * A fixture root: THP never, a 512 KiB L3 shared by cpu0 alone (so the
 * host's LLC is 512 KiB per online CPU), plenty of memory.
 */
static void test_thp_never(void)
{
	static const char *const files[][2] = {
		{ "proc/meminfo", "MemTotal: 67108864 kB\nMemFree: 60000000 kB\n"
				  "MemAvailable: 60000000 kB\n" },
		{ "proc/stat", "cpu  100 0 100 1000 0 0 0 0 0 0\n" },
		{ "proc/loadavg", "0.10 0.20 0.30 1/100 1234\n" },
		{ "sys/kernel/mm/transparent_hugepage/enabled",
		  "always madvise [never]\n" },
		{ "sys/kernel/mm/transparent_hugepage/defrag",
		  "always defer defer+madvise [madvise] never\n" },
		{ "sys/devices/system/cpu/cpu0/cache/index0/level", "1\n" },
		{ "sys/devices/system/cpu/cpu0/cache/index0/type", "Data\n" },
		{ "sys/devices/system/cpu/cpu0/cache/index0/size", "32K\n" },
		{ "sys/devices/system/cpu/cpu0/cache/index1/level", "1\n" },
		{ "sys/devices/system/cpu/cpu0/cache/index1/type",
		  "Instruction\n" },
		{ "sys/devices/system/cpu/cpu0/cache/index1/size", "32K\n" },
		{ "sys/devices/system/cpu/cpu0/cache/index2/level", "3\n" },
		{ "sys/devices/system/cpu/cpu0/cache/index2/type", "Unified\n" },
		{ "sys/devices/system/cpu/cpu0/cache/index2/size", "512K\n" },
		{ "sys/devices/system/cpu/cpu0/cache/index2/shared_cpu_list",
		  "0\n" },
	};
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	struct json_object *report = NULL, *res, *c;
	struct bench_params p;
	char err[512] = "", *root = tree_new();
	int r;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		tree_put(root, files[i][0], files[i][1], -1);
	base_params(&p);
	p.root = root;
	p.bw_bytes = 2 << 20;
	r = jbench_run(&p, "membw", &report, err, sizeof(err));
	CHECK_(r == 0, "bench_suite_run: %d (%s)", r, err);
	for (size_t i = 0; report && i < 4; i++) {
		res = jresult(report, "membw", variants[i]);
		CHECK_(res != NULL, "no %s", variants[i]);
		if (!res)
			continue;
		CHECK_EQ_INT(jpint(res, "llc_bytes"), (512 << 10) * online);
		CHECK(strstr(jpstr(res, "llc_source"), "index2 (L3)") != NULL);
		CHECK_EQ_STR(jpstr(res, "thp_enabled"), "never");
		if (!strncmp(variants[i], "thp", 3)) {
			CHECK_EQ_STR(jstatus(res), "skipped");
			CHECK_EQ_STR(jstr(res, "skip_reason"),
				     "THP enabled=never");
			CHECK_EQ_INT(jlen(res, "metrics"), 0);
			continue;
		}
		/* never raised, whatever the LLC: 3 x 2 MiB passes 4 x
		 * 512 KiB x online up to 2 vCPUs, beyond that says so */
		CHECK_EQ_INT(jpint(res, "bw_bytes"), 2 << 20);
		CHECK(jparam(res, "bw_bytes_requested") == NULL);
		CHECK_EQ_INT(jparam(res, "from_cache") != NULL, online > 2);
		check_ok_variant(res, variants[i]);
	}
	c = jcomparison(report, "membw_thp_gain");
	CHECK(c && !jget(c, "ratio"));
	CHECK(c && strstr(jstr(c, "reason"), "skipped") != NULL);
	c = jcomparison(report, "membw_thread_scaling");
	CHECK(c && jis(c, "ratio", json_type_double));
	json_object_put(report);
	tree_free(root);
}

/* bw_bytes is in the method, optional on the wire, and keys a difference */
static void test_method(void)
{
	struct bench_params p;
	Fleetbench__Method *m = NULL;

	base_params(&p);
	p.repeats = 3; /* the profile's own */
	CHECK_OK(bench_method_new(&p, NULL, &m));
	CHECK(m && m->has_bw_bytes && m->bw_bytes == 44ULL << 20);
	CHECK_EQ_STR(m ? m->key : "", "quick");
	fleetbench__method__free_unpacked(m, NULL);
	p.bw_bytes = 1ULL << 30;
	CHECK_OK(bench_method_new(&p, "membw", &m));
	CHECK_EQ_STR(m ? m->key : "", "quick+bw_bytes=1G+only=membw");
	fleetbench__method__free_unpacked(m, NULL);
}

int main(void)
{
	check_kernel_table();
	check_job_invalid();
	check_job(1024, 1);
	check_job(4096, 2);
	check_job(3000, 3); /* slices of uneven, page-aligned lengths */
	check_job(5, 4); /* fewer elements than a page: empty slices */
	test_method();
	test_thp_never();
	test_here();
	return check_summary();
}
