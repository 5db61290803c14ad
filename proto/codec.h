/* SPDX-License-Identifier: MIT */
/*
 * The one codec both sides use: pack, unpack and validate Reports and Acks
 * (proto/fleetbench.proto, docs/wire.md). Unpacking runs under a byte
 * budget (a ProtobufCAllocator that refuses past it), so a hostile length
 * prefix cannot make the collector allocate without bound; validation then
 * enforces every limit below. Nothing here logs; errors come back as
 * -errno with the reason in err.
 */
#ifndef FLEETBENCH_CODEC_H
#define FLEETBENCH_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fleetbench.pb-c.h"

#define CODEC_ERR_LEN 256

/* Limits (docs/wire.md). */
#define CODEC_MAX_MESSAGE (4u << 20) /* bytes of one packed Report */
#define CODEC_UNPACK_BUDGET (16u << 20) /* bytes the unpacker may allocate */
#define CODEC_MAX_STRING 1024 /* any string not named below */
#define CODEC_MAX_CMDLINE 8192 /* kernel.cmdline, kernel.version */
#define CODEC_MAX_REASON 4096 /* skip_reason, failure, comparison and Ack reason */
#define CODEC_MAX_PROBE_JSON (1u << 20) /* probe_json */
#define CODEC_MAX_PROBE_STRING 8192 /* any string in the typed probe */
#define CODEC_MAX_PROBE_ENTRIES 4096 /* any list or map in the typed probe */
#define CODEC_MAX_BENCHMARKS 256
#define CODEC_MAX_COMPARISONS 256
#define CODEC_MAX_PARAMS 64 /* per benchmark */
#define CODEC_MAX_METRICS 32 /* per benchmark */
#define CODEC_MAX_SAMPLES 100000 /* per metric */
#define CODEC_MAX_WINDOWS 20000 /* per benchmark: repeats are at most 1000 */
/* started/finished must lie in [2020-01-01, now + 1 day] */
#define CODEC_MIN_TIME_MS 1577836800000LL
#define CODEC_MAX_FUTURE_MS (24LL * 3600 * 1000)
#define CODEC_MAX_JSON_DEPTH 32 /* nesting of probe_json */
#define CODEC_MAX_METHOD_KEY 256 /* bytes of method.key */
#define CODEC_MAX_METHOD_PROFILE 64 /* bytes of method.profile */
#define CODEC_MAX_METHOD_NAME 64 /* bytes of each method.only entry */
#define CODEC_MAX_METHOD_ONLY 16 /* entries of method.only */
/* capabilities (docs/wire.md) */
/* bytes of a THP mode, errno, vm, container, opcode or feature name */
#define CODEC_MAX_CAP_NAME 64
#define CODEC_MAX_CPU_MODEL 256 /* bytes of capabilities.cpu_model */
#define CODEC_MAX_HUGEPAGE_SIZES 16 /* entries of capabilities.hugepages */
#define CODEC_MAX_IOURING_NAMES 256 /* io_uring_opcodes, io_uring_features */
#define CODEC_MAX_ERRNO 4095 /* io_uring_setup_errno, sqpoll_errno */
#define CODEC_MAX_VCPUS 65536
/* tags (docs/wire.md): the one place agent and collector take them from */
#define CODEC_MAX_TAGS 16 /* entries of Report.tags */
#define CODEC_MAX_TAG_KEY 32 /* bytes of a key: [a-z][a-z0-9_]* */
#define CODEC_MAX_TAG_VALUE 64 /* bytes of a value: UTF-8, no control char */
#define CODEC_MAX_ACK 8192 /* bytes of one packed Ack */
#define CODEC_MAX_COSTS 64 /* entries of Report.costs */
#define CODEC_MAX_COST_NAME 64 /* bytes of Cost.benchmark */
#define CODEC_MAX_COST_SECONDS (7 * 86400.0) /* Cost.wall_s, cpu_s */
#define CODEC_ACK_BUDGET (64u << 10) /* bytes the Ack unpacker may allocate */

/*
 * Packs r into a new buffer (*ret, *ret_len; free() it). Returns 0,
 * -E2BIG when it exceeds CODEC_MAX_MESSAGE, -EINVAL when a required field
 * is NULL (protobuf_c_message_check), or -ENOMEM. It does not validate:
 * call codec_validate_report() first to learn what a collector would say.
 */
int codec_pack_report(const Fleetbench__Report *r, uint8_t **ret,
		      size_t *ret_len);

/*
 * Unpacks data into *ret (free with codec_free_report()) under the byte
 * budget, then validates it. Returns 0; -EMSGSIZE for len over
 * CODEC_MAX_MESSAGE; -EBADMSG when it is not a Report or the budget ran out;
 * -EINVAL when it decoded but failed validation; -ENOMEM when malloc
 * failed. err says which, in words fit for an Ack's reason. On -EINVAL *ret
 * is still set (NULL otherwise), so the caller can read run_id for the Ack.
 */
int codec_unpack_report(const uint8_t *data, size_t len,
			Fleetbench__Report **ret, char err[CODEC_ERR_LEN]);

/* Frees what codec_unpack_report() returned; NULL is fine. */
void codec_free_report(Fleetbench__Report *r);

/*
 * Checks every rule of docs/wire.md: schema version, run_id a canonical
 * lowercase UUID, machine_id 32 hex digits, strings within their limits,
 * valid UTF-8 without NUL, required strings non-empty, probe_json a JSON
 * object, doubles finite, counts within the limits, no negative sizes,
 * durations or counts (docs/wire.md says which), unique parameter keys,
 * metric names and benchmark variants, times within bounds and
 * started <= finished. Returns 0 (err "") or -EINVAL with the first
 * problem in err, naming the field path and never quoting the bad bytes
 * ("run_id: not a canonical lowercase UUID",
 * "benchmarks[3].metrics[0].samples[7]: not finite (NaN)", ...).
 */
