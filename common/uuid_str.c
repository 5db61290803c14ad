/* SPDX-License-Identifier: MIT */
#include "uuid_str.h"

#include <errno.h>
#include <string.h>
#include <uuid/uuid.h>

bool uuid_text_valid_n(const char *s, size_t len)
{
	char buf[UUID_TEXT_LEN + 1];
	uuid_t u;

	if (!s || len != UUID_TEXT_LEN)
		return false;
	/* uuid_parse also takes upper case: the canonical form does not */
	for (size_t i = 0; i < len; i++)
		if (s[i] >= 'A' && s[i] <= 'F')
			return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	return uuid_parse(buf, u) == 0;
}

bool uuid_text_valid(const char *s)
{
	return s && uuid_text_valid_n(s, strnlen(s, UUID_TEXT_LEN + 1));
}

int uuid_text_new(char out[UUID_TEXT_LEN + 1])
{
	uuid_t u;

	uuid_generate_random(u);
	uuid_unparse_lower(u, out);
	return 0;
}
