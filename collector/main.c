/* SPDX-License-Identifier: MIT */
/*
 * fleetbench-collector: the command line of the fleet's report collector.
 * This file only dispatches: each command is a cmd_<name>.c listed in the
 * table below, the settings and --help are settings.c's table.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cleanup.h"
#include "cli.h"
#include "cmd.h"
#include "log.h"

const char *arg_dir = ".";
const char *arg_name = "collector";
const char *arg_older_than;
bool arg_dry_run;
bool arg_force;
static const char *arg_config;

static const struct command {
	const char *name;
	int (*run)(const struct collector_config *cfg);
	/* keygen: takes --dir and --name, reads no config */
	bool keygen;
	/* prune: takes --older-than, --dry-run and --force */
	bool prune;
} commands[] = {
	{ "serve", cmd_serve, false, false },
	{ "migrate", cmd_migrate, false, false },
	{ "keygen", cmd_keygen, true, false },
	{ "prune", cmd_prune, false, true },
	{ "load", cmd_load, false, false },
};

static const struct cli_program program = {
	.name = "fleetbench-collector",
	.version = FLEETBENCH_VERSION,
	.usage = collector_usage,
	.commands = commands,
	.n_commands = ARRAY_SIZE(commands),
	.command_size = sizeof(commands[0]),
};

/* The installed schema, else the source tree's (a build tree). */
static const char *default_schema_dir(void)
{
	struct stat st;

	if (stat(FLEETBENCH_SCHEMA_DIR, &st) == 0 && S_ISDIR(st.st_mode))
		return FLEETBENCH_SCHEMA_DIR;
	return FLEETBENCH_SOURCE_SCHEMA_DIR;
}

static int load_config(struct collector_config *cfg, const struct cli *cli)
{
	if (cli_load_config(cli, arg_config, DEFAULT_CONFIG, cfg) < 0)
		return -1;
	if (!cfg->schema_dir) {
		cfg->schema_dir = strdup(default_schema_dir());
		if (!cfg->schema_dir)
			return log_error("out of memory");
	}
	return 0;
}

/*
 * Reads the options into arg_* and cli; *keygen_opts tells whether --dir
 * or --name was given, *prune_opts whether one of prune's. Exit status, or
 * -1 to go on.
 */
static int parse_options(struct cli *cli, int argc, char **argv,
			 bool *keygen_opts, bool *prune_opts)
{
	int c;

	optind = 2;
	while ((c = cli_getopt(cli, argc, argv)) != -1) {
		switch (c) {
		case 'c':
			arg_config = optarg;
			break;
		case OPT_DIR:
			arg_dir = optarg;
			*keygen_opts = true;
			break;
		case OPT_NAME:
			arg_name = optarg;
			*keygen_opts = true;
			break;
		case OPT_OLDER_THAN:
			arg_older_than = optarg;
			*prune_opts = true;
			break;
		case OPT_DRY_RUN:
			arg_dry_run = true;
			*prune_opts = true;
			break;
		case OPT_FORCE:
			arg_force = true;
			*prune_opts = true;
			break;
		case 'h':
			collector_usage(stdout);
			return 0;
		case 'V':
			cli_version(program.name, program.version);
			return 0;
		default: /* -EINVAL, logged */
			return 2;
		}
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct collector_config cfg = { 0 };
	const struct command *cmd;
	const void *found;
	struct cli cli;
	bool keygen_opts = false, prune_opts = false;
	int ret;

	log_init(program.name);
	ret = cli_start(&program, argc, argv, &found);
	if (ret >= 0)
		return ret;
	cmd = found;

	if (cli_init(&cli, collector_settings, collector_n_settings) < 0) {
		log_error("out of memory");
		ret = 1;
		goto out;
	}
	ret = parse_options(&cli, argc, argv, &keygen_opts, &prune_opts);
	if (ret >= 0)
		goto out;
	ret = 2;
	if (keygen_opts && !cmd->keygen) {
		log_error("--dir and --name are options of keygen only");
		goto out;
	}
	if (prune_opts && !cmd->prune) {
		log_error("--older-than, --dry-run and --force are options of prune only");
		goto out;
	}
	if (cmd->keygen) {
		if (cli.n_values) {
			log_error("keygen takes --dir and --name only, not --%s",
				  cli.values[0].key->flag);
			goto out;
		}
	} else if (load_config(&cfg, &cli) < 0) {
		goto out;
	}
	ret = cmd->run(&cfg);
out:
	config_release(collector_settings, collector_n_settings, &cfg);
	cli_release(&cli);
	return ret;
}
