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
#include "figures.h"

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

size_t out_width(const char *s)
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

/* Whether columns c + 1 and c + 2 are column c's interval (X_lo and
 * X_hi after X): *lo and *hi are set to them, else left. Returns the last
 * column of the three, or c. */
static int with_interval(const PGresult *res, int c, int *lo, int *hi)
{
	if (!named_after(res, c + 1, c, "_lo") ||
	    !named_after(res, c + 2, c, "_hi"))
		return c;
	*lo = c + 1;
	*hi = c + 2;
	return c + 2;
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
					   .width = out_width(PQfname(res, c)) };
		c = with_interval(res, c, &t[n].lo, &t[n].hi);
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
			w = out_width(v);
			if (w > t[j].width)
				t[j].width = w;
		}
	for (int j = 0; j < n; j++) {
		const char *name = PQfname(res, t[j].col);

		fprintf(f, "%s%s", j ? "  " : "", name);
		/* no trailing blanks after the last column */
		if (j + 1 < n)
			pad(f, t[j].width - out_width(name));
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
			size_t gap = t[j].width - out_width(v);

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

/* ---- the narrow table ---- */

#define OID_TIMESTAMP 1114
#define OID_TIMESTAMPTZ 1184
/* the longest text cell of a narrow table, ellipsis included */
#define NARROW_TEXT_MAX 20
#define ELLIPSIS "\xe2\x80\xa6"
#define DETAIL_INDENT 4

/* One column of the narrow table. */
struct ncol {
	int col, lo, hi;
	enum kind kind;
	bool time; /* a timestamp: to the minute, the zone said once */
	const char *unit; /* the unit line's entry, or NULL */
	char head[2][64]; /* the header, in one or two lines */
	size_t width;
	size_t min; /* cut no narrower: its header, or NARROW_TEXT_MAX */
	bool kept;
	bool empty; /* no row has a value: left out */
	bool detail; /* printed under its row (out_narrow.detail) */
};

/* v to three significant digits (the integral part whole), in buf. */
static void sig3(char *buf, size_t n, double v)
{
	double a = fabs(v);
	int dec;

	if (!isfinite(v)) {
		snprintf(buf, n, "%s", isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf");
		return;
	}
	if (a >= 100 || a == 0)
		dec = 0;
	else if (a >= 10)
		dec = 1;
	else if (a >= 1)
		dec = 2;
	else
		dec = 2 - (int)floor(log10(a));
	if (dec > 9)
		dec = 9;
	snprintf(buf, n, "%.*f", dec, v);
	if (!strcmp(buf, "-0"))
		snprintf(buf, n, "0");
}

/* A number of the server's text, or NAN. */
static double number(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	return end != s && !*end ? v : NAN;
}

void out_estimate(char *buf, size_t n, const char *median, const char *lo,
		  const char *hi)
{
	double m = number(median), l = lo ? number(lo) : NAN,
	       h = hi ? number(hi) : NAN;
	double p = fmax(h - m, m - l) / fabs(m) * 100;
	char a[32], b[32], c[32];

	sig3(a, sizeof(a), m);
	if (!isfinite(l) || !isfinite(h)) {
		snprintf(buf, n, "%s", a);
	} else if (m == 0 || !isfinite(p)) {
		sig3(b, sizeof(b), l);
		sig3(c, sizeof(c), h);
		snprintf(buf, n, "%s [%s, %s]", a, b, c);
	} else {
		/* ±0.4%, ±0%, ±12% */
		snprintf(buf, n, p < 0.95 && p >= 0.05 ? "%s \xc2\xb1%.1f%%" :
							 "%s \xc2\xb1%.0f%%",
			 a, p);
	}
}

/* The minute of a timestamp's text ("2025-03-03 01:00:00.5+00") in buf,
 * and its zone ("+00", "" without one) in zone. */
static void minute(const char *s, char *buf, size_t n, char *zone,
		   size_t zn)
{
	const char *z = strlen(s) > 19 ? s + 19 : "";

	snprintf(buf, n, "%.16s", s);
	while (*z == '.' || (*z >= '0' && *z <= '9'))
		z++;
	snprintf(zone, zn, "%s", z);
}

/* The strings of a JSON array of strings, comma-separated, or NULL. */
static char *json_strings(const char *v)
{
	struct json_object *a = json_tokener_parse(v);
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	if (!a || !json_object_is_type(a, json_type_array)) {
		json_object_put(a);
		return NULL;
	}
	f = open_memstream(&out, &len);
	for (size_t i = 0; f && i < json_object_array_length(a); i++) {
		struct json_object *e = json_object_array_get_idx(a, i);

		if (!json_object_is_type(e, json_type_string)) {
			fclose(f);
			free(out);
			f = NULL;
			out = NULL;
			break;
		}
		fprintf(f, "%s%s", i ? ", " : "", json_object_get_string(e));
	}
	if (f && fclose(f) != 0) {
		free(out);
		out = NULL;
	}
	json_object_put(a);
	return out;
}

/* s cut to at most max characters, the last of them an ellipsis. */
static void cut(char *s, size_t max)
{
	size_t n = 0;

	if (out_width(s) <= max)
		return;
	for (char *p = s; *p; p++)
		if (((unsigned char)*p & 0xc0) != 0x80 && n++ == max - 1) {
			strcpy(p, ELLIPSIS);
			return;
		}
}

/* The narrow text of one cell, new; zone gets a timestamp's zone. NULL
 * on ENOMEM. */
static char *narrow_cell(const PGresult *res, int r, const struct ncol *t,
			 char *zone, size_t zn)
{
	const char *v = PQgetvalue(res, r, t->col);
	char buf[160];
	char *s;

	if (PQgetisnull(res, r, t->col))
		return strdup("");
	if (t->lo >= 0 && !PQgetisnull(res, r, t->lo) &&
	    !PQgetisnull(res, r, t->hi)) {
		out_estimate(buf, sizeof(buf), v, PQgetvalue(res, r, t->lo),
			     PQgetvalue(res, r, t->hi));
		return strdup(buf);
	}
	switch (t->kind) {
	case KIND_FLOAT:
		if (!isfinite(number(v)))
			return strdup(v);
		sig3(buf, sizeof(buf), number(v));
		return strdup(buf);
	case KIND_BOOL:
		return strdup(!strcmp(v, "t") ? "yes" : "no");
	case KIND_INT:
		return strdup(v);
	case KIND_JSON:
	case KIND_TEXT:
		break;
	}
	if (t->time) {
		minute(v, buf, sizeof(buf), zone, zn);
		return strdup(buf);
	}
	/* a JSON array of strings as the strings, other JSON as its text */
	s = t->kind == KIND_JSON ? json_strings(v) : NULL;
	if (!s)
		s = strdup(v);
	return table_safe(s);
}

/* name in head[0] and, when longer than width, broken in two at the
 * underscore that makes the longer line shortest. */
static void head_split(struct ncol *t, const char *name, size_t width)
{
	size_t n = strlen(name), best = n, at = 0;

	snprintf(t->head[0], sizeof(t->head[0]), "%s", name);
	t->head[1][0] = '\0';
	if (n <= width || n >= sizeof(t->head[0]))
		return;
	for (size_t i = 1; i + 1 < n; i++)
		if (name[i] == '_' && (i + 1 > n - i - 1 ? i + 1 : n - i - 1) < best) {
			best = i + 1 > n - i - 1 ? i + 1 : n - i - 1;
			at = i + 1;
		}
	if (!at)
		return;
	snprintf(t->head[0], sizeof(t->head[0]), "%.*s", (int)at, name);
	snprintf(t->head[1], sizeof(t->head[1]), "%s", name + at);
}

/* Whether name is an item of the comma-separated list. */
static bool listed(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p && *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == n && !strncmp(p, name, n))
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

/* The unit of a column named after a headline figure, or NULL. */
static const char *figure_unit(const char *name)
{
	for (size_t i = 0; i < FIGURES_N; i++)
		if (!strcmp(figure_decls[i].name, name))
			return figure_decls[i].unit;
	return NULL;
}

void out_wrapped(FILE *f, const char *text, unsigned width,
			  size_t first, size_t indent)
{
	const char *p = text;
	size_t at = first;

	while (*p) {
		size_t room = width > at + 20 ? width - at : 20, take = strlen(p);

		if (out_width(p) > room) {
			/* the last blank within room characters */
			size_t chars = 0;

			take = 0;
			for (size_t i = 0; p[i] && chars <= room; i++) {
				if (((unsigned char)p[i] & 0xc0) != 0x80)
					chars++;
				if (p[i] == ' ' && chars <= room)
					take = i;
			}
			if (!take) /* no blank: cut at room characters */
				for (chars = 0; p[take]; take++)
					if (((unsigned char)p[take] & 0xc0) != 0x80 &&
					    chars++ == room)
						break;
		}
		fprintf(f, "%*s%.*s\n", (int)at, "", (int)take, p);
		p += take;
		while (*p == ' ')
			p++;
		at = indent;
	}
}

int out_print_narrow(FILE *f, const PGresult *res, const char *const *hide,
		     const struct out_narrow *o)
{
	int rows = PQntuples(res), cols = PQnfields(res), n = 0, r = 0;
	int details = 0, dropped = 0;
	_cleanup_free_ struct ncol *t = calloc((size_t)cols + 1, sizeof(*t));
	_cleanup_free_ char **cell = NULL;
	char zone[32] = "", z[32];
	bool one_zone = true, units = false, two = false;
	size_t used = 0;

	if (!t)
		return -ENOMEM;
	for (int c = 0; c < cols; c++) {
		Oid type = PQftype(res, c);

		if (hidden(PQfname(res, c), hide))
			continue;
		t[n] = (struct ncol){ .col = c, .lo = -1, .hi = -1,
				      .kind = column_kind(res, c),
				      .time = type == OID_TIMESTAMP ||
					      type == OID_TIMESTAMPTZ,
				      .unit = figure_unit(PQfname(res, c)) };
		c = with_interval(res, c, &t[n].lo, &t[n].hi);
		t[n].detail = o->detail && listed(o->detail, PQfname(res, t[n].col));
		details += t[n].detail;
		n++;
	}
	cell = calloc((size_t)rows * (size_t)n + 1, sizeof(*cell));
	if (!cell)
		return -ENOMEM;
	for (int i = 0; i < rows; i++)
		for (int j = 0; j < n; j++) {
			char *v = narrow_cell(res, i, &t[j], z, sizeof(z));

			if (!v) {
				r = -ENOMEM;
				goto out;
			}
			cell[(size_t)i * n + j] = v;
			if (t[j].time && !PQgetisnull(res, i, t[j].col)) {
				if (!zone[0] && one_zone)
					snprintf(zone, sizeof(zone), "%s", z[0] ? z : "-");
				else if (strcmp(zone, z[0] ? z : "-"))
					one_zone = false;
			}
			if (out_width(v) > t[j].width)
				t[j].width = out_width(v);
		}
	/* zones that differ stay in their cells */
	for (int i = 0; !one_zone && i < rows; i++)
		for (int j = 0; j < n; j++) {
			char *v = cell[(size_t)i * n + j], *w;

			if (!t[j].time || PQgetisnull(res, i, t[j].col))
				continue;
			minute(PQgetvalue(res, i, t[j].col), z, sizeof(z), zone,
			       sizeof(zone));
			if (asprintf(&w, "%s%s", v, zone) < 0) {
				r = -ENOMEM;
				goto out;
			}
			free(v);
			cell[(size_t)i * n + j] = w;
			if (out_width(w) > t[j].width)
				t[j].width = out_width(w);
		}
	if (one_zone && zone[0] && strcmp(zone, "-"))
		snprintf(zone, sizeof(zone), "%s",
			 !strcmp(zone, "+00") ? "UTC" : zone);
	else
		zone[0] = '\0';
	for (int j = 0; j < n; j++) {
		size_t w;

		t[j].empty = rows > 0;
		for (int i = 0; t[j].empty && i < rows; i++)
			t[j].empty = !cell[(size_t)i * n + j][0];
		if (t[j].time && zone[0])
			t[j].unit = zone;
		head_split(&t[j], PQfname(res, t[j].col),
			   t[j].width > 6 ? t[j].width : 6);
		w = out_width(t[j].head[0]);
		if (out_width(t[j].head[1]) > w)
			w = out_width(t[j].head[1]);
		if (t[j].unit && strlen(t[j].unit) > w)
			w = strlen(t[j].unit);
		if (w > t[j].width)
			t[j].width = w;
		t[j].kept = !t[j].empty && !t[j].detail;
		t[j].min = w > NARROW_TEXT_MAX ? w : NARROW_TEXT_MAX;
		if (t[j].kept)
			used += (used ? 2 : 0) + t[j].width;
	}
	/* too wide: the widest text cut, down to NARROW_TEXT_MAX each */
	while (used > o->width) {
		int widest = -1;

		for (int j = 0; j < n; j++)
			if (t[j].kept && (t[j].kind == KIND_TEXT || t[j].kind == KIND_JSON) &&
			    !t[j].time && t[j].width > t[j].min &&
			    (widest < 0 || t[j].width > t[widest].width))
				widest = j;
		if (widest < 0)
			break;
		{
			size_t less = used - o->width, room = t[widest].width - t[widest].min;

			less = less < room ? less : room;
			t[widest].width -= less;
			used -= less;
		}
	}
	/* still too wide: the columns kept from the left while they fit */
	used = 0;
	for (int j = 0; j < n; j++) {
		if (!t[j].kept)
			continue;
		if (!dropped && used + (used ? 2 : 0) + t[j].width <= o->width) {
			used += (used ? 2 : 0) + t[j].width;
			two |= t[j].head[1][0] != '\0';
			units |= t[j].unit != NULL;
			for (int i = 0; i < rows; i++)
				cut(cell[(size_t)i * n + j], t[j].width);
		} else {
			t[j].kept = false;
			dropped++;
		}
	}
	for (int line = 0; line < 2 + units; line++) {
		size_t blanks = 0; /* owed before the next text: none at the end */
		bool first = true;

		if (line == 1 && !two)
			continue;
		for (int j = 0; j < n; j++) {
			const char *h = line < 2 ? t[j].head[line] :
					t[j].unit ? t[j].unit : "";
			size_t gap;

			if (!t[j].kept)
				continue;
			blanks += first ? 0 : 2;
			first = false;
			gap = t[j].width - out_width(h);
			if (t[j].kind == KIND_INT || t[j].kind == KIND_FLOAT)
				blanks += gap;
			if (*h) {
				pad(f, blanks);
				fputs(h, f);
				blanks = 0;
			}
			if (t[j].kind != KIND_INT && t[j].kind != KIND_FLOAT)
				blanks += gap;
		}
		fputc('\n', f);
	}
	for (int j = 0, first = 1; j < n; j++) {
		if (!t[j].kept)
			continue;
		fputs(first ? "" : "  ", f);
		first = 0;
		for (size_t i = 0; i < t[j].width; i++)
			fputc('-', f);
	}
	fputc('\n', f);
	for (int i = 0; i < rows; i++) {
		for (int j = 0, first = 1; j < n; j++) {
			const char *v = cell[(size_t)i * n + j];
			size_t gap = t[j].width - out_width(v);
			bool last = true, number = t[j].kind == KIND_INT ||
						  t[j].kind == KIND_FLOAT;

			if (!t[j].kept)
				continue;
			for (int k = j + 1; k < n; k++)
				last &= !t[k].kept;
			fputs(first ? "" : "  ", f);
			first = 0;
			if (number)
				pad(f, gap);
			fputs(v, f);
			if (!number && !last)
				pad(f, gap);
		}
		fputc('\n', f);
		for (int j = 0; details && j < n; j++) {
			_cleanup_free_ char *text = NULL;
			const char *v = cell[(size_t)i * n + j];

			if (!t[j].detail || !*v)
				continue;
			/* more than one: each says its name */
			if (details > 1 &&
			    asprintf(&text, "%s: %s", PQfname(res, t[j].col), v) < 0) {
				r = -ENOMEM;
				goto out;
			}
			out_wrapped(f, text ? text : v, o->width, DETAIL_INDENT,
				    DETAIL_INDENT);
		}
	}
	fprintf(f, "(%d row%s)\n", rows, rows == 1 ? "" : "s");
	if (dropped && rows && o->note) {
		int listed = 0;
		char *text = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&text, &len);

		/* after the table, where a terminal shows both */
		fflush(f);
		if (!m) {
			r = -ENOMEM;
			goto out;
		}
		fprintf(m, "%s: %d more column%s did not fit %u characters:",
			o->prog ? o->prog : "fleetbench", dropped,
			dropped == 1 ? "" : "s", o->width);
		for (int j = 0; j < n; j++) {
			if (t[j].kept || t[j].detail || t[j].empty)
				continue;
			if (listed++ < 8)
				fprintf(m, "%s %s", listed > 1 ? "," : "",
					PQfname(res, t[j].col));
		}
		fprintf(m, "%s (--wide prints every column)",
			listed > 8 ? ", ..." : "");
		if (fclose(m) != 0) {
			free(text);
			r = -ENOMEM;
			goto out;
		}
		out_wrapped(o->note, text, o->width, 0, 2);
		free(text);
	}
	r = ferror(f) ? -EIO : 0;
out:
	for (size_t i = 0; i < (size_t)rows * n; i++)
		free(cell[i]);
	return r;
}
