/* SPDX-License-Identifier: MIT */
/* thp_fault: first-touch fault latency with and without MADV_HUGEPAGE */
#include "bench_modules.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "clock.h"
#include "kfiles.h"
#include "stats.h"
#include "sys/sys.h"

#define PAGE_BYTES 4096ULL
#define TOUCH_CHUNK 65536 /* first touches between bench_interrupted() */
#define CLOCK_PAIRS 10001 /* back-to-back clock reads for the overhead */

/* ---- thp_fault ---- */

struct fault_variant {
	const char *name;
	bool huge;
	struct bench_result *res;
};

struct fault_state {
	struct fault_variant v[2];
	uint64_t len; /* region, a multiple of 2 MiB */
	size_t touches;
	double *lat; /* ns of each touch of one repeat, prefaulted */
	size_t lat_len;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median cost of reading the clock twice back to back, in ns. */
static double clock_overhead_ns(void)
{
	double d[CLOCK_PAIRS];

	for (size_t i = 0; i < CLOCK_PAIRS; i++) {
		int64_t t0 = mono_ns();

		d[i] = (double)(mono_ns() - t0);
	}
	qsort(d, CLOCK_PAIRS, sizeof(d[0]), cmp_double);
	return d[CLOCK_PAIRS / 2];
}

static int fault_setup(struct bench_run *run, const struct bench_params *p,
		       void **state)
{
	struct fault_state *st = calloc(1, sizeof(*st));
	static const char *const names[] = { "nohuge", "thp" };
	struct thp_mode mode;
	struct vmstat vs;
	double clock_ns;
	char why[512], *probe;
	void *lat;
	int r;

	if (!st)
		return -ENOMEM;
	*state = st;
	st->len = kfile_round_up(p->fault_bytes, KFILE_PMD_BYTES);
	st->touches = st->len / PAGE_BYTES;
	st->lat_len = kfile_round_up(st->touches * sizeof(double), PAGE_BYTES);
	thp_mode_read(run, &mode);
	vmstat_read(run, &vs);
	clock_ns = clock_overhead_ns();
	for (size_t i = 0; i < 2; i++) {
		struct fault_variant *v = &st->v[i];

		v->name = names[i];
		v->huge = i == 1;
		v->res = bench_result_new(run, "thp_fault", v->name);
		if (!v->res)
			return -ENOMEM;
		bench_param_str(v->res, "page_mode",
				v->huge ? "THP (MADV_HUGEPAGE)" :
					  "4 KiB pages (MADV_NOHUGEPAGE)");
		bench_param_i64(v->res, "fault_bytes", (int64_t)p->fault_bytes);
		bench_param_i64(v->res, "region_bytes", (int64_t)st->len);
		bench_param_i64(v->res, "touches", (int64_t)st->touches);
		bench_param_i64(v->res, "touch_stride", PAGE_BYTES);
		bench_param_str(v->res, "clock",
				"CLOCK_MONOTONIC read before and after each touch");
		bench_param_i64(v->res, "clock_overhead_ns",
				(int64_t)(clock_ns + 0.5));
		vmstat_param_missing(v->res, &vs);
		thp_mode_param(v->res, &mode);
	}
	if (!st->touches) {
		bench_result_skip(st->v[0].res, "fault_bytes is 0");
		bench_result_skip(st->v[1].res, "fault_bytes is 0");
		return 0;
	}
	if (bench_check_memory(run, st->len + st->lat_len, why, sizeof(why)) <
	    0) {
		bench_result_skip(st->v[0].res, "%s", why);
		bench_result_skip(st->v[1].res, "%s", why);
		return 0;
	}

	/* Can this kernel do THP at all? Asked on a region never touched. */
	r = kfile_map_aligned(KFILE_PMD_BYTES, &probe);
	if (r < 0)
		return r;
	r = sys_madvise_thp(probe, KFILE_PMD_BYTES, true);
	munmap(probe, KFILE_PMD_BYTES);
	if (r < 0)
		bench_result_skip(st->v[1].res, "madvise(MADV_HUGEPAGE): %s%s",
				  kfile_errname(r),
				  r == -EINVAL ? " (no THP in this kernel)" : "");

	/* prefaulted, so recording a latency never faults */
	r = sys_mmap_anon(st->lat_len, 0, &lat);
	if (r < 0)
		return r;
	st->lat = lat;
	memset(st->lat, 0, st->lat_len);
	return 0;
}

static int fault_measure(struct bench_run *run, struct fault_state *st,
			 struct fault_variant *v)
{
	double *lat = st->lat, q50, q99, q999, max;
	size_t n = st->touches, done;
	struct vmstat a, b;
	int64_t t_start, t_end;
	char *buf;
	int r;

