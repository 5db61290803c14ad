/* SPDX-License-Identifier: MIT */
/* mmap_read: random reads of a mapped memfd: 4 KiB pages, THP, hugetlb */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench_modules.h"
#include "cleanup.h"
#include "clock.h"
#include "kfiles.h"
#include "pmu_bench.h"
#include "rand.h"
#include "sys/sys.h"
#include "thp_chase.h"

#define PAGE_BYTES 4096ULL /* one access per page of the file */
#define WORDS_PER_PAGE (PAGE_BYTES / sizeof(uint64_t))
#define HUGETLB_PAGE (2ULL << 20)
#define POOL_2M KFILE_HUGETLB_DIR "/hugepages-2048kB"
#define MMAP_CHUNK (1ULL << 20) /* loads between bench_interrupted() */

/*
 * The file is a chain: each 4 KiB page holds, at one random 8-byte-aligned
 * offset, the file offset of the next page's word, the pages in one random
 * cycle (thp_cycle_build()). Reading it is a dependent chase, so its time
 * is the latency of a random page's load (TLB miss, page walk, and on the
 * first pass through a fresh mapping the page fault), not a throughput.
 * Offsets, not pointers: each repeat maps the file afresh, at another
 * address.
 */

enum mmap_mode {
	MODE_4K,
	MODE_THP,
	MODE_HUGETLB,
};

static const struct mmap_kind {
	const char *name;
	enum mmap_mode mode;
	const char *page_mode;
	const char *huge_from;
} mmap_kinds[] = {
	{ "4k", MODE_4K, "shmem memfd, 4 KiB pages (MADV_NOHUGEPAGE)",
	  "smaps ShmemPmdMapped+FilePmdMapped" },
	{ "thp", MODE_THP, "shmem memfd, THP (MADV_HUGEPAGE)",
	  "smaps ShmemPmdMapped+FilePmdMapped" },
	{ "hugetlb", MODE_HUGETLB, "hugetlb memfd, 2 MiB (MFD_HUGETLB)",
	  "smaps Private_Hugetlb+Shared_Hugetlb" },
};

#define MMAP_N ARRAY_SIZE(mmap_kinds)
#define V_HUGETLB 2

struct mmap_variant {
	const struct mmap_kind *kind;
	struct bench_result *res;
	int fd; /* the memfd, -1 when none */
	struct bench_pmu_repeats pmu;
};

struct mmap_state {
	struct mmap_variant v[MMAP_N];
	uint64_t len, pages, accesses;
	uint64_t start; /* file offset of the first page's word */
	/* --reserve-hugetlb: the 2 MiB pool size to restore, -1: untouched */
	int64_t pool_restore;
	struct bench_pmu pmu; /* dTLB counters, where the guest has a PMU */
};

/* Keeps the chase's final offset alive: the loop cannot be dropped. */
static volatile uint64_t mmap_sink;

/* n dependent loads from base: each word is the offset of the next. */
static __attribute__((noinline)) uint64_t mmap_chase(const char *base,
						     uint64_t off, uint64_t n)
{
	for (; n >= 4; n -= 4) {
		off = *(const uint64_t *)(base + off);
		off = *(const uint64_t *)(base + off);
		off = *(const uint64_t *)(base + off);
		off = *(const uint64_t *)(base + off);
	}
	while (n--)
		off = *(const uint64_t *)(base + off);
	return off;
}

static void mmap_skip_all(struct mmap_state *st, const char *why)
{
	for (size_t i = 0; i < MMAP_N; i++)
		if (!bench_result_skipped(st->v[i].res))
			bench_result_skip(st->v[i].res, "%s", why);
}

/*
 * Whether shmem_enabled lets a memfd have huge pages under MADV_HUGEPAGE:
 * NULL when it does, else the skip reason in why.
 */
static const char *mmap_shmem_refusal(const char *shmem, char *why, size_t size)
{
	static const char *const allow[] = { "always", "within_size",
					     "advise", "force" };

	for (size_t i = 0; i < ARRAY_SIZE(allow); i++)
		if (!strcmp(shmem, allow[i]))
			return NULL;
	if (!strcmp(shmem, "never") || !strcmp(shmem, "deny"))
		snprintf(why, size, "shmem_enabled=%s", shmem);
	else
		snprintf(why, size, "shmem_enabled: %s", shmem);
	return why;
}

