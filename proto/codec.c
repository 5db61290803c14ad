/* SPDX-License-Identifier: MIT */
/* Pack, unpack under a byte budget, and validate Reports and Acks. */
#include "codec.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>
#include <time.h>

#include "bounds.h"
#include "cleanup.h"
#include "pbjson.h"

static int invalid(char err[CODEC_ERR_LEN], const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int invalid(char err[CODEC_ERR_LEN], const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, CODEC_ERR_LEN, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* ---- UTF-8 and UUIDs ---- */

ssize_t codec_utf8_invalid_at(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		unsigned c = p[i];
		size_t n;
		uint32_t cp, min;

		if (c == 0)
			return (ssize_t)i;
		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0) {
			n = 1;
			cp = c & 0x1f;
			min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2;
			cp = c & 0x0f;
			min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3;
			cp = c & 0x07;
			min = 0x10000;
		} else {
			return (ssize_t)i; /* continuation byte or 0xf8..0xff */
		}
		if (len - i - 1 < n)
			return (ssize_t)i;
		for (size_t k = 1; k <= n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return (ssize_t)i;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return (ssize_t)i;
		i += n + 1;
	}
	return -1;
}

int codec_utf8_valid(const char *s, size_t len)
{
	if (!s)
		return len == 0;
	return codec_utf8_invalid_at(s, len) < 0;
}

int codec_uuid_valid(const char *s)
{
	if (!s)
		return 0;
	for (int i = 0; i < 36; i++) {
		char c = s[i];

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (c != '-')
				return 0;
		} else if (!((c >= '0' && c <= '9') ||
			     (c >= 'a' && c <= 'f'))) {
			return 0; /* also stops at a NUL before 36 */
		}
	}
	return s[36] == '\0';
}

int codec_uuid_new(char out[37])
{
	static const char hex[] = "0123456789abcdef";
	uint8_t b[16];
	ssize_t n;
	char *p = out;

	do
		n = getrandom(b, sizeof(b), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n != (ssize_t)sizeof(b))
		return -EIO;
	b[6] = (b[6] & 0x0f) | 0x40; /* version 4 */
	b[8] = (b[8] & 0x3f) | 0x80; /* RFC 4122 variant */
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[b[i] >> 4];
		*p++ = hex[b[i] & 15];
	}
	*p = '\0';
	return 0;
}

/* ---- unpacking under a budget ---- */

/*
 * One arena per unpacked message: the ProtobufCAllocator that protobuf-c
 * calls for every allocation of that unpack, with its own count, so
 * concurrent unpacks share nothing. Blocks are cut in order from chunks
 * that double in size (the first one fits the message's bytes about twice,
 * what a report needs), and all go at once with the arena: protobuf-c's own
 * frees are no-ops. A malloc() and free() per field was a third of the
 * collector's CPU. Each block starts with a header naming its arena (how
 * codec_free_*() finds it again from the message alone) and its size (how
 * validation learns a string's length on the wire after protobuf-c
 * NUL-terminated it, and so sees an embedded NUL). Blocks and headers are
 * charged to the budget.
 */
struct codec_chunk {
	struct codec_chunk *next;
	size_t size, used;
	alignas(max_align_t) unsigned char data[];
};

struct codec_arena {
	ProtobufCAllocator allocator;
	struct codec_chunk *chunks; /* the newest first */
	size_t next_chunk;
	size_t used;
	size_t budget;
	bool exhausted;
	bool oom;
};

struct codec_block {
	alignas(max_align_t) struct codec_arena *arena;
	size_t size;
};

#define CODEC_CHUNK_MIN 4096u

/* Under AddressSanitizer every block is a chunk of its own, of its exact
 * size, so that a read past its end is caught as before. */
#if defined(__SANITIZE_ADDRESS__)
#define CODEC_CHUNK_EACH 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CODEC_CHUNK_EACH 1
#endif
#endif
#ifndef CODEC_CHUNK_EACH
#define CODEC_CHUNK_EACH 0
#endif

static void *arena_alloc(void *data, size_t size)
{
	struct codec_arena *a = data;
	struct codec_chunk *c = a->chunks;
	struct codec_block *b;
	size_t align = alignof(max_align_t), cost;

	/* used <= budget always holds, so neither side can overflow */
	if (size > a->budget) {
		a->exhausted = true;
		return NULL;
	}
	cost = sizeof(*b) + (size + align - 1) / align * align;
	if (cost > a->budget - a->used) {
		a->exhausted = true;
		return NULL;
	}
	if (CODEC_CHUNK_EACH || !c || c->size - c->used < cost) {
		size_t n = CODEC_CHUNK_EACH	   ? sizeof(*b) + size :
			   a->next_chunk > cost ? a->next_chunk :
						  cost;

		c = malloc(sizeof(*c) + n);
		if (!c) {
			a->oom = true;
			return NULL;
		}
		c->next = a->chunks;
		c->size = n;
		c->used = 0;
		a->chunks = c;
		a->next_chunk = n * 2;
	}
	b = (struct codec_block *)(c->data + c->used);
	c->used += cost;
	b->arena = a;
	b->size = size;
	a->used += cost;
	return b + 1;
}

/* Blocks go with their arena (arena_release). */
static void arena_free(void *data, void *p)
{
	(void)data;
	(void)p;
}

static void arena_release(struct codec_arena *a)
{
	while (a->chunks) {
		struct codec_chunk *c = a->chunks;

		a->chunks = c->next;
		free(c);
	}
	free(a);
}

static const struct codec_block *block_of(const void *p)
{
	return (const struct codec_block *)p - 1;
}

