/* SPDX-License-Identifier: MIT */
#include "list.h"

#include <string.h>

const char *list_next(const char **cursor, char sep, size_t *ret_len)
{
	const char *s = *cursor, *end;

	if (!s)
		return NULL;
	end = strchr(s, sep);
	*ret_len = end ? (size_t)(end - s) : strlen(s);
	*cursor = end ? end + 1 : NULL;
	return s;
}

size_t list_count(const char *s, char sep)
{
	size_t n = 1;

	if (!s)
		return 0;
	for (; *s; s++)
		n += *s == sep;
	return n;
}
