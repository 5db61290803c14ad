/* SPDX-License-Identifier: MIT */
/* membw: STREAM-style memory bandwidth, 4 KiB pages vs THP, 1 vs all vCPUs */
#include "membw.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench_modules.h"
#include "cleanup.h"
#include "clock.h"
#include "config.h"
#include "kfiles.h"
#include "probe.h"
#include "probe_host.h"
#include "sys/sys.h"

#define MEMBW_NAME "membw"
/* Iterations per measurement; a kernel's sample is its fastest. */
#define MEMBW_ITERATIONS 3
/* The three arrays together are this many times the LLC, or the figure
 * says it may be partly the cache's. */
#define MEMBW_LLC_FACTOR 4
/* Slices start on 4 KiB pages: no page is first touched by two threads. */
#define MEMBW_SLICE_ALIGN (4096 / sizeof(double))
#define MEMBW_CACHE_DIR "/sys/devices/system/cpu/cpu0/cache"
/*
 * The most last-level cache one core reaches today (an AMD 3D V-Cache
 * CCD's 96 MiB): glibc's sysconf(_SC_LEVEL3_CACHE_SIZE) comes from a
 * CPUID leaf that may give the whole chip's, 508 MiB on the EPYC under
 * this Firecracker guest (which has no cache directories), and arrays
 * sized from it took 53 s in the quick profile instead of 1.
 */
#define MEMBW_LLC_REACH_MAX (96ULL << 20)
/*
 * Bytes between the end of one array and the start of the next (STREAM's
 * OFFSET): arrays a power of two apart put a[i], b[i] and c[i] on the same
 * DRAM banks whenever the pages behind them are contiguous, as fresh
 * memory often is. With 256 MiB arrays back to back, triad ran at 13 GB/s
 * here against 18.5 at 160 MiB; 1 MiB + 36 KiB + 192 bytes apart breaks
 * that (and keeps every array 64-byte aligned).
 */
#define MEMBW_STAGGER ((1u << 20) + (36u << 10) + 192u)

/* ---- the kernels (membw.h) ---- */

static const struct {
	const char *metric;
	unsigned int arrays;
} membw_kernels[MEMBW_NKERNELS] = {
	[MEMBW_COPY] = { "copy_gbps", 2 },   [MEMBW_SCALE] = { "scale_gbps", 2 },
	[MEMBW_ADD] = { "add_gbps", 3 },     [MEMBW_TRIAD] = { "triad_gbps", 3 },
	[MEMBW_READ] = { "read_gbps", 1 },   [MEMBW_WRITE] = { "write_gbps", 1 },
};

const char *membw_kernel_metric(enum membw_kernel k)
{
	return k < MEMBW_NKERNELS ? membw_kernels[k].metric : NULL;
}

unsigned int membw_kernel_arrays(enum membw_kernel k)
{
	return k < MEMBW_NKERNELS ? membw_kernels[k].arrays : 0;
}

double membw_gbps(uint64_t bytes, double seconds)
{
	return seconds > 0 ? (double)bytes / seconds / 1e9 : 0;
}

/*
 * No restrict on these pointers, on purpose: with it GCC turns copy into a
 * memcpy call, whose non-temporal stores (above a size threshold) skip the
 * read of each written line that every other kernel pays, and c = s into
 * a memset for some s. Plain loops keep every kernel's stores alike.
 */
static __attribute__((noinline)) void k_copy(double *c, const double *a,
					      size_t n)
{
	for (size_t i = 0; i < n; i++)
		c[i] = a[i];
}

static __attribute__((noinline)) void k_scale(double *b, const double *c,
					       size_t n, double s)
{
	for (size_t i = 0; i < n; i++)
		b[i] = s * c[i];
}

static __attribute__((noinline)) void k_add(double *c, const double *a,
					     const double *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		c[i] = a[i] + b[i];
}

static __attribute__((noinline)) void k_triad(double *a, const double *b,
					       const double *c, size_t n,
					       double s)
{
	for (size_t i = 0; i < n; i++)
		a[i] = b[i] + s * c[i];
}

