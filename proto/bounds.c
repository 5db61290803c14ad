/* SPDX-License-Identifier: MIT */
/* The bounds every metric sample must keep (bounds.h). */
#include "bounds.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
	const char *unit;
	double min, max;
	double per_s; /* > 0: a duration, this many units a second */
} units[] = {
	{ "count", 0, HUGE_VAL, 0 },
	{ "fraction", 0, 1, 0 },
	{ "ns", 0, HUGE_VAL, 1e9 },
	{ "us", 0, HUGE_VAL, 1e6 },
	{ "ms", 0, HUGE_VAL, 1e3 },
	/* CPU seconds per 1,000 I/Os: several threads, not one event */
	{ "s", 0, HUGE_VAL, 0 },
	{ "MB/s", 0, BOUNDS_MAX_MBPS, 0 },
	/* an amount of memory or data, 10^6 bytes (writeback's dirty peak) */
	{ "MB", 0, HUGE_VAL, 0 },
	{ "IO/s", 0, BOUNDS_MAX_IOPS, 0 },
	/* hardware counters per load: a load misses the dTLB a few times at
	 * most; a two-dimensional walk is a few dozen memory reads */
	{ "misses/access", 0, BOUNDS_MAX_MISSES_PER_ACCESS, 0 },
	{ "cycles/access", 0, BOUNDS_MAX_CYCLES_PER_ACCESS, 0 },
	{ "tx/s", 0, BOUNDS_MAX_TPS, 0 },
	/* I/Os in flight (io_scaling's knee): an io_uring ring holds at most
	 * 32768 entries */
	{ "depth", 1, 32768, 0 },
	{ "GB/s", 0, BOUNDS_MAX_GBPS, 0 },
};

int bounds_check_metric(const char *metric, const char *unit,
			const double *samples, size_t n, const double *wall_s,
			size_t nwall, char *why, size_t whylen)
{
	size_t u;

	for (u = 0; u < ARRAY_SIZE(units); u++)
		if (!strcmp(units[u].unit, unit))
			break;
	for (size_t k = 0; k < n; k++) {
		double x = samples[k];

		if (!isfinite(x)) {
			snprintf(why, whylen, "%s: sample %zu is %g %s, not a finite number",
				 metric, k, x, unit);
			return -ERANGE;
		}
		if (u == ARRAY_SIZE(units))
			continue;
		if (x < units[u].min || x > units[u].max) {
			snprintf(why, whylen,
				 "%s: sample %zu is %g %s, outside [%g, %g]",
				 metric, k, x, unit, units[u].min,
				 units[u].max);
			return -ERANGE;
		}
		if (units[u].per_s > 0 && k < nwall && wall_s[k] >= 0 &&
		    x / units[u].per_s >
			    wall_s[k] * BOUNDS_WINDOW_SLACK +
				    BOUNDS_WINDOW_SLACK_S) {
			snprintf(why, whylen,
				 "%s: sample %zu is %g %s, longer than its %g s window",
				 metric, k, x, unit, wall_s[k]);
			return -ERANGE;
		}
	}
	return 0;
}
