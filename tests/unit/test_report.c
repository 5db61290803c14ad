/* SPDX-License-Identifier: MIT */
/* The probe report and the bench messages into the wire Report, through
 * the real codec; the typed probe, refusals and capabilities are
 * test_report_typed.c. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "bench.h"
#include "check.h"
#include "cleanup.h"
#include "clock.h"
#include "codec.h"
#include "pbjson.h"
#include "probe_test.h"
#include "report.h"
#include "test_report.h"

#define REPEATS 3
#define INCREMENTS 2000
#define FIXTURE "vps-thp-always"

static struct json_object *probe_with_labels(void)
{
	struct probe_opts opts = {
		.provider = { "aws", LABEL_FLAG },
		.instance_type = { "m5.large", LABEL_CONFIG },
	};

	return probe_fixture_opts(FIXTURE, NULL, &opts);
}

/* The false_sharing benchmark, tiny, for real bench output. */
static Fleetbench__BenchRun *bench_false_sharing(void)
{
	struct bench_params p = { 0 };
	Fleetbench__BenchRun *report = NULL;
	char err[256] = "";
	int r;

	CHECK_OK(bench_params_profile(&p, "quick"));
	p.profile = "quick";
	p.dir = "/tmp";
	p.repeats = REPEATS;
	p.fs_increments = INCREMENTS;
	p.steal_threshold_pct = 5;
	p.seed = 12345;
	r = bench_suite_run(&p, "false_sharing", &report, err, sizeof(err));
	CHECK_(r == 0, "bench_suite_run: %d (%s)", r, err);
	return report;
}

static const Fleetbench__Param *param_of(const Fleetbench__Benchmark *b,
					 const char *key)
{
	for (size_t i = 0; i < b->n_parameters; i++)
		if (!strcmp(b->parameters[i]->key, key))
			return b->parameters[i];
	return NULL;
}

/* Whether messages a and b of one type pack to the same bytes. */
static bool same_message(const ProtobufCMessage *a, const ProtobufCMessage *b)
{
	size_t la = protobuf_c_message_get_packed_size(a);
	size_t lb = protobuf_c_message_get_packed_size(b);
	_cleanup_free_ uint8_t *pa = malloc(la + 1), *pb = malloc(lb + 1);

	if (!pa || !pb || la != lb)
		return false;
	protobuf_c_message_pack(a, pa);
	protobuf_c_message_pack(b, pb);
	return !memcmp(pa, pb, la);
}

/* Every variant, metric, sample, window, parameter and comparison of the
 * bench run is in the Report as it was, and the run's own fields. */
static void check_benchmarks(const Fleetbench__Report *r,
			     const Fleetbench__BenchRun *bench)
{
	CHECK(bench->n_benchmarks > 0);
	CHECK_EQ_INT(r->n_benchmarks, bench->n_benchmarks);
	for (size_t i = 0; i < r->n_benchmarks && i < bench->n_benchmarks;
	     i++) {
		const Fleetbench__Benchmark *b = r->benchmarks[i];

		CHECK_(same_message(&b->base, &bench->benchmarks[i]->base),
		       "benchmark %zu (%s/%s) differs", i, b->benchmark,
		       b->variant);
		CHECK(b->skip_reason == NULL && b->failure == NULL);
		CHECK(b->n_metrics > 0 && b->n_parameters > 0);
		for (size_t m = 0; m < b->n_metrics; m++)
			CHECK_EQ_INT(b->metrics[m]->n_samples, REPEATS);
		CHECK_EQ_INT(b->n_windows, REPEATS);
	}
	CHECK(bench->n_comparisons > 0);
	CHECK_EQ_INT(r->n_comparisons, bench->n_comparisons);
	for (size_t i = 0; i < r->n_comparisons && i < bench->n_comparisons;
	     i++) {
		CHECK(same_message(&r->comparisons[i]->base,
				   &bench->comparisons[i]->base));
		CHECK(r->comparisons[i]->has_ratio &&
		      r->comparisons[i]->method != NULL);
	}
	CHECK(r->method && bench->method &&
	      same_message(&r->method->base, &bench->method->base));
	CHECK_EQ_STR(r->profile, "quick");
	CHECK(r->has_seed && r->seed == 12345);
}

