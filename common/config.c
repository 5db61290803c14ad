/* SPDX-License-Identifier: MIT */
/* Table-driven INI configuration on top of libinih. */
#include "config.h"

#include <errno.h>
#include <ini.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cleanup.h"

static const struct config_key *config_find(const struct config_key *keys,
					    size_t n, const char *section,
					    const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (config_is_key(&keys[i]) &&
		    !strcmp(keys[i].section, section) &&
		    !strcmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

static bool config_has_section(const struct config_key *keys, size_t n,
			       const char *section)
{
	for (size_t i = 0; i < n; i++)
		if (config_is_key(&keys[i]) && !strcmp(keys[i].section, section))
			return true;
	return false;
}

int config_parse_size(const char *s, uint64_t *ret)
{
	static const struct {
		const char *suffix;
		unsigned shift;
	} units[] = {
		{ "", 0 },   { "B", 0 },    { "K", 10 },   { "KiB", 10 },
		{ "M", 20 }, { "MiB", 20 }, { "G", 30 },   { "GiB", 30 },
		{ "T", 40 }, { "TiB", 40 },
	};
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
		if (strcasecmp(end, units[i].suffix))
			continue;
		if (units[i].shift && v > (UINT64_MAX >> units[i].shift))
			return -EINVAL;
		*ret = (uint64_t)v << units[i].shift;
		return 0;
	}
	return -EINVAL;
}

static int config_parse_bool(const char *s, bool *ret)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (!strcasecmp(s, yes[i])) {
			*ret = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*ret = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* k's check of the len bytes of value: 0, or -EINVAL (-ENOMEM) with err
 * naming the key and the value. */
static int config_check(const struct config_key *k, const char *value,
			size_t len, char err[CONFIG_ERR_LEN])
{
	char why[CONFIG_ERR_LEN - 128];
	_cleanup_free_ char *v = NULL;

	if (!k->check)
		return 0;
	v = strndup(value, len);
	if (!v)
		return -ENOMEM;
	if (k->check(v, why, sizeof(why)) < 0) {
		snprintf(err, CONFIG_ERR_LEN, "%s.%s: '%.80s': %s", k->section,
			 k->name, v, why);
		return -EINVAL;
	}
	return 0;
}

/* Whether lines ('\n'-separated, or NULL), up to end (NULL: all), hold
 * one of the same text as line (len bytes) before the character sep. */
static bool config_line_again(const char *lines, const char *end,
			      const char *line, size_t len, char sep)
{
	const char *at = memchr(line, sep, len);
	size_t n = at ? (size_t)(at - line) : len;

	for (const char *l = lines, *nl; l && *l && (!end || l < end);
	     l = nl ? nl + 1 : NULL) {
		nl = strchr(l, '\n');
		if (!strncmp(l, line, n) &&
		    (l[n] == sep || l + n == nl || !l[n]))
			return true;
	}
	return false;
}

static int config_assign(const struct config_key *k, void *dst,
			 const char *value, char err[CONFIG_ERR_LEN])
{
	char *field = (char *)dst + k->offset;

	if (k->check && k->type == CONFIG_STR) {
		int r = config_check(k, value, strlen(value), err);

		if (r < 0)
			return r;
	}
	switch (k->type) {
	case CONFIG_LINES: {
		/* the flags of a key that repeats come joined by '\n' (cli.c) */
		for (const char *line = value, *nl;; line = nl + 1) {
			char *old = *(char **)field, *joined;
			size_t len;
			int r;

			nl = strchr(line, '\n');
			len = nl ? (size_t)(nl - line) : strlen(line);
			r = config_check(k, line, len, err);
			if (r < 0)
				return r;
			/* the flags' lines, one each (a flag repeated) */
			if (k->unique_before && line > value &&
			    config_line_again(value, line, line, len,
					      k->unique_before)) {
				const char *at = memchr(line, k->unique_before,
							len);

				snprintf(err, CONFIG_ERR_LEN,
					 "%s.%s: '%.*s' given twice",
					 k->section, k->name,
					 (int)(at ? at - line : (ptrdiff_t)len),
					 line);
				return -EINVAL;
			}
			if (asprintf(&joined, "%s%.*s\n", old ? old : "",
				     (int)len, line) < 0)
				return -ENOMEM;
			free(old);
			*(char **)field = joined;
			if (!nl)
				return 0;
		}
	}
	case CONFIG_STR: {
		char *copy = strdup(value);

		if (!copy)
			return -ENOMEM;
		free(*(char **)field);
		*(char **)field = copy;
		return 0;
	}
	case CONFIG_INT: {
		char *end;
		long long v;

		errno = 0;
		v = strtoll(value, &end, 10);
		if (errno || end == value || *end) {
			snprintf(err, CONFIG_ERR_LEN,
				 "%s.%s: '%s' is not an integer", k->section,
				 k->name, value);
			return -EINVAL;
		}
		if (v < k->min || v > k->max) {
			snprintf(err, CONFIG_ERR_LEN,
				 "%s.%s: %lld is out of range %lld..%lld",
				 k->section, k->name, v, k->min, k->max);
			return -EINVAL;
		}
		*(long long *)field = v;
		return 0;
	}
	case CONFIG_SIZE: {
		uint64_t v;

		if (config_parse_size(value, &v) < 0) {
			snprintf(err, CONFIG_ERR_LEN,
				 "%s.%s: '%s' is not a size (such as 4096, 64K, 1G)",
				 k->section, k->name, value);
			return -EINVAL;
		}
		if (v < (uint64_t)k->min || (k->max && v > (uint64_t)k->max)) {
			snprintf(err, CONFIG_ERR_LEN,
				 "%s.%s: %s is out of range %lld..%lld bytes",
				 k->section, k->name, value, k->min, k->max);
			return -EINVAL;
		}
		*(uint64_t *)field = v;
		return 0;
	}
	case CONFIG_BOOL:
		if (config_parse_bool(value, (bool *)field) < 0) {
			snprintf(err, CONFIG_ERR_LEN,
				 "%s.%s: '%s' is not a boolean (true/false)",
				 k->section, k->name, value);
			return -EINVAL;
		}
		return 0;
	}
	return -EINVAL;
}

int config_defaults(const struct config_key *keys, size_t n, void *dst,
		    char err[CONFIG_ERR_LEN])
{
	for (size_t i = 0; i < n; i++) {
		int r;

		if (!config_is_key(&keys[i]) || !keys[i].def)
			continue;
		r = config_assign(&keys[i], dst, keys[i].def, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int config_set(const struct config_key *keys, size_t n, void *dst,
	       const char *section, const char *name, const char *value,
	       char err[CONFIG_ERR_LEN])
{
	const struct config_key *k = config_find(keys, n, section, name);

	if (!k) {
		snprintf(err, CONFIG_ERR_LEN, "unknown key '%s' in section [%s]",
			 name, section);
		return -EINVAL;
	}
	return config_assign(k, dst, value, err);
}

struct config_parse_state {
	const struct config_key *keys;
	size_t n;
	void *dst;
	FILE *f;
	int lineno;   /* lines read so far: the one inih is handling */
	bool midline; /* the last read stopped inside a long line */
	int err_line; /* line of the first rejected key, 0 if none */
	char msg[CONFIG_ERR_LEN];
	int *set_at; /* per key: the line that set it, 0 if none yet */
};

/* inih's line reader, counting lines so a rejected key can name its line. */
static char *config_reader(char *buf, int size, void *stream)
{
	struct config_parse_state *st = stream;
	char *r = fgets(buf, size, st->f);

	if (!r)
		return NULL;
	if (!st->midline)
		st->lineno++;
	st->midline = !strchr(r, '\n');
	return r;
}

/* inih calls this per name=value; returning 0 marks the line as an error. */
static int config_handler(void *user, const char *section, const char *name,
			  const char *value)
{
	struct config_parse_state *st = user;
	char err[CONFIG_ERR_LEN];

	const struct config_key *k = config_find(st->keys, st->n, section, name);
	int *at = k ? &st->set_at[k - st->keys] : NULL;

	if (!config_has_section(st->keys, st->n, section)) {
		err[0] = '\0';
		snprintf(err, sizeof(err), "unknown section [%s]", section);
	} else if (at && *at && k->type != CONFIG_LINES) {
		/* a key of one value, twice: which one was meant? */
		snprintf(err, sizeof(err),
			 "'%s' in [%s] is set again (line %d set it first)",
			 name, section, *at);
	} else if (k && k->type == CONFIG_LINES && k->unique_before &&
		   config_line_again(*(char **)((char *)st->dst + k->offset),
				     NULL, value, strlen(value),
				     k->unique_before)) {
		const char *sep = strchr(value, k->unique_before);

		snprintf(err, sizeof(err),
			 "'%s' in [%s]: '%.*s' is set again (an earlier line set it)",
			 name, section,
			 (int)(sep ? sep - value : (ptrdiff_t)strlen(value)),
			 value);
	} else if (config_set(st->keys, st->n, st->dst, section, name, value,
			      err) == 0) {
		if (at)
			*at = st->lineno;
		return 1;
	}
	if (!st->err_line) {
		memcpy(st->msg, err, sizeof(st->msg));
		st->err_line = st->lineno;
	}
	return 0;
}

int config_load(const char *path, const struct config_key *keys, size_t n,
		void *dst, char err[CONFIG_ERR_LEN])
{
	struct config_parse_state st = { .keys = keys, .n = n, .dst = dst };
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	_cleanup_free_ int *set_at = NULL;
	struct stat sb;
	int line;

	if (!f)
		return -errno;
	/* a directory read as an empty file, /dev/zero read for ever */
	if (fstat(fileno(f), &sb) < 0)
		return -errno;
	if (!S_ISREG(sb.st_mode)) {
		snprintf(err, CONFIG_ERR_LEN, "%s: not a regular file but %s",
			 path, S_ISDIR(sb.st_mode) ? "a directory" :
			       S_ISCHR(sb.st_mode) ? "a character device" :
			       S_ISBLK(sb.st_mode) ? "a block device" :
						     "a pipe or a socket");
		return -EINVAL;
	}
	if (sb.st_size > CONFIG_MAX_BYTES) {
		snprintf(err, CONFIG_ERR_LEN,
			 "%s: %lld bytes, more than a config file's %d",
			 path, (long long)sb.st_size, CONFIG_MAX_BYTES);
		return -EINVAL;
	}
	set_at = calloc(n ? n : 1, sizeof(*set_at));
	if (!set_at)
		return -ENOMEM;
	st.f = f;
	st.set_at = set_at;
	line = ini_parse_stream(config_reader, &st, config_handler, &st);
	if (line == 0)
		return 0;
	if (line == -2)
		return -ENOMEM;
	if (line < 0) {
		snprintf(err, CONFIG_ERR_LEN, "%s: cannot parse", path);
		return -EINVAL;
	}
	if (st.err_line == line)
		snprintf(err, CONFIG_ERR_LEN, "%s:%d: %s", path, line, st.msg);
	else
		snprintf(err, CONFIG_ERR_LEN,
			 "%s:%d: syntax error (expected [section] or key = value)",
			 path, line);
	return -EINVAL;
}

void config_release(const struct config_key *keys, size_t n, void *dst)
{
	for (size_t i = 0; i < n; i++) {
		if (!config_is_key(&keys[i]) || (keys[i].type != CONFIG_STR &&
						 keys[i].type != CONFIG_LINES))
			continue;
		char **field = (char **)((char *)dst + keys[i].offset);

		free(*field);
		*field = NULL;
	}
}
