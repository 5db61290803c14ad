/* SPDX-License-Identifier: MIT */
/* thp_chase: a dependent pointer chase over 4 KiB pages, THP and hugetlb */
#include "thp_chase.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench_modules.h"
#include "cleanup.h"
#include "clock.h"
#include "kfiles.h"
#include "pmu_bench.h"
#include "rand.h"
#include "sys/sys.h"

#define SLOT_BYTES 64 /* one cache line per chase slot */
#define GIB (1ULL << 30)
#define CHASE_CHUNK (1ULL << 20) /* loads between bench_interrupted() */
#define CYCLE_AHEAD 32 /* Sattolo draws made ahead, to prefetch */

/* ---- the cycle (thp_chase.h) ---- */

int thp_cycle_build(uint32_t *next, size_t n, uint64_t seed)
{
	uint32_t ahead[CYCLE_AHEAD];
	size_t nahead;
	struct rng r;

	if (n == 0 || (uint64_t)n - 1 > UINT32_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		next[i] = (uint32_t)i;
	rng_seed(&r, seed);
	/*
	 * Sattolo: for i = n-1 down to 1, swap next[i] with next[j], j
	 * uniform in [0, i). The draws do not depend on the array, so they are
	 * made CYCLE_AHEAD iterations early, in the same order, and next[j]
	 * is prefetched: the random misses overlap instead of stalling one
	 * after another (a 1 GiB chase has 16 M slots).
	 */
	nahead = n - 1 < CYCLE_AHEAD ? n - 1 : CYCLE_AHEAD;
	for (size_t k = 0; k < nahead; k++) {
		ahead[k] = (uint32_t)rng_below(&r, n - 1 - k);
		__builtin_prefetch(&next[ahead[k]], 1);
	}
	for (size_t i = n - 1, k = 0; i >= 1; i--, k++) {
		size_t slot = k % CYCLE_AHEAD;
		uint32_t j = ahead[slot], t;

		if (i > CYCLE_AHEAD) {
			ahead[slot] = (uint32_t)rng_below(&r, i - CYCLE_AHEAD);
			__builtin_prefetch(&next[ahead[slot]], 1);
		}
		t = next[i];
		next[i] = next[j];
		next[j] = t;
	}
	return 0;
}

/* ---- the benchmark ---- */

enum chase_mode {
	MODE_4K,
	MODE_THP,
	MODE_HUGETLB,
};

static const struct chase_kind {
	const char *name;
	enum chase_mode mode;
	uint64_t page; /* hugetlb page size */
	const char *pool; /* hugetlb pool directory */
	const char *label;
} chase_kinds[] = {
	{ "4k", MODE_4K, 0, NULL, "4 KiB pages (MADV_NOHUGEPAGE)" },
	{ "thp", MODE_THP, 0, NULL, "THP (MADV_HUGEPAGE)" },
	{ "hugetlb_2m", MODE_HUGETLB, 2ULL << 20,
	  KFILE_HUGETLB_DIR "/hugepages-2048kB", "2 MiB" },
	{ "hugetlb_1g", MODE_HUGETLB, 1ULL << 30,
	  KFILE_HUGETLB_DIR "/hugepages-1048576kB", "1 GiB" },
};

#define CHASE_N ARRAY_SIZE(chase_kinds)

struct chase_variant {
	const struct chase_kind *kind;
	struct bench_result *res;
	char *buf; /* the mapping, NULL when none */
	size_t len;
	struct bench_pmu_repeats pmu;
};

struct chase_state {
	struct chase_variant v[CHASE_N];
	uint64_t slots, accesses;
	struct bench_pmu pmu;
	/* --reserve-hugetlb: the 2 MiB pool size to restore, -1: untouched */
	int64_t pool_restore;
};

/* Keeps the chase's final pointer alive: the loop cannot be dropped. */
static void *volatile chase_sink;

/* n dependent loads: each slot's first word points to the next slot. */
static __attribute__((noinline)) void *chase(void *p, uint64_t n)
{
	void **q = p;

	for (; n >= 8; n -= 8) {
		q = *q;
		q = *q;
		q = *q;
		q = *q;
		q = *q;
		q = *q;
		q = *q;
		q = *q;
	}
	while (n--)
		q = *q;
	return q;
}

static void chase_skip_all(struct chase_state *st, const char *why)
{
	for (size_t i = 0; i < CHASE_N; i++)
		if (!bench_result_skipped(st->v[i].res))
			bench_result_skip(st->v[i].res, "%s", why);
}

/*
 * Maps, advises and fills one variant's buffer (the first touch decides its
 * page size), then writes the cycle in it as pointers. What the host
 * refuses skips the variant; -errno only for the agent's own failures.
 */
static int chase_build(struct bench_run *run, struct chase_state *st,
		       struct chase_variant *v, const uint32_t *next)
{
	const struct chase_kind *k = v->kind;
	uint64_t bytes = st->slots * SLOT_BYTES;
	struct vmstat a, b;
	int64_t t0, t1;
	void *p = NULL;
	int r;

	if (k->mode == MODE_HUGETLB) {
		v->len = kfile_round_up(bytes, k->page);
		r = sys_mmap_anon(v->len, k->page, &p);
		if (r < 0) {
			bench_result_skip(v->res,
					  "mmap(MAP_HUGETLB) of %llu MiB in %s pages: %s",
					  (unsigned long long)(v->len >> 20),
					  k->label, kfile_errname(r));
			return 0;
		}
		v->buf = p;
	} else {
		v->len = kfile_round_up(bytes, KFILE_PMD_BYTES);
		r = kfile_map_aligned(v->len, &v->buf);
		if (r < 0) {
			bench_result_skip(v->res, "mmap of %llu MiB: %s",
					  (unsigned long long)(v->len >> 20),
					  kfile_errname(r));
			return 0;
		}
		/* before the first touch, which decides the page size */
		r = sys_madvise_thp(v->buf, v->len, k->mode == MODE_THP);
		if (r < 0 && k->mode == MODE_THP) {
			bench_result_skip(v->res, "madvise(MADV_HUGEPAGE): %s%s",
					  kfile_errname(r),
					  r == -EINVAL ? " (no THP in this kernel)" : "");
			munmap(v->buf, v->len);
			v->buf = NULL;
			return 0;
		}
		if (r < 0)
			/* without THP every page is 4 KiB anyway */
			bench_param_str(v->res, "madvise", kfile_errname(r));
	}
	bench_param_i64(v->res, "buffer_bytes", (int64_t)v->len);

	vmstat_read(run, &a);
	t0 = mono_ns();
	memset(v->buf, 0, v->len);
	t1 = mono_ns();
	vmstat_read(run, &b);
	bench_param_i64(v->res, "fill_us", (t1 - t0) / 1000);
	vmstat_param(v->res, &a, &b);
	if (bench_interrupted())
		return -EINTR;

	for (uint64_t i = 0; i < st->slots; i++)
		*(void **)(v->buf + i * SLOT_BYTES) =
			v->buf + (uint64_t)next[i] * SLOT_BYTES;
	return bench_interrupted() ? -EINTR : 0;
}

static int chase_setup(struct bench_run *run, const struct bench_params *p,
		       void **state)
{
	struct chase_state *st = calloc(1, sizeof(*st));
	uint64_t anon_len, next_len, need;
	struct thp_mode mode;
	struct vmstat vs;
	uint32_t *next = NULL;
	char why[512], *mem;
	int r = 0;

	if (!st)
		return -ENOMEM;
	*state = st;
	st->pool_restore = -1;
	st->slots = p->chase_bytes / SLOT_BYTES;
	st->accesses = p->chase_accesses > 0 ? (uint64_t)p->chase_accesses : 0;
	thp_mode_read(run, &mode);
	vmstat_read(run, &vs);
	for (size_t i = 0; i < CHASE_N; i++) {
		struct chase_variant *v = &st->v[i];

		v->kind = &chase_kinds[i];
		v->res = bench_result_new(run, "thp_chase", v->kind->name);
		if (!v->res)
			return -ENOMEM;
		bench_param_str(v->res, "page_mode",
				v->kind->mode == MODE_HUGETLB ?
					(v->kind->page == GIB ?
						 "hugetlb 1 GiB (MAP_HUGETLB)" :
						 "hugetlb 2 MiB (MAP_HUGETLB)") :
					v->kind->label);
		bench_param_i64(v->res, "chase_bytes", (int64_t)p->chase_bytes);
		bench_param_i64(v->res, "slots", (int64_t)st->slots);
		bench_param_i64(v->res, "slot_bytes", SLOT_BYTES);
		bench_param_i64(v->res, "accesses", (int64_t)st->accesses);
		bench_param_i64(v->res, "seed", p->seed);
		bench_param_str(v->res, "chase",
				"one Sattolo cycle, a pointer per 64-byte slot");
		vmstat_param_missing(v->res, &vs);
		bench_param_str(v->res, "huge_fraction_from",
				v->kind->mode == MODE_HUGETLB ?
					"smaps Private_Hugetlb+Shared_Hugetlb" :
					"smaps AnonHugePages");
		thp_mode_param(v->res, &mode);
	}

	{
		struct bench_result *res[CHASE_N];

		for (size_t i = 0; i < CHASE_N; i++)
			res[i] = st->v[i].res;
		bench_pmu_open(&st->pmu, res, CHASE_N);
	}

	if (st->slots < 2 || st->slots - 1 > UINT32_MAX || !st->accesses) {
		snprintf(why, sizeof(why),
			 "chase_bytes %llu and chase_accesses %lld: needs 2 to 2^32 slots of 64 bytes and at least one access",
			 (unsigned long long)p->chase_bytes,
			 (long long)p->chase_accesses);
		chase_skip_all(st, why);
		return 0;
	}

	/* the 4k and thp buffers, the cycle, and what a reservation takes */
	anon_len = kfile_round_up(st->slots * SLOT_BYTES, KFILE_PMD_BYTES);
	next_len = kfile_round_up(st->slots * sizeof(uint32_t), KFILE_PMD_BYTES);
	need = 2 * anon_len + next_len;
	if (p->reserve_hugetlb > 0)
		need += (uint64_t)p->reserve_hugetlb * (2ULL << 20);
	if (bench_check_memory(run, need, why, sizeof(why)) < 0) {
		chase_skip_all(st, why);
		return 0;
	}
	if (p->reserve_hugetlb > 0)
		st->pool_restore = hugetlb_reserve_2m(run, p->reserve_hugetlb,
						      st->v[2].res);
	for (size_t i = 0; i < CHASE_N; i++)
		if (st->v[i].kind->mode == MODE_HUGETLB)
			hugetlb_pool_check(run, st->v[i].res,
					   st->v[i].kind->pool,
					   st->v[i].kind->page,
					   st->v[i].kind->label,
					   st->slots * SLOT_BYTES);

	/* the cycle once, in a compact array: every variant chases it */
	r = kfile_map_aligned(next_len, &mem);
	if (r < 0)
		return r;
	next = (uint32_t *)mem;
	(void)sys_madvise_thp(next, next_len, true); /* only faster */
	r = thp_cycle_build(next, st->slots, (uint64_t)p->seed);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < CHASE_N; i++) {
		struct chase_variant *v = &st->v[i];

		if (bench_result_skipped(v->res))
			continue;
		r = chase_build(run, st, v, next);
		if (r < 0)
			goto out;
	}
out:
	munmap(next, next_len);
	return r;
}

