/* SPDX-License-Identifier: MIT */
/*
 * Helpers for benchmark tests: look up the parts of a bench report as the
 * agent's `bench --json` prints it (pbjson of a Fleetbench__BenchRun,
 * docs/bench.md). They leave jstr()'s buffer alone, so a string it
 * returned stays valid.
 */
#ifndef FLEETBENCH_BENCH_TEST_H
#define FLEETBENCH_BENCH_TEST_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fleetbench.pb-c.h"

struct bench_params;

/* bench_suite_run() of p and only, as JSON (jbench()): 0 and *ret, or its
 * -errno with err. */
int jbench_run(const struct bench_params *p, const char *only,
	       struct json_object **ret, char *err, size_t errlen);

/* The quick profile as the bench tests start from it: work directory
 * /tmp, seed 42, steal threshold 5%. 0, or bench_params_profile()'s
 * -errno. */
int jbench_quick(struct bench_params *p);

/* The number of variants of a bench report that have a "failure". */
size_t jfailed(struct json_object *report);

/* The entries of directory path but "." and "..": what a benchmark left
 * in its work directory (0). -1 when it cannot be opened. */
int bench_dir_entries(const char *path);

/* The JSON the agent prints for b (pbjson_from_message()); NULL for NULL. */
struct json_object *jbench(const Fleetbench__BenchRun *b);

/* The entry of "benchmarks" for benchmark bench, variant variant; NULL if
 * none. */
struct json_object *jresult(struct json_object *report, const char *bench,
			    const char *variant);

/* The entry of a result's "metrics" named metric; NULL if none. */
struct json_object *jmetric(struct json_object *res, const char *metric);

/* The entry of "comparisons" named name; NULL if none. */
struct json_object *jcomparison(struct json_object *report, const char *name);

/* A variant's status as docs/bench.md derives it: "failed" when it has a
 * "failure", "skipped" when it has a "skip_reason", else "ok"; "<missing>"
 * for NULL. */
const char *jstatus(struct json_object *res);

/* The entry of a variant's "parameters" whose "key" is key; NULL if none. */
struct json_object *jparam(struct json_object *res, const char *key);

/* Its int_value (INT64_MIN when absent) and string_value ("<missing>"). */
int64_t jpint(struct json_object *res, const char *key);
const char *jpstr(struct json_object *res, const char *key);

/* The median of a metric's "samples" (the mean of the middle two of an
 * even count); NaN when it has none. */
double jmedian(struct json_object *metric);

/*
 * Whether a variant has metric with n "samples", each within [lo, hi];
 * when not, why says what differs ("4k ns_per_access sample 2e+06 not in
 * [0.001, 1e+06]"), for the test's CHECK_(ok, "%s", why).
 */
bool jsamples_within(struct json_object *res, const char *metric, size_t n,
		     double lo, double hi, char *why, size_t whylen);

/* Whether any of a variant's "windows" is "noisy". */
int jnoisy(struct json_object *res);

#endif
