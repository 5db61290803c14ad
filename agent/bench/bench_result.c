/* SPDX-License-Identifier: MIT */
/*
 * A benchmark's results as the report's messages: variants, parameters,
 * samples, comparisons with their intervals, and the bounds pass that fails
 * a variant whose figures cannot be.
 */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "bench_internal.h"
#include "bounds.h"
#include "cleanup.h"
#include "stats.h"

#define BOOTSTRAP_RESAMPLES 10000
#define CI_LEVEL 0.95

/* Frees the n messages of the repeated field *arrp and empties it. */
static void drop_messages(void *arrp, size_t *n)
{
	ProtobufCMessage ***arr = arrp;

	for (size_t i = 0; i < *n; i++)
		protobuf_c_message_free_unpacked((*arr)[i], NULL);
	free(*arr);
	*arr = NULL;
	*n = 0;
}

void bench_set_double(protobuf_c_boolean *has, double *dst, double v)
{
	*has = isfinite(v);
	*dst = *has ? v : 0;
}

Fleetbench__Benchmark *bench_out_append(struct bench_out *out,
					const char *benchmark,
					const char *variant)
{
	Fleetbench__BenchRun *m = out->msg;
	Fleetbench__Benchmark *b;

	if (ARRAY_RESERVE(m->benchmarks, out->cap_benchmarks,
			  m->n_benchmarks + 1) < 0)
		return NULL;
	b = malloc(sizeof(*b));
	if (!b)
		return NULL;
	fleetbench__benchmark__init(b);
	b->benchmark = strdup(benchmark);
	b->variant = strdup(variant);
	if (!b->benchmark || !b->variant) {
		fleetbench__benchmark__free_unpacked(b, NULL);
		return NULL;
	}
	m->benchmarks[m->n_benchmarks++] = b;
	return b;
}

struct bench_result *bench_result_new(struct bench_run *run,
				      const char *benchmark,
				      const char *variant)
{
	struct bench_result *res;

	if (ARRAY_RESERVE(run->results, run->cap_results, run->nresults + 1) <
	    0)
		return NULL;
	res = calloc(1, sizeof(*res));
	if (!res)
		return NULL;
	res->msg = bench_out_append(&run->out, benchmark, variant);
	if (!res->msg) {
		free(res);
		return NULL;
	}
	res->run = run;
	run->results[run->nresults++] = res;
	res->slot = -1;
	if (run->where && run->where->nvariants < WHERE_VARIANTS) {
		struct bench_where *w = run->where;
		unsigned int n = w->nvariants;

		snprintf(w->variants[n], WHERE_NAME, "%s", variant);
		/* the name first: a death between the stores is harmless */
		__atomic_store_n(&w->nvariants, n + 1, __ATOMIC_RELEASE);
		res->slot = (int)n;
	}
	return res;
}

void bench_result_skip(struct bench_result *res, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	free(res->msg->skip_reason);
	res->msg->skip_reason = strdup(buf);
}

bool bench_result_skipped(const struct bench_result *res)
{
	return res->msg->skip_reason != NULL;
}

const char *bench_result_variant(const struct bench_result *res)
{
	return res->msg->variant;
}

/* The parameter key of res, emptied of its value (added when new), or NULL
 * on ENOMEM. */
static Fleetbench__Param *param_put(struct bench_result *res, const char *key)
{
	Fleetbench__Benchmark *b = res->msg;
	Fleetbench__Param *p;

	for (size_t i = 0; i < b->n_parameters; i++) {
		p = b->parameters[i];
		if (strcmp(p->key, key))
			continue;
		if (p->value_case == FLEETBENCH__PARAM__VALUE_STRING_VALUE)
			free(p->string_value);
		p->value_case = FLEETBENCH__PARAM__VALUE__NOT_SET;
		return p;
	}
	if (ARRAY_RESERVE(b->parameters, res->cap_parameters,
			  b->n_parameters + 1) < 0)
		return NULL;
	p = malloc(sizeof(*p));
	if (!p)
		return NULL;
	fleetbench__param__init(p);
	p->key = strdup(key);
	if (!p->key) {
		free(p);
		return NULL;
	}
	b->parameters[b->n_parameters++] = p;
	return p;
}

void bench_param_i64(struct bench_result *res, const char *key, int64_t v)
{
	Fleetbench__Param *p = param_put(res, key);

	if (!p)
		return;
	p->int_value = v;
	p->value_case = FLEETBENCH__PARAM__VALUE_INT_VALUE;
}

