/* SPDX-License-Identifier: MIT */
/* JSON in pbjson.h's mapping read back, strictly, into a message. */
#include "pbjson.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "pbjson_internal.h"

struct reader {
	char *err;
	char path[256];
	size_t len;
};

static int read_fail(struct reader *rd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int read_fail(struct reader *rd, const char *fmt, ...)
{
	char msg[PBJSON_ERR_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(rd->err, PBJSON_ERR_LEN, "%s: %s",
		 rd->len ? rd->path : "(top)", msg);
	return -EINVAL;
}

/* Enters a member (".name") or an element ("[i]"); returns the old length. */
static size_t read_enter(struct reader *rd, const char *name, size_t index)
{
	size_t old = rd->len;
	int n;

	if (name)
		n = snprintf(rd->path + old, sizeof(rd->path) - old, "%s%s",
			     old ? "." : "", name);
	else
		n = snprintf(rd->path + old, sizeof(rd->path) - old, "[%zu]",
			     index);
	if (n > 0)
		rd->len = old + (size_t)n < sizeof(rd->path) ?
				  old + (size_t)n :
				  sizeof(rd->path) - 1;
	return old;
}

static void read_leave(struct reader *rd, size_t old)
{
	rd->len = old;
	rd->path[old] = '\0';
}

/* The reason when o is an {"unknown": "reason"} item, else NULL. */
static const char *unknown_of(struct json_object *o)
{
	struct json_object *r;

	if (!json_object_is_type(o, json_type_object) ||
	    json_object_object_length(o) != 1 ||
	    !json_object_object_get_ex(o, "unknown", &r) ||
	    !json_object_is_type(r, json_type_string))
		return NULL;
	return json_object_get_string(r);
}

static ProtobufCMessage *new_message(const ProtobufCMessageDescriptor *d)
{
	ProtobufCMessage *m = malloc(d->sizeof_message);

	if (m)
		d->message_init(m);
	return m;
}

static int read_message(struct reader *rd, const ProtobufCMessageDescriptor *d,
			struct json_object *o, ProtobufCMessage **ret);

static const char *json_type_text(struct json_object *o)
{
	return json_type_to_name(json_object_get_type(o));
}

/* One JSON value o into the C value of field f at v. */
static int read_value(struct reader *rd, const ProtobufCFieldDescriptor *f,
		      struct json_object *o, void *v)
{
	enum json_type t = json_object_get_type(o);
	int64_t i;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		if (t != json_type_int)
			return read_fail(rd, "a JSON %s, not an integer",
					 json_type_text(o));
		if (f->type == PROTOBUF_C_TYPE_UINT64 ||
		    f->type == PROTOBUF_C_TYPE_FIXED64) {
			if (json_object_get_int64(o) < 0)
				return read_fail(rd, "%" PRId64 " is negative",
						 json_object_get_int64(o));
			*(uint64_t *)v = json_object_get_uint64(o);
			return 0;
		}
		i = json_object_get_int64(o);
		/* json-c holds 2^63 and above as a uint64, which int64 clamps */
		if (i == INT64_MAX && json_object_get_uint64(o) != INT64_MAX)
			return read_fail(rd, "%" PRIu64 " is beyond int64",
					 json_object_get_uint64(o));
		if (pbjson_value_size(f->type) == 8) {
			*(int64_t *)v = i;
			return 0;
		}
		if (f->type == PROTOBUF_C_TYPE_UINT32 ||
		    f->type == PROTOBUF_C_TYPE_FIXED32) {
			if (i < 0 || i > UINT32_MAX)
				return read_fail(rd, "%" PRId64
						 " is outside uint32", i);
			*(uint32_t *)v = (uint32_t)i;
			return 0;
		}
		if (i < INT32_MIN || i > INT32_MAX)
			return read_fail(rd, "%" PRId64 " is outside int32", i);
		*(int32_t *)v = (int32_t)i;
		return 0;
	case PROTOBUF_C_TYPE_DOUBLE:
	case PROTOBUF_C_TYPE_FLOAT:
		if (t != json_type_double && t != json_type_int)
			return read_fail(rd, "a JSON %s, not a number",
					 json_type_text(o));
		if (f->type == PROTOBUF_C_TYPE_FLOAT)
			*(float *)v = (float)json_object_get_double(o);
		else
			*(double *)v = json_object_get_double(o);
		return 0;
	case PROTOBUF_C_TYPE_BOOL:
		if (t != json_type_boolean)
			return read_fail(rd, "a JSON %s, not a boolean",
					 json_type_text(o));
		*(protobuf_c_boolean *)v = json_object_get_boolean(o);
		return 0;
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumValue *e;

		if (t != json_type_string)
			return read_fail(rd, "a JSON %s, not a name",
					 json_type_text(o));
		e = protobuf_c_enum_descriptor_get_value_by_name(
			f->descriptor, json_object_get_string(o));
		if (!e)
			return read_fail(rd, "'%s' is not a value of %s",
					 json_object_get_string(o),
					 ((const ProtobufCEnumDescriptor *)
						  f->descriptor)
						 ->name);
		*(int *)v = e->value;
		return 0;
	}
	case PROTOBUF_C_TYPE_STRING: {
		char *s;

		if (t != json_type_string)
			return read_fail(rd, "a JSON %s, not a string",
					 json_type_text(o));
		s = strndup(json_object_get_string(o),
			    (size_t)json_object_get_string_len(o));
		if (!s)
			return -ENOMEM;
		*(char **)v = s;
		return 0;
	}
	case PROTOBUF_C_TYPE_MESSAGE:
		return read_message(rd, f->descriptor, o,
				    (ProtobufCMessage **)v);
	case PROTOBUF_C_TYPE_BYTES:
		break;
	}
	return read_fail(rd, "bytes are not read from JSON");
}

