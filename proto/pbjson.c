/* SPDX-License-Identifier: MIT */
/* Any protobuf-c message as a json-c tree, by its descriptors (pbjson.h);
 * reading it back is pbjson_read.c. */
#include "pbjson.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "codec.h"
#include "pbjson_internal.h"

/* NaN and the infinities as protobuf's canonical JSON spells them. */
static struct json_object *number(double x, int digits)
{
	char buf[32];

	if (isnan(x))
		return json_object_new_string("NaN");
	if (isinf(x))
		return json_object_new_string(x > 0 ? "Infinity" : "-Infinity");
	/* the fewest digits that read back as x (0.1, not 0.1000000000000000055),
	 * up to a float's 9 or a double's 17; json-c writes the text as it is */
	for (int d = digits == 17 ? 15 : digits; d <= digits; d++) {
		snprintf(buf, sizeof(buf), "%.*g", d, x);
		if (digits != 17 || strtod(buf, NULL) == x)
			break;
	}
	/* a whole number stays a JSON number with a fraction: 1.0, -0.0 */
	if (!strpbrk(buf, ".eE"))
		strcat(buf, ".0");
	return json_object_new_double_s(x, buf);
}

static struct json_object *string(const char *s)
{
	static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
	_cleanup_free_ char *fixed = NULL;
	size_t len = strlen(s), out = 0;
	ssize_t bad;

	if (codec_utf8_invalid_at(s, len) < 0)
		return json_object_new_string_len(s, (int)len);
	fixed = malloc(len * 3 + 1);
	if (!fixed)
		return NULL;
	while ((bad = codec_utf8_invalid_at(s, len)) >= 0) {
		memcpy(fixed + out, s, (size_t)bad);
		memcpy(fixed + out + bad, replacement, 3);
		out += (size_t)bad + 3;
		s += bad + 1;
		len -= (size_t)bad + 1;
	}
	memcpy(fixed + out, s, len);
	return json_object_new_string_len(fixed, (int)(out + len));
}

static struct json_object *base64(const ProtobufCBinaryData *b)
{
	static const char digits[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	_cleanup_free_ char *out = malloc((b->len + 2) / 3 * 4 + 1);
	const uint8_t *p = b->data;
	size_t n = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < b->len; i += 3) {
		size_t left = b->len - i;
		uint32_t v = (uint32_t)p[i] << 16 |
			     (left > 1 ? (uint32_t)p[i + 1] << 8 : 0) |
			     (left > 2 ? p[i + 2] : 0);

		out[n++] = digits[v >> 18 & 63];
		out[n++] = digits[v >> 12 & 63];
		out[n++] = left > 1 ? digits[v >> 6 & 63] : '=';
		out[n++] = left > 2 ? digits[v & 63] : '=';
	}
	return json_object_new_string_len(out, (int)n);
}

/* {"unknown": reason}: an item the sender could not read, and why. */
static struct json_object *unknown_item(const char *reason)
{
	struct json_object *o = json_object_new_object(), *s = string(reason);

	if (!o || !s || json_object_object_add(o, "unknown", s) < 0) {
		json_object_put(o);
		json_object_put(s);
		return NULL;
	}
	return o;
}

static struct json_object *message(const ProtobufCMessage *m);

/*
 * One value of field f at v as a new json-c value in *ret. A NULL string
 * or message (an invalid message: protobuf_c_message_check() refuses it)
 * is a JSON null, which json-c holds as NULL. 0 or -ENOMEM.
 */
static int value(const ProtobufCFieldDescriptor *f, const void *v,
		 struct json_object **ret)
{
	struct json_object *o = NULL;
	const void *p;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		o = json_object_new_int(*(const int32_t *)v);
		break;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		o = json_object_new_int64(*(const uint32_t *)v);
		break;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		o = json_object_new_int64(*(const int64_t *)v);
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		o = json_object_new_uint64(*(const uint64_t *)v);
		break;
	case PROTOBUF_C_TYPE_FLOAT:
		o = number(*(const float *)v, 9);
		break;
	case PROTOBUF_C_TYPE_DOUBLE:
		o = number(*(const double *)v, 17);
		break;
	case PROTOBUF_C_TYPE_BOOL:
		o = json_object_new_boolean(*(const protobuf_c_boolean *)v);
		break;
	case PROTOBUF_C_TYPE_ENUM: {
		int x = *(const int *)v;
		const ProtobufCEnumValue *e =
			protobuf_c_enum_descriptor_get_value(f->descriptor, x);

		o = e ? json_object_new_string(e->name) :
			json_object_new_int(x);
		break;
	}
	case PROTOBUF_C_TYPE_BYTES:
		o = base64(v);
		break;
	case PROTOBUF_C_TYPE_STRING:
		p = *(const char *const *)v;
		if (!p) {
			*ret = NULL;
			return 0;
		}
		o = string(p);
		break;
	case PROTOBUF_C_TYPE_MESSAGE:
		p = *(const ProtobufCMessage *const *)v;
		if (!p) {
			*ret = NULL;
			return 0;
		}
		errno = 0;
		o = message(p);
		if (!o && !errno) { /* a value message with no value: null */
			*ret = NULL;
			return 0;
		}
		break;
	}
	*ret = o;
	return o ? 0 : -ENOMEM;
}