static int unpack_message(const ProtobufCMessageDescriptor *desc,
			  const uint8_t *data, size_t len, size_t budget,
			  ProtobufCMessage **ret, char err[CODEC_ERR_LEN])
{
	struct codec_arena *a = calloc(1, sizeof(*a));
	ProtobufCMessage *m;
	int r = -EBADMSG;

	if (!a)
		return -ENOMEM;
	a->allocator.alloc = arena_alloc;
	a->allocator.free = arena_free;
	a->allocator.allocator_data = a;
	a->budget = budget;
	a->next_chunk = 2 * len > CODEC_CHUNK_MIN ? 2 * len : CODEC_CHUNK_MIN;
	m = protobuf_c_message_unpack(desc, &a->allocator, len, data);
	if (m) {
		*ret = m;
		return 0;
	}
	if (a->oom) {
		snprintf(err, CODEC_ERR_LEN, "out of memory decoding a %s",
			 desc->short_name);
		r = -ENOMEM;
	} else if (a->exhausted) {
		snprintf(err, CODEC_ERR_LEN,
			 "%s needs more than %zu KiB to decode (the unpack budget)",
			 desc->short_name, budget >> 10);
	} else {
		snprintf(err, CODEC_ERR_LEN,
			 "not a %s (malformed or truncated protobuf, or a required field missing)",
			 desc->short_name);
	}
	arena_release(a);
	return r;
}

static void free_message(ProtobufCMessage *m)
{
	if (m)
		arena_release(block_of(m)->arena);
}

static int pack_message(const ProtobufCMessage *m, size_t max, uint8_t **ret,
			size_t *ret_len)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf;

	if (len > max)
		return -E2BIG;
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	if (protobuf_c_message_pack(m, buf) != len) {
		free(buf);
		return -EIO;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* ---- generic checks, driven by the descriptors ---- */

/*
 * Every string must be valid UTF-8 without NUL and within its limit, every
 * required string non-empty, every double finite, every repeated field
 * within its count. Walking the descriptors rather than the structs means
 * a field added to the .proto is checked without anyone remembering to.
 */
struct field_limit {
	const ProtobufCMessageDescriptor *msg;
	const char *field;
	size_t max;
};

/*
 * Strings not listed get CODEC_MAX_STRING. Repeated fields not listed get
 * 0, so a repeated field added to the .proto without a limit here fails
 * the tests instead of being unbounded.
 */
static const struct field_limit field_limits[] = {
	{ &fleetbench__report__descriptor, "probe_json", CODEC_MAX_PROBE_JSON },
	{ &fleetbench__report__descriptor, "benchmarks", CODEC_MAX_BENCHMARKS },
	{ &fleetbench__report__descriptor, "comparisons",
	  CODEC_MAX_COMPARISONS },
	{ &fleetbench__kernel__descriptor, "version", CODEC_MAX_CMDLINE },
	{ &fleetbench__kernel__descriptor, "cmdline", CODEC_MAX_CMDLINE },
	{ &fleetbench__benchmark__descriptor, "skip_reason", CODEC_MAX_REASON },
	{ &fleetbench__benchmark__descriptor, "failure", CODEC_MAX_REASON },
	{ &fleetbench__benchmark__descriptor, "parameters", CODEC_MAX_PARAMS },
	{ &fleetbench__benchmark__descriptor, "metrics", CODEC_MAX_METRICS },
	{ &fleetbench__benchmark__descriptor, "windows", CODEC_MAX_WINDOWS },
	{ &fleetbench__metric__descriptor, "samples", CODEC_MAX_SAMPLES },
	{ &fleetbench__comparison__descriptor, "reason", CODEC_MAX_REASON },
	{ &fleetbench__ack__descriptor, "reason", CODEC_MAX_REASON },
	{ &fleetbench__method__descriptor, "only", CODEC_MAX_METHOD_ONLY },
	{ &fleetbench__capabilities__descriptor, "hugepages",
	  CODEC_MAX_HUGEPAGE_SIZES },
	{ &fleetbench__capabilities__descriptor, "io_uring_opcodes",
	  CODEC_MAX_IOURING_NAMES },
	{ &fleetbench__capabilities__descriptor, "io_uring_features",
	  CODEC_MAX_IOURING_NAMES },
	{ &fleetbench__capabilities__descriptor, "cpu_model",
	  CODEC_MAX_CPU_MODEL },
};

/* Probe and its section messages (ProbeHost, ProbeValue, ...) */
static bool is_probe_message(const ProtobufCMessageDescriptor *d)
{
	return !strncmp(d->name, "fleetbench.Probe", 16);
}

static size_t field_limit(const ProtobufCMessageDescriptor *d,
			  const ProtobufCFieldDescriptor *f)
{
	for (size_t i = 0; i < ARRAY_SIZE(field_limits); i++)
		if (field_limits[i].msg == d &&
		    !strcmp(field_limits[i].field, f->name))
			return field_limits[i].max;
	/* the probe's items: file contents and reasons, lists of devices,
	 * policies, counters; generous, so a host's odd value is sent and
	 * seen, yet bounded */
	if (is_probe_message(d))
		return f->label == PROTOBUF_C_LABEL_REPEATED ?
			       CODEC_MAX_PROBE_ENTRIES :
			       CODEC_MAX_PROBE_STRING;
	/* the capabilities' other strings are names: short */
	if (d == &fleetbench__capabilities__descriptor &&
	    f->label != PROTOBUF_C_LABEL_REPEATED)
		return CODEC_MAX_CAP_NAME;
	return f->label == PROTOBUF_C_LABEL_REPEATED ? 0 : CODEC_MAX_STRING;
}

/*
 * Where the walk is: one frame per field entered, with the element's index
 * inside a repeated field. The path text is only made for an error, as
 * formatting it for every sample would cost more than the checks.
 */
struct walk_frame {
	const char *field;
	size_t index;
	bool indexed;
};

struct walk {
	char *err;
	bool wire; /* strings were allocated by an arena */
	bool nonempty; /* required strings must not be empty */
	struct walk_frame frames[16];
	size_t depth;
};

static int walk_fail(struct walk *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Writes "benchmarks[3].metrics[0].samples[7]: <message>" into err. */
static int walk_fail(struct walk *w, const char *fmt, ...)
{
	char path[160] = "", msg[CODEC_ERR_LEN];
	size_t len = 0;
	va_list ap;

	for (size_t i = 0; i < w->depth && len < sizeof(path); i++) {
		const struct walk_frame *f = &w->frames[i];
		int n;

		if (f->indexed)
			n = snprintf(path + len, sizeof(path) - len, "%s%s[%zu]",
				     i ? "." : "", f->field, f->index);
		else
			n = snprintf(path + len, sizeof(path) - len, "%s%s",
				     i ? "." : "", f->field);
		if (n < 0)
			break;
		len += (size_t)n;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return invalid(w->err, "%s: %s", path, msg);
}

static int walk_message(struct walk *w, const ProtobufCMessage *m);

static int walk_string(struct walk *w, const ProtobufCMessageDescriptor *d,
		       const ProtobufCFieldDescriptor *f, const char *s)
{
	size_t len, max;
	ssize_t bad;

	if (!s)
		return walk_fail(w, "missing");
	len = strlen(s);
	/* protobuf-c allocates wire length + 1 and NUL-terminates */
	if (w->wire && s != f->default_value && block_of(s)->size != len + 1)
		return walk_fail(w, "NUL byte at offset %zu", len);
	if (!len && w->nonempty && f->label == PROTOBUF_C_LABEL_REQUIRED)
		return walk_fail(w, "empty");
	/* a repeated field's limit counts its entries, not their bytes */
	max = f->label == PROTOBUF_C_LABEL_REPEATED ? CODEC_MAX_STRING :
						      field_limit(d, f);
	if (len > max)
		return walk_fail(w, "%zu bytes, limit %zu", len, max);
	bad = codec_utf8_invalid_at(s, len);
	if (bad >= 0)
		return walk_fail(w, "invalid UTF-8 at byte %zd", bad);
	return 0;
}

static int walk_double(struct walk *w, double x)
{
	if (isnan(x))
		return walk_fail(w, "not finite (NaN)");
	if (isinf(x))
		return walk_fail(w, "not finite (%cinf)", x > 0 ? '+' : '-');
	return 0;
}

static int walk_value(struct walk *w, const ProtobufCMessageDescriptor *d,
		      const ProtobufCFieldDescriptor *f, const void *v)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING:
		return walk_string(w, d, f, *(char *const *)v);
	case PROTOBUF_C_TYPE_DOUBLE:
		return walk_double(w, *(const double *)v);
	case PROTOBUF_C_TYPE_FLOAT:
		return walk_double(w, *(const float *)v);
	case PROTOBUF_C_TYPE_BYTES: {
		const ProtobufCBinaryData *b = v;

		if (b->len > CODEC_MAX_STRING)
			return walk_fail(w, "%zu bytes, limit %d", b->len,
					 CODEC_MAX_STRING);
		return 0;
	}
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessage *m = *(ProtobufCMessage *const *)v;

		if (!m)
			return walk_fail(w, "missing");
		return walk_message(w, m);
	}
	default:
		return 0; /* integers, bools, enums: every value is in range */
	}
}

