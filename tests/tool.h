/* SPDX-License-Identifier: MIT */
/*
 * The command line of the test tools and benchmarks of ourselves (tests/,
 * bench/), written once: a table of options, each with its name, type,
 * range and the variable it sets, read by getopt_long. --help (and -h)
 * print the tool's usage on standard output and exit 0; a bad command line
 * prints one line naming the problem ("zsend: bad value for --frames: ...")
 * and the usage on standard error and exits 2. Every value is checked as a
 * whole: "5x" is no number.
 */
#ifndef FLEETBENCH_TEST_TOOL_H
#define FLEETBENCH_TEST_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdnoreturn.h>

enum tool_type {
	TOOL_FLAG, /* no value: sets a bool true */
	TOOL_STRING, /* a const char * (the argument itself) */
	TOOL_ULONG, /* an unsigned long in [min, max] */
	TOOL_U64, /* a uint64_t in [min, max] */
	TOOL_SIZE, /* bytes (config_parse_size: 5M, 1G), a uint64_t up to max */
	TOOL_DOUBLE, /* a double */
	TOOL_LIST, /* may repeat: appended to an array of const char * of
		    * max entries, *count of them filled */
};

struct tool_opt {
	const char *name; /* the long option, without "--" */
	char short_name; /* its one-letter form, or 0 */
	enum tool_type type;
	void *target; /* of the type's C type */
	unsigned long long min, max;
	size_t *count; /* TOOL_LIST */
};

/* target as a void *, after the compiler checked that it points to a T */
#define TOOL_TARGET(T, p) ((void *)(1 ? (p) : (T *)0))

#define TOOL_OPT_FLAG(n, p) \
	{ .name = (n), .type = TOOL_FLAG, .target = TOOL_TARGET(bool, p) }
#define TOOL_OPT_STRING(n, p)                     \
	{ .name = (n), .type = TOOL_STRING,       \
	  .target = TOOL_TARGET(const char *, p) }
#define TOOL_OPT_ULONG(n, p, lo, hi)                                       \
	{ .name = (n), .type = TOOL_ULONG,                                  \
	  .target = TOOL_TARGET(unsigned long, p), .min = (lo), .max = (hi) }
#define TOOL_OPT_U64(n, p)                                                 \
	{ .name = (n), .type = TOOL_U64, .target = TOOL_TARGET(uint64_t, p), \
	  .min = 0, .max = UINT64_MAX }
#define TOOL_OPT_SIZE(n, p, hi)                                             \
	{ .name = (n), .type = TOOL_SIZE, .target = TOOL_TARGET(uint64_t, p), \
	  .max = (hi) }
#define TOOL_OPT_DOUBLE(n, p) \
	{ .name = (n), .type = TOOL_DOUBLE, .target = TOOL_TARGET(double, p) }
/* arr: an array of const char *, its size the most values */
#define TOOL_OPT_LIST(n, arr, cnt)                                           \
	{ .name = (n), .type = TOOL_LIST,                                     \
	  .target = TOOL_TARGET(const char *, arr),                           \
	  .max = sizeof(arr) / sizeof((arr)[0]), .count = (cnt) }

struct tool {
	const char *name; /* the program, first on every error line */
	const char *usage; /* printed as it is, ending in a newline */
	const struct tool_opt *opts;
	size_t n_opts;
	/* how many arguments may follow the options (and a "--") */
	size_t min_args, max_args;
};

#define TOOL_ANY_ARGS ((size_t)-1)

/* A struct tool of prog with the options of the array table and the usage
 * text; more designated initializers may follow (.max_args = ...). */
#define TOOL(prog, table, text, ...)                                      \
	{ .name = (prog), .usage = (text), .opts = (table),                \
	  .n_opts = sizeof(table) / sizeof((table)[0]), __VA_ARGS__ }

/*
 * Reads argv's options into the table's targets (what is not given keeps
 * its value). Returns optind: argv[optind..argc) are the arguments, as
 * many as t allows. Exits 0 after --help, 2 after a bad command line.
 */
int tool_parse(const struct tool *t, int argc, char **argv);

/*
 * s as a whole number in [min, max] for what (an option's or argument's
 * name, for the error): a bad command line (exit 2) otherwise.
 */
unsigned long long tool_number(const struct tool *t, const char *what,
			       const char *s, unsigned long long min,
			       unsigned long long max);

/* A bad command line: "NAME: " and the message, then the usage, on
 * standard error; exits 2. */
noreturn void tool_usage_error(const struct tool *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
