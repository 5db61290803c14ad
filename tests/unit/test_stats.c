/* SPDX-License-Identifier: MIT */
/* Statistics: known inputs give known quantiles, medians and intervals. */
#include <errno.h>
#include <math.h>

#include "check.h"
#include "rand.h"
#include "stats.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

int main(void)
{
	const double odd[] = { 5, 1, 4, 2, 3 };
	const double even[] = { 10, 40, 20, 30 };
	const double one[] = { 7 };
	struct stats_summary s;
	struct stats_ratio r, r2;
	double a[9], b[9], same[9];
	struct rng rng;
	uint64_t hist[10] = { 0 };

	/* quantiles, type 7 */
	CHECK(NEAR(stats_median(odd, 5), 3));
	CHECK(NEAR(stats_median(even, 4), 25));
	CHECK(NEAR(stats_median(one, 1), 7));
	CHECK(NEAR(stats_quantile(odd, 5, 0), 1));
	CHECK(NEAR(stats_quantile(odd, 5, 1), 5));
	CHECK(NEAR(stats_quantile(odd, 5, 0.25), 2));
	CHECK(NEAR(stats_quantile(even, 4, 0.9), 37)); /* 30 + 0.7 * 10 */
	CHECK(isnan(stats_median(odd, 0)));

	CHECK_OK(stats_summarize(even, 4, &s));
	CHECK_EQ_INT(s.n, 4);
	CHECK(NEAR(s.min, 10) && NEAR(s.max, 40) && NEAR(s.mean, 25));
	CHECK(NEAR(s.median, 25));
	CHECK_EQ_INT(stats_summarize(even, 0, &s), -EINVAL);

	/* a constant ratio has a zero-width interval at that ratio */
	for (int i = 0; i < 9; i++) {
		b[i] = 100 + i * 3;
		a[i] = 2 * b[i];
		same[i] = 50;
	}
	CHECK_OK(stats_ratio_ci(a, 9, b, 9, 1, 0.95, 2000, 1, &r));
	CHECK(NEAR(r.ratio, 2) && NEAR(r.lo, 2) && NEAR(r.hi, 2));
	CHECK_EQ_INT(r.paired, 1);

	/* unpaired: the interval holds the point estimate and is ordered */
	CHECK_OK(stats_ratio_ci(a, 9, same, 9, 0, 0.95, 2000, 1, &r));
	CHECK(NEAR(r.ratio, 2 * 112 / 50.0));
	CHECK(r.lo <= r.ratio && r.ratio <= r.hi && r.lo < r.hi);
	/* bounds come from the resampled medians: within min..max ratios */
	CHECK(r.lo >= 200 / 50.0 - 1e-9 && r.hi <= 248 / 50.0 + 1e-9);

	/* the same seed reproduces the interval exactly, another one moves it */
	CHECK_OK(stats_ratio_ci(a, 9, same, 9, 0, 0.95, 2000, 1, &r2));
	CHECK(r.lo == r2.lo && r.hi == r2.hi);

	/* a wider level gives an interval at least as wide */
	CHECK_OK(stats_ratio_ci(a, 9, same, 9, 0, 0.99, 2000, 1, &r2));
	CHECK(r2.lo <= r.lo && r2.hi >= r.hi);

	/* refusals */
	CHECK_EQ_INT(stats_ratio_ci(a, 9, b, 8, 1, 0.95, 100, 1, &r), -EINVAL);
	CHECK_EQ_INT(stats_ratio_ci(a, 0, b, 9, 0, 0.95, 100, 1, &r), -EINVAL);
	CHECK_EQ_INT(stats_ratio_ci(a, 9, b, 9, 0, 1.5, 100, 1, &r), -EINVAL);
	same[0] = same[1] = same[2] = same[3] = same[4] = 0;
	CHECK_EQ_INT(stats_ratio_ci(a, 9, same, 9, 0, 0.95, 100, 1, &r),
		     -EINVAL);

	/* rng_below is uniform: 1,000,000 draws over 10 bins within 1% */
	rng_seed(&rng, 42);
	for (int i = 0; i < 1000000; i++)
		hist[rng_below(&rng, 10)]++;
	for (int i = 0; i < 10; i++)
		CHECK_(hist[i] > 99000 && hist[i] < 101000, "bin %d: %llu", i,
		       (unsigned long long)hist[i]);
	return check_summary();
}
