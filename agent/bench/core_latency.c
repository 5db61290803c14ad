/* SPDX-License-Identifier: MIT */
/* core_latency: one cache line bounced between two pinned vCPUs, per pair. */
#include "core_latency.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_modules.h"
#include "cleanup.h"
#include "probe_topology.h"

#define CL_NAME "core_latency"
/*
 * Round trips per pair and repeat. One costs about 440 ns between the two
 * vCPUs of a 2-vCPU KVM guest (EPYC host): 200,000 take 90 ms there, about
 * 20 ms between two cores of one socket on bare metal (~100 ns), 60 ms
 * across sockets (~300 ns). A constant, not a profile parameter: the
 * figure is a latency, which more round trips only average better.
 */
#define CL_ROUND_TRIPS 200000
/* Untimed round trips first: both threads spinning, the line warm. */
#define CL_WARMUP 2000
/*
 * A pair whose round trips take longer (two vCPUs time-sliced on one
 * host CPU take a host scheduler tick each) stops after this long and is
 * measured over the round trips it made.
 */
#define CL_PAIR_LIMIT_S 1.0
/* How often the measuring thread looks at the clock and the stop flag. */
#define CL_CHECK_EVERY 1024
#define CL_STOP UINT64_MAX
#define CL_ONLINE "/sys/devices/system/cpu/online"

/* The bounced line: 64-byte aligned, alone in its pair of lines (the
 * adjacent-line prefetcher fetches both). */
struct cl_line {
	_Atomic uint64_t seq;
} __attribute__((aligned(128)));

enum { CL_WAIT, CL_GO, CL_ABORT };

struct cl_pair {
	int a, b;
	int smt; /* 1: SMT siblings, 0: not, -1: not known */
	struct bench_result *res;
};

struct cl_thread {
	struct cl_state *st;
	int cpu;
	bool ping; /* measures: writes odd, waits for even */
	int pin_err;
	uint64_t done; /* timed round trips made */
	double elapsed; /* their seconds */
	bool stopped; /* interrupted */
	pthread_t tid;
} __attribute__((aligned(128)));

struct cl_state {
	struct cl_line *line;
	struct cl_thread *t; /* two */
	atomic_uint ready;
	atomic_int go;
	struct cl_pair *pairs;
	size_t n;
	long online, usable;
	bool capped;
};

static void cl_sort_pairs(struct core_latency_pair *p, size_t n)
{
	/* insertion sort: at most 64 pairs */
	for (size_t i = 1; i < n; i++) {
		struct core_latency_pair x = p[i];
		size_t j = i;

		while (j && (p[j - 1].a > x.a ||
			     (p[j - 1].a == x.a && p[j - 1].b > x.b))) {
			p[j] = p[j - 1];
			j--;
		}
		p[j] = x;
	}
}

size_t core_latency_plan(const int *cpus, const int *core, size_t n,
			 size_t max, struct core_latency_pair *ret)
{
	size_t count = 0, nsib = 0, keep, budget, others;

	if (n < 2 || !max)
		return 0;
	if (n * (n - 1) / 2 <= max) {
		for (size_t i = 0; i < n; i++)
			for (size_t j = i + 1; j < n; j++)
				ret[count++] = (struct core_latency_pair){
					cpus[i], cpus[j]
				};
		return count;
	}

	/* the sibling pairs: the first two usable vCPUs of each known core
	 * but the first vCPU's (its pair is among the first vCPU's) */
	for (size_t i = 1; i < n; i++) {
		bool first = core[i] >= 0 && core[i] != core[0];

		for (size_t k = 0; first && k < i; k++)
			first = core[k] != core[i];
		for (size_t j = i + 1; first && j < n; j++)
			if (core[j] == core[i]) {
				nsib++;
				break;
			}
	}
	keep = nsib < max / 4 ? nsib : max / 4;
	/* keep of the nsib, spread evenly: sibling pair s is kept when it
	 * is the first at or past k * nsib / keep for some k */
	for (size_t i = 1, s = 0, k = 0; i < n && k < keep; i++) {
		bool first = core[i] >= 0 && core[i] != core[0];

		for (size_t m = 0; first && m < i; m++)
			first = core[m] != core[i];
		for (size_t j = i + 1; first && j < n; j++) {
			if (core[j] != core[i])
				continue;
			if (s == k * nsib / keep) {
				ret[count++] = (struct core_latency_pair){
					cpus[i], cpus[j]
				};
				k++;
			}
			s++;
			break;
		}
	}

	/* the first vCPU with the others, from the second to the last */
	budget = max - count;
	others = n - 1;
	if (others <= budget) {
		for (size_t j = 1; j < n; j++)
			ret[count++] = (struct core_latency_pair){ cpus[0],
								   cpus[j] };
	} else if (budget == 1) {
		ret[count++] = (struct core_latency_pair){ cpus[0], cpus[1] };
	} else {
		for (size_t k = 0; k < budget; k++)
			ret[count++] = (struct core_latency_pair){
				cpus[0],
				cpus[1 + k * (others - 1) / (budget - 1)]
			};
	}
	cl_sort_pairs(ret, count);
	return count;
}

