/* SPDX-License-Identifier: MIT */
/*
 * cli/out.c: a result built with libpq's own PGresult constructors
 * (no server needed) printed as table, CSV and JSON, and each output read
 * back: alignment, RFC 4180 quoting, JSON types by column type.
 */
#include <errno.h>
#include <json-c/json.h>
#include <libpq-fe.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "out.h"

/* int8, numeric, text, bool, jsonb, float8 */
static const Oid types[] = { 20, 1700, 25, 16, 3802, 701 };
static const char *const names[] = { "runs", "speedup", "instance_type",
				     "few", "diff", "share" };

/* rows of text values; NULL is SQL NULL */
static const char *const rows[][6] = {
	{ "12", "1.405", "cx22", "f", "{\"a\": [1, 2]}", "0.5" },
	{ "3", NULL, "m6i, \"large\"", "t", NULL, "NaN" },
	{ "-7", "10", "é日本", "f", "null", "1e-05" },
};

static PGresult *build(void)
{
	PGresAttDesc att[6];
	PGresult *res = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);

	memset(att, 0, sizeof(att));
	for (int c = 0; c < 6; c++) {
		att[c].name = (char *)names[c];
		att[c].typid = types[c];
		att[c].typlen = -1;
	}
	PQsetResultAttrs(res, 6, att);
	for (int r = 0; r < 3; r++)
		for (int c = 0; c < 6; c++)
			PQsetvalue(res, r, c, (char *)rows[r][c],
				   rows[r][c] ? (int)strlen(rows[r][c]) : -1);
	return res;
}

/* Prints res in fmt into a new string. */
static char *print(const PGresult *res, enum out_format fmt,
		   const char *const *hide, int *ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	*ret = out_print(f, res, fmt, hide);
	fclose(f);
	return buf;
}

static void test_formats_parse(void)
{
	enum out_format f;

	CHECK_OK(out_format_parse("table", &f));
	CHECK_EQ_INT(f, OUT_TABLE);
	CHECK_OK(out_format_parse("csv", &f));
	CHECK_EQ_INT(f, OUT_CSV);
	CHECK_OK(out_format_parse("json", &f));
	CHECK_EQ_INT(f, OUT_JSON);
	CHECK_EQ_INT(out_format_parse("xml", &f), -EINVAL);
	CHECK_EQ_INT(out_format_parse("", &f), -EINVAL);
}

static void test_table(const PGresult *res)
{
	int r;
	char *s = print(res, OUT_TABLE, NULL, &r);

	CHECK_OK(r);
	/* widths: runs 4, speedup 7, instance_type 13, few 3, diff 13,
	 * share 5, in characters (é日本 is 3); numbers right-aligned, the
	 * last column without trailing blanks */
	CHECK_EQ_STR(s,
		     "runs  speedup  instance_type  few  diff           share\n"
		     "----  -------  -------------  ---  -------------  -----\n"
		     "  12    1.405  cx22           f    {\"a\": [1, 2]}    0.5\n"
		     "   3           m6i, \"large\"   t                     NaN\n"
		     "  -7       10  é日本            f    null           1e-05\n"
		     "(3 rows)\n");
	free(s);
}

static void test_csv(const PGresult *res)
{
	int r;
	char *s = print(res, OUT_CSV, NULL, &r);

	CHECK_OK(r);
	CHECK_EQ_STR(s, "runs,speedup,instance_type,few,diff,share\n"
			"12,1.405,cx22,f,\"{\"\"a\"\": [1, 2]}\",0.5\n"
			"3,,\"m6i, \"\"large\"\"\",t,,NaN\n"
			"-7,10,é日本,f,null,1e-05\n");
	free(s);
}

static void test_json(const PGresult *res)
{
	int r;
	char *s = print(res, OUT_JSON, NULL, &r);
	struct json_object *all = s ? json_tokener_parse(s) : NULL;
	struct json_object *row, *v;

	CHECK_OK(r);
	CHECK(all && json_object_is_type(all, json_type_array));
	if (!all || json_object_array_length(all) != 3) {
		CHECK(!"three rows");
		free(s);
		return;
	}
	row = json_object_array_get_idx(all, 0);
	/* members in column order */
	CHECK_EQ_STR(json_object_to_json_string_ext(row, JSON_C_TO_STRING_PLAIN),
		     "{\"runs\":12,\"speedup\":1.405,\"instance_type\":\"cx22\",\"few\":false,\"diff\":{\"a\":[1,2]},\"share\":0.5}");
	CHECK(json_object_object_get_ex(row, "runs", &v) &&
	      json_object_is_type(v, json_type_int));
	CHECK(json_object_object_get_ex(row, "speedup", &v) &&
	      json_object_is_type(v, json_type_double));
	row = json_object_array_get_idx(all, 1);
	CHECK(json_object_object_get_ex(row, "speedup", &v) && !v);
	CHECK(json_object_object_get_ex(row, "few", &v) &&
	      json_object_get_boolean(v));
	CHECK(json_object_object_get_ex(row, "diff", &v) && !v);
	CHECK(json_object_object_get_ex(row, "share", &v) && !v); /* NaN */
	CHECK(json_object_object_get_ex(row, "instance_type", &v) &&
	      !strcmp(json_object_get_string(v), "m6i, \"large\""));
	row = json_object_array_get_idx(all, 2);
	CHECK(json_object_object_get_ex(row, "runs", &v) &&
	      json_object_get_int64(v) == -7);
	CHECK(json_object_object_get_ex(row, "diff", &v) && !v); /* null */
	CHECK(json_object_object_get_ex(row, "share", &v) &&
	      json_object_get_double(v) == 1e-05);
	/* the server's digits are kept */
	CHECK(strstr(s, "\"share\": 1e-05") != NULL);
	json_object_put(all);
	free(s);
}

