/* SPDX-License-Identifier: MIT */
/*
 * fleetbench: the fleet's questions answered from the collector's
 * database. One static table of commands, each "run one parameterised
 * query against a view, print the result" (cli/cmd.h).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "cmd.h"
#include "log.h"
#include "prices.h"

struct command {
	const char *name;
	int (*run)(struct cmd_ctx *ctx, int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "compare", cmd_compare,
	  "headline figures per group (provider, instance type, kernel, ...),\n"
	  "           or any one metric (--metric NAME)" },
	{ "rank", cmd_rank,
	  "instance types ordered by one figure, best first, ties shown" },
	{ "kernels", cmd_kernels,
	  "one instance type's figures per kernel release, and what changed" },
	{ "advise", cmd_advise,
	  "what to set on an instance type and kernel (THP, I/O engine,\n"
	  "           SQPOLL, hugetlb), each point with its evidence" },
	{ "report", cmd_report,
	  "write a self-contained HTML report with charts" },
	{ "alerts", cmd_alerts, "list kernel upgrade alerts; 'alerts ack ID' acknowledges" },
	{ "gate", cmd_gate,
	  "may kernel RELEASE roll on? its canaries compared by the alert\n"
	  "           rules: exit 0 pass, 1 fail, 3 waiting (gate --help)" },
	{ "prices", cmd_prices,
	  "'prices import FILE.csv' stores instance prices; 'prices list'" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: fleetbench [--dsn CONNINFO] [--format FORMAT] COMMAND [OPTIONS]\n"
		   "\n"
		   "commands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-9s%s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n"
		   "options (also taken after the command):\n"
		   "      --dsn CONNINFO   PostgreSQL conninfo or URI (default:\n"
		   "                       $FLEETBENCH_DSN, else the PG* environment)\n"
		   "      --format FORMAT  table (default), csv or json\n"
		   "  -h, --help           show this help (COMMAND --help: the command's)\n"
		   "  -V, --version        show the version\n"
		   "\n"
		   "Exit status: 0 done, 1 the database or the output failed, 2 bad usage\n"
		   "(gate's differ: 0 pass, 1 fail, 3 waiting, 4 the database failed).\n"
		   "docs/queries.md describes every command, column and view.\n");
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "dsn", required_argument, NULL, 'd' },
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct cmd_ctx ctx = { .dsn = getenv("FLEETBENCH_DSN") };
	const struct command *cmd = NULL;
	int c, ret;

	log_init("fleetbench");
	opterr = 0;
	/* '+': stop at the command, whose options are its own */
	while ((c = getopt_long(argc, argv, "+:hV", options, NULL)) != -1) {
		switch (c) {
		case 'd':
			ctx.dsn = optarg;
			break;
		case 'f':
			if (out_format_parse(optarg, &ctx.format) < 0) {
				log_error("unknown --format '%s': table, csv or json",
					  optarg);
				return CMD_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return CMD_OK;
		case 'V':
			printf("fleetbench %s\n", FLEETBENCH_VERSION);
			return CMD_OK;
		case ':':
			log_error("option '%s' needs a value", argv[optind - 1]);
			return CMD_USAGE;
		default:
			log_error("unknown option '%s' (see --help)",
				  argv[optind - 1]);
			return CMD_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return CMD_USAGE;
	}
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(argv[optind], commands[i].name))
			cmd = &commands[i];
	if (!cmd) {
		log_error("unknown command '%s' (see --help)", argv[optind]);
		return CMD_USAGE;
	}
	argc -= optind;
	argv += optind;
	optind = 0; /* glibc: start afresh, at argv[1] */
	ret = cmd->run(&ctx, argc, argv);
	pg_free(ctx.pg);
	return ret;
}
