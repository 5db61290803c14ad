/* SPDX-License-Identifier: MIT */
/*
 * What the codec's files share among themselves, not API (that is
 * codec.h): codec.c unpacks under a budget and packs; codec_walk.c checks
 * every field by the descriptors; codec_validate.c and codec_caps.c hold
 * a Report's own rules; codec_ack.c the Acks and Offers; codec_text.c
 * UTF-8 and UUIDs.
 */
#ifndef FLEETBENCH_CODEC_INTERNAL_H
#define FLEETBENCH_CODEC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"

/* Writes the message into err and returns -EINVAL. */
int codec_invalid(char err[CODEC_ERR_LEN], const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Unpacks data as a desc under an allocation budget of `budget` bytes
 * into *ret (codec_free_message() frees it): 0; -EBADMSG when it is not
 * one or the budget ran out, -ENOMEM; err says which.
 */
int codec_unpack_message(const ProtobufCMessageDescriptor *desc,
			 const uint8_t *data, size_t len, size_t budget,
			 ProtobufCMessage **ret, char err[CODEC_ERR_LEN]);

/* Frees what codec_unpack_message() returned; NULL is fine. */
void codec_free_message(ProtobufCMessage *m);

/* The bytes the unpacker allocated for p (a string: its wire length + 1,
 * for protobuf-c NUL-terminates it). Only for what it allocated. */
size_t codec_block_size(const void *p);

/* names up to this many are found repeated through a hash table, more by
 * comparing each with those before it */
#define CODEC_NAMES_HASHED 256

/*
 * The first of names[0..n) equal to one before it: its index, with that
 * earlier one's (the first equal to it) in *earlier; -1 when each name is
 * there once. What comparing each name with those before it finds, in
 * time linear in n.
 */
ssize_t codec_name_repeated(const char *const *names, size_t n,
			    size_t *earlier);

/* Packs m into a new buffer of at most max bytes: 0, -E2BIG, -ENOMEM or
 * -EIO. */
int codec_pack_message(const ProtobufCMessage *m, size_t max, uint8_t **ret,
		       size_t *ret_len);

/*
 * The generic checks, by the descriptors (codec_walk.c): strings valid
 * UTF-8 without NUL and within their limits, doubles finite, repeated
 * fields within their counts, the probe's unknown maps consistent. wire:
 * the strings came from codec_unpack_message() (so an embedded NUL shows);
 * nonempty: required strings must not be empty. 0 or -EINVAL (-ENOMEM).
 */
int codec_walk(const ProtobufCMessage *m, bool wire, bool nonempty,
	       char err[CODEC_ERR_LEN]);

/* codec_validate_report(), told whether r came off the wire. */
int codec_check_report(const Fleetbench__Report *r, int64_t now_ms, bool wire,
		       char err[CODEC_ERR_LEN]);

/* The tags' own rules (codec_tags.c), once the walk has passed them. */
int codec_check_tags(const Fleetbench__Report *r, char err[CODEC_ERR_LEN]);

/* The capabilities' own rules, once the walk has passed them. */
int codec_check_capabilities(const Fleetbench__Capabilities *c,
			     char err[CODEC_ERR_LEN]);

#endif
