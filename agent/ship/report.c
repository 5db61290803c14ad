/* SPDX-License-Identifier: MIT */
/* The probe JSON report and the bench messages as one wire Report
 * (report.h): the probe read into its typed message, the typed columns
 * taken from that message by a table of item paths. */
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

static int dup_str(char **dst, const char *s, char err[REPORT_ERR_LEN])
{
	*dst = strdup(s);
	return *dst ? 0 : oom(err);
}

/* ---- the typed columns, from the typed probe ---- */

/*
 * Where each field of Host, Kernel and Capabilities comes from: the probe
 * item at path ('.' between field names, from Probe), the same item the
 * collector stores in runs.probe (docs/wire.md lists both). A message item
 * fills a message field by the fields of the same name
 * (hugetlb.sizes[].size_kb, nr and free into HugepagePool).
 */
struct derive {
	const char *field;
	const char *path;
};

static const struct derive host_items[] = {
	{ "machine_id", "host.machine_id" },
	{ "hostname", "host.hostname" },
	{ "provider", "labels.provider.value" },
	{ "provider_source", "labels.provider.source" },
	{ "instance_type", "labels.instance_type.value" },
	{ "instance_type_source", "labels.instance_type.source" },
	{ "region", "labels.region.value" },
	{ "region_source", "labels.region.source" },
};

static const struct derive kernel_items[] = {
	{ "release", "kernel.release" },
	{ "version", "kernel.version" },
	{ "cmdline", "kernel.cmdline" },
};

static const struct derive caps_items[] = {
	{ "thp_enabled", "thp.enabled.selected" },
	{ "thp_defrag", "thp.defrag.selected" },
	{ "thp_shmem_enabled", "thp.shmem_enabled.selected" },
	{ "hugepages", "hugetlb.sizes" },
	{ "io_uring_disabled", "io_uring.disabled" },
	{ "io_uring_setup", "io_uring.setup" },
	{ "io_uring_setup_errno", "io_uring.setup_errno" },
	{ "sqpoll", "io_uring.sqpoll" },
	{ "sqpoll_errno", "io_uring.sqpoll_errno" },
	{ "io_uring_opcodes", "io_uring.opcodes" },
	{ "io_uring_features", "io_uring.features" },
	{ "vcpus", "host.vcpus_online" },
	{ "memory_kb", "host.memory_total_kb" },
	{ "cpu_model", "host.cpu_model" },
	{ "vm", "virt.vm.name" },
	{ "container", "virt.container.name" },
};

/*
 * The field at path from *m, with *m set to the message that holds it;
 * NULL when a message on the way is not set. A path that names no field
 * is NULL too: tests/unit/test_report.c checks every field against its
 * item, written out there by hand.
 */
static const ProtobufCFieldDescriptor *at_path(const ProtobufCMessage **m,
					       const char *path)
{
	char name[PATH_LEN];

	for (;;) {
		size_t n = strcspn(path, ".");
		const ProtobufCFieldDescriptor *f;

		snprintf(name, sizeof(name), "%.*s", (int)n, path);
		f = protobuf_c_message_descriptor_get_field_by_name(
			(*m)->descriptor, name);
		if (!f || !path[n])
			return f;
		if (f->type != PROTOBUF_C_TYPE_MESSAGE ||
		    f->label == PROTOBUF_C_LABEL_REPEATED)
			return NULL;
		*m = *(const ProtobufCMessage *const *)((const char *)*m +
							f->offset);
		if (!*m)
			return NULL;
		path += n + 1;
	}
}

static int copy_message(ProtobufCMessage *dst, const ProtobufCMessage *src);

/*
 * One value of source field sf at v into dst, a value of field df. Returns
 * 1 when set, 0 when it does not fit df (an empty string, an integer out
 * of df's range, a message without a required field: left unset), or
 * -ENOMEM.
 */
