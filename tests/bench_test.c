/* SPDX-License-Identifier: MIT */
/* Helpers for benchmark tests: look up the parts of a bench report. */
#include "bench_test.h"

#include <stdbool.h>
#include <string.h>

#include "probe_test.h"

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
	struct json_object *results = jget(report, "results");

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
