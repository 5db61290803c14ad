/* SPDX-License-Identifier: MIT */
/*
 * The measured windows of a variant: each repeat's wall time, and the CPU
 * steal and load average over exactly that window, so a noisy repeat is
 * marked (steal above --steal-threshold).
 */
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "array.h"
#include "bench_internal.h"
#include "cleanup.h"
#include "fault.h"

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

void bench_window_begin(struct bench_result *res)
{
	char point[80];

	if (res->run->where) {
		res->run->where->variant = res->slot;
		/* tests crash a benchmark in its N-th window (reliability.md) */
		snprintf(point, sizeof(point), "bench-%s", res->msg->benchmark);
		fault_point(point);
	}
	res->w_times_ok = read_cpu_times(res->run, &res->w_times) == 0;
	res->w_start = bench_now();
}

void bench_window_end(struct bench_result *res)
{
	Fleetbench__Benchmark *b = res->msg;
	Fleetbench__Window *w;
	struct probe_cpu_times now;
	double steal = NAN, wall = bench_now() - res->w_start;
	long long threshold = res->run->params->steal_threshold_pct;

	if (res->w_times_ok && read_cpu_times(res->run, &now) == 0 &&
	    probe_steal_percent(&res->w_times, &now, &steal) < 0)
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
	w->has_noisy = 1;
	w->noisy = isfinite(steal) && steal > (double)threshold;
	b->windows[b->n_windows++] = w;
}
