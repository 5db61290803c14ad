/* SPDX-License-Identifier: MIT */
/*
 * Table-driven configuration over libinih (pgbouncer's CF_ABS style): each
 * key names its section, type, destination field, default and range. Every
 * value is parsed strictly and range-checked; an unknown section or key is an
 * error naming the file and line.
 *
 * The same table is a program's settings table: an entry also names the
 * flag that sets its key and its help, so that the config parser, the flag
 * parser and --help (common/cli.h) are all made from one declaration per
 * setting. An entry without a key is a flag of the command line only (its
 * opt is what cli_getopt() returns for it) or, without a flag either, a
 * heading line of --help.
 */
#ifndef FLEETBENCH_CONFIG_H
#define FLEETBENCH_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum config_type {
	CONFIG_STR,  /* char *, owned by the struct; freed by config_release() */
	CONFIG_INT,  /* long long, range [min, max] */
	CONFIG_SIZE, /* uint64_t bytes; accepts K, M, G, T suffixes (powers of 1024) */
	CONFIG_BOOL, /* bool: true/false, yes/no, on/off, 1/0 */
	/* char *, owned: each time the key is set (a line of the file, a
	 * flag) its value is appended as a line of its own, '\n'-ended, so
	 * a key may repeat (agent.conf's tag = key=value) */
	CONFIG_LINES,
};

struct config_key {
	const char *section;
	const char *name;
	enum config_type type;
	size_t offset; /* of the destination field in the caller's struct */
	const char *def; /* default, written as in the file; NULL leaves the field zero */
	long long min, max; /* CONFIG_INT and CONFIG_SIZE range (max 0: no upper bound) */
	const char *help; /* for --help: '\n' starts a line of its own */
	/* the command line (cli.h) */
	const char *flag; /* the long option, without "--"; NULL: none */
	const char *arg; /* the flag's value in --help ("MS"); NULL: a switch */
	bool list; /* the flag may repeat: its values are joined by commas */
	char short_flag; /* a flag without a key: its one-letter form, or 0 */
	int opt; /* a flag without a key: what cli_getopt() returns for it
		  * (short_flag itself when it has one) */
	/* CONFIG_STR, CONFIG_LINES: checks a value (each line) before it is
	 * taken: 0, or -EINVAL with why in err (len bytes); NULL: none */
	int (*check)(const char *value, char *err, size_t len);
	/* CONFIG_LINES: lines are one each by their text before this
	 * character ('=': key=value), within the file and within the flags
	 * (a flag's line may replace a file's); 0: any lines */
	char unique_before;
};

/*
 * An entry of a settings table: a config key section.name, of type, at
 * offset, with its default, range, the flag that sets it (NULL: none), the
 * flag's value in --help (NULL: a switch) and help. Designated, so the
 * fields not named stay zero.
 */
#define CONFIG_KEY(sec, nm, typ, off, dflt, lo, hi, flg, argname, text)       \
	{                                                                     \
		.section = (sec), .name = (nm), .type = (typ), .offset = (off), \
		.def = (dflt), .min = (lo), .max = (hi), .flag = (flg),         \
		.arg = (argname), .help = (text)                                \
	}

/* Whether the entry is a key of the config file (not a flag or heading only). */
static inline bool config_is_key(const struct config_key *k)
{
	return k->section && k->name;
}

#define CONFIG_ERR_LEN 512
#define CONFIG_MAX_BYTES (1 << 20) /* a config file's size, at most */

/* Writes every key's default into dst. */
int config_defaults(const struct config_key *keys, size_t n, void *dst,
		    char err[CONFIG_ERR_LEN]);

/*
 * Reads the INI file at path into dst (after config_defaults). Returns 0,
 * -errno when the file cannot be opened, or -EINVAL with err saying
 * "FILE:LINE: ..." for the first bad line (a key of one value set twice
 * is one), or "FILE: ..." for a file that is no regular file or is over
 * CONFIG_MAX_BYTES.
 */
int config_load(const char *path, const struct config_key *keys, size_t n,
		void *dst, char err[CONFIG_ERR_LEN]);

/*
 * Sets one key from text, as a flag does. Returns 0, or -EINVAL with err
 * naming the key and what is wrong with the value.
 */
int config_set(const struct config_key *keys, size_t n, void *dst,
	       const char *section, const char *name, const char *value,
	       char err[CONFIG_ERR_LEN]);

/* Frees the strings the table owns in dst. */
void config_release(const struct config_key *keys, size_t n, void *dst);

/* Parses a size such as 4096, 64K, 1M, 1G or 2GiB into bytes. 0 or -EINVAL. */
int config_parse_size(const char *s, uint64_t *ret);

#endif
