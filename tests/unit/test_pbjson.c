/* SPDX-License-Identifier: MIT */
/*
 * pbjson: a whole Report, packed and unpacked by the codec, walks to the
 * JSON written out here (every field type fleetbench.proto uses: integers
 * of each width and sign, double, bool, strings, an enum, a oneof, packed
 * doubles, repeated strings and messages, optional fields set and unset);
 * an Ack's enum is its name; a message of every protobuf-c type
 * (tests/unit/pbjson_test.proto) maps as pbjson.h says, with NaN and the
 * infinities as strings, bytes in base64 and bad UTF-8 replaced, so the
 * text is always strict JSON.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "check.h"
#include "cleanup.h"
#include "codec.h"
#include "pbjson.h"
#include "pbjson_test.pb-c.h"

#define RUN_ID "3f2b8c1e-9a4d-4e7f-b1c2-5d6e7f809a1b"
#define MACHINE_ID "0123456789abcdef0123456789abcdef"

/* Parses text strictly (no NaN, no trailing commas): valid JSON or NULL. */
static struct json_object *parse_strict(const char *text)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o;

	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, text, (int)strlen(text) + 1);
	if (json_tokener_get_error(tok) != json_tokener_success) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

/* got equals the JSON text want, and got's own text parses strictly back
 * to the same tree. */
