/* SPDX-License-Identifier: MIT */
/*
 * The report's typed columns (Host, Kernel, Capabilities) from its typed
 * probe, by a table of item paths (probe_derive.h): the one place they
 * are made, by the agent for Host and Kernel, by the collector for the
 * capabilities, and by the codec to check the capabilities a report
 * carries against its probe.
 */
#include "probe_derive.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "pbjson.h"

#define PATH_LEN 64

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
const char *probe_not_taken(const Fleetbench__Probe *probe, const char *path,
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

int probe_derive_host(const Fleetbench__Probe *p, Fleetbench__Host **ret)
{
	return derive(&fleetbench__host__descriptor, host_items,
		      ARRAY_SIZE(host_items), p, (ProtobufCMessage **)ret);
}

int probe_derive_kernel(const Fleetbench__Probe *p, Fleetbench__Kernel **ret)
{
	return derive(&fleetbench__kernel__descriptor, kernel_items,
		      ARRAY_SIZE(kernel_items), p, (ProtobufCMessage **)ret);
}

int probe_derive_capabilities(const Fleetbench__Probe *p,
			      Fleetbench__Capabilities **ret)
{
	return derive(&fleetbench__capabilities__descriptor, caps_items,
		      ARRAY_SIZE(caps_items), p, (ProtobufCMessage **)ret);
}

/*
 * m packed with only its field f (a shallow copy with every other field
 * cleared), in *buf (freed by the caller). Returns the length, or
 * -ENOMEM.
 */
static ssize_t pack_field(const ProtobufCMessage *m,
			  const ProtobufCFieldDescriptor *f, uint8_t **buf)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	_cleanup_free_ char *copy = malloc(d->sizeof_message);
	size_t len;

	*buf = NULL;
	if (!copy)
		return -ENOMEM;
	memcpy(copy, m, d->sizeof_message);
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *o = &d->fields[i];

		if (o == f)
			continue;
		if (o->label == PROTOBUF_C_LABEL_REPEATED)
			*(size_t *)(copy + o->quantifier_offset) = 0;
		else if (o->type == PROTOBUF_C_TYPE_STRING ||
			 o->type == PROTOBUF_C_TYPE_MESSAGE)
			*(void **)(copy + o->offset) = NULL;
		else if (o->label == PROTOBUF_C_LABEL_OPTIONAL)
			*(protobuf_c_boolean *)(copy + o->quantifier_offset) = 0;
	}
	len = protobuf_c_message_get_packed_size((ProtobufCMessage *)copy);
	*buf = malloc(len ? len : 1);
	if (!*buf)
		return -ENOMEM;
	protobuf_c_message_pack((ProtobufCMessage *)copy, *buf);
	return (ssize_t)len;
}

/* The probe path of capability field name (caps_items). */
static const char *caps_path(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(caps_items); i++)
		if (!strcmp(caps_items[i].field, name))
			return caps_items[i].path;
	return "?";
}

int probe_caps_check(const Fleetbench__Capabilities *c,
		     const Fleetbench__Probe *p, char *err, size_t err_len)
{
	Fleetbench__Capabilities *want = NULL;
	const ProtobufCMessageDescriptor *d =
		&fleetbench__capabilities__descriptor;
	int r = probe_derive_capabilities(p, &want);

	if (r < 0)
		snprintf(err, err_len, "out of memory");

	for (unsigned i = 0; r == 0 && i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		_cleanup_free_ uint8_t *a = NULL, *b = NULL;
		ssize_t na = pack_field(&c->base, f, &a);
		ssize_t nb = pack_field(&want->base, f, &b);

		if (na < 0 || nb < 0) {
			r = -ENOMEM;
			snprintf(err, err_len, "out of memory");
		} else if (na != nb || memcmp(a, b, (size_t)na)) {
			/* a single string is quoted; a repeated one is an
			 * array of pointers, never printed as a string */
			bool one = f->type == PROTOBUF_C_TYPE_STRING &&
				   f->label != PROTOBUF_C_LABEL_REPEATED;
			const char *said = one ?
						   *(char *const *)((const char *)c + f->offset) :
						   NULL;
			const char *found = one ?
						    *(char *const *)((const char *)want + f->offset) :
						    NULL;

			r = -EINVAL;
			if (one)
				snprintf(err, err_len,
					 "capabilities.%s: '%s', but its probe says '%s' (%s): a report's capabilities must be its probe's",
					 f->name, said ? said : "(none)",
					 found ? found : "(none)",
					 caps_path(f->name));
			else
				snprintf(err, err_len,
					 "capabilities.%s differs from its probe's item %s: a report's capabilities must be its probe's",
					 f->name, caps_path(f->name));
		}
	}
	if (want)
		protobuf_c_message_free_unpacked(&want->base, NULL);
	return r;
}
