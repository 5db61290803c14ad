/* SPDX-License-Identifier: MIT */
/* The command line both programs share: it logs, as the main loops do. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* A flag for a boolean key takes no value: given, it sets the key true. */
static bool cli_flag_is_switch(const struct cli *cli, const struct cli_flag *f)
{
	for (size_t i = 0; i < cli->n_keys; i++)
		if (!strcmp(cli->keys[i].section, f->section) &&
		    !strcmp(cli->keys[i].name, f->key))
			return cli->keys[i].type == CONFIG_BOOL;
	return false;
}

int cli_init(struct cli *cli, const struct option *own, size_t n,
	     const struct cli_flag *flags, size_t n_flags,
	     const struct config_key *keys, size_t n_keys)
{
	*cli = (struct cli){
		.flags = flags,
		.n_flags = n_flags,
		.keys = keys,
		.n_keys = n_keys,
	};
	/* zeroed: the last option is getopt_long's terminator */
	cli->options = calloc(n + n_flags + 1, sizeof(*cli->options));
	cli->values = calloc(n_flags ? n_flags : 1, sizeof(*cli->values));
	if (!cli->options || !cli->values)
		return -ENOMEM;
	memcpy(cli->options, own, n * sizeof(*own));
	for (size_t i = 0; i < n_flags; i++)
		cli->options[n + i] = (struct option){
			flags[i].flag,
			cli_flag_is_switch(cli, &flags[i]) ? no_argument :
							     required_argument,
			NULL, CLI_OPT_FLAG + (int)i
		};
	return 0;
}

static int cli_record(struct cli *cli, const struct cli_flag *f,
		      const char *arg)
{
	struct cli_value *v;
	size_t j = 0;

	/* a repeated flag: the last one wins (a list's values are joined) */
	while (j < cli->n_values && cli->values[j].flag != f)
		j++;
	v = &cli->values[j];
	if (f->list) {
		char *joined;

		if (j == cli->n_values)
			joined = strdup(arg);
		else if (asprintf(&joined, "%s,%s", v->owned, arg) < 0)
			joined = NULL;
		if (!joined)
			return -ENOMEM;
		if (j < cli->n_values)
			free(v->owned);
		v->owned = joined;
		v->value = joined;
	} else {
		v->value = cli_flag_is_switch(cli, f) ? "true" : arg;
	}
	v->flag = f;
	if (j == cli->n_values)
		cli->n_values++;
	return 0;
}

int cli_getopt(struct cli *cli, int argc, char **argv, const char *shortopts)
{
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, cli->options, NULL)) !=
	       -1) {
		if (c == ':') {
			log_error("option '%s' needs a value", argv[optind - 1]);
			return -EINVAL;
		}
		if (c == '?') {
			log_error("unknown option '%s' (see --help)",
				  argv[optind - 1]);
			return -EINVAL;
		}
		if (c < CLI_OPT_FLAG)
			return c;
		if (cli_record(cli, &cli->flags[c - CLI_OPT_FLAG], optarg) < 0) {
			log_error("out of memory");
			return -ENOMEM;
		}
	}
	if (optind < argc) {
		log_error("unexpected argument '%s' (see --help)", argv[optind]);
		return -EINVAL;
	}
	return -1;
}

int cli_load_config(const struct cli *cli, const char *path,
		    const char *default_path, void *cfg)
{
	const char *file = path ? path : default_path;
	char err[CONFIG_ERR_LEN];
	int r;

	r = config_defaults(cli->keys, cli->n_keys, cfg, err);
	if (r < 0) {
		log_error("bad built-in default: %s", err);
		return r;
	}
	r = config_load(file, cli->keys, cli->n_keys, cfg, err);
	if (r == -EINVAL) {
		log_error("%s", err);
		return r;
	}
	if (r < 0 && (path || r != -ENOENT)) {
		log_error("cannot read config '%s': %s", file, strerror(-r));
		return r;
	}
	for (size_t i = 0; i < cli->n_values; i++) {
		const struct cli_value *v = &cli->values[i];

		r = config_set(cli->keys, cli->n_keys, cfg, v->flag->section,
			       v->flag->key, v->value, err);
		if (r < 0) {
			log_error("bad value for --%s: %s", v->flag->flag, err);
			return r;
		}
	}
	return 0;
}

const char *cli_value(const struct cli *cli, const char *flag)
{
	for (size_t i = 0; i < cli->n_values; i++)
		if (!strcmp(cli->values[i].flag->flag, flag))
			return cli->values[i].value;
	return NULL;
}

void cli_release(struct cli *cli)
{
	if (cli->values)
		for (size_t i = 0; i < cli->n_values; i++)
			free(cli->values[i].owned);
	free(cli->values);
	free(cli->options);
	cli->values = NULL;
	cli->options = NULL;
	cli->n_values = 0;
}
