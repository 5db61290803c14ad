/* SPDX-License-Identifier: MIT */
/*
 * The codec: a realistic Report survives pack and unpack unchanged; the
 * schema, ids, structure, times and counts rules of docs/wire.md refuse
 * what they name, with the field path in the reason, both when validating a
 * built Report and when the same Report arrives as bytes. The string and
 * number rules are in test_codec_values.c, method and capabilities in
 * test_codec_caps.c, probe_json and the typed probe in test_codec_probe.c,
 * hostile bytes, Acks and Offers in test_codec_wire.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "codec_test.h"

static void test_round_trip(void)
{
	struct fixture f;
	char err[CODEC_ERR_LEN];
	Fleetbench__Report *u = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;

	fixture_init(&f);
	CHECK_OK(codec_validate_report(&f.r, wall_ms(), err));
	CHECK_EQ_STR(err, "");
	CHECK_OK(codec_pack_report(&f.r, &buf, &len));
	CHECK(len > 0 && len < 4096);
	CHECK_OK(codec_unpack_report(buf, len, &u, err));
	CHECK_EQ_STR(err, "");
	free(buf);
	if (!u)
		return;

	CHECK_EQ_INT(u->schema_version, 1);
	CHECK_EQ_STR(u->run_id, RUN_ID);
	CHECK_EQ_STR(u->agent_version, "0.1.0");
	CHECK_EQ_STR(u->host->provider, "aws");
	CHECK_EQ_STR(u->host->instance_type, "m7i.large");
	CHECK_EQ_STR(u->host->region, "eu-west-1");
	CHECK_EQ_STR(u->host->hostname, "ip-10-0-0-17");
	CHECK_EQ_STR(u->host->machine_id, MACHINE_ID);
	CHECK_EQ_STR(u->host->provider_source, "flag");
	CHECK_EQ_STR(u->host->instance_type_source, "dmi");
	CHECK_EQ_STR(u->host->region_source, "config");
	CHECK_EQ_STR(u->kernel->release, f.kernel.release);
	CHECK_EQ_STR(u->kernel->version, f.kernel.version);
	CHECK_EQ_STR(u->kernel->cmdline, f.kernel.cmdline);
	CHECK_EQ_INT(u->started_unix_ms, f.r.started_unix_ms);
	CHECK_EQ_INT(u->finished_unix_ms, f.r.finished_unix_ms);
	CHECK_EQ_STR(u->probe_json, fixture_probe_json);
	CHECK_EQ_STR(u->profile, "quick");
	CHECK(u->has_seed && u->seed == 1234567890123LL);

	CHECK_EQ_INT(u->n_benchmarks, 2);
	if (u->n_benchmarks == 2) {
		const Fleetbench__Benchmark *b = u->benchmarks[0];

		CHECK_EQ_STR(b->benchmark, "thp_chase");
		CHECK_EQ_STR(b->variant, "thp_always");
		CHECK(b->skip_reason == NULL);
		CHECK_EQ_INT(b->n_parameters, 6);
		for (size_t i = 0; i < b->n_parameters && i < 6; i++) {
			CHECK_EQ_STR(b->parameters[i]->key, f.p[i].key);
			CHECK_EQ_INT(b->parameters[i]->value_case,
				     f.p[i].value_case);
		}
		CHECK_EQ_INT(b->parameters[0]->int_value, 1LL << 30);
		CHECK_EQ_STR(b->parameters[1]->string_value, "always");
		CHECK(b->parameters[2]->double_value == 0.975);
		CHECK_EQ_INT(b->parameters[3]->bool_value, 1);
		CHECK_EQ_INT(b->parameters[4]->int_value, -3);
		CHECK_EQ_INT(b->n_metrics, 2);
		for (size_t i = 0; i < b->n_metrics && i < 2; i++) {
			CHECK_EQ_STR(b->metrics[i]->metric, f.m[i].metric);
			CHECK_EQ_STR(b->metrics[i]->unit, f.m[i].unit);
			CHECK_EQ_INT(b->metrics[i]->n_samples, 5);
			CHECK(b->metrics[i]->n_samples == 5 &&
			      !memcmp(b->metrics[i]->samples, f.m[i].samples,
				      5 * sizeof(double)));
		}
		CHECK_EQ_INT(b->n_windows, 5);
		for (size_t i = 0; i < b->n_windows && i < 5; i++) {
			const Fleetbench__Window *w = b->windows[i];

			CHECK_EQ_INT(w->has_steal_pct, i != 4);
			CHECK(w->steal_pct == f.w[i].steal_pct || i == 4);
			CHECK(w->loadavg1 == f.w[i].loadavg1);
			CHECK(w->wall_s == f.w[i].wall_s);
			CHECK_EQ_INT(w->noisy, i == 3);
		}
		CHECK_EQ_STR(u->benchmarks[1]->variant, "thp_never");
		CHECK_EQ_STR(u->benchmarks[1]->skip_reason,
			     f.b[1].skip_reason);
		CHECK_EQ_INT(u->benchmarks[1]->n_metrics, 0);
	}
	CHECK_EQ_INT(u->n_comparisons, 2);
	if (u->n_comparisons == 2) {
		const Fleetbench__Comparison *c = u->comparisons[0];

		CHECK_EQ_STR(c->name, "thp_gain");
		CHECK_EQ_STR(c->numerator, "thp_never");
		CHECK_EQ_STR(c->denominator, "thp_always");
		CHECK(c->has_ratio && c->ratio == 1.42);
		CHECK(c->has_ci_low && c->ci_low == 1.38);
		CHECK(c->has_ci_high && c->ci_high == 1.47);
		CHECK(c->has_level && c->level == 0.95);
		CHECK_EQ_STR(c->method, f.c[0].method);
		CHECK(!u->comparisons[1]->has_ratio);
		CHECK_EQ_STR(u->comparisons[1]->reason, "thp_never was skipped");
	}
	codec_free_report(u);
	codec_free_report(NULL);

	/* a probe-only run: no benchmarks, no profile, no seed */
	fixture_init(&f);
	f.r.n_benchmarks = f.r.n_comparisons = 0;
	f.r.profile = NULL;
	f.r.has_seed = 0;
	f.host.provider = f.host.provider_source = NULL;
	expect_valid(&f);
}

