/* SPDX-License-Identifier: MIT */
/* CPU steal from /proc/stat: parsing the "cpu " line and the share math. */
#ifndef FLEETBENCH_PROBE_STAT_H
#define FLEETBENCH_PROBE_STAT_H

#include <stdint.h>

/* The first eight fields of the aggregate "cpu " line, in USER_HZ ticks.
 * guest and guest_nice are already counted inside user and nice. */
struct probe_cpu_times {
	uint64_t user, nice, system, idle, iowait, irq, softirq, steal;
};

/*
 * Finds the aggregate "cpu " line of a /proc/stat text and parses its first
 * eight fields (more may follow). Returns 0, or -EBADMSG when the line is
 * missing, has fewer than eight fields or a field is not a decimal number.
 */
int probe_stat_parse(const char *text, struct probe_cpu_times *ret);

/*
 * The steal share of all CPU time between samples a and b, in percent,
 * rounded to two decimals. For the share since boot pass an all-zero a.
 * Returns 0, -ENODATA when no CPU time elapsed (the totals are equal), or
 * -ERANGE when a counter went backwards.
 */
int probe_steal_percent(const struct probe_cpu_times *a,
			const struct probe_cpu_times *b, double *ret);

#endif