/* The first vCPU of cpu's thread_siblings_list: its core; -1 unknown. */
static int cl_core_of(struct bench_run *run, int cpu)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_free_ int *sib = NULL;
	char path[128];
	size_t n;

	snprintf(path, sizeof(path),
		 "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list",
		 cpu);
	if (bench_read_file(run, path, &text) < 0 ||
	    topology_cpulist_parse(text, &sib, &n) < 0 || !n)
		return -1;
	return sib[0];
}

/*
 * The usable vCPUs: online (/sys/devices/system/cpu/online, when it can be
 * read) and in this process's affinity mask, ascending, in *ret; their
 * count in *ret_n.
 */
static int cl_usable(struct bench_run *run, struct cl_state *st, int **ret,
		     size_t *ret_n)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_free_ int *online = NULL, *cpus = NULL;
	cpu_set_t *set = NULL;
	size_t size = 0, n_online = 0, n = 0;
	int r;

	st->online = sysconf(_SC_NPROCESSORS_ONLN);
	if (bench_read_file(run, CL_ONLINE, &text) >= 0 &&
	    topology_cpulist_parse(text, &online, &n_online) == 0 && n_online)
		st->online = (long)n_online;
	else
		online = NULL;
	r = bench_affinity(&set, &size);
	if (r < 0)
		return r;
	cpus = calloc((size_t)CPU_COUNT_S(size, set) + 1, sizeof(*cpus));
	if (!cpus) {
		CPU_FREE(set);
		return -ENOMEM;
	}
	/* both ascending: one pass over each */
	for (size_t c = 0, i = 0; c < size * 8; c++) {
		if (!CPU_ISSET_S(c, size, set))
			continue;
		while (online && i < n_online && online[i] < (int)c)
			i++;
		if (!online || (i < n_online && online[i] == (int)c))
			cpus[n++] = (int)c;
	}
	CPU_FREE(set);
	*ret = TAKE_PTR(cpus);
	*ret_n = n;
	return 0;
}

static void cl_params(struct cl_state *st, struct cl_pair *p)
{
	bench_param_i64(p->res, "cpu_a", p->a);
	bench_param_i64(p->res, "cpu_b", p->b);
	if (p->smt >= 0)
		bench_param_i64(p->res, "smt_siblings", p->smt);
	bench_param_i64(p->res, "round_trips", CL_ROUND_TRIPS);
	bench_param_i64(p->res, "cpus_online", st->online);
	bench_param_i64(p->res, "cpus_usable", st->usable);
	bench_param_str(p->res, "pairs",
			st->capped ? "capped: the first vCPU with others, "
				     "and SMT sibling pairs" :
				     "all");
}