static int walk_repeated(struct walk *w, const ProtobufCMessage *m,
			 const ProtobufCFieldDescriptor *f)
{
	const char *base = (const char *)m;
	size_t n = *(const size_t *)(base + f->quantifier_offset);
	const char *arr = *(const char *const *)(base + f->offset);
	size_t max = field_limit(m->descriptor, f);
	size_t size = pbjson_value_size(f->type);

	struct walk_frame *frame = &w->frames[w->depth - 1];

	if (n > max)
		return walk_fail(w, "%zu entries, limit %zu", n, max);
	if (n && !arr)
		return walk_fail(w, "missing");
	frame->indexed = true;
	for (size_t i = 0; i < n; i++) {
		int r;

		/* samples are many: a quick look first */
		if (f->type == PROTOBUF_C_TYPE_DOUBLE &&
		    isfinite(((const double *)arr)[i]))
			continue;
		frame->index = i;
		r = walk_value(w, m->descriptor, f, arr + i * size);
		if (r < 0)
			return r;
	}
	frame->indexed = false;
	return 0;
}

/* A probe message's unknown map against its fields (pbjson.h), once its
 * entries are valid strings. */
static int check_unknown(struct walk *w, const ProtobufCMessage *m)
{
	char why[PBJSON_ERR_LEN];
	size_t at = 0;
	int r;

	/* only the probe's messages have the map: the many others (metrics,
	 * windows) are passed by a prefix, not a field lookup */
	if (!is_probe_message(m->descriptor))
		return 0;
	r = pbjson_unknown_check(m, &at, why);
	if (r == -ENOMEM) {
		snprintf(w->err, CODEC_ERR_LEN, "out of memory");
		return r;
	}
	if (r < 0) {
		w->frames[w->depth - 1] = (struct walk_frame){
			.field = "unknown", .index = at, .indexed = true
		};
		return walk_fail(w, "%s", why);
	}
	return 0;
}

static int walk_message(struct walk *w, const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	int r;

	/* protobuf-c keeps a field numbered 0 whose tag is an overlong varint
	 * (81 00): no encoder writes one, and once repacked it is unreadable */
	for (size_t i = 0; i < m->n_unknown_fields; i++)
		if (m->unknown_fields[i].tag == 0)
			return w->depth ? walk_fail(w, "a field numbered 0") :
					  invalid(w->err, "a field numbered 0");
	if (w->depth == ARRAY_SIZE(w->frames))
		return walk_fail(w, "nested too deep");
	w->depth++;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];

		r = 0;
		w->frames[w->depth - 1] =
			(struct walk_frame){ .field = f->name };
		if (f->label == PROTOBUF_C_LABEL_REPEATED)
			r = walk_repeated(w, m, f);
		else if (pbjson_field_present(m, f))
			r = walk_value(w, d, f, (const char *)m + f->offset);
		if (r < 0)
			return r;
	}
	r = check_unknown(w, m);
	if (r < 0)
		return r;
	w->depth--;
	return 0;
}

