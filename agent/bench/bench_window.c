/* SPDX-License-Identifier: MIT */
/*
 * The measured windows of a variant: each repeat's wall time, and the CPU
 * steal, pressure stall shares and load average over exactly that window,
 * so a noisy repeat is marked, with the reason (docs/bench.md, "Trust
 * markers: noisy windows").
 */
#include "bench.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "bench_internal.h"
#include "cleanup.h"
#include "fault.h"
#include "file.h"

static int read_cpu_times(struct bench_run *run, struct probe_cpu_times *ret)
{
	_cleanup_free_ char *text = NULL;
	ssize_t n = bench_read_file(run, "/proc/stat", &text);

	if (n < 0)
		return (int)n;
	return probe_stat_parse(text, ret);
}

static double read_loadavg1(struct bench_run *run)
{
	char buf[128];
	double v;

	if (probe_read_line(&run->pctx, "/proc/loadavg", buf, sizeof(buf)) < 0 ||
	    sscanf(buf, "%lf", &v) != 1)
		return NAN;
	return v;
}

/* The totals of each /proc/pressure file below the root; ok[i] false for
 * one that cannot be read or parsed. */
static void read_psi(struct bench_run *run,
		     struct probe_psi_totals t[PSI_NRES], bool ok[PSI_NRES])
{
	for (int i = 0; i < PSI_NRES; i++) {
		_cleanup_free_ char *text = NULL;
		char path[64];

		snprintf(path, sizeof(path), PROBE_PSI_DIR "/%s",
			 probe_psi_resource((enum probe_psi_res)i));
		ok[i] = bench_read_file(run, path, &text) >= 0 &&
			probe_psi_parse(text, &t[i]) == 0;
	}
}

/* "0" or "0,1": the vCPUs a and b (-1: unknown), sorted, each once; NULL
 * when neither is known or memory runs out. */
static char *cpus_text(int a, int b)
{
	char buf[32];

	if (a < 0 && b < 0)
		return NULL;
	if (a < 0 || b < 0 || a == b)
		snprintf(buf, sizeof(buf), "%d", a < 0 ? b : a);
	else
		snprintf(buf, sizeof(buf), "%d,%d", a < b ? a : b,
			 a < b ? b : a);
	return strdup(buf);
}

/* Appends "; " (unless first) and the formatted clause to buf. */
static void __attribute__((format(printf, 3, 4)))
reason_add(char *buf, size_t size, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	if (len && len + 2 < size) {
		memcpy(buf + len, "; ", 3);
		len += 2;
	}
	va_start(ap, fmt);
	vsnprintf(buf + len, size - len, fmt, ap);
	va_end(ap);
}

/*
 * Each thread of this process (not the probe root's: /proc/self/task) with
 * its time on a CPU and waiting for one, from its schedstat ("run wait
 * slices", ns). The number read, or -errno (-E2BIG: more than max).
 */
static int read_own(struct bench_thread_time *ret, int max)
{
	_cleanup_closedir_ DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		_cleanup_free_ char *text = NULL;
		unsigned long long run, rq;
		char path[64];
		int64_t tid;

		if (probe_parse_i64(de->d_name, &tid) < 0 || tid < 1)
			continue;
		/* more threads than tracked: the own share is not known */
		if (n == max)
			return -E2BIG;
		snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat",
			 de->d_name);
		/* a thread that has just ended is skipped */
		if (read_full_file(path, 4096, &text) < 0 ||
		    sscanf(text, "%llu %llu", &run, &rq) != 2)
			continue;
		ret[n++] = (struct bench_thread_time){ (pid_t)tid, run, rq };
	}
	return n;
}

void bench_window_begin(struct bench_result *res)
{
	char point[80];

	if (res->run->where) {
		res->run->where->variant = res->slot;
		/* tests crash a benchmark in its N-th window (reliability.md) */
		snprintf(point, sizeof(point), "bench-%s", res->msg->benchmark);
		fault_point(point);
	}
	res->w_cpu = sched_getcpu();
	res->w_psi_start = bench_now();
	res->w_nown = read_own(res->w_own, BENCH_OWN_THREADS);
	read_psi(res->run, res->w_psi, res->w_psi_ok);
	res->w_times_ok = read_cpu_times(res->run, &res->w_times) == 0;
	res->w_start = bench_now();
}

