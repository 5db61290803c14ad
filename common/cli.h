/* SPDX-License-Identifier: MIT */
/*
 * The command line both programs share, made from a program's settings
 * table (config.h): each entry with a flag is a long option, those with a
 * key set it after the config file is read, and --help's option lines and
 * list of config keys are printed from the same entries.
 */
#ifndef FLEETBENCH_CLI_H
#define FLEETBENCH_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "config.h"

/*
 * getopt values from CLI_OPT_FLAG up are the keyed flags' own: the opt of
 * a flag without a key is below it (a letter, or a program's enum).
 */
#define CLI_OPT_FLAG 0x1000

/* The column --help's option lines start their help text at. */
#define CLI_HELP_COLUMN 27

/*
 * Entries of a settings table (config.h): a flag that sets no config key,
 * --NAME [ARG] (-SHORT, 0: none), for which cli_getopt() returns opt; a
 * heading line of --help.
 */
#define CLI_FLAG(nm, shrt, argname, o, text)                                \
	{                                                                     \
		.flag = (nm), .short_flag = (shrt), .arg = (argname),           \
		.opt = (o), .help = (text)                                      \
	}
#define CLI_HEADING(text) { .help = (text) }

/* A keyed flag given on the command line and the value it sets its key to. */
struct cli_value {
	const struct config_key *key;
	const char *value;
	char *owned; /* a list flag's joined values */
};

struct cli {
	const struct config_key *settings;
	size_t n_settings;
	struct option *options; /* one per flag */
	char *shortopts; /* ':' and the one-letter forms */
	/* the keyed flags given, each once: a repeated flag's last value wins */
	struct cli_value *values;
	size_t n_values;
};

/*
 * Sets up cli for getopt_long over the flags of the n settings. A flag
 * without an arg is a switch: it takes no value, and when it has a key (a
 * CONFIG_BOOL) it sets the key true. Returns 0 or -ENOMEM; cli_release()
 * frees what it allocates either way.
 */
int cli_init(struct cli *cli, const struct config_key *settings, size_t n);

/*
 * getopt_long() from optind, without getopt's messages. Records every keyed
 * flag itself and returns the opt of the next flag without a key, or -1
 * when all are read. Logs and returns -EINVAL for a missing value, an
 * unknown option or an argument left over, and -ENOMEM when a list flag
 * cannot be joined.
 */
int cli_getopt(struct cli *cli, int argc, char **argv);

/*
 * Fills cfg: the keys' defaults, then the config file at path (or at
 * default_path when path is NULL, which may be absent), then the flags.
 * Logs the first error and returns it as -errno.
 */
int cli_load_config(const struct cli *cli, const char *path,
		    const char *default_path, void *cfg);

/* The value of the keyed flag named flag, or NULL when it was not given. */
const char *cli_value(const struct cli *cli, const char *flag);

/* Whether a flag given sets the config key named name. */
bool cli_sets_key(const struct cli *cli, const char *name);

/* Frees what cli_init() and cli_getopt() allocated. */
void cli_release(struct cli *cli);

/*
 * --help: a line per flag ("  -c, --config FILE", its help from
 * CLI_HELP_COLUMN on, a line more per '\n' of it) and per heading, in the
 * table's order.
 */
void cli_usage_options(FILE *f, const struct config_key *settings, size_t n);

/*
 * --help: the config file's keys, by section in the table's order,
 * "[section] key, key (--flag); [section] ...", a key's flag named where
 * its name is not the key's with '-' for '_'; wrapped before 80 columns.
 */
void cli_usage_keys(FILE *f, const struct config_key *settings, size_t n);

/* The prose of a program's --help around what the settings table makes. */
struct cli_help {
	const char *head; /* usage and commands, before "options:" */
	const char *keys; /* introduces the config keys, after the options */
	const char *tail; /* after the config keys */
};

/* --help: head, "options:" and the option lines, keys and the keys, tail. */
void cli_usage(FILE *f, const struct cli_help *help,
	       const struct config_key *settings, size_t n);

/* What a program's main() hands cli_start(). */
struct cli_program {
	const char *name; /* "fleetbench-agent": for --version */
	const char *version;
	void (*usage)(FILE *f); /* --help */
	/* the command table: n entries of size bytes, each starting with
	 * its name, a const char * */
	const void *commands;
	size_t n_commands, command_size;
};

/*
 * What every program's main() does first: no command is bad usage (the help
 * goes to stderr), -h/--help or -V/--version as the first argument print to
 * stdout, an unknown command is logged. Returns the exit status (0 or 2),
 * or -1 with *ret_cmd the entry of the command table argv[1] names.
 */
int cli_start(const struct cli_program *p, int argc, char **argv,
	      const void **ret_cmd);

/* --version: "PROGRAM VERSION" on stdout. */
void cli_version(const char *program, const char *version);

#endif