static void test_schema_and_ids(void)
{
	struct fixture f;
	char err[CODEC_ERR_LEN];
	uint8_t *buf;
	size_t len;

	fixture_init(&f);
	f.r.schema_version = 2;
	expect_invalid(&f, "schema_version: 2 is not supported (expected 1)");
	f.r.schema_version = 0;
	expect_invalid(&f, "schema_version: 0 is not supported (expected 1)");

	/* a run_id NULL is "missing" to validation, refused by pack */
	fixture_init(&f);
	f.r.run_id = NULL;
	CHECK_EQ_INT(codec_validate_report(&f.r, wall_ms(), err), -EINVAL);
	CHECK_EQ_STR(err, "run_id: missing");
	CHECK_EQ_INT(codec_pack_report(&f.r, &buf, &len), -EINVAL);

	fixture_init(&f);
	f.r.host = NULL;
	CHECK_EQ_INT(codec_validate_report(&f.r, wall_ms(), err), -EINVAL);
	CHECK_EQ_STR(err, "host: missing");
	CHECK_EQ_INT(codec_pack_report(&f.r, &buf, &len), -EINVAL);
	CHECK_EQ_INT(codec_validate_report(NULL, wall_ms(), err), -EINVAL);

}

static void test_times(void)
{
	struct fixture f;
	char want[CODEC_ERR_LEN];
	int64_t now = wall_ms();

	fixture_init(&f);
	f.r.started_unix_ms = 1000;
	expect_invalid(&f, "started_unix_ms: 1000 is before 2020-01-01");
	f.r.started_unix_ms = CODEC_MIN_TIME_MS - 1;
	expect_invalid(&f,
		       "started_unix_ms: 1577836799999 is before 2020-01-01");
	f.r.started_unix_ms = -5;
	expect_invalid(&f, "started_unix_ms: -5 is before 2020-01-01");
	f.r.started_unix_ms = CODEC_MIN_TIME_MS;
	expect_valid(&f);

	fixture_init(&f);
	f.r.finished_unix_ms = now + 2 * DAY_MS;
	snprintf(want, sizeof(want),
		 "finished_unix_ms: %lld is more than a day in the future",
		 (long long)f.r.finished_unix_ms);
	expect_invalid(&f, want);
	f.r.finished_unix_ms = INT64_MAX;
	snprintf(want, sizeof(want),
		 "finished_unix_ms: %lld is more than a day in the future",
		 (long long)INT64_MAX);
	expect_invalid(&f, want);
	/* a clock a few hours ahead is tolerated */
	f.r.finished_unix_ms = now + DAY_MS / 4;
	expect_valid(&f);

	fixture_init(&f);
	f.r.finished_unix_ms = f.r.started_unix_ms - 1;
	expect_invalid(&f, "finished_unix_ms: before started_unix_ms");
	f.r.finished_unix_ms = f.r.started_unix_ms;
	expect_valid(&f);
}

