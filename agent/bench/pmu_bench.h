/* SPDX-License-Identifier: MIT */
/*
 * The dTLB counters of a benchmark that walks memory (thp_chase,
 * mmap_read), around each measured variant, and what its results say of
 * them: each variant the parameter `pmu` ("ok" or the errno, e.g. ENOENT
 * in a guest without a PMU) and, where they count, the samples
 * dtlb_misses_per_access and walk_cycles_per_access per repeat.
 *
 *     bench_pmu_open(&bp, results, n);        // in setup, on the
 *                                             // measuring thread
 *     int on = bench_pmu_start(&bp);          // around one variant
 *     ... the measured loop ...
 *     bench_pmu_stop(&bp, &on, &c);
 *     ... window end ...
 *     bench_pmu_sample(&bp, on, &c, res, &counts, accesses);
 *     bench_pmu_close(&bp);                   // teardown
 */
#ifndef FLEETBENCH_PMU_BENCH_H
#define FLEETBENCH_PMU_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench.h"
#include "pmu.h"

struct bench_pmu {
	/* dTLB load misses and, where the CPU names one, page-walk cycles */
	struct pmu_event ev[2];
	struct pmu_group g;
	bool counting; /* the group opened */
};

/* Per variant: the repeats whose counts were scaled, or never counted. */
struct bench_pmu_repeats {
	int64_t multiplexed;
	int64_t not_counted;
};

/* Opens the counters for the calling thread and sets `pmu` (and
 * `pmu_walk_cycles`: the walk event or why none) on each of res[0..n). */
void bench_pmu_open(struct bench_pmu *bp, struct bench_result *const *res,
		    size_t n);

/* Starts the counters: 0, or -errno (-EBADF when they did not open). */
int bench_pmu_start(struct bench_pmu *bp);

/* Stops them after bench_pmu_start() returned *started: *started becomes
 * pmu_stop()'s result when it was 0. */
void bench_pmu_stop(struct bench_pmu *bp, int *started, struct pmu_counts *c);

/*
 * The samples of one measured variant from c, per access, when started
 * (bench_pmu_stop()'s) is 0; a failed read is the parameter `pmu_read`. A
 * repeat in which the group was multiplexed or never ran is counted in a
 * parameter, and one that never ran gives no sample.
 */
void bench_pmu_sample(const struct bench_pmu *bp, int started,
		      const struct pmu_counts *c, struct bench_result *res,
		      struct bench_pmu_repeats *rep, uint64_t accesses);

void bench_pmu_close(struct bench_pmu *bp);

/*
 * For tests on a host without hardware counters: bench_pmu_open() counts
 * ev[0] as dtlb_misses_per_access and ev[1] (when n is 2) as
 * walk_cycles_per_access instead of the dTLB and page-walk events, e.g.
 * software events that always open. NULL restores the real events. Set
 * before the suite runs (the benchmark's child inherits it).
 */
void bench_pmu_test_events(const struct pmu_event *ev, size_t n);

#endif