static int chase_measure(struct bench_run *run, struct chase_state *st,
			 struct chase_variant *v)
{
	uint64_t left = st->accesses;
	void *p = v->buf; /* slot 0: every variant walks the same order */
	struct pmu_counts c;
	struct vmstat a, b;
	int64_t t0, t1;
	int pr;

	bench_window_begin(v->res);
	vmstat_read(run, &a);
	pr = bench_pmu_start(&st->pmu);
	t0 = mono_ns();
	while (left) {
		uint64_t n = left < CHASE_CHUNK ? left : CHASE_CHUNK;

		p = chase(p, n);
		left -= n;
		if (bench_interrupted())
			break;
	}
	t1 = mono_ns();
	bench_pmu_stop(&st->pmu, &pr, &c);
	vmstat_read(run, &b);
	bench_window_end(v->res);
	chase_sink = p;
	if (left)
		return -EINTR;
	bench_pmu_sample(&st->pmu, pr, &c, v->res, &v->pmu, st->accesses);

	bench_sample(v->res, "ns_per_access", "ns",
		     (double)(t1 - t0) / (double)st->accesses);
	smaps_sample_huge_fraction(v->res, v->buf, v->len);
	vmstat_sample(v->res, &a, &b);
	return 0;
}

static int chase_run(struct bench_run *run, void *state, unsigned int repeat)
{
	struct chase_state *st = state;

	/* A B ... on even repeats, ... B A on odd ones: drift cancels */
	for (size_t k = 0; k < CHASE_N; k++) {
		struct chase_variant *v =
			&st->v[repeat & 1 ? CHASE_N - 1 - k : k];
		int r;

		if (!v->buf || bench_result_skipped(v->res))
			continue;
		r = chase_measure(run, st, v);
		if (r < 0)
			return r;
	}
	return 0;
}

