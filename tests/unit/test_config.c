/* SPDX-License-Identifier: MIT */
/*
 * The table-driven INI loader: defaults, types, ranges, errors with lines;
 * the settings table that also makes the flags and --help (cli.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cleanup.h"
#include "cli.h"
#include "config.h"

struct cfg {
	char *name;
	long long count;
	uint64_t size;
	bool flag;
};

static const struct config_key keys[] = {
	CONFIG_KEY("main", "name", CONFIG_STR, offsetof(struct cfg, name),
		   "dflt", 0, 0, NULL, NULL, NULL),
	CONFIG_KEY("main", "count", CONFIG_INT, offsetof(struct cfg, count),
		   "5", 1, 10, NULL, NULL, NULL),
	CONFIG_KEY("bench", "size", CONFIG_SIZE, offsetof(struct cfg, size),
		   "1M", 4096, 1LL << 40, NULL, NULL, NULL),
	CONFIG_KEY("bench", "flag", CONFIG_BOOL, offsetof(struct cfg, flag),
		   "no", 0, 0, NULL, NULL, NULL),
};

/* A settings table: keys with flags, a flag without a key, a heading. */
static const struct config_key settings[] = {
	CLI_FLAG("config", 'c', "FILE", 'c', "the config"),
	CONFIG_KEY("main", "name", CONFIG_STR, offsetof(struct cfg, name),
		   "dflt", 0, 0, "name", "NAME", "a name"),
	CLI_HEADING("bench:"),
	CONFIG_KEY("main", "count", CONFIG_INT, offsetof(struct cfg, count),
		   "5", 1, 10, "counted-times", "N",
		   "how many times,\nat most 10"),
	CONFIG_KEY("bench", "flag", CONFIG_BOOL, offsetof(struct cfg, flag),
		   "no", 0, 0, "flag", NULL, "a switch"),
	CONFIG_KEY("bench", "size", CONFIG_SIZE, offsetof(struct cfg, size),
		   "1M", 4096, 1LL << 40, NULL, NULL, NULL),
};

/* What a FILE holds after f(FILE *) wrote it, in buf. */
#define PRINTED(buf, call)                                              \
	do {                                                            \
		FILE *m_ = fmemopen(buf, sizeof(buf), "w");             \
		call;                                                   \
		fclose(m_);                                             \
	} while (0)

/* The settings table drives the parser, the flags and --help alike. */
static void test_settings(void)
{
	char err[CONFIG_ERR_LEN], out[1024];
	char *argv[] = { "prog", "cmd", "--counted-times", "7", "-c", "x.conf",
			 "--flag", NULL };
	struct cfg c = { 0 };
	struct cli cli;

	/* entries without a key are neither defaults nor keys of the file */
	CHECK_OK(config_defaults(settings, ARRAY_SIZE(settings), &c, err));
	CHECK_EQ_STR(c.name, "dflt");
	CHECK_EQ_INT(c.count, 5);
	CHECK_EQ_INT(config_set(settings, ARRAY_SIZE(settings), &c, "main",
				"config", "x", err),
		     -EINVAL);
	config_release(settings, ARRAY_SIZE(settings), &c);
	CHECK(c.name == NULL);

	/* the flags: a keyed one is recorded, an own one returned */
	CHECK_OK(cli_init(&cli, settings, ARRAY_SIZE(settings)));
	optind = 2;
	CHECK_EQ_INT(cli_getopt(&cli, 7, argv), 'c');
	CHECK_EQ_STR(optarg, "x.conf");
	CHECK_EQ_INT(cli_getopt(&cli, 7, argv), -1);
	CHECK_EQ_STR(cli_value(&cli, "counted-times"), "7");
	CHECK_EQ_STR(cli_value(&cli, "flag"), "true");
	CHECK(cli_sets_key(&cli, "count"));
	CHECK(!cli_sets_key(&cli, "name"));
	cli_release(&cli);

	/* --help: the option lines and the config keys */
	PRINTED(out, cli_usage_options(m_, settings, ARRAY_SIZE(settings)));
	CHECK_EQ_STR(out, "  -c, --config FILE        the config\n"
			  "      --name NAME          a name\n"
			  "  bench:\n"
			  "      --counted-times N    how many times,\n"
			  "                           at most 10\n"
			  "      --flag               a switch\n");
	PRINTED(out, cli_usage_keys(m_, settings, ARRAY_SIZE(settings)));
	CHECK_EQ_STR(out, "[main] name, count (--counted-times); [bench] flag "
			  "(true/false), size\n");
}

