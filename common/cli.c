/* SPDX-License-Identifier: MIT */
/* The command line both programs share: it logs, as the main loops do. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "log.h"

#define CLI_HELP_WIDTH 79

int cli_init(struct cli *cli, const struct config_key *settings, size_t n)
{
	size_t n_opts = 0, n_short = 1;

	*cli = (struct cli){ .settings = settings, .n_settings = n };
	/* zeroed: the last option is getopt_long's terminator */
	cli->options = calloc(n + 1, sizeof(*cli->options));
	cli->values = calloc(n ? n : 1, sizeof(*cli->values));
	cli->shortopts = calloc(2 * n + 2, 1);
	if (!cli->options || !cli->values || !cli->shortopts)
		return -ENOMEM;
	/* ':' first: getopt returns ':' for a missing value, not '?' */
	cli->shortopts[0] = ':';
	for (size_t i = 0; i < n; i++) {
		const struct config_key *s = &settings[i];

		if (!s->flag)
			continue;
		cli->options[n_opts++] = (struct option){
			s->flag, s->arg ? required_argument : no_argument, NULL,
			config_is_key(s) ? CLI_OPT_FLAG + (int)i : s->opt
		};
		if (s->short_flag && !config_is_key(s)) {
			cli->shortopts[n_short++] = s->short_flag;
			if (s->arg)
				cli->shortopts[n_short++] = ':';
		}
	}
	return 0;
}

static int cli_record(struct cli *cli, const struct config_key *k,
		      const char *arg)
{
	struct cli_value *v;
	size_t j = 0;

	/* a repeated flag: the last one wins (a list's values are joined) */
	while (j < cli->n_values && cli->values[j].key != k)
		j++;
	v = &cli->values[j];
	if (k->list || k->type == CONFIG_LINES) {
		/* a CONFIG_LINES key takes each flag as a line of its own */
		bool lines = k->type == CONFIG_LINES;
		char *joined;

		if (lines && strchr(arg, '\n'))
			return -EINVAL;
		if (j == cli->n_values)
			joined = strdup(arg);
		else if (asprintf(&joined, "%s%c%s", v->owned,
				  lines ? '\n' : ',', arg) < 0)
			joined = NULL;
		if (!joined)
			return -ENOMEM;
		if (j < cli->n_values)
			free(v->owned);
		v->owned = joined;
		v->value = joined;
	} else {
		v->value = k->arg ? arg : "true";
	}
	v->key = k;
	if (j == cli->n_values)
		cli->n_values++;
	return 0;
}

int cli_getopt(struct cli *cli, int argc, char **argv)
{
	int c, r;

	opterr = 0;
	while ((c = getopt_long(argc, argv, cli->shortopts, cli->options,
				NULL)) != -1) {
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
		r = cli_record(cli, &cli->settings[c - CLI_OPT_FLAG], optarg);
		if (r == -EINVAL) {
			log_error("bad value for --%s: it holds a newline",
				  cli->settings[c - CLI_OPT_FLAG].flag);
			return r;
		}
		if (r < 0) {
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

	r = config_defaults(cli->settings, cli->n_settings, cfg, err);
	if (r < 0) {
		log_error("bad built-in default: %s", err);
		return r;
	}
	r = config_load(file, cli->settings, cli->n_settings, cfg, err);
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

		r = config_set(cli->settings, cli->n_settings, cfg,
			       v->key->section, v->key->name, v->value, err);
		if (r < 0) {
			log_error("bad value for --%s: %s", v->key->flag, err);
			return r;
		}
	}
	return 0;
}

const char *cli_value(const struct cli *cli, const char *flag)
{
	for (size_t i = 0; i < cli->n_values; i++)
		if (!strcmp(cli->values[i].key->flag, flag))
			return cli->values[i].value;
	return NULL;
}

bool cli_sets_key(const struct cli *cli, const char *name)
{
	for (size_t i = 0; i < cli->n_values; i++)
		if (!strcmp(cli->values[i].key->name, name))
			return true;
	return false;
}

void cli_release(struct cli *cli)
{
	if (cli->values)
		for (size_t i = 0; i < cli->n_values; i++)
			free(cli->values[i].owned);
	free(cli->values);
	free(cli->options);
	free(cli->shortopts);
	cli->values = NULL;
	cli->options = NULL;
	cli->shortopts = NULL;
	cli->n_values = 0;
}

void cli_usage_options(FILE *f, const struct config_key *settings, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct config_key *s = &settings[i];
		const char *h = s->help ? s->help : "";
		int w;

		if (!s->flag) {
			/* a key of the config file only: cli_usage_keys() */
			if (!config_is_key(s))
				fprintf(f, "  %s\n", h);
			continue;
		}
		if (s->short_flag)
			w = fprintf(f, "  -%c, --%s", s->short_flag, s->flag);
		else
			w = fprintf(f, "      --%s", s->flag);
		if (s->arg)
			w += fprintf(f, " %s", s->arg);
		if (*h)
			fprintf(f, "%*s", w < CLI_HELP_COLUMN ?
					  CLI_HELP_COLUMN - w : 2, "");
		for (; *h; h++) {
			fputc(*h, f);
			if (*h == '\n')
				fprintf(f, "%*s", CLI_HELP_COLUMN, "");
		}
		fputc('\n', f);
	}
}

