/* SPDX-License-Identifier: MIT */
/* The dTLB counters around a benchmark's measured variants (pmu_bench.h). */
#include "pmu_bench.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sys/sys.h"

static const struct pmu_event *test_events;
static size_t n_test_events;

void bench_pmu_test_events(const struct pmu_event *ev, size_t n)
{
	test_events = ev;
	n_test_events = n < 2 ? n : 2;
}

void bench_pmu_open(struct bench_pmu *bp, struct bench_result *const *res,
		    size_t n_res)
{
	char why[160], walk[200];
	size_t n = 0;
	int r;

	bp->ev[n++] = pmu_dtlb_load_misses;
	if (pmu_walk_cycles_event(sys_cpuid, &bp->ev[n], why, sizeof(why)) == 0)
		n++;
	if (test_events && n_test_events) {
		n = n_test_events;
		memcpy(bp->ev, test_events, n * sizeof(bp->ev[0]));
		snprintf(why, sizeof(why), "no second test event");
	}
	r = pmu_open(&bp->g, bp->ev, n);
	bp->counting = r == 0;
	if (r == 0 && n == 2 && bp->g.err[1])
		snprintf(walk, sizeof(walk), "%s: %s", bp->ev[1].name,
			 pmu_errname(bp->g.err[1]));
	else
		snprintf(walk, sizeof(walk), "%s", n == 2 ? bp->ev[1].name : why);
	for (size_t i = 0; i < n_res; i++) {
		if (!res[i])
			continue;
		bench_param_str(res[i], "pmu", pmu_errname(r));
		if (r == 0)
			bench_param_str(res[i], "pmu_walk_cycles", walk);
	}
}

int bench_pmu_start(struct bench_pmu *bp)
{
	return bp->counting ? pmu_start(&bp->g) : -EBADF;
}

void bench_pmu_stop(struct bench_pmu *bp, int *started, struct pmu_counts *c)
{
	if (*started == 0)
		*started = pmu_stop(&bp->g, c);
}

void bench_pmu_sample(const struct bench_pmu *bp, int started,
		      const struct pmu_counts *c, struct bench_result *res,
		      struct bench_pmu_repeats *rep, uint64_t accesses)
{
	double miss, walk;

	if (started != 0) {
		if (bp->counting)
			bench_param_str(res, "pmu_read", pmu_errname(started));
		return;
	}
	miss = pmu_per_access(c, 0, accesses);
	walk = pmu_per_access(c, 1, accesses);
	if (c->multiplexed)
		bench_param_i64(res, "pmu_multiplexed_repeats",
				++rep->multiplexed);
	if (!c->time_running)
		bench_param_i64(res, "pmu_not_counted_repeats",
				++rep->not_counted);
	if (!isnan(miss))
		bench_sample(res, "dtlb_misses_per_access", "misses/access",
			     miss);
	if (!isnan(walk))
		bench_sample(res, "walk_cycles_per_access", "cycles/access",
			     walk);
}

void bench_pmu_close(struct bench_pmu *bp)
{
	pmu_close(&bp->g);
	bp->counting = false;
}
