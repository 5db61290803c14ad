/* SPDX-License-Identifier: MIT */
/*
 * The pure part of thp_chase (thp_chase.c), exposed for tests: the Sattolo
 * cycle of the pointer chase. (The /proc/self/smaps parser that says how
 * much of a buffer is backed by huge pages is kfiles.h's.)
 */
#ifndef FLEETBENCH_THP_CHASE_H
#define FLEETBENCH_THP_CHASE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Fills next[0..n) with one random cycle through all n slots (next[i] is
 * the slot after i) by Sattolo's algorithm, drawing j = rng_below(i) for
 * i = n-1 down to 1 from common/rand.h's xoshiro256** seeded with seed, so
 * the same seed gives the same cycle. The draws are made a few iterations
 * ahead so the swap targets can be prefetched; the result is exactly that of
 * the plain loop. Returns 0, or -EINVAL for n == 0 or n > 2^32.
 */
int thp_cycle_build(uint32_t *next, size_t n, uint64_t seed);

#endif