static int add(struct json_object *obj, const ProtobufCFieldDescriptor *f,
	       struct json_object *v)
{
	/* the names live in the static descriptors; each is new in obj */
	if (json_object_object_add_ex(obj, f->name, v,
				      JSON_C_OBJECT_ADD_KEY_IS_NEW |
					      JSON_C_OBJECT_ADD_CONSTANT_KEY) <
	    0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

static int repeated(struct json_object *obj, const ProtobufCMessage *m,
		    const ProtobufCFieldDescriptor *f)
{
	const char *base = (const char *)m;
	size_t n = *(const size_t *)(base + f->quantifier_offset);
	const char *arr = *(const char *const *)(base + f->offset);
	size_t size = pbjson_value_size(f->type);
	struct json_object *a = json_object_new_array_ext((int)n);

	if (!a)
		return -ENOMEM;
	for (size_t i = 0; i < n && arr; i++) {
		struct json_object *v;

		if (value(f, arr + i * size, &v) < 0 ||
		    json_object_array_add(a, v) < 0) {
			json_object_put(a);
			return -ENOMEM;
		}
	}
	return add(obj, f, a);
}

/* A map field as one JSON object, its entries in the order held. */
static int map(struct json_object *obj, const ProtobufCMessage *m,
	       const ProtobufCFieldDescriptor *f)
{
	const ProtobufCFieldDescriptor *k = &pbjson_sub(f)->fields[0],
				       *vf = &pbjson_sub(f)->fields[1];
	struct json_object *o = json_object_new_object();
	ProtobufCMessage *const *e;
	size_t n = pbjson_map_entries(m, f, &e);

	if (!o)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *key = *(char *const *)((const char *)e[i] +
						   k->offset);
		struct json_object *v;

		if (value(vf, (const char *)e[i] + vf->offset, &v) < 0 ||
		    json_object_object_add(o, key ?: "", v) < 0) {
			json_object_put(o);
			return -ENOMEM;
		}
	}
	return add(obj, f, o);
}

/* A value message: its one member bare, "unknown" as {"unknown": why}. */
static struct json_object *value_message(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;

	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const void *v = (const char *)m + f->offset;
		struct json_object *o;

		if (!pbjson_field_present(m, f))
			continue;
		if (!strcmp(f->name, "unknown") &&
		    f->type == PROTOBUF_C_TYPE_STRING)
			o = unknown_item(*(char *const *)v ?: "");
		else if (value(f, v, &o) < 0)
			o = NULL;
		if (!o)
			errno = ENOMEM;
		return o;
	}
	return NULL; /* errno 0: null */
}

/* The keys of m's unknown map (field uf) that name no field: items of a
 * newer sender's .proto, each shown as {"unknown": reason}. */
static int unknown_extra(struct json_object *obj, const ProtobufCMessage *m,
			 const ProtobufCFieldDescriptor *uf)
{
	ProtobufCMessage *const *e;
	size_t n = pbjson_map_entries(m, uf, &e);

	for (size_t i = 0; i < n; i++) {
		const char *key = pbjson_entry_key(uf, e[i]);
		struct json_object *u;

		if (protobuf_c_message_descriptor_get_field_by_name(
			    m->descriptor, key))
			continue;
		u = unknown_item(pbjson_entry_value(uf, e[i]));
		if (!u || json_object_object_add(obj, key, u) < 0) {
			json_object_put(u);
			return -ENOMEM;
		}
	}
	return 0;
}

/* Whether field name is one of names[0..n). */
static bool named(const char *name, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

/* m's fields, all of them (n 0, only false), only those named (only), or
 * all but those named (the keys of a newer sender go with the latter) */
static struct json_object *fields(const ProtobufCMessage *m,
				  const char *const *names, size_t n,
				  bool only)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const ProtobufCFieldDescriptor *uf;
	struct json_object *obj;

	uf = pbjson_unknown_field(d);
	obj = json_object_new_object();
	if (!obj)
		goto oom;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *why;
		struct json_object *v = NULL;
		int r = 0;

		if (f == uf || (n && named(f->name, names, n) != only))
			continue;
		why = uf ? pbjson_unknown_reason_in(m, uf, f->name) : NULL;
		if (why)
			r = (v = unknown_item(why)) ? add(obj, f, v) : -ENOMEM;
		else if (pbjson_is_map(f))
			r = map(obj, m, f);
		else if (f->label == PROTOBUF_C_LABEL_REPEATED)
			r = repeated(obj, m, f);
		else if (pbjson_field_present(m, f))
			r = value(f, (const char *)m + f->offset, &v) ?:
				    add(obj, f, v);
		else if (uf) /* an item not set: null */
			r = add(obj, f, NULL);
		if (r < 0)
			goto oom;
	}
	if (uf && !only && unknown_extra(obj, m, uf) < 0)
		goto oom;
	return obj;
oom:
	json_object_put(obj);
	errno = ENOMEM;
	return NULL;
}

static struct json_object *message(const ProtobufCMessage *m)
{
	if (pbjson_is_value_message(m->descriptor))
		return value_message(m);
	return fields(m, NULL, 0, false);
}

struct json_object *pbjson_from_fields(const ProtobufCMessage *m,
				       const char *const *names, size_t n,
				       bool only)
{
	if (!m || !n || pbjson_is_value_message(m->descriptor)) {
		errno = EINVAL;
		return NULL;
	}
	errno = 0;
	return fields(m, names, n, only);
}

struct json_object *pbjson_from_message(const ProtobufCMessage *m)
{
	struct json_object *o;

	if (!m) {
		errno = EINVAL;
		return NULL;
	}
	errno = 0;
	o = message(m);
	return o;
}