/*
 * Maps v's file (st->len bytes) shared at a 2 MiB boundary, so every 2 MiB
 * of it can be one PMD, with its page-size advice given before any touch.
 * munmap(*ret, st->len) unmaps it. 0 or -errno.
 */
static int mmap_map(const struct mmap_state *st, const struct mmap_variant *v,
		    char **ret)
{
	char *base;
	void *p;
	int r;

	r = kfile_map_aligned(st->len, &base); /* the aligned address */
	if (r < 0)
		return r;
	p = mmap(base, st->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		 v->fd, 0);
	if (p == MAP_FAILED) {
		r = -errno;
		munmap(base, st->len);
		return r;
	}
	if (v->kind->mode != MODE_HUGETLB) {
		r = sys_madvise_thp(p, st->len, v->kind->mode == MODE_THP);
		/* without THP every page is 4 KiB anyway: only thp needs it */
		if (r < 0 && v->kind->mode == MODE_THP) {
			munmap(p, st->len);
			return r;
		}
	}
	*ret = p;
	return 0;
}

/*
 * Creates v's memfd and writes the chain into it through a mapping with
 * v's advice (a shmem huge page is allocated when a page is first written,
 * under the advice of the mapping it is written through). What the host
 * refuses skips the variant; -errno only for the agent's own failures.
 */
static int mmap_fill(struct mmap_state *st, struct mmap_variant *v,
		     const uint32_t *next, const uint16_t *word)
{
	bool hugetlb = v->kind->mode == MODE_HUGETLB;
	char name[32];
	int64_t t0, t1;
	char *buf;
	int r;

	snprintf(name, sizeof(name), "fb-mmap_read-%s", v->kind->name);
	r = sys_memfd(name, hugetlb ? HUGETLB_PAGE : 0);
	if (r < 0) {
		bench_result_skip(v->res, "memfd_create(%s): %s",
				  hugetlb ? "MFD_HUGETLB" : "0", kfile_errname(r));
		return 0;
	}
	v->fd = r;
	if (ftruncate(v->fd, (off_t)st->len) < 0) {
		bench_result_skip(v->res, "ftruncate of the memfd to %llu MiB: %s",
				  (unsigned long long)(st->len >> 20),
				  kfile_errname(errno));
		return 0;
	}
	r = mmap_map(st, v, &buf);
	if (r < 0) {
		bench_result_skip(v->res, "mmap of %llu MiB%s: %s",
				  (unsigned long long)(st->len >> 20),
				  v->kind->mode == MODE_THP ?
					  " with MADV_HUGEPAGE" :
					  "",
				  kfile_errname(r));
		return 0;
	}
	t0 = mono_ns();
	for (uint64_t i = 0; i < st->pages; i++)
		*(uint64_t *)(buf + i * PAGE_BYTES + word[i] * 8) =
			next[i] * PAGE_BYTES + word[next[i]] * 8;
	t1 = mono_ns();
	munmap(buf, st->len);
	bench_param_i64(v->res, "fill_us", (t1 - t0) / 1000);
	return bench_interrupted() ? -EINTR : 0;
}

static void mmap_params(struct bench_run *run, struct mmap_state *st,
			const struct bench_params *p, const char *shmem)
{
	struct thp_mode mode;

	thp_mode_read(run, &mode);
	for (size_t i = 0; i < MMAP_N; i++) {
		struct bench_result *res = st->v[i].res;

		bench_param_str(res, "page_mode", st->v[i].kind->page_mode);
		bench_param_i64(res, "mmap_bytes", (int64_t)p->mmap_bytes);
		bench_param_i64(res, "file_bytes", (int64_t)st->len);
		bench_param_i64(res, "pages", (int64_t)st->pages);
		bench_param_i64(res, "accesses", (int64_t)st->accesses);
		bench_param_i64(res, "seed", p->seed);
		bench_param_str(res, "access",
				"one 8-byte load per 4 KiB page at a random offset, the pages in one Sattolo cycle");
		bench_param_str(res, "mapping",
				"MAP_SHARED, 2 MiB-aligned, mapped afresh each repeat");
		bench_param_str(res, "shmem_enabled", shmem);
		bench_param_str(res, "huge_fraction_from",
				st->v[i].kind->huge_from);
		thp_mode_param(res, &mode);
	}
}

