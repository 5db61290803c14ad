/* SPDX-License-Identifier: MIT */
/* The report as an aligned table for people. */
#include "output.h"

#include <math.h>
#include <string.h>

#include "probe.h"

#define KEY_WIDTH 48

static void output_value(FILE *f, struct json_object *v)
{
	struct json_object *sel, *opts, *reason;

	if (!v) {
		fputs("(not set)", f);
		return;
	}
	if (json_object_object_get_ex(v, "unknown", &reason) &&
	    item_is_unknown(v)) {
		fprintf(f, "unknown (%s)", json_object_get_string(reason));
		return;
	}
	if (json_object_is_type(v, json_type_object) &&
	    json_object_object_get_ex(v, "selected", &sel) &&
	    json_object_object_get_ex(v, "options", &opts)) {
		fprintf(f, "%s  (", json_object_get_string(sel));
		for (size_t i = 0; i < json_object_array_length(opts); i++)
			fprintf(f, "%s%s", i ? " " : "",
				json_object_get_string(
					json_object_array_get_idx(opts, i)));
		fputc(')', f);
		return;
	}
	if (json_object_is_type(v, json_type_array)) {
		size_t n = json_object_array_length(v);

		if (n == 0)
			fputs("(none)", f);
		for (size_t i = 0; i < n; i++)
			fprintf(f, "%s%s", i ? " " : "",
				json_object_get_string(
					json_object_array_get_idx(v, i)));
		return;
	}
	if (json_object_is_type(v, json_type_boolean)) {
		fputs(json_object_get_boolean(v) ? "yes" : "no", f);
		return;
	}
	fputs(json_object_get_string(v), f);
}

/* A leaf: scalar, unknown item, bracketed mode, or array of scalars. */
static int is_leaf(struct json_object *v)
{
	if (!v || !json_object_is_type(v, json_type_object)) {
		if (v && json_object_is_type(v, json_type_array))
			for (size_t i = 0; i < json_object_array_length(v); i++) {
				struct json_object *e =
					json_object_array_get_idx(v, i);

				if (json_object_is_type(e, json_type_object))
					return 0;
			}
		return 1;
	}
	return item_is_unknown(v) ||
	       (json_object_object_get_ex(v, "selected", NULL) &&
		json_object_object_get_ex(v, "options", NULL) &&
		json_object_object_length(v) == 2);
}

/* skip: a member not to print again (the "name" an element is labelled by) */
static void output_node(FILE *f, const char *path, struct json_object *v,
			const char *skip)
{
	char sub[512];

	if (is_leaf(v)) {
		fprintf(f, "  %-*s %s", KEY_WIDTH, path,
			strlen(path) > KEY_WIDTH ? "\n    " : "");
		output_value(f, v);
		fputc('\n', f);
		return;
	}
	if (json_object_is_type(v, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			struct json_object *e = json_object_array_get_idx(v, i);
			struct json_object *name;

			if (json_object_object_get_ex(e, "name", &name) &&
			    json_object_is_type(name, json_type_string)) {
				snprintf(sub, sizeof(sub), "%s[%s]", path,
					 json_object_get_string(name));
				output_node(f, sub, e, "name");
			} else {
				snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
				output_node(f, sub, e, NULL);
			}
		}
		return;
	}
	json_object_object_foreach(v, key, child)
	{
		if (skip && !strcmp(key, skip))
			continue;
		if (*path)
			snprintf(sub, sizeof(sub), "%s.%s", path, key);
		else
			snprintf(sub, sizeof(sub), "%s", key);
		output_node(f, sub, child, NULL);
	}
}

static const char *jfield(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !v)
		return NULL;
	return json_object_get_string(v);
}

static double jnum(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !v)
		return NAN;
	return json_object_get_double(v);
}

void output_bench_table(FILE *f, struct json_object *bench)
{
	struct json_object *results, *comps, *v;

	fprintf(f, "bench  profile %s, %s repeats, seed %s, work dir %s\n",
		jfield(bench, "profile"), jfield(bench, "repeats"),
		jfield(bench, "seed"), jfield(bench, "dir"));
	fprintf(f, "  %-14s %-16s %-22s %12s %12s %12s  %s\n", "benchmark",
		"variant", "metric", "median", "min", "max", "unit");
	json_object_object_get_ex(bench, "results", &results);
	for (size_t i = 0; i < json_object_array_length(results); i++) {
		struct json_object *r = json_object_array_get_idx(results, i);
		struct json_object *metrics;

		if (!strcmp(jfield(r, "status"), "skipped")) {
			fprintf(f, "  %-14s %-16s skipped: %s\n",
				jfield(r, "benchmark"), jfield(r, "variant"),
				jfield(r, "skip_reason"));
			continue;
		}
		if (!strcmp(jfield(r, "status"), "failed")) {
			fprintf(f, "  %-14s %-16s FAILED: %s\n",
				jfield(r, "benchmark"), jfield(r, "variant"),
				jfield(r, "failure"));
			continue;
		}
		json_object_object_get_ex(r, "metrics", &metrics);
		for (size_t k = 0; k < json_object_array_length(metrics); k++) {
			struct json_object *m =
				json_object_array_get_idx(metrics, k);

			fprintf(f, "  %-14s %-16s %-22s %12.4g %12.4g %12.4g  %s\n",
				k ? "" : jfield(r, "benchmark"),
				k ? "" : jfield(r, "variant"),
				jfield(m, "metric"), jnum(m, "median"),
				jnum(m, "min"), jnum(m, "max"),
				jfield(m, "unit"));
		}
		if (json_object_object_get_ex(r, "noisy", &v) &&
		    json_object_get_boolean(v))
			fprintf(f, "  %-14s %-16s noisy: a repeat had CPU steal above %s%%\n",
				"", "", jfield(bench, "steal_threshold_pct"));
	}
	json_object_object_get_ex(bench, "comparisons", &comps);
	if (json_object_array_length(comps))
		fprintf(f, "\ncomparisons (ratio of medians, 95%% interval)\n");
	for (size_t i = 0; i < json_object_array_length(comps); i++) {
		struct json_object *c = json_object_array_get_idx(comps, i);
		char what[128];

		snprintf(what, sizeof(what), "%s (%s %s/%s)", jfield(c, "name"),
			 jfield(c, "metric"), jfield(c, "numerator"),
			 jfield(c, "denominator"));
		if (isnan(jnum(c, "ratio")))
			fprintf(f, "  %-52s n/a: %s\n", what,
				jfield(c, "reason"));
		else
			fprintf(f, "  %-52s %7.3f  [%.3f, %.3f]\n", what,
				jnum(c, "ratio"), jnum(c, "ci_low"),
				jnum(c, "ci_high"));
	}
	if (json_object_object_get_ex(bench, "noisy", &v) &&
	    json_object_get_boolean(v))
		fprintf(f, "\nnoisy: some repeats ran with CPU steal above the threshold; treat these figures with care\n");
}

void output_table(FILE *f, struct json_object *report)
{
	json_object_object_foreach(report, section, v)
	{
		if (!strcmp(section, "bench")) {
			output_bench_table(f, v);
			continue;
		}
		fprintf(f, "%s\n", section);
		output_node(f, "", v, NULL);
		fputc('\n', f);
	}
}
