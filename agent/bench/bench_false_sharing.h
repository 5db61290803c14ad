/* SPDX-License-Identifier: MIT */
/* false_sharing: the helpers of bench_false_sharing.c that tests call. */
#ifndef FLEETBENCH_BENCH_FALSE_SHARING_H
#define FLEETBENCH_BENCH_FALSE_SHARING_H

#include <stddef.h>
#include <stdint.h>

/*
 * Checks that each of the n uint64_t counters found `stride` bytes apart
 * from `counters` holds `expected`, i.e. that every increment of every
 * thread reached memory. Returns 0, or -EIO with the index of the first
 * wrong counter in *ret_bad (when ret_bad is not NULL); -EINVAL for a
 * stride that is not a multiple of 8 bytes.
 */
int false_sharing_verify(const void *counters, size_t stride, size_t n,
			 uint64_t expected, size_t *ret_bad);

#endif
