/* SPDX-License-Identifier: MIT */
/* Statement parameters in PostgreSQL's binary send format. */
#include "pgparam.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"

/* a value PostgreSQL accepts at all (MaxAllocSize) */
#define VALUE_MAX ((size_t)0x3fffffff)
/* an array's header: ndim, flags, element type, then length and lower
 * bound of its one dimension (the empty array has no dimension) */
#define ARRAY_HEADER 20u
#define ARRAY_HEADER_EMPTY 12u
#define NULL_OFF SIZE_MAX

static void fail(struct pgparam *p, int err)
{
	if (!p->err)
		p->err = err;
}

void pgparam_init(struct pgparam *p)
{
	*p = (struct pgparam){ 0 };
}

void pgparam_release(struct pgparam *p)
{
	if (!p)
		return;
	free(p->values);
	free(p->lengths);
	free(p->formats);
	free(p->types);
	free(p->offs);
	free(p->buf);
	pgparam_init(p);
}

void pgparam_reset(struct pgparam *p)
{
	p->n = 0;
	p->len = 0;
	p->err = 0;
	p->in_array = false;
	p->in_record = false;
}

static bool reserve(struct pgparam *p, size_t more)
{
	if (p->err)
		return false;
	if (more > VALUE_MAX * 4 - p->len) {
		fail(p, -E2BIG);
		return false;
	}
	if (p->len + more <= p->cap)
		return true;
	/* 1 KiB at first, then doubling */
	if (ARRAY_RESERVE(p->buf, p->cap,
			  p->len + more < 1024 ? 1024 : p->len + more) < 0) {
		fail(p, -ENOMEM);
		return false;
	}
	return true;
}

static void put(struct pgparam *p, const void *bytes, size_t len)
{
	if (!reserve(p, len))
		return;
	memcpy(p->buf + p->len, bytes, len);
	p->len += len;
}

static void put_be32(struct pgparam *p, uint32_t v)
{
	v = htobe32(v);
	put(p, &v, sizeof(v));
}

static void patch_be32(struct pgparam *p, size_t off, uint32_t v)
{
	v = htobe32(v);
	memcpy(p->buf + off, &v, sizeof(v));
}

/* The parameters all five arrays have room for (after a failed reserve,
 * their capacities may differ). */
static size_t room(const struct pgparam *p)
{
	size_t caps[] = { p->cap_lengths, p->cap_formats, p->cap_types,
			  p->cap_offs };
	size_t r = p->cap_values;

	for (size_t i = 0; i < sizeof(caps) / sizeof(*caps); i++)
		if (caps[i] < r)
			r = caps[i];
	return r;
}

/* Makes room for one more parameter of type oid starting here. */
static bool param_add(struct pgparam *p, unsigned oid)
{
	if (p->err)
		return false;
	if (p->n == p->max) {
		/* 64 at first, then doubling: one reserve per array */
		size_t need = p->max ? (size_t)p->max + 1 : 64;

		if (ARRAY_RESERVE(p->values, p->cap_values, need) < 0 ||
		    ARRAY_RESERVE(p->lengths, p->cap_lengths, need) < 0 ||
		    ARRAY_RESERVE(p->formats, p->cap_formats, need) < 0 ||
		    ARRAY_RESERVE(p->types, p->cap_types, need) < 0 ||
		    ARRAY_RESERVE(p->offs, p->cap_offs, need) < 0) {
			fail(p, -ENOMEM);
			return false;
		}
		p->max = (int)room(p);
	}
	p->offs[p->n] = p->len;
	p->types[p->n] = oid;
	p->formats[p->n] = 1;
	p->lengths[p->n] = 0;
	p->n++;
	return true;
}

/* One value of type oid: bytes, or NULL when bytes is NULL. */
static void value(struct pgparam *p, unsigned oid, const void *bytes,
		  size_t len)
{
	if (p->err)
		return;
	if (len > VALUE_MAX) {
		fail(p, -E2BIG);
		return;
	}
	if (p->in_array) {
		if (oid != p->array_oid) {
			fail(p, -EINVAL);
			return;
		}
		p->array_n++;
		if (!bytes) {
			p->array_nulls = true;
			put_be32(p, UINT32_MAX); /* -1 */
			return;
		}
		put_be32(p, (uint32_t)len);
		put(p, bytes, len);
		return;
	}
	if (p->in_record) {
		/* an attribute: its type, then as an array element */
		p->record_n++;
		put_be32(p, oid);
		put_be32(p, bytes ? (uint32_t)len : UINT32_MAX);
		if (bytes)
			put(p, bytes, len);
		return;
	}
	if (!param_add(p, oid))
		return;
	if (!bytes) {
		p->offs[p->n - 1] = NULL_OFF;
		return;
	}
	p->lengths[p->n - 1] = (int)len;
	put(p, bytes, len);
}

void pgparam_null(struct pgparam *p, unsigned oid)
{
	value(p, oid, NULL, 0);
}

void pgparam_bool(struct pgparam *p, bool v)
{
	uint8_t b = v;

	value(p, PGPARAM_BOOL, &b, 1);
}