int codec_validate_report(const Fleetbench__Report *r, int64_t now_ms,
			  char err[CODEC_ERR_LEN]);

/* The part of codec_validate_report() that checks r->capabilities, alone:
 * 0, or -EINVAL with the problem in err. */
int codec_validate_capabilities(const Fleetbench__Capabilities *c,
				char err[CODEC_ERR_LEN]);

/*
 * Tags (proto/codec_tags.c). codec_tag_key_valid(): key is 1 to
 * CODEC_MAX_TAG_KEY bytes of [a-z0-9_] starting with a letter.
 * codec_check_tag(): key valid and value 1 to CODEC_MAX_TAG_VALUE bytes
 * of valid UTF-8 without a control character (C0, DEL, C1): 0, or
 * -EINVAL with err saying what is wrong, naming the key when it is valid
 * and never quoting a bad one ("tag env: value is 70 bytes, at most 64").
 * codec_validate_report() checks every tag so, and that no key repeats.
 */
bool codec_tag_key_valid(const char *key);
int codec_check_tag(const char *key, const char *value,
		    char err[CODEC_ERR_LEN]);

/*
 * Acks: packing never fails but for -ENOMEM (a run_id that is NULL or not
 * a canonical UUID packs as "", reason NULL is left out, a reason is cut
 * at CODEC_MAX_REASON bytes and before its first invalid UTF-8 byte, so a
 * split character never goes out). Unpacking returns -EBADMSG for anything
 * that is not an Ack of at most CODEC_MAX_ACK bytes with a status from
 * COMMITTED to GRANTED, a run_id empty or a UUID, and valid UTF-8
 * strings within their limits, and a retry_after_ms only with RETRY_LATER
 * and at most CODEC_MAX_RETRY_AFTER_MS; -ENOMEM when malloc failed.
 * codec_pack_ack_after() adds retry_after_ms to a RETRY_LATER (0: none;
 * more than CODEC_MAX_RETRY_AFTER_MS is cut to it; other statuses get
 * none).
 */
#define CODEC_MAX_RETRY_AFTER_MS 86400000u /* a day */
int codec_pack_ack(const char *run_id, Fleetbench__Ack__Status status,
		   const char *reason, uint8_t **ret, size_t *ret_len);
int codec_pack_ack_after(const char *run_id, Fleetbench__Ack__Status status,
			 const char *reason, uint32_t retry_after_ms,
			 uint8_t **ret, size_t *ret_len);
int codec_unpack_ack(const uint8_t *data, size_t len, Fleetbench__Ack **ret);
void codec_free_ack(Fleetbench__Ack *a);

/*
 * Offers (docs/wire.md, "Offer and grant"). codec_pack_offer() packs an
 * Offer for a report of `bytes` bytes: 0, -EINVAL for a run_id that is not
 * a canonical UUID or bytes outside 1..CODEC_MAX_MESSAGE, or -ENOMEM.
 * codec_is_offer() tells an Offer from a Report by its first two bytes
 * (field 100's tag), without decoding. codec_unpack_offer() decodes and
 * checks one: 0 with *ret_run_id, *ret_bytes and *ret_flags (the
 * CODEC_OFFER_ flags of the fields set true) filled; -EBADMSG for
 * anything else, err saying why.
 */
#define CODEC_MAX_OFFER 64 /* bytes of one packed Offer */
#define CODEC_OFFER_HINTS 1u /* offer_hints */
#define CODEC_OFFER_RETURNING 2u /* offer_returning */
int codec_pack_offer(const char *run_id, size_t bytes, unsigned flags,
		     uint8_t **ret, size_t *ret_len);
bool codec_is_offer(const uint8_t *data, size_t len);
int codec_unpack_offer(const uint8_t *data, size_t len, char ret_run_id[37],
		       uint32_t *ret_bytes, unsigned *ret_flags,
		       char err[CODEC_ERR_LEN]);

/*
 * UUIDs: thin wrappers over common/uuid_str.h (libuuid), kept under the
 * codec's names for the agent, the collector and the tests that call them.
 */
/* True for a canonical lowercase 8-4-4-4-12 UUID (uuid_text_valid). */
int codec_uuid_valid(const char *s);

/* A new random (version 4) UUID (uuid_text_new). 0 or -errno. */
int codec_uuid_new(char out[37]);

/* Valid UTF-8 of exactly len bytes with no NUL byte. */
int codec_utf8_valid(const char *s, size_t len);

/*
 * Offset of the first byte of s[0..len) that does not start a valid UTF-8
 * character (RFC 3629: no overlong forms, no surrogates, nothing above
 * U+10FFFF) or is a NUL; -1 when all len bytes are fine.
 */
ssize_t codec_utf8_invalid_at(const char *s, size_t len);

/* Offset of the first control character (C0, DEL, or C1: U+0080 to
 * U+009F) of valid UTF-8 s, or -1: the one rule for labels and tags. */
ssize_t codec_control_at(const char *s, size_t len);

/*
 * Whether JSON text s of len bytes holds the escape \u0000 (a NUL, which
 * PostgreSQL's jsonb refuses): one after an even run of backslashes, so the
 * text "\\u0000" (a backslash, then u0000) does not count.
 */
bool codec_json_nul_escape(const char *s, size_t len);

#endif
