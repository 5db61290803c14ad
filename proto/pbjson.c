/* SPDX-License-Identifier: MIT */
/* Any protobuf-c message as a json-c tree, by its descriptors (pbjson.h). */
#include "pbjson.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "codec.h"

bool pbjson_field_present(const ProtobufCMessage *m,
			  const ProtobufCFieldDescriptor *f)
{
	const char *base = (const char *)m;

	if (f->label == PROTOBUF_C_LABEL_REQUIRED)
		return true;
	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		return *(const uint32_t *)(base + f->quantifier_offset) ==
		       f->id;
	if (f->type == PROTOBUF_C_TYPE_STRING ||
	    f->type == PROTOBUF_C_TYPE_MESSAGE) {
		const void *p = *(const void *const *)(base + f->offset);

		return p && p != f->default_value;
	}
	if (f->label == PROTOBUF_C_LABEL_NONE)
		return true;
	return *(const protobuf_c_boolean *)(base + f->quantifier_offset);
}

size_t pbjson_value_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_ENUM:
		return 4;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	}
	return 0;
}

/* NaN and the infinities as protobuf's canonical JSON spells them. */
static struct json_object *number(double x, int digits)
{
	char buf[32];

	if (isnan(x))
		return json_object_new_string("NaN");
	if (isinf(x))
		return json_object_new_string(x > 0 ? "Infinity" : "-Infinity");
	if (digits == 17)
		return json_object_new_double(x);
	/* json-c writes this text as it is: a float's own digits only */
	snprintf(buf, sizeof(buf), "%.*g", digits, x);
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
		o = pbjson_from_message(p);
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

struct json_object *pbjson_from_message(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d;
	struct json_object *obj;

	if (!m) {
		errno = EINVAL;
		return NULL;
	}
	d = m->descriptor;
	obj = json_object_new_object();
	if (!obj)
		goto oom;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		struct json_object *v;
		int r = 0;

		if (f->label == PROTOBUF_C_LABEL_REPEATED)
			r = repeated(obj, m, f);
		else if (pbjson_field_present(m, f))
			r = value(f, (const char *)m + f->offset, &v) ?:
				    add(obj, f, v);
		if (r < 0)
			goto oom;
	}
	return obj;
oom:
	json_object_put(obj);
	errno = ENOMEM;
	return NULL;
}
