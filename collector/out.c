/* SPDX-License-Identifier: MIT */
/* The query commands' printer: aligned table, CSV or JSON. */
#include "out.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

/*
 * Type OIDs of the built-in types (catalog/pg_type.dat; fixed since
 * PostgreSQL 7: libpq-fe.h does not define them and the server headers
 * are not a client's dependency).
 */
#define OID_BOOL 16
#define OID_INT8 20
#define OID_INT2 21
#define OID_INT4 23
#define OID_OID 26
#define OID_JSON 114
#define OID_FLOAT4 700
#define OID_FLOAT8 701
#define OID_NUMERIC 1700
#define OID_JSONB 3802

enum kind {
	KIND_TEXT,
	KIND_INT,
	KIND_FLOAT,
	KIND_BOOL,
	KIND_JSON,
};

static enum kind column_kind(const PGresult *res, int col)
{
	switch (PQftype(res, col)) {
	case OID_INT2:
	case OID_INT4:
	case OID_INT8:
	case OID_OID:
		return KIND_INT;
	case OID_FLOAT4:
	case OID_FLOAT8:
	case OID_NUMERIC:
		return KIND_FLOAT;
	case OID_BOOL:
		return KIND_BOOL;
	case OID_JSON:
	case OID_JSONB:
		return KIND_JSON;
	default:
		return KIND_TEXT;
	}
}

int out_format_parse(const char *name, enum out_format *ret)
{
	static const char *const names[] = {
		[OUT_TABLE] = "table",
		[OUT_CSV] = "csv",
		[OUT_JSON] = "json",
	};

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcmp(name, names[i])) {
			*ret = (enum out_format)i;
			return 0;
		}
	return -EINVAL;
}

