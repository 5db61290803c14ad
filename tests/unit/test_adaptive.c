/* SPDX-License-Identifier: MIT */
/*
 * Issue 19: repeats until the interval is tight. The stop rule
 * (stats_adaptive_next), the driver's rounds (bench_rounds) on a benchmark
 * whose samples this test makes, quiet or with injected noise, and the
 * coverage of the intervals an adaptive stop reports: stopping on the
 * interval's width must not make it lie.
 */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_internal.h"
#include "check.h"
#include "rand.h"
#include "stats.h"

/* ---- the rule ---- */

static void test_rule(void)
{
	struct stats_adaptive a = { .min_rounds = 5, .max_rounds = 20,
				    .budget_s = 10 };

	/* never fewer than min_rounds, tight or not */
	CHECK_EQ_INT(stats_adaptive_next(&a, 0, 0, 2), STATS_ADAPTIVE_MORE);
	CHECK_EQ_INT(stats_adaptive_next(&a, 4, 9.9, 2), STATS_ADAPTIVE_MORE);
	CHECK_EQ_INT(stats_adaptive_next(&a, 4, 100, 0), STATS_ADAPTIVE_MORE);
	/* the second tight round in a row stops, the first does not */
	CHECK_EQ_INT(stats_adaptive_next(&a, 5, 1, 1), STATS_ADAPTIVE_MORE);
	CHECK_EQ_INT(stats_adaptive_next(&a, 6, 1, 2), STATS_ADAPTIVE_TIGHT);
	CHECK_EQ_INT(stats_adaptive_next(&a, 5, 1, 0), STATS_ADAPTIVE_MORE);
	/* 5 rounds in 8.5 s: a sixth (1.7 s) would pass 10 s */
	CHECK_EQ_INT(stats_adaptive_next(&a, 5, 8.5, 0), STATS_ADAPTIVE_BUDGET);
	CHECK_EQ_INT(stats_adaptive_next(&a, 5, 8.5, 1), STATS_ADAPTIVE_BUDGET);
	CHECK_EQ_INT(stats_adaptive_next(&a, 5, 8.0, 0), STATS_ADAPTIVE_MORE);
	CHECK_EQ_INT(stats_adaptive_next(&a, 20, 1, 0), STATS_ADAPTIVE_MAX);
	CHECK_EQ_INT(stats_adaptive_next(&a, 20, 1, 2), STATS_ADAPTIVE_MAX);
	CHECK_EQ_STR(stats_adaptive_name(STATS_ADAPTIVE_BUDGET), "budget");
	CHECK(fabs(stats_relative_half_width(2.0, 1.9, 2.1) - 0.05) < 1e-12);
	CHECK(isnan(stats_relative_half_width(0, -1, 1)));
	CHECK(isnan(stats_relative_half_width(NAN, 1, 2)));
}

/* ---- the driver, on a benchmark of this test's ---- */

/* Two variants, "a" measuring ratio times "b"; each round drifts both
 * alike (as the host does) and adds noise of its own to each (the injected
 * noise source), then sleeps window_us per window so the rounds take time. */
struct synth {
	struct bench_result *a, *b;
	double ratio, noise;
	useconds_t window_us;
	struct rng rng;
};