static void expect_json_(struct json_object *got, const char *want, int line)
{
	struct json_object *w = parse_strict(want);
	const char *text = json_object_to_json_string_ext(
		got, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	struct json_object *back = parse_strict(text);

	CHECK_(w != NULL, "line %d: the expected text is not JSON", line);
	CHECK_(json_object_equal(got, w), "line %d: got\n%s\nexpected\n%s",
	       line, text, json_object_to_json_string_ext(
				   w, JSON_C_TO_STRING_PLAIN |
					      JSON_C_TO_STRING_NOSLASHESCAPE));
	CHECK_(back && json_object_equal(back, got),
	       "line %d: the walker's text does not parse back: %s", line,
	       text);
	json_object_put(back);
	json_object_put(w);
}
#define expect_json(got, want) expect_json_(got, want, __LINE__)

/* ---- a whole Report ---- */

static const char report_json[] =
	"{\"schema_version\": 1, \"run_id\": \"" RUN_ID "\","
	" \"agent_version\": \"0.1.0\","
	" \"host\": {\"provider\": \"aws\", \"hostname\": \"ip-10-0-0-17\","
	"  \"machine_id\": \"" MACHINE_ID "\", \"provider_source\": \"flag\","
	"  \"region_source\": \"none\"},"
	" \"kernel\": {\"release\": \"6.1.0-18-amd64\", \"cmdline\": \"ro quiet\"},"
	" \"started_unix_ms\": 1700000000000, \"finished_unix_ms\": 1700000090000,"
	" \"probe_json\": \"{\\\"schema\\\":1,\\\"note\\\":\\\"caf\\u00e9\\\"}\","
	" \"benchmarks\": ["
	"  {\"benchmark\": \"thp_chase\", \"variant\": \"thp_always\","
	"   \"parameters\": ["
	"    {\"key\": \"chase_bytes\", \"int_value\": 1073741824},"
	"    {\"key\": \"fill_delta\", \"int_value\": -3},"
	"    {\"key\": \"thp_enabled\", \"string_value\": \"always\"},"
	"    {\"key\": \"target_fraction\", \"double_value\": 0.975},"
	"    {\"key\": \"pinned\", \"bool_value\": true}],"
	"   \"metrics\": [{\"metric\": \"ns_per_access\", \"unit\": \"ns\","
	"    \"samples\": [71.5, 72.0, 0.1]}],"
	"   \"windows\": [{\"steal_pct\": 0.5, \"loadavg1\": 0.25,"
	"     \"wall_s\": 1.5, \"noisy\": false}, {\"wall_s\": 1.5},"
	"    {\"noisy\": true}]},"
	"  {\"benchmark\": \"thp_chase\", \"variant\": \"thp_never\","
	"   \"skip_reason\": \"THP mode cannot be set: not root\","
	"   \"parameters\": [], \"metrics\": [], \"windows\": []},"
	"  {\"benchmark\": \"randread\", \"variant\": \"io_uring_sqpoll\","
	"   \"parameters\": [], \"metrics\": [], \"windows\": [],"
	"   \"failure\": \"SIGSEGV in randread/io_uring_sqpoll\"}],"
	" \"comparisons\": ["
	"  {\"name\": \"thp_gain\", \"benchmark\": \"thp_chase\","
	"   \"metric\": \"ns_per_access\", \"numerator\": \"thp_never\","
	"   \"denominator\": \"thp_always\", \"ratio\": 1.42, \"ci_low\": 1.38,"
	"   \"ci_high\": 1.47, \"level\": 0.95, \"method\": \"bootstrap\"},"
	"  {\"name\": \"thp_gain_madvise\", \"benchmark\": \"thp_chase\","
	"   \"metric\": \"ns_per_access\", \"numerator\": \"thp_never\","
	"   \"denominator\": \"thp_madvise\", \"reason\": \"thp_never was skipped\"}],"
	" \"profile\": \"quick\", \"seed\": -42,"
	" \"method\": {\"key\": \"quick+chase_bytes=1T+only=thp_chase\","
	"  \"profile\": \"quick\", \"repeats\": 3, \"chase_bytes\": 1099511627776,"
	"  \"chase_accesses\": 1000000, \"fault_bytes\": 67108864,"
	"  \"file_bytes\": 268435456, \"io_ms\": 2000, \"iodepth\": 32,"
	"  \"seq_bytes\": 268435456, \"seq_block\": 1048576,"
	"  \"fs_increments\": 1000, \"only\": [\"thp_chase\"],"
	"  \"randread_file\": true},"
	" \"capabilities\": {\"thp_enabled\": \"madvise\","
	"  \"thp_defrag\": \"defer+madvise\","
	"  \"hugepages\": [{\"size_kb\": 2048, \"nr\": 512, \"free\": 500},"
	"   {\"size_kb\": 1048576, \"nr\": 0}],"
	"  \"io_uring_disabled\": 0, \"io_uring_setup\": \"ok\","
	"  \"io_uring_setup_errno\": 0, \"sqpoll\": \"EPERM\","
	"  \"sqpoll_errno\": 1, \"io_uring_opcodes\": [\"NOP\", \"READV\"],"
	"  \"io_uring_features\": [], \"vcpus\": 2, \"memory_kb\": 4015608,"
	"  \"cpu_model\": \"AMD EPYC 7B13\", \"vm\": \"kvm\"},"
	" \"tags\": [], \"costs\": []}";

static void test_report(void)
{
	Fleetbench__Host host = FLEETBENCH__HOST__INIT;
	Fleetbench__Kernel kernel = FLEETBENCH__KERNEL__INIT;
	Fleetbench__Param p[5] = {
		FLEETBENCH__PARAM__INIT, FLEETBENCH__PARAM__INIT,
		FLEETBENCH__PARAM__INIT, FLEETBENCH__PARAM__INIT,
		FLEETBENCH__PARAM__INIT,
	}, *pp[5] = { &p[0], &p[1], &p[2], &p[3], &p[4] };
	double samples[] = { 71.5, 72.0, 0.1 };
	Fleetbench__Metric m = FLEETBENCH__METRIC__INIT, *mp = &m;
	Fleetbench__Window w[3] = { FLEETBENCH__WINDOW__INIT,
				    FLEETBENCH__WINDOW__INIT,
				    FLEETBENCH__WINDOW__INIT },
			   *wp[3] = { &w[0], &w[1], &w[2] };
	Fleetbench__Benchmark b[3] = { FLEETBENCH__BENCHMARK__INIT,
				       FLEETBENCH__BENCHMARK__INIT,
				       FLEETBENCH__BENCHMARK__INIT },
			      *bp[3] = { &b[0], &b[1], &b[2] };
	Fleetbench__Comparison c[2] = { FLEETBENCH__COMPARISON__INIT,
					FLEETBENCH__COMPARISON__INIT },
			       *cp[2] = { &c[0], &c[1] };
	Fleetbench__Method method = FLEETBENCH__METHOD__INIT;
	Fleetbench__Capabilities caps = FLEETBENCH__CAPABILITIES__INIT;
	Fleetbench__HugepagePool h[2] = { FLEETBENCH__HUGEPAGE_POOL__INIT,
					  FLEETBENCH__HUGEPAGE_POOL__INIT },
				 *hp[2] = { &h[0], &h[1] };
	Fleetbench__Report r = FLEETBENCH__REPORT__INIT, *u = NULL;
	char *only[] = { "thp_chase" }, *ops[] = { "NOP", "READV" };
	char err[CODEC_ERR_LEN] = "";
	uint8_t *buf = NULL;
	struct json_object *o;
	size_t len = 0;
	int ret;

	host.provider = "aws";
	host.hostname = "ip-10-0-0-17";
	host.machine_id = MACHINE_ID;
	host.provider_source = "flag";
	host.region_source = "none";
	kernel.release = "6.1.0-18-amd64";
	kernel.cmdline = "ro quiet";

	p[0].key = "chase_bytes";
	p[0].value_case = FLEETBENCH__PARAM__VALUE_INT_VALUE;
	p[0].int_value = 1LL << 30;
	p[1].key = "fill_delta";
	p[1].value_case = FLEETBENCH__PARAM__VALUE_INT_VALUE;
	p[1].int_value = -3;
	p[2].key = "thp_enabled";
	p[2].value_case = FLEETBENCH__PARAM__VALUE_STRING_VALUE;
	p[2].string_value = "always";
	p[3].key = "target_fraction";
	p[3].value_case = FLEETBENCH__PARAM__VALUE_DOUBLE_VALUE;
	p[3].double_value = 0.975;
	p[4].key = "pinned";
	p[4].value_case = FLEETBENCH__PARAM__VALUE_BOOL_VALUE;
	p[4].bool_value = 1;
	m.metric = "ns_per_access";
	m.unit = "ns";
	m.n_samples = 3;
	m.samples = samples;
	w[0].has_steal_pct = w[0].has_loadavg1 = w[0].has_wall_s = 1;
	w[0].has_noisy = 1;
	w[0].steal_pct = 0.5;
	w[0].loadavg1 = 0.25;
	w[0].wall_s = 1.5;
	w[1].has_wall_s = 1;
	w[1].wall_s = 1.5;
	w[2].has_noisy = w[2].noisy = 1;
	b[0].benchmark = b[1].benchmark = "thp_chase";
	b[0].variant = "thp_always";
	b[0].n_parameters = 5;
	b[0].parameters = pp;
	b[0].n_metrics = 1;
	b[0].metrics = &mp;
	b[0].n_windows = 3;
	b[0].windows = wp;
	b[1].variant = "thp_never";
	b[1].skip_reason = "THP mode cannot be set: not root";
	b[2].benchmark = "randread";
	b[2].variant = "io_uring_sqpoll";
	b[2].failure = "SIGSEGV in randread/io_uring_sqpoll";
	for (size_t i = 0; i < 2; i++) {
		c[i].benchmark = "thp_chase";
		c[i].metric = "ns_per_access";
		c[i].numerator = "thp_never";
	}
	c[0].name = "thp_gain";
	c[0].denominator = "thp_always";
	c[0].has_ratio = c[0].has_ci_low = c[0].has_ci_high = 1;
	c[0].has_level = 1;
	c[0].ratio = 1.42;
	c[0].ci_low = 1.38;
	c[0].ci_high = 1.47;
	c[0].level = 0.95;
	c[0].method = "bootstrap";
	c[1].name = "thp_gain_madvise";
	c[1].denominator = "thp_madvise";
	c[1].reason = "thp_never was skipped";

	method.key = "quick+chase_bytes=1T+only=thp_chase";
	method.profile = "quick";
	method.repeats = 3;
	method.chase_bytes = 1ULL << 40;
	method.chase_accesses = 1000000;
	method.fault_bytes = 64u << 20;
	method.file_bytes = method.seq_bytes = 256u << 20;
	method.io_ms = 2000;
	method.iodepth = 32;
	method.seq_block = 1u << 20;
	method.fs_increments = 1000;
	method.n_only = 1;
	method.only = only;
	method.randread_file = 1;

	h[0].size_kb = 2048;
	h[0].has_nr = h[0].has_free = 1;
	h[0].nr = 512;
	h[0].free = 500;
	h[1].size_kb = 1048576;
	h[1].has_nr = 1;
	caps.thp_enabled = "madvise";
	caps.thp_defrag = "defer+madvise";
	caps.n_hugepages = 2;
	caps.hugepages = hp;
	caps.has_io_uring_disabled = 1;
	caps.io_uring_setup = "ok";
	caps.has_io_uring_setup_errno = 1;
	caps.sqpoll = "EPERM";
	caps.has_sqpoll_errno = 1;
	caps.sqpoll_errno = EPERM;
	caps.n_io_uring_opcodes = 2;
	caps.io_uring_opcodes = ops;
	caps.has_vcpus = caps.has_memory_kb = 1;
	caps.vcpus = 2;
	caps.memory_kb = 4015608;
	caps.cpu_model = "AMD EPYC 7B13";
	caps.vm = "kvm";

	r.schema_version = FLEETBENCH__SCHEMA_VERSION__CURRENT;
	r.run_id = RUN_ID;
	r.agent_version = "0.1.0";
	r.host = &host;
	r.kernel = &kernel;
	r.started_unix_ms = 1700000000000LL;
	r.finished_unix_ms = 1700000090000LL;
	r.probe_json = "{\"schema\":1,\"note\":\"caf\xc3\xa9\"}";
	r.n_benchmarks = 3;
	r.benchmarks = bp;
	r.n_comparisons = 2;
	r.comparisons = cp;
	r.profile = "quick";
	r.has_seed = 1;
	r.seed = -42;
	r.method = &method;
	r.capabilities = &caps;

	/* through the wire, as the agent's show reads it */
	CHECK_OK(codec_pack_report(&r, &buf, &len));
	ret = codec_unpack_report(buf, len, &u, err);
	CHECK_(ret == 0, "codec_unpack_report: %d (%s)", ret, err);
	free(buf);
	if (!u)
		return;
	o = pbjson_from_message(&u->base);
	CHECK(o != NULL);
	if (o) {
		expect_json(o, report_json);
		/* the types, not only the values */
		CHECK(json_object_is_type(json_object_object_get(o, "seed"),
					  json_type_int));
		CHECK(json_object_is_type(
			json_object_array_get_idx(
				json_object_object_get(
					json_object_array_get_idx(
						json_object_object_get(
							json_object_array_get_idx(
								json_object_object_get(
									o, "benchmarks"),
								0),
							"metrics"),
						0),
					"samples"),
				1),
			json_type_double));
		/* unset optional fields are not there, not null */
		CHECK(!json_object_object_get_ex(
			json_object_object_get(o, "host"), "region", NULL));
		CHECK(!json_object_object_get_ex(
			json_object_object_get(o, "kernel"), "version", NULL));
	}
	json_object_put(o);
	codec_free_report(u);

	/* the same Report, walked as built, says the same */
	o = pbjson_from_message(&r.base);
	expect_json(o, report_json);
	json_object_put(o);
}

static void test_ack(void)
{
	Fleetbench__Ack *a = NULL;
	uint8_t *buf = NULL;
	struct json_object *o;
	size_t len = 0;

	CHECK_OK(codec_pack_ack(RUN_ID, FLEETBENCH__ACK__STATUS__REJECTED,
				"benchmarks[0]: empty", &buf, &len));
	CHECK_OK(codec_unpack_ack(buf, len, &a));
	free(buf);
	o = a ? pbjson_from_message(&a->base) : NULL;
	expect_json(o, "{\"run_id\": \"" RUN_ID "\", \"status\": \"REJECTED\","
		       " \"reason\": \"benchmarks[0]: empty\"}");
	json_object_put(o);
	codec_free_ack(a);
	a = NULL;

	CHECK_OK(codec_pack_ack(NULL, FLEETBENCH__ACK__STATUS__RETRY_LATER,
				NULL, &buf, &len));
	CHECK_OK(codec_unpack_ack(buf, len, &a));
	free(buf);
	o = a ? pbjson_from_message(&a->base) : NULL;
	expect_json(o, "{\"run_id\": \"\", \"status\": \"RETRY_LATER\"}");
	json_object_put(o);
	codec_free_ack(a);
}

/* ---- every protobuf-c type ---- */

static void test_all_types(void)
{
	static uint8_t raw[] = { 0x00, 0xff, 0x10 };
	static const char *const raw_text[] = { "", "f", "fo", "foo", "foob" };
	Pbjsontest__AllTypes t = PBJSONTEST__ALL_TYPES__INIT;
	Pbjsontest__AllTypes child = PBJSONTEST__ALL_TYPES__INIT;
	Pbjsontest__AllTypes kids[2] = { PBJSONTEST__ALL_TYPES__INIT,
					 PBJSONTEST__ALL_TYPES__INIT },
			     *kidp[2] = { &kids[0], &kids[1] };
	int32_t packed[] = { 1, -1, 300 };
	ProtobufCBinaryData raws[5];
	Pbjsontest__Color colors[] = { PBJSONTEST__COLOR__RED,
				       PBJSONTEST__COLOR__GREEN };
	float floats[] = { INFINITY, -INFINITY, 1.5f };
	double doubles[] = { -0.0, 1e300, -NAN };
	_cleanup_free_ uint8_t *buf = NULL;
	Pbjsontest__AllTypes *u;
	struct json_object *o, *fl;
	size_t len;

	t.has_i32 = t.has_s32 = t.has_sf32 = t.has_i64 = t.has_s64 = 1;
	t.has_sf64 = t.has_u32 = t.has_f32 = t.has_u64 = t.has_f64 = 1;
	t.has_fl = t.has_db = t.has_b = t.has_color = t.has_raw = 1;
	t.i32 = INT32_MIN;
	t.s32 = -5;
	t.sf32 = 7;
	t.i64 = INT64_MIN;
	t.s64 = -9;
	t.sf64 = INT64_MAX;
	t.u32 = UINT32_MAX;
	t.f32 = 123;
	t.u64 = UINT64_MAX;
	t.f64 = 1ULL << 63;
	t.fl = 0.1f;
	t.db = NAN;
	t.b = 1;
	t.color = PBJSONTEST__COLOR__BLUE;
	t.str = "caf\xc3\xa9 \xff! \xe2\x82";
	t.raw.data = raw;
	t.raw.len = sizeof(raw);
	child.id = 2;
	child.has_color = 1;
	child.color = 7; /* a value the .proto does not name */
	t.child = &child;
	t.n_packed_i32 = 3;
	t.packed_i32 = packed;
	for (size_t i = 0; i < 5; i++) {
		raws[i].data = (uint8_t *)raw_text[i];
		raws[i].len = strlen(raw_text[i]);
	}
	t.n_raws = 5;
	t.raws = raws;
	t.n_colors = 2;
	t.colors = colors;
	t.n_floats = 3;
	t.floats = floats;
	t.n_doubles = 3;
	t.doubles = doubles;
	kids[0].id = 3;
	kids[1].id = 4;
	kids[1].choice_case = PBJSONTEST__ALL_TYPES__CHOICE_NAME;
	kids[1].name = "x";
	t.n_children = 2;
	t.children = kidp;
	t.choice_case = PBJSONTEST__ALL_TYPES__CHOICE_NUMBER;
	t.number = -1;
	t.id = 1;

	len = protobuf_c_message_get_packed_size(&t.base);
	buf = malloc(len);
	CHECK_EQ_INT(protobuf_c_message_pack(&t.base, buf), len);
	u = pbjsontest__all_types__unpack(NULL, len, buf);
	CHECK(u != NULL);
	if (!u)
		return;
	o = pbjson_from_message(&u->base);
	CHECK(o != NULL);
	/* a float with its own 9 digits, not the double's 17 */
	fl = json_object_object_get(o, "fl");
	CHECK_EQ_STR(json_object_to_json_string(fl), "0.100000001");
	json_object_object_del(o, "fl");
	expect_json(o,
		    "{\"i32\": -2147483648, \"s32\": -5, \"sf32\": 7,"
		    " \"i64\": -9223372036854775808, \"s64\": -9,"
		    " \"sf64\": 9223372036854775807, \"u32\": 4294967295,"
		    " \"f32\": 123, \"u64\": 18446744073709551615,"
		    " \"f64\": 9223372036854775808, \"db\": \"NaN\","
		    " \"b\": true, \"color\": \"BLUE\","
		    " \"str\": \"caf\\u00e9 \\ufffd! \\ufffd\\ufffd\","
		    " \"raw\": \"AP8Q\","
		    " \"child\": {\"color\": 7, \"packed_i32\": [], \"raws\": [],"
		    "  \"colors\": [], \"floats\": [], \"doubles\": [],"
		    "  \"children\": [], \"id\": 2},"
		    " \"packed_i32\": [1, -1, 300],"
		    " \"raws\": [\"\", \"Zg==\", \"Zm8=\", \"Zm9v\", \"Zm9vYg==\"],"
		    " \"colors\": [\"RED\", \"GREEN\"],"
		    " \"floats\": [\"Infinity\", \"-Infinity\", 1.5],"
		    " \"doubles\": [-0.0, 1e300, \"NaN\"],"
		    " \"children\": ["
		    "  {\"packed_i32\": [], \"raws\": [], \"colors\": [],"
		    "   \"floats\": [], \"doubles\": [], \"children\": [], \"id\": 3},"
		    "  {\"packed_i32\": [], \"raws\": [], \"colors\": [],"
		    "   \"floats\": [], \"doubles\": [], \"children\": [],"
		    "   \"name\": \"x\", \"id\": 4}],"
		    " \"number\": -1, \"id\": 1}");
	/* a string that differs from the default is there, the default not */
	CHECK(!json_object_object_get_ex(o, "with_default", NULL));
	json_object_put(o);
	u->with_default = "set";
	o = pbjson_from_message(&u->base);
	CHECK_EQ_STR(json_object_get_string(
			     json_object_object_get(o, "with_default")),
		     "set");
	json_object_put(o);
	u->with_default = NULL;
	pbjsontest__all_types__free_unpacked(u, NULL);

	errno = 0;
	CHECK(pbjson_from_message(NULL) == NULL && errno == EINVAL);
}

int main(void)
{
	test_report();
	test_ack();
	test_all_types();
	return check_summary();
}
