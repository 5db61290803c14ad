/* SPDX-License-Identifier: MIT */
/* The probe JSON report and the bench messages as one wire Report
 * (report.h). */
#include "report.h"

#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "codec.h"
#include "log.h"
#include "pbjson.h"

#define PATH_LEN 64

static int fail(char err[REPORT_ERR_LEN], int r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char err[REPORT_ERR_LEN], int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, REPORT_ERR_LEN, fmt, ap);
	va_end(ap);
	return r;
}

static int oom(char err[REPORT_ERR_LEN])
{
	return fail(err, -ENOMEM, "out of memory building the report");
}

/* o[key], or NULL when o is not an object, key is absent or its value is
 * null (json-c holds a JSON null as NULL). */
static struct json_object *member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

static int dup_str(char **dst, const char *s, char err[REPORT_ERR_LEN])
{
	*dst = strdup(s);
	return *dst ? 0 : oom(err);
}

/* Arrays are allocated one element larger so that n == 0 still gets a
 * pointer to check; protobuf-c only reads the first n. */
static void *alloc_array(size_t n, size_t size)
{
	return calloc(n + 1, size);
}

/* ---- the probe ---- */

/*
 * Copies the probe's string item section.key into *dst. An item that is
 * unknown ({"unknown": reason}), absent or empty is left unset, or refused
 * with -ENODATA when required.
 */
static int probe_item(struct json_object *probe, const char *section,
		      const char *key, bool required, char **dst,
		      char err[REPORT_ERR_LEN])
{
	struct json_object *v = member(member(probe, section), key);
	struct json_object *why = member(v, "unknown");

	if (json_object_is_type(v, json_type_string) &&
	    json_object_get_string_len(v) > 0)
		return dup_str(dst, json_object_get_string(v), err);
	if (!required)
		return 0;
	if (json_object_is_type(why, json_type_string))
		return fail(err, -ENODATA, "probe item %s.%s is unknown (%s)",
			    section, key, json_object_get_string(why));
	return fail(err, -ENODATA, "probe item %s.%s is %s", section, key,
		    v ? "not a non-empty string" : "missing");
}

/* One label of the probe's labels section: its value when it is a string,
 * and its source. */
static int probe_label(struct json_object *probe, const char *name,
		       char **value, char **source, char err[REPORT_ERR_LEN])
{
	struct json_object *l = member(member(probe, "labels"), name);
	struct json_object *v = member(l, "value"), *s = member(l, "source");
	int r = 0;

	if (json_object_is_type(v, json_type_string) &&
	    json_object_get_string_len(v) > 0)
		r = dup_str(value, json_object_get_string(v), err);
	if (r == 0 && json_object_is_type(s, json_type_string))
		r = dup_str(source, json_object_get_string(s), err);
	return r;
}

static int convert_host(struct json_object *probe, Fleetbench__Host *h,
			char err[REPORT_ERR_LEN])
{
	struct json_object *id = member(member(probe, "host"), "machine_id");
	struct json_object *why = member(id, "unknown");
	int r;

	if (!json_object_is_type(id, json_type_string) ||
	    !json_object_get_string_len(id))
		return fail(err, -ENODATA,
			    "the probe found no machine id (host.machine_id: %s): the collector keys hosts by it; create /etc/machine-id (systemd-machine-id-setup)",
			    json_object_is_type(why, json_type_string) ?
				    json_object_get_string(why) :
			    id ? "not a non-empty string" :
				 "missing");
	r = dup_str(&h->machine_id, json_object_get_string(id), err);
	if (r == 0)
		r = probe_item(probe, "host", "hostname", true, &h->hostname,
			       err);
	if (r == 0)
		r = probe_label(probe, "provider", &h->provider,
				&h->provider_source, err);
	if (r == 0)
		r = probe_label(probe, "instance_type", &h->instance_type,
				&h->instance_type_source, err);
	if (r == 0)
		r = probe_label(probe, "region", &h->region, &h->region_source,
				err);
	return r;
}