static double gauss(struct rng *r)
{
	double u = ((double)(rng_next(r) >> 11) + 0.5) / 9007199254740992.0;
	double v = ((double)(rng_next(r) >> 11) + 0.5) / 9007199254740992.0;

	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

static void synth_window(struct synth *s, struct bench_result *res,
			 double value)
{
	bench_window_begin(res);
	usleep(s->window_us);
	bench_sample(res, "t", "ns", value);
	bench_window_end(res);
}

static int synth_run(struct bench_run *run, void *state, unsigned int repeat)
{
	struct synth *s = state;
	double drift = exp(0.2 * gauss(&s->rng));

	(void)run;
	(void)repeat;
	synth_window(s, s->a,
		     100 * s->ratio * drift * exp(s->noise * gauss(&s->rng)));
	synth_window(s, s->b, 100 * drift * exp(s->noise * gauss(&s->rng)));
	return 0;
}

static void synth_compare(struct bench_run *run, void *state)
{
	struct synth *s = state;

	bench_compare(run, "synth_ratio", s->a, s->b, "t");
}

static const struct bench_ops synth_ops = {
	.name = "synth",
	.run = synth_run,
	.compare = synth_compare,
};

struct outcome {
	long long rounds;
	size_t windows, samples;
	const Fleetbench__Comparison *c;
	double secs;
};

/* Runs the synthetic benchmark as the child does: rounds, compare, and
 * the marks when adaptive. run's results stay until synth_free(). */
static void synth_measure_in(struct bench_run *run, struct bench_params *p,
			     double noise, useconds_t window_us,
			     double allowance_s, struct outcome *ret)
{
	struct synth s = { .ratio = 2.0, .noise = noise,
			   .window_us = window_us };
	struct timespec t0, t1;
	int r;

	memset(run, 0, sizeof(*run));
	run->params = p;
	run->popts.root = "/";
	run->pctx.opts = &run->popts;
	run->pctx.root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	run->out.msg = malloc(sizeof(*run->out.msg));
	fleetbench__bench_run__init(run->out.msg);
	run->ops = &synth_ops;
	run->where = calloc(1, sizeof(*run->where)); /* the child's page */
	rng_seed(&s.rng, (uint64_t)p->seed);
	s.a = bench_result_new(run, "synth", "a");
	s.b = bench_result_new(run, "synth", "b");
	/* an allowance as the driver gives it (bench.c); < 0: spent */
	run->allowance_s = fabs(allowance_s);
	run->deadline = bench_now() + allowance_s;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = bench_rounds(run, &synth_ops, &s, &ret->rounds);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK_EQ_INT(r, 0);
	synth_compare(run, &s);
	if (p->adaptive)
		bench_comparisons_mark(run->out.msg, 0, p, ret->rounds);
	CHECK_EQ_INT(run->out.msg->n_comparisons, 1);
	ret->c = run->out.msg->comparisons[0];
	ret->windows = run->out.msg->benchmarks[0]->n_windows;
	ret->samples = run->out.msg->benchmarks[0]->n_metrics ?
			       run->out.msg->benchmarks[0]->metrics[0]->n_samples :
			       0;
	ret->secs = (double)(t1.tv_sec - t0.tv_sec) +
		    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
}

/* synth_measure_in() with 10 ms windows and no allowance */
static void synth_measure(struct bench_run *run, struct bench_params *p,
			  double noise, struct outcome *ret)
{
	synth_measure_in(run, p, noise, 10000, 0, ret);
}

/* The string parameter key of the i-th variant, NULL when it has none. */
static const char *param_of(const struct bench_run *run, size_t i,
			    const char *key)
{
	const Fleetbench__Benchmark *b = run->out.msg->benchmarks[i];

	for (size_t k = 0; k < b->n_parameters; k++)
		if (!strcmp(b->parameters[k]->key, key) &&
		    b->parameters[k]->value_case ==
			    FLEETBENCH__PARAM__VALUE_STRING_VALUE)
			return b->parameters[k]->string_value;
	return NULL;
}

static void synth_free(struct bench_run *run)
{
	for (size_t i = 0; i < run->nresults; i++)
		free(run->results[i]);
	free(run->results);
	bench_run_free(run->out.msg);
	free(run->where);
	close(run->pctx.root_fd);
}

static void params_init(struct bench_params *p, bool adaptive)
{
	memset(p, 0, sizeof(*p));
	p->repeats = 5;
	p->adaptive = adaptive;
	p->target_pct = 5;
	p->budget_s = 2;
	p->max_repeats = 200;
	p->steal_threshold_pct = 5;
	p->psi_cpu_threshold_pct = 100;
	p->psi_io_threshold_pct = 100;
	p->seed = 12345;
}

static void test_driver(void)
{
	struct bench_params p;
	struct bench_run run;
	struct outcome o;

	/* quiet: 0.3% noise, within 5% at the least rounds (5) and again at
	 * the next: 6 */
	params_init(&p, true);
	synth_measure(&run, &p, 0.003, &o);
	CHECK_EQ_INT(o.rounds, 6);
	CHECK_EQ_INT(o.windows, 6);
	CHECK_EQ_INT(o.samples, 6);
	CHECK(o.c->has_target_reached && o.c->target_reached);
	CHECK(o.c->has_target_half_width && o.c->target_half_width == 0.05);
	CHECK(o.c->has_rounds && o.c->rounds == 6);
	CHECK_(fabs(o.c->ratio / 2.0 - 1) < 0.05, "quiet ratio %g",
	       o.c->ratio);
	synth_free(&run);

	/* 30% noise of each variant's own: the interval stays wide, the
	 * rounds run to the 2-s budget (20 ms a round: about 100), the
	 * comparison says it did not reach its target */
	params_init(&p, true);
	p.target_pct = 1;
	synth_measure(&run, &p, 0.3, &o);
	CHECK_(o.rounds > 20 && o.rounds < 200, "noisy: %lld rounds",
	       o.rounds);
	CHECK_(o.secs <= 2.0 + 0.2, "noisy: %.2f s past the 2-s budget",
	       o.secs);
	CHECK_EQ_INT(o.windows, (size_t)o.rounds);
	CHECK_EQ_INT(o.samples, (size_t)o.rounds);
	CHECK(o.c->has_target_reached && !o.c->target_reached);
	CHECK(o.c->rounds == o.rounds);
	CHECK_(stats_relative_half_width(o.c->ratio, o.c->ci_low,
					 o.c->ci_high) > 0.01,
	       "noisy: half-width %g",
	       stats_relative_half_width(o.c->ratio, o.c->ci_low,
					 o.c->ci_high));
	synth_free(&run);

	/* the same noise with room in the budget: max_repeats ends it */
	params_init(&p, true);
	p.target_pct = 1;
	p.max_repeats = 12;
	p.budget_s = 60;
	synth_measure(&run, &p, 0.3, &o);
	CHECK_EQ_INT(o.rounds, 12);
	CHECK(o.c->has_target_reached && !o.c->target_reached);
	synth_free(&run);

	/* fixed repeats: exactly that many, and no target on the figure */
	params_init(&p, false);
	synth_measure(&run, &p, 0.3, &o);
	CHECK_EQ_INT(o.rounds, 5);
	CHECK_EQ_INT(o.windows, 5);
	CHECK(!o.c->has_target_reached && !o.c->has_target_half_width);
	synth_free(&run);
}

/*
 * Issue 36: the allowance (the benchmark's share of the run's
 * max_seconds) ends the rounds, the adaptive ones and the least ones, and
 * what it cut says so: the rounds in the variants' parameters, no interval
 * from one round, every variant skipped when nothing was left.
 */
static void test_allowance(void)
{
	struct bench_params p;
	struct bench_run run;
	struct outcome o;
	const char *cut;

	/* adaptive rounds of 20 ms with a 60-s budget: a 0.5-s allowance
	 * ends them, within one round */
	params_init(&p, true);
	p.target_pct = 1;
	p.budget_s = 60;
	synth_measure_in(&run, &p, 0.3, 10000, 0.5, &o);
	CHECK_(o.rounds > 5 && o.rounds < 200, "allowance: %lld rounds",
	       o.rounds);
	CHECK_(o.secs <= 0.5 + 0.05, "allowance: %.3f s past 0.5 s", o.secs);
	CHECK(!param_of(&run, 0, "rounds_cut"));
	synth_free(&run);

	/* rounds of 200 ms, the least 5, a 0.5-s allowance: 2 rounds fit
	 * (a third would end at 0.6 s); the cut is said */
	params_init(&p, true);
	synth_measure_in(&run, &p, 0.003, 100000, 0.5, &o);
	CHECK_(o.rounds >= 1 && o.rounds <= 2, "cut: %lld rounds", o.rounds);
	CHECK_(o.secs <= 0.5 + 0.2, "cut: %.3f s", o.secs);
	cut = param_of(&run, 0, "rounds_cut");
	CHECK_(cut && strstr(cut, "of the least 5: its allowance of 0.5 s ran out"),
	       "rounds_cut: %s", cut ? cut : "(none)");
	CHECK(param_of(&run, 1, "rounds_cut") != NULL);
	CHECK(o.c->has_ratio);
	synth_free(&run);

	/* one round fits: a ratio, and no interval (not a zero-width one) */
	params_init(&p, true);
	synth_measure_in(&run, &p, 0.003, 100000, 0.25, &o);
	CHECK_EQ_INT(o.rounds, 1);
	CHECK(o.c->has_ratio && !o.c->has_ci_low && !o.c->has_ci_high);
	CHECK(o.c->has_target_reached && !o.c->target_reached);
	CHECK_EQ_STR(o.c->method,
		     "ratio of medians, one sample each: no interval");
	synth_free(&run);

	/* the allowance spent before the first round: every variant
	 * skipped, saying so; no ratio */
	params_init(&p, true);
	p.max_seconds = 30;
	synth_measure_in(&run, &p, 0.003, 10000, -1, &o);
	CHECK_EQ_INT(o.rounds, 0);
	CHECK_EQ_INT(o.windows, 0);
	CHECK_(run.out.msg->benchmarks[0]->skip_reason &&
		       strstr(run.out.msg->benchmarks[0]->skip_reason,
			      "allowance of 1.0 s of the run's 30 s was spent before its first round"),
	       "skip: %s", run.out.msg->benchmarks[0]->skip_reason);
	CHECK(!o.c->has_ratio && o.c->reason);
	synth_free(&run);
}

/* Every benchmark has a share of every profile's time: a zero would give
 * it no allowance at all. */
static void test_weights(void)
{
	for (size_t i = 0; i < bench_count(); i++)
		for (size_t k = 0; k < METHOD_PROFILES; k++)
			CHECK_(bench_get(i)->weight[k] > 0,
			       "%s: no weight in profile %zu",
			       bench_get(i)->name, k);
	CHECK_EQ_INT(method_profile_index("quick"), 0);
	CHECK_EQ_INT(method_profile_index("full"), 2);
	CHECK_EQ_INT(method_profile_index("huge"), -1);
}

/* ---- the statistics of the stop ---- */

/*
 * 500 simulated hosts, each measuring a true ratio of 2 with 5% noise per
 * variant and 5% drift shared by a round's two variants; adaptive from 5
 * to 40 rounds to a 5% target, with the report's own interval (paired
 * percentile bootstrap of the ratio of medians, 95%). The interval the
 * stop reports must cover the truth as often as the same interval of the
 * same hosts with 5 rounds fixed in advance, less 2 points, and never
 * below 92% (the simulation's own error is about 1 point): a stop that
 * favoured narrow-looking samples shows as lost coverage (stopping at the
 * first tight round covered 93.2% of 600 hosts where 5 fixed rounds
 * covered 94.7%; at the second, the rule, 95.8%).
 */
static void test_coverage(void)
{
	enum { SIMS = 500, MIN = 5, MAX = 40 };
	struct stats_adaptive rule = { .min_rounds = MIN, .max_rounds = MAX,
				       .budget_s = 1e9 };
	size_t covered = 0, covered_fixed = 0, tight = 0;
	long long rounds_sum = 0;
	struct rng rng;

	rng_seed(&rng, 42);
	for (int sim = 0; sim < SIMS; sim++) {
		double a[MAX], b[MAX];
		struct stats_ratio r = { 0 }, f = { 0 };
		int tight_rounds = 0;
		long long n;

		for (int i = 0; i < MAX; i++) {
			double drift = exp(0.05 * gauss(&rng));

			a[i] = 2.0 * drift * exp(0.05 * gauss(&rng));
			b[i] = drift * exp(0.05 * gauss(&rng));
		}
		for (n = 0;; n++) {
			if (n >= MIN) {
				stats_ratio_ci(a, (size_t)n, b, (size_t)n, 1,
					       0.95, 1000, (uint64_t)sim + 1,
					       &r);
				tight_rounds =
					stats_relative_half_width(r.ratio, r.lo,
								  r.hi) <= 0.05 ?
						tight_rounds + 1 :
						0;
			}
			if (stats_adaptive_next(&rule, n, 0, tight_rounds) !=
			    STATS_ADAPTIVE_MORE)
				break;
		}
		rounds_sum += n;
		tight += tight_rounds >= STATS_ADAPTIVE_CONFIRM;
		covered += r.lo <= 2.0 && 2.0 <= r.hi;
		/* the same host with its rounds fixed at the least */
		stats_ratio_ci(a, MIN, b, MIN, 1, 0.95, 1000, (uint64_t)sim + 1,
			       &f);
		covered_fixed += f.lo <= 2.0 && 2.0 <= f.hi;
	}
	printf("coverage of 95%% intervals over %d hosts: adaptive %.3f "
	       "(mean %.1f rounds, %zu reached the target), fixed %d rounds "
	       "%.3f\n",
	       SIMS, (double)covered / SIMS, (double)rounds_sum / SIMS, tight,
	       MIN, (double)covered_fixed / SIMS);
	CHECK_((double)covered / SIMS >= 0.92, "adaptive coverage %.3f",
	       (double)covered / SIMS);
	CHECK_(covered + SIMS / 50 >= covered_fixed,
	       "adaptive coverage %.3f below fixed %.3f",
	       (double)covered / SIMS, (double)covered_fixed / SIMS);
	CHECK_(tight > SIMS * 9 / 10, "only %zu of %d reached the target",
	       tight, SIMS);
}

int main(void)
{
	test_rule();
	test_driver();
	test_allowance();
	test_weights();
	test_coverage();
	return check_summary();
}
