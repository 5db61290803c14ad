/* SPDX-License-Identifier: MIT */
/*
 * spool_add_metric: adds metrics to the reports waiting in a spool, as a
 * newer agent's benchmarks would measure them, for
 * tests/integration/test_metric.sh (through spool_metric.py add):
 *
 *   spool_add_metric [--unit BENCH/VARIANT/METRIC=UNIT]... SPOOL SAMPLES
 *
 * SAMPLES is a JSON object {run_id: {"BENCH/VARIANT/METRIC": [sample,
 * ...]}} with an entry for every spooled report and a spooled report for
 * every entry. Each report is read with spool_read_file() and unpacked and
 * validated by the codec; each metric goes into the report's benchmark of
 * that BENCH and VARIANT, or into a new benchmark of that name when the
 * report has none, with the unit its --unit gives. The report is then
 * validated again, packed and put back over the old file with
 * spool_replace() (atomic and durable, docs/spool.md). Prints "N reports
 * changed"; exit 0, or 1 with the first problem, naming the run. Samples
 * that do not match the spool (a run missing on either side, a metric
 * without --unit, a sample that is no number) change no report.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "clock.h"
#include "codec.h"
#include "spool.h"
#include "tool.h"

/* metrics added to one report, benchmarks whose metrics change */
#define EDIT_MAX 64
#define MAX_UNITS 64
/* a metric, its name, unit and samples; a benchmark, its name and variant */
#define OWN_PER_METRIC 7

#define ERR_LEN 512

static struct unit {
	const char *name; /* BENCH/VARIANT/METRIC */
	const char *unit;
} units[MAX_UNITS];
static const char *arg_units[MAX_UNITS]; /* NAME=UNIT */
static size_t arg_n_units;

static const struct tool_opt opts[] = {
	TOOL_OPT_LIST("unit", arg_units, &arg_n_units),
};

static const struct tool tool = TOOL("spool_add_metric", opts,
	"usage: spool_add_metric [--unit BENCH/VARIANT/METRIC=UNIT]... SPOOL SAMPLES_JSON\n",
	.min_args = 2, .max_args = 2);

/*
 * One report's additions. The unpacked report belongs to the codec's arena;
 * what is added belongs to this tool: new pointer arrays are swapped into
 * the report for packing and the report's own arrays put back before
 * codec_free_report(), so neither frees the other's memory.
 */
struct edit {
	Fleetbench__Report *r;
	bool benchmarks_swapped;
	Fleetbench__Benchmark **orig_benchmarks;
	size_t orig_n_benchmarks;
	struct edited_bench {
		Fleetbench__Benchmark *b;
		Fleetbench__Metric **orig;
		size_t orig_n;
	} bench[EDIT_MAX];
	size_t n_bench;
	void *owned[OWN_PER_METRIC * EDIT_MAX];
	size_t n_owned;
};

static const char *unit_of(const char *name)
{
	for (size_t i = 0; i < arg_n_units; i++)
		if (!strcmp(units[i].name, name))
			return units[i].unit;
	return NULL;
}

/* p, owned by e from now on (freed by edit_release); NULL: -ENOMEM */
static void *own(struct edit *e, void *p)
{
	if (!p)
		return NULL;
	if (e->n_owned == ARRAY_SIZE(e->owned)) {
		free(p);
		return NULL;
	}
	e->owned[e->n_owned++] = p;
	return p;
}

/* Puts the report's own arrays back and frees what the edit added. */
static void edit_release(struct edit *e)
{
	while (e->n_bench) {
		struct edited_bench *eb = &e->bench[--e->n_bench];

		free(eb->b->metrics);
		eb->b->metrics = eb->orig;
		eb->b->n_metrics = eb->orig_n;
	}
	if (e->benchmarks_swapped) {
		free(e->r->benchmarks);
		e->r->benchmarks = e->orig_benchmarks;
		e->r->n_benchmarks = e->orig_n_benchmarks;
		e->benchmarks_swapped = false;
	}
	while (e->n_owned)
		free(e->owned[--e->n_owned]);
}