static int walk(const ProtobufCMessage *m, bool wire, bool nonempty,
		char err[CODEC_ERR_LEN])
{
	struct walk w = { .err = err, .wire = wire, .nonempty = nonempty };

	return walk_message(&w, m);
}

/* ---- the Report's own rules (docs/wire.md) ---- */

static int check_json_value(struct json_object *o, char err[CODEC_ERR_LEN])
{
	switch (json_object_get_type(o)) {
	case json_type_double:
		/* json-c reads NaN and Infinity; JSON and jsonb do not */
		if (!isfinite(json_object_get_double(o)))
			return invalid(err,
				       "probe_json: NaN or Infinity is not JSON");
		return 0;
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(o); i++) {
			int r = check_json_value(
				json_object_array_get_idx(o, i), err);

			if (r < 0)
				return r;
		}
		return 0;
	case json_type_object: {
		struct json_object_iterator it = json_object_iter_begin(o);
		struct json_object_iterator end = json_object_iter_end(o);

		for (; !json_object_iter_equal(&it, &end);
		     json_object_iter_next(&it)) {
			struct json_object *v = json_object_iter_peek_value(&it);
			int r = check_json_value(v, err);

			if (r < 0)
				return r;
		}
		return 0;
	}
	default:
		return 0;
	}
}

/*
 * Whether JSON text holds the escape \u0000, which PostgreSQL's jsonb
 * refuses and json-c would hide in a key. A backslash that is itself
 * escaped ("\\u0000" in the text) starts no escape: the string holds a
 * backslash and "u0000", which is data like any other.
 */
bool codec_json_nul_escape(const char *s, size_t len)
{
	const char *p = s, *end = s + len;

	while ((p = memmem(p, (size_t)(end - p), "\\u0000", 6))) {
		size_t before = 0;

		while (p - before > s && p[-1 - (ptrdiff_t)before] == '\\')
			before++;
		if (before % 2 == 0)
			return true;
		p++;
	}
	return false;
}

static int check_probe_json(const char *s, char err[CODEC_ERR_LEN])
{
	size_t len = strlen(s);
	struct json_tokener *tok;
	struct json_object *o;
	enum json_tokener_error e;
	size_t end;
	int r;

	if (codec_json_nul_escape(s, len))
		return invalid(err, "probe_json: holds the escape \\u0000");
	/* json-c counts the scalar inside the innermost container too */
	tok = json_tokener_new_ex(CODEC_MAX_JSON_DEPTH + 1);
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	/* the terminating NUL ends a top-level number */
	o = json_tokener_parse_ex(tok, s, (int)len + 1);
	e = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!o && e == json_tokener_success)
		return invalid(err, "probe_json: a JSON null, not an object");
	if (!o) {
		if (e == json_tokener_error_depth)
			return invalid(err,
				       "probe_json: nested deeper than %d levels",
				       CODEC_MAX_JSON_DEPTH);
		return invalid(err, "probe_json: not JSON (%s at byte %zu)",
			       json_tokener_error_desc(e), end);
	}
	if (end != len)
		r = invalid(err, "probe_json: trailing data at byte %zu", end);
	else if (!json_object_is_type(o, json_type_object))
		r = invalid(err, "probe_json: a JSON %s, not an object",
			    json_type_to_name(json_object_get_type(o)));
	else
		r = check_json_value(o, err);
	json_object_put(o);
	return r;
}

static int check_time(const char *name, int64_t t, int64_t now_ms,
		      char err[CODEC_ERR_LEN])
{
	int64_t latest = now_ms > INT64_MAX - CODEC_MAX_FUTURE_MS ?
				 INT64_MAX :
				 now_ms + CODEC_MAX_FUTURE_MS;

	if (t < CODEC_MIN_TIME_MS)
		return invalid(err, "%s: %lld is before 2020-01-01", name,
			       (long long)t);
	if (t > latest)
		return invalid(err,
			       "%s: %lld is more than a day in the future",
			       name, (long long)t);
	return 0;
}

static int check_host(const Fleetbench__Host *h, char err[CODEC_ERR_LEN])
{
	static const char *const sources[] = { "flag", "config", "dmi",
					       "none" };
	const struct {
		const char *name, *value;
	} src[] = {
		{ "host.provider_source", h->provider_source },
		{ "host.instance_type_source", h->instance_type_source },
		{ "host.region_source", h->region_source },
	};
	const char *id = h->machine_id;

	if (strlen(id) != 32 || strspn(id, "0123456789abcdef") != 32)
		return invalid(err,
			       "host.machine_id: not 32 lowercase hex digits");
	for (size_t i = 0; i < ARRAY_SIZE(src); i++) {
		bool ok = !src[i].value || !*src[i].value;

		for (size_t j = 0; !ok && j < ARRAY_SIZE(sources); j++)
			ok = !strcmp(src[i].value, sources[j]);
		if (!ok)
			return invalid(err,
				       "%s: not one of flag, config, dmi, none",
				       src[i].name);
	}
	return 0;
}

/*
 * An int parameter that names a size, a duration or a count cannot be
 * negative; others (counter deltas such as fill_*) can.
 */
static bool param_nonnegative(const char *key)
{
	static const char *const names[] = { "bytes", "threads", "iodepth",
					     "repeats" };
	static const char *const suffixes[] = { "_bytes", "_ms", "_count" };
	size_t len = strlen(key);

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcmp(key, names[i]))
			return true;
	for (size_t i = 0; i < ARRAY_SIZE(suffixes); i++) {
		size_t n = strlen(suffixes[i]);

		if (len > n && !strcmp(key + len - n, suffixes[i]))
			return true;
	}
	return false;
}