static void test_empty_and_bad_json(void)
{
	PGresAttDesc att = { .name = "diff", .typid = 3802, .typlen = -1 };
	PGresult *res = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
	struct json_object *all;
	char *s;
	int r;

	PQsetResultAttrs(res, 1, &att);
	s = print(res, OUT_JSON, NULL, &r);
	CHECK_OK(r);
	all = s ? json_tokener_parse(s) : NULL;
	CHECK(all && json_object_is_type(all, json_type_array) &&
	      json_object_array_length(all) == 0);
	json_object_put(all);
	free(s);
	s = print(res, OUT_TABLE, NULL, &r);
	CHECK_EQ_STR(s, "diff\n----\n(0 rows)\n");
	free(s);
	PQsetvalue(res, 0, 0, "{not json", 9);
	s = print(res, OUT_JSON, NULL, &r);
	CHECK_EQ_INT(r, -EINVAL);
	free(s);
	PQclear(res);
}

/*
 * A stored label that would act on a terminal (issue 38): a table writes
 * its control characters as escapes, so a clear-screen stays text and a
 * newline forges no row; CSV keeps the bytes, quoted.
 */
static void test_control_characters(void)
{
	PGresAttDesc att[2] = {
		{ .name = "provider", .typid = 25, .typlen = -1 },
		{ .name = "instance_type", .typid = 25, .typlen = -1 },
	};
	PGresult *res = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
	static const char provider[] = "\x1b[2J\x1b[31mevil";
	static const char type[] = "m5.large\naws  fake  1\xc2\x85";
	char *s;
	int r;

	PQsetResultAttrs(res, 2, att);
	PQsetvalue(res, 0, 0, (char *)provider, (int)strlen(provider));
	PQsetvalue(res, 0, 1, (char *)type, (int)strlen(type));
	s = print(res, OUT_TABLE, NULL, &r);
	CHECK_OK(r);
	CHECK_EQ_STR(s, "provider             instance_type\n"
			"-------------------  ----------------------------\n"
			"\\x1b[2J\\x1b[31mevil  m5.large\\naws  fake  1\\u0085\n"
			"(1 row)\n");
	free(s);
	s = print(res, OUT_CSV, NULL, &r);
	CHECK_OK(r);
	CHECK(s && strstr(s, provider) && strstr(s, "\"m5.large\naws"));
	free(s);
	PQclear(res);
}

/* An estimate and its interval print as one table column; hidden columns
 * are left out of every format. */
static void test_interval_and_hide(void)
{
	static const char *const n[] = { "provider", "gain", "gain_lo",
					 "gain_hi", "lo" };
	static const char *const v[][5] = {
		{ "aws", "3.015", "2.9", "3.1", "x" },
		{ "gcp", "1.1", NULL, NULL, "y" },
		{ "ovh", NULL, NULL, NULL, "z" },
	};
	static const char *const hide[] = { "provider", NULL };
	PGresAttDesc att[5];
	PGresult *res = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
	char *s;
	int r;

	memset(att, 0, sizeof(att));
	for (int c = 0; c < 5; c++) {
		att[c].name = (char *)n[c];
		att[c].typid = c ? 1700 : 25;
		att[c].typlen = -1;
	}
	att[4].typid = 25;
	PQsetResultAttrs(res, 5, att);
	for (int i = 0; i < 3; i++)
		for (int c = 0; c < 5; c++)
			PQsetvalue(res, i, c, (char *)v[i][c],
				   v[i][c] ? (int)strlen(v[i][c]) : -1);
	s = print(res, OUT_TABLE, NULL, &r);
	CHECK_OK(r);
	CHECK_EQ_STR(s, "provider  gain              lo\n"
			"--------  ----------------  --\n"
			"aws       3.015 [2.9, 3.1]  x\n"
			"gcp                    1.1  y\n"
			"ovh                         z\n"
			"(3 rows)\n");
	free(s);
	s = print(res, OUT_TABLE, hide, &r);
	CHECK_EQ_STR(s, "gain              lo\n"
			"----------------  --\n"
			"3.015 [2.9, 3.1]  x\n"
			"             1.1  y\n"
			"                  z\n"
			"(3 rows)\n");
	free(s);
	s = print(res, OUT_CSV, hide, &r);
	CHECK_EQ_STR(s, "gain,gain_lo,gain_hi,lo\n3.015,2.9,3.1,x\n1.1,,,y\n,,,z\n");
	free(s);
	s = print(res, OUT_JSON, hide, &r);
	CHECK(s && !strstr(s, "provider") && strstr(s, "\"gain_lo\": 2.9"));
	free(s);
	PQclear(res);
}

