/* SPDX-License-Identifier: MIT */
/* The report as an aligned table for people. */
#include "output.h"

#include <math.h>
#include <string.h>

#include "probe.h"
#include "stats.h"

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

/* "  within 5% (7 repeats)" or "  WIDE: 12.1% > 5% (20 repeats)" after
 * an adaptive comparison's interval; "" with fixed repeats. */
static const char *comparison_target(const Fleetbench__Comparison *c,
				     char *buf, size_t len)
{
	double h = c->has_ci_low && c->has_ci_high ?
			   stats_relative_half_width(c->ratio, c->ci_low,
						     c->ci_high) :
			   NAN;

	if (!c->has_target_reached || !c->has_target_half_width)
		return "";
	if (c->target_reached)
		snprintf(buf, len, "  within %.0f%% (%lld repeats)",
			 c->target_half_width * 100, (long long)c->rounds);
	else if (!isfinite(h))
		snprintf(buf, len, "  WIDE: no interval (%lld repeats)",
			 (long long)c->rounds);
	else
		snprintf(buf, len, "  WIDE: %.1f%% > %.0f%% (%lld repeats)",
			 h * 100, c->target_half_width * 100,
			 (long long)c->rounds);
	return buf;
}

#define NOISY_SHOWN 3 /* reasons printed under a variant */

/* "noisy: N of M repeats" under a variant with noisy windows, and why, for
 * the first NOISY_SHOWN of them. Returns whether any was noisy. */
static bool output_noisy(FILE *f, const Fleetbench__Benchmark *r)
{
	size_t n = 0, shown = 0;

	for (size_t k = 0; k < r->n_windows; k++)
		n += r->windows[k]->has_noisy && r->windows[k]->noisy;
	if (!n)
		return false;
	fprintf(f, "  %-14s %-16s noisy: %zu of %zu repeats\n", "", "", n,
		r->n_windows);
	for (size_t k = 0; k < r->n_windows && shown < NOISY_SHOWN; k++) {
		const Fleetbench__Window *w = r->windows[k];

		if (!w->has_noisy || !w->noisy)
			continue;
		fprintf(f, "  %-14s %-16s   repeat %zu: %s\n", "", "", k + 1,
			w->noisy_reason ? w->noisy_reason : "(no reason given)");
		shown++;
	}
	if (n > shown)
		fprintf(f, "  %-14s %-16s   (%zu more)\n", "", "", n - shown);
	return true;
}

/* One line of the cost table: a Cost's figures. */
static void output_cost(FILE *f, const Fleetbench__Cost *c)
{
	char allowance[16] = "-", rounds[16] = "-";

	if (c->has_allowance_s)
		snprintf(allowance, sizeof(allowance), "%.1f", c->allowance_s);
	if (c->has_rounds)
		snprintf(rounds, sizeof(rounds), "%lld", (long long)c->rounds);
	fprintf(f, "  %-16s %9.1f %11s %7s %9.1f %12.1f %12.1f\n",
		c->benchmark, c->wall_s, allowance, rounds, c->cpu_s,
		(double)c->peak_memory_bytes / 1048576.0,
		(double)c->written_bytes / 1048576.0);
}

/* What each benchmark cost the host (issue 36), and the run's total. */
static void output_costs(FILE *f, const Fleetbench__BenchRun *bench)
{
	if (!bench->n_costs)
		return;
	fprintf(f, "\ncost (each benchmark's process, setup to teardown)\n");
	fprintf(f, "  %-16s %9s %11s %7s %9s %12s %12s\n", "benchmark",
		"wall s", "allowance s", "rounds", "CPU s", "peak MiB",
		"written MiB");
	for (size_t i = 0; i < bench->n_costs; i++)
		output_cost(f, bench->costs[i]);
	if (bench->cost_total)
		output_cost(f, bench->cost_total);
}

void output_bench_table(FILE *f, const Fleetbench__BenchRun *bench,
			const struct bench_params *p)
{
	bool noisy_run = false, wide = false;

	if (p->adaptive)
		fprintf(f, "bench  profile %s, %lld to %lld repeats until every interval is within %lld%% (%lld s a benchmark), seed %lld, work dir %s\n",
			bench->profile ? bench->profile : "-", p->repeats,
			p->max_repeats, p->target_pct, p->budget_s,
			(long long)bench->seed, p->dir ? p->dir : "-");
	else
		fprintf(f, "bench  profile %s, %lld repeats, seed %lld, work dir %s\n",
			bench->profile ? bench->profile : "-", p->repeats,
			(long long)bench->seed, p->dir ? p->dir : "-");
	fprintf(f, "  %-14s %-16s %-22s %12s %12s %12s  %s\n", "benchmark",
		"variant", "metric", "median", "min", "max", "unit");
	for (size_t i = 0; i < bench->n_benchmarks; i++) {
		const Fleetbench__Benchmark *r = bench->benchmarks[i];
		bool noisy = false;

		if (r->skip_reason || r->failure) {
			fprintf(f, "  %-14s %-16s %s: %s\n", r->benchmark,
				r->variant, r->failure ? "FAILED" : "skipped",
				r->failure ? r->failure : r->skip_reason);
			continue;
		}
		for (size_t k = 0; k < r->n_metrics; k++) {
			const Fleetbench__Metric *m = r->metrics[k];
			struct stats_summary s = { .median = NAN,
						   .min = NAN,
						   .max = NAN };

			stats_summarize(m->samples, m->n_samples, &s);
			fprintf(f, "  %-14s %-16s %-22s %12.4g %12.4g %12.4g  %s\n",
				k ? "" : r->benchmark, k ? "" : r->variant,
				m->metric, s.median, s.min, s.max, m->unit);
		}
		noisy = output_noisy(f, r);
		noisy_run |= noisy;
	}
	if (bench->n_comparisons)
		fprintf(f, "\ncomparisons (ratio of medians, 95%% interval)\n");
	for (size_t i = 0; i < bench->n_comparisons; i++) {
		const Fleetbench__Comparison *c = bench->comparisons[i];
		char what[128], target[96] = "";

		snprintf(what, sizeof(what), "%s (%s %s/%s)", c->name,
			 c->metric, c->numerator, c->denominator);
		if (!c->has_ratio)
			fprintf(f, "  %-52s n/a: %s\n", what,
				c->reason ? c->reason : "");
		else if (!c->has_ci_low || !c->has_ci_high)
			fprintf(f, "  %-52s %7.3f  [no interval]%s\n", what,
				c->ratio,
				comparison_target(c, target, sizeof(target)));
		else
			fprintf(f, "  %-52s %7.3f  [%.3f, %.3f]%s\n", what,
				c->ratio, c->ci_low, c->ci_high,
				comparison_target(c, target, sizeof(target)));
		wide |= c->has_target_reached && !c->target_reached;
	}
	output_costs(f, bench);
	if (wide)
		fprintf(f, "\nwide: an interval marked so did not reach its target in the budget; measure more (--budget, --max-repeats) before trusting its digits\n");
	if (noisy_run)
		fprintf(f, "\nnoisy: some repeats ran with CPU steal or pressure above the thresholds (docs/bench.md); treat these figures with care\n");
}

void output_table(FILE *f, struct json_object *report)
{
	json_object_object_foreach(report, section, v)
	{
		fprintf(f, "%s\n", section);
		output_node(f, "", v, NULL);
		fputc('\n', f);
	}
}