void pgparam_int4(struct pgparam *p, int32_t v)
{
	uint32_t b = htobe32((uint32_t)v);

	value(p, PGPARAM_INT4, &b, sizeof(b));
}

void pgparam_int8(struct pgparam *p, int64_t v)
{
	uint64_t b = htobe64((uint64_t)v);

	value(p, PGPARAM_INT8, &b, sizeof(b));
}

void pgparam_float8(struct pgparam *p, double v)
{
	uint64_t b;

	memcpy(&b, &v, sizeof(b));
	b = htobe64(b);
	value(p, PGPARAM_FLOAT8, &b, sizeof(b));
}

void pgparam_text(struct pgparam *p, const char *s)
{
	value(p, PGPARAM_TEXT, s, s ? strlen(s) : 0);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

void pgparam_uuid(struct pgparam *p, const char *s)
{
	uint8_t b[16];
	size_t k = 0;

	for (size_t i = 0; i < 36; i++) {
		int hi, lo;

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				goto bad;
			continue;
		}
		hi = hexval(s[i]);
		lo = hi < 0 ? -1 : hexval(s[i + 1]);
		if (lo < 0)
			goto bad;
		b[k++] = (uint8_t)(hi << 4 | lo);
		i++;
	}
	if (s[36])
		goto bad;
	value(p, PGPARAM_UUID, b, sizeof(b));
	return;
bad:
	fail(p, -EINVAL);
}

static unsigned array_type(unsigned oid)
{
	switch (oid) {
	case PGPARAM_BOOL:
		return PGPARAM_BOOL_ARRAY;
	case PGPARAM_INT4:
		return PGPARAM_INT4_ARRAY;
	case PGPARAM_INT8:
		return PGPARAM_INT8_ARRAY;
	case PGPARAM_TEXT:
		return PGPARAM_TEXT_ARRAY;
	case PGPARAM_FLOAT8:
		return PGPARAM_FLOAT8_ARRAY;
	case PGPARAM_UUID:
		return PGPARAM_UUID_ARRAY;
	default:
		return 0;
	}
}

void pgparam_array_begin(struct pgparam *p, unsigned oid)
{
	unsigned type = array_type(oid);

	if (p->err)
		return;
	if (p->in_array || !type) {
		fail(p, -EINVAL);
		return;
	}
	if (p->in_record) {
		/* an attribute: its type and length (patched at the end) */
		p->record_n++;
		put_be32(p, type);
		p->array_len_at = p->len;
		put_be32(p, 0);
	} else if (!param_add(p, type)) {
		return;
	}
	if (!reserve(p, ARRAY_HEADER))
		return;
	p->in_array = true;
	p->array_oid = oid;
	p->array_start = p->len;
	p->array_n = 0;
	p->array_nulls = false;
	p->len += ARRAY_HEADER; /* filled in by pgparam_array_end() */
}

void pgparam_array_end(struct pgparam *p)
{
	size_t h = p->array_start;

	if (p->err)
		return;
	if (!p->in_array) {
		fail(p, -EINVAL);
		return;
	}
	p->in_array = false;
	if (p->array_n == 0) {
		/* '{}': no dimension */
		p->len = h + ARRAY_HEADER_EMPTY;
		patch_be32(p, h, 0);
		patch_be32(p, h + 4, 0);
		patch_be32(p, h + 8, p->array_oid);
	} else {
		patch_be32(p, h, 1);
		patch_be32(p, h + 4, p->array_nulls);
		patch_be32(p, h + 8, p->array_oid);
		patch_be32(p, h + 12, (uint32_t)p->array_n);
		patch_be32(p, h + 16, 1);
	}
	if (p->len - h > VALUE_MAX) {
		fail(p, -E2BIG);
		return;
	}
	if (p->in_record)
		patch_be32(p, p->array_len_at, (uint32_t)(p->len - h));
	else
		p->lengths[p->n - 1] = (int)(p->len - h);
}

void pgparam_record_begin(struct pgparam *p)
{
	if (p->err)
		return;
	if (p->in_array || p->in_record) {
		fail(p, -EINVAL);
		return;
	}
	/* type 0: the statement's cast names the composite type */
	if (!param_add(p, 0) || !reserve(p, 4))
		return;
	p->in_record = true;
	p->record_start = p->len;
	p->record_n = 0;
	p->len += 4; /* the attribute count, by pgparam_record_end() */
}

void pgparam_record_end(struct pgparam *p)
{
	if (p->err)
		return;
	if (!p->in_record || p->in_array) {
		fail(p, -EINVAL);
		return;
	}
	p->in_record = false;
	patch_be32(p, p->record_start, (uint32_t)p->record_n);
	if (p->len - p->record_start > VALUE_MAX) {
		fail(p, -E2BIG);
		return;
	}
	p->lengths[p->n - 1] = (int)(p->len - p->record_start);
}

int pgparam_finish(struct pgparam *p)
{
	if (p->in_array || p->in_record)
		fail(p, -EINVAL);
	if (p->err)
		return p->err;
	for (int i = 0; i < p->n; i++)
		p->values[i] = p->offs[i] == NULL_OFF ? NULL : p->buf + p->offs[i];
	return 0;
}