static int convert_kernel(struct json_object *probe, Fleetbench__Kernel *k,
			  char err[REPORT_ERR_LEN])
{
	int r = probe_item(probe, "kernel", "release", true, &k->release, err);

	if (r == 0)
		r = probe_item(probe, "kernel", "version", false, &k->version,
			       err);
	if (r == 0)
		r = probe_item(probe, "kernel", "cmdline", false, &k->cmdline,
			       err);
	return r;
}

/* ---- the capabilities ---- */

/*
 * The probe items that the collector stores in typed columns
 * (docs/probe.md), each to the Capabilities field of the same meaning. The
 * field's descriptor says how to read the item; a message's fields are
 * read from the members of the same name (hugetlb.sizes[].size_kb, nr and
 * free into HugepagePool).
 */
static const struct {
	const char *path; /* in the probe object, '.' between members */
	const char *field;
} caps_map[] = {
	{ "thp.enabled.selected", "thp_enabled" },
	{ "thp.defrag.selected", "thp_defrag" },
	{ "thp.shmem_enabled.selected", "thp_shmem_enabled" },
	{ "hugetlb.sizes", "hugepages" },
	{ "io_uring.disabled", "io_uring_disabled" },
	{ "io_uring.setup", "io_uring_setup" },
	{ "io_uring.setup_errno", "io_uring_setup_errno" },
	{ "io_uring.sqpoll", "sqpoll" },
	{ "io_uring.sqpoll_errno", "sqpoll_errno" },
	{ "io_uring.opcodes", "io_uring_opcodes" },
	{ "io_uring.features", "io_uring_features" },
	{ "host.vcpus_online", "vcpus" },
	{ "host.memory_total_kb", "memory_kb" },
	{ "host.cpu_model", "cpu_model" },
	{ "virt.vm.name", "vm" },
	{ "virt.container.name", "container" },
};

static struct json_object *at_path(struct json_object *o, const char *path)
{
	char key[PATH_LEN];

	while (o && *path) {
		size_t n = strcspn(path, ".");

		snprintf(key, sizeof(key), "%.*s", (int)n, path);
		o = member(o, key);
		path += n + (path[n] == '.');
	}
	return o;
}

static int fill_message(ProtobufCMessage *m, struct json_object *o);

/*
 * One value of field f from v into dst. Returns 1 when set, 0 when v is not
 * a value of the field's type and range (an {"unknown": ...} item, null,
 * absent: the field stays unset), or -ENOMEM.
 */
static int caps_value(const ProtobufCFieldDescriptor *f, void *dst,
		      struct json_object *v)
{
	const ProtobufCMessageDescriptor *d = f->descriptor;
	ProtobufCMessage *sub;
	int64_t x = json_object_get_int64(v);
	int r;

	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING:
		if (!json_object_is_type(v, json_type_string) ||
		    !json_object_get_string_len(v))
			return 0;
		*(char **)dst = strdup(json_object_get_string(v));
		return *(char **)dst ? 1 : -ENOMEM;
	case PROTOBUF_C_TYPE_INT32:
		if (!json_object_is_type(v, json_type_int) || x < INT32_MIN ||
		    x > INT32_MAX)
			return 0;
		*(int32_t *)dst = (int32_t)x;
		return 1;
	case PROTOBUF_C_TYPE_UINT32:
		if (!json_object_is_type(v, json_type_int) || x < 0 ||
		    x > UINT32_MAX)
			return 0;
		*(uint32_t *)dst = (uint32_t)x;
		return 1;
	case PROTOBUF_C_TYPE_UINT64:
		if (!json_object_is_type(v, json_type_int) || x < 0)
			return 0;
		*(uint64_t *)dst = (uint64_t)x;
		return 1;
	case PROTOBUF_C_TYPE_MESSAGE:
		if (!json_object_is_type(v, json_type_object))
			return 0;
		sub = malloc(d->sizeof_message);
		if (!sub)
			return -ENOMEM;
		protobuf_c_message_init(d, sub);
		r = fill_message(sub, v);
		if (r <= 0) {
			protobuf_c_message_free_unpacked(sub, NULL);
			return r;
		}
		*(ProtobufCMessage **)dst = sub;
		return 1;
	default:
		return 0; /* no capability has another type */
	}
}

