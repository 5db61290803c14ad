/* SPDX-License-Identifier: MIT */
/*
 * What the `fleetbench` query commands share: the options every command
 * takes (--dsn, --format, --help), the connection, and "run one
 * parameterised query, print the result". Like the main loops, this logs.
 *
 * A command is a function run with its own argv (argv[0] is its name)
 * that returns the program's exit status: 0 done, 1 failed (the database
 * or the output), 2 bad usage. cli/fleetbench.c lists them.
 */
#ifndef FLEETBENCH_CMD_H
#define FLEETBENCH_CMD_H

#include <getopt.h>
#include <libpq-fe.h>
#include <stdbool.h>

#include "out.h"
#include "pg.h"

#define CMD_OK 0
#define CMD_FAILED 1
#define CMD_USAGE 2

/* What a command asked, for fleetbench_why_empty() (schema/functions/
 * 42_empty.sql) when its table has no row: what is compare, rank or
 * kernels, the others the parameters of its query (NULL: not given). */
struct cmd_why {
	const char *what, *filter, *since, *method, *metric, *min_runs,
		*require;
};

struct cmd_ctx {
	const char *dsn; /* --dsn, else $FLEETBENCH_DSN, else NULL: PG* */
	enum out_format format; /* --format, default table */
	struct pg *pg; /* connected by the first cmd_query() */
	bool wide; /* --wide: a table of every column and digit */
	/* a table's column printed under each row (out_narrow.detail) */
	const char *detail;
	/* set by a command: an empty table says why on standard error */
	const struct cmd_why *why;
};

/* The width a table fits when not --wide: the terminal's, else this. */
#define CMD_TABLE_WIDTH 100

/* The commands (query.c, report.c). */
int cmd_compare(struct cmd_ctx *ctx, int argc, char **argv);
int cmd_rank(struct cmd_ctx *ctx, int argc, char **argv);
int cmd_kernels(struct cmd_ctx *ctx, int argc, char **argv);
int cmd_advise(struct cmd_ctx *ctx, int argc, char **argv);
int cmd_report(struct cmd_ctx *ctx, int argc, char **argv);
int cmd_alerts(struct cmd_ctx *ctx, int argc, char **argv); /* alerts.c */
/* gate.c: exits 0 pass, 1 fail, 3 waiting, 2 usage, 4 database/output */
int cmd_gate(struct cmd_ctx *ctx, int argc, char **argv);

/* The method selection of compare, rank, kernels and report (values below
 * cmd_getopt()'s reserved 0x7000). */
enum {
	CMD_OPT_METHOD = 0x6000,
	CMD_OPT_PROFILE,
	CMD_OPT_ALL_METHODS,
};

#define CMD_METHOD_OPTIONS                                              \
	{ "method", required_argument, NULL, CMD_OPT_METHOD },          \
	{ "profile", required_argument, NULL, CMD_OPT_PROFILE },        \
	{ "all-methods", no_argument, NULL, CMD_OPT_ALL_METHODS }
#define CMD_METHOD_USAGE                                                             \
	"      --method KEY         only runs of this method key (e.g. standard,\n"  \
	"                           standard+chase_bytes=64M); default: standard,\n" \
	"                           else the method most run in the selection\n"    \
	"      --profile NAME       only runs of the profile NAME's own method\n"    \
	"                           (the method key NAME)\n"                         \
	"      --all-methods        every method, each row of one (never mixed)\n"

/*
 * --method KEY, --profile NAME, --all-methods: handles c when it is one
 * of them, setting *method to the method_key argument of the *_by()
 * functions (NULL: the default selection, "*": every method). Returns 1
 * handled, 0 not one of them, or -1 (logged: two of them).
 */
int cmd_method_option(int c, const char **method);

/*
 * --where KEY=VALUE (query.c): adds arg to *filter (made on first use; a
 * key given again takes any of its values; the database checks the keys,
 * tag.KEY among them). 0, or logs and returns -EINVAL or -ENOMEM.
 * cmd_filter_param(): the filter as a query's jsonb parameter, NULL
 * without any --where.
 */
struct json_object;
int cmd_where(struct json_object **filter, const char *arg);
const char *cmd_filter_param(struct json_object *filter);

/* What cmd_getopt() returns besides an option and -1. */
#define CMD_OPT_HELP (-2) /* --help: the usage is printed, exit 0 */
#define CMD_OPT_ERROR (-3) /* logged: exit CMD_USAGE */

/*
 * getopt_long over the command's own options (own, terminated by a zeroed
 * entry; their values must not be 'h' nor at or above 0x7000) and the
 * common ones, which it handles itself: --dsn, --format and -h/--help
 * (which prints usage, then the common options, to standard output).
 * Returns the next own option's value, -1 when the options are done
 * (optind is then the first operand), CMD_OPT_HELP or CMD_OPT_ERROR.
 */
int cmd_getopt(struct cmd_ctx *ctx, int argc, char **argv,
	       const char *shortopts, const struct option *own,
	       const char *usage);

/* Logs "unexpected argument" and returns CMD_USAGE when operands remain
 * after the options, else CMD_OK. */
int cmd_no_operands(int argc, char **argv);

/*
 * Connects on first use, then runs sql with its text parameters (NULL is
 * SQL NULL). Returns 0 with *ret (PQclear it), or logs the server's error
 * and returns CMD_FAILED (CMD_USAGE when the parameters were at fault:
 * SQLSTATE classes 22 and 23).
 */
int cmd_query(struct cmd_ctx *ctx, const char *sql, int nparams,
	      const char *const *values, PGresult **ret);

/* cmd_query(), then out_print() of the result to standard output in the
 * chosen format, without the columns in hide (NULL-terminated, or NULL).
 * Returns the exit status. */
int cmd_print(struct cmd_ctx *ctx, const char *sql, int nparams,
	      const char *const *values, const char *const *hide);

/* out_print() of res to standard output in the chosen format, without
 * the columns in hide, then PQclear(res); a table is out_print_narrow()'s
 * within the terminal's width (CMD_TABLE_WIDTH when standard output is
 * not one) unless --wide, and one without a row says why (ctx->why).
 * Returns the exit status. */
int cmd_output(struct cmd_ctx *ctx, PGresult *res, const char *const *hide);

/* The terminal's width when standard output is one, else
 * CMD_TABLE_WIDTH. */
unsigned cmd_table_width(void);

/* fleetbench_why_empty()'s sentence for ctx->why on standard error (a
 * failure to ask it is logged). */
void cmd_say_why_empty(struct cmd_ctx *ctx);

/* kernels' table (kernels_delta.c): each kernel against the one before,
 * one line per figure (fleet_kernels_delta()). Returns the exit status;
 * *none set when there is no pair of kernels to print. */
int kernels_benchstat(struct cmd_ctx *ctx, const char *filter,
		      const char *since, const char *method, bool *none);

#endif
