/* SPDX-License-Identifier: MIT */
/*
 * The codec and the probe: probe_json must be a JSON object without NaN,
 * \u0000 or deep nesting; what the real agent's probe prints, on this
 * machine and on the fixture trees, is a probe_json the codec takes, and
 * as the typed Probe it is valid and walks back to the same JSON.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cleanup.h"
#include "codec_test.h"
#include "pbjson.h"
#include "run.h"

static void test_probe_json(void)
{
	static const struct text_case cases[] = {
		{ "not json", "probe_json: not JSON (" },
		{ "{\"a\":1", "probe_json: not JSON (unexpected end of data" },
		{ "{\"a\":1,}", "probe_json: not JSON (" },
		{ "{\"a\":1} {}", "probe_json: not JSON (" },
		{ "[1,2]", "probe_json: a JSON array, not an object" },
		{ "42", "probe_json: a JSON int, not an object" },
		{ "\"text\"", "probe_json: a JSON string, not an object" },
		{ "null", "probe_json: a JSON null, not an object" },
		{ "{\"a\":NaN}", "probe_json: NaN or Infinity is not JSON" },
		{ "{\"a\":[1,{\"b\":-Infinity}]}",
		  "probe_json: NaN or Infinity is not JSON" },
		{ "{\"a\\u0000b\":1}", "probe_json: holds the escape \\u0000" },
		{ "{\"a\":\"\\\\\\u0000\"}",
		  "probe_json: holds the escape \\u0000" },
		{ "", "probe_json: empty" },
	};
	struct fixture f;
	char err[CODEC_ERR_LEN], deep[512];
	size_t n;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		fixture_init(&f);
		f.r.probe_json = (char *)cases[i].text;
		CHECK_EQ_INT(codec_validate_report(&f.r, wall_ms(), err),
			     -EINVAL);
		CHECK_(!strncmp(err, cases[i].note, strlen(cases[i].note)),
		       "%s: \"%s\", expected \"%s...\"", cases[i].text, err,
		       cases[i].note);
	}
	/* nesting: CODEC_MAX_JSON_DEPTH levels pass, one more does not */
	for (int levels = CODEC_MAX_JSON_DEPTH;
	     levels <= CODEC_MAX_JSON_DEPTH + 1; levels++) {
		n = 0;
		for (int i = 0; i < levels; i++)
			n += (size_t)snprintf(deep + n, sizeof(deep) - n,
					      "{\"a\":");
		n += (size_t)snprintf(deep + n, sizeof(deep) - n, "1");
		for (int i = 0; i < levels; i++)
			n += (size_t)snprintf(deep + n, sizeof(deep) - n, "}");
		fixture_init(&f);
		f.r.probe_json = deep;
		if (levels == CODEC_MAX_JSON_DEPTH)
			expect_valid(&f);
		else
			expect_invalid(&f,
				       "probe_json: nested deeper than 32 levels");
	}
	/* an escaped backslash and "u0000" are text, not the escape */
	fixture_init(&f);
	f.r.probe_json = "{\"a\\\\u0000\":\"\\\\u0000 \\\\\\\\u0000\"}";
	expect_valid(&f);
	/* the same through the wire, once */
	fixture_init(&f);
	f.r.probe_json = "[]";
	expect_invalid(&f, "probe_json: a JSON array, not an object");
}

/*
 * A probe message's unknown map must agree with its fields: an item set and
 * unknown at once, a key twice and a key naming the map are refused by
 * index; a key that names no field (a newer agent's item) is taken, and the
 * walk shows it.
 */
