/* SPDX-License-Identifier: MIT */
/*
 * What the load programs (bench/ingest, tests/reliability/load/swarm)
 * measure of processes, from /proc, and the order statistics of their
 * latencies.
 */
#ifndef FLEETBENCH_BENCH_MEASURE_H
#define FLEETBENCH_BENCH_MEASURE_H

#include <stddef.h>
#include <sys/types.h>

/* VmHWM and VmRSS of pid in kB. */
int proc_mem(pid_t pid, long *ret_hwm_kb, long *ret_rss_kb);

/* Resets pid's VmHWM to its VmRSS (proc(5), clear_refs "5"). */
int proc_reset_hwm(pid_t pid);

/* CPU time (user + system) pid has used, in ms, or -1. */
double proc_cpu_ms(pid_t pid);

/* CPU time this process has used, in ms. */
double self_cpu_ms(void);

/* qsort() comparison of doubles. */
int cmp_double(const void *a, const void *b);

/* Nearest rank: the smallest value with at least p of them at or below. */
double percentile(const double *sorted, size_t n, double p);

#endif