static char path[] = "/tmp/fleetbench-test-config-XXXXXX";

static int load_text(const char *text, struct cfg *c, char *err)
{
	FILE *f = fopen(path, "we");

	fputs(text, f);
	fclose(f);
	*c = (struct cfg){ 0 };
	config_defaults(keys, ARRAY_SIZE(keys), c, err);
	return config_load(path, keys, ARRAY_SIZE(keys), c, err);
}

int main(void)
{
	char err[CONFIG_ERR_LEN];
	struct cfg c = { 0 };
	uint64_t v;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	close(fd);

	/* defaults */
	CHECK_OK(config_defaults(keys, ARRAY_SIZE(keys), &c, err));
	CHECK_EQ_STR(c.name, "dflt");
	CHECK_EQ_INT(c.count, 5);
	CHECK_EQ_INT(c.size, 1 << 20);
	CHECK_EQ_INT(c.flag, 0);
	config_release(keys, ARRAY_SIZE(keys), &c);
	CHECK(c.name == NULL);

	/* a good file, with comments and blank lines */
	CHECK_OK(load_text("; comment\n[main]\nname = web-1\n\ncount=7\n"
			   "[bench]\nsize = 2G\nflag = yes\n",
			   &c, err));
	CHECK_EQ_STR(c.name, "web-1");
	CHECK_EQ_INT(c.count, 7);
	CHECK_EQ_INT(c.size, 2ULL << 30);
	CHECK_EQ_INT(c.flag, 1);
	config_release(keys, ARRAY_SIZE(keys), &c);

	/* an unknown key names file, line and key */
	CHECK_EQ_INT(load_text("[main]\n\n# c\nbogus = 1\n", &c, err), -EINVAL);
	CHECK(strstr(err, path) != NULL);
	CHECK(strstr(err, ":4: unknown key 'bogus' in section [main]") != NULL);
	config_release(keys, ARRAY_SIZE(keys), &c);

	/* an unknown section */
	CHECK_EQ_INT(load_text("[main]\ncount = 2\n[nope]\nx = 1\n", &c, err),
		     -EINVAL);
	CHECK(strstr(err, ":4: unknown section [nope]") != NULL);
	config_release(keys, ARRAY_SIZE(keys), &c);

	/* out of range and not a number, with the line of the first error */
	CHECK_EQ_INT(load_text("[main]\ncount = 11\ncount = x\n", &c, err),
		     -EINVAL);
	CHECK(strstr(err, ":2: main.count: 11 is out of range 1..10") != NULL);
	config_release(keys, ARRAY_SIZE(keys), &c);
	CHECK_EQ_INT(load_text("[main]\ncount = 3x\n", &c, err), -EINVAL);
	CHECK(strstr(err, ":2: main.count: '3x' is not an integer") != NULL);
	config_release(keys, ARRAY_SIZE(keys), &c);

	/* a syntax error before a bad key reports the syntax error's line */
	CHECK_EQ_INT(load_text("[main]\nno equals sign here\ncount = 99\n", &c,
			       err),
		     -EINVAL);
	CHECK(strstr(err, ":2: syntax error") != NULL);
	config_release(keys, ARRAY_SIZE(keys), &c);

	/* sizes and booleans */
	CHECK_EQ_INT(load_text("[bench]\nsize = 1K\n", &c, err), -EINVAL);
	CHECK(strstr(err, "bench.size: 1K is out of range") != NULL);
	config_release(keys, ARRAY_SIZE(keys), &c);
	CHECK_EQ_INT(load_text("[bench]\nflag = maybe\n", &c, err), -EINVAL);
	CHECK(strstr(err, ":2: bench.flag: 'maybe' is not a boolean") != NULL);
	config_release(keys, ARRAY_SIZE(keys), &c);
	CHECK_OK(config_parse_size("64K", &v));
	CHECK_EQ_INT(v, 65536);
	CHECK_OK(config_parse_size("3GiB", &v));
	CHECK_EQ_INT(v, 3ULL << 30);
	CHECK_EQ_INT(config_parse_size("-1", &v), -EINVAL);
	CHECK_EQ_INT(config_parse_size("1Q", &v), -EINVAL);
	CHECK_EQ_INT(config_parse_size("99999999999T", &v), -EINVAL);

	/* flags go through the same checks */
	*(&c) = (struct cfg){ 0 };
	CHECK_EQ_INT(config_set(keys, ARRAY_SIZE(keys), &c, "main", "count",
				"0", err),
		     -EINVAL);
	CHECK(strstr(err, "main.count: 0 is out of range") != NULL);
	CHECK_EQ_INT(config_set(keys, ARRAY_SIZE(keys), &c, "main", "nope",
				"0", err),
		     -EINVAL);
	CHECK_OK(config_set(keys, ARRAY_SIZE(keys), &c, "main", "name", "x",
			    err));
	CHECK_EQ_STR(c.name, "x");
	config_release(keys, ARRAY_SIZE(keys), &c);

	/* a key of one value set twice: which one was meant? (issue 38) */
	CHECK_EQ_INT(load_text("[main]\ncount = 2\n\ncount = 3\n", &c, err),
		     -EINVAL);
	CHECK_(strstr(err, ":4: 'count' in [main] is set again (line 2 set it first)"),
	       "%s", err);
	config_release(keys, ARRAY_SIZE(keys), &c);

	/* no regular file: a directory was read as an empty config, and
	 * /dev/zero for ever */
	CHECK_EQ_INT(config_load("/tmp", keys, ARRAY_SIZE(keys), &c, err),
		     -EINVAL);
	CHECK_(strstr(err, "/tmp: not a regular file but a directory"), "%s",
	       err);
	CHECK_EQ_INT(config_load("/dev/zero", keys, ARRAY_SIZE(keys), &c, err),
		     -EINVAL);
	CHECK_(strstr(err, "/dev/zero: not a regular file but a character device"),
	       "%s", err);
	{
		_cleanup_free_ char *big = malloc(CONFIG_MAX_BYTES + 2);

		CHECK(big != NULL);
		if (big) {
			memset(big, ';', CONFIG_MAX_BYTES + 1);
			big[CONFIG_MAX_BYTES + 1] = '\0';
			CHECK_EQ_INT(load_text(big, &c, err), -EINVAL);
			CHECK_(strstr(err, "bytes, more than a config file's"),
			       "%s", err);
			config_release(keys, ARRAY_SIZE(keys), &c);
		}
	}

	/* lines one each by their text before '=' (tags): in the file, and
	 * among the flags, which may replace a file's line */
	{
		struct lcfg {
			char *lines;
		} l = { 0 };
		static const struct config_key lkeys[] = {
			{ .section = "main", .name = "tag",
			  .type = CONFIG_LINES,
			  .offset = offsetof(struct lcfg, lines),
			  .unique_before = '=' },
		};
		FILE *f = fopen(path, "we");

		fputs("[main]\ntag = a=1\ntag = ab=2\ntag = a=3\n", f);
		fclose(f);
		CHECK_EQ_INT(config_load(path, lkeys, 1, &l, err), -EINVAL);
		CHECK_(strstr(err, ":4: 'tag' in [main]: 'a' is set again"),
		       "%s", err);
		config_release(lkeys, 1, &l);
		CHECK_EQ_INT(config_set(lkeys, 1, &l, "main", "tag",
					"x=1\ny=2\nx=3", err),
			     -EINVAL);
		CHECK_(strstr(err, "main.tag: 'x' given twice"), "%s", err);
		config_release(lkeys, 1, &l);
		CHECK_OK(config_set(lkeys, 1, &l, "main", "tag", "x=1", err));
		CHECK_OK(config_set(lkeys, 1, &l, "main", "tag", "x=2\ny=1",
				    err));
		CHECK_EQ_STR(l.lines, "x=1\nx=2\ny=1\n");
		config_release(lkeys, 1, &l);
	}

	/* a missing file is -ENOENT, for the caller to judge */
	CHECK_EQ_INT(config_load("/nonexistent/fleetbench.conf", keys,
				 ARRAY_SIZE(keys), &c, err),
		     -ENOENT);

	test_settings();
	unlink(path);
	return check_summary();
}