/* The benchmark BENCH/VARIANT of the report, added when it has none. */
static Fleetbench__Benchmark *edit_benchmark(struct edit *e, const char *bench,
					     const char *variant)
{
	Fleetbench__Report *r = e->r;
	Fleetbench__Benchmark *b, **v;

	for (size_t i = 0; i < r->n_benchmarks; i++)
		if (!strcmp(r->benchmarks[i]->benchmark, bench) &&
		    !strcmp(r->benchmarks[i]->variant, variant))
			return r->benchmarks[i];
	b = own(e, malloc(sizeof(*b)));
	if (!b)
		return NULL;
	fleetbench__benchmark__init(b);
	b->benchmark = own(e, strdup(bench));
	b->variant = own(e, strdup(variant));
	v = malloc((r->n_benchmarks + 1) * sizeof(*v));
	if (!b->benchmark || !b->variant || !v) {
		free(v);
		return NULL;
	}
	if (r->n_benchmarks)
		memcpy(v, r->benchmarks, r->n_benchmarks * sizeof(*v));
	v[r->n_benchmarks] = b;
	if (e->benchmarks_swapped) {
		free(r->benchmarks);
	} else {
		e->orig_benchmarks = r->benchmarks;
		e->orig_n_benchmarks = r->n_benchmarks;
		e->benchmarks_swapped = true;
	}
	r->benchmarks = v;
	r->n_benchmarks++;
	return b;
}