/* The cycle of pages and each page's word; both from the seed. */
static int mmap_chain(struct mmap_state *st, uint64_t seed, uint32_t **next,
		      uint16_t **word)
{
	struct rng r;

	*next = malloc(st->pages * sizeof(**next));
	*word = malloc(st->pages * sizeof(**word));
	if (!*next || !*word)
		return -ENOMEM;
	rng_seed(&r, seed ^ 0x6d6d6170ULL); /* "mmap": not the cycle's draws */
	for (uint64_t i = 0; i < st->pages; i++)
		(*word)[i] = (uint16_t)rng_below(&r, WORDS_PER_PAGE);
	st->start = (*word)[0] * 8;
	return thp_cycle_build(*next, st->pages, seed);
}

static int mmap_setup(struct bench_run *run, const struct bench_params *p,
		      void **state)
{
	struct mmap_state *st = calloc(1, sizeof(*st));
	_cleanup_free_ uint32_t *next = NULL;
	_cleanup_free_ uint16_t *word = NULL;
	struct bench_result *res[MMAP_N];
	char shmem[32], why[512];
	uint64_t need;
	int r;

	if (!st)
		return -ENOMEM;
	*state = st;
	st->pool_restore = -1;
	st->len = kfile_round_up(p->mmap_bytes, KFILE_PMD_BYTES);
	st->pages = st->len / PAGE_BYTES;
	st->accesses = p->mmap_accesses > 0 ? (uint64_t)p->mmap_accesses : 0;
	for (size_t i = 0; i < MMAP_N; i++)
		st->v[i].fd = -1;
	thp_shmem_read(run, shmem, sizeof(shmem));
	for (size_t i = 0; i < MMAP_N; i++) {
		st->v[i].kind = &mmap_kinds[i];
		st->v[i].res = bench_result_new(run, "mmap_read",
						mmap_kinds[i].name);
		if (!st->v[i].res)
			return -ENOMEM;
	}
	mmap_params(run, st, p, shmem);

	if (!st->pages || st->pages - 1 > UINT32_MAX || !st->accesses) {
		snprintf(why, sizeof(why),
			 "mmap_bytes %llu and mmap_accesses %lld: needs 1 to 2^32 pages of 4 KiB and at least one access",
			 (unsigned long long)p->mmap_bytes,
			 (long long)p->mmap_accesses);
		mmap_skip_all(st, why);
		return 0;
	}
	if (mmap_shmem_refusal(shmem, why, sizeof(why)))
		bench_result_skip(st->v[1].res, "%s", why);

	/* the shmem files, the chain, and what a reservation takes */
	need = st->pages * (sizeof(*next) + sizeof(*word));
	for (size_t i = 0; i < V_HUGETLB; i++)
		if (!bench_result_skipped(st->v[i].res))
			need += st->len;
	if (p->reserve_hugetlb > 0)
		need += (uint64_t)p->reserve_hugetlb * HUGETLB_PAGE;
	if (bench_check_memory(run, need, why, sizeof(why)) < 0) {
		mmap_skip_all(st, why);
		return 0;
	}
	if (p->reserve_hugetlb > 0)
		st->pool_restore = hugetlb_reserve_2m(run, p->reserve_hugetlb,
						      st->v[V_HUGETLB].res);
	hugetlb_pool_check(run, st->v[V_HUGETLB].res, POOL_2M, HUGETLB_PAGE,
			   "2 MiB", st->len);

	r = mmap_chain(st, (uint64_t)p->seed, &next, &word);
	if (r < 0)
		return r;
	for (size_t i = 0; i < MMAP_N; i++) {
		if (bench_result_skipped(st->v[i].res))
			continue;
		r = mmap_fill(st, &st->v[i], next, word);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < MMAP_N; i++)
		res[i] = bench_result_skipped(st->v[i].res) ? NULL :
							      st->v[i].res;
	bench_pmu_open(&st->pmu, res, MMAP_N);
	return 0;
}