/*
 * Four independent sums: the loads, not one add's latency, set the pace.
 * Each load is one 8-byte load, as sysbench memory's (ck_pr_load_64): the
 * volatile keeps GCC from pairing them into 16-byte SSE loads, which read
 * 16% faster than sysbench on an Intel Xeon guest (docs/bench.md, membw,
 * vs_sysbench).
 */
static __attribute__((noinline)) double k_read(const double *a, size_t n)
{
	const volatile double *v = a;
	double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	size_t i = 0;

	for (; i + 4 <= n; i += 4) {
		s0 += v[i];
		s1 += v[i + 1];
		s2 += v[i + 2];
		s3 += v[i + 3];
	}
	for (; i < n; i++)
		s0 += v[i];
	return (s0 + s1) + (s2 + s3);
}

static __attribute__((noinline)) void k_write(double *c, size_t n, double s)
{
	for (size_t i = 0; i < n; i++)
		c[i] = s;
}

struct membw_worker;

struct membw_shared {
	struct membw_job *job;
	struct membw_worker *w; /* job->threads of them */
	pthread_barrier_t bar;
	pthread_mutex_t gate;
	bool failed; /* under gate: a thread could not be created */
	bool stop;
};

struct membw_worker {
	struct membw_shared *sh;
	unsigned int id;
	size_t lo, hi;
	double sum;
	/* this thread's clock around each kernel of the iteration */
	int64_t start[MEMBW_NKERNELS], end[MEMBW_NKERNELS];
	pthread_t tid;
};

/*
 * A kernel's time: from the first thread's start to the last one's end.
 * Each thread reads the clock itself, next to its kernel: a thread put off
 * the CPU right after a barrier can only make the span longer, never
 * shorter (one clock read after the barrier by thread 0 would miss the
 * work the others did while it waited to run again).
 */
static void membw_account(struct membw_shared *sh)
{
	struct membw_job *j = sh->job;

	for (int k = 0; k < MEMBW_NKERNELS; k++) {
		int64_t lo = sh->w[0].start[k], hi = sh->w[0].end[k];
		double sec;

		for (unsigned int i = 1; i < j->threads; i++) {
			if (sh->w[i].start[k] < lo)
				lo = sh->w[i].start[k];
			if (sh->w[i].end[k] > hi)
				hi = sh->w[i].end[k];
		}
		sec = (double)(hi - lo) / 1e9;
		if (!j->done || sec < j->best_s[k])
			j->best_s[k] = sec;
	}
	j->done++;
}

/* Runs kernel k of w's slice between two clock reads, then waits for the
 * other threads. */
#define MEMBW_TIMED(w, k, call)                   \
	do {                                      \
		(w)->start[k] = mono_ns();        \
		call;                             \
		(w)->end[k] = mono_ns();          \
		pthread_barrier_wait(&(w)->sh->bar); \
	} while (0)

static void *membw_worker_main(void *arg)
{
	struct membw_worker *w = arg;
	struct membw_shared *sh = w->sh;
	struct membw_job *j = sh->job;
	double *a = j->a + w->lo, *b = j->b + w->lo, *c = j->c + w->lo;
	size_t n = w->hi - w->lo;
	const double s = MEMBW_SCALAR;
	bool failed;

	pthread_mutex_lock(&sh->gate);
	failed = sh->failed;
	pthread_mutex_unlock(&sh->gate);
	if (failed)
		return NULL;
	/* the first touch: this thread's pages, on its CPU's node */
	for (size_t i = 0; i < n; i++) {
		a[i] = 1.0;
		b[i] = 2.0;
		c[i] = 0.0;
	}
	for (unsigned int it = 0;; it++) {
		if (w->id == 0)
			sh->stop = it == j->iterations || bench_interrupted();
		pthread_barrier_wait(&sh->bar);
		if (sh->stop)
			break;
		MEMBW_TIMED(w, MEMBW_COPY, k_copy(c, a, n));
		MEMBW_TIMED(w, MEMBW_SCALE, k_scale(b, c, n, s));
		MEMBW_TIMED(w, MEMBW_ADD, k_add(c, a, b, n));
		MEMBW_TIMED(w, MEMBW_TRIAD, k_triad(a, b, c, n, s));
		MEMBW_TIMED(w, MEMBW_READ, w->sum = k_read(a, n));
		MEMBW_TIMED(w, MEMBW_WRITE, k_write(c, n, s));
		if (w->id == 0)
			membw_account(sh);
	}
	return NULL;
}