void bench_param_str(struct bench_result *res, const char *key,
		     const char *v)
{
	Fleetbench__Param *p = param_put(res, key);

	if (!p)
		return;
	p->string_value = strdup(v);
	if (p->string_value)
		p->value_case = FLEETBENCH__PARAM__VALUE_STRING_VALUE;
}

/* The index of metric name in b, or -1. */
static int metric_find(const Fleetbench__Benchmark *b, const char *name)
{
	for (size_t i = 0; i < b->n_metrics; i++)
		if (!strcmp(b->metrics[i]->metric, name))
			return (int)i;
	return -1;
}

/* The index of a new metric of res, or -1 on ENOMEM or past MAX_METRICS. */
static int metric_add(struct bench_result *res, const char *name,
		      const char *unit)
{
	Fleetbench__Benchmark *b = res->msg;
	Fleetbench__Metric *m;

	if (b->n_metrics == MAX_METRICS ||
	    ARRAY_RESERVE(b->metrics, res->cap_metrics, b->n_metrics + 1) < 0)
		return -1;
	m = malloc(sizeof(*m));
	if (!m)
		return -1;
	fleetbench__metric__init(m);
	m->metric = strdup(name);
	m->unit = strdup(unit);
	if (!m->metric || !m->unit) {
		fleetbench__metric__free_unpacked(m, NULL);
		return -1;
	}
	res->cap_samples[b->n_metrics] = 0;
	b->metrics[b->n_metrics++] = m;
	return (int)b->n_metrics - 1;
}

void bench_sample(struct bench_result *res, const char *metric,
		  const char *unit, double v)
{
	int i = metric_find(res->msg, metric);
	Fleetbench__Metric *m;

	if (i < 0)
		i = metric_add(res, metric, unit);
	if (i < 0)
		return;
	m = res->msg->metrics[i];
	if (ARRAY_RESERVE(m->samples, res->cap_samples[i], m->n_samples + 1) <
	    0)
		return;
	m->samples[m->n_samples++] = v;
}

const double *bench_samples(const struct bench_result *res,
			    const char *metric, size_t *ret_n)
{
	int i = metric_find(res->msg, metric);
	const Fleetbench__Metric *m = i < 0 ? NULL : res->msg->metrics[i];

	*ret_n = m ? m->n_samples : 0;
	return m ? m->samples : NULL;
}

/* Sets c's five names; 0 or -ENOMEM. */
static int comparison_names(Fleetbench__Comparison *c, const char *name,
			    const Fleetbench__Benchmark *num,
			    const Fleetbench__Benchmark *den,
			    const char *metric)
{
	c->name = strdup(name);
	c->benchmark = strdup(num->benchmark);
	c->metric = strdup(metric);
	c->numerator = strdup(num->variant);
	c->denominator = strdup(den->variant);
	return c->name && c->benchmark && c->metric && c->numerator &&
			       c->denominator ?
		       0 :
		       -ENOMEM;
}

void bench_compare(struct bench_run *run, const char *name,
		   const struct bench_result *num,
		   const struct bench_result *den, const char *metric)
{
	Fleetbench__BenchRun *out = run->out.msg;
	Fleetbench__Comparison *c;
	const double *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	struct stats_ratio r;
	const char *why = NULL;

	if (ARRAY_RESERVE(out->comparisons, run->out.cap_comparisons,
			  out->n_comparisons + 1) < 0)
		return;
	c = malloc(sizeof(*c));
	if (!c)
		return;
	fleetbench__comparison__init(c);
	if (comparison_names(c, name, num->msg, den->msg, metric) < 0) {
		fleetbench__comparison__free_unpacked(c, NULL);
		return;
	}
	if (num->msg->skip_reason || den->msg->skip_reason) {
		why = num->msg->skip_reason ? num->msg->variant :
					      den->msg->variant;
	} else {
		a = bench_samples(num, metric, &na);
		b = bench_samples(den, metric, &nb);
	}
	if (!why && stats_ratio_ci(a, na, b, nb, na == nb, CI_LEVEL,
				   BOOTSTRAP_RESAMPLES,
				   (uint64_t)run->params->seed, &r) == 0) {
		bench_set_double(&c->has_ratio, &c->ratio, r.ratio);
		/* one sample a side (a round cut at the allowance): no
		 * interval, not the zero-width one the resamples give */
		if (na > 1 || nb > 1) {
			bench_set_double(&c->has_ci_low, &c->ci_low, r.lo);
			bench_set_double(&c->has_ci_high, &c->ci_high, r.hi);
			bench_set_double(&c->has_level, &c->level, r.level);
		}
		c->method = strdup(
			na < 2 && nb < 2 ? "ratio of medians, one sample each: no interval" :
			r.paired ? "ratio of medians, paired percentile bootstrap, 10000 resamples" :
				   "ratio of medians, percentile bootstrap, 10000 resamples");
	} else {
		char reason[256];

		if (why)
			snprintf(reason, sizeof(reason), "%s was skipped", why);
		else
			snprintf(reason, sizeof(reason),
				 "no usable samples of %s", metric);
		c->reason = strdup(reason);
	}
	out->comparisons[out->n_comparisons++] = c;
}