static void check_probe_unknown(struct fixture *f)
{
	Fleetbench__ProbeHost *h = f->r.probe->host;
	Fleetbench__ProbeHost__UnknownEntry e[2];
	Fleetbench__ProbeHost__UnknownEntry **saved = h->unknown, *list[2];
	size_t n_saved = h->n_unknown;
	struct json_object *o, *item;
	char err[CODEC_ERR_LEN];
	char *hostname = h->hostname;

	for (size_t i = 0; i < 2; i++) {
		fleetbench__probe_host__unknown_entry__init(&e[i]);
		list[i] = &e[i];
	}
	h->unknown = list;
	h->n_unknown = 1;
	h->hostname = "web-1";
	e[0].key = "hostname";
	e[0].value = "EACCES";
	CHECK_EQ_INT(codec_validate_report(&f->r, wall_ms(), err), -EINVAL);
	CHECK_EQ_STR(err, "probe.host.unknown[0]: names hostname, which is set: an item is read or unknown, not both");
	e[0].key = "unknown";
	CHECK_EQ_INT(codec_validate_report(&f->r, wall_ms(), err), -EINVAL);
	CHECK_EQ_STR(err, "probe.host.unknown[0]: names the map itself, not an item");

	e[0].key = e[1].key = "cpu_sockets";
	e[1].value = "ENOENT";
	h->n_unknown = 2;
	CHECK_EQ_INT(codec_validate_report(&f->r, wall_ms(), err), -EINVAL);
	CHECK_EQ_STR(err, "probe.host.unknown[1]: the same key as [0]");

	h->n_unknown = 1;
	CHECK_OK(codec_validate_report(&f->r, wall_ms(), err));
	o = pbjson_from_message(&h->base);
	CHECK_(o && json_object_object_get_ex(o, "cpu_sockets", &item) &&
		       !strcmp(json_object_to_json_string_ext(
				       item, JSON_C_TO_STRING_PLAIN),
			       "{\"unknown\":\"EACCES\"}"),
	       "%s", "an unknown item the .proto does not name shows");
	json_object_put(o);

	h->unknown = saved;
	h->n_unknown = n_saved;
	h->hostname = hostname;
}

/*
 * The probe in two as the collector writes it (probe_part, probe_rest):
 * pbjson_from_fields() of the rest's sections, and of all but them, whose
 * text is the whole probe's with those keys deleted, key for key in the
 * same order (the text whose digest finds a stored part).
 */
static void check_split(const Fleetbench__Probe *probe,
			struct json_object *whole, const char *what)
{
	static const char *const rest_keys[] = { "meta", "host", "steal",
						 "psi", "vmstat" };
	const int flags = JSON_C_TO_STRING_PLAIN;
	struct json_object *rest, *part, *cut;
	size_t n = sizeof(rest_keys) / sizeof(*rest_keys);

	rest = pbjson_from_fields(&probe->base, rest_keys, n, true);
	part = pbjson_from_fields(&probe->base, rest_keys, n, false);
	cut = json_tokener_parse(json_object_to_json_string_ext(whole, flags));
	CHECK_(rest && part && cut, "%s: the split", what);
	if (rest && part && cut) {
		CHECK_EQ_INT(json_object_object_length(rest), (int)n);
		for (size_t i = 0; i < n; i++) {
			struct json_object *v;

			CHECK_(json_object_object_get_ex(rest, rest_keys[i], &v) &&
				       json_object_equal(
					       v, json_object_object_get(
							  whole, rest_keys[i])),
			       "%s: rest.%s is the whole's", what, rest_keys[i]);
			json_object_object_del(cut, rest_keys[i]);
		}
		CHECK_EQ_STR(json_object_to_json_string_ext(part, flags),
			     json_object_to_json_string_ext(cut, flags));
	}
	errno = 0;
	CHECK(!pbjson_from_fields(&probe->base, rest_keys, 0, true) &&
	      errno == EINVAL);
	json_object_put(rest);
	json_object_put(part);
	json_object_put(cut);
}

/*
 * The probe's JSON as the typed Probe: valid, and through pack and unpack
 * it walks back to the same JSON. Beside probe_json it is refused, and a
 * report with neither is; a probe string over its limit is named.
 */