/* The real probe and the real false_sharing benchmark, end to end. */
static void test_real_reports(void)
{
	struct json_object *probe = probe_with_labels();
	Fleetbench__BenchRun *bench = bench_false_sharing();
	struct json_object *back;
	Fleetbench__Report *rep = NULL, *out, *other = NULL;
	char err[REPORT_ERR_LEN] = "";
	int64_t t0 = wall_ms() - 30000, t1 = wall_ms();
	int r;

	CHECK(probe != NULL && bench != NULL);
	if (!probe || !bench)
		goto out;
	r = report_build(probe, bench, t0, t1, &rep, err);
	CHECK_(r == 0, "report_build: %d (%s)", r, err);
	if (r < 0)
		goto out;

	CHECK_EQ_INT(rep->schema_version, FLEETBENCH__SCHEMA_VERSION__CURRENT);
	CHECK(codec_uuid_valid(rep->run_id));
	CHECK_EQ_STR(rep->agent_version, FLEETBENCH_VERSION);
	CHECK_EQ_INT(rep->started_unix_ms, t0);
	CHECK_EQ_INT(rep->finished_unix_ms, t1);
	CHECK_EQ_STR(rep->host->hostname, jstr(probe, "host.hostname"));
	CHECK_EQ_STR(rep->host->machine_id, jstr(probe, "host.machine_id"));
	CHECK_EQ_INT(strlen(rep->host->machine_id), 32);
	CHECK_EQ_STR(rep->host->provider, "aws");
	CHECK_EQ_STR(rep->host->provider_source, "flag");
	CHECK_EQ_STR(rep->host->instance_type, "m5.large");
	CHECK_EQ_STR(rep->host->instance_type_source, "config");
	/* no region given and none in DMI: unknown, so unset, source none */
	CHECK(jis(probe, "labels.region.value", json_type_object));
	CHECK(rep->host->region == NULL);
	CHECK_EQ_STR(rep->host->region_source, "none");
	CHECK_EQ_STR(rep->kernel->release, jstr(probe, "kernel.release"));
	CHECK_EQ_STR(rep->kernel->version, jstr(probe, "kernel.version"));
	CHECK_EQ_STR(rep->kernel->cmdline, jstr(probe, "kernel.cmdline"));

	out = round_trip(rep);
	CHECK(out != NULL);
	if (out) {
		CHECK_EQ_STR(out->run_id, rep->run_id);
		check_benchmarks(out, bench);
		/* the probe travels whole, typed, and walks back to itself */
		CHECK(out->probe_json == NULL && out->probe != NULL);
		back = out->probe ? pbjson_from_message(&out->probe->base) :
				    NULL;
		CHECK(back != NULL);
		CHECK(json_object_equal(back, probe));
		json_object_put(back);
	}
	codec_free_report(out);
	/* the report has a copy: bench is the caller's still, whole */
	report_free(rep);
	rep = NULL;
	CHECK_OK(report_build(probe, bench, t0, t1, &rep, err));
	if (rep)
		check_benchmarks(rep, bench);

	/* each report gets its own run id */
	CHECK_OK(report_build(probe, NULL, t0, t1, &other, err));
	if (other) {
		CHECK(strcmp(other->run_id, rep->run_id) != 0);
		CHECK_EQ_INT(other->n_benchmarks, 0);
		CHECK_EQ_INT(other->n_comparisons, 0);
		CHECK(other->profile == NULL && !other->has_seed);
		out = round_trip(other);
		CHECK(out != NULL);
		codec_free_report(out);
	}
out:
	report_free(other);
	report_free(rep);
	bench_run_free(bench);
	json_object_put(probe);
}

