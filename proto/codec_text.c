/* SPDX-License-Identifier: MIT */
/*
 * Text on the wire: UTF-8 checked by hand (RFC 3629, no NUL), UUIDs by
 * common/uuid_str.h over libuuid.
 */
#include "codec.h"

#include <stdint.h>
#include <string.h>

#include "codec_internal.h"
#include "uuid_str.h"

ssize_t codec_utf8_invalid_at(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		unsigned c;
		size_t n;
		uint32_t cp, min;
		uint64_t v;

		/* eight bytes at a time while each is in 1..0x7f: a byte of 0
		 * borrows into its high bit, one of 0x80 up has it already */
		if (len - i >= 8) {
			memcpy(&v, p + i, 8);
			if (!((v | (v - 0x0101010101010101u)) &
			      0x8080808080808080u)) {
				i += 8;
				continue;
			}
		}
		c = p[i];
		if (c == 0)
			return (ssize_t)i;
		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0) {
			n = 1;
			cp = c & 0x1f;
			min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2;
			cp = c & 0x0f;
			min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3;
			cp = c & 0x07;
			min = 0x10000;
		} else {
			return (ssize_t)i; /* continuation byte or 0xf8..0xff */
		}
		if (len - i - 1 < n)
			return (ssize_t)i;
		for (size_t k = 1; k <= n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return (ssize_t)i;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return (ssize_t)i;
		i += n + 1;
	}
	return -1;
}

int codec_utf8_valid(const char *s, size_t len)
{
	if (!s)
		return len == 0;
	return codec_utf8_invalid_at(s, len) < 0;
}

/* FNV-1a: the names are short, and only a table's slot comes of it */
static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

ssize_t codec_name_repeated(const char *const *names, size_t n,
			    size_t *earlier)
{
	uint16_t slot[2 * CODEC_NAMES_HASHED];
	size_t cap = 16;

	if (n > CODEC_NAMES_HASHED) {
		for (size_t i = 1; i < n; i++)
			for (size_t j = 0; j < i; j++)
				if (!strcmp(names[i], names[j])) {
					*earlier = j;
					return (ssize_t)i;
				}
		return -1;
	}
	while (cap < 2 * n)
		cap <<= 1;
	memset(slot, 0xff, cap * sizeof(*slot));
	/* only a name's first time goes into the table: the one found is
	 * the first equal to it, as a search of those before it finds */
	for (size_t i = 0; i < n; i++) {
		size_t h = name_hash(names[i]) & (cap - 1);

		for (; slot[h] != UINT16_MAX; h = (h + 1) & (cap - 1))
			if (!strcmp(names[slot[h]], names[i])) {
				*earlier = slot[h];
				return (ssize_t)i;
			}
		slot[h] = (uint16_t)i;
	}
	return -1;
}

/* Thin wrappers: callers outside proto/ still use the codec's names. */
int codec_uuid_valid(const char *s)
{
	return uuid_text_valid(s);
}

int codec_uuid_new(char out[37])
{
	return uuid_text_new(out);
}