/* n pointers to the same element, for repeated fields past their limit */
static void *copies(void *elt, size_t n)
{
	void **v = calloc(n, sizeof(*v));

	for (size_t i = 0; i < n; i++)
		v[i] = elt;
	return v;
}

static void test_counts(void)
{
	struct fixture f;
	double *samples;

	fixture_init(&f);
	f.r.benchmarks = copies(&f.b[1], CODEC_MAX_BENCHMARKS + 1);
	f.r.n_benchmarks = CODEC_MAX_BENCHMARKS + 1;
	expect_invalid(&f, "benchmarks: 257 entries, limit 256");
	/* at the limit the count passes; the copies are then duplicates */
	f.r.n_benchmarks = CODEC_MAX_BENCHMARKS;
	expect_invalid(&f,
		       "benchmarks[1]: same benchmark and variant as benchmarks[0]");
	free(f.r.benchmarks);

	fixture_init(&f);
	f.r.comparisons = copies(&f.c[0], CODEC_MAX_COMPARISONS + 1);
	f.r.n_comparisons = CODEC_MAX_COMPARISONS + 1;
	expect_invalid(&f, "comparisons: 257 entries, limit 256");
	/* at the limit the count passes; the copies are then duplicates */
	f.r.n_comparisons = CODEC_MAX_COMPARISONS;
	expect_invalid(&f, "comparisons[1].name: same as comparisons[0]");
	free(f.r.comparisons);

	fixture_init(&f);
	f.b[0].parameters = copies(&f.p[0], CODEC_MAX_PARAMS + 1);
	f.b[0].n_parameters = CODEC_MAX_PARAMS + 1;
	expect_invalid(&f, "benchmarks[0].parameters: 65 entries, limit 64");
	free(f.b[0].parameters);

	fixture_init(&f);
	f.b[0].metrics = copies(&f.m[0], CODEC_MAX_METRICS + 1);
	f.b[0].n_metrics = CODEC_MAX_METRICS + 1;
	expect_invalid(&f, "benchmarks[0].metrics: 33 entries, limit 32");
	free(f.b[0].metrics);

	fixture_init(&f);
	samples = calloc(CODEC_MAX_SAMPLES + 1, sizeof(*samples));
	for (size_t i = 0; i <= CODEC_MAX_SAMPLES; i++)
		samples[i] = 70 + (double)(i % 7);
	f.m[0].samples = samples;
	f.m[0].n_samples = CODEC_MAX_SAMPLES + 1;
	expect_invalid(&f,
		       "benchmarks[0].metrics[0].samples: 100001 entries, limit 100000");
	f.m[0].n_samples = CODEC_MAX_SAMPLES;
	expect_valid(&f);
	free(samples);

	/* the most windows allowed still decode within the unpack budget */
	fixture_init(&f);
	/* every field of the window set (issue 19 added ten) */
	f.w[0].has_psi_cpu_some_pct = f.w[0].has_psi_cpu_full_pct = 1;
	f.w[0].has_psi_io_some_pct = f.w[0].has_psi_io_full_pct = 1;
	f.w[0].has_psi_memory_some_pct = f.w[0].has_psi_memory_full_pct = 1;
	f.w[0].psi_cpu_some_pct = 1.5;
	f.w[0].noisy_reason = "steal 7.2% > 5%; cpu pressure 31.0% > 10%";
	f.w[0].cpus = "0,1";
	f.w[0].noisy = 1;
	f.b[0].windows = copies(&f.w[0], CODEC_MAX_WINDOWS + 1);
	f.b[0].n_windows = CODEC_MAX_WINDOWS + 1;
	expect_invalid(&f,
		       "benchmarks[0].windows: 20001 entries, limit 20000");
	f.b[0].n_windows = CODEC_MAX_WINDOWS;
	expect_valid(&f);
	free(f.b[0].windows);
}

