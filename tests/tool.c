/* SPDX-License-Identifier: MIT */
/* The test tools' command line, written once (tool.h). */
#include "tool.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"

/* getopt values of the table's options: OPT_BASE + their index */
#define OPT_BASE 0x100

noreturn void tool_usage_error(const struct tool *t, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", t->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s", t->usage);
	exit(2);
}

/* The number s in [min, max], or -ERANGE / -EINVAL. */
static int parse_number(const char *s, unsigned long long min,
			unsigned long long max, unsigned long long *ret)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9') /* strtoull takes "-1" and " 1" too */
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

unsigned long long tool_number(const struct tool *t, const char *what,
			       const char *s, unsigned long long min,
			       unsigned long long max)
{
	unsigned long long v;

	if (parse_number(s, min, max, &v) < 0)
		tool_usage_error(t, "bad value for %s: '%s' (a whole number from %llu to %llu)",
				 what, s, min, max);
	return v;
}

/* Sets o's target from the argument s, or exits 2. */
static void opt_set(const struct tool *t, const struct tool_opt *o,
		    const char *s)
{
	char what[64];
	uint64_t size;
	double d;
	char *end;

	snprintf(what, sizeof(what), "--%s", o->name);
	switch (o->type) {
	case TOOL_FLAG:
		*(bool *)o->target = true;
		break;
	case TOOL_STRING:
		*(const char **)o->target = s;
		break;
	case TOOL_ULONG:
		*(unsigned long *)o->target =
			(unsigned long)tool_number(t, what, s, o->min, o->max);
		break;
	case TOOL_U64:
		*(uint64_t *)o->target = tool_number(t, what, s, o->min, o->max);
		break;
	case TOOL_SIZE:
		if (config_parse_size(s, &size) < 0 || size > o->max)
			tool_usage_error(t, "bad value for %s: '%s' (a size up to %llu bytes, such as 5M)",
					 what, s, o->max);
		*(uint64_t *)o->target = size;
		break;
	case TOOL_DOUBLE:
		errno = 0;
		d = strtod(s, &end);
		if (errno || end == s || *end || !isfinite(d))
			tool_usage_error(t, "bad value for %s: '%s' (a number)",
					 what, s);
		*(double *)o->target = d;
		break;
	case TOOL_LIST:
		if (*o->count == o->max)
			tool_usage_error(t, "%s: at most %llu", what, o->max);
		((const char **)o->target)[(*o->count)++] = s;
		break;
	}
}

int tool_parse(const struct tool *t, int argc, char **argv)
{
	/* ':' first: the errors are ours, not getopt's */
	char shortopts[2 * 26 * 2 + 4] = ":h";
	struct option *longopts = calloc(t->n_opts + 2, sizeof(*longopts));
	size_t ns = 2, nargs;
	int c;

	if (!longopts) {
		fprintf(stderr, "%s: out of memory\n", t->name);
		exit(1);
	}
	for (size_t i = 0; i < t->n_opts; i++) {
		const struct tool_opt *o = &t->opts[i];
		int has_arg = o->type == TOOL_FLAG ? no_argument :
						     required_argument;

		longopts[i] = (struct option){ o->name, has_arg, NULL,
					       OPT_BASE + (int)i };
		if (o->short_name && ns + 3 < sizeof(shortopts)) {
			shortopts[ns++] = o->short_name;
			if (has_arg == required_argument)
				shortopts[ns++] = ':';
		}
	}
	shortopts[ns] = '\0';
	longopts[t->n_opts] = (struct option){ "help", no_argument, NULL, 'h' };
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		const struct tool_opt *o = NULL;

		if (c == 'h') {
			fputs(t->usage, stdout);
			exit(0);
		}
		if (c == ':')
			tool_usage_error(t, "option '%s' needs a value",
					 argv[optind - 1]);
		if (c >= OPT_BASE && c < OPT_BASE + (int)t->n_opts)
			o = &t->opts[c - OPT_BASE];
		for (size_t i = 0; !o && i < t->n_opts; i++)
			if (t->opts[i].short_name && t->opts[i].short_name == c)
				o = &t->opts[i];
		if (!o)
			tool_usage_error(t, "unknown option '%s'",
					 argv[optind - 1]);
		opt_set(t, o, optarg);
	}
	free(longopts);
	nargs = (size_t)(argc - optind);
	if (nargs > t->max_args)
		tool_usage_error(t, "unexpected argument '%s'",
				 argv[optind + (int)t->max_args]);
	if (nargs < t->min_args)
		tool_usage_error(t, "%zu argument%s missing",
				 t->min_args - nargs,
				 t->min_args - nargs > 1 ? "s" : "");
	return optind;
}