/*
 * Appends one zeroed element to repeated field f of m; its slot in *ret.
 * The message keeps no capacity: *cap is the caller's, 0 before the
 * field's first element (with elements already there, 0 only costs a
 * realloc). array_reserve() rather than ARRAY_RESERVE(), as the element
 * size comes from the descriptor, not from a C type.
 */
static int grow(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
		size_t *cap, void **ret)
{
	char *base = (char *)m;
	size_t *n = (size_t *)(base + f->quantifier_offset);
	void **arr = (void **)(base + f->offset);
	size_t size = pbjson_value_size(f->type);

	if (array_reserve(arr, cap, *n + 1, size) < 0)
		return -ENOMEM;
	*ret = memset((char *)*arr + *n * size, 0, size);
	(*n)++;
	return 0;
}

/* Sets the optional or oneof field f of m as present. */
static void mark_present(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
	char *base = (char *)m;

	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		*(uint32_t *)(base + f->quantifier_offset) = f->id;
	else if (f->label == PROTOBUF_C_LABEL_OPTIONAL &&
		 f->type != PROTOBUF_C_TYPE_STRING &&
		 f->type != PROTOBUF_C_TYPE_MESSAGE)
		*(protobuf_c_boolean *)(base + f->quantifier_offset) = 1;
}

/* A map entry {key, value} appended to map field f of m (capacity *cap,
 * as grow()). */
static int read_entry(struct reader *rd, ProtobufCMessage *m,
		      const ProtobufCFieldDescriptor *f, size_t *cap,
		      const char *key, struct json_object *o)
{
	const ProtobufCFieldDescriptor *k = &pbjson_sub(f)->fields[0],
				       *vf = &pbjson_sub(f)->fields[1];
	ProtobufCMessage *e = new_message(f->descriptor);
	void *slot;
	int r;

	if (!e)
		return -ENOMEM;
	r = grow(m, f, cap, &slot);
	if (r < 0) {
		free(e);
		return r;
	}
	*(ProtobufCMessage **)slot = e;
	*(char **)((char *)e + k->offset) = strdup(key);
	if (!*(char **)((char *)e + k->offset))
		return -ENOMEM;
	r = read_value(rd, vf, o, (char *)e + vf->offset);
	if (r >= 0)
		mark_present(e, vf);
	return r;
}

/* A value message from a bare JSON value: the member of its JSON type. */
static int read_value_message(struct reader *rd,
			      const ProtobufCMessageDescriptor *d,
			      struct json_object *o, ProtobufCMessage *m)
{
	const char *why = unknown_of(o);
	enum json_type t = json_object_get_type(o);

	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		bool is_unknown = !strcmp(f->name, "unknown");
		bool fits;
		int r;

		switch (f->type) {
		case PROTOBUF_C_TYPE_INT64:
		case PROTOBUF_C_TYPE_SINT64:
		case PROTOBUF_C_TYPE_SFIXED64:
			fits = t == json_type_int;
			break;
		case PROTOBUF_C_TYPE_DOUBLE:
			fits = t == json_type_double;
			break;
		case PROTOBUF_C_TYPE_BOOL:
			fits = t == json_type_boolean;
			break;
		case PROTOBUF_C_TYPE_STRING:
			fits = is_unknown ? why != NULL : t == json_type_string;
			break;
		default:
			fits = false;
		}
		if (!fits)
			continue;
		if (is_unknown) {
			char *s = strdup(why);

			if (!s)
				return -ENOMEM;
			*(char **)((char *)m + f->offset) = s;
			r = 0;
		} else {
			r = read_value(rd, f, o, (char *)m + f->offset);
		}
		if (r >= 0)
			mark_present(m, f);
		return r;
	}
	if (t == json_type_null)
		return 0;
	return read_fail(rd, "a JSON %s fits no member of %s",
			 json_type_text(o), d->short_name);
}