/*
 * A bench run of every kind of field, on the stack: report_build() copies,
 * so the caller's messages need not come from malloc. Variant w is
 * skipped; the comparison has no ratio, for w was skipped.
 */
struct every_type {
	Fleetbench__Param pi, pd, pt, pf, ps, *params[5];
	double samples[2];
	Fleetbench__Metric m, *metrics[1];
	Fleetbench__Window w0, w1, *windows[2];
	Fleetbench__Benchmark v, w, *benchmarks[2];
	Fleetbench__Comparison c, *comparisons[1];
	Fleetbench__BenchRun run;
};

static void every_type_init(struct every_type *e)
{
	static const Fleetbench__Param param = FLEETBENCH__PARAM__INIT;
	static const Fleetbench__Window window = FLEETBENCH__WINDOW__INIT;
	static const Fleetbench__Benchmark bench = FLEETBENCH__BENCHMARK__INIT;

	e->pi = e->pd = e->pt = e->pf = e->ps = param;
	e->pi.key = "i";
	e->pi.value_case = FLEETBENCH__PARAM__VALUE_INT_VALUE;
	e->pi.int_value = -3;
	e->pd.key = "d";
	e->pd.value_case = FLEETBENCH__PARAM__VALUE_DOUBLE_VALUE;
	e->pd.double_value = 2.5;
	e->pt.key = "t";
	e->pt.value_case = FLEETBENCH__PARAM__VALUE_BOOL_VALUE;
	e->pt.bool_value = 1;
	e->pf.key = "f";
	e->pf.value_case = FLEETBENCH__PARAM__VALUE_BOOL_VALUE;
	e->ps.key = "s";
	e->ps.value_case = FLEETBENCH__PARAM__VALUE_STRING_VALUE;
	e->ps.string_value = "text";
	e->params[0] = &e->pi;
	e->params[1] = &e->pd;
	e->params[2] = &e->pt;
	e->params[3] = &e->pf;
	e->params[4] = &e->ps;
	e->samples[0] = 1;
	e->samples[1] = 2.5;
	fleetbench__metric__init(&e->m);
	e->m.metric = "m";
	e->m.unit = "ns";
	e->m.samples = e->samples;
	e->m.n_samples = 2;
	e->metrics[0] = &e->m;
	e->w0 = e->w1 = window;
	e->w0.has_loadavg1 = e->w0.has_wall_s = e->w0.has_noisy = 1;
	e->w0.loadavg1 = 0.5;
	e->w0.wall_s = 1.25;
	e->w0.noisy = 1;
	e->w1.has_steal_pct = 1;
	e->w1.steal_pct = 3;
	e->windows[0] = &e->w0;
	e->windows[1] = &e->w1;
	e->v = e->w = bench;
	e->v.benchmark = e->w.benchmark = "b";
	e->v.variant = "v";
	e->v.parameters = e->params;
	e->v.n_parameters = 5;
	e->v.metrics = e->metrics;
	e->v.n_metrics = 1;
	e->v.windows = e->windows;
	e->v.n_windows = 2;
	e->w.variant = "w";
	e->w.skip_reason = "EPERM";
	e->benchmarks[0] = &e->v;
	e->benchmarks[1] = &e->w;
	fleetbench__comparison__init(&e->c);
	e->c.name = "c";
	e->c.benchmark = "b";
	e->c.metric = "m";
	e->c.numerator = "v";
	e->c.denominator = "w";
	e->c.reason = "w was skipped";
	e->comparisons[0] = &e->c;
	fleetbench__bench_run__init(&e->run);
	e->run.profile = "standard";
	e->run.has_seed = 1;
	e->run.seed = 7;
	e->run.benchmarks = e->benchmarks;
	e->run.n_benchmarks = 2;
	e->run.comparisons = e->comparisons;
	e->run.n_comparisons = 1;
}

