/* SPDX-License-Identifier: MIT */
/*
 * fleetbench-agent: the command line of the per-host agent. This file only
 * dispatches: each command is a cmd_<name>.c listed in the table below (as
 * git's builtins), the settings and --help are settings.c's table.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <string.h>

#include "cleanup.h"
#include "cli.h"
#include "cmd.h"
#include "log.h"

const char *arg_root = "/";
const char *arg_only;
const char *arg_name = "agent";
bool arg_json;
bool arg_no_send;
bool arg_if_kernel_changed;
static const char *arg_config;

static const struct command {
	const char *name;
	/* after the options and the config are read */
	int (*run)(struct agent_config *cfg, const struct cli *cli);
	/* instead, before: for a command that takes no options */
	int (*run_argv)(int argc, char **argv);
} commands[] = {
	{ "probe", cmd_probe, NULL },
	{ "bench", cmd_bench, NULL },
	{ "run", cmd_run, NULL },
	{ "send", cmd_send, NULL },
	{ "spool", cmd_spool, NULL },
	{ "keygen", cmd_keygen, NULL },
	{ "show", NULL, cmd_show },
};

static const struct cli_program program = {
	.name = "fleetbench-agent",
	.version = FLEETBENCH_VERSION,
	.usage = agent_usage,
	.commands = commands,
	.n_commands = ARRAY_SIZE(commands),
	.command_size = sizeof(commands[0]),
};

/* Reads the options into arg_* and cli. Exit status, or -1 to go on. */
static int parse_options(struct cli *cli, int argc, char **argv)
{
	int c;

	optind = 2;
	while ((c = cli_getopt(cli, argc, argv)) != -1) {
		switch (c) {
		case 'c':
			arg_config = optarg;
			break;
		case OPT_ROOT:
			arg_root = optarg;
			break;
		case OPT_JSON:
			arg_json = true;
			break;
		case OPT_ONLY:
			arg_only = optarg;
			break;
		case OPT_NAME:
			arg_name = optarg;
			break;
		case OPT_NO_SEND:
			arg_no_send = true;
			break;
		case OPT_IF_KERNEL_CHANGED:
			arg_if_kernel_changed = true;
			break;
		case 'h':
			agent_usage(stdout);
			return ST_OK;
		case 'V':
			cli_version(program.name, program.version);
			return ST_OK;
		case -ENOMEM:
			return ST_FAILURE;
		default: /* -EINVAL, logged */
			return ST_USAGE;
		}
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct agent_config cfg = { 0 };
	const struct command *cmd;
	const void *found;
	struct cli cli;
	int ret;

	log_init(program.name);
	ret = cli_start(&program, argc, argv, &found);
	if (ret >= 0)
		return ret;
	cmd = found;
	if (cmd->run_argv)
		return cmd->run_argv(argc, argv);

	if (cli_init(&cli, agent_settings, agent_n_settings) < 0) {
		log_error("out of memory");
		ret = ST_FAILURE;
		goto out;
	}
	ret = parse_options(&cli, argc, argv);
	if (ret >= 0)
		goto out;
	if (cli_load_config(&cli, arg_config, DEFAULT_CONFIG, &cfg) < 0) {
		ret = ST_USAGE;
		goto out;
	}
	ret = cmd->run(&cfg, &cli);
out:
	config_release(agent_settings, agent_n_settings, &cfg);
	cli_release(&cli);
	return ret;
}