static int copy_value(const ProtobufCFieldDescriptor *df, void *dst,
		      const ProtobufCFieldDescriptor *sf, const void *v)
{
	/* the probe's integers are all int64; a pair of other types is no
	 * value (a table mistake the tests show as an unset field) */
	bool from_int = sf->type == PROTOBUF_C_TYPE_INT64;
	int64_t x = from_int ? *(const int64_t *)v : 0;
	const ProtobufCMessageDescriptor *d;
	ProtobufCMessage *sub;
	int r;

	switch (df->type) {
	case PROTOBUF_C_TYPE_STRING:
		if (sf->type != df->type || !*(char *const *)v ||
		    !**(char *const *)v)
			return 0;
		*(char **)dst = strdup(*(char *const *)v);
		return *(char **)dst ? 1 : -ENOMEM;
	case PROTOBUF_C_TYPE_INT32:
		if (!from_int || x < INT32_MIN || x > INT32_MAX)
			return 0;
		*(int32_t *)dst = (int32_t)x;
		return 1;
	case PROTOBUF_C_TYPE_UINT32:
		if (!from_int || x < 0 || x > UINT32_MAX)
			return 0;
		*(uint32_t *)dst = (uint32_t)x;
		return 1;
	case PROTOBUF_C_TYPE_UINT64:
		if (!from_int || x < 0)
			return 0;
		*(uint64_t *)dst = (uint64_t)x;
		return 1;
	case PROTOBUF_C_TYPE_MESSAGE:
		if (sf->type != df->type)
			return 0;
		d = df->descriptor;
		sub = malloc(d->sizeof_message);
		if (!sub)
			return -ENOMEM;
		protobuf_c_message_init(d, sub);
		r = copy_message(sub, *(const ProtobufCMessage *const *)v);
		if (r <= 0) {
			protobuf_c_message_free_unpacked(sub, NULL);
			return r;
		}
		*(ProtobufCMessage **)dst = sub;
		return 1;
	default:
		return 0; /* no typed column has another type */
	}
}

/* Field df of dst from field sf of src: its value, or a list's values that
 * fit, in order. Returns 1 when set, 0 when not, or -ENOMEM. */
static int copy_field(ProtobufCMessage *dst, const ProtobufCFieldDescriptor *df,
		      const ProtobufCMessage *src,
		      const ProtobufCFieldDescriptor *sf)
{
	char *base = (char *)dst;
	const char *from = (const char *)src + sf->offset;
	size_t size = pbjson_value_size(df->type), *n, count;
	char **arr;
	int r;

	if ((df->label == PROTOBUF_C_LABEL_REPEATED) !=
	    (sf->label == PROTOBUF_C_LABEL_REPEATED))
		return 0;
	if (df->label != PROTOBUF_C_LABEL_REPEATED) {
		if (!pbjson_field_present(src, sf))
			return 0;
		r = copy_value(df, base + df->offset, sf, from);
		/* a string or message is set by its pointer, others by has_ */
		if (r > 0 && df->label == PROTOBUF_C_LABEL_OPTIONAL &&
		    df->type != PROTOBUF_C_TYPE_STRING &&
		    df->type != PROTOBUF_C_TYPE_MESSAGE)
			*(protobuf_c_boolean *)(base + df->quantifier_offset) = 1;
		return r;
	}
	n = (size_t *)(base + df->quantifier_offset);
	arr = (char **)(base + df->offset);
	count = *(const size_t *)((const char *)src + sf->quantifier_offset);
	*arr = calloc(count + 1, size); /* + 1: a list of none is no NULL */
	if (!*arr)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		r = copy_value(df, *arr + *n * size, sf,
			       *(const char *const *)from +
				       i * pbjson_value_size(sf->type));
		if (r < 0)
			return r;
		*n += (size_t)r;
	}
	return 1;
}

/* Every field of dst from src's field of the same name. Returns 1, or 0
 * when a required field is not there (dst is then of no use), or -ENOMEM. */
static int copy_message(ProtobufCMessage *dst, const ProtobufCMessage *src)
{
	const ProtobufCMessageDescriptor *d = dst->descriptor;

	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *sf =
			protobuf_c_message_descriptor_get_field_by_name(
				src->descriptor, d->fields[i].name);
		int r = sf ? copy_field(dst, &d->fields[i], src, sf) : 0;

		if (r < 0 || (r == 0 &&
			      d->fields[i].label == PROTOBUF_C_LABEL_REQUIRED))
			return r;
	}
	return 1;
}

/*
 * A new message of type d, each field in items from its probe item (an
 * item not read, or not fitting, leaves the field unset), in *ret.
 * Returns 0 or -ENOMEM.
 */