/* Field f of m from v; uf is m's unknown map (or NULL), *ucap its
 * capacity (grow()). */
static int read_field(struct reader *rd, ProtobufCMessage *m,
		      const ProtobufCFieldDescriptor *uf, size_t *ucap,
		      const ProtobufCFieldDescriptor *f, struct json_object *v)
{
	const char *why = unknown_of(v);
	size_t cap = 0; /* f's own: each field comes once in a JSON object */
	void *slot;
	int r;

	/* an unreadable item: its reason goes to the message's unknown map,
	 * except that a value message holds its own */
	if (why && uf && !(f->type == PROTOBUF_C_TYPE_MESSAGE &&
			   pbjson_is_value_message(f->descriptor))) {
		struct json_object *reason;

		json_object_object_get_ex(v, "unknown", &reason);
		return read_entry(rd, m, uf, ucap, f->name, reason);
	}
	if (pbjson_is_map(f)) {
		struct json_object_iterator it, end;

		if (!json_object_is_type(v, json_type_object))
			return read_fail(rd, "a JSON %s, not an object",
					 json_type_text(v));
		it = json_object_iter_begin(v);
		end = json_object_iter_end(v);
		for (; !json_object_iter_equal(&it, &end);
		     json_object_iter_next(&it)) {
			const char *key = json_object_iter_peek_name(&it);
			size_t old = read_enter(rd, key, 0);

			r = read_entry(rd, m, f, &cap, key,
				       json_object_iter_peek_value(&it));
			if (r < 0)
				return r;
			read_leave(rd, old);
		}
		return 0;
	}
	if (f->label == PROTOBUF_C_LABEL_REPEATED) {
		if (!json_object_is_type(v, json_type_array))
			return read_fail(rd, "a JSON %s, not an array",
					 json_type_text(v));
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			size_t old = read_enter(rd, NULL, i);

			r = grow(m, f, &cap, &slot);
			if (r < 0)
				return r;
			r = read_value(rd, f, json_object_array_get_idx(v, i),
				       slot);
			if (r < 0)
				return r;
			read_leave(rd, old);
		}
		return 0;
	}
	if (!v && !(f->type == PROTOBUF_C_TYPE_MESSAGE &&
		    pbjson_is_value_message(f->descriptor))) {
		if (f->label == PROTOBUF_C_LABEL_REQUIRED)
			return read_fail(rd, "null, but required");
		return 0; /* not set */
	}
	r = read_value(rd, f, v, (char *)m + f->offset);
	if (r >= 0)
		mark_present(m, f);
	return r;
}

static int read_message(struct reader *rd, const ProtobufCMessageDescriptor *d,
			struct json_object *o, ProtobufCMessage **ret)
{
	const ProtobufCFieldDescriptor *uf = pbjson_unknown_field(d);
	struct json_object_iterator it, end;
	ProtobufCMessage *m = new_message(d);
	size_t ucap = 0;
	int r = 0;

	if (!m)
		return -ENOMEM;
	*ret = m; /* its owner frees it, read or not */
	if (pbjson_is_value_message(d))
		return read_value_message(rd, d, o, m);
	if (!json_object_is_type(o, json_type_object))
		return read_fail(rd, "a JSON %s, not an object",
				 json_type_text(o));
	it = json_object_iter_begin(o);
	end = json_object_iter_end(o);
	for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
		const char *name = json_object_iter_peek_name(&it);
		const ProtobufCFieldDescriptor *f =
			protobuf_c_message_descriptor_get_field_by_name(d,
									name);
		size_t old = read_enter(rd, name, 0);

		if (!f || f == uf)
			return read_fail(rd, "not a field of %s",
					 d->short_name);
		r = read_field(rd, m, uf, &ucap, f,
			       json_object_iter_peek_value(&it));
		if (r < 0)
			return r;
		read_leave(rd, old);
	}
	for (unsigned i = 0; i < d->n_fields; i++)
		if (d->fields[i].label == PROTOBUF_C_LABEL_REQUIRED &&
		    !json_object_object_get_ex(o, d->fields[i].name, NULL))
			return read_fail(rd, "%s: missing, but required",
					 d->fields[i].name);
	return 0;
}

int pbjson_to_message(const ProtobufCMessageDescriptor *d,
		      struct json_object *o, ProtobufCMessage **ret,
		      char err[PBJSON_ERR_LEN])
{
	struct reader rd = { .err = err };
	ProtobufCMessage *m = NULL;
	int r;

	err[0] = '\0';
	r = read_message(&rd, d, o, &m);
	if (r < 0) {
		if (r == -ENOMEM)
			snprintf(err, PBJSON_ERR_LEN, "out of memory");
		protobuf_c_message_free_unpacked(m, NULL);
		return r;
	}
	*ret = m;
	return 0;
}
