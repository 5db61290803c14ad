/* SPDX-License-Identifier: MIT */
/* The run's tags: checked, merged, put into the Report (tags.h). */
#include "tags.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

/* Splits "key=value" at its first '=' into new strings. 0, -EINVAL (no
 * '='), -ENOMEM. */
static int split(const char *text, size_t len, char **ret_key,
		 char **ret_value)
{
	const char *eq = memchr(text, '=', len);

	if (!eq)
		return -EINVAL;
	*ret_key = strndup(text, (size_t)(eq - text));
	*ret_value = strndup(eq + 1, len - (size_t)(eq - text) - 1);
	if (!*ret_key || !*ret_value) {
		free(*ret_key);
		free(*ret_value);
		return -ENOMEM;
	}
	return 0;
}

int tags_check_text(const char *text, char *err, size_t len)
{
	_cleanup_free_ char *key = NULL, *value = NULL;
	char why[CODEC_ERR_LEN];
	int r = split(text, strlen(text), &key, &value);

	if (r == -EINVAL) {
		snprintf(err, len, "expected key=value");
		return r;
	}
	if (r < 0) {
		snprintf(err, len, "out of memory");
		return r;
	}
	r = codec_check_tag(key, value, why);
	if (r < 0)
		snprintf(err, len, "%s", why);
	return r;
}

int tags_parse(const char *text, struct tags *ret, char err[TAGS_ERR_LEN])
{
	const char *line = text, *nl;

	*ret = (struct tags){ 0 };
	for (; line && *line; line = nl ? nl + 1 : NULL) {
		_cleanup_free_ char *key = NULL, *value = NULL;
		char why[CODEC_ERR_LEN];
		size_t len, i;
		int r;

		nl = strchr(line, '\n');
		len = nl ? (size_t)(nl - line) : strlen(line);
		r = split(line, len, &key, &value);
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			snprintf(err, TAGS_ERR_LEN, "tag '%.*s': expected key=value",
				 (int)(len > 80 ? 80 : len), line);
			return r;
		}
		r = codec_check_tag(key, value, why);
		if (r < 0) {
			snprintf(err, TAGS_ERR_LEN, "tag '%.*s': %s",
				 (int)(len > 80 ? 80 : len), line, why);
			return r;
		}
		for (i = 0; i < ret->n && strcmp(ret->keys[i], key); i++)
			;
		if (i < ret->n) {
			free(ret->values[i]);
			ret->values[i] = TAKE_PTR(value);
			continue;
		}
		if (ret->n == CODEC_MAX_TAGS) {
			snprintf(err, TAGS_ERR_LEN,
				 "too many tags: '%s' would be key %d, at most %d (agent.conf's tag lines and --tag together)",
				 key, CODEC_MAX_TAGS + 1, CODEC_MAX_TAGS);
			return -EINVAL;
		}
		ret->keys[ret->n] = TAKE_PTR(key);
		ret->values[ret->n++] = TAKE_PTR(value);
	}
	return 0;
}

void tags_release(struct tags *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->keys[i]);
		free(t->values[i]);
	}
	t->n = 0;
}

int tags_to_report(const struct tags *t, Fleetbench__Report *rep)
{
	if (!t || !t->n)
		return 0;
	rep->tags = calloc(t->n, sizeof(*rep->tags));
	if (!rep->tags)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		Fleetbench__Tag *g = malloc(sizeof(*g));

		if (!g)
			return -ENOMEM;
		fleetbench__tag__init(g);
		rep->tags[rep->n_tags++] = g;
		g->key = strdup(t->keys[i]);
		g->value = strdup(t->values[i]);
		if (!g->key || !g->value)
			return -ENOMEM;
	}
	return 0;
}
