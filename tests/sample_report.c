/* SPDX-License-Identifier: MIT */
/* Valid sample Reports for the test clients (sample_report.h). */
#include "clock.h"
#include "sample_report.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "codec.h"

/* The most of each that a shape makes; one more benchmark for text. */
#define MAX_BENCH 6
#define MAX_PARAMS 4
#define MAX_METRICS 3
#define MAX_SAMPLES 64
#define MAX_WINDOWS 3
#define MAX_COMPARISONS 2

static const char *const bench_names[] = { "thp_chase", "thp_fault",
					   "randread", "seqwrite",
					   "false_sharing" };

static const struct {
	const char *name, *unit;
} metric_kinds[MAX_METRICS] = {
	{ "ns_per_access", "ns" },
	{ "throughput", "MB/s" },
	{ "thp_fraction", "fraction" },
};

/* Everything a report points to, so that it lives on one stack frame. */
struct parts {
	Fleetbench__Host host;
	Fleetbench__Kernel kernel;
	Fleetbench__Benchmark b[MAX_BENCH];
	Fleetbench__Benchmark *bp[MAX_BENCH];
	Fleetbench__Param p[MAX_BENCH][MAX_PARAMS];
	Fleetbench__Param *pp[MAX_BENCH][MAX_PARAMS];
	Fleetbench__Metric m[MAX_BENCH][MAX_METRICS];
	Fleetbench__Metric *mp[MAX_BENCH][MAX_METRICS];
	double samples[MAX_BENCH][MAX_METRICS][MAX_SAMPLES];
	Fleetbench__Window w[MAX_BENCH][MAX_WINDOWS];
	Fleetbench__Window *wp[MAX_BENCH][MAX_WINDOWS];
	Fleetbench__Comparison c[MAX_COMPARISONS];
	Fleetbench__Comparison *cp[MAX_COMPARISONS];
	char variant[MAX_BENCH][16];
};

static void small_benchmark(struct parts *x)
{
	Fleetbench__Benchmark *b = &x->b[0];
	Fleetbench__Param *p = &x->p[0][0];
	Fleetbench__Metric *m = &x->m[0][0];

	x->samples[0][0][0] = 1.5;
	x->samples[0][0][1] = 2.25;
	x->samples[0][0][2] = 0.1;
	b->benchmark = "false_sharing";
	b->variant = "shared";
	p->key = "threads";
	p->value_case = FLEETBENCH__PARAM__VALUE_INT_VALUE;
	p->int_value = 2;
	b->n_parameters = 1;
	m->metric = "ns_per_increment";
	m->unit = "ns";
	m->n_samples = 3;
	m->samples = x->samples[0][0];
	b->n_metrics = 1;
}

/* Sample 1 of the small benchmark is 2^64 ns, in a 0.5 s window. */
static void out_of_bounds(struct parts *x)
{
	Fleetbench__Benchmark *b = &x->b[0];

	x->samples[0][0][1] = 18446744073709551616.0;
	b->n_windows = 3;
	for (unsigned k = 0; k < b->n_windows; k++) {
		x->w[0][k].has_wall_s = true;
		x->w[0][k].wall_s = 0.5;
	}
}

