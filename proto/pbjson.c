/* SPDX-License-Identifier: MIT */
/* Any protobuf-c message as a json-c tree, by its descriptors (pbjson.h). */
#include "pbjson.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
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

/* The message type of a message field. */
static const ProtobufCMessageDescriptor *sub(const ProtobufCFieldDescriptor *f)
{
	return f->descriptor;
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

/* A map<K, V> field: protoc's repeated entries {key = 1; value = 2}. */
static bool is_map(const ProtobufCFieldDescriptor *f)
{
	const ProtobufCMessageDescriptor *e = f->descriptor;
	size_t n;

	if (f->label != PROTOBUF_C_LABEL_REPEATED ||
	    f->type != PROTOBUF_C_TYPE_MESSAGE || e->n_fields != 2)
		return false;
	n = strlen(e->short_name);
	return n > 5 && !strcmp(e->short_name + n - 5, "Entry") &&
	       e->fields[0].id == 1 && !strcmp(e->fields[0].name, "key") &&
	       e->fields[1].id == 2 && !strcmp(e->fields[1].name, "value");
}

bool pbjson_is_value_message(const ProtobufCMessageDescriptor *d)
{
	for (unsigned i = 0; i < d->n_fields; i++)
		if (!(d->fields[i].flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
			return false;
	return d->n_fields > 0;
}

const ProtobufCFieldDescriptor *
pbjson_unknown_field(const ProtobufCMessageDescriptor *d)
{
	const ProtobufCFieldDescriptor *f =
		protobuf_c_message_descriptor_get_field_by_name(d, "unknown");

	return f && is_map(f) &&
			       sub(f)->fields[1].type ==
				       PROTOBUF_C_TYPE_STRING ?
		       f :
		       NULL;
}

/* The entries of map field f of m: their count, the array in *ret. */
static size_t map_entries(const ProtobufCMessage *m,
			  const ProtobufCFieldDescriptor *f,
			  ProtobufCMessage *const **ret)
{
	const char *base = (const char *)m;

	*ret = *(ProtobufCMessage *const *const *)(base + f->offset);
	return *ret ? *(const size_t *)(base + f->quantifier_offset) : 0;
}

/* The key of entry e of map field f. */
static const char *entry_key(const ProtobufCFieldDescriptor *f,
			     const ProtobufCMessage *e)
{
	return *(char *const *)((const char *)e + sub(f)->fields[0].offset) ?:
		       "";
}

/* The value of entry e of a map<string, string> field f. */
static const char *entry_value(const ProtobufCFieldDescriptor *f,
			       const ProtobufCMessage *e)
{
	return *(char *const *)((const char *)e + sub(f)->fields[1].offset) ?:
		       "";
}

/* The reason m's unknown map (field uf) gives for item name, or NULL. */
static const char *unknown_reason(const ProtobufCMessage *m,
				  const ProtobufCFieldDescriptor *uf,
				  const char *name)
{
	ProtobufCMessage *const *e;
	size_t n = map_entries(m, uf, &e);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(entry_key(uf, e[i]), name))
			return entry_value(uf, e[i]);
	return NULL;
}

const char *pbjson_unknown_reason(const ProtobufCMessage *m,
				  const char *name)
{
	const ProtobufCFieldDescriptor *uf = pbjson_unknown_field(m->descriptor);

	return uf ? unknown_reason(m, uf, name) : NULL;
}

/* Whether field f of m holds anything: entries, or a value. */
static bool field_set(const ProtobufCMessage *m,
		      const ProtobufCFieldDescriptor *f)
{
	if (f->label == PROTOBUF_C_LABEL_REPEATED)
		return *(const size_t *)((const char *)m +
					 f->quantifier_offset) > 0;
	return pbjson_field_present(m, f);
}

/* The unknown map whose entries by_key() orders. */
struct keyed {
	const ProtobufCFieldDescriptor *uf;
	ProtobufCMessage *const *e;
};

/* qsort_r()'s order of entry indexes by their keys (arg: struct keyed) */
static int by_key(const void *a, const void *b, void *arg)
{
	const struct keyed *k = arg;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	int c = strcmp(entry_key(k->uf, k->e[i]), entry_key(k->uf, k->e[j]));

	return c ? c : (i > j) - (i < j);
}

int pbjson_unknown_check(const ProtobufCMessage *m, size_t *at,
			 char why[PBJSON_ERR_LEN])
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const ProtobufCFieldDescriptor *uf = pbjson_unknown_field(d);
	_cleanup_free_ size_t *order = NULL;
	ProtobufCMessage *const *e;
	size_t n = uf ? map_entries(m, uf, &e) : 0;

	for (size_t i = 0; i < n; i++) {
		const ProtobufCFieldDescriptor *f =
			protobuf_c_message_descriptor_get_field_by_name(
				d, entry_key(uf, e[i]));

		*at = i;
		if (f == uf) {
			snprintf(why, PBJSON_ERR_LEN,
				 "names the map itself, not an item");
			return -EINVAL;
		}
		if (f && field_set(m, f)) {
			snprintf(why, PBJSON_ERR_LEN,
				 "names %s, which is set: an item is read or unknown, not both",
				 f->name);
			return -EINVAL;
		}
	}
	if (n < 2)
		return 0;
	/* each key once: sorted, equal keys are neighbours (a walk over
	 * thousands of entries must not take n^2 comparisons) */
	order = malloc(n * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof(*order), by_key,
		&(struct keyed){ .uf = uf, .e = e });
	for (size_t i = 1; i < n; i++)
		if (!strcmp(entry_key(uf, e[order[i - 1]]),
			    entry_key(uf, e[order[i]]))) {
			*at = order[i];
			snprintf(why, PBJSON_ERR_LEN, "the same key as [%zu]",
				 order[i - 1]);
			return -EINVAL;
		}
	return 0;
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
	const ProtobufCFieldDescriptor *k = &sub(f)->fields[0],
				       *vf = &sub(f)->fields[1];
	struct json_object *o = json_object_new_object();
	ProtobufCMessage *const *e;
	size_t n = map_entries(m, f, &e);

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
	size_t n = map_entries(m, uf, &e);

	for (size_t i = 0; i < n; i++) {
		const char *key = entry_key(uf, e[i]);
		struct json_object *u;

		if (protobuf_c_message_descriptor_get_field_by_name(
			    m->descriptor, key))
			continue;
		u = unknown_item(entry_value(uf, e[i]));
		if (!u || json_object_object_add(obj, key, u) < 0) {
			json_object_put(u);
			return -ENOMEM;
		}
	}
	return 0;
}

static struct json_object *message(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const ProtobufCFieldDescriptor *uf;
	struct json_object *obj;

	if (pbjson_is_value_message(d))
		return value_message(m);
	uf = pbjson_unknown_field(d);
	obj = json_object_new_object();
	if (!obj)
		goto oom;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *why = uf ? unknown_reason(m, uf, f->name) : NULL;
		struct json_object *v = NULL;
		int r = 0;

		if (f == uf)
			continue;
		if (why)
			r = (v = unknown_item(why)) ? add(obj, f, v) : -ENOMEM;
		else if (is_map(f))
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
	if (uf && unknown_extra(obj, m, uf) < 0)
		goto oom;
	return obj;
oom:
	json_object_put(obj);
	errno = ENOMEM;
	return NULL;
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

/* ---- JSON to a message (pbjson.h) ---- */

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

/* Appends one element to repeated field f of m; its slot in *ret. */
static int grow(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
		void **ret)
{
	char *base = (char *)m;
	size_t *n = (size_t *)(base + f->quantifier_offset);
	char **arr = (char **)(base + f->offset);
	size_t size = pbjson_value_size(f->type);
	char *a;

	/* doubling: the count is a power of two whenever the array is full */
	if (!(*n & (*n - 1)) || !*n) {
		a = realloc(*arr, (*n ? *n * 2 : 1) * size);
		if (!a)
			return -ENOMEM;
		*arr = a;
	}
	*ret = memset(*arr + *n * size, 0, size);
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

/* A map entry {key, value} appended to map field f of m. */
static int read_entry(struct reader *rd, ProtobufCMessage *m,
		      const ProtobufCFieldDescriptor *f, const char *key,
		      struct json_object *o)
{
	const ProtobufCFieldDescriptor *k = &sub(f)->fields[0],
				       *vf = &sub(f)->fields[1];
	ProtobufCMessage *e = new_message(f->descriptor);
	void *slot;
	int r;

	if (!e)
		return -ENOMEM;
	r = grow(m, f, &slot);
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

static int read_field(struct reader *rd, ProtobufCMessage *m,
		      const ProtobufCFieldDescriptor *uf,
		      const ProtobufCFieldDescriptor *f, struct json_object *v)
{
	const char *why = unknown_of(v);
	void *slot;
	int r;

	/* an unreadable item: its reason goes to the message's unknown map,
	 * except that a value message holds its own */
	if (why && uf && !(f->type == PROTOBUF_C_TYPE_MESSAGE &&
			   pbjson_is_value_message(f->descriptor))) {
		struct json_object *reason;

		json_object_object_get_ex(v, "unknown", &reason);
		return read_entry(rd, m, uf, f->name, reason);
	}
	if (is_map(f)) {
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

			r = read_entry(rd, m, f, key,
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

			r = grow(m, f, &slot);
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
		r = read_field(rd, m, uf, f, json_object_iter_peek_value(&it));
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