/* A key's flag, when it is not the key's name with '-' for '_'. */
static bool cli_flag_differs(const struct config_key *k)
{
	size_t i;

	if (!k->flag)
		return false;
	for (i = 0; k->flag[i] && k->name[i]; i++)
		if (k->flag[i] != (k->name[i] == '_' ? '-' : k->name[i]))
			return true;
	return k->flag[i] != k->name[i];
}

/* Writes text to f, breaking lines at spaces before CLI_HELP_WIDTH. */
static void cli_wrap(FILE *f, const char *text)
{
	const char *cur = text;
	int col = 0;

	while (*cur) {
		size_t len = strcspn(cur, " ");

		if (col && col + 1 + (int)len > CLI_HELP_WIDTH) {
			fputc('\n', f);
			col = 0;
		}
		col += fprintf(f, "%s%.*s", col ? " " : "", (int)len, cur);
		cur += len + strspn(cur + len, " ");
	}
	fputc('\n', f);
}

void cli_usage_keys(FILE *f, const struct config_key *settings, size_t n)
{
	_cleanup_free_ char *text = NULL;
	size_t size = 0;
	FILE *m = open_memstream(&text, &size);
	const char *sep = "";

	if (!m)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct config_key *s = &settings[i];
		bool first = true;

		if (!config_is_key(s))
			continue;
		/* each section once, where it first appears */
		for (size_t j = 0; j < i && first; j++)
			first = !config_is_key(&settings[j]) ||
				strcmp(settings[j].section, s->section);
		if (!first)
			continue;
		fprintf(m, "%s[%s]", sep, s->section);
		sep = "; ";
		for (size_t j = i; j < n; j++) {
			const struct config_key *k = &settings[j];

			if (!config_is_key(k) || strcmp(k->section, s->section))
				continue;
			fprintf(m, "%s %s", j == i ? "" : ",", k->name);
			if (k->type == CONFIG_BOOL)
				fprintf(m, " (true/false%s%s)",
					cli_flag_differs(k) ? ", --" : "",
					cli_flag_differs(k) ? k->flag : "");
			else if (cli_flag_differs(k))
				fprintf(m, " (--%s)", k->flag);
		}
	}
	if (fclose(m) == 0 && text)
		cli_wrap(f, text);
}

void cli_usage(FILE *f, const struct cli_help *help,
	       const struct config_key *settings, size_t n)
{
	fprintf(f, "%s\noptions:\n", help->head);
	cli_usage_options(f, settings, n);
	fprintf(f, "\n%s", help->keys);
	cli_usage_keys(f, settings, n);
	fputs(help->tail, f);
}

static const void *cli_command_find(const void *table, size_t n,
				    size_t size, const char *name)
{
	for (const char *e = table; n--; e += size)
		if (!strcmp(*(const char *const *)(const void *)e, name))
			return e;
	return NULL;
}

void cli_version(const char *program, const char *version)
{
	printf("%s %s\n", program, version);
}

int cli_start(const struct cli_program *p, int argc, char **argv,
	      const void **ret_cmd)
{
	if (argc < 2) {
		p->usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		p->usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		cli_version(p->name, p->version);
		return 0;
	}
	*ret_cmd = cli_command_find(p->commands, p->n_commands,
				    p->command_size, argv[1]);
	if (!*ret_cmd) {
		log_error("unknown command '%s' (see --help)", argv[1]);
		return 2;
	}
	return -1;
}