static void test_structure(void)
{
	struct fixture f;
	/* one string of the fixture set to a value, and the reason */
	const struct {
		char **at;
		const char *value, *want;
	} cases[] = {
		{ &f.p[3].key, "chase_bytes",
		  "benchmarks[0].parameters[3].key: same as parameters[0]" },
		{ &f.m[1].metric, "ns_per_access",
		  "benchmarks[0].metrics[1].metric: same as metrics[0]" },
		{ &f.b[1].variant, "thp_always",
		  "benchmarks[1]: same benchmark and variant as benchmarks[0]" },
		/* required strings are not empty, optional ones may be */
		{ &f.b[1].benchmark, "", "benchmarks[1].benchmark: empty" },
		{ &f.host.hostname, "", "host.hostname: empty" },
		{ &f.p[2].key, "", "benchmarks[0].parameters[2].key: empty" },
		{ &f.c[0].denominator, "", "comparisons[0].denominator: empty" },
		{ &f.host.region, "", NULL },
		{ &f.r.run_id, "", "run_id: missing" },
		{ &f.r.run_id, "not-a-uuid",
		  "run_id: not a canonical lowercase UUID" },
		{ &f.r.run_id, "3F2B8C1E-9A4D-4E7F-B1C2-5D6E7F809A1B",
		  "run_id: not a canonical lowercase UUID" },
		{ &f.r.run_id, "{3f2b8c1e-9a4d-4e7f-b1c2-5d6e7f809a1b}",
		  "run_id: not a canonical lowercase UUID" },
		{ &f.host.machine_id, "0123456789ABCDEF0123456789ABCDEF",
		  "host.machine_id: not 32 lowercase hex digits" },
		{ &f.host.machine_id, "0123456789abcdef",
		  "host.machine_id: not 32 lowercase hex digits" },
		{ &f.host.region_source, "guess",
		  "host.region_source: not one of flag, config, dmi, none" },
		{ &f.host.region_source, "none", NULL },
		/* labels tables print: the tags' one rule for control
		 * characters (issue 38) */
		{ &f.host.provider, "\x1b[2J\x1b[31mevil",
		  "host.provider: holds a control character (byte 0)" },
		{ &f.host.instance_type, "m5.large\naws",
		  "host.instance_type: holds a control character (byte 8)" },
		{ &f.host.region, "eu\xc2\x85",
		  "host.region: holds a control character (byte 2)" },
		{ &f.host.instance_type, "m5.large (\xc3\xa9t\xc3\xa9)", NULL },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		fixture_init(&f);
		*cases[i].at = (char *)cases[i].value;
		expect_case(&f, cases[i].want, i);
	}
	fixture_init(&f);
	f.p[1].value_case = FLEETBENCH__PARAM__VALUE__NOT_SET;
	expect_invalid(&f, "benchmarks[0].parameters[1]: no value");
}

int main(void)
{
	test_round_trip();
	test_schema_and_ids();
	test_times();
	test_counts();
	test_structure();
	return check_summary();
}
