/* SPDX-License-Identifier: MIT */
/* The command line both programs share: --flags that set config keys. */
#ifndef FLEETBENCH_CLI_H
#define FLEETBENCH_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"

/*
 * getopt values from CLI_OPT_FLAG up are the flags' own: a program's other
 * long options use values below it.
 */
#define CLI_OPT_FLAG 0x1000

/* A flag that sets a config key, applied after the file so it wins. */
struct cli_flag {
	const char *flag; /* the long option, without "--" */
	const char *section; /* the config key it sets */
	const char *key;
	bool list; /* may repeat: the values are joined by commas */
};

/* A flag given on the command line and the value it sets its key to. */
struct cli_value {
	const struct cli_flag *flag;
	const char *value;
	char *owned; /* a list flag's joined values */
};

struct cli {
	const struct cli_flag *flags;
	size_t n_flags;
	const struct config_key *keys;
	size_t n_keys;
	struct option *options; /* the program's, then one per flag */
	/* the flags given, each once: a repeated flag's last value wins */
	struct cli_value *values;
	size_t n_values;
};

/*
 * Sets up cli for getopt_long over the program's own long options (n of
 * them, values below CLI_OPT_FLAG) and one option per flag. A flag for a
 * CONFIG_BOOL key is a switch: it takes no value and sets the key true.
 * Returns 0 or -ENOMEM; cli_release() frees what it allocates either way.
 */
int cli_init(struct cli *cli, const struct option *own, size_t n,
	     const struct cli_flag *flags, size_t n_flags,
	     const struct config_key *keys, size_t n_keys);

/*
 * getopt_long(argc, argv, shortopts, ...) from optind, without getopt's
 * messages (shortopts should start with ':'). Records every flag itself and
 * returns the next of the program's own options, or -1 when all are read.
 * Logs and returns -EINVAL for a missing value, an unknown option or an
 * argument left over, and -ENOMEM when a list flag cannot be joined.
 */
int cli_getopt(struct cli *cli, int argc, char **argv, const char *shortopts);

/*
 * Fills cfg: the keys' defaults, then the config file at path (or at
 * default_path when path is NULL, which may be absent), then the flags.
 * Logs the first error and returns it as -errno.
 */
int cli_load_config(const struct cli *cli, const char *path,
		    const char *default_path, void *cfg);

/* The value of the flag named flag, or NULL when it was not given. */
const char *cli_value(const struct cli *cli, const char *flag);

/* Frees what cli_init() and cli_getopt() allocated. */
void cli_release(struct cli *cli);

#endif
