/* SPDX-License-Identifier: MIT */
/*
 * Any protobuf-c message as a json-c tree, by one walk over its descriptors
 * (ProtobufCMessageDescriptor, ProtobufCFieldDescriptor), so a field added
 * to the .proto shows without anyone writing a line for it. This is where
 * JSON is made from a report, at the edges only (STYLE.md: the agent's
 * `show`, ad-hoc inspection); nothing parses it back.
 *
 * The mapping (close to protobuf's canonical JSON, with the .proto's own
 * field names as keys):
 * - a message is an object holding its fields in .proto order; unknown
 *   fields (from a newer sender) are left out;
 * - a required field is always there; an optional one only when set (its
 *   has_ flag, a non-NULL pointer other than the default); of a oneof only
 *   the member set, under its own name; a repeated field always, as an
 *   array (empty when it has no entries), packed or not;
 * - int32, sint32, sfixed32, uint32, fixed32, int64, sint64, sfixed64 are
 *   JSON integers; uint64 and fixed64 too (json-c writes all 64 bits,
 *   beyond 2^53 a reader in double precision rounds them);
 * - double and float are JSON numbers (a float with 9 significant digits,
 *   so 0.1f shows as 0.100000001, not 17 digits of noise); NaN, +inf and
 *   -inf, which JSON cannot hold, are the STRINGS "NaN", "Infinity" and
 *   "-Infinity", as in protobuf's canonical mapping, never invalid JSON;
 * - bool is true/false; an enum is its value's name from the .proto
 *   ("COMMITTED"), or the number when the value has no name;
 * - string is a JSON string; a byte sequence that is not UTF-8 (protobuf-c
 *   does not check proto2 strings) has each bad byte replaced by U+FFFD,
 *   so the output is always valid JSON;
 * - bytes are a string of standard base64 with padding (RFC 4648 4);
 * - a map<K, V> field (protoc's repeated {key, value} entries) is a JSON
 *   object, its entries in the order held;
 * - a value message, whose fields all belong to one oneof (ProbeValue), is
 *   its member's value, bare; a member named "unknown" (a string) is
 *   {"unknown": "<reason>"}; no member set is null;
 * - a message with a map<string, string> field named "unknown" (the probe's
 *   messages) shows every other field: one named in "unknown" as
 *   {"unknown": "<reason>"}, one unset as null; "unknown" itself is not
 *   shown, but a key of it that names no field (an item of a newer
 *   sender's .proto) is, after the fields, as {"unknown": "<reason>"}.
 *
 * pbjson_to_message() reads that JSON back, strictly, so the probe, which
 * is built as a json-c tree, becomes its typed message with every item
 * checked against the .proto.
 */
#ifndef FLEETBENCH_PBJSON_H
#define FLEETBENCH_PBJSON_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>
#include <protobuf-c/protobuf-c.h>

/*
 * The message m as a new json-c object (json_object_put() it), or NULL with
 * errno ENOMEM. m NULL gives NULL with errno EINVAL. A value message with no
 * member set gives NULL with errno 0 (JSON null).
 */
struct json_object *pbjson_from_message(const ProtobufCMessage *m);

/*
 * As pbjson_from_message(), but of m's fields only those named in
 * names[0..n) (only), or all but those (!only; the keys of a newer
 * sender's items with them): the two make the object pbjson_from_message()
 * makes, split. NULL with errno EINVAL for m NULL, n 0 or a value
 * message; ENOMEM.
 */
struct json_object *pbjson_from_fields(const ProtobufCMessage *m,
				       const char *const *names, size_t n,
				       bool only);

#define PBJSON_ERR_LEN 320

/*
 * Reads JSON o, in the mapping above, into a new message of type d in *ret
 * (protobuf_c_message_free_unpacked(*ret, NULL) frees it). A key that is not
 * a field, a value of the wrong JSON type or out of the field's range, a
 * required field missing or null, or {"unknown": ...} for a field of a
 * message without an "unknown" map is -EINVAL, with err naming the item
 * ("thp.enabled.selected: a JSON int, not a string"); -ENOMEM.
 */
int pbjson_to_message(const ProtobufCMessageDescriptor *d,
		      struct json_object *o, ProtobufCMessage **ret,
		      char err[PBJSON_ERR_LEN]);

/* Whether every field of d belongs to one oneof (a value message). */
bool pbjson_is_value_message(const ProtobufCMessageDescriptor *d);

/* d's map<string, string> field named "unknown", or NULL. */
const ProtobufCFieldDescriptor *
pbjson_unknown_field(const ProtobufCMessageDescriptor *d);

/* The reason m's "unknown" map gives for its item name, or NULL when the
 * map does not name it (or m has no such map). */
const char *pbjson_unknown_reason(const ProtobufCMessage *m,
				  const char *name);

/*
 * Whether m's "unknown" map agrees with its fields: no key twice, none
 * naming the map itself, none naming a field that is set (a list or map
 * with entries, or an item with a value): an item is read or unknown, not
 * both. A key that names no field of m is fine (an item a newer sender
 * added: the walk shows it as {"unknown": reason}). 0 (also for a message
 * without the map), -EINVAL with *at the offending entry's index and why
 * saying what is wrong, or -ENOMEM.
 */
int pbjson_unknown_check(const ProtobufCMessage *m, size_t *at,
			 char why[PBJSON_ERR_LEN]);

/*
 * Whether f of m is set, as protobuf-c's packer decides it: always for a
 * required or proto3 field, the case for a oneof member, a pointer that is
 * neither NULL nor the default for a string or message, else the has_ flag.
 * Meaningless for a repeated field (its count says).
 */
bool pbjson_field_present(const ProtobufCMessage *m,
			  const ProtobufCFieldDescriptor *f);

/* Bytes one element of a field of type t takes in its C array. */
size_t pbjson_value_size(ProtobufCType t);

#endif