/* What the window's end read, for the pressure shares and the rule. */
struct window_end {
	struct probe_cpu_times times;
	bool times_ok;
	struct probe_psi_totals psi[PSI_NRES];
	bool psi_ok[PSI_NRES];
	struct bench_thread_time own[BENCH_OWN_THREADS];
	int nown;
	double span; /* seconds from before the first reads to after these */
};

/*
 * The window's pressure shares: the increase of each total over the span,
 * which holds every read (so the kernel's interval lies inside it: at most
 * 100%, docs/bench.md).
 */
static void window_psi(struct bench_result *res, const struct window_end *e,
		       Fleetbench__Window *w)
{
	struct {
		protobuf_c_boolean *has;
		double *v;
	} some[PSI_NRES] = {
		{ &w->has_psi_cpu_some_pct, &w->psi_cpu_some_pct },
		{ &w->has_psi_io_some_pct, &w->psi_io_some_pct },
		{ &w->has_psi_memory_some_pct, &w->psi_memory_some_pct },
	}, full[PSI_NRES] = {
		{ &w->has_psi_cpu_full_pct, &w->psi_cpu_full_pct },
		{ &w->has_psi_io_full_pct, &w->psi_io_full_pct },
		{ &w->has_psi_memory_full_pct, &w->psi_memory_full_pct },
	};

	for (int i = 0; i < PSI_NRES; i++) {
		double pct;

		if (!res->w_psi_ok[i] || !e->psi_ok[i])
			continue;
		if (probe_psi_percent(res->w_psi[i].some_us, e->psi[i].some_us,
				      e->span, &pct) == 0) {
			*some[i].has = 1;
			*some[i].v = pct;
		}
		if (res->w_psi[i].has_full && e->psi[i].has_full &&
		    probe_psi_percent(res->w_psi[i].full_us, e->psi[i].full_us,
				      e->span, &pct) == 0) {
			*full[i].has = 1;
			*full[i].v = pct;
		}
	}
}

/* The vCPUs that were not idle over the window, on average: the online
 * vCPUs times the share of all CPU time (from /proc/stat) not idle.
 * Time in I/O wait counts as not idle, as PSI counts it. NaN: unknown. */
static double nonidle_cpus(const struct probe_cpu_times *a,
			   const struct probe_cpu_times *b)
{
	const uint64_t av[] = { a->user, a->nice, a->system, a->idle,
				a->iowait, a->irq, a->softirq, a->steal };
	const uint64_t bv[] = { b->user, b->nice, b->system, b->idle,
				b->iowait, b->irq, b->softirq, b->steal };
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t total = 0;

	for (size_t i = 0; i < ARRAY_SIZE(av); i++) {
		if (bv[i] < av[i])
			return NAN;
		total += bv[i] - av[i];
	}
	if (n < 1 || total == 0)
		return NAN;
	return (double)n * (double)(total - (b->idle - a->idle)) /
	       (double)total;
}

/*
 * The share of the span each thread of the process was blocked (neither on
 * a CPU nor waiting for one), summed: a thread seen at only one end counts
 * whole. An upper bound of the vCPUs' worth of the benchmark's own I/O
 * stalls. NaN when the threads could not be listed.
 */
static double own_blocked(const struct bench_result *res,
			  const struct window_end *e)
{
	double ns = e->span * 1e9, sum = 0;

	if (res->w_nown < 0 || e->nown < 0 || !(ns > 0))
		return NAN;
	for (int i = 0; i < res->w_nown; i++) {
		const struct bench_thread_time *a = &res->w_own[i], *b = NULL;
		double blocked = 1;

		for (int j = 0; j < e->nown && !b; j++)
			if (e->own[j].tid == a->tid)
				b = &e->own[j];
		if (b && b->run_ns >= a->run_ns && b->rq_ns >= a->rq_ns)
			blocked = 1.0 - (double)((b->run_ns - a->run_ns) +
						 (b->rq_ns - a->rq_ns)) / ns;
		sum += blocked < 0 ? 0 : blocked;
	}
	for (int j = 0; j < e->nown; j++) {
		bool seen = false;

		for (int i = 0; i < res->w_nown && !seen; i++)
			seen = res->w_own[i].tid == e->own[j].tid;
		if (!seen)
			sum += 1;
	}
	return sum;
}