	r = kfile_map_aligned(st->len, &buf);
	if (r < 0)
		return r;
	r = sys_madvise_thp(buf, st->len, v->huge);
	if (r < 0 && (v->huge || r != -EINVAL)) {
		munmap(buf, st->len);
		return r;
	}

	bench_window_begin(v->res);
	vmstat_read(run, &a);
	t_start = mono_ns();
	for (done = 0; done < n; done++) {
		int64_t t0 = mono_ns();

		((volatile char *)buf)[done * PAGE_BYTES] = 1;
		lat[done] = (double)(mono_ns() - t0);
		if (done % TOUCH_CHUNK == TOUCH_CHUNK - 1 &&
		    bench_interrupted()) {
			done++;
			break;
		}
	}
	t_end = mono_ns();
	vmstat_read(run, &b);
	bench_window_end(v->res);
	smaps_sample_huge_fraction(v->res, buf, st->len);
	if (munmap(buf, st->len) < 0)
		return -errno;
	if (done < n || bench_interrupted())
		return -EINTR;

	qsort(lat, n, sizeof(lat[0]), cmp_double);
	q50 = stats_quantile_sorted(lat, n, 0.50);
	q99 = stats_quantile_sorted(lat, n, 0.99);
	q999 = stats_quantile_sorted(lat, n, 0.999);
	max = lat[n - 1];
	bench_sample(v->res, "fault_p50_us", "us", q50 / 1000);
	bench_sample(v->res, "fault_p99_us", "us", q99 / 1000);
	bench_sample(v->res, "fault_p999_us", "us", q999 / 1000);
	bench_sample(v->res, "fault_max_us", "us", max / 1000);
	bench_sample(v->res, "total_ms", "ms", (double)(t_end - t_start) / 1e6);
	vmstat_sample(v->res, &a, &b);
	return 0;
}

static int fault_run(struct bench_run *run, void *state, unsigned int repeat)
{
	struct fault_state *st = state;

	for (size_t k = 0; k < 2; k++) {
		struct fault_variant *v = &st->v[repeat & 1 ? 1 - k : k];
		int r;

		if (bench_result_skipped(v->res))
			continue;
		r = fault_measure(run, st, v);
		if (r < 0)
			return r;
	}
	return 0;
}

static void fault_compare(struct bench_run *run, void *state)
{
	struct fault_state *st = state;

	/* above 1: THP populates the region faster */
	bench_compare(run, "thp_fault_total_speedup", st->v[0].res,
		      st->v[1].res, "total_ms");
	/*
	 * above 1: THP's p99.9 touch is slower. The tail the tuning guides
	 * warn about: 1 touch in 512 faults a 2 MiB page, more than 1 in 1000,
	 * so p99.9 is a huge fault; the max of 4 KiB faults is mostly noise.
	 */
	bench_compare(run, "thp_fault_p999_ratio", st->v[1].res, st->v[0].res,
		      "fault_p999_us");
}

static void fault_teardown(struct bench_run *run, void *state)
{
	struct fault_state *st = state;

	(void)run;
	if (!st)
		return;
	if (st->lat)
		munmap(st->lat, st->lat_len);
	free(st);
}

/* the region, one variant at a time (fault_setup's need, less its
 * latency array) */
static void fault_needs(const struct bench_params *p, uint64_t *memory,
			uint64_t *disk)
{
	*memory = kfile_round_up(p->fault_bytes, KFILE_PMD_BYTES);
	*disk = 0;
}

const struct bench_ops bench_thp_fault_ops = {
	.name = "thp_fault",
	.summary = "first-touch fault latency with and without MADV_HUGEPAGE",
	.weight = { 8, 8, 20 },
	.needs = fault_needs,
	.setup = fault_setup,
	.run = fault_run,
	.teardown = fault_teardown,
	.compare = fault_compare,
};