/* Benchmark i of shape n: its counts all vary with n and i. */
static void shaped_benchmark(struct parts *x, unsigned n, unsigned i)
{
	Fleetbench__Benchmark *b = &x->b[i];
	unsigned np = 1 + (n + i) % MAX_PARAMS;
	unsigned nm = 1 + (n + i) % MAX_METRICS;

	b->benchmark = (char *)bench_names[(n + i) % 5];
	snprintf(x->variant[i], sizeof(x->variant[i]), "v%u", i);
	b->variant = x->variant[i];
	for (unsigned k = 0; k < np; k++) {
		Fleetbench__Param *p = &x->p[i][k];

		switch (k) {
		case 0:
			p->key = "threads";
			p->value_case = FLEETBENCH__PARAM__VALUE_INT_VALUE;
			p->int_value = 1 + (n + k) % 16;
			break;
		case 1:
			p->key = "engine";
			p->value_case = FLEETBENCH__PARAM__VALUE_STRING_VALUE;
			p->string_value = n % 2 ? "io_uring" : "libaio";
			break;
		case 2:
			p->key = "ratio";
			p->value_case = FLEETBENCH__PARAM__VALUE_DOUBLE_VALUE;
			p->double_value = 0.25 * (n % 7);
			break;
		default:
			p->key = "direct";
			p->value_case = FLEETBENCH__PARAM__VALUE_BOOL_VALUE;
			p->bool_value = n % 2;
			break;
		}
	}
	b->n_parameters = np;
	for (unsigned k = 0; k < nm; k++) {
		Fleetbench__Metric *m = &x->m[i][k];
		unsigned ns = 1 + (n * 7 + i + k) % MAX_SAMPLES;

		m->metric = (char *)metric_kinds[k].name;
		m->unit = (char *)metric_kinds[k].unit;
		for (unsigned s = 0; s < ns; s++)
			/* in [0, 1): fits every unit, "fraction" too */
			x->samples[i][k][s] = (double)((n + s * 31 + k) % 1000) /
					      1000.0;
		m->n_samples = ns;
		m->samples = x->samples[i][k];
	}
	b->n_metrics = nm;
	b->n_windows = (n + i) % (MAX_WINDOWS + 1);
	for (unsigned k = 0; k < b->n_windows; k++) {
		Fleetbench__Window *w = &x->w[i][k];

		w->has_steal_pct = w->has_loadavg1 = w->has_wall_s = true;
		w->steal_pct = (double)((n + k) % 100);
		w->loadavg1 = 0.5 * k;
		w->wall_s = 1.0 + k;
		w->has_noisy = k % 2;
		w->noisy = n % 3 == 0;
	}
}

/* A skipped benchmark whose text fields all hold text. */
static void text_benchmark(struct parts *x, unsigned i, const char *text)
{
	Fleetbench__Benchmark *b = &x->b[i];

	b->benchmark = (char *)text;
	b->variant = (char *)text;
	b->skip_reason = (char *)text;
	x->p[i][0].key = (char *)text;
	x->p[i][0].value_case = FLEETBENCH__PARAM__VALUE_STRING_VALUE;
	x->p[i][0].string_value = (char *)text;
	b->n_parameters = 1;
	x->m[i][0].metric = (char *)text;
	x->m[i][0].unit = (char *)text;
	b->n_metrics = 1;
}

static void comparisons(struct parts *x, Fleetbench__Report *r, unsigned n,
			const char *text)
{
	r->n_comparisons = text ? 1 : n % (MAX_COMPARISONS + 1);
	for (unsigned k = 0; k < r->n_comparisons; k++) {
		Fleetbench__Comparison *c = &x->c[k];
		const char *t = text ? text : NULL;

		c->name = (char *)(t ? t : k ? "second" : "first");
		c->benchmark = (char *)(t ? t : x->b[0].benchmark);
		c->metric = (char *)(t ? t : metric_kinds[0].name);
		c->numerator = (char *)(t ? t : x->b[0].variant);
		c->denominator = (char *)(t ? t : x->b[0].variant);
		c->has_ratio = c->has_ci_low = c->has_ci_high = true;
		c->has_level = true;
		c->ratio = 1.0 + 0.125 * (n % 8);
		c->ci_low = c->ratio - 0.25;
		c->ci_high = c->ratio + 0.25;
		c->level = 0.95;
		c->method = (char *)(t ? t : "bootstrap");
		c->reason = (char *)t;
	}
}

/* probe_json: a JSON object (text in its member "text"), through json-c. */
static int probe_json(const char *text, char **ret)
{
	struct json_object *o = json_object_new_object();
	struct json_object *host = json_object_new_object();
	const char *s;
	int r = -ENOMEM;

	if (!o || !host ||
	    json_object_object_add(host, "vcpus_online",
				   json_object_new_int(2)) < 0 ||
	    json_object_object_add(o, "host", host) < 0) {
		json_object_put(host);
		goto out;
	}
	if (text && json_object_object_add(o, "text",
					   json_object_new_string(text)) < 0)
		goto out;
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
						      JSON_C_TO_STRING_NOSLASHESCAPE);
	*ret = s ? strdup(s) : NULL;
	if (*ret)
		r = 0;
out:
	json_object_put(o);
	return r;
}

