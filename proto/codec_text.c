/* SPDX-License-Identifier: MIT */
/*
 * Text on the wire: UTF-8 checked by hand (RFC 3629, no NUL), UUIDs by
 * common/uuid_str.h over libuuid.
 */
#include "codec.h"

#include <stdint.h>

#include "uuid_str.h"

ssize_t codec_utf8_invalid_at(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		unsigned c = p[i];
		size_t n;
		uint32_t cp, min;

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

/* Thin wrappers: callers outside proto/ still use the codec's names. */
int codec_uuid_valid(const char *s)
{
	return uuid_text_valid(s);
}

int codec_uuid_new(char out[37])
{
	return uuid_text_new(out);
}
