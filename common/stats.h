/* SPDX-License-Identifier: MIT */
/*
 * Statistics over raw benchmark samples: order statistics, and a 95%
 * confidence interval for a ratio of medians by percentile bootstrap
 * (docs/bench.md says why that method).
 */
#ifndef FLEETBENCH_STATS_H
#define FLEETBENCH_STATS_H

#include <stddef.h>
#include <stdint.h>

struct stats_summary {
	size_t n;
	double min, max, median, mean;
};

/*
 * Quantile q in [0, 1] of x[0..n) by linear interpolation between order
 * statistics (Hyndman-Fan type 7, as R and numpy default). Sorts a copy;
 * NAN when n == 0 or on allocation failure.
 */
double stats_quantile(const double *x, size_t n, double q);

/* Same, on data the caller has already sorted ascending (no copy). */
double stats_quantile_sorted(const double *sorted, size_t n, double q);

double stats_median(const double *x, size_t n);

/* n, min, max, median and mean of x. Returns 0, or -EINVAL for n == 0. */
int stats_summarize(const double *x, size_t n, struct stats_summary *ret);

struct stats_ratio {
	double ratio; /* median(a) / median(b) */
	double lo, hi; /* confidence interval bounds */
	double level; /* e.g. 0.95 */
	unsigned int resamples;
	int paired; /* 1: pairs (a[i], b[i]) were resampled together */
};

/*
 * Ratio of medians median(a)/median(b) with a percentile-bootstrap
 * confidence interval at `level` from `resamples` resamples drawn with a
 * PRNG seeded by `seed` (so a report can be recomputed exactly). When
 * paired is set (na == nb, samples taken interleaved A B A B ...), the
 * pairs are resampled together so drift shared by a pair cancels.
 * Returns 0, -EINVAL (empty input, unequal paired sizes, a median <= 0) or
 * -ENOMEM.
 */
int stats_ratio_ci(const double *a, size_t na, const double *b, size_t nb,
		   int paired, double level, unsigned int resamples,
		   uint64_t seed, struct stats_ratio *ret);

#endif