/* Field f of m from v: a value, or an array's values that fit, in order. */
static int caps_field(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
		      struct json_object *v)
{
	char *base = (char *)m;
	size_t size = pbjson_value_size(f->type), *n;
	char **arr;
	int r;

	if (f->label != PROTOBUF_C_LABEL_REPEATED) {
		/* a string or message is set by its pointer, others by has_ */
		bool flag = f->label == PROTOBUF_C_LABEL_OPTIONAL &&
			    f->type != PROTOBUF_C_TYPE_STRING &&
			    f->type != PROTOBUF_C_TYPE_MESSAGE;
		protobuf_c_boolean *has =
			(protobuf_c_boolean *)(base + f->quantifier_offset);

		r = caps_value(f, base + f->offset, v);
		if (r > 0 && flag)
			*has = 1;
		return r;
	}
	if (!json_object_is_type(v, json_type_array))
		return 0;
	n = (size_t *)(base + f->quantifier_offset);
	arr = (char **)(base + f->offset);
	*arr = alloc_array(json_object_array_length(v), size);
	if (!*arr)
		return -ENOMEM;
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		r = caps_value(f, *arr + *n * size,
			       json_object_array_get_idx(v, i));
		if (r < 0)
			return r;
		*n += (size_t)r;
	}
	return 1;
}

/* Every field of m from o's member of its name. Returns 1, or 0 when a
 * required field is not there (m is then of no use), or -ENOMEM. */
static int fill_message(ProtobufCMessage *m, struct json_object *o)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;

	for (unsigned i = 0; i < d->n_fields; i++) {
		int r = caps_field(m, &d->fields[i],
				   member(o, d->fields[i].name));

		if (r < 0 || (r == 0 &&
			      d->fields[i].label == PROTOBUF_C_LABEL_REQUIRED))
			return r;
	}
	return 1;
}

static int convert_capabilities(struct json_object *probe,
				Fleetbench__Report *rep,
				char err[REPORT_ERR_LEN])
{
	const ProtobufCMessageDescriptor *d =
		&fleetbench__capabilities__descriptor;

	rep->capabilities = malloc(sizeof(*rep->capabilities));
	if (!rep->capabilities)
		return oom(err);
	fleetbench__capabilities__init(rep->capabilities);
	for (size_t i = 0; i < ARRAY_SIZE(caps_map); i++) {
		const ProtobufCFieldDescriptor *f =
			protobuf_c_message_descriptor_get_field_by_name(
				d, caps_map[i].field);

		if (caps_field(&rep->capabilities->base, f,
			       at_path(probe, caps_map[i].path)) < 0)
			return oom(err);
	}
	return 0;
}

/*
 * A probe can read a value the codec refuses as a capability (a hugetlb
 * pool read while it changed: free > nr). The run must not be lost for
 * it: the capabilities go, with a warning, and the collector derives its
 * typed columns from probe_json as it does for older agents.
 */
static void drop_refused_capabilities(Fleetbench__Report *rep)
{
	char why[CODEC_ERR_LEN];

	if (!rep->capabilities ||
	    codec_validate_capabilities(rep->capabilities, why) == 0)
		return;
	log_warn("the report goes without its typed capabilities: %s", why);
	fleetbench__capabilities__free_unpacked(rep->capabilities, NULL);
	rep->capabilities = NULL;
}

/* ---- the bench part ---- */

/*
 * A copy of bench's fields moved into rep: the copy is bench packed and
 * unpacked (every part from malloc, as report_free() wants), so rep owns
 * its parts and the caller keeps bench.
 */
