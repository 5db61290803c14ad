/* SPDX-License-Identifier: MIT */
/*
 * The parameters of one statement in PostgreSQL's binary send format
 * (what each type's send function writes and its recv function reads):
 * scalars and one-dimensional arrays of bool, int4, int8, float8, text and
 * uuid, with NULLs, and records (a composite type's value) of those. All
 * parameters live in one growable buffer, so that one report is one
 * allocation that grows a few times, and its size is the bytes the
 * statement will carry.
 *
 * Errors are sticky (like stdio's ferror): a writer that runs out of
 * memory, or is used out of order, sets the error once and ignores every
 * later call; pgparam_finish() returns it. So a caller writes all of a
 * statement's parameters and checks once.
 *
 *	struct pgparam p;
 *
 *	pgparam_init(&p);
 *	pgparam_int8(&p, 42);
 *	pgparam_array_begin(&p, PGPARAM_FLOAT8);
 *	pgparam_float8(&p, 1.5);
 *	pgparam_null(&p, PGPARAM_FLOAT8);
 *	pgparam_array_end(&p);
 *	if (pgparam_finish(&p) == 0)
 *		PQsendQueryPrepared(conn, name, p.n, p.values, p.lengths,
 *				    p.formats, 0);
 *	pgparam_release(&p);
 */
#ifndef FLEETBENCH_PGPARAM_H
#define FLEETBENCH_PGPARAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* the element and scalar types (pg_type OIDs) */
#define PGPARAM_BOOL 16u
#define PGPARAM_INT8 20u
#define PGPARAM_INT4 23u
#define PGPARAM_TEXT 25u
#define PGPARAM_FLOAT8 701u
#define PGPARAM_UUID 2950u

/* their array types, for the statement's parameter types */
#define PGPARAM_BOOL_ARRAY 1000u
#define PGPARAM_INT4_ARRAY 1007u
#define PGPARAM_TEXT_ARRAY 1009u
#define PGPARAM_INT8_ARRAY 1016u
#define PGPARAM_FLOAT8_ARRAY 1022u
#define PGPARAM_UUID_ARRAY 2951u

struct pgparam {
	/* Set by pgparam_finish(), for PQsendQueryPrepared(): n parameters,
	 * each's bytes (NULL for SQL NULL), length, format (1, binary) and
	 * type (an OID above: the statement's paramTypes). */
	int n;
	const char **values;
	int *lengths;
	int *formats;
	unsigned *types;

	/* private */
	char *buf;
	size_t len, cap;
	size_t *offs; /* each parameter's start in buf */
	/* each array's capacity (ARRAY_RESERVE), and the room all five
	 * have */
	size_t cap_values, cap_lengths, cap_formats, cap_types, cap_offs;
	int max;
	int err;
	bool in_array;
	unsigned array_oid; /* the element type of the open array */
	size_t array_start; /* its header's offset in buf */
	int32_t array_n;
	bool array_nulls;
	bool in_record;
	size_t record_start; /* its attribute count's offset in buf */
	int32_t record_n;
	size_t array_len_at; /* in a record: the open array's length word */
};

/* An empty parameter list. */
void pgparam_init(struct pgparam *p);

/* Frees its memory; p is empty again. NULL is fine. */
void pgparam_release(struct pgparam *p);

/* Empties it, keeping its memory for the next statement. */
void pgparam_reset(struct pgparam *p);

/*
 * Each writer adds one parameter, or, between pgparam_array_begin() and
 * pgparam_array_end(), one element of the open array (which must be of
 * that element type, else the error is -EINVAL), or, between
 * pgparam_record_begin() and pgparam_record_end(), one attribute of the
 * open record.
 */
void pgparam_null(struct pgparam *p, unsigned oid);
void pgparam_bool(struct pgparam *p, bool v);
void pgparam_int4(struct pgparam *p, int32_t v);
void pgparam_int8(struct pgparam *p, int64_t v);
void pgparam_float8(struct pgparam *p, double v);
/* s NULL: NULL; else its bytes up to the NUL, unchanged */
void pgparam_text(struct pgparam *p, const char *s);
/* s: a UUID in text form (8-4-4-4-12 hex digits, either case), else the
 * error is -EINVAL */
void pgparam_uuid(struct pgparam *p, const char *s);

/*
 * A one-dimensional array of elements of type oid (PGPARAM_INT8, ...),
 * lower bound 1; no elements make the empty array '{}'. Arrays do not
 * nest.
 */
void pgparam_array_begin(struct pgparam *p, unsigned oid);
void pgparam_array_end(struct pgparam *p);

/*
 * A record: one parameter whose attributes are the values written until
 * pgparam_record_end(), in the order of the composite type's attributes,
 * each a scalar or a one-dimensional array of the type the attribute has
 * (record_recv refuses another type, or another count, with SQLSTATE
 * 42804). Its parameter type is 0: the statement names the composite
 * type ($1::name), whose OID differs from database to database. Records
 * do not nest.
 */
void pgparam_record_begin(struct pgparam *p);
void pgparam_record_end(struct pgparam *p);

/*
 * Points values at the buffer (call it after the last writer, and again
 * after any later one). Returns 0, or the first error: -ENOMEM, -EINVAL
 * (a malformed UUID, a writer of the wrong type in an array, an array or
 * record not ended or ended twice), -E2BIG (a value over 1 GiB).
 */
int pgparam_finish(struct pgparam *p);

/* The bytes its parameters take (what the statement carries). */
static inline size_t pgparam_bytes(const struct pgparam *p)
{
	return p->len;
}

#endif