static int check_params(const Fleetbench__Benchmark *b, size_t bi,
			char err[CODEC_ERR_LEN])
{
	for (size_t i = 0; i < b->n_parameters; i++) {
		const Fleetbench__Param *p = b->parameters[i];

		if (p->value_case == FLEETBENCH__PARAM__VALUE__NOT_SET)
			return invalid(err,
				       "benchmarks[%zu].parameters[%zu]: no value",
				       bi, i);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(p->key, b->parameters[j]->key))
				return invalid(err,
					       "benchmarks[%zu].parameters[%zu].key: same as parameters[%zu]",
					       bi, i, j);
		if (p->value_case == FLEETBENCH__PARAM__VALUE_INT_VALUE &&
		    p->int_value < 0 && param_nonnegative(p->key))
			return invalid(err,
				       "benchmarks[%zu].parameters[%zu].int_value: %lld is negative (a size, duration or count)",
				       bi, i, (long long)p->int_value);
	}
	return 0;
}

/*
 * Every metric's samples within proto/bounds.h, sample k against the wall
 * time of window k (the repeat it was measured in), so that a figure that
 * cannot be true is refused with the benchmark, variant and metric named.
 */
static int check_metrics(const Fleetbench__Benchmark *b, size_t bi,
			 char err[CODEC_ERR_LEN])
{
	_cleanup_free_ double *wall = NULL;
	char why[CODEC_ERR_LEN];

	for (size_t i = 0; i < b->n_metrics; i++) {
		const Fleetbench__Metric *m = b->metrics[i];

		for (size_t j = 0; j < i; j++)
			if (!strcmp(m->metric, b->metrics[j]->metric))
				return invalid(err,
					       "benchmarks[%zu].metrics[%zu].metric: same as metrics[%zu]",
					       bi, i, j);
	}
	if (b->n_metrics && b->n_windows) {
		wall = malloc(b->n_windows * sizeof(*wall));
		if (!wall)
			return -ENOMEM;
		/* NaN: a window without wall_s bounds nothing */
		for (size_t k = 0; k < b->n_windows; k++)
			wall[k] = b->windows[k]->has_wall_s ?
					  b->windows[k]->wall_s :
					  NAN;
	}
	for (size_t i = 0; i < b->n_metrics; i++) {
		const Fleetbench__Metric *m = b->metrics[i];

		if (bounds_check_metric(m->metric, m->unit, m->samples,
					m->n_samples, wall,
					wall ? b->n_windows : 0, why,
					sizeof(why)) < 0)
			return invalid(err, "benchmarks[%zu] %s/%s: %s", bi,
				       b->benchmark, b->variant, why);
	}
	return 0;
}

/*
 * A variant is ok, skipped (skip_reason) or failed (failure), never both
 * of the last; a failed one measured nothing, so it carries no metrics
 * and no windows. A skipped one may (agents before the failure field
 * could skip a variant after its first repeats).
 */
static int check_status(const Fleetbench__Benchmark *b, size_t bi,
			char err[CODEC_ERR_LEN])
{
	if (!b->failure)
		return 0;
	if (!*b->failure)
		return invalid(err,
			       "benchmarks[%zu].failure: empty (a failure says what failed)",
			       bi);
	if (b->skip_reason)
		return invalid(err,
			       "benchmarks[%zu] %s/%s: both failure and skip_reason (a variant fails or is skipped)",
			       bi, b->benchmark, b->variant);
	if (b->n_metrics || b->n_windows)
		return invalid(err,
			       "benchmarks[%zu] %s/%s: failed, yet carries %zu metrics and %zu windows (a failed variant carries none)",
			       bi, b->benchmark, b->variant, b->n_metrics,
			       b->n_windows);
	return 0;
}

static int check_windows(const Fleetbench__Benchmark *b, size_t bi,
			 char err[CODEC_ERR_LEN])
{
	for (size_t i = 0; i < b->n_windows; i++) {
		const Fleetbench__Window *w = b->windows[i];
		const char *bad = NULL;
		double x = 0;

		if (w->has_steal_pct &&
		    (w->steal_pct < 0 || w->steal_pct > 100))
			bad = "steal_pct", x = w->steal_pct;
		else if (w->has_loadavg1 && w->loadavg1 < 0)
			bad = "loadavg1", x = w->loadavg1;
		else if (w->has_wall_s && w->wall_s < 0)
			bad = "wall_s", x = w->wall_s;
		if (bad)
			return invalid(err,
				       "benchmarks[%zu].windows[%zu].%s: %g is out of range",
				       bi, i, bad, x);
	}
	return 0;
}