static int copy_bench(const Fleetbench__BenchRun *bench,
		      Fleetbench__Report *rep, char err[REPORT_ERR_LEN])
{
	size_t len = fleetbench__bench_run__get_packed_size(bench);
	_cleanup_free_ uint8_t *buf = malloc(len + 1);
	Fleetbench__BenchRun *b;

	if (!buf)
		return oom(err);
	fleetbench__bench_run__pack(bench, buf);
	b = fleetbench__bench_run__unpack(NULL, len, buf);
	if (!b)
		return oom(err); /* what was just packed unpacks, memory aside */
	rep->benchmarks = TAKE_PTR(b->benchmarks);
	rep->n_benchmarks = b->n_benchmarks;
	rep->comparisons = TAKE_PTR(b->comparisons);
	rep->n_comparisons = b->n_comparisons;
	rep->profile = TAKE_PTR(b->profile);
	rep->has_seed = b->has_seed;
	rep->seed = b->seed;
	rep->method = TAKE_PTR(b->method);
	b->n_benchmarks = b->n_comparisons = 0;
	fleetbench__bench_run__free_unpacked(b, NULL);
	return 0;
}

/* ---- the API ---- */

int report_probe(struct json_object *probe, Fleetbench__Probe **ret,
		 char err[REPORT_ERR_LEN])
{
	char why[PBJSON_ERR_LEN];
	ProtobufCMessage *m;
	int r = pbjson_to_message(&fleetbench__probe__descriptor, probe, &m,
				  why);

	if (r == -ENOMEM)
		return oom(err);
	if (r < 0)
		return fail(err, r, "the probe report does not fit the .proto: %s",
			    why);
	*ret = (Fleetbench__Probe *)m;
	return 0;
}

int report_build(struct json_object *probe, const Fleetbench__BenchRun *bench,
		 int64_t started_unix_ms, int64_t finished_unix_ms,
		 Fleetbench__Report **ret, char err[REPORT_ERR_LEN])
{
	Fleetbench__Report *rep;
	char run_id[37];
	int r;

	err[0] = '\0';
	if (!json_object_is_type(probe, json_type_object))
		return fail(err, -EINVAL, "the probe report is not an object");
	r = codec_uuid_new(run_id);
	if (r < 0)
		return fail(err, r, "cannot make a run id: %s", strerror(-r));

	rep = malloc(sizeof(*rep));
	if (!rep)
		return oom(err);
	fleetbench__report__init(rep);
	rep->schema_version = FLEETBENCH__SCHEMA_VERSION__CURRENT;
	rep->started_unix_ms = started_unix_ms;
	rep->finished_unix_ms = finished_unix_ms;
	rep->host = malloc(sizeof(*rep->host));
	if (rep->host)
		fleetbench__host__init(rep->host);
	rep->kernel = malloc(sizeof(*rep->kernel));
	if (rep->kernel)
		fleetbench__kernel__init(rep->kernel);
	if (!rep->host || !rep->kernel) {
		r = oom(err);
		goto out;
	}

	r = dup_str(&rep->run_id, run_id, err);
	if (r == 0)
		r = dup_str(&rep->agent_version, FLEETBENCH_VERSION, err);
	if (r == 0)
		r = convert_host(probe, rep->host, err);
	if (r == 0)
		r = convert_kernel(probe, rep->kernel, err);
	if (r == 0)
		r = convert_capabilities(probe, rep, err);
	if (r < 0)
		goto out;
	r = report_probe(probe, &rep->probe, err);
	if (r == 0 && bench)
		r = copy_bench(bench, rep, err);
	if (r == 0)
		drop_refused_capabilities(rep);
out:
	if (r < 0) {
		report_free(rep);
		return r;
	}
	*ret = rep;
	return 0;
}

/*
 * Every string, array and sub-message above comes from malloc, so
 * protobuf-c's own walk frees the tree with the default allocator (free),
 * skipping the oneof members not in use.
 */
void report_free(Fleetbench__Report *r)
{
	if (r)
		fleetbench__report__free_unpacked(r, NULL);
}