/* Parameters of every type, skipped variants, absent values. */
static void test_every_type(void)
{
	struct json_object *probe = probe_fixture(FIXTURE, NULL);
	struct every_type e;
	Fleetbench__Report *rep = NULL, *out;
	const Fleetbench__Benchmark *b;
	const Fleetbench__Param *p;
	char err[REPORT_ERR_LEN] = "";
	int64_t t = wall_ms();
	int r;

	every_type_init(&e);
	CHECK(probe != NULL);
	r = report_build(probe, &e.run, t, t, &rep, err);
	CHECK_(r == 0, "report_build: %d (%s)", r, err);
	out = rep ? round_trip(rep) : NULL;
	CHECK(out != NULL);
	if (!out)
		goto out;
	CHECK_EQ_STR(out->profile, "standard");
	CHECK(out->has_seed && out->seed == 7);
	CHECK(out->method == NULL);
	CHECK_EQ_INT(out->n_benchmarks, 2);
	b = out->benchmarks[0];
	CHECK_EQ_INT(b->n_parameters, 5);
	p = param_of(b, "i");
	CHECK(p && p->value_case == FLEETBENCH__PARAM__VALUE_INT_VALUE &&
	      p->int_value == -3);
	p = param_of(b, "d");
	CHECK(p && p->value_case == FLEETBENCH__PARAM__VALUE_DOUBLE_VALUE &&
	      p->double_value == 2.5);
	p = param_of(b, "t");
	CHECK(p && p->value_case == FLEETBENCH__PARAM__VALUE_BOOL_VALUE &&
	      p->bool_value);
	p = param_of(b, "f");
	CHECK(p && p->value_case == FLEETBENCH__PARAM__VALUE_BOOL_VALUE &&
	      !p->bool_value);
	p = param_of(b, "s");
	CHECK(p && p->value_case == FLEETBENCH__PARAM__VALUE_STRING_VALUE);
	CHECK_EQ_STR(p ? p->string_value : NULL, "text");
	CHECK_EQ_INT(b->n_metrics, 1);
	CHECK(b->metrics[0]->n_samples == 2 && b->metrics[0]->samples[0] == 1 &&
	      b->metrics[0]->samples[1] == 2.5);
	CHECK_EQ_INT(b->n_windows, 2);
	CHECK(!b->windows[0]->has_steal_pct && b->windows[0]->has_loadavg1 &&
	      b->windows[0]->loadavg1 == 0.5 && b->windows[0]->wall_s == 1.25 &&
	      b->windows[0]->has_noisy && b->windows[0]->noisy);
	CHECK(b->windows[1]->has_steal_pct && b->windows[1]->steal_pct == 3 &&
	      !b->windows[1]->has_loadavg1 && !b->windows[1]->has_noisy);
	b = out->benchmarks[1];
	CHECK_EQ_STR(b->skip_reason, "EPERM");
	CHECK(b->n_parameters == 0 && b->n_metrics == 0 && b->n_windows == 0);
	CHECK_EQ_INT(out->n_comparisons, 1);
	CHECK(!out->comparisons[0]->has_ratio &&
	      !out->comparisons[0]->has_ci_low &&
	      out->comparisons[0]->method == NULL);
	CHECK_EQ_STR(out->comparisons[0]->reason, "w was skipped");
	codec_free_report(out);
out:
	report_free(rep);
	json_object_put(probe);
}

/* A failed variant: Benchmark.failure, no skip_reason, nothing measured. */
static void test_failed(void)
{
	struct json_object *probe = probe_fixture(FIXTURE, NULL);
	struct every_type e;
	Fleetbench__Report *rep = NULL, *out = NULL;
	char err[REPORT_ERR_LEN] = "";
	int r;

	CHECK(probe != NULL);
	every_type_init(&e);
	e.w.skip_reason = NULL;
	e.w.failure = "SIGSEGV in randread/io_uring_sqpoll (repeat 2 of 3)";
	r = report_build(probe, &e.run, wall_ms(), wall_ms(), &rep, err);
	CHECK_(r == 0, "report_build: %d (%s)", r, err);
	if (rep)
		out = round_trip(rep);
	CHECK(out && out->n_benchmarks == 2);
	if (out && out->n_benchmarks == 2) {
		CHECK(out->benchmarks[0]->failure == NULL);
		CHECK_EQ_STR(out->benchmarks[1]->failure,
			     "SIGSEGV in randread/io_uring_sqpoll (repeat 2 of 3)");
		CHECK(out->benchmarks[1]->skip_reason == NULL);
		CHECK_EQ_INT(out->benchmarks[1]->n_metrics, 0);
		CHECK_EQ_INT(out->benchmarks[1]->n_windows, 0);
	}
	codec_free_report(out);
	report_free(rep);
	json_object_put(probe);
}

