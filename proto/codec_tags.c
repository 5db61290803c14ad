/* SPDX-License-Identifier: MIT */
/*
 * A run's tags (Report.tags, docs/wire.md): the rules for one key and
 * value, which the agent checks a --tag or agent.conf line by, and the
 * Report's, which the collector refuses a report by.
 */
#include "codec.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "codec_internal.h"

bool codec_tag_key_valid(const char *key)
{
	size_t len = key ? strlen(key) : 0;

	return len >= 1 && len <= CODEC_MAX_TAG_KEY && key[0] >= 'a' &&
	       key[0] <= 'z' &&
	       strspn(key, "abcdefghijklmnopqrstuvwxyz0123456789_") == len;
}

/* 0xc2 0x80..0x9f in UTF-8 for C1 (codec.h) */
ssize_t codec_control_at(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f)
			return (ssize_t)i;
		if (c == 0xc2 && i + 1 < len &&
		    (unsigned char)s[i + 1] >= 0x80 &&
		    (unsigned char)s[i + 1] <= 0x9f)
			return (ssize_t)i;
	}
	return -1;
}

int codec_check_tag(const char *key, const char *value,
		    char err[CODEC_ERR_LEN])
{
	size_t len;
	ssize_t at;

	if (!key || !*key)
		return codec_invalid(err, "tag: empty key");
	if (!codec_tag_key_valid(key))
		return codec_invalid(err,
				     "tag: bad key (%zu bytes): a key is 1 to %d of [a-z0-9_], starting with a letter",
				     strlen(key), CODEC_MAX_TAG_KEY);
	if (!value || !*value)
		return codec_invalid(err, "tag %s: empty value", key);
	len = strlen(value);
	if (len > CODEC_MAX_TAG_VALUE)
		return codec_invalid(err, "tag %s: value is %zu bytes, at most %d",
				     key, len, CODEC_MAX_TAG_VALUE);
	at = codec_utf8_invalid_at(value, len);
	if (at >= 0)
		return codec_invalid(err,
				     "tag %s: value is not valid UTF-8 (byte %zd)",
				     key, at);
	at = codec_control_at(value, len);
	if (at >= 0)
		return codec_invalid(err,
				     "tag %s: value holds a control character (byte %zd)",
				     key, at);
	return 0;
}

int codec_check_tags(const Fleetbench__Report *r, char err[CODEC_ERR_LEN])
{
	char why[CODEC_ERR_LEN];

	for (size_t i = 0; i < r->n_tags; i++) {
		const Fleetbench__Tag *t = r->tags[i];

		if (codec_check_tag(t->key, t->value, why) < 0)
			return codec_invalid(err, "tags[%zu]: %s", i, why);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(t->key, r->tags[j]->key))
				return codec_invalid(err,
						     "tags[%zu]: tag %s: the same key as tags[%zu]",
						     i, t->key, j);
	}
	return 0;
}
