/* SPDX-License-Identifier: MIT */
/* false_sharing: one thread per vCPU, counters on one cache line vs padded. */
#include "bench_false_sharing.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_modules.h"
#include "cleanup.h"
#include "probe.h"

#define FS_NAME "false_sharing"
#define FS_LINE_PATH "/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size"
#define FS_LINE_DEFAULT 64
/* Increments between two looks at the stop flag: a few hundred µs. */
#define FS_CHUNK (1u << 16)
/* Worker bookkeeping is kept off each other's lines and line pairs. */
#define FS_SLOT_ALIGN 128

/* In run order: shared and padded of one kind are neighbours. */
enum {
	FS_SHARED,
	FS_PADDED,
	FS_SHARED_ATOMIC,
	FS_PADDED_ATOMIC,
	FS_NVARIANTS
};
enum { FS_WAIT, FS_GO, FS_ABORT };

struct fs_state;

struct fs_worker {
	struct fs_state *st;
	void *counter;
	uint64_t n;
	bool atomic;
	int cpu; /* -1: not pinned */
	int pin_err; /* 0 or the errno of pthread_setaffinity_np */
	double end; /* bench_now() when its last increment was done */
	pthread_t tid;
} __attribute__((aligned(FS_SLOT_ALIGN)));

struct fs_variant {
	const char *name;
	bool atomic; /* relaxed atomic fetch_add, else volatile ++ */
	bool padded;
	uint64_t increments; /* per thread */
	struct bench_result *res;
	size_t stride; /* bytes from one counter to the next */
	size_t bytes; /* of mem, whole line pairs */
	void *mem;
};

struct fs_state {
	unsigned int nthreads;
	long online, allowed;
	int *cpus; /* nthreads entries, -1 when not pinning */
	char cpulist[256];
	size_t line;
	bool line_from_sysfs;
	int pin_err; /* first pinning failure seen, 0: every thread pinned */
	struct fs_variant v[FS_NVARIANTS];
	struct fs_worker *w;
	atomic_uint ready;
	atomic_int go;
};

int false_sharing_verify(const void *counters, size_t stride, size_t n,
			 uint64_t expected, size_t *ret_bad)
{
	if (stride % sizeof(uint64_t))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		const uint64_t *c =
			(const uint64_t *)((const char *)counters + i * stride);

		if (*c != expected) {
			if (ret_bad)
				*ret_bad = i;
			return -EIO;
		}
	}
	return 0;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/*
 * The measured loops. volatile: a uint64_t that only this thread writes, so
 * each ++ is a plain load, add and store (no lock prefix, no data race):
 * the textbook demonstration, whose cost depends on how well the core's
 * store buffer and store-to-load forwarding hide the line's absence.
 * atomic: a relaxed fetch_add (lock add on x86) needs the line in the
 * Modified state for every increment, so a shared line moves between the
 * cores once per increment.
 */
static void fs_count_volatile(volatile uint64_t *c, uint32_t k)
{
	while (k--)
		(*c)++;
}