/* Appends m to b's metrics, in a new array the edit owns. */
static int edit_append(struct edit *e, Fleetbench__Benchmark *b,
		       Fleetbench__Metric *m)
{
	struct edited_bench *eb = NULL;
	Fleetbench__Metric **v;

	for (size_t i = 0; i < e->n_bench; i++)
		if (e->bench[i].b == b)
			eb = &e->bench[i];
	if (!eb && e->n_bench == EDIT_MAX)
		return -E2BIG;
	v = malloc((b->n_metrics + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (b->n_metrics)
		memcpy(v, b->metrics, b->n_metrics * sizeof(*v));
	v[b->n_metrics] = m;
	if (eb) {
		free(b->metrics);
	} else {
		eb = &e->bench[e->n_bench++];
		eb->b = b;
		eb->orig = b->metrics;
		eb->orig_n = b->n_metrics;
	}
	b->metrics = v;
	b->n_metrics++;
	return 0;
}

/*
 * Checks an entry of a run's samples before any report is touched: NAME is
 * BENCH/VARIANT/METRIC with a --unit, its value an array of numbers.
 * Returns 0 or -EINVAL with err saying why.
 */
static int check_metric(const char *name, struct json_object *samples,
			char err[ERR_LEN])
{
	const char *s1 = strchr(name, '/');
	const char *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
	size_t n;

	if (!s1 || !s2 || s1 == name || s2 == s1 + 1 || !s2[1] ||
	    strchr(s2 + 1, '/')) {
		snprintf(err, ERR_LEN, "'%s' is not BENCH/VARIANT/METRIC",
			 name);
		return -EINVAL;
	}
	if (!unit_of(name)) {
		snprintf(err, ERR_LEN, "no --unit for '%s'", name);
		return -EINVAL;
	}
	if (!json_object_is_type(samples, json_type_array)) {
		snprintf(err, ERR_LEN, "'%s': the samples are not an array",
			 name);
		return -EINVAL;
	}
	n = json_object_array_length(samples);
	for (size_t i = 0; i < n; i++) {
		struct json_object *x = json_object_array_get_idx(samples, i);

		if (!json_object_is_type(x, json_type_double) &&
		    !json_object_is_type(x, json_type_int)) {
			snprintf(err, ERR_LEN,
				 "'%s': sample %zu is not a number", name, i);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * Adds the metric NAME (BENCH/VARIANT/METRIC, check_metric() passed) with
 * the samples of the JSON array to the report. Returns 0 or -errno with
 * err saying why.
 */
static int add_metric(struct edit *e, const char *name,
		      struct json_object *samples, char err[ERR_LEN])
{
	const char *s1 = strchr(name, '/');
	const char *s2 = strchr(s1 + 1, '/');
	size_t n = json_object_array_length(samples);
	_cleanup_free_ char *bench = NULL, *variant = NULL;
	Fleetbench__Benchmark *b;
	Fleetbench__Metric *m;

	if (e->n_owned + OWN_PER_METRIC > ARRAY_SIZE(e->owned)) {
		snprintf(err, ERR_LEN, "more than %d metrics to add", EDIT_MAX);
		return -E2BIG;
	}
	bench = strndup(name, (size_t)(s1 - name));
	variant = strndup(s1 + 1, (size_t)(s2 - s1 - 1));
	m = own(e, malloc(sizeof(*m)));
	if (!bench || !variant || !m)
		goto oom;
	fleetbench__metric__init(m);
	m->metric = own(e, strdup(s2 + 1));
	m->unit = own(e, strdup(unit_of(name)));
	m->samples = own(e, malloc((n ? n : 1) * sizeof(double)));
	if (!m->metric || !m->unit || !m->samples)
		goto oom;
	for (size_t i = 0; i < n; i++)
		m->samples[i] = json_object_get_double(
			json_object_array_get_idx(samples, i));
	m->n_samples = n;
	b = edit_benchmark(e, bench, variant);
	if (!b)
		goto oom;
	if (edit_append(e, b, m) < 0) {
		snprintf(err, ERR_LEN,
			 "more than %d benchmarks to add metrics to", EDIT_MAX);
		return -E2BIG;
	}
	return 0;
oom:
	snprintf(err, ERR_LEN, "out of memory");
	return -ENOMEM;
}

/*
 * Adds to the report in spool entry ent the metrics of its run in
 * samples, and puts it back. Returns 0 or -errno with err naming the run.
 */
static int edit_report(struct spool *s, const char *dir,
		       const struct spool_entry *ent, struct json_object *mine,
		       char err[ERR_LEN])
{
	char why[ERR_LEN > CODEC_ERR_LEN ? ERR_LEN : CODEC_ERR_LEN] = "";
	_cleanup_free_ char *path = NULL;
	_cleanup_free_ uint8_t *data = NULL, *out = NULL;
	struct edit e = {0};
	size_t len, out_len;
	int r;

	if (asprintf(&path, "%s/%s", dir, ent->name) < 0) {
		path = NULL;
		snprintf(err, ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	r = spool_read_file(path, &data, &len, why);
	if (r < 0) {
		snprintf(err, ERR_LEN, "%s", why);
		return r;
	}
	r = codec_unpack_report(data, len, &e.r, why);
	if (r < 0) {
		snprintf(err, ERR_LEN, "'%s': %s", path, why);
		codec_free_report(e.r);
		return r;
	}
	if (strcmp(e.r->run_id, ent->run_id)) {
		snprintf(err, ERR_LEN, "'%s' holds the report of run %s", path,
			 e.r->run_id);
		codec_free_report(e.r);
		return -EINVAL;
	}
	json_object_object_foreach (mine, name, samples) {
		r = add_metric(&e, name, samples, why);
		if (r < 0) {
			snprintf(err, ERR_LEN, "run %s: %s", ent->run_id, why);
			goto out;
		}
	}
	/* what a collector would say of it, before it goes back */
	r = codec_validate_report(e.r, wall_ms(), why);
	if (r < 0) {
		snprintf(err, ERR_LEN, "run %s with the metrics added: %s",
			 ent->run_id, why);
		goto out;
	}
	r = codec_pack_report(e.r, &out, &out_len);
	if (r < 0) {
		snprintf(err, ERR_LEN, "run %s: cannot pack it: %s",
			 ent->run_id, strerror(-r));
		goto out;
	}
	r = spool_replace(s, ent->run_id, out, out_len, why);
	if (r < 0)
		snprintf(err, ERR_LEN, "%s", why);
out:
	edit_release(&e);
	codec_free_report(e.r);
	return r;
}

/*
 * Before any report changes: every spooled report (v, n) has an object of
 * samples, every run of the samples is spooled, every metric passes
 * check_metric(). Returns 0 or -errno with err naming the run.
 */
static int check_samples(const struct spool_entry *v, int n,
			 struct json_object *samples, const char *dir,
			 char err[ERR_LEN])
{
	char why[ERR_LEN];

	for (int i = 0; i < n; i++) {
		struct json_object *mine;

		if (!json_object_object_get_ex(samples, v[i].run_id, &mine) ||
		    !json_object_is_type(mine, json_type_object)) {
			snprintf(err, ERR_LEN,
				 "spooled report %s has no object in the "
				 "samples",
				 v[i].run_id);
			return -EINVAL;
		}
		json_object_object_foreach (mine, name, values) {
			if (check_metric(name, values, why) < 0) {
				snprintf(err, ERR_LEN, "run %s: %s",
					 v[i].run_id, why);
				return -EINVAL;
			}
		}
	}
	json_object_object_foreach (samples, run_id, unused) {
		bool spooled = false;

		(void)unused;
		for (int i = 0; i < n && !spooled; i++)
			spooled = !strcmp(v[i].run_id, run_id);
		if (!spooled) {
			snprintf(err, ERR_LEN,
				 "run %s has samples but no report in spool "
				 "'%s'",
				 run_id, dir);
			return -ENOENT;
		}
	}
	return 0;
}

/*
 * Every spooled report gets the metrics of its run. Returns the count of
 * reports changed or -errno with err saying why.
 */
static int edit_spool(const char *dir, struct json_object *samples,
		      char err[ERR_LEN])
{
	char why[SPOOL_ERR_LEN] = "";
	_cleanup_free_ struct spool_entry *v = NULL;
	struct spool *s;
	int n, r;

	s = spool_open(dir, 0, why);
	if (!s) {
		snprintf(err, ERR_LEN, "%s", why);
		return -errno;
	}
	n = spool_list(s, &v);
	if (n < 0) {
		snprintf(err, ERR_LEN, "cannot list spool '%s': %s", dir,
			 strerror(-n));
		r = n;
		goto out;
	}
	r = check_samples(v, n, samples, dir, err);
	for (int i = 0; i < n && r >= 0; i++) {
		struct json_object *mine;

		json_object_object_get_ex(samples, v[i].run_id, &mine);
		r = edit_report(s, dir, &v[i], mine, err);
	}
out:
	spool_close(s);
	return r < 0 ? r : n;
}

int main(int argc, char **argv)
{
	char err[ERR_LEN] = "";
	struct json_object *samples;
	int args, r;

	args = tool_parse(&tool, argc, argv);
	for (size_t i = 0; i < arg_n_units; i++) {
		char *eq = strchr(arg_units[i], '=');

		if (!eq || eq == arg_units[i] || !eq[1])
			tool_usage_error(&tool, "--unit '%s' is not NAME=UNIT",
					 arg_units[i]);
		*eq = '\0';
		units[i] = (struct unit){ arg_units[i], eq + 1 };
	}
	samples = json_object_from_file(argv[args + 1]);
	if (!samples || !json_object_is_type(samples, json_type_object)) {
		const char *why =
			samples ? "not an object" : json_util_get_last_err();

		fprintf(stderr,
			"spool_add_metric: '%s' is not a JSON object of "
			"samples: %s\n",
			argv[args + 1], why ? why : "unreadable");
		json_object_put(samples);
		return 1;
	}
	r = edit_spool(argv[args], samples, err);
	json_object_put(samples);
	if (r < 0) {
		fprintf(stderr, "spool_add_metric: %s\n", err);
		return 1;
	}
	printf("%d reports changed\n", r);
	return 0;
}
