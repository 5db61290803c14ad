/* SPDX-License-Identifier: MIT */
/*
 * The binary parameter encoder: the exact bytes of each type's send
 * format, arrays (empty, with NULL elements), and its errors. That
 * PostgreSQL reads these bytes back as the values they stand for is
 * tests/integration/test_pgparam_rt.sh's part.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "pgparam.h"

/* Parameter i of p is NULL. */
static void check_null(const struct pgparam *p, int i, unsigned type)
{
	CHECK(i < p->n);
	if (i >= p->n)
		return;
	CHECK(p->values[i] == NULL);
	CHECK_EQ_INT(p->types[i], type);
	CHECK_EQ_INT(p->formats[i], 1);
}

/* Parameter i of p is binary, of this type, these bytes. */
#define CHECK_PARAM(p, i, type, ...)                                        \
	do {                                                                \
		const uint8_t want_[] = { __VA_ARGS__ };                    \
		check_param((p), (i), (type), want_, sizeof(want_), __LINE__); \
	} while (0)

static void check_param(const struct pgparam *p, int i, unsigned type,
			const uint8_t *want, size_t len, int line)
{
	CHECK_(i < p->n, "line %d: parameter %d of %d", line, i, p->n);
	if (i >= p->n)
		return;
	CHECK_(p->types[i] == type, "line %d: parameter %d type %u, expected %u",
	       line, i, p->types[i], type);
	CHECK_(p->formats[i] == 1, "line %d: parameter %d format %d", line, i,
	       p->formats[i]);
	CHECK_(p->values[i] != NULL, "line %d: parameter %d is NULL", line, i);
	CHECK_(p->lengths[i] == (int)len,
	       "line %d: parameter %d is %d bytes, expected %zu", line, i,
	       p->lengths[i], len);
	if (p->values[i] && p->lengths[i] == (int)len) {
		bool same = !memcmp(p->values[i], want, len);

		CHECK_(same, "line %d: parameter %d bytes differ", line, i);
		if (!same)
			for (size_t k = 0; k < len; k++)
				fprintf(stderr, "%02x%s",
					(uint8_t)p->values[i][k],
					k + 1 < len ? " " : "\n");
	}
}

static void scalars(void)
{
	struct pgparam p;

	pgparam_init(&p);
	pgparam_bool(&p, true);
	pgparam_bool(&p, false);
	pgparam_int4(&p, 1);
	pgparam_int4(&p, -2);
	pgparam_int8(&p, 0x0102030405060708);
	pgparam_int8(&p, -1);
	pgparam_float8(&p, 1.5);
	pgparam_float8(&p, -0.0);
	pgparam_text(&p, "h\xc3\xa9\t\"'\\");
	pgparam_text(&p, "");
	pgparam_uuid(&p, "0123abcd-ef01-4567-89ab-CDEF01234567");
	pgparam_text(&p, NULL);
	pgparam_null(&p, PGPARAM_INT8);
	CHECK_EQ_INT(pgparam_finish(&p), 0);
	CHECK_EQ_INT(p.n, 13);
	CHECK_PARAM(&p, 0, PGPARAM_BOOL, 1);
	CHECK_PARAM(&p, 1, PGPARAM_BOOL, 0);
	CHECK_PARAM(&p, 2, PGPARAM_INT4, 0, 0, 0, 1);
	CHECK_PARAM(&p, 3, PGPARAM_INT4, 0xff, 0xff, 0xff, 0xfe);
	CHECK_PARAM(&p, 4, PGPARAM_INT8, 1, 2, 3, 4, 5, 6, 7, 8);
	CHECK_PARAM(&p, 5, PGPARAM_INT8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		    0xff, 0xff);
	/* IEEE 754 binary64, big-endian: 1.5 is 0x3ff8000000000000 */
	CHECK_PARAM(&p, 6, PGPARAM_FLOAT8, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0);
	CHECK_PARAM(&p, 7, PGPARAM_FLOAT8, 0x80, 0, 0, 0, 0, 0, 0, 0);
	/* text: its bytes as they are, no terminator, no quoting */
	CHECK_PARAM(&p, 8, PGPARAM_TEXT, 'h', 0xc3, 0xa9, '\t', '"', '\'',
		    '\\');
	check_param(&p, 9, PGPARAM_TEXT, (const uint8_t *)"", 0, __LINE__);
	CHECK_PARAM(&p, 10, PGPARAM_UUID, 0x01, 0x23, 0xab, 0xcd, 0xef, 0x01,
		    0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45,
		    0x67);
	check_null(&p, 11, PGPARAM_TEXT);
	check_null(&p, 12, PGPARAM_INT8);
	CHECK_EQ_INT(pgparam_bytes(&p), 1 + 1 + 4 + 4 + 8 + 8 + 8 + 8 + 7 + 16);
	pgparam_release(&p);
}

