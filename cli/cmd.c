/* SPDX-License-Identifier: MIT */
/* The query commands' shared options, connection and printing. */
#include "cmd.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"

enum {
	OPT_DSN = 0x7001,
	OPT_FORMAT,
	OPT_WIDE,
};

#define CMD_MAX_OPTIONS 32

static const struct option common_options[] = {
	{ "dsn", required_argument, NULL, OPT_DSN },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "wide", no_argument, NULL, OPT_WIDE },
	{ "help", no_argument, NULL, 'h' },
};

static const char common_usage[] =
	"common options:\n"
	"      --dsn CONNINFO       PostgreSQL conninfo or URI (default:\n"
	"                           $FLEETBENCH_DSN, else the PG* environment)\n"
	"      --format FORMAT      table (default), csv or json\n"
	"      --wide               a table of every column and digit (by\n"
	"                           default a table fits the terminal, or 100\n"
	"                           characters, and says what it left out)\n"
	"  -h, --help               show this help\n";

int cmd_getopt(struct cmd_ctx *ctx, int argc, char **argv,
	       const char *shortopts, const struct option *own,
	       const char *usage)
{
	struct option all[CMD_MAX_OPTIONS + ARRAY_SIZE(common_options) + 1];
	char shorts[64];
	size_t n = 0;
	int c;

	while (own && own[n].name && n < CMD_MAX_OPTIONS) {
		all[n] = own[n];
		n++;
	}
	memcpy(all + n, common_options, sizeof(common_options));
	memset(all + n + ARRAY_SIZE(common_options), 0, sizeof(all[0]));
	/* ':' first: getopt reports a missing value as ':' and is quiet */
	snprintf(shorts, sizeof(shorts), ":h%s", shortopts ? shortopts : "");
	opterr = 0;
	for (;;) {
		c = getopt_long(argc, argv, shorts, all, NULL);
		switch (c) {
		case OPT_DSN:
			ctx->dsn = optarg;
			continue;
		case OPT_FORMAT:
			if (out_format_parse(optarg, &ctx->format) < 0) {
				log_error("unknown --format '%s': table, csv or json",
					  optarg);
				return CMD_OPT_ERROR;
			}
			continue;
		case OPT_WIDE:
			ctx->wide = true;
			continue;
		case 'h':
			fputs(usage, stdout);
			fputs(common_usage, stdout);
			return CMD_OPT_HELP;
		case ':':
			log_error("option '%s' needs a value", argv[optind - 1]);
			return CMD_OPT_ERROR;
		case '?':
			log_error("unknown option '%s' (see --help)",
				  argv[optind - 1]);
			return CMD_OPT_ERROR;
		default:
			return c;
		}
	}
}

int cmd_no_operands(int argc, char **argv)
{
	if (optind < argc) {
		log_error("unexpected argument '%s' (see --help)", argv[optind]);
		return CMD_USAGE;
	}
	return CMD_OK;
}

int cmd_query(struct cmd_ctx *ctx, const char *sql, int nparams,
	      const char *const *values, PGresult **ret)
{
	char err[PG_ERR_LEN];
	int r;

	if (!ctx->pg) {
		ctx->pg = pg_new(ctx->dsn);
		if (!ctx->pg) {
			log_error("out of memory");
			return CMD_FAILED;
		}
	}
	if (!pg_connected(ctx->pg) && pg_connect(ctx->pg, err) < 0) {
		log_error("%s", err);
		return CMD_FAILED;
	}
	r = pg_query(ctx->pg, sql, nparams, values, ret, err);
	if (r == -EINVAL) {
		log_error("%s", err);
		return CMD_USAGE;
	}
	if (r < 0) {
		log_error("%s", err);
		return CMD_FAILED;
	}
	return CMD_OK;
}

int cmd_print(struct cmd_ctx *ctx, const char *sql, int nparams,
	      const char *const *values, const char *const *hide)
{
	PGresult *res = NULL;
	int r = cmd_query(ctx, sql, nparams, values, &res);

	return r == CMD_OK ? cmd_output(ctx, res, hide) : r;
}

/* fleetbench_why_empty()'s sentence for ctx->why on standard error; a
 * failure to ask is logged and does not change the answer (empty). */
void cmd_say_why_empty(struct cmd_ctx *ctx)
{
	const struct cmd_why *w = ctx->why;
	PGresult *res = NULL;

	if (!w)
		return;
	{
		const char *params[] = { w->what, w->filter, w->since,
					 w->method, w->metric, w->min_runs,
					 w->require };

		if (cmd_query(ctx,
			      "SELECT fleetbench_why_empty($1, $2::jsonb, "
			      "$3::timestamptz, $4, $5, $6::integer, "
			      "string_to_array($7, ','))",
			      7, params, &res) != CMD_OK)
			return;
	}
	if (PQntuples(res) == 1 && !PQgetisnull(res, 0, 0))
		log_info("%s", PQgetvalue(res, 0, 0));
	PQclear(res);
}

/* The terminal's width when standard output is one, else
 * CMD_TABLE_WIDTH. */
unsigned cmd_table_width(void)
{
	struct winsize ws;

	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 &&
	    ws.ws_col >= 40)
		return ws.ws_col;
	return CMD_TABLE_WIDTH;
}

int cmd_output(struct cmd_ctx *ctx, PGresult *res, const char *const *hide)
{
	struct out_narrow o = { .width = cmd_table_width(), .detail = ctx->detail,
				.note = stderr, .prog = "fleetbench" };
	bool empty = PQntuples(res) == 0;
	int r = ctx->format == OUT_TABLE && !ctx->wide ?
			out_print_narrow(stdout, res, hide, &o) :
			out_print(stdout, res, ctx->format, hide);

	PQclear(res);
	if (r < 0) {
		log_error("cannot print the result: %s", strerror(-r));
		return CMD_FAILED;
	}
	if (empty && ctx->format == OUT_TABLE)
		cmd_say_why_empty(ctx);
	return CMD_OK;
}

int cmd_method_option(int c, const char **method)
{
	const char *v;

	switch (c) {
	case CMD_OPT_METHOD:
	case CMD_OPT_PROFILE:
		v = optarg;
		break;
	case CMD_OPT_ALL_METHODS:
		v = "*";
		break;
	default:
		return 0;
	}
	if (*method && strcmp(*method, v)) {
		log_error("--method, --profile and --all-methods choose one method selection: give one");
		return -1;
	}
	*method = v;
	return 1;
}
