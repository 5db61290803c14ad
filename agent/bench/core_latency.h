/* SPDX-License-Identifier: MIT */
/* core_latency: the helpers of core_latency.c that tests call. */
#ifndef FLEETBENCH_CORE_LATENCY_H
#define FLEETBENCH_CORE_LATENCY_H

#include <stddef.h>

/* Pairs measured at most: one variant each, in a report that holds at most
 * CODEC_MAX_BENCHMARKS (256) variants in all. */
#define CORE_LATENCY_MAX_PAIRS 64

struct core_latency_pair {
	int a, b; /* vCPU numbers, a < b */
};

/*
 * The pairs to measure among the n usable vCPUs cpus[] (ascending), of
 * which core[i] names cpus[i]'s core (the first vCPU of its
 * thread_siblings_list; -1 when unknown), at most max of them, in *ret
 * (room for max), sorted by a, then b. Returns their count.
 *
 * Every pair (i < j) when there are no more than max of them. Else, on a
 * large host: the SMT sibling pairs (the first two usable vCPUs of each
 * core but the first vCPU's), at most max / 4, spread evenly over the
 * cores; and the first vCPU with each other one, as many as the rest of
 * max allows, spread evenly from the second vCPU to the last.
 */
size_t core_latency_plan(const int *cpus, const int *core, size_t n,
			 size_t max, struct core_latency_pair *ret);

#endif
