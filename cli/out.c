/* SPDX-License-Identifier: MIT */
/* The query commands' printer: aligned table, CSV or JSON. */
#include "out.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
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

/* One column of the table: a result column, or an estimate with its
 * interval (lo, hi >= 0) printed as one. */
struct table_col {
	int col, lo, hi;
	bool number;
	size_t width;
};

static bool hidden(const char *name, const char *const *hide)
{
	for (; hide && *hide; hide++)
		if (!strcmp(name, *hide))
			return true;
	return false;
}

/* Whether column c is named "<name of col><suffix>". */
static bool named_after(const PGresult *res, int c, int col,
			const char *suffix)
{
	const char *base = PQfname(res, col), *name;
	size_t n = strlen(base);

	if (c >= PQnfields(res))
		return false;
	name = PQfname(res, c);
	return !strncmp(name, base, n) && !strcmp(name + n, suffix);
}

/* The length of the control character (C0, DEL, or C1: U+0080 to U+009F,
 * 0xc2 0x80..0x9f in UTF-8) at s, 0 if none. */
static size_t control_len(const char *s)
{
	unsigned char c = (unsigned char)s[0];

	if (c < 0x20 || c == 0x7f)
		return 1;
	if (c == 0xc2 && (unsigned char)s[1] >= 0x80 &&
	    (unsigned char)s[1] <= 0x9f)
		return 2;
	return 0;
}

/*
 * s (taken over) with each control character written as an escape (\n,
 * \t, \r, \x1b, \u0085): a table is for a terminal, and a stored label
 * of "\e[2J" or "\n" and a forged row would act on it (issue 38). CSV and
 * JSON keep the bytes, quoted and escaped as their formats say. NULL on
 * ENOMEM.
 */
static char *table_safe(char *s)
{
	char *out, *o;
	size_t extra = 0;

	if (!s)
		return NULL;
	for (const char *p = s; *p; p++)
		extra += control_len(p) ? 6 : 0;
	if (!extra)
		return s;
	out = malloc(strlen(s) + extra + 1);
	if (!out) {
		free(s);
		return NULL;
	}
	o = out;
	for (const char *p = s; *p;) {
		size_t n = control_len(p);

		if (!n) {
			*o++ = *p++;
			continue;
		}
		if (n == 2)
			o += sprintf(o, "\\u%04x", (unsigned char)p[1]);
		else if (*p == '\n')
			o += sprintf(o, "\\n");
		else if (*p == '\t')
			o += sprintf(o, "\\t");
		else if (*p == '\r')
			o += sprintf(o, "\\r");
		else
			o += sprintf(o, "\\x%02x", (unsigned char)*p);
		p += n;
	}
	*o = '\0';
	free(s);
	return out;
}

/* The text of one cell in a new string, made safe for a terminal
 * (table_safe()); NULL on ENOMEM. */
static char *table_cell(const PGresult *res, int r, const struct table_col *t)
{
	char *s;

	if (PQgetisnull(res, r, t->col))
		return strdup("");
	if (t->lo < 0 || PQgetisnull(res, r, t->lo) ||
	    PQgetisnull(res, r, t->hi))
		return table_safe(strdup(PQgetvalue(res, r, t->col)));
	if (asprintf(&s, "%s [%s, %s]", PQgetvalue(res, r, t->col),
		     PQgetvalue(res, r, t->lo), PQgetvalue(res, r, t->hi)) < 0)
		return NULL;
	return table_safe(s);
}