/* The method key: the profile alone, or the profile and each override. */
static void test_method(void)
{
	static const struct {
		const char *profile, *only;
		uint64_t chase_bytes;
		long long iodepth;
		bool file;
		const char *key;
		size_t n_only;
	} cases[] = {
		{ "standard", NULL, 0, 0, false, "standard", 0 },
		{ "quick", NULL, 0, 0, false, "quick", 0 },
		{ "standard", NULL, 64ULL << 20, 0, false,
		  "standard+chase_bytes=64M", 0 },
		/* in run order, whatever the order given */
		{ "quick", "seqwrite,randread", 0, 64, false,
		  "quick+iodepth=64+only=randread,seqwrite", 2 },
		/* every benchmark named is no subset */
		{ "full",
		  "thp_chase,thp_fault,randread,seqwrite,false_sharing,core_latency,writeback,mmap_read,membw,io_scaling,database",
		  (1ULL << 30) + 4096, 0, true,
		  "full+chase_bytes=1048580K+randread_file", 0 },
	};
	struct json_object *probe = probe_fixture(FIXTURE, NULL);

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct bench_params p = { 0 };
		Fleetbench__Method *m = NULL;
		struct every_type e;
		Fleetbench__Report *rep = NULL, *out = NULL;
		char err[REPORT_ERR_LEN] = "";

		CHECK_OK(bench_params_profile(&p, cases[i].profile));
		p.profile = (char *)cases[i].profile;
		if (cases[i].chase_bytes)
			p.chase_bytes = cases[i].chase_bytes;
		if (cases[i].iodepth)
			p.iodepth = cases[i].iodepth;
		if (cases[i].file)
			p.randread_file = (char *)"/dev/vda";
		CHECK_OK(bench_method_new(&p, cases[i].only, &m));
		if (!m)
			continue;
		CHECK_EQ_STR(m->key, cases[i].key);
		CHECK_EQ_INT(m->n_only, cases[i].n_only);
		/* and through the report and the codec */
		every_type_init(&e);
		e.run.method = m;
		CHECK_OK(report_build(probe, &e.run, wall_ms(), wall_ms(), &rep,
				      err));
		if (rep)
			out = round_trip(rep);
		CHECK(out && out->method);
		if (out && out->method) {
			CHECK_EQ_STR(out->method->key, cases[i].key);
			CHECK_EQ_STR(out->method->profile, cases[i].profile);
			CHECK_EQ_INT(out->method->chase_bytes, p.chase_bytes);
			CHECK_EQ_INT(out->method->iodepth, p.iodepth);
			CHECK_EQ_INT(out->method->repeats, p.repeats);
			CHECK_EQ_INT(out->method->randread_file, cases[i].file);
			CHECK_EQ_INT(out->method->n_only, cases[i].n_only);
		}
		codec_free_report(out);
		report_free(rep);
		fleetbench__method__free_unpacked(m, NULL);
	}
	CHECK(bench_method_new(&(struct bench_params){ .profile = "fast" },
			       NULL, &(Fleetbench__Method *){ NULL }) ==
	      -EINVAL);
	json_object_put(probe);
}

int main(void)
{
	test_real_reports();
	test_every_type();
	test_failed();
	test_method();
	return check_summary();
}