/* ---- failed results ---- */

const char *bench_variant_status(const Fleetbench__Benchmark *b)
{
	return b->failure ? "failed" : b->skip_reason ? "skipped" : "ok";
}

int bench_benchmark_fail(Fleetbench__Benchmark *b, const char *failure)
{
	drop_messages(&b->metrics, &b->n_metrics);
	drop_messages(&b->windows, &b->n_windows);
	free(b->skip_reason);
	b->skip_reason = NULL;
	free(b->failure);
	b->failure = strdup(failure);
	return b->failure ? 0 : -ENOMEM;
}

/*
 * Each comparison of benchmark whose numerator or denominator is variant
 * loses its figures and gets the reason "<variant> failed: <failure>", as
 * bench_compare() leaves one with a skipped side.
 */
static void comparisons_fail(Fleetbench__BenchRun *b, const char *benchmark,
			     const char *variant, const char *failure)
{
	for (size_t i = 0; i < b->n_comparisons; i++) {
		Fleetbench__Comparison *c = b->comparisons[i];
		char reason[1024];

		if (strcmp(c->benchmark, benchmark) ||
		    (strcmp(c->numerator, variant) &&
		     strcmp(c->denominator, variant)))
			continue;
		c->has_ratio = c->has_ci_low = c->has_ci_high = 0;
		c->has_level = c->has_target_reached = 0;
		free(c->method);
		c->method = NULL;
		snprintf(reason, sizeof(reason), "%s failed: %s", variant,
			 failure);
		free(c->reason);
		c->reason = strdup(reason);
	}
}

/* The bounds of one "ok" variant: 0, or -ERANGE with why. */
static int benchmark_bounds(const Fleetbench__Benchmark *b, char *why,
			    size_t whylen)
{
	_cleanup_free_ double *wall = calloc(b->n_windows + 1, sizeof(*wall));
	int r = 0;

	if (!wall) {
		snprintf(why, whylen, "no memory to check the samples");
		return -ENOMEM;
	}
	for (size_t k = 0; k < b->n_windows; k++)
		wall[k] = b->windows[k]->has_wall_s ? b->windows[k]->wall_s :
						      NAN;
	for (size_t i = 0; r == 0 && i < b->n_metrics; i++) {
		const Fleetbench__Metric *m = b->metrics[i];

		r = bounds_check_metric(m->metric, m->unit, m->samples,
					m->n_samples, wall, b->n_windows, why,
					whylen);
	}
	return r;
}

size_t bench_check_bounds(Fleetbench__BenchRun *b)
{
	size_t failed = 0;

	for (size_t i = 0; i < b->n_benchmarks; i++) {
		Fleetbench__Benchmark *v = b->benchmarks[i];
		char why[512], failure[600];

		if (v->skip_reason || v->failure ||
		    benchmark_bounds(v, why, sizeof(why)) == 0)
			continue;
		snprintf(failure, sizeof(failure), "out of bounds: %s", why);
		comparisons_fail(b, v->benchmark, v->variant, failure);
		bench_benchmark_fail(v, failure);
		failed++;
	}
	return failed;
}

size_t bench_report_failed(const Fleetbench__BenchRun *b)
{
	size_t n = 0;

	for (size_t i = 0; b && i < b->n_benchmarks; i++)
		n += b->benchmarks[i]->failure != NULL;
	return n;
}

void bench_run_free(Fleetbench__BenchRun *b)
{
	if (b)
		fleetbench__bench_run__free_unpacked(b, NULL);
}
