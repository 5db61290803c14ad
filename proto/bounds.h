/* SPDX-License-Identifier: MIT */
/*
 * The bounds every metric sample must keep, written once for both sides: the
 * agent fails a variant whose figure breaks one (agent/bench/bench.c), and the
 * collector's codec refuses a report that carries one (proto/codec.c), so a
 * figure that cannot be true never reaches the fleet table.
 *
 * A sample must be a finite number inside its unit's range, and a duration
 * of one event (units ns, us, ms) cannot be longer than the measured window
 * it was taken in: one I/O's latency longer than the 0.5 s the variant ran
 * is a clock read the wrong way round, not a slow disk. Rates have physical
 * ceilings no host reaches (10^8 IO/s, 10^6 MB/s per variant).
 */
#ifndef FLEETBENCH_BOUNDS_H
#define FLEETBENCH_BOUNDS_H

#include <stddef.h>

/* How far a duration may pass its window: the window is read around the
 * work, so only clock granularity separates them. */
#define BOUNDS_WINDOW_SLACK 1.01
#define BOUNDS_WINDOW_SLACK_S 0.001

#define BOUNDS_MAX_IOPS 1e8
#define BOUNDS_MAX_MBPS 1e6
#define BOUNDS_MAX_MISSES_PER_ACCESS 1e3
#define BOUNDS_MAX_CYCLES_PER_ACCESS 1e7
#define BOUNDS_MAX_TPS 1e8 /* tx/s: transactions a second */
#define BOUNDS_MAX_GBPS 1e5 /* memory bandwidth of one variant */

/*
 * Checks the samples of one metric. wall_s[k] is the wall time in seconds of
 * the window sample k was measured in (a NaN or negative one, or k >= nwall,
 * is not known and bounds nothing). Returns 0, or -ERANGE with why naming
 * the metric, the sample, its value and the bound it breaks, e.g.
 * "lat_p99_us: sample 1 is 1.84467e+16 us, longer than its 0.5 s window".
 * An unknown unit only has to be finite.
 */
int bounds_check_metric(const char *metric, const char *unit,
			const double *samples, size_t n, const double *wall_s,
			size_t nwall, char *why, size_t whylen);

#endif