static int check_benchmarks(const Fleetbench__Report *r,
			    char err[CODEC_ERR_LEN])
{
	for (size_t i = 0; i < r->n_benchmarks; i++) {
		const Fleetbench__Benchmark *b = r->benchmarks[i];
		int ret;

		for (size_t j = 0; j < i; j++) {
			const Fleetbench__Benchmark *o = r->benchmarks[j];

			if (!strcmp(b->benchmark, o->benchmark) &&
			    !strcmp(b->variant, o->variant))
				return invalid(err,
					       "benchmarks[%zu]: same benchmark and variant as benchmarks[%zu]",
					       i, j);
		}
		ret = check_status(b, i, err);
		if (ret < 0)
			return ret;
		ret = check_params(b, i, err);
		if (ret < 0)
			return ret;
		/* windows first: a negative wall_s is named as such */
		ret = check_windows(b, i, err);
		if (ret < 0)
			return ret;
		ret = check_metrics(b, i, err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* The bytes of a method key: [a-z0-9_+=,.-] and the size suffixes. */
static bool method_key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       strchr("_+=,.-KMGT", c);
}

static int check_method(const Fleetbench__Method *m, char err[CODEC_ERR_LEN])
{
	const struct {
		const char *name;
		int64_t value;
	} counts[] = {
		{ "repeats", m->repeats },
		{ "chase_accesses", m->chase_accesses },
		{ "io_ms", m->io_ms },
		{ "iodepth", m->iodepth },
		{ "fs_increments", m->fs_increments },
	};
	const struct {
		const char *name;
		uint64_t value;
	} sizes[] = {
		{ "chase_bytes", m->chase_bytes },
		{ "fault_bytes", m->fault_bytes },
		{ "file_bytes", m->file_bytes },
		{ "seq_bytes", m->seq_bytes },
		{ "seq_block", m->seq_block },
	};
	size_t klen = strlen(m->key), plen = strlen(m->profile);

	if (plen > CODEC_MAX_METHOD_PROFILE)
		return invalid(err, "method.profile: %zu bytes, limit %d", plen,
			       CODEC_MAX_METHOD_PROFILE);
	if (klen > CODEC_MAX_METHOD_KEY)
		return invalid(err, "method.key: %zu bytes, limit %d", klen,
			       CODEC_MAX_METHOD_KEY);
	for (size_t i = 0; i < klen; i++)
		if (!method_key_char(m->key[i]))
			return invalid(err,
				       "method.key: byte %zu (0x%02x) is not one of [a-z0-9_+=,.-KMGT]",
				       i, (unsigned char)m->key[i]);
	/* the profile is the key's first part, so a key names its profile */
	if (strncmp(m->key, m->profile, plen) ||
	    (m->key[plen] != '\0' && m->key[plen] != '+'))
		return invalid(err,
			       "method.key: does not start with the profile '%s' followed by its end or '+'",
			       m->profile);
	for (size_t i = 0; i < ARRAY_SIZE(counts); i++)
		if (counts[i].value <= 0)
			return invalid(err, "method.%s: %lld is not positive",
				       counts[i].name,
				       (long long)counts[i].value);
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++)
		if (sizes[i].value == 0)
			return invalid(err, "method.%s: 0 is not positive",
				       sizes[i].name);
	for (size_t i = 0; i < m->n_only; i++) {
		size_t len = strlen(m->only[i]);

		if (!len || len > CODEC_MAX_METHOD_NAME)
			return invalid(err,
				       "method.only[%zu]: %zu bytes, expected 1 to %d",
				       i, len, CODEC_MAX_METHOD_NAME);
		if (strspn(m->only[i], "abcdefghijklmnopqrstuvwxyz0123456789_") !=
		    len)
			return invalid(err,
				       "method.only[%zu]: not a benchmark name ([a-z0-9_])",
				       i);
	}
	return 0;
}

static int check_comparisons(const Fleetbench__Report *r,
			     char err[CODEC_ERR_LEN])
{
	for (size_t i = 0; i < r->n_comparisons; i++) {
		const Fleetbench__Comparison *c = r->comparisons[i];

		if (c->has_level && !(c->level > 0 && c->level < 1))
			return invalid(err,
				       "comparisons[%zu].level: %g is outside (0, 1)",
				       i, c->level);
		if (c->has_ci_low && c->has_ci_high && c->ci_low > c->ci_high)
			return invalid(err,
				       "comparisons[%zu].ci_low: above ci_high", i);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(c->name, r->comparisons[j]->name))
				return invalid(err,
					       "comparisons[%zu].name: same as comparisons[%zu]",
					       i, j);
	}
	return 0;
}

/* ---- capabilities ---- */

#define CAP_LOWER "abcdefghijklmnopqrstuvwxyz"
#define CAP_DIGITS "0123456789"
#define CAP_UPPER "ABCDEFGHIJKLMNOPQRSTUVWXYZ" CAP_DIGITS "_"

/* Non-empty and only bytes of set (NULL: printable, no control byte). */
static bool cap_text_ok(const char *s, const char *set)
{
	size_t len = strlen(s);

	if (set)
		return len && strspn(s, set) == len;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return len > 0;
}

/*
 * A setup result: "ok" with errno 0, or an errno's name (strerrorname_np,
 * or the probe's "ERRNO_<n>" for a number without one) with errno
 * 1..CODEC_MAX_ERRNO. An errno without its result makes no sense.
 */
static int check_setup(const char *name, const char *result, bool has_errno,
		       int32_t e, char err[CODEC_ERR_LEN])
{
	bool ok;

	if (!result)
		return has_errno ? invalid(err,
					   "capabilities.%s_errno: set without capabilities.%s",
					   name, name) :
				   0;
	ok = !strcmp(result, "ok");
	if (!ok && (result[0] != 'E' || !cap_text_ok(result + 1, CAP_UPPER)))
		return invalid(err,
			       "capabilities.%s: neither \"ok\" nor an errno name (E[A-Z0-9_]+)",
			       name);
	if (has_errno && ok && e != 0)
		return invalid(err,
			       "capabilities.%s_errno: %d, but %s is \"ok\" (expected 0)",
			       name, e, name);
	if (has_errno && !ok && (e < 1 || e > CODEC_MAX_ERRNO))
		return invalid(err,
			       "capabilities.%s_errno: %d is outside [1, %d] for a failed setup",
			       name, e, CODEC_MAX_ERRNO);
	return 0;
}

/* IORING_OP_* or IORING_FEAT_* names without the prefix, each once. */
static int check_iouring_names(const char *field, char *const *names,
			       size_t n, char err[CODEC_ERR_LEN])
{
	for (size_t i = 0; i < n; i++) {
		if (strlen(names[i]) > CODEC_MAX_CAP_NAME)
			return invalid(err,
				       "capabilities.%s[%zu]: %zu bytes, limit %d",
				       field, i, strlen(names[i]),
				       CODEC_MAX_CAP_NAME);
		if (!cap_text_ok(names[i], CAP_UPPER))
			return invalid(err,
				       "capabilities.%s[%zu]: not a name of [A-Z0-9_]",
				       field, i);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(names[i], names[j]))
				return invalid(err,
					       "capabilities.%s[%zu]: same as %s[%zu]",
					       field, i, field, j);
	}
	return 0;
}

