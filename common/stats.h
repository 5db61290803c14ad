/* SPDX-License-Identifier: MIT */
/*
 * Statistics over raw benchmark samples: order statistics, and a 95%
 * confidence interval for a ratio of medians by percentile bootstrap
 * (docs/bench.md says why that method).
 */
#ifndef FLEETBENCH_STATS_H
#define FLEETBENCH_STATS_H

#include <stdbool.h>
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

/*
 * The half-width of the interval [lo, hi] relative to ratio: (hi - lo) /
 * (2 ratio). NAN when any is not finite or ratio <= 0.
 */
double stats_relative_half_width(double ratio, double lo, double hi);

/*
 * The stop rule of adaptive repeats (docs/bench.md, "Repeats until the
 * interval is tight"). A benchmark is measured in rounds (one repeat of
 * every variant, interleaved); before each further round the driver asks
 * stats_adaptive_next() with the rounds done, the seconds they took and
 * for how many rounds in a row (this one included) every interval,
 * computed from all rounds so far exactly as the report's, was within the
 * target. It stops at the second such round in a row, never before
 * min_rounds, and looks at the widths only, never at where the ratios lie
 * (a fixed-width sequential interval, Chow and Robbins 1965). Stopping at
 * the first narrow interval would favour rounds whose spread happened to
 * be small: in tests/unit/test_adaptive.c's simulation the 95% interval
 * then covered the true ratio 93% of the time; asking twice keeps it at
 * or above 95%, as with the rounds fixed in advance, for 2-3 more rounds.
 */
struct stats_adaptive {
	long long min_rounds; /* always measured: the fixed `repeats` */
	long long max_rounds; /* never more */
	double budget_s; /* the rounds' time: no round that would pass it */
};

enum stats_adaptive_step {
	STATS_ADAPTIVE_MORE, /* measure another round */
	STATS_ADAPTIVE_TIGHT, /* every interval within its target */
	STATS_ADAPTIVE_BUDGET, /* another round would pass budget_s */
	STATS_ADAPTIVE_MAX, /* max_rounds measured */
};

enum stats_adaptive_step stats_adaptive_next(const struct stats_adaptive *a,
					     long long rounds, double spent_s,
					     int tight_rounds);

/* Rounds in a row with every interval within the target that stop. */
#define STATS_ADAPTIVE_CONFIRM 2

/* "tight", "budget", "max" or "more". */
const char *stats_adaptive_name(enum stats_adaptive_step s);

#endif