int membw_job_run(struct membw_job *job)
{
	struct membw_shared sh = { .job = job,
				   .gate = PTHREAD_MUTEX_INITIALIZER };
	struct membw_worker *w;
	unsigned int created = 0;
	int r = 0, e;

	if (!job->a || !job->b || !job->c || !job->n || !job->iterations ||
	    job->threads < 1 || job->threads > MEMBW_MAX_THREADS)
		return -EINVAL;
	job->done = 0;
	job->read_sum = 0;
	for (int k = 0; k < MEMBW_NKERNELS; k++) {
		job->best_s[k] = 0;
		job->bytes[k] = (uint64_t)membw_kernels[k].arrays * job->n *
				sizeof(double);
	}
	w = calloc(job->threads, sizeof(*w));
	if (!w)
		return -ENOMEM;
	sh.w = w;
	e = pthread_barrier_init(&sh.bar, NULL, job->threads);
	if (e) {
		free(w);
		return -e;
	}
	for (unsigned int i = 0; i < job->threads; i++) {
		size_t lo = job->n * i / job->threads,
		       hi = job->n * (i + 1) / job->threads;

		w[i].sh = &sh;
		w[i].id = i;
		w[i].lo = i ? lo / MEMBW_SLICE_ALIGN * MEMBW_SLICE_ALIGN : 0;
		w[i].hi = i + 1 < job->threads ?
				  hi / MEMBW_SLICE_ALIGN * MEMBW_SLICE_ALIGN :
				  job->n;
	}
	/* the workers wait at the gate until every one exists: a thread
	 * that could not be created would leave the barrier short */
	pthread_mutex_lock(&sh.gate);
	for (; created < job->threads; created++) {
		e = pthread_create(&w[created].tid, NULL, membw_worker_main,
				   &w[created]);
		if (e) {
			r = -e;
			break;
		}
	}
	sh.failed = r < 0;
	pthread_mutex_unlock(&sh.gate);
	for (unsigned int i = 0; i < created; i++)
		pthread_join(w[i].tid, NULL);
	pthread_barrier_destroy(&sh.bar);
	for (unsigned int i = 0; r == 0 && i < job->threads; i++)
		job->read_sum += w[i].sum;
	free(w);
	if (r == 0 && job->done < job->iterations)
		r = -EINTR;
	return r;
}

/* ---- the benchmark ---- */

static const struct membw_kind {
	const char *name;
	bool thp, all;
	const char *label;
} membw_kinds[] = {
	{ "4k_1t", false, false, "4 KiB pages (MADV_NOHUGEPAGE)" },
	{ "thp_1t", true, false, "THP (MADV_HUGEPAGE)" },
	{ "4k_all", false, true, "4 KiB pages (MADV_NOHUGEPAGE)" },
	{ "thp_all", true, true, "THP (MADV_HUGEPAGE)" },
};

#define MEMBW_N ARRAY_SIZE(membw_kinds)

struct membw_variant {
	const struct membw_kind *kind;
	struct bench_result *res;
	unsigned int threads;
};

struct membw_state {
	struct membw_variant v[MEMBW_N];
	size_t n; /* doubles per array */
	size_t array_len; /* bytes per array: n doubles, 2 MiB multiple */
};

/* The last-level cache a stream must exceed, and where it was read. */
struct membw_llc {
	uint64_t bytes; /* every instance together; 0: unknown */
	uint64_t instance; /* one instance: cpu0's */
	int64_t instances;
	char source[96];
};