static int cl_setup(struct bench_run *run, const struct bench_params *p,
		    void **state)
{
	_cleanup_free_ int *cpus = NULL, *core = NULL;
	struct core_latency_pair plan[CORE_LATENCY_MAX_PAIRS];
	struct cl_state *st;
	size_t n = 0;
	void *mem;
	int r;

	(void)p;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	*state = st;
	r = cl_usable(run, st, &cpus, &n);
	if (r < 0)
		return r;
	st->usable = (long)n;
	if (n < 2) {
		struct bench_result *res;
		char name[32];

		/* the one variant there is says why there is no other */
		snprintf(name, sizeof(name), "cpu%d", n ? cpus[0] : 0);
		res = bench_result_new(run, CL_NAME, name);
		if (!res)
			return -ENOMEM;
		bench_param_i64(res, "cpus_online", st->online);
		bench_param_i64(res, "cpus_usable", st->usable);
		bench_result_skip(res, "one vCPU: no pair");
		return 0;
	}
	core = calloc(n, sizeof(*core));
	if (!core)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		core[i] = cl_core_of(run, cpus[i]);
	st->n = core_latency_plan(cpus, core, n, CORE_LATENCY_MAX_PAIRS, plan);
	st->capped = n * (n - 1) / 2 > st->n;
	st->pairs = calloc(st->n, sizeof(*st->pairs));
	if (!st->pairs)
		return -ENOMEM;
	for (size_t k = 0; k < st->n; k++) {
		struct cl_pair *cp = &st->pairs[k];
		int ca = -1, cb = -1;
		char name[64];

		for (size_t i = 0; i < n; i++) {
			if (cpus[i] == plan[k].a)
				ca = core[i];
			if (cpus[i] == plan[k].b)
				cb = core[i];
		}
		cp->a = plan[k].a;
		cp->b = plan[k].b;
		cp->smt = ca < 0 || cb < 0 ? -1 : ca == cb;
		snprintf(name, sizeof(name), "cpu%d-cpu%d", cp->a, cp->b);
		cp->res = bench_result_new(run, CL_NAME, name);
		if (!cp->res)
			return -ENOMEM;
		cl_params(st, cp);
	}
	r = posix_memalign(&mem, 128, sizeof(*st->line));
	if (r)
		return -r;
	st->line = mem;
	r = posix_memalign(&mem, 128, 2 * sizeof(*st->t));
	if (r)
		return -r;
	st->t = mem;
	return 0;
}

static void cl_teardown(struct bench_run *run, void *state)
{
	struct cl_state *st = state;

	(void)run;
	if (!st)
		return;
	free(st->line);
	free(st->t);
	free(st->pairs);
	free(st);
}

static int cl_pin(int cpu)
{
	size_t size = CPU_ALLOC_SIZE(cpu + 1);
	cpu_set_t *set = CPU_ALLOC(cpu + 1);
	int e;

	if (!set)
		return ENOMEM;
	CPU_ZERO_S(size, set);
	CPU_SET_S((size_t)cpu, size, set);
	e = pthread_setaffinity_np(pthread_self(), size, set);
	CPU_FREE(set);
	return e;
}

/*
 * The ping-pong. The pinging thread writes 2k+1 and waits for the reply
 * 2k+2, which the other thread writes when it saw 2k+1: each round trip
 * moves the line to the other vCPU's cache and back (release stores,
 * acquire loads; no pause in the spin, which would add its own latency).
 * The pinging thread times the round trips after the warm-up, looks at the
 * stop flag and the clock every CL_CHECK_EVERY of them, and on a stop
 * writes CL_STOP, which ends the other thread's wait.
 */
static void cl_ping(struct cl_thread *t, _Atomic uint64_t *seq)
{
	const uint64_t total = CL_WARMUP + CL_ROUND_TRIPS;
	double t0 = 0, now;

	for (uint64_t k = 0; k < total; k++) {
		if (k == CL_WARMUP)
			t0 = bench_now();
		if (k % CL_CHECK_EVERY == 0 && k > CL_WARMUP) {
			if (bench_interrupted()) {
				t->stopped = true;
				break;
			}
			now = bench_now();
			if (now - t0 > CL_PAIR_LIMIT_S) {
				t->done = k - CL_WARMUP;
				t->elapsed = now - t0;
				atomic_store_explicit(seq, CL_STOP,
						      memory_order_release);
				return;
			}
		}
		atomic_store_explicit(seq, 2 * k + 1, memory_order_release);
		while (atomic_load_explicit(seq, memory_order_acquire) !=
		       2 * k + 2)
			;
	}
	now = bench_now();
	if (!t->stopped) {
		t->done = CL_ROUND_TRIPS;
		t->elapsed = now - t0;
	}
	atomic_store_explicit(seq, CL_STOP, memory_order_release);
}