/* Characters of UTF-8 text: the bytes that do not continue one. */
static size_t utf8_width(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static int pad(FILE *f, size_t n)
{
	while (n--)
		if (fputc(' ', f) == EOF)
			return -EIO;
	return 0;
}

static int print_table(FILE *f, const PGresult *res)
{
	int rows = PQntuples(res), cols = PQnfields(res);
	_cleanup_free_ size_t *width = calloc((size_t)cols + 1, sizeof(*width));

	if (!width)
		return -ENOMEM;
	for (int c = 0; c < cols; c++) {
		width[c] = utf8_width(PQfname(res, c));
		for (int r = 0; r < rows; r++) {
			size_t w = utf8_width(PQgetvalue(res, r, c));

			if (w > width[c])
				width[c] = w;
		}
	}
	for (int c = 0; c < cols; c++) {
		const char *name = PQfname(res, c);

		fprintf(f, "%s%s", c ? "  " : "", name);
		/* no trailing blanks after the last column */
		if (c + 1 < cols)
			pad(f, width[c] - utf8_width(name));
	}
	fputc('\n', f);
	for (int c = 0; c < cols; c++) {
		fputs(c ? "  " : "", f);
		for (size_t i = 0; i < width[c]; i++)
			fputc('-', f);
	}
	fputc('\n', f);
	for (int r = 0; r < rows; r++) {
		for (int c = 0; c < cols; c++) {
			const char *v = PQgetvalue(res, r, c);
			size_t gap = width[c] - utf8_width(v);
			enum kind k = column_kind(res, c);

			fputs(c ? "  " : "", f);
			if (k == KIND_INT || k == KIND_FLOAT) {
				pad(f, gap);
				fputs(v, f);
			} else {
				fputs(v, f);
				if (c + 1 < cols)
					pad(f, gap);
			}
		}
		fputc('\n', f);
	}
	fprintf(f, "(%d row%s)\n", rows, rows == 1 ? "" : "s");
	return ferror(f) ? -EIO : 0;
}

static void csv_field(FILE *f, const char *v)
{
	size_t len = strlen(v);

	if (!strpbrk(v, ",\"\r\n") &&
	    !(len && (v[0] == ' ' || v[len - 1] == ' '))) {
		fputs(v, f);
		return;
	}
	fputc('"', f);
	for (; *v; v++) {
		if (*v == '"')
			fputc('"', f);
		fputc(*v, f);
	}
	fputc('"', f);
}

static int print_csv(FILE *f, const PGresult *res)
{
	int rows = PQntuples(res), cols = PQnfields(res);

	for (int c = 0; c < cols; c++) {
		if (c)
			fputc(',', f);
		csv_field(f, PQfname(res, c));
	}
	fputc('\n', f);
	for (int r = 0; r < rows; r++) {
		for (int c = 0; c < cols; c++) {
			if (c)
				fputc(',', f);
			if (!PQgetisnull(res, r, c))
				csv_field(f, PQgetvalue(res, r, c));
		}
		fputc('\n', f);
	}
	return ferror(f) ? -EIO : 0;
}

/* One value as json-c sees it; *ret NULL is JSON null. */
static int json_value(const PGresult *res, int r, int c,
		      struct json_object **ret)
{
	const char *v = PQgetvalue(res, r, c);
	char *end;

	*ret = NULL;
	if (PQgetisnull(res, r, c))
		return 0;
	switch (column_kind(res, c)) {
	case KIND_INT: {
		long long n;

		errno = 0;
		n = strtoll(v, &end, 10);
		if (errno || *end)
			break; /* not an int8: keep the server's text */
		*ret = json_object_new_int64(n);
		return *ret ? 0 : -ENOMEM;
	}
	case KIND_FLOAT: {
		double d = strtod(v, &end);

		if (*end || !isfinite(d))
			return 0; /* NaN, Infinity: null */
		/* the server's digits, not printf's */
		*ret = json_object_new_double_s(d, v);
		return *ret ? 0 : -ENOMEM;
	}
	case KIND_BOOL:
		*ret = json_object_new_boolean(!strcmp(v, "t"));
		return *ret ? 0 : -ENOMEM;
	case KIND_JSON: {
		enum json_tokener_error e;

		*ret = json_tokener_parse_verbose(v, &e);
		/* "null" parses to NULL too, and is null */
		return *ret || !strcmp(v, "null") ? 0 : -EINVAL;
	}
	case KIND_TEXT:
		break;
	}
	*ret = json_object_new_string(v);
	return *ret ? 0 : -ENOMEM;
}

static int print_json(FILE *f, const PGresult *res)
{
	int rows = PQntuples(res), cols = PQnfields(res);
	struct json_object *all = json_object_new_array_ext(rows);
	int r = 0;

	if (!all)
		return -ENOMEM;
	for (int i = 0; i < rows && r == 0; i++) {
		struct json_object *row = json_object_new_object();

		if (!row || json_object_array_add(all, row) < 0) {
			json_object_put(row);
			r = -ENOMEM;
			break;
		}
		for (int c = 0; c < cols && r == 0; c++) {
			struct json_object *v;

			r = json_value(res, i, c, &v);
			if (r == 0 &&
			    json_object_object_add(row, PQfname(res, c), v) < 0) {
				json_object_put(v);
				r = -ENOMEM;
			}
		}
	}
	if (r == 0) {
		fputs(json_object_to_json_string_ext(
			      all, JSON_C_TO_STRING_PRETTY |
					   JSON_C_TO_STRING_SPACED |
					   JSON_C_TO_STRING_NOSLASHESCAPE),
		      f);
		fputc('\n', f);
		r = ferror(f) ? -EIO : 0;
	}
	json_object_put(all);
	return r;
}

int out_print(FILE *f, const PGresult *res, enum out_format fmt)
{
	int r;

	switch (fmt) {
	case OUT_TABLE:
		r = print_table(f, res);
		break;
	case OUT_CSV:
		r = print_csv(f, res);
		break;
	case OUT_JSON:
		r = print_json(f, res);
		break;
	default:
		return -EINVAL;
	}
	if (r == 0 && fflush(f) == EOF)
		r = -EIO;
	return r;
}