/*
 * I/O pressure beyond what the benchmark's own waits explain, in percent
 * of one vCPU over the window (docs/bench.md): PSI averages the stall over
 * the vCPUs that were not idle, so io some times their number is the
 * vCPUs' worth of stalled time; the benchmark's own part of it is at most
 * own_blocked(). NaN when a figure is missing.
 */
static double io_excess(const struct bench_result *res,
			const struct window_end *e, const Fleetbench__Window *w)
{
	double cpus, own;

	if (!w->has_psi_io_some_pct || !res->w_times_ok || !e->times_ok)
		return NAN;
	cpus = nonidle_cpus(&res->w_times, &e->times);
	own = own_blocked(res, e);
	if (!isfinite(cpus) || !isfinite(own))
		return NAN;
	return w->psi_io_some_pct * cpus - 100.0 * own;
}

/*
 * The noisy rule (docs/bench.md): steal above its threshold, CPU pressure
 * (some) above its threshold, or, in an I/O benchmark, I/O pressure beyond
 * the benchmark's own waits above its threshold. Sets w->noisy and, when
 * noisy, w->noisy_reason listing every threshold passed.
 */
static void window_noisy(struct bench_result *res, const struct window_end *e,
			 Fleetbench__Window *w)
{
	const struct bench_params *p = res->run->params;
	const struct bench_ops *ops = res->run->ops;
	char why[256] = "";

	if (w->has_steal_pct && w->steal_pct > (double)p->steal_threshold_pct)
		reason_add(why, sizeof(why), "steal %.1f%% > %lld%%",
			   w->steal_pct, p->steal_threshold_pct);
	if (w->has_psi_cpu_some_pct &&
	    w->psi_cpu_some_pct > (double)p->psi_cpu_threshold_pct)
		reason_add(why, sizeof(why), "cpu pressure %.1f%% > %lld%%",
			   w->psi_cpu_some_pct, p->psi_cpu_threshold_pct);
	if (ops && ops->io) {
		double io = io_excess(res, e, w);
		long long t = p->psi_io_threshold_pct > ops->io_threshold_min_pct ?
				      p->psi_io_threshold_pct :
				      ops->io_threshold_min_pct;

		if (isfinite(io) && io > (double)t)
			reason_add(why, sizeof(why),
				   "io pressure beyond own waits %.1f%% > %lld%%",
				   io, t);
	}
	w->has_noisy = 1;
	w->noisy = why[0] != '\0';
	if (w->noisy)
		w->noisy_reason = strdup(why);
}

void bench_window_end(struct bench_result *res)
{
	Fleetbench__Benchmark *b = res->msg;
	Fleetbench__Window *w;
	struct window_end e;
	double steal = NAN, wall = bench_now() - res->w_start;
	int cpu = sched_getcpu();

	e.times_ok = read_cpu_times(res->run, &e.times) == 0;
	read_psi(res->run, e.psi, e.psi_ok);
	e.nown = read_own(e.own, BENCH_OWN_THREADS);
	e.span = bench_now() - res->w_psi_start;
	if (res->w_times_ok && e.times_ok &&
	    probe_steal_percent(&res->w_times, &e.times, &steal) < 0)
		steal = NAN;
	if (ARRAY_RESERVE(b->windows, res->cap_windows, b->n_windows + 1) < 0)
		return;
	w = malloc(sizeof(*w));
	if (!w)
		return;
	fleetbench__window__init(w);
	bench_set_double(&w->has_steal_pct, &w->steal_pct, steal);
	bench_set_double(&w->has_loadavg1, &w->loadavg1, read_loadavg1(res->run));
	bench_set_double(&w->has_wall_s, &w->wall_s, wall);
	window_psi(res, &e, w);
	w->cpus = cpus_text(res->w_cpu, cpu);
	window_noisy(res, &e, w);
	b->windows[b->n_windows++] = w;
}