/* The narrow table: a result of every kind of column. */
static PGresult *build_narrow(void)
{
	static const char *const n[] = { "kernel", "thp_speedup", "thp_speedup_lo",
					 "thp_speedup_hi", "iouring_iops", "few_runs",
					 "old_kernels", "empty", "first_run", "summary" };
	static const Oid ty[] = { 25, 1700, 1700, 1700, 701, 16, 3802, 25, 1184, 25 };
	static const char *const v[][10] = {
		{ "6.5.0-0.deb12.4-cloud-amd64", "1.384", "1.356", "1.413",
		  "63363.476", "f", "[\"6.1.0-18\", \"6.1.0-21\"]", NULL,
		  "2025-03-03 01:00:00.123+00",
		  "io_uring/pread gain decreased by a median 64% on 3 hosts" },
		{ "6.1", "0.0691", "0.069", "0.0692", "0.5", "t", "[]", NULL,
		  "2025-03-17 01:40:59+00", NULL },
	};
	PGresAttDesc att[10];
	PGresult *res = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);

	memset(att, 0, sizeof(att));
	for (int c = 0; c < 10; c++) {
		att[c].name = (char *)n[c];
		att[c].typid = ty[c];
		att[c].typlen = -1;
	}
	PQsetResultAttrs(res, 10, att);
	for (int i = 0; i < 2; i++)
		for (int c = 0; c < 10; c++)
			PQsetvalue(res, i, c, (char *)v[i][c],
				   v[i][c] ? (int)strlen(v[i][c]) : -1);
	return res;
}

static char *print_narrow(const PGresult *res, unsigned width, char **note)
{
	char *buf = NULL, *nbuf = NULL;
	size_t len = 0, nlen = 0;
	FILE *f = open_memstream(&buf, &len), *nf = open_memstream(&nbuf, &nlen);
	struct out_narrow o = { .width = width, .detail = "summary",
				.note = nf, .prog = "t" };

	CHECK_OK(out_print_narrow(f, res, NULL, &o));
	fclose(f);
	fclose(nf);
	*note = nbuf;
	return buf;
}

/* Three significant digits, the interval as a share, yes/no, times to
 * the minute with the zone said once, a JSON array as its strings, long
 * text cut, an empty column left out, units under the figures' names, the
 * detail under its row; and what does not fit named on the note. */
static void test_narrow(void)
{
	PGresult *res = build_narrow();
	char *note, *s = print_narrow(res, 100, &note);

	CHECK_EQ_STR(s,
		"kernel                        thp_speedup  iouring_  few_  old_kernels         first_run\n"
		"                                               iops  runs\n"
		"                                        x      IO/s                            UTC\n"
		"---------------------------  ------------  --------  ----  ------------------  ----------------\n"
		"6.5.0-0.deb12.4-cloud-amd64      1.38 \xc2\xb1" "2%     63363  no    6.1.0-18, 6.1.0-21  2025-03-03 01:00\n"
		"    io_uring/pread gain decreased by a median 64% on 3 hosts\n"
		"6.1                          0.0691 \xc2\xb1" "0.1%     0.500  yes                       2025-03-17 01:40\n"
		"(2 rows)\n");
	CHECK_EQ_STR(note, "");
	free(s);
	free(note);
	/* 5 characters too wide: the long text cut by 5, nothing left out */
	s = print_narrow(res, 90, &note);
	CHECK(s && strstr(s, "\n6.5.0-0.deb12.4-cloud\xe2\x80\xa6      1.38"));
	CHECK_EQ_STR(note, "");
	free(s);
	free(note);
	s = print_narrow(res, 60, &note);
	CHECK(s && !strstr(s, "old_kernels") && strstr(s, "few_"));
	for (char *line = s; line && *line; line = strchr(line, '\n') + 1) {
		size_t w = 0;

		for (char *p = line; *p && *p != '\n'; p++)
			w += ((unsigned char)*p & 0xc0) != 0x80;
		CHECK_(w <= 60, "a line of %zu characters", w);
	}
	CHECK_EQ_STR(note, "t: 2 more columns did not fit 60 characters: old_kernels,\n"
			  "  first_run (--wide prints every column)\n");
	free(s);
	free(note);
	PQclear(res);
}

int main(void)
{
	PGresult *res = build();

	test_narrow();

	test_formats_parse();
	test_table(res);
	test_csv(res);
	test_json(res);
	test_empty_and_bad_json();
	test_control_characters();
	test_interval_and_hide();
	PQclear(res);
	return check_summary();
}
