/* SPDX-License-Identifier: MIT */
/*
 * Helpers for benchmark tests: look up the parts of a bench report. They
 * leave jstr()'s buffer alone, so a string it returned stays valid.
 */
#ifndef FLEETBENCH_BENCH_TEST_H
#define FLEETBENCH_BENCH_TEST_H

#include <json-c/json.h>

/* The entry of "results" for benchmark bench, variant variant; NULL if none. */
struct json_object *jresult(struct json_object *report, const char *bench,
			    const char *variant);

/* The entry of a result's "metrics" named metric; NULL if none. */
struct json_object *jmetric(struct json_object *res, const char *metric);

/* The entry of "comparisons" named name; NULL if none. */
struct json_object *jcomparison(struct json_object *report, const char *name);

#endif
