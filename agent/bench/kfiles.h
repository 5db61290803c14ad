/* SPDX-License-Identifier: MIT */
/*
 * The kernel files the benchmarks read, in one place: THP's sysfs mode,
 * /proc/vmstat counters sampled as deltas, /proc/self/smaps (how much of a
 * buffer huge pages back) and the 2 MiB hugetlb pool (its free pages, a
 * reservation and its restore); with the 2 MiB-aligned mapping both THP
 * benchmarks fault in. Files are read below the run's root (bench_root()),
 * except /proc/self/smaps, which is this process's own.
 *
 * The smaps parser is pure and tested on its own (tests/unit/test_bench_thp.c).
 */
#ifndef FLEETBENCH_KFILES_H
#define FLEETBENCH_KFILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench.h"

#define KFILE_PMD_BYTES (2ULL << 20)
#define KFILE_THP_DIR "/sys/kernel/mm/transparent_hugepage"
#define KFILE_HUGETLB_DIR "/sys/kernel/mm/hugepages"

/* The errno name of err (either sign): "ENOENT"; "error" without one. */
const char *kfile_errname(int err);

/* v rounded up to a multiple of a. */
static inline uint64_t kfile_round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/*
 * len bytes of anonymous memory (no page touched) starting on a 2 MiB
 * boundary, so that every 2 MiB of it can be one huge page: over-mapped by
 * 2 MiB and trimmed. munmap(*ret, len) frees it. 0 or -errno.
 */
int kfile_map_aligned(size_t len, char **ret);

/* The integer in the kernel file path. 0 or -errno (-EINVAL, -ERANGE for
 * text that is not one). */
int kfile_read_i64(struct bench_run *run, const char *path, int64_t *ret);

/* ---- THP mode ---- */

/* The THP mode the host runs with: the [selected] value of THP's enabled
 * and defrag files, or why there is none ("absent", "malformed"). */
struct thp_mode {
	char enabled[32], defrag[32];
};

void thp_mode_read(struct bench_run *run, struct thp_mode *m);

/*
 * The [selected] value of THP's shmem_enabled (whether shmem and memfd
 * files may get huge pages: always, within_size, advise, never, deny,
 * force) into buf, or why there is none ("absent", "malformed").
 */
void thp_shmem_read(struct bench_run *run, char *buf, size_t size);

/* Sets the parameters thp_enabled and thp_defrag of res. */
void thp_mode_param(struct bench_result *res, const struct thp_mode *m);

/* ---- /proc/vmstat ---- */

/* The system-wide counters sampled as deltas. */
enum {
	VM_THP_FAULT_ALLOC,
	VM_THP_FAULT_FALLBACK,
	VM_THP_SPLIT_PAGE,
	VM_COMPACT_STALL,
	VM_N,
};

struct vmstat {
	int64_t v[VM_N];
	bool ok[VM_N];
};

/* Reads the counters; absent ones (a kernel without THP) are marked, not
 * an error. */
void vmstat_read(struct bench_run *run, struct vmstat *ret);

/* One sample per counter of res: b - a, named as in /proc/vmstat. */
void vmstat_sample(struct bench_result *res, const struct vmstat *a,
		   const struct vmstat *b);

/*
 * Names the counters this kernel does not have (no THP, an old kernel) as
 * the parameter vmstat_missing, so an absent metric is explained.
 */
void vmstat_param_missing(struct bench_result *res, const struct vmstat *vs);

/* The counters a variant's first touch moved, as parameters fill_<name>. */
void vmstat_param(struct bench_result *res, const struct vmstat *a,
		  const struct vmstat *b);

/* ---- /proc/self/smaps ---- */

/* One VMA of /proc/PID/smaps, sizes in kB as the kernel prints them. */
struct thp_smaps_vma {
	uintptr_t start, end; /* [start, end) */
	uint64_t rss_kb;
	uint64_t kernel_page_kb; /* KernelPageSize: 4, or 2048 for hugetlb */
	uint64_t anon_huge_kb; /* AnonHugePages: THP-backed bytes */
	uint64_t shmem_pmd_kb; /* ShmemPmdMapped: shmem THP mapped by PMD */
	uint64_t file_pmd_kb; /* FilePmdMapped: file THP mapped by PMD */
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
 * the range, its AnonHugePages, ShmemPmdMapped, FilePmdMapped,
 * Private_Hugetlb and Shared_Hugetlb (a VMA has only the kinds its memory
 * is, so the sum is that kind's), each
 * VMA's count capped at its overlap with the range (a VMA merged with a
 * neighbour cannot be split by smaps). Returns 0, -ENOENT when part of the
 * range is not mapped, or -EBADMSG (see thp_smaps_find()).
 */
int thp_smaps_huge_bytes(const char *text, uintptr_t start, uintptr_t end,
			 uint64_t *ret);

/*
 * Samples huge_fraction: the bytes of [buf, buf + len) that this process's
 * own smaps shows backed by huge pages (AnonHugePages for anonymous THP,
 * ShmemPmdMapped / FilePmdMapped for a file's, Private_Hugetlb +
 * Shared_Hugetlb for hugetlb), over len. When smaps
 * cannot tell, the reason is the parameter huge_fraction_unavailable.
 */
void smaps_sample_huge_fraction(struct bench_result *res, const char *buf,
				size_t len);

/* ---- hugetlb pools ---- */

/*
 * Skips res unless the hugetlb pool in directory pool (pages of page
 * bytes, label "2 MiB") has the free pages bytes need, not counting those
 * reserved by other mappings; its free, reserved and needed pages are
 * parameters of res.
 */
void hugetlb_pool_check(struct bench_run *run, struct bench_result *res,
			const char *pool, uint64_t page, const char *label,
			uint64_t bytes);

/*
 * --reserve-hugetlb N (root, checked by main): grows the 2 MiB pool so N
 * pages are free (it never shrinks a pool), arming the driver to restore
 * the old size should this process die (bench_restore_arm). What was asked
 * and granted are parameters of res. Returns the old pool size, which
 * hugetlb_restore_2m() writes back, or -1 when the pool was not changed.
 */
int64_t hugetlb_reserve_2m(struct bench_run *run, int64_t want,
			   struct bench_result *res);

/* Writes the 2 MiB pool size nr back (the result as the parameter
 * reserve_hugetlb_restored of res, when res is not NULL). */
void hugetlb_restore_2m(struct bench_run *run, int64_t nr,
			struct bench_result *res);

#endif