/* The trimmed text of a file of cpu0's cache index i; NULL when absent. */
static char *membw_cache_file(struct bench_run *run, int i, const char *name)
{
	char path[128], *text = NULL;

	snprintf(path, sizeof(path), MEMBW_CACHE_DIR "/index%d/%s", i, name);
	if (bench_read_file(run, path, &text) < 0)
		return NULL;
	probe_trim(text);
	return text;
}

/*
 * cpu0's highest-level data or unified cache in sysfs, times the number of
 * its instances (online CPUs over the CPUs sharing cpu0's: the L3 of each
 * CCX on AMD), since all threads stream through all of them; else glibc's
 * sysconf(_SC_LEVEL3_CACHE_SIZE), which on some CPUs is the whole chip's.
 */
static void membw_llc_read(struct bench_run *run, long online,
			   struct membw_llc *ret)
{
	int best_level = 0, best = -1;
	int64_t sharing = 0;
	long sc;

	memset(ret, 0, sizeof(*ret));
	for (int i = 0; i < 32; i++) {
		_cleanup_free_ char *level = membw_cache_file(run, i, "level");
		_cleanup_free_ char *type = membw_cache_file(run, i, "type");
		_cleanup_free_ char *size = membw_cache_file(run, i, "size");
		_cleanup_free_ char *cpus =
			membw_cache_file(run, i, "shared_cpu_list");
		int64_t lv, nshare;
		uint64_t bytes;

		if (!level)
			break;
		if (!type || !strcmp(type, "Instruction") || !size ||
		    probe_parse_i64(level, &lv) < 0 ||
		    config_parse_size(size, &bytes) < 0 || !bytes ||
		    lv <= best_level)
			continue;
		best_level = (int)lv;
		best = i;
		ret->instance = bytes;
		sharing = cpus && host_parse_cpulist(cpus, &nshare) == 0 ?
				  nshare :
				  0;
	}
	if (best >= 0) {
		ret->instances = sharing > 0 && online > sharing ?
					 (online + sharing - 1) / sharing :
					 1;
		ret->bytes = ret->instance * (uint64_t)ret->instances;
		snprintf(ret->source, sizeof(ret->source),
			 MEMBW_CACHE_DIR "/index%d (L%d) x %lld", best,
			 best_level, (long long)ret->instances);
		return;
	}
	sc = sysconf(_SC_LEVEL3_CACHE_SIZE);
	if (sc > 0 && (uint64_t)sc > MEMBW_LLC_REACH_MAX) {
		ret->bytes = ret->instance = MEMBW_LLC_REACH_MAX;
		ret->instances = 1;
		snprintf(ret->source, sizeof(ret->source),
			 "sysconf(_SC_LEVEL3_CACHE_SIZE) %ld, capped at %llu",
			 sc, MEMBW_LLC_REACH_MAX);
		return;
	}
	if (sc > 0) {
		ret->bytes = ret->instance = (uint64_t)sc;
		ret->instances = 1;
		snprintf(ret->source, sizeof(ret->source),
			 "sysconf(_SC_LEVEL3_CACHE_SIZE)");
		return;
	}
	snprintf(ret->source, sizeof(ret->source), "unknown");
}

/* Online vCPUs, no more than this process may run on. */
static unsigned int membw_all_threads(long *ret_online)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;
	long n;

	if (online < 1)
		online = 1;
	*ret_online = online;
	n = online;
	if (sched_getaffinity(0, sizeof(set), &set) == 0 &&
	    CPU_COUNT(&set) < n)
		n = CPU_COUNT(&set);
	if (n > MEMBW_MAX_THREADS)
		n = MEMBW_MAX_THREADS;
	return n < 1 ? 1 : (unsigned int)n;
}

static void membw_skip_all(struct membw_state *st, const char *why)
{
	for (size_t i = 0; i < MEMBW_N; i++)
		if (!bench_result_skipped(st->v[i].res))
			bench_result_skip(st->v[i].res, "%s", why);
}

