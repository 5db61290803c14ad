/* SPDX-License-Identifier: MIT */
/* Helpers for benchmark tests: look up the parts of a bench report. */
#include "bench_test.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "pbjson.h"
#include "probe_test.h"
#include "stats.h"

/*
 * True when o's member key is the string want. Not jstr(): its buffer may
 * hold a caller's string across these lookups.
 */
static bool member_is(struct json_object *o, const char *key, const char *want)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) &&
	       json_object_is_type(v, json_type_string) &&
	       !strcmp(json_object_get_string(v), want);
}

struct json_object *jresult(struct json_object *report, const char *bench,
			    const char *variant)
{
	struct json_object *results = jget(report, "benchmarks");

	for (size_t i = 0; results && i < json_object_array_length(results);
	     i++) {
		struct json_object *r = json_object_array_get_idx(results, i);

		if (member_is(r, "benchmark", bench) &&
		    member_is(r, "variant", variant))
			return r;
	}
	return NULL;
}

struct json_object *jmetric(struct json_object *res, const char *metric)
{
	struct json_object *metrics = jget(res, "metrics");

	for (size_t i = 0; metrics && i < json_object_array_length(metrics);
	     i++) {
		struct json_object *m = json_object_array_get_idx(metrics, i);

		if (member_is(m, "metric", metric))
			return m;
	}
	return NULL;
}

struct json_object *jcomparison(struct json_object *report, const char *name)
{
	struct json_object *cmps = jget(report, "comparisons");

	for (size_t i = 0; cmps && i < json_object_array_length(cmps); i++) {
		struct json_object *c = json_object_array_get_idx(cmps, i);

		if (member_is(c, "name", name))
			return c;
	}
	return NULL;
}

struct json_object *jbench(const Fleetbench__BenchRun *b)
{
	return b ? pbjson_from_message(&b->base) : NULL;
}

const char *jstatus(struct json_object *res)
{
	if (!res)
		return "<missing>";
	return jget(res, "failure") ? "failed" :
	       jget(res, "skip_reason") ? "skipped" :
					  "ok";
}

struct json_object *jparam(struct json_object *res, const char *key)
{
	struct json_object *params = jget(res, "parameters");

	for (size_t i = 0; params && i < json_object_array_length(params);
	     i++) {
		struct json_object *p = json_object_array_get_idx(params, i);

		if (member_is(p, "key", key))
			return p;
	}
	return NULL;
}

int64_t jpint(struct json_object *res, const char *key)
{
	return jint(jparam(res, key), "int_value");
}

const char *jpstr(struct json_object *res, const char *key)
{
	struct json_object *p = jparam(res, key);

	return p ? jstr(p, "string_value") : "<missing>";
}

double jmedian(struct json_object *metric)
{
	struct json_object *s = jget(metric, "samples");
	size_t n = s ? json_object_array_length(s) : 0;
	double *x = calloc(n + 1, sizeof(*x)), m;

	if (!x || !n) {
		free(x);
		return NAN;
	}
	for (size_t i = 0; i < n; i++)
		x[i] = json_object_get_double(json_object_array_get_idx(s, i));
	m = stats_median(x, n);
	free(x);
	return m;
}

bool jsamples_within(struct json_object *res, const char *metric, size_t n,
		     double lo, double hi, char *why, size_t whylen)
{
	struct json_object *m = jmetric(res, metric);
	struct json_object *s = jget(m, "samples");
	size_t have = s ? json_object_array_length(s) : 0;
	const char *variant = jstr(res, "variant");

	if (!m) {
		snprintf(why, whylen, "%s has no metric %s", variant, metric);
		return false;
	}
	if (have != n) {
		snprintf(why, whylen, "%s %s: %zu samples, expected %zu",
			 variant, metric, have, n);
		return false;
	}
	for (size_t i = 0; i < have; i++) {
		double v = json_object_get_double(
			json_object_array_get_idx(s, i));

		if (!(v >= lo && v <= hi)) {
			snprintf(why, whylen, "%s %s sample %g not in [%g, %g]",
				 variant, metric, v, lo, hi);
			return false;
		}
	}
	return true;
}

int jnoisy(struct json_object *res)
{
	struct json_object *w = jget(res, "windows");

	for (size_t i = 0; w && i < json_object_array_length(w); i++)
		if (json_object_get_boolean(
			    jget(json_object_array_get_idx(w, i), "noisy")))
			return 1;
	return 0;
}

int jbench_run(const struct bench_params *p, const char *only,
	       struct json_object **ret, char *err, size_t errlen)
{
	Fleetbench__BenchRun *b = NULL;
	int r = bench_suite_run(p, only, &b, err, errlen);

	if (r < 0)
		return r;
	*ret = jbench(b);
	bench_run_free(b);
	if (!*ret) {
		snprintf(err, errlen, "pbjson_from_message failed");
		return -ENOMEM;
	}
	return 0;
}

size_t jfailed(struct json_object *report)
{
	struct json_object *b = jget(report, "benchmarks");
	size_t n = 0;

	for (size_t i = 0; b && i < json_object_array_length(b); i++)
		n += jget(json_object_array_get_idx(b, i), "failure") != NULL;
	return n;
}

int bench_dir_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

int jbench_quick(struct bench_params *p)
{
	int r;

	memset(p, 0, sizeof(*p));
	r = bench_params_profile(p, "quick");
	p->profile = "quick";
	p->dir = "/tmp";
	p->seed = 42;
	p->steal_threshold_pct = 5;
	return r;
}