static int print_table(FILE *f, const PGresult *res, const char *const *hide)
{
	int rows = PQntuples(res), cols = PQnfields(res), n = 0, r = 0;
	_cleanup_free_ struct table_col *t = calloc((size_t)cols + 1, sizeof(*t));
	_cleanup_free_ char **cell = NULL;

	if (!t)
		return -ENOMEM;
	for (int c = 0; c < cols; c++) {
		enum kind k = column_kind(res, c);

		if (hidden(PQfname(res, c), hide))
			continue;
		t[n] = (struct table_col){ .col = c, .lo = -1, .hi = -1,
					   .number = k == KIND_INT ||
						     k == KIND_FLOAT,
					   .width = utf8_width(PQfname(res, c)) };
		if (named_after(res, c + 1, c, "_lo") &&
		    named_after(res, c + 2, c, "_hi")) {
			t[n].lo = c + 1;
			t[n].hi = c + 2;
			c += 2;
		}
		n++;
	}
	cell = calloc((size_t)rows * (size_t)n + 1, sizeof(*cell));
	if (!cell)
		return -ENOMEM;
	for (int i = 0; i < rows; i++)
		for (int j = 0; j < n; j++) {
			char *v = table_cell(res, i, &t[j]);
			size_t w;

			if (!v) {
				r = -ENOMEM;
				goto out;
			}
			cell[(size_t)i * n + j] = v;
			w = utf8_width(v);
			if (w > t[j].width)
				t[j].width = w;
		}
	for (int j = 0; j < n; j++) {
		const char *name = PQfname(res, t[j].col);

		fprintf(f, "%s%s", j ? "  " : "", name);
		/* no trailing blanks after the last column */
		if (j + 1 < n)
			pad(f, t[j].width - utf8_width(name));
	}
	fputc('\n', f);
	for (int j = 0; j < n; j++) {
		fputs(j ? "  " : "", f);
		for (size_t i = 0; i < t[j].width; i++)
			fputc('-', f);
	}
	fputc('\n', f);
	for (int i = 0; i < rows; i++) {
		for (int j = 0; j < n; j++) {
			const char *v = cell[(size_t)i * n + j];
			size_t gap = t[j].width - utf8_width(v);

			fputs(j ? "  " : "", f);
			if (t[j].number)
				pad(f, gap);
			fputs(v, f);
			if (!t[j].number && j + 1 < n)
				pad(f, gap);
		}
		fputc('\n', f);
	}
	fprintf(f, "(%d row%s)\n", rows, rows == 1 ? "" : "s");
	r = ferror(f) ? -EIO : 0;
out:
	for (size_t i = 0; i < (size_t)rows * n; i++)
		free(cell[i]);
	return r;
}

/* Quoted as psql --csv quotes (and RFC 4180 allows): when the field holds
 * a comma, a double quote, CR or LF, or is "\." (COPY's end of data). */
static void csv_field(FILE *f, const char *v)
{
	if (!strpbrk(v, ",\"\r\n") && strcmp(v, "\\.")) {
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

/* One CSV line: the column names (r < 0) or row r. */
static void csv_line(FILE *f, const PGresult *res, int r,
		     const char *const *hide)
{
	bool first = true;

	for (int c = 0; c < PQnfields(res); c++) {
		if (hidden(PQfname(res, c), hide))
			continue;
		if (!first)
			fputc(',', f);
		first = false;
		if (r < 0)
			csv_field(f, PQfname(res, c));
		else if (!PQgetisnull(res, r, c))
			csv_field(f, PQgetvalue(res, r, c));
	}
	fputc('\n', f);
}

static int print_csv(FILE *f, const PGresult *res, const char *const *hide)
{
	for (int r = -1; r < PQntuples(res); r++)
		csv_line(f, res, r, hide);
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

static int print_json(FILE *f, const PGresult *res, const char *const *hide)
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

			if (hidden(PQfname(res, c), hide))
				continue;
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

int out_print(FILE *f, const PGresult *res, enum out_format fmt,
	      const char *const *hide)
{
	int r;

	switch (fmt) {
	case OUT_TABLE:
		r = print_table(f, res, hide);
		break;
	case OUT_CSV:
		r = print_csv(f, res, hide);
		break;
	case OUT_JSON:
		r = print_json(f, res, hide);
		break;
	default:
		return -EINVAL;
	}
	if (r == 0 && fflush(f) == EOF)
		r = -EIO;
	return r;
}