static int derive(const ProtobufCMessageDescriptor *d,
		  const struct derive *items, size_t n,
		  const Fleetbench__Probe *probe, ProtobufCMessage **ret)
{
	ProtobufCMessage *m = malloc(d->sizeof_message);

	*ret = m;
	if (!m)
		return -ENOMEM;
	protobuf_c_message_init(d, m);
	for (size_t i = 0; i < n; i++) {
		const ProtobufCMessage *src = &probe->base;
		const ProtobufCFieldDescriptor *sf =
			at_path(&src, items[i].path);

		if (sf && copy_field(m,
				     protobuf_c_message_descriptor_get_field_by_name(
					     d, items[i].field),
				     src, sf) < 0)
			return -ENOMEM;
	}
	return 0;
}

/*
 * Why the probe item at path was not taken into a required field: the
 * probe's reason when it could not read the item, else "missing" (no such
 * item) or "not a non-empty string" (an empty one).
 */
static const char *not_taken(const Fleetbench__Probe *probe, const char *path,
			     bool *unknown)
{
	const ProtobufCMessage *src = &probe->base;
	const ProtobufCFieldDescriptor *sf = at_path(&src, path);
	const char *why = sf ? pbjson_unknown_reason(src, sf->name) : NULL;

	*unknown = why != NULL;
	if (why)
		return why;
	return sf && pbjson_field_present(src, sf) ? "not a non-empty string" :
						     "missing";
}

/* -ENODATA naming the item when m's required string field is unset. */
static int required(const ProtobufCMessage *m, const char *field,
		    const Fleetbench__Probe *probe, const char *path,
		    char err[REPORT_ERR_LEN])
{
	const ProtobufCFieldDescriptor *f =
		protobuf_c_message_descriptor_get_field_by_name(m->descriptor,
								field);
	bool unknown;
	const char *why;

	if (*(char *const *)((const char *)m + f->offset))
		return 0;
	why = not_taken(probe, path, &unknown);
	if (unknown)
		return fail(err, -ENODATA, "probe item %s is unknown (%s)",
			    path, why);
	return fail(err, -ENODATA, "probe item %s is %s", path, why);
}

/* Host, Kernel and Capabilities of rep from its typed probe. */
static int derive_all(Fleetbench__Report *rep, char err[REPORT_ERR_LEN])
{
	const Fleetbench__Probe *p = rep->probe;
	bool unknown;
	int r;

	r = derive(&fleetbench__host__descriptor, host_items,
		   ARRAY_SIZE(host_items), p, (ProtobufCMessage **)&rep->host);
	if (r == 0)
		r = derive(&fleetbench__kernel__descriptor, kernel_items,
			   ARRAY_SIZE(kernel_items), p,
			   (ProtobufCMessage **)&rep->kernel);
	if (r == 0)
		r = derive(&fleetbench__capabilities__descriptor, caps_items,
			   ARRAY_SIZE(caps_items), p,
			   (ProtobufCMessage **)&rep->capabilities);
	if (r < 0)
		return oom(err);
	if (!rep->host->machine_id)
		return fail(err, -ENODATA,
			    "the probe found no machine id (host.machine_id: %s): the collector keys hosts by it; create /etc/machine-id (systemd-machine-id-setup)",
			    not_taken(p, "host.machine_id", &unknown));
	r = required(&rep->host->base, "hostname", p, "host.hostname", err);
	if (r == 0)
		r = required(&rep->kernel->base, "release", p, "kernel.release",
			     err);
	return r;
}

/*
 * A probe can read a value the codec refuses as a capability (a hugetlb
 * pool read while it changed: free > nr). The run must not be lost for
 * it: the capabilities go, with a warning, and the collector derives its
 * typed columns from the probe as it does for older agents.
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
	rep->costs = TAKE_PTR(b->costs);
	rep->n_costs = b->n_costs;
	rep->cost_total = TAKE_PTR(b->cost_total);
	b->n_benchmarks = b->n_comparisons = b->n_costs = 0;
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
	r = dup_str(&rep->run_id, run_id, err);
	if (r == 0)
		r = dup_str(&rep->agent_version, FLEETBENCH_VERSION, err);
	if (r == 0)
		r = report_probe(probe, &rep->probe, err);
	if (r == 0)
		r = derive_all(rep, err);
	if (r == 0 && bench)
		r = copy_bench(bench, rep, err);
	if (r == 0)
		drop_refused_capabilities(rep);
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