int sample_report_pack(const struct sample_report *s, uint8_t **ret,
		       size_t *ret_len)
{
	Fleetbench__Report r = FLEETBENCH__REPORT__INIT;
	struct parts *x = calloc(1, sizeof(*x));
	const char *t = s->text;
	char *probe = NULL;
	int64_t now = wall_ms();
	int err;

	if (!x)
		return -ENOMEM;
	err = probe_json(t, &probe);
	if (err < 0)
		goto out;
	fleetbench__host__init(&x->host);
	fleetbench__kernel__init(&x->kernel);
	for (size_t i = 0; i < MAX_BENCH; i++) {
		fleetbench__benchmark__init(&x->b[i]);
		x->bp[i] = &x->b[i];
		x->b[i].parameters = x->pp[i];
		x->b[i].metrics = x->mp[i];
		x->b[i].windows = x->wp[i];
		for (size_t k = 0; k < MAX_PARAMS; k++) {
			fleetbench__param__init(&x->p[i][k]);
			x->pp[i][k] = &x->p[i][k];
		}
		for (size_t k = 0; k < MAX_METRICS; k++) {
			fleetbench__metric__init(&x->m[i][k]);
			x->mp[i][k] = &x->m[i][k];
		}
		for (size_t k = 0; k < MAX_WINDOWS; k++) {
			fleetbench__window__init(&x->w[i][k]);
			x->wp[i][k] = &x->w[i][k];
		}
	}
	for (size_t k = 0; k < MAX_COMPARISONS; k++) {
		fleetbench__comparison__init(&x->c[k]);
		x->cp[k] = &x->c[k];
	}

	r.schema_version = FLEETBENCH__SCHEMA_VERSION__CURRENT;
	r.run_id = (char *)s->run_id;
	r.agent_version = (char *)(t ? t :
				   s->agent_version ? s->agent_version : "sample");
	{
		const char *l = s->plain_labels ? NULL : t;

		x->host.provider = (char *)(l ? l :
					    s->provider ? s->provider :
							  "sample");
		x->host.instance_type = (char *)(l ? l :
						 s->instance_type ?
							 s->instance_type :
							 "sample-1");
		x->host.region = (char *)l;
		x->host.hostname = (char *)(l ? l :
					    s->hostname ? s->hostname :
							  "sample-host");
	}
	x->host.machine_id = "0123456789abcdef0123456789abcdef";
	x->host.provider_source = "flag";
	x->host.instance_type_source = "flag";
	x->host.region_source = t && !s->plain_labels ? "flag" : NULL;
	x->kernel.release = (char *)(s->kernel_release ? s->kernel_release :
							 "6.1.0-sample");
	x->kernel.version = (char *)t;
	x->kernel.cmdline = (char *)t;
	r.host = &x->host;
	r.kernel = &x->kernel;
	r.started_unix_ms = now - 1000;
	r.finished_unix_ms = now;
	r.probe_json = probe;
	r.benchmarks = x->bp;
	if (s->shape == 0) {
		small_benchmark(x);
		r.n_benchmarks = 1;
		if (s->out_of_bounds)
			out_of_bounds(x);
		if (s->failed) {
			x->b[1].benchmark = "randread";
			x->b[1].variant = "io_uring_sqpoll";
			x->b[1].failure =
				"SIGSEGV in randread/io_uring_sqpoll (repeat 2 of 3)";
			r.n_benchmarks = 2;
		}
	} else {
		r.n_benchmarks = 1 + s->shape % (MAX_BENCH - 1);
		for (unsigned i = 0; i < r.n_benchmarks; i++)
			shaped_benchmark(x, s->shape, i);
		r.profile = s->shape % 2 ? "quick" : "standard";
		r.has_seed = true;
		r.seed = s->shape;
	}
	if (t) {
		text_benchmark(x, (unsigned)r.n_benchmarks, t);
		r.n_benchmarks++;
		r.profile = (char *)t;
	}
	r.comparisons = x->cp;
	comparisons(x, &r, s->shape, t);
	err = codec_pack_report(&r, ret, ret_len);
out:
	free(probe);
	free(x);
	return err;
}

int sample_report_pack_new(struct sample_report *s, char run_id[37],
			   uint8_t **ret, size_t *ret_len)
{
	int r = codec_uuid_new(run_id);

	s->run_id = run_id;
	return r < 0 ? r : sample_report_pack(s, ret, ret_len);
}
