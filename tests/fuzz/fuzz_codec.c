/* SPDX-License-Identifier: MIT */
/*
 * A libFuzzer target over what the network hands each side: the collector's
 * codec_unpack_report() (decode under the byte budget, then validate) and
 * the agent's codec_unpack_ack(), and the collector's codec_unpack_offer()
 * (docs/wire.md, "Offer and grant"). Besides crashes, leaks and undefined
 * behaviour (ASan, UBSan) it checks what the callers rely on: an error
 * text that fits its buffer and is valid UTF-8 (it becomes an Ack's
 * reason), a run id kept only on -EINVAL, and a report that passed staying
 * valid when packed and unpacked again, and a typed probe that passed
 * walking to one strict JSON object, as the collector stores it. docs/fuzzing.md says how to run it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "codec.h"
#include "pbjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void require(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz_codec: broken promise: %s\n", what);
		abort();
	}
}

static void check_report(const uint8_t *data, size_t size)
{
	Fleetbench__Report *r = NULL, *again = NULL;
	char err[CODEC_ERR_LEN];
	uint8_t *packed = NULL;
	size_t len = 0;
	int ret;

	memset(err, 'x', sizeof(err));
	ret = codec_unpack_report(data, size, &r, err);
	require(memchr(err, '\0', sizeof(err)) != NULL,
		"the error text is NUL-terminated");
	require(codec_utf8_valid(err, strlen(err)),
		"the error text is valid UTF-8");
	require(ret == 0 || ret == -EMSGSIZE || ret == -EBADMSG ||
			ret == -EINVAL || ret == -ENOMEM,
		"unpack returns a documented error");
	require((ret == 0) == (err[0] == '\0'), "an error comes with a reason");
	require((r != NULL) == (ret == 0 || ret == -EINVAL),
		"a report is returned on success and -EINVAL only");
	if (ret == 0 && r->probe) {
		/* what the collector makes of an accepted probe for
		 * runs.probe: always one strict JSON object */
		struct json_object *o = pbjson_from_message(&r->probe->base);
		struct json_tokener *tok = json_tokener_new();
		struct json_object *back;
		const char *text;

		require(o != NULL && tok != NULL, "a valid probe walks to JSON");
		text = json_object_to_json_string_ext(
			o, JSON_C_TO_STRING_PLAIN |
				   JSON_C_TO_STRING_NOSLASHESCAPE);
		json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
		back = json_tokener_parse_ex(tok, text, (int)strlen(text) + 1);
		require(json_object_is_type(back, json_type_object) &&
				json_tokener_get_parse_end(tok) == strlen(text),
			"a valid probe's JSON is one strict JSON object");
		require(!codec_json_nul_escape(text, strlen(text)),
			"a valid probe's JSON has no \\u0000 for jsonb");
		json_object_put(back);
		json_tokener_free(tok);
		json_object_put(o);
	}
	if (ret == 0) {
		ret = codec_pack_report(r, &packed, &len);
		require(ret == 0, "a valid report packs");
		ret = codec_unpack_report(packed, len, &again, err);
		require(ret == 0, "a valid report, packed again, stays valid");
		require(!strcmp(r->run_id, again->run_id),
			"the run id survives packing");
		codec_free_report(again);
		free(packed);
	}
	codec_free_report(r);
}

static void check_ack(const uint8_t *data, size_t size)
{
	Fleetbench__Ack *a = NULL;
	int ret = codec_unpack_ack(data, size, &a);

	require(ret == 0 || ret == -EBADMSG || ret == -ENOMEM,
		"ack unpack returns a documented error");
	require((a != NULL) == (ret == 0), "an Ack is returned on success only");
	if (a) {
		require(!*a->run_id || codec_uuid_valid(a->run_id),
			"an Ack's run id is empty or a UUID");
		require(a->status >= FLEETBENCH__ACK__STATUS__COMMITTED &&
				a->status <= FLEETBENCH__ACK__STATUS__GRANTED,
			"an Ack's status is known");
	}
	codec_free_ack(a);
}

static void check_offer(const uint8_t *data, size_t size)
{
	char err[CODEC_ERR_LEN], run_id[37] = "";
	uint32_t bytes = 0;
	unsigned flags = 0;
	int ret = codec_unpack_offer(data, size, run_id, &bytes, &flags, err);

	require(ret == 0 || ret == -EBADMSG || ret == -ENOMEM,
		"offer unpack returns a documented error");
	if (ret == 0) {
		require(codec_uuid_valid(run_id), "an Offer's run id is a UUID");
		require(bytes >= 1 && bytes <= CODEC_MAX_MESSAGE,
			"an Offer's size is within the limit");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_report(data, size);
	check_ack(data, size);
	check_offer(data, size);
	return 0;
}
