/* SPDX-License-Identifier: MIT */
/* Human-readable rendering of a report (the JSON document is the data). */
#ifndef FLEETBENCH_OUTPUT_H
#define FLEETBENCH_OUTPUT_H

#include <json-c/json.h>
#include <stdio.h>

#include "bench.h"

/*
 * Prints one section per top-level key and one aligned "key  value" row per
 * item, dotted for nesting: unknown items read "unknown (reason)", a
 * bracketed mode reads "madvise  (always madvise never)", and array elements
 * are labelled by their "name" (or index).
 */
void output_table(FILE *f, struct json_object *report);

/*
 * Prints a bench run (bench_suite_run() with p): one row per variant and
 * metric with median, min and max over the repeats, skipped variants with
 * their reason, failed ones with their failure, noisy repeats flagged,
 * then the comparisons with their confidence intervals.
 */
void output_bench_table(FILE *f, const Fleetbench__BenchRun *bench,
			const struct bench_params *p);

#endif
