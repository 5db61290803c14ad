/* SPDX-License-Identifier: MIT */
/*
 * Instance prices and price/performance (cli/prices.c): `fleetbench
 * prices import FILE.csv`, `fleetbench prices list`, `fleetbench rank
 * --per-price` and the report's price/performance section. The SQL is
 * schema/functions/48_prices.sql's. Like the commands, this logs.
 */
#ifndef FLEETBENCH_PRICES_H
#define FLEETBENCH_PRICES_H

#include <stdio.h>

#include "cmd.h"

/* fleetbench prices import FILE | list: the command (cli/fleetbench.c). */
int cmd_prices(struct cmd_ctx *ctx, int argc, char **argv);

/* What `fleetbench rank --per-price` was given (NULL: not given). */
struct prices_rank_args {
	const char *metric; /* NULL: every absolute figure */
	const char *currency; /* NULL: the prices' one currency */
	const char *require; /* comma-separated capabilities */
	const char *min_runs;
	const char *filter; /* the --where object as JSON text */
	const char *since;
	const char *method; /* as cmd_method_option() sets it */
};

/*
 * rank --per-price: fleet_rank_per_price() printed in the chosen format,
 * the method said once above a table of one method. Returns the exit
 * status.
 */
int prices_rank(struct cmd_ctx *ctx, const struct prices_rank_args *a);

/* The report's price/performance section (cli/html_prices.c). */
struct prices_report;

/*
 * Queries what the section shows: per currency of the prices in effect,
 * each absolute figure per unit price of the priced instance types
 * (fleet_rank_per_price(), every run counted: min_runs 1), and the
 * unpriced ones. *ret is NULL when the database holds no price in effect
 * (the report then has no such section). since, method and filter (the
 * --where filter as jsonb, NULL: all runs) are the report's. Returns the
 * exit status (the error logged).
 */
int prices_report_query(struct cmd_ctx *ctx, const char *since,
			const char *method, const char *filter,
			struct prices_report **ret);

/*
 * Writes the section to f: per currency, a chart (html_chart()) of each
 * figure some priced type measured, and the unpriced types named.
 * Nothing for NULL.
 */
void prices_report_write(FILE *f, const struct prices_report *p);

void prices_report_free(struct prices_report *p);

#endif
