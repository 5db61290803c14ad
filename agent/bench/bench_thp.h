/* SPDX-License-Identifier: MIT */
/*
 * The pure parts of the THP benchmarks (bench_thp.c), exposed for tests:
 * the Sattolo cycle of the pointer chase and the /proc/self/smaps parser
 * that says how much of a buffer is backed by huge pages.
 */
#ifndef FLEETBENCH_BENCH_THP_H
#define FLEETBENCH_BENCH_THP_H

#include <stdbool.h>
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

/* One VMA of /proc/PID/smaps, sizes in kB as the kernel prints them. */
struct thp_smaps_vma {
	uintptr_t start, end; /* [start, end) */
	uint64_t rss_kb;
	uint64_t kernel_page_kb; /* KernelPageSize: 4, or 2048 for hugetlb */
	uint64_t anon_huge_kb; /* AnonHugePages: THP-backed bytes */
	uint64_t private_hugetlb_kb, shared_hugetlb_kb;
	bool has_anon_huge; /* the kernel printed AnonHugePages */
};

/*
 * Finds the VMA containing addr in smaps text. Returns 0, -ENOENT when no
 * VMA contains addr, or -EBADMSG when the text up to that VMA's end is not
 * smaps (a header that is not "start-end perms ...", a field line without
 * "Key:", a size field that is not "N kB").
 */
int thp_smaps_find(const char *text, uintptr_t addr,
		   struct thp_smaps_vma *ret);

/*
 * Bytes of [start, end) backed by huge pages: for every VMA covering part of
 * the range, its AnonHugePages plus Private_Hugetlb and Shared_Hugetlb, each
 * VMA's count capped at its overlap with the range (a VMA merged with a
 * neighbour cannot be split by smaps). Returns 0, -ENOENT when part of the
 * range is not mapped, or -EBADMSG (see thp_smaps_find()).
 */
int thp_smaps_huge_bytes(const char *text, uintptr_t start, uintptr_t end,
			 uint64_t *ret);

#endif