static void cl_pong(_Atomic uint64_t *seq)
{
	for (uint64_t k = 0;; k++) {
		uint64_t want = 2 * k + 1, v;

		while ((v = atomic_load_explicit(seq, memory_order_acquire)) !=
		       want)
			if (v == CL_STOP)
				return;
		atomic_store_explicit(seq, want + 1, memory_order_release);
	}
}

static void *cl_thread_main(void *arg)
{
	struct cl_thread *t = arg;
	struct cl_state *st = t->st;
	int go;

	t->pin_err = cl_pin(t->cpu);
	atomic_fetch_add_explicit(&st->ready, 1, memory_order_release);
	while ((go = atomic_load_explicit(&st->go, memory_order_acquire)) ==
	       CL_WAIT)
		sched_yield();
	if (go != CL_GO)
		return NULL;
	if (t->ping)
		cl_ping(t, &st->line->seq);
	else
		cl_pong(&st->line->seq);
	return NULL;
}

/* One pair: both threads pinned and waiting, then the round trips. */
static int cl_measure(struct bench_run *run, struct cl_state *st,
		      const struct cl_pair *p, double *ret_ns)
{
	unsigned int created = 0;
	int r = 0;

	atomic_store(&st->line->seq, 0);
	atomic_store(&st->ready, 0);
	atomic_store(&st->go, CL_WAIT);
	for (unsigned int i = 0; i < 2; i++) {
		st->t[i] = (struct cl_thread){
			.st = st,
			.cpu = i ? p->b : p->a,
			.ping = i == 0,
		};
		r = -pthread_create(&st->t[i].tid, NULL, cl_thread_main,
				    &st->t[i]);
		if (r < 0)
			goto out;
		created++;
	}
	while (atomic_load(&st->ready) < 2) {
		if (bench_interrupted()) {
			r = -EINTR;
			goto out;
		}
		sched_yield();
	}
	for (unsigned int i = 0; i < 2; i++) {
		if (st->t[i].pin_err) {
			r = -st->t[i].pin_err;
			bench_fail_text(run, "pinning a thread to cpu%d: %s",
					st->t[i].cpu, strerror(-r));
			goto out;
		}
	}
	atomic_store_explicit(&st->go, CL_GO, memory_order_release);
out:
	if (r < 0)
		atomic_store(&st->go, CL_ABORT);
	for (unsigned int i = 0; i < created; i++) {
		int e = pthread_join(st->t[i].tid, NULL);

		if (e && r == 0)
			r = -e;
	}
	if (r < 0)
		return r;
	if (st->t[0].stopped || bench_interrupted())
		return -EINTR;
	if (!st->t[0].done)
		return -EIO;
	*ret_ns = st->t[0].elapsed * 1e9 / (double)st->t[0].done;
	return 0;
}

/*
 * Every pair once, each in its own window; repeat r starts at pair r (mod
 * the pairs) and goes round, so each pair is measured at every place of
 * the order in turn and drift does not always fall on the same pairs.
 */
static int cl_run(struct bench_run *run, void *state, unsigned int repeat)
{
	struct cl_state *st = state;

	for (size_t k = 0; k < st->n; k++) {
		struct cl_pair *p = &st->pairs[(repeat + k) % st->n];
		double ns = 0;
		int r;

		if (bench_interrupted())
			return -EINTR;
		bench_window_begin(p->res);
		r = cl_measure(run, st, p, &ns);
		bench_window_end(p->res);
		if (r < 0)
			return r;
		bench_sample(p->res, "round_trip_ns", "ns", ns);
	}
	return 0;
}

const struct bench_ops bench_core_latency_ops = {
	.name = CL_NAME,
	.summary = "cache-line round trip between each pair of vCPUs",
	.weight = { 2, 2, 2 },
	.setup = cl_setup,
	.run = cl_run,
	.teardown = cl_teardown,
	.compare = NULL,
};