static int check_hugepages(const Fleetbench__Capabilities *c,
			   char err[CODEC_ERR_LEN])
{
	for (size_t i = 0; i < c->n_hugepages; i++) {
		const Fleetbench__HugepagePool *h = c->hugepages[i];

		if (h->size_kb < 4 || (h->size_kb & (h->size_kb - 1)))
			return invalid(err,
				       "capabilities.hugepages[%zu].size_kb: %" PRIu64
				       " is not a power of two of at least 4",
				       i, h->size_kb);
		if (i && h->size_kb <= c->hugepages[i - 1]->size_kb)
			return invalid(err,
				       "capabilities.hugepages[%zu].size_kb: %" PRIu64
				       " is not above hugepages[%zu]'s (sizes ascend, each once)",
				       i, h->size_kb, i - 1);
		if (h->has_nr && h->has_free && h->free > h->nr)
			return invalid(err,
				       "capabilities.hugepages[%zu].free: %" PRIu64
				       " is above nr %" PRIu64,
				       i, h->free, h->nr);
	}
	return 0;
}

/*
 * Every capability the collector stores in a typed column keeps the shape
 * the SQL expects (docs/wire.md); the walk has checked UTF-8 and lengths.
 */
static int check_capabilities(const Fleetbench__Capabilities *c,
			      char err[CODEC_ERR_LEN])
{
	const struct {
		const char *name, *value, *set, *what;
	} texts[] = {
		{ "thp_enabled", c->thp_enabled, CAP_LOWER "_+", "[a-z_+]" },
		{ "thp_defrag", c->thp_defrag, CAP_LOWER "_+", "[a-z_+]" },
		{ "thp_shmem_enabled", c->thp_shmem_enabled, CAP_LOWER "_+",
		  "[a-z_+]" },
		{ "vm", c->vm, CAP_LOWER CAP_DIGITS "_.+-", "[a-z0-9_.+-]" },
		{ "container", c->container, CAP_LOWER CAP_DIGITS "_.+-",
		  "[a-z0-9_.+-]" },
		{ "cpu_model", c->cpu_model, NULL, "printable" },
	};
	int r;

	for (size_t i = 0; i < ARRAY_SIZE(texts); i++)
		if (texts[i].value &&
		    !cap_text_ok(texts[i].value, texts[i].set))
			return invalid(err, "capabilities.%s: %s, not %s",
				       texts[i].name,
				       *texts[i].value ? "bad bytes" : "empty",
				       texts[i].what);
	if (c->has_io_uring_disabled &&
	    (c->io_uring_disabled < 0 || c->io_uring_disabled > 2))
		return invalid(err,
			       "capabilities.io_uring_disabled: %d is not 0, 1 or 2",
			       c->io_uring_disabled);
	r = check_setup("io_uring_setup", c->io_uring_setup,
			c->has_io_uring_setup_errno, c->io_uring_setup_errno,
			err);
	if (r == 0)
		r = check_setup("sqpoll", c->sqpoll, c->has_sqpoll_errno,
				c->sqpoll_errno, err);
	if (r == 0)
		r = check_iouring_names("io_uring_opcodes", c->io_uring_opcodes,
					c->n_io_uring_opcodes, err);
	if (r == 0)
		r = check_iouring_names("io_uring_features",
					c->io_uring_features,
					c->n_io_uring_features, err);
	if (r == 0)
		r = check_hugepages(c, err);
	if (r < 0)
		return r;
	if (c->has_vcpus && (c->vcpus < 1 || c->vcpus > CODEC_MAX_VCPUS))
		return invalid(err,
			       "capabilities.vcpus: %u is outside [1, %d]",
			       c->vcpus, CODEC_MAX_VCPUS);
	if (c->has_memory_kb && c->memory_kb == 0)
		return invalid(err, "capabilities.memory_kb: 0 is not positive");
	return 0;
}

static int validate_report(const Fleetbench__Report *r, int64_t now_ms,
			   bool wire, char err[CODEC_ERR_LEN])
{
	int ret;

	err[0] = '\0';
	if (!r)
		return invalid(err, "report: missing");
	/* first, so a newer schema is named as such, not by a symptom */
	if (r->schema_version != FLEETBENCH__SCHEMA_VERSION__CURRENT)
		return invalid(err,
			       "schema_version: %u is not supported (expected %d)",
			       r->schema_version,
			       FLEETBENCH__SCHEMA_VERSION__CURRENT);
	if (!r->run_id || !*r->run_id)
		return invalid(err, "run_id: missing");
	if (!codec_uuid_valid(r->run_id))
		return invalid(err, "run_id: not a canonical lowercase UUID");
	ret = walk(&r->base, wire, true, err);
	if (ret < 0)
		return ret;
	ret = check_host(r->host, err);
	if (ret < 0)
		return ret;
	ret = check_time("started_unix_ms", r->started_unix_ms, now_ms, err);
	if (ret < 0)
		return ret;
	ret = check_time("finished_unix_ms", r->finished_unix_ms, now_ms, err);
	if (ret < 0)
		return ret;
	if (r->finished_unix_ms < r->started_unix_ms)
		return invalid(err,
			       "finished_unix_ms: before started_unix_ms");
	/* the probe, typed (field 15) or, from older agents, as JSON text */
	if (r->probe && r->probe_json)
		return invalid(err, "probe_json: set beside probe; a report holds one of them");
	if (!r->probe && !r->probe_json)
		return invalid(err, "probe: missing (and no probe_json)");
	if (r->probe_json && !*r->probe_json)
		return invalid(err, "probe_json: empty");
	if (r->probe_json) {
		ret = check_probe_json(r->probe_json, err);
		if (ret < 0)
			return ret;
	}
	if (r->method) {
		ret = check_method(r->method, err);
		if (ret < 0)
			return ret;
	}
	if (r->capabilities) {
		ret = check_capabilities(r->capabilities, err);
		if (ret < 0)
			return ret;
	}
	ret = check_benchmarks(r, err);
	if (ret < 0)
		return ret;
	return check_comparisons(r, err);
}

static int64_t now_unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the API ---- */

int codec_pack_report(const Fleetbench__Report *r, uint8_t **ret,
		      size_t *ret_len)
{
	if (!r || !protobuf_c_message_check(&r->base))
		return -EINVAL;
	return pack_message(&r->base, CODEC_MAX_MESSAGE, ret, ret_len);
}

