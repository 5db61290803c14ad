/* SPDX-License-Identifier: MIT */
/*
 * The codec's generic checks, driven by protobuf-c's descriptors: every
 * field of every message, with the limits of docs/wire.md.
 */
#include "codec.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "cleanup.h"
#include "codec_internal.h"
#include "pbjson.h"

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
	{ &fleetbench__report__descriptor, "tags", CODEC_MAX_TAGS },
	{ &fleetbench__report__descriptor, "costs", CODEC_MAX_COSTS },
	{ &fleetbench__bench_run__descriptor, "costs", CODEC_MAX_COSTS },
	{ &fleetbench__cost__descriptor, "benchmark", CODEC_MAX_COST_NAME },
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

static size_t field_limit_of(const ProtobufCMessageDescriptor *d,
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
 * The limits of every field of the messages a walk starts from and of
 * those they hold, worked out once (issue 37, the ingest rate: the search
 * above, for each string and repeated field of every report, was 4% of
 * the collector's time): per message, one limit per field, found by the
 * descriptor's address. A message not reached from these is looked up as
 * above.
 */
#define LIMITS_SLOTS 256

/* A message's limits, found once for each message walked. */
struct msg_limits {
	const ProtobufCMessageDescriptor *d;
	size_t *max; /* by field; NULL: field_limit_of() each time */
	bool probe; /* is_probe_message() */
};

static struct msg_limits limits[LIMITS_SLOTS];
static pthread_once_t limits_once = PTHREAD_ONCE_INIT;

static size_t limits_slot(const ProtobufCMessageDescriptor *d)
{
	return ((uintptr_t)d >> 4) % LIMITS_SLOTS;
}

static void limits_add(const ProtobufCMessageDescriptor *d)
{
	size_t i = limits_slot(d), n = 0;
	size_t *max;

	while (limits[i].d && limits[i].d != d && n++ < LIMITS_SLOTS)
		i = (i + 1) % LIMITS_SLOTS;
	if (limits[i].d) /* there already, or no room: looked up each time */
		return;
	max = malloc((d->n_fields ? d->n_fields : 1) * sizeof(*max));
	if (!max)
		return;
	for (unsigned k = 0; k < d->n_fields; k++)
		max[k] = field_limit_of(d, &d->fields[k]);
	limits[i] = (struct msg_limits){ .d = d,
					 .max = max,
					 .probe = is_probe_message(d) };
	for (unsigned k = 0; k < d->n_fields; k++)
		if (d->fields[k].type == PROTOBUF_C_TYPE_MESSAGE)
			limits_add(d->fields[k].descriptor);
}

static void limits_make(void)
{
	limits_add(&fleetbench__report__descriptor);
	limits_add(&fleetbench__ack__descriptor);
	limits_add(&fleetbench__capabilities__descriptor);
}

static struct msg_limits limits_of(const ProtobufCMessageDescriptor *d)
{
	size_t i = limits_slot(d), n = 0;

	pthread_once(&limits_once, limits_make);
	while (limits[i].d && n++ < LIMITS_SLOTS) {
		if (limits[i].d == d)
			return limits[i];
		i = (i + 1) % LIMITS_SLOTS;
	}
	return (struct msg_limits){ .d = d, .probe = is_probe_message(d) };
}

static size_t field_limit(const struct msg_limits *l,
			  const ProtobufCFieldDescriptor *f)
{
	return l->max ? l->max[f - l->d->fields] : field_limit_of(l->d, f);
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
	return codec_invalid(w->err, "%s: %s", path, msg);
}

static int walk_message(struct walk *w, const ProtobufCMessage *m);

static int walk_string(struct walk *w, const struct msg_limits *l,
		       const ProtobufCFieldDescriptor *f, const char *s)
{
	bool wire = w->wire && s != f->default_value;
	size_t len, max;
	ssize_t bad = -1;

	if (!s)
		return walk_fail(w, "missing");
	/* protobuf-c allocates wire length + 1 and NUL-terminates: the
	 * length is known, and the UTF-8 check, which refuses NUL, finds a
	 * NUL inside it (a strlen() of every string was 4% of the ingest) */
	len = wire ? codec_block_size(s) - 1 : strlen(s);
	/* a repeated field's limit counts its entries, not their bytes */
	max = f->label == PROTOBUF_C_LABEL_REPEATED ? CODEC_MAX_STRING :
						      field_limit(l, f);
	if (len <= max)
		bad = codec_utf8_invalid_at(s, len);
	if (wire && (bad >= 0 || len > max) && strlen(s) != len)
		return walk_fail(w, "NUL byte at offset %zu", strlen(s));
	if (!len && w->nonempty && f->label == PROTOBUF_C_LABEL_REQUIRED)
		return walk_fail(w, "empty");
	if (len > max)
		return walk_fail(w, "%zu bytes, limit %zu", len, max);
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

static int walk_value(struct walk *w, const struct msg_limits *l,
		      const ProtobufCFieldDescriptor *f, const void *v)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING:
		return walk_string(w, l, f, *(char *const *)v);
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
			 const struct msg_limits *l,
			 const ProtobufCFieldDescriptor *f)
{
	const char *base = (const char *)m;
	size_t n = *(const size_t *)(base + f->quantifier_offset);
	const char *arr = *(const char *const *)(base + f->offset);
	size_t max = field_limit(l, f);
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
		r = walk_value(w, l, f, arr + i * size);
		if (r < 0)
			return r;
	}
	frame->indexed = false;
	return 0;
}

/* A probe message's unknown map against its fields (pbjson.h), once its
 * entries are valid strings. */
static int check_unknown(struct walk *w, const ProtobufCMessage *m,
			 const struct msg_limits *l)
{
	char why[PBJSON_ERR_LEN];
	size_t at = 0;
	int r;

	/* only the probe's messages have the map: the many others (metrics,
	 * windows) are passed by a prefix, not a field lookup */
	if (!l->probe)
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
	const struct msg_limits l = limits_of(d);
	int r;

	/* protobuf-c keeps a field numbered 0 whose tag is an overlong varint
	 * (81 00): no encoder writes one, and once repacked it is unreadable */
	for (size_t i = 0; i < m->n_unknown_fields; i++)
		if (m->unknown_fields[i].tag == 0)
			return w->depth ?
				       walk_fail(w, "a field numbered 0") :
				       codec_invalid(w->err,
						     "a field numbered 0");
	if (w->depth == ARRAY_SIZE(w->frames))
		return walk_fail(w, "nested too deep");
	w->depth++;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];

		r = 0;
		w->frames[w->depth - 1] =
			(struct walk_frame){ .field = f->name };
		if (f->label == PROTOBUF_C_LABEL_REPEATED)
			r = walk_repeated(w, m, &l, f);
		else if (pbjson_field_present(m, f))
			r = walk_value(w, &l, f, (const char *)m + f->offset);
		if (r < 0)
			return r;
	}
	r = check_unknown(w, m, &l);
	if (r < 0)
		return r;
	w->depth--;
	return 0;
}

int codec_walk(const ProtobufCMessage *m, bool wire, bool nonempty,
	       char err[CODEC_ERR_LEN])
{
	struct walk w = { .err = err, .wire = wire, .nonempty = nonempty };

	return walk_message(&w, m);
}