/* Skips the THP variants when THP is off or MADV_HUGEPAGE is refused. */
static void membw_thp_check(struct membw_state *st, const struct thp_mode *m)
{
	char *probe;
	int r;

	if (!strcmp(m->enabled, "never")) {
		for (size_t i = 0; i < MEMBW_N; i++)
			if (st->v[i].kind->thp)
				bench_result_skip(st->v[i].res,
						  "THP enabled=never");
		return;
	}
	r = kfile_map_aligned(KFILE_PMD_BYTES, &probe);
	if (r == 0) {
		r = sys_madvise_thp(probe, KFILE_PMD_BYTES, true);
		munmap(probe, KFILE_PMD_BYTES);
	}
	if (r < 0)
		for (size_t i = 0; i < MEMBW_N; i++)
			if (st->v[i].kind->thp)
				bench_result_skip(st->v[i].res,
						  "madvise(MADV_HUGEPAGE): %s%s",
						  kfile_errname(r),
						  r == -EINVAL ?
							  " (no THP in this kernel)" :
							  "");
}

static int membw_setup(struct bench_run *run, const struct bench_params *p,
		       void **state)
{
	struct membw_state *st = calloc(1, sizeof(*st));
	unsigned int all;
	struct membw_llc llc;
	struct thp_mode mode;
	uint64_t array;
	long online;
	char why[512], factor[32] = "";

	if (!st)
		return -ENOMEM;
	*state = st;
	all = membw_all_threads(&online);
	membw_llc_read(run, online, &llc);
	thp_mode_read(run, &mode);
	/*
	 * bw_bytes is one array's size, the profile's (or --bw-bytes), on
	 * every host alike: a size raised to pass each host's LLC would make
	 * the same method key mean different sizes, and on a host with a
	 * 0.5-1 GiB LLC break the profile's time budget (the quick profile's
	 * membw took 36 s on a Xeon guest whose sysfs says 480 MiB). Where the
	 * three arrays do not pass the LLC MEMBW_LLC_FACTOR times, part of
	 * each kernel may run from the cache: llc_factor says by how much,
	 * and from_cache says so in words (docs/bench.md, membw).
	 */
	array = p->bw_bytes;
	st->array_len = kfile_round_up(array ? array : KFILE_PMD_BYTES,
				       KFILE_PMD_BYTES);
	if (llc.bytes)
		snprintf(factor, sizeof(factor), "%.2f",
			 3.0 * (double)st->array_len / (double)llc.bytes);
	st->n = st->array_len / sizeof(double);
	for (size_t i = 0; i < MEMBW_N; i++) {
		struct membw_variant *v = &st->v[i];
		struct bench_result *res;

		v->kind = &membw_kinds[i];
		v->threads = v->kind->all ? all : 1;
		v->res = res = bench_result_new(run, MEMBW_NAME, v->kind->name);
		if (!res)
			return -ENOMEM;
		bench_param_str(res, "page_mode", v->kind->label);
		bench_param_i64(res, "threads", v->threads);
		bench_param_i64(res, "cpus_online", online);
		bench_param_i64(res, "bw_bytes", (int64_t)st->array_len);
		if (st->array_len != p->bw_bytes)
			bench_param_i64(res, "bw_bytes_requested",
					(int64_t)p->bw_bytes);
		bench_param_str(res, "bw_bytes_is", "one array (of 3)");
		bench_param_i64(res, "total_bytes", 3 * (int64_t)st->array_len);
		bench_param_i64(res, "llc_bytes", (int64_t)llc.bytes);
		bench_param_str(res, "llc_source", llc.source);
		if (*factor)
			bench_param_str(res, "llc_factor", factor);
		if (llc.bytes && 3 * st->array_len <
					 MEMBW_LLC_FACTOR * llc.bytes)
			bench_param_str(res, "from_cache",
					"partly: the 3 arrays are below 4x the LLC, figures above memory's");
		bench_param_i64(res, "iterations", MEMBW_ITERATIONS);
		bench_param_str(res, "rate",
				"best iteration per kernel (STREAM's)");
		bench_param_str(res, "bytes_counted",
				"arrays moved x bw_bytes: copy, scale 2; add, triad 3; read, write 1; 1 GB = 1e9 bytes");
		bench_param_str(res, "huge_fraction_from",
				"smaps AnonHugePages of the 3 arrays");
		thp_mode_param(res, &mode);
	}
	membw_thp_check(st, &mode);
	if (bench_check_memory(run, 3 * (uint64_t)st->array_len, why,
			       sizeof(why)) < 0)
		membw_skip_all(st, why);
	return 0;
}