static void check_typed_probe(struct fixture *f, const char *json,
			      const char *what)
{
	struct json_object *o = json_tokener_parse(json), *back = NULL;
	ProtobufCMessage *m = NULL;
	Fleetbench__Report *u = NULL;
	char err[CODEC_ERR_LEN], why[PBJSON_ERR_LEN];
	uint8_t *buf = NULL;
	size_t len;

	CHECK_(o && pbjson_to_message(&fleetbench__probe__descriptor, o, &m,
				      why) == 0,
	       "%s: %s", what, why);
	if (!m) {
		json_object_put(o);
		return;
	}
	f->r.probe = (Fleetbench__Probe *)m;
	f->r.probe_json = (char *)json;
	CHECK_EQ_INT(codec_validate_report(&f->r, wall_ms(), err), -EINVAL);
	CHECK_EQ_STR(err, "probe_json: set beside probe; a report holds one of them");
	f->r.probe_json = NULL;
	CHECK_OK(codec_validate_report(&f->r, wall_ms(), err));
	CHECK_(!err[0], "%s, typed: %s", what, err);
	CHECK_OK(codec_pack_report(&f->r, &buf, &len));
	if (buf) {
		CHECK_OK(codec_unpack_report(buf, len, &u, err));
		free(buf);
	}
	if (u)
		back = pbjson_from_message(&u->probe->base);
	CHECK_(back && json_object_equal(back, o), "%s: the typed probe does not walk back to itself", what);
	if (back)
		check_split(u->probe, back, what);
	json_object_put(back);
	codec_free_report(u);

	/* a string in the probe is held to 8192 bytes, and named (where the
	 * probe read the command line: where it did not, the item is in
	 * kernel.unknown, and a value beside that is refused) */
	if (f->r.probe->kernel && f->r.probe->kernel->cmdline) {
		char *saved = f->r.probe->kernel->cmdline;
		char *big = malloc(CODEC_MAX_PROBE_STRING + 2);

		if (big) {
			memset(big, 'x', CODEC_MAX_PROBE_STRING + 1);
			big[CODEC_MAX_PROBE_STRING + 1] = '\0';
			f->r.probe->kernel->cmdline = big;
			CHECK_EQ_INT(codec_validate_report(&f->r, wall_ms(), err),
				     -EINVAL);
			CHECK_EQ_STR(err, "probe.kernel.cmdline: 8193 bytes, limit 8192");
			big[CODEC_MAX_PROBE_STRING] = '\0';
			CHECK_OK(codec_validate_report(&f->r, wall_ms(), err));
			f->r.probe->kernel->cmdline = saved;
			free(big);
		}
	}
	if (f->r.probe->host)
		check_probe_unknown(f);
	f->r.probe = NULL;
	CHECK_EQ_INT(codec_validate_report(&f->r, wall_ms(), err), -EINVAL);
	CHECK_EQ_STR(err, "probe: missing (and no probe_json)");
	protobuf_c_message_free_unpacked(m, NULL);
	json_object_put(o);
}

/*
 * What the real agent's probe prints, on this machine and on the fixture
 * trees, is a probe_json the codec takes.
 */
static void test_real_probe(void)
{
	static const char *const roots[] = { "/", FIXTURE_DIR "/kvm-guest",
					     FIXTURE_DIR "/malformed",
					     FIXTURE_DIR "/old-kernel",
					     FIXTURE_DIR "/psi-cmdline" };
	const char *agent = getenv("AGENT");
	struct fixture f;
	char err[CODEC_ERR_LEN];

	CHECK_(agent != NULL, "%s", "AGENT is not set (ctest sets it)");
	if (!agent)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(roots); i++) {
		char *const argv[] = { (char *)agent, "probe", "--json",
				       "--steal-window", "0", "--root",
				       (char *)roots[i], NULL };
		struct run_result res;
		int r = run_program(argv, (uid_t)-1, &res);

		CHECK_OK(r);
		if (r < 0)
			continue;
		CHECK_EQ_INT(res.status, 0);
		fixture_init(&f);
		f.r.probe_json = res.out;
		CHECK_OK(codec_validate_report(&f.r, wall_ms(), err));
		CHECK_(!err[0], "%s: %s", roots[i], err);
		check_typed_probe(&f, res.out, roots[i]);
		run_result_release(&res);
	}
}

int main(void)
{
	test_probe_json();
	test_real_probe();
	return check_summary();
}