/*
 * One measured repeat of one variant: a fresh mapping of its file, the
 * chase over it inside the window, then the mapping's own huge-page
 * coverage. The faults counted are this mapping's first touches (the file
 * itself stays in memory between repeats).
 */
static int mmap_measure(struct bench_run *run, struct mmap_state *st,
			struct mmap_variant *v)
{
	uint64_t left = st->accesses, off = st->start;
	struct pmu_counts c;
	struct rusage ra, rb;
	int64_t t0, t1;
	char *buf;
	int r, pr;

	(void)run;
	r = mmap_map(st, v, &buf);
	if (r < 0)
		return r;
	bench_window_begin(v->res);
	getrusage(RUSAGE_THREAD, &ra);
	pr = bench_pmu_start(&st->pmu);
	t0 = mono_ns();
	while (left) {
		uint64_t n = left < MMAP_CHUNK ? left : MMAP_CHUNK;

		off = mmap_chase(buf, off, n);
		left -= n;
		if (bench_interrupted())
			break;
	}
	t1 = mono_ns();
	bench_pmu_stop(&st->pmu, &pr, &c);
	getrusage(RUSAGE_THREAD, &rb);
	bench_window_end(v->res);
	mmap_sink = off;
	if (left) {
		munmap(buf, st->len);
		return -EINTR;
	}

	bench_sample(v->res, "ns_per_access", "ns",
		     (double)(t1 - t0) / (double)st->accesses);
	bench_sample(v->res, "minor_faults_per_1k", "count",
		     (double)(rb.ru_minflt - ra.ru_minflt) * 1000.0 /
			     (double)st->accesses);
	bench_pmu_sample(&st->pmu, pr, &c, v->res, &v->pmu, st->accesses);
	smaps_sample_huge_fraction(v->res, buf, st->len);
	munmap(buf, st->len);
	return 0;
}

static int mmap_run(struct bench_run *run, void *state, unsigned int repeat)
{
	struct mmap_state *st = state;

	/* A B C on even repeats, C B A on odd ones: drift cancels */
	for (size_t k = 0; k < MMAP_N; k++) {
		struct mmap_variant *v = &st->v[repeat & 1 ? MMAP_N - 1 - k : k];
		int r;

		if (v->fd < 0 || bench_result_skipped(v->res))
			continue;
		r = mmap_measure(run, st, v);
		if (r < 0)
			return r;
	}
	return 0;
}

static void mmap_compare(struct bench_run *run, void *state)
{
	struct mmap_state *st = state;

	/* 4k / x on ns_per_access: above 1 means x is faster */
	bench_compare(run, "mmap_thp_speedup", st->v[0].res, st->v[1].res,
		      "ns_per_access");
	bench_compare(run, "mmap_hugetlb_speedup", st->v[0].res,
		      st->v[V_HUGETLB].res, "ns_per_access");
}

static void mmap_teardown(struct bench_run *run, void *state)
{
	struct mmap_state *st = state;

	if (!st)
		return;
	/* the files go with their last descriptor: hugetlb pages back to
	 * the pool before it is shrunk */
	for (size_t i = 0; i < MMAP_N; i++)
		if (st->v[i].fd >= 0)
			close(st->v[i].fd);
	if (st->pool_restore >= 0)
		hugetlb_restore_2m(run, st->pool_restore, st->v[V_HUGETLB].res);
	bench_pmu_close(&st->pmu);
	free(st);
}

/* the two shmem files (4k and THP) at once (mmap_setup's need, less the
 * chain and a reservation) */
static void mmap_needs(const struct bench_params *p, uint64_t *memory,
		       uint64_t *disk)
{
	*memory = V_HUGETLB * kfile_round_up(p->mmap_bytes, KFILE_PMD_BYTES);
	*disk = 0;
}

const struct bench_ops bench_mmap_read_ops = {
	.name = "mmap_read",
	.summary = "random 4 KiB-page reads from a mapped memfd: 4 KiB pages vs THP vs hugetlb",
	.weight = { 6, 6, 12 },
	.needs = mmap_needs,
	.setup = mmap_setup,
	.run = mmap_run,
	.teardown = mmap_teardown,
	.compare = mmap_compare,
};