int codec_validate_report(const Fleetbench__Report *r, int64_t now_ms,
			  char err[CODEC_ERR_LEN])
{
	return validate_report(r, now_ms, false, err);
}

int codec_validate_capabilities(const Fleetbench__Capabilities *c,
				char err[CODEC_ERR_LEN])
{
	int ret = walk(&c->base, false, true, err);

	return ret < 0 ? ret : check_capabilities(c, err);
}

int codec_unpack_report(const uint8_t *data, size_t len,
			Fleetbench__Report **ret, char err[CODEC_ERR_LEN])
{
	ProtobufCMessage *m;
	int r;

	*ret = NULL;
	err[0] = '\0';
	if (len > CODEC_MAX_MESSAGE) {
		snprintf(err, CODEC_ERR_LEN,
			 "message of %zu bytes is over the limit of %u bytes",
			 len, CODEC_MAX_MESSAGE);
		return -EMSGSIZE;
	}
	r = unpack_message(&fleetbench__report__descriptor, data, len,
			   CODEC_UNPACK_BUDGET, &m, err);
	if (r < 0)
		return r;
	r = validate_report((Fleetbench__Report *)m, now_unix_ms(), true, err);
	if (r < 0 && r != -EINVAL) {
		free_message(m);
		return r;
	}
	*ret = (Fleetbench__Report *)m;
	return r;
}

void codec_free_report(Fleetbench__Report *r)
{
	free_message(r ? &r->base : NULL);
}

int codec_pack_ack(const char *run_id, Fleetbench__Ack__Status status,
		   const char *reason, uint8_t **ret, size_t *ret_len)
{
	Fleetbench__Ack a = FLEETBENCH__ACK__INIT;
	_cleanup_free_ char *cut = NULL;

	/* a run_id that is not a UUID "could not be read": send it empty */
	a.run_id = (char *)(codec_uuid_valid(run_id) ? run_id : "");
	a.status = status;
	if (reason) {
		size_t len = strnlen(reason, CODEC_MAX_REASON);
		ssize_t bad = codec_utf8_invalid_at(reason, len);

		/* cut before the first invalid byte, or a split character */
		cut = strndup(reason, bad >= 0 ? (size_t)bad : len);
		if (!cut)
			return -ENOMEM;
		a.reason = cut;
	}
	return pack_message(&a.base, CODEC_MAX_ACK, ret, ret_len);
}

int codec_unpack_ack(const uint8_t *data, size_t len, Fleetbench__Ack **ret)
{
	char err[CODEC_ERR_LEN];
	ProtobufCMessage *m;
	Fleetbench__Ack *a;
	int r;

	if (len > CODEC_MAX_ACK)
		return -EBADMSG;
	r = unpack_message(&fleetbench__ack__descriptor, data, len,
			   CODEC_ACK_BUDGET, &m, err);
	if (r < 0)
		return r;
	a = (Fleetbench__Ack *)m;
	/* an Ack's run_id is empty when the Report's could not be read */
	if (walk(m, true, false, err) < 0 ||
	    a->status < FLEETBENCH__ACK__STATUS__COMMITTED ||
	    a->status > FLEETBENCH__ACK__STATUS__GRANTED ||
	    (*a->run_id && !codec_uuid_valid(a->run_id))) {
		free_message(m);
		return -EBADMSG;
	}
	*ret = a;
	return 0;
}

void codec_free_ack(Fleetbench__Ack *a)
{
	free_message(a ? &a->base : NULL);
}

/* ---- offers ---- */

/* field 100, length-delimited: (100 << 3 | 2) as a varint */
static const uint8_t offer_tag[2] = { 0xa2, 0x06 };

int codec_pack_offer(const char *run_id, size_t bytes, uint8_t **ret,
		     size_t *ret_len)
{
	Fleetbench__Offer o = FLEETBENCH__OFFER__INIT;

	if (!codec_uuid_valid(run_id) || bytes < 1 || bytes > CODEC_MAX_MESSAGE)
		return -EINVAL;
	o.offer_run_id = (char *)run_id;
	o.offer_bytes = (uint32_t)bytes;
	return pack_message(&o.base, CODEC_MAX_OFFER, ret, ret_len);
}

bool codec_is_offer(const uint8_t *data, size_t len)
{
	return len >= sizeof(offer_tag) &&
	       !memcmp(data, offer_tag, sizeof(offer_tag));
}

int codec_unpack_offer(const uint8_t *data, size_t len, char ret_run_id[37],
		       uint32_t *ret_bytes, char err[CODEC_ERR_LEN])
{
	ProtobufCMessage *m;
	Fleetbench__Offer *o;
	int r;

	if (len > CODEC_MAX_OFFER) {
		snprintf(err, CODEC_ERR_LEN, "an Offer of %zu bytes (at most %d)",
			 len, CODEC_MAX_OFFER);
		return -EBADMSG;
	}
	r = unpack_message(&fleetbench__offer__descriptor, data, len,
			   CODEC_ACK_BUDGET, &m, err);
	if (r < 0)
		return r == -ENOMEM ? r : -EBADMSG;
	o = (Fleetbench__Offer *)m;
	r = -EBADMSG;
	if (m->n_unknown_fields)
		snprintf(err, CODEC_ERR_LEN,
			 "an Offer with fields it does not have");
	else if (!codec_uuid_valid(o->offer_run_id))
		snprintf(err, CODEC_ERR_LEN,
			 "offer_run_id: not a canonical lowercase UUID");
	else if (o->offer_bytes < 1 || o->offer_bytes > CODEC_MAX_MESSAGE)
		snprintf(err, CODEC_ERR_LEN,
			 "offer_bytes: %" PRIu32 " is outside 1 to %u",
			 o->offer_bytes, CODEC_MAX_MESSAGE);
	else
		r = 0;
	if (r == 0) {
		memcpy(ret_run_id, o->offer_run_id, 37);
		*ret_bytes = o->offer_bytes;
	}
	free_message(m);
	return r;
}
