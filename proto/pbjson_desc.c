/* SPDX-License-Identifier: MIT */
/*
 * What pbjson reads off protobuf-c's descriptors, for the walker, the
 * reader and the codec: whether a field is set, the size of its values,
 * map fields and the probe's "unknown" map (pbjson.h).
 */
#include "pbjson.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "pbjson_internal.h"

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

bool pbjson_is_map(const ProtobufCFieldDescriptor *f)
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

	return f && pbjson_is_map(f) &&
			       pbjson_sub(f)->fields[1].type ==
				       PROTOBUF_C_TYPE_STRING ?
		       f :
		       NULL;
}

size_t pbjson_map_entries(const ProtobufCMessage *m,
			  const ProtobufCFieldDescriptor *f,
			  ProtobufCMessage *const **ret)
{
	const char *base = (const char *)m;

	*ret = *(ProtobufCMessage *const *const *)(base + f->offset);
	return *ret ? *(const size_t *)(base + f->quantifier_offset) : 0;
}

const char *pbjson_entry_key(const ProtobufCFieldDescriptor *f,
			     const ProtobufCMessage *e)
{
	size_t at = pbjson_sub(f)->fields[0].offset;

	return *(char *const *)((const char *)e + at) ?: "";
}

const char *pbjson_entry_value(const ProtobufCFieldDescriptor *f,
			       const ProtobufCMessage *e)
{
	size_t at = pbjson_sub(f)->fields[1].offset;

	return *(char *const *)((const char *)e + at) ?: "";
}

const char *pbjson_unknown_reason_in(const ProtobufCMessage *m,
				     const ProtobufCFieldDescriptor *uf,
				     const char *name)
{
	ProtobufCMessage *const *e;
	size_t n = pbjson_map_entries(m, uf, &e);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(pbjson_entry_key(uf, e[i]), name))
			return pbjson_entry_value(uf, e[i]);
	return NULL;
}

const char *pbjson_unknown_reason(const ProtobufCMessage *m,
				  const char *name)
{
	const ProtobufCFieldDescriptor *uf =
		pbjson_unknown_field(m->descriptor);

	return uf ? pbjson_unknown_reason_in(m, uf, name) : NULL;
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
	int c = strcmp(pbjson_entry_key(k->uf, k->e[i]),
		       pbjson_entry_key(k->uf, k->e[j]));

	return c ? c : (i > j) - (i < j);
}

int pbjson_unknown_check(const ProtobufCMessage *m, size_t *at,
			 char why[PBJSON_ERR_LEN])
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const ProtobufCFieldDescriptor *uf = pbjson_unknown_field(d);
	_cleanup_free_ size_t *order = NULL;
	ProtobufCMessage *const *e;
	size_t n = uf ? pbjson_map_entries(m, uf, &e) : 0;

	for (size_t i = 0; i < n; i++) {
		const ProtobufCFieldDescriptor *f =
			protobuf_c_message_descriptor_get_field_by_name(
				d, pbjson_entry_key(uf, e[i]));

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
		if (!strcmp(pbjson_entry_key(uf, e[order[i - 1]]),
			    pbjson_entry_key(uf, e[order[i]]))) {
			*at = order[i];
			snprintf(why, PBJSON_ERR_LEN, "the same key as [%zu]",
				 order[i - 1]);
			return -EINVAL;
		}
	return 0;
}