static void chase_compare(struct bench_run *run, void *state)
{
	struct chase_state *st = state;

	/* 4k / x on ns_per_access: above 1 means x is faster */
	bench_compare(run, "thp_speedup", st->v[0].res, st->v[1].res,
		      "ns_per_access");
	bench_compare(run, "hugetlb_2m_speedup", st->v[0].res, st->v[2].res,
		      "ns_per_access");
	bench_compare(run, "hugetlb_1g_speedup", st->v[0].res, st->v[3].res,
		      "ns_per_access");
}

static void chase_teardown(struct bench_run *run, void *state)
{
	struct chase_state *st = state;

	if (!st)
		return;
	for (size_t i = 0; i < CHASE_N; i++)
		if (st->v[i].buf)
			munmap(st->v[i].buf, st->v[i].len);
	if (st->pool_restore >= 0)
		hugetlb_restore_2m(run, st->pool_restore, st->v[2].res);
	bench_pmu_close(&st->pmu);
	free(st);
}

/* the 4k and thp buffers and the cycle (chase_setup's need, but for a
 * reservation, which the pool takes from memory the check counts) */
static void chase_needs(const struct bench_params *p, uint64_t *memory,
			uint64_t *disk)
{
	uint64_t slots = p->chase_bytes / SLOT_BYTES;

	*memory = 2 * kfile_round_up(slots * SLOT_BYTES, KFILE_PMD_BYTES) +
		  kfile_round_up(slots * sizeof(uint32_t), KFILE_PMD_BYTES);
	*disk = 0;
}

const struct bench_ops bench_thp_chase_ops = {
	.name = "thp_chase",
	.summary = "dependent pointer chase: 4 KiB pages vs THP vs hugetlb",
	.weight = { 30, 30, 75 },
	.needs = chase_needs,
	.setup = chase_setup,
	.run = chase_run,
	.teardown = chase_teardown,
	.compare = chase_compare,
};