static void fs_count_atomic(_Atomic uint64_t *c, uint32_t k)
{
	while (k--)
		atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static void *fs_worker_main(void *arg)
{
	struct fs_worker *w = arg;
	struct fs_state *st = w->st;
	uint64_t left = w->n;
	int go;

	if (w->cpu >= 0) {
		size_t size = CPU_ALLOC_SIZE(w->cpu + 1);
		cpu_set_t *set = CPU_ALLOC(w->cpu + 1);

		if (set) {
			CPU_ZERO_S(size, set);
			CPU_SET_S((size_t)w->cpu, size, set);
			w->pin_err =
				pthread_setaffinity_np(pthread_self(), size, set);
			CPU_FREE(set);
		} else {
			w->pin_err = ENOMEM;
		}
	}
	atomic_fetch_add_explicit(&st->ready, 1, memory_order_release);
	while ((go = atomic_load_explicit(&st->go, memory_order_acquire)) ==
	       FS_WAIT)
		cpu_relax();
	if (go != FS_GO)
		return NULL;
	while (left) {
		uint32_t k = left < FS_CHUNK ? (uint32_t)left : FS_CHUNK;

		if (bench_interrupted())
			break;
		left -= k;
		if (w->atomic)
			fs_count_atomic(w->counter, k);
		else
			fs_count_volatile(w->counter, k);
	}
	w->end = bench_now();
	return NULL;
}

/*
 * One measurement of v: the threads start, pin themselves and wait on the
 * start flag; the clock starts when every one is waiting and the flag is
 * released, and stops at the last thread's end.
 */
static int fs_measure(struct fs_state *st, struct fs_variant *v,
		      double *ret_wall)
{
	unsigned int created = 0;
	double t0 = 0, last = 0;
	size_t bad;
	int r = 0;

	memset(v->mem, 0, v->bytes);
	atomic_store(&st->ready, 0);
	atomic_store(&st->go, FS_WAIT);
	for (unsigned int i = 0; i < st->nthreads; i++) {
		struct fs_worker *w = &st->w[i];

		*w = (struct fs_worker){
			.st = st,
			.counter = (char *)v->mem + i * v->stride,
			.n = v->increments,
			.atomic = v->atomic,
			.cpu = st->cpus[i],
		};
		r = -pthread_create(&w->tid, NULL, fs_worker_main, w);
		if (r < 0)
			goto out;
		created++;
	}
	while (atomic_load(&st->ready) < st->nthreads) {
		if (bench_interrupted()) {
			r = -EINTR;
			goto out;
		}
		sched_yield();
	}
	for (unsigned int i = 0; i < st->nthreads; i++)
		if (st->w[i].pin_err && !st->pin_err)
			st->pin_err = st->w[i].pin_err;
	t0 = bench_now();
	atomic_store_explicit(&st->go, FS_GO, memory_order_release);
out:
	if (r < 0)
		atomic_store(&st->go, FS_ABORT);
	for (unsigned int i = 0; i < created; i++) {
		int e = pthread_join(st->w[i].tid, NULL);

		if (e && r == 0)
			r = -e;
	}
	if (r < 0)
		return r;
	if (bench_interrupted())
		return -EINTR;
	for (unsigned int i = 0; i < st->nthreads; i++)
		if (st->w[i].end > last)
			last = st->w[i].end;
	r = false_sharing_verify(v->mem, v->stride, st->nthreads,
				 v->increments, &bad);
	if (r < 0)
		return r;
	*ret_wall = last - t0;
	return 0;
}

/* The cache line size of cpu0's first cache, else 64 bytes. */
static size_t fs_line_size(struct bench_run *run, bool *ret_sysfs)
{
	_cleanup_free_ char *text = NULL;
	int64_t v;

	*ret_sysfs = false;
	if (bench_read_file(run, FS_LINE_PATH, &text) < 0 ||
	    probe_parse_i64(text, &v) < 0 || v < 32 || v > 4096 ||
	    (v & (v - 1)))
		return FS_LINE_DEFAULT;
	*ret_sysfs = true;
	return (size_t)v;
}

/*
 * One thread per online vCPU, but no more than the affinity mask allows
 * (more threads than CPUs would measure time slicing, not cache lines);
 * thread i is pinned to the i-th allowed CPU.
 */
static int fs_plan_threads(struct fs_state *st)
{
	cpu_set_t *set = NULL;
	size_t size = 0, len = 0;
	unsigned int n;
	int r, cpu;

	st->online = sysconf(_SC_NPROCESSORS_ONLN);
	if (st->online < 1)
		st->online = 1;
	r = bench_affinity(&set, &size);
	if (r < 0)
		return r;
	st->allowed = CPU_COUNT_S(size, set);
	n = (unsigned int)(st->online < st->allowed ? st->online : st->allowed);
	st->nthreads = n < 2 ? 2 : n;
	st->cpus = calloc(st->nthreads, sizeof(*st->cpus));
	if (!st->cpus) {
		CPU_FREE(set);
		return -ENOMEM;
	}
	cpu = -1;
	for (unsigned int i = 0; i < st->nthreads; i++) {
		st->cpus[i] = -1;
		if (st->allowed < 2)
			continue;
		do
			cpu++;
		while (!CPU_ISSET_S((size_t)cpu, size, set));
		st->cpus[i] = cpu;
		if (len < sizeof(st->cpulist))
			len += (size_t)snprintf(st->cpulist + len,
						sizeof(st->cpulist) - len,
						"%s%d", i ? "," : "", cpu);
	}
	CPU_FREE(set);
	return 0;
}

static int fs_alloc(struct fs_variant *v, size_t stride, size_t n,
		    size_t line)
{
	size_t pair = 2 * line;
	int e;

	v->stride = stride;
	/* Whole line pairs: nothing else shares the adjacent-line pair. */
	v->bytes = (n * stride + pair - 1) / pair * pair;
	e = posix_memalign(&v->mem, pair, v->bytes);
	if (e) {
		v->mem = NULL;
		return -e;
	}
	memset(v->mem, 0, v->bytes);
	return 0;
}

static void fs_params(struct fs_state *st, struct fs_variant *v)
{
	struct bench_result *res = v->res;
	size_t lines = v->padded ? st->nthreads :
				   (st->nthreads * v->stride + st->line - 1) /
					   st->line;

	bench_param_i64(res, "threads", st->nthreads);
	bench_param_i64(res, "increments_per_thread", (int64_t)v->increments);
	bench_param_str(res, "increment",
			v->atomic ? "relaxed atomic fetch_add (lock add)" :
				    "volatile uint64_t load, add, store (no lock prefix)");
	bench_param_i64(res, "cpus_online", st->online);
	bench_param_i64(res, "cpus_allowed", st->allowed);
	bench_param_i64(res, "cache_line_bytes", (int64_t)st->line);
	bench_param_str(res, "cache_line_source",
			st->line_from_sysfs ? FS_LINE_PATH : "default");
	bench_param_i64(res, "counter_bytes", sizeof(uint64_t));
	bench_param_i64(res, "stride_bytes", (int64_t)v->stride);
	bench_param_i64(res, "cache_lines_written", (int64_t)lines);
	bench_param_i64(res, "pinned", st->cpus[0] >= 0 && !st->pin_err);
	if (st->cpus[0] >= 0)
		bench_param_str(res, "cpus", st->cpulist);
	if (st->cpus[0] < 0) {
		bench_param_str(res, "pin_error",
				"fewer than 2 CPUs in the affinity mask");
	} else if (st->pin_err) {
		const char *name = strerrorname_np(st->pin_err);
		char buf[64];

		snprintf(buf, sizeof(buf), "pthread_setaffinity_np: %s",
			 name ? name : "error");
		bench_param_str(res, "pin_error", buf);
	}
}

static void fs_teardown(struct bench_run *run, void *state)
{
	struct fs_state *st = state;

	(void)run;
	if (!st)
		return;
	for (int k = 0; k < FS_NVARIANTS; k++)
		free(st->v[k].mem);
	free(st->w);
	free(st->cpus);
	free(st);
}

static const struct {
	const char *name;
	bool atomic, padded;
} fs_variants[FS_NVARIANTS] = {
	[FS_SHARED] = { "shared", false, false },
	[FS_PADDED] = { "padded", false, true },
	[FS_SHARED_ATOMIC] = { "shared_atomic", true, false },
	[FS_PADDED_ATOMIC] = { "padded_atomic", true, true },
};

static int fs_setup(struct bench_run *run, const struct bench_params *p,
		    void **state)
{
	struct fs_state *st;
	uint64_t atomic_n;
	void *w;
	int r;

	if (p->fs_increments <= 0)
		return -EINVAL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	*state = st;
	for (int k = 0; k < FS_NVARIANTS; k++) {
		st->v[k].name = fs_variants[k].name;
		st->v[k].atomic = fs_variants[k].atomic;
		st->v[k].padded = fs_variants[k].padded;
		st->v[k].res = bench_result_new(run, FS_NAME, st->v[k].name);
		if (!st->v[k].res)
			return -ENOMEM;
	}
	r = fs_plan_threads(st);
	if (r < 0)
		return r;
	st->line = fs_line_size(run, &st->line_from_sysfs);
	/*
	 * A contended lock add moves the line once per increment (~30 ns on
	 * 2 vCPUs, more with more threads per line): the atomic pair does a
	 * fixed total of fs_increments / 2 increments, shared by the threads.
	 */
	atomic_n = (uint64_t)p->fs_increments / 2 / st->nthreads;
	if (!atomic_n)
		atomic_n = 1;
	for (int k = 0; k < FS_NVARIANTS; k++) {
		struct fs_variant *v = &st->v[k];

		v->increments = v->atomic ? atomic_n :
					    (uint64_t)p->fs_increments;
		/*
		 * Shared: packed 8-byte counters, all on one line up to 8
		 * threads (64-byte line). Padded: one counter per pair of
		 * lines, so neither its line nor the adjacent line that the
		 * spatial prefetcher fetches with it holds another counter.
		 */
		r = fs_alloc(v, v->padded ? 2 * st->line : sizeof(uint64_t),
			     st->nthreads, st->line);
		if (r < 0)
			return r;
		fs_params(st, v);
		if (st->allowed < 2)
			bench_result_skip(
				v->res,
				"only %ld CPU usable (%ld online): false sharing needs threads on 2 CPUs",
				st->allowed, st->online);
	}
	r = posix_memalign(&w, FS_SLOT_ALIGN,
			   st->nthreads * sizeof(struct fs_worker));
	if (r)
		return -r;
	st->w = w;
	return 0;
}

/*
 * Every variant once, interleaved: shared, padded, shared_atomic,
 * padded_atomic on even repeats, the reverse on odd ones, so each pair
 * alternates which of the two runs first.
 */
static int fs_run(struct bench_run *run, void *state, unsigned int repeat)
{
	struct fs_state *st = state;

	(void)run;
	for (unsigned int k = 0; k < FS_NVARIANTS; k++) {
		unsigned int idx = repeat % 2 ? FS_NVARIANTS - 1 - k : k;
		struct fs_variant *v = &st->v[idx];
		double wall;
		int r;

		if (bench_result_skipped(v->res))
			continue;
		if (bench_interrupted())
			return -EINTR;
		bench_window_begin(v->res);
		r = fs_measure(st, v, &wall);
		bench_window_end(v->res);
		if (r < 0)
			return r;
		bench_sample(v->res, "ns_per_increment", "ns",
			     wall * 1e9 / (double)v->increments);
		bench_sample(v->res, "total_ms", "ms", wall * 1e3);
		/* pinning is known once the threads ran: keep it current */
		fs_params(st, v);
	}
	return 0;
}

static void fs_compare(struct bench_run *run, void *state)
{
	struct fs_state *st = state;

	bench_compare(run, "false_sharing_slowdown", st->v[FS_SHARED].res,
		      st->v[FS_PADDED].res, "ns_per_increment");
	bench_compare(run, "false_sharing_slowdown_atomic",
		      st->v[FS_SHARED_ATOMIC].res,
		      st->v[FS_PADDED_ATOMIC].res, "ns_per_increment");
}

const struct bench_ops bench_false_sharing_ops = {
	.name = FS_NAME,
	.summary = "threads incrementing counters on one cache line vs padded",
	.weight = { 10, 10, 20 },
	.setup = fs_setup,
	.run = fs_run,
	.teardown = fs_teardown,
	.compare = fs_compare,
};