/*
 * One variant once: the arrays mapped fresh, advised before the threads'
 * first touch decides their page size, measured, their huge-page coverage
 * read from smaps, unmapped. The window covers the first touch too.
 */
static int membw_measure(struct membw_state *st, struct membw_variant *v)
{
	size_t len = kfile_round_up(3 * st->array_len + 2 * MEMBW_STAGGER,
				    KFILE_PMD_BYTES);
	struct membw_job job = { 0 };
	char *mem;
	int r;

	r = kfile_map_aligned(len, &mem);
	if (r < 0)
		return r;
	r = sys_madvise_thp(mem, len, v->kind->thp);
	if (r < 0 && v->kind->thp)
		goto out; /* setup saw it work: a change since is an error */
	job.a = (double *)mem;
	job.b = (double *)(mem + st->array_len + MEMBW_STAGGER);
	job.c = (double *)(mem + 2 * (st->array_len + MEMBW_STAGGER));
	job.n = st->n;
	job.threads = v->threads;
	job.iterations = MEMBW_ITERATIONS;
	bench_window_begin(v->res);
	r = membw_job_run(&job);
	bench_window_end(v->res);
	if (r < 0)
		goto out;
	for (int k = 0; k < MEMBW_NKERNELS; k++)
		bench_sample(v->res, membw_kernels[k].metric, "GB/s",
			     membw_gbps(job.bytes[k], job.best_s[k]));
	smaps_sample_huge_fraction(v->res, mem, len);
out:
	munmap(mem, len);
	return r;
}

static int membw_run(struct bench_run *run, void *state, unsigned int repeat)
{
	struct membw_state *st = state;

	(void)run;
	/* A B C D on even repeats, D C B A on odd ones: drift cancels */
	for (size_t k = 0; k < MEMBW_N; k++) {
		struct membw_variant *v =
			&st->v[repeat & 1 ? MEMBW_N - 1 - k : k];
		int r;

		if (bench_result_skipped(v->res))
			continue;
		if (bench_interrupted())
			return -EINTR;
		r = membw_measure(st, v);
		if (r < 0)
			return r;
	}
	return 0;
}

static void membw_compare(struct bench_run *run, void *state)
{
	struct membw_state *st = state;

	/* above 1: THP streams faster; all vCPUs stream more than one */
	bench_compare(run, "membw_thp_gain", st->v[3].res, st->v[2].res,
		      "triad_gbps");
	bench_compare(run, "membw_thread_scaling", st->v[2].res, st->v[0].res,
		      "triad_gbps");
}

static void membw_teardown(struct bench_run *run, void *state)
{
	(void)run;
	free(state);
}

/* its 3 arrays */
static void membw_needs(const struct bench_params *p, uint64_t *memory,
			uint64_t *disk)
{
	*memory = 3 * p->bw_bytes;
	*disk = 0;
}

const struct bench_ops bench_membw_ops = {
	.name = MEMBW_NAME,
	.summary = "STREAM copy/scale/add/triad GB/s: 4 KiB vs THP, 1 vs all vCPUs",
	.weight = { 12, 12, 35 },
	.needs = membw_needs,
	.setup = membw_setup,
	.run = membw_run,
	.teardown = membw_teardown,
	.compare = membw_compare,
};
