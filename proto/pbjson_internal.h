/* SPDX-License-Identifier: MIT */
/*
 * What pbjson's files share, not API (that is pbjson.h): pbjson_desc.c
 * reads the descriptors (presence, sizes, map fields, the unknown map),
 * pbjson.c walks a message to JSON, pbjson_read.c reads JSON back.
 */
#ifndef FLEETBENCH_PBJSON_INTERNAL_H
#define FLEETBENCH_PBJSON_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "pbjson.h"

/* The message type of a message field. */
static inline const ProtobufCMessageDescriptor *
pbjson_sub(const ProtobufCFieldDescriptor *f)
{
	return f->descriptor;
}

/* A map<K, V> field: protoc's repeated entries {key = 1; value = 2}. */
bool pbjson_is_map(const ProtobufCFieldDescriptor *f);

/* The entries of map field f of m: their count, the array in *ret. */
size_t pbjson_map_entries(const ProtobufCMessage *m,
			  const ProtobufCFieldDescriptor *f,
			  ProtobufCMessage *const **ret);

/* The key of entry e of map field f ("" for none). */
const char *pbjson_entry_key(const ProtobufCFieldDescriptor *f,
			     const ProtobufCMessage *e);

/* The value of entry e of a map<string, string> field f ("" for none). */
const char *pbjson_entry_value(const ProtobufCFieldDescriptor *f,
			       const ProtobufCMessage *e);

/* The reason m's unknown map (field uf) gives for item name, or NULL. */
const char *pbjson_unknown_reason_in(const ProtobufCMessage *m,
				     const ProtobufCFieldDescriptor *uf,
				     const char *name);

#endif
