/* SPDX-License-Identifier: MIT */
/* pgbench's output, parsed for the database benchmark (database.h). */
#include "database.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "array.h"

/* The next whitespace-separated token of line [*p, end) into tok. */
static bool next_token(const char **p, const char *end, const char **tok,
		       size_t *len)
{
	const char *s = *p;

	while (s < end && (*s == ' ' || *s == '\t' || *s == '\r'))
		s++;
	if (s == end)
		return false;
	*tok = s;
	while (s < end && *s != ' ' && *s != '\t' && *s != '\r')
		s++;
	*len = (size_t)(s - *tok);
	*p = s;
	return true;
}

/* Whether [tok, tok + len) is a non-negative decimal integer; its value. */
static bool token_int(const char *tok, size_t len, long long *ret)
{
	long long v = 0;

	if (!len || len > 18)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (tok[i] < '0' || tok[i] > '9')
			return false;
		v = v * 10 + (tok[i] - '0');
	}
	*ret = v;
	return true;
}

int pgbench_log_parse(const char *text, struct pgbench_lat *lat)
{
	const char *line = text;

	while (*line) {
		const char *eol = strchr(line, '\n');
		const char *end = eol ? eol : line + strlen(line), *p = line;
		const char *tok;
		long long v, time_us = -1;
		size_t len, k = 0;
		bool failed = false;

		for (; next_token(&p, end, &tok, &len); k++) {
			if (k == 2 && (!strncmp(tok, "skipped", len) ||
				       !strncmp(tok, "failed", len)) &&
			    (len == 7 || len == 6)) {
				failed = true;
				continue;
			}
			if (k >= 8 || !token_int(tok, len, &v))
				return -EBADMSG;
			if (k == 2)
				time_us = v;
		}
		if (k > 0 && k < 6)
			return -EBADMSG;
		if (k > 0 && failed) {
			lat->failed++;
		} else if (k > 0) {
			if (ARRAY_RESERVE(lat->ms, lat->cap, lat->n + 1) < 0)
				return -ENOMEM;
			lat->ms[lat->n++] = (double)time_us / 1000.0;
		}
		line = eol ? eol + 1 : end;
	}
	return 0;
}

int pgbench_tps(const char *out, double *ret)
{
	const char *p = out;
	double v;

	while ((p = strstr(p, "tps = "))) {
		if ((p == out || p[-1] == '\n') && sscanf(p, "tps = %lf", &v) == 1) {
			*ret = v;
			return 0;
		}
		p++;
	}
	return -EBADMSG;
}