static void arrays(void)
{
	struct pgparam p;

	pgparam_init(&p);
	/* '{}': ndim 0, no null, element type, no dimension */
	pgparam_array_begin(&p, PGPARAM_FLOAT8);
	pgparam_array_end(&p);
	/* {7,NULL,-1} of int8 */
	pgparam_array_begin(&p, PGPARAM_INT8);
	pgparam_int8(&p, 7);
	pgparam_null(&p, PGPARAM_INT8);
	pgparam_int8(&p, -1);
	pgparam_array_end(&p);
	/* {"a",""} of text: no null flag */
	pgparam_array_begin(&p, PGPARAM_TEXT);
	pgparam_text(&p, "a");
	pgparam_text(&p, "");
	pgparam_array_end(&p);
	/* {NULL} of bool */
	pgparam_array_begin(&p, PGPARAM_BOOL);
	pgparam_null(&p, PGPARAM_BOOL);
	pgparam_array_end(&p);
	pgparam_array_begin(&p, PGPARAM_INT4);
	pgparam_int4(&p, 258);
	pgparam_array_end(&p);
	pgparam_array_begin(&p, PGPARAM_FLOAT8);
	pgparam_float8(&p, 2.0);
	pgparam_array_end(&p);
	pgparam_array_begin(&p, PGPARAM_UUID);
	pgparam_uuid(&p, "00000000-0000-0000-0000-0000000000ff");
	pgparam_array_end(&p);
	pgparam_int4(&p, 5); /* a scalar after the arrays */
	CHECK_EQ_INT(pgparam_finish(&p), 0);
	CHECK_EQ_INT(p.n, 8);
	CHECK_PARAM(&p, 0, PGPARAM_FLOAT8_ARRAY, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		    0x02, 0xbd);
	CHECK_PARAM(&p, 1, PGPARAM_INT8_ARRAY,
		    0, 0, 0, 1, /* ndim */
		    0, 0, 0, 1, /* has nulls */
		    0, 0, 0, 20, /* int8 */
		    0, 0, 0, 3, /* length */
		    0, 0, 0, 1, /* lower bound */
		    0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 7,
		    0xff, 0xff, 0xff, 0xff, /* NULL */
		    0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
	CHECK_PARAM(&p, 2, PGPARAM_TEXT_ARRAY, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
		    25, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1, 'a', 0, 0, 0, 0);
	CHECK_PARAM(&p, 3, PGPARAM_BOOL_ARRAY, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,
		    16, 0, 0, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff);
	CHECK_PARAM(&p, 4, PGPARAM_INT4_ARRAY, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
		    23, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 1, 2);
	CHECK_PARAM(&p, 5, PGPARAM_FLOAT8_ARRAY, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0,
		    0x02, 0xbd, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 8, 0x40, 0, 0,
		    0, 0, 0, 0, 0);
	CHECK_PARAM(&p, 6, PGPARAM_UUID_ARRAY, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0,
		    0x0b, 0x86, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 16, 0, 0, 0, 0,
		    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff);
	CHECK_PARAM(&p, 7, PGPARAM_INT4, 0, 0, 0, 5);

	/* reset keeps nothing of what was written */
	pgparam_reset(&p);
	pgparam_array_begin(&p, PGPARAM_TEXT);
	pgparam_array_end(&p);
	CHECK_EQ_INT(pgparam_finish(&p), 0);
	CHECK_EQ_INT(p.n, 1);
	CHECK_PARAM(&p, 0, PGPARAM_TEXT_ARRAY, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		    25);
	CHECK_EQ_INT(pgparam_bytes(&p), 12);
	pgparam_release(&p);
	pgparam_release(NULL);
}

/* Many parameters and a large array: the buffer and tables grow. */
static void growth(void)
{
	struct pgparam p;
	bool ok = true;

	pgparam_init(&p);
	for (int i = 0; i < 200; i++)
		pgparam_int4(&p, i);
	pgparam_array_begin(&p, PGPARAM_FLOAT8);
	for (int i = 0; i < 100000; i++)
		pgparam_float8(&p, i);
	pgparam_array_end(&p);
	CHECK_EQ_INT(pgparam_finish(&p), 0);
	CHECK_EQ_INT(p.n, 201);
	for (int i = 0; i < 200 && ok; i++)
		ok = p.lengths[i] == 4 &&
		     (uint8_t)p.values[i][3] == (uint8_t)i &&
		     p.values[i] == p.values[0] + 4 * i;
	CHECK(ok);
	CHECK_EQ_INT(p.lengths[200], 20 + 100000 * 12);
	CHECK_EQ_INT(pgparam_bytes(&p), 200 * 4 + 20 + 100000 * 12);
	pgparam_release(&p);
}

static int error_of(void (*write)(struct pgparam *))
{
	struct pgparam p;
	int r;

	pgparam_init(&p);
	write(&p);
	r = pgparam_finish(&p);
	pgparam_release(&p);
	return r;
}

static void bad_uuid(struct pgparam *p)
{
	pgparam_uuid(p, "0123abcd-ef01-4567-89ab-cdef0123456"); /* short */
	pgparam_int4(p, 1); /* ignored after the error */
}

static void bad_uuid_dash(struct pgparam *p)
{
	pgparam_uuid(p, "0123abcd0ef01-4567-89ab-cdef01234567");
}

static void bad_uuid_long(struct pgparam *p)
{
	pgparam_uuid(p, "0123abcd-ef01-4567-89ab-cdef012345678");
}

static void bad_uuid_digit(struct pgparam *p)
{
	pgparam_uuid(p, "0123abcd-ef01-4567-89ab-cdef0123456g");
}

static void wrong_element(struct pgparam *p)
{
	pgparam_array_begin(p, PGPARAM_INT8);
	pgparam_int4(p, 1);
	pgparam_array_end(p);
}

static void unended(struct pgparam *p)
{
	pgparam_array_begin(p, PGPARAM_INT8);
}

static void nested(struct pgparam *p)
{
	pgparam_array_begin(p, PGPARAM_INT8);
	pgparam_array_begin(p, PGPARAM_INT8);
}

static void ended_twice(struct pgparam *p)
{
	pgparam_array_begin(p, PGPARAM_INT8);
	pgparam_array_end(p);
	pgparam_array_end(p);
}

static void no_array_type(struct pgparam *p)
{
	pgparam_array_begin(p, 1234);
}

static void errors(void)
{
	CHECK_EQ_INT(error_of(bad_uuid), -EINVAL);
	CHECK_EQ_INT(error_of(bad_uuid_dash), -EINVAL);
	CHECK_EQ_INT(error_of(bad_uuid_long), -EINVAL);
	CHECK_EQ_INT(error_of(bad_uuid_digit), -EINVAL);
	CHECK_EQ_INT(error_of(wrong_element), -EINVAL);
	CHECK_EQ_INT(error_of(unended), -EINVAL);
	CHECK_EQ_INT(error_of(nested), -EINVAL);
	CHECK_EQ_INT(error_of(ended_twice), -EINVAL);
	CHECK_EQ_INT(error_of(no_array_type), -EINVAL);
}

int main(void)
{
	scalars();
	arrays();
	growth();
	errors();
	return check_summary();
}
