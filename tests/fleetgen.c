/* SPDX-License-Identifier: MIT */
/*
 * fleetgen: writes a realistic fleet's reports into an agent spool, for
 * `fleetbench-agent send` to deliver through the real collector over
 * CURVE. Seven instance types of three providers, three hosts each, two
 * kernel releases each; every run carries a probe and the benchmarks' raw
 * repeat samples drawn from known distributions (seeded: the same seed
 * gives the same reports, run ids included), and the comparisons computed
 * from them by the agent's own statistics (common/stats.c) before the
 * agent's own report builder (agent/ship/report.c) and spool (agent/ship/spool.c)
 * take them. tests/fixtures/README.md describes the fleet.
 *
 *   fleetgen --spool DIR [--seed N] [--host NAME] [--kernel old|new]
 *            [--method KEY [--thp-scale X]]
 *
 * --method sets Report.method (as an agent that sends one does): KEY's
 * profile is its part before '+'; --thp-scale multiplies the THP speedup
 * (a quick run's smaller working set gains less); the runs' ids differ
 * from those of another method.
 *
 * prints one line per report spooled: run_id, provider, instance type,
 * hostname, kernel release, started (ISO 8601), tab-separated.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "cleanup.h"
#include "codec.h"
#include "rand.h"
#include "report.h"
#include "spool.h"
#include "stats.h"

#define REPEATS 9 /* the full profile */
#define STEAL_THRESHOLD 5.0
#define BOOTSTRAP 10000
#define DAY_MS (24LL * 3600 * 1000)
/* 2025-03-03T00:00:00Z: the old kernels' first runs */
#define FLEET_START_MS 1740960000000LL
#define NEW_KERNEL_AFTER_MS (28 * DAY_MS)

struct fleet_type {
	const char *provider, *instance_type, *region, *host_prefix;
	int vcpus;
	long long memory_kb;
	const char *kernel[2]; /* old, new */
	int runs; /* per host and kernel */
	const char *thp_mode;
	double thp_speedup, huge_fraction;
	double hugetlb_2m_speedup; /* 0: no free 2 MiB pages, skipped */
	bool has_1g; /* 1 GiB pages offered by the kernel */
	double hugetlb_1g_speedup; /* 0: no 1 GiB pool, skipped */
	double pread_iops;
	double gain[2]; /* io_uring / pread IOPS, old and new kernel */
	double gain_cv; /* spread of io_uring IOPS across repeats */
	double libaio_iops_ratio; /* libaio / pread IOPS, both kernels */
	bool sqpoll_denied_new; /* the new kernel refuses SQPOLL: EPERM */
	double noisy_share; /* share of runs next to a noisy neighbour, in
			       which 30% of the repeats see steal above 5% */
	bool sqpoll_crashes_new; /* randread/io_uring_sqpoll dies by SIGSEGV
				    on the new kernel: failed */
};

/* tests/fixtures/README.md tells the story of each. */
static const struct fleet_type fleet[] = {
	{ "aws", "m6i.large", "us-east-1", "aws-m6i", 2, 8007580,
	  { "6.1.0-18-cloud-amd64", "6.1.0-21-cloud-amd64" }, 3, "madvise",
	  1.35, 1.0, 0, true, 0, 16000, { 3.0, 3.0 }, 0.04, 3.0 / 1.03,
	  false, 0, false },
	{ "aws", "c6i.xlarge", "us-east-1", "aws-c6i", 4, 7902120,
	  { "6.1.0-18-cloud-amd64", "6.5.0-0.deb12.4-cloud-amd64" }, 3,
	  "madvise", 1.38, 1.0, 0, true, 0, 20000, { 3.2, 3.2 }, 0.04,
	  3.2 / 1.02, true, 0, false },
	{ "gcp", "n2-standard-2", "europe-west1", "gcp-n2", 2, 8141560,
	  { "5.15.0-1042-gcp", "6.2.0-1014-gcp" }, 3, "madvise", 1.30, 1.0,
	  0, true, 0, 15000, { 3.0, 1.1 }, 0.04, 3.0 / 1.02, false, 0, false },
	{ "gcp", "e2-standard-4", "europe-west1", "gcp-e2", 4, 16393220,
	  { "5.15.0-1042-gcp", "6.2.0-1014-gcp" }, 3, "madvise", 1.25, 1.0,
	  0, true, 0, 12000, { 3.0, 2.9 }, 0.20, 3.0 / 1.02, false, 0.25,
	  false },
	{ "hetzner", "cx22", "fsn1", "hz-cx22", 2, 3911000,
	  { "6.1.0-18-amd64", "6.1.0-21-amd64" }, 3, "never", 1.0, 0.0, 0,
	  false, 0, 30000, { 2.5, 2.5 }, 0.04, 2.5 / 1.01, false, 0, false },
	{ "hetzner", "ccx23", "fsn1", "hz-ccx23", 4, 16005000,
	  { "6.1.0-18-amd64", "6.1.0-21-amd64" }, 3, "always", 1.42, 1.0,
	  1.45, true, 1.50, 35000, { 2.8, 2.8 }, 0.04, 2.8 / 1.03, false,
	  0, false },
	{ "ovh", "b2-7", "gra", "ovh-b2", 2, 7110000,
	  { "6.8.0-45-generic", "6.8.0-49-generic" }, 1, "madvise", 1.15,
	  0.55, 0, false, 0, 10000, { 2.2, 2.2 }, 0.06, 2.2 / 1.02, false,
	  0.5, true },
};

#define HOSTS 3

static const char *const opcodes[] = {
	"NOP", "READV", "WRITEV", "FSYNC", "READ_FIXED", "WRITE_FIXED",
	"POLL_ADD", "POLL_REMOVE", "SYNC_FILE_RANGE", "SENDMSG", "RECVMSG",
	"TIMEOUT", "TIMEOUT_REMOVE", "ACCEPT", "ASYNC_CANCEL", "LINK_TIMEOUT",
	"CONNECT", "FALLOCATE", "OPENAT", "CLOSE", "FILES_UPDATE", "STATX",
	"READ", "WRITE", "FADVISE", "MADVISE", "SEND", "RECV", "OPENAT2",
	"EPOLL_CTL", "SPLICE", "PROVIDE_BUFFERS", "REMOVE_BUFFERS", "TEE",
	"SHUTDOWN", "RENAMEAT", "UNLINKAT", "MKDIRAT", "SYMLINKAT", "LINKAT",
};

static const char *const features[] = {
	"SINGLE_MMAP", "NODROP", "SUBMIT_STABLE", "RW_CUR_POS",
	"CUR_PERSONALITY", "FAST_POLL", "POLL_32BITS", "SQPOLL_NONFIXED",
	"EXT_ARG", "NATIVE_WORKERS", "RSRC_TAGS",
};

static const char *arg_spool, *arg_host, *arg_kernel, *arg_method;
static double arg_thp_scale = 1.0;
static uint64_t arg_seed = 20250303;

/* ---- random draws ---- */

/* Normal by Box-Muller (one of the pair). */
static double normal(struct rng *r, double mean, double sd)
{
	double u = 1.0 - rng_double(r), v = rng_double(r);

	return mean + sd * sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

/* A positive draw around mean with coefficient of variation cv. */
static double around(struct rng *r, double mean, double cv)
{
	double x = normal(r, mean, mean * cv);

	return x > mean * 0.05 ? x : mean * 0.05;
}

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t x = a ^ (b * 0x9e3779b97f4a7c15ULL);

	return splitmix64(&x);
}

/* ---- JSON helpers ---- */

static void put(struct json_object *o, const char *key, struct json_object *v)
{
	json_object_object_add(o, key, v);
}

static struct json_object *str(const char *s)
{
	return json_object_new_string(s);
}

static struct json_object *strings(const char *const *v, size_t n)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; i < n; i++)
		json_object_array_add(a, str(v[i]));
	return a;
}

/* {"selected": mode, "options": [...]}, as the probe reports a mode */
static struct json_object *mode(const char *selected, const char *const *opts,
				size_t n)
{
	struct json_object *o = json_object_new_object();

	put(o, "selected", str(selected));
	put(o, "options", strings(opts, n));
	return o;
}

static struct json_object *label(const char *value)
{
	struct json_object *o = json_object_new_object();

	put(o, "value", str(value));
	put(o, "source", str("flag"));
	return o;
}

/* ---- one run ---- */

struct run {
	const struct fleet_type *t;
	int host, kernel, index;
	char hostname[64], machine_id[33], run_id[37];
	int64_t started_ms;
	uint64_t seed;
	struct rng rng;
	Fleetbench__BenchRun *bench; /* the agent's messages, as it fills them */
	bool hot; /* a noisy neighbour during this run */
};

static struct json_object *probe_json(const struct run *run)
{
	static const char *const thp_opts[] = { "always", "madvise", "never" };
	static const char *const defrag_opts[] = { "always", "defer",
						   "defer+madvise", "madvise",
						   "never" };
	const struct fleet_type *t = run->t;
	bool denied = t->sqpoll_denied_new && run->kernel == 1;
	struct json_object *p = json_object_new_object(), *o, *sizes, *s;
	char version[128], cmdline[256];

	o = json_object_new_object();
	put(o, "agent_version", str("0.1.0"));
	put(o, "root", str("/"));
	put(p, "meta", o);

	o = json_object_new_object();
	put(o, "hostname", str(run->hostname));
	put(o, "machine_id", str(run->machine_id));
	put(o, "architecture", str("x86_64"));
	put(o, "vcpus_online", json_object_new_int(t->vcpus));
	put(o, "memory_total_kb", json_object_new_int64(t->memory_kb));
	put(p, "host", o);

	snprintf(version, sizeof(version), "#1 SMP PREEMPT_DYNAMIC %s",
		 t->kernel[run->kernel]);
	snprintf(cmdline, sizeof(cmdline),
		 "BOOT_IMAGE=/boot/vmlinuz-%s root=/dev/vda1 ro console=ttyS0",
		 t->kernel[run->kernel]);
	o = json_object_new_object();
	put(o, "release", str(t->kernel[run->kernel]));
	put(o, "version", str(version));
	put(o, "cmdline", str(cmdline));
	put(p, "kernel", o);

	o = json_object_new_object();
	s = json_object_new_object();
	put(s, "name", str("kvm"));
	put(s, "source", str("cpuid"));
	put(o, "vm", s);
	s = json_object_new_object();
	put(s, "name", str("none"));
	put(o, "container", s);
	put(p, "virt", o);

	o = json_object_new_object();
	put(o, "provider", label(t->provider));
	put(o, "instance_type", label(t->instance_type));
	put(o, "region", label(t->region));
	put(p, "labels", o);

	o = json_object_new_object();
	put(o, "enabled", mode(t->thp_mode, thp_opts, ARRAY_SIZE(thp_opts)));
	put(o, "defrag",
	    mode("madvise", defrag_opts, ARRAY_SIZE(defrag_opts)));
	put(o, "hpage_pmd_size", json_object_new_int(2097152));
	put(p, "thp", o);

	o = json_object_new_object();
	sizes = json_object_new_array();
	for (int i = 0; i < (t->has_1g ? 2 : 1); i++) {
		bool pool = i ? t->hugetlb_1g_speedup > 0 :
				t->hugetlb_2m_speedup > 0;

		s = json_object_new_object();
		put(s, "name", str(i ? "hugepages-1048576kB" : "hugepages-2048kB"));
		put(s, "size_kb", json_object_new_int(i ? 1048576 : 2048));
		put(s, "nr", json_object_new_int(pool ? (i ? 1 : 600) : 0));
		put(s, "free", json_object_new_int(pool ? (i ? 1 : 600) : 0));
		json_object_array_add(sizes, s);
	}
	put(o, "default_size_kb", json_object_new_int(2048));
	put(o, "size_2m_present", json_object_new_boolean(true));
	put(o, "size_1g_present", json_object_new_boolean(t->has_1g));
	put(o, "sizes", sizes);
	put(p, "hugetlb", o);

	o = json_object_new_object();
	put(o, "disabled", json_object_new_int(0));
	put(o, "setup", str("ok"));
	put(o, "setup_errno", json_object_new_int(0));
	put(o, "sqpoll", str(denied ? "EPERM" : "ok"));
	put(o, "sqpoll_errno", json_object_new_int(denied ? EPERM : 0));
	put(o, "opcodes", strings(opcodes, ARRAY_SIZE(opcodes)));
	put(o, "opcode_count", json_object_new_int((int)ARRAY_SIZE(opcodes)));
	put(o, "features", strings(features, ARRAY_SIZE(features)));
	put(p, "io_uring", o);
	return p;
}

struct variant {
	const char *benchmark, *name;
	const char *skip; /* reason, or NULL */
	/* up to 2 parameters: a string, or an integer when s is NULL */
	struct {
		const char *key, *s;
		int64_t i;
	} param[2];
	int n_params;
	/* up to 6 metrics of REPEATS samples */
	const char *metric[6], *unit[6];
	double v[6][REPEATS];
	int n_metrics;
};

static void variant_init(struct variant *v, const char *benchmark,
			 const char *name, const char *skip)
{
	*v = (struct variant){ .benchmark = benchmark, .name = name,
			       .skip = skip };
}

static void param(struct variant *v, const char *key, const char *s,
		  int64_t i)
{
	v->param[v->n_params].key = key;
	v->param[v->n_params].s = s;
	v->param[v->n_params++].i = i;
}

static double *metric(struct variant *v, const char *name, const char *unit)
{
	v->metric[v->n_metrics] = name;
	v->unit[v->n_metrics] = unit;
	return v->v[v->n_metrics++];
}

static const double *samples_of(const struct variant *v, const char *name)
{
	for (int i = 0; i < v->n_metrics; i++)
		if (!strcmp(v->metric[i], name))
			return v->v[i];
	return NULL;
}

/* ---- the bench messages (every part from malloc: bench_run_free()) ---- */

static void *xmalloc(size_t size)
{
	void *p = malloc(size);

	if (!p) {
		fprintf(stderr, "fleetgen: out of memory\n");
		exit(1);
	}
	return p;
}

static char *xstrdup(const char *s)
{
	return strcpy(xmalloc(strlen(s) + 1), s);
}

/* Appends item to the array *arrp of *n pointers. */
static void append(void *arrp, size_t *n, void *item)
{
	void ***arr = arrp;
	void **a = realloc(*arr, (*n + 1) * sizeof(*a));

	if (!a) {
		fprintf(stderr, "fleetgen: out of memory\n");
		exit(1);
	}
	a[(*n)++] = item;
	*arr = a;
}

/* Appends the variant to the bench run, as the agent fills it. */
static void variant_add(struct run *run, struct variant *v)
{
	Fleetbench__Benchmark *b = xmalloc(sizeof(*b));

	fleetbench__benchmark__init(b);
	b->benchmark = xstrdup(v->benchmark);
	b->variant = xstrdup(v->name);
	b->skip_reason = v->skip ? xstrdup(v->skip) : NULL;
	for (int i = 0; i < v->n_params; i++) {
		Fleetbench__Param *p = xmalloc(sizeof(*p));

		fleetbench__param__init(p);
		p->key = xstrdup(v->param[i].key);
		if (v->param[i].s) {
			p->value_case = FLEETBENCH__PARAM__VALUE_STRING_VALUE;
			p->string_value = xstrdup(v->param[i].s);
		} else {
			p->value_case = FLEETBENCH__PARAM__VALUE_INT_VALUE;
			p->int_value = v->param[i].i;
		}
		append(&b->parameters, &b->n_parameters, p);
	}
	for (int m = 0; !v->skip && m < v->n_metrics; m++) {
		Fleetbench__Metric *o = xmalloc(sizeof(*o));

		fleetbench__metric__init(o);
		o->metric = xstrdup(v->metric[m]);
		o->unit = xstrdup(v->unit[m]);
		o->samples = xmalloc(REPEATS * sizeof(*o->samples));
		memcpy(o->samples, v->v[m], REPEATS * sizeof(*o->samples));
		o->n_samples = REPEATS;
		append(&b->metrics, &b->n_metrics, o);
	}
	for (int i = 0; !v->skip && i < REPEATS; i++) {
		Fleetbench__Window *w = xmalloc(sizeof(*w));
		bool hot = run->hot && rng_double(&run->rng) < 0.3;
		double steal = hot ? around(&run->rng, 9.0, 0.2) :
				     around(&run->rng, 0.3, 0.5);

		fleetbench__window__init(w);
		w->has_steal_pct = w->has_loadavg1 = w->has_wall_s = 1;
		w->has_noisy = 1;
		w->steal_pct = steal;
		w->loadavg1 = around(&run->rng, 0.8, 0.3);
		w->wall_s = around(&run->rng, 1.5, 0.05);
		w->noisy = steal > STEAL_THRESHOLD;
		append(&b->windows, &b->n_windows, w);
	}
	append(&run->bench->benchmarks, &run->bench->n_benchmarks, b);
}

/* A comparison of num/den on metric with the agent's paired bootstrap
 * (common/stats.c), or no ratio with the reason of a skipped side. */
static void compare(struct run *run, const char *name, const struct variant *num,
		    const struct variant *den, const char *metric_name)
{
	Fleetbench__Comparison *c = xmalloc(sizeof(*c));
	const struct variant *skipped = num->skip ? num : den->skip ? den : NULL;
	struct stats_ratio r;

	fleetbench__comparison__init(c);
	c->name = xstrdup(name);
	c->benchmark = xstrdup(num->benchmark);
	c->metric = xstrdup(metric_name);
	c->numerator = xstrdup(num->name);
	c->denominator = xstrdup(den->name);
	if (!skipped &&
	    stats_ratio_ci(samples_of(num, metric_name), REPEATS,
			   samples_of(den, metric_name), REPEATS, 1, 0.95,
			   BOOTSTRAP, run->seed, &r) == 0) {
		c->has_ratio = c->has_ci_low = c->has_ci_high = 1;
		c->has_level = 1;
		c->ratio = r.ratio;
		c->ci_low = r.lo;
		c->ci_high = r.hi;
		c->level = r.level;
		c->method = xstrdup("ratio of medians, paired percentile bootstrap, 10000 resamples");
	} else {
		char reason[128];

		snprintf(reason, sizeof(reason), "%s was skipped",
			 skipped ? skipped->name : "a side");
		c->reason = xstrdup(reason);
	}
	append(&run->bench->comparisons, &run->bench->n_comparisons, c);
}

/* thp_chase and thp_fault: 4 KiB against huge pages. */
static void bench_thp(struct run *run, const double *drift)
{
	const struct fleet_type *t = run->t;
	struct variant k4, thp, h2, h1, nohuge, fthp;
	double *k4_ns, *thp_ns, *h2_ns, *h1_ns, *hf;
	double *n_p99, *n_p999, *n_total, *t_p99, *t_p999, *t_total, *t_hf;
	bool thp_faults = strcmp(t->thp_mode, "never") != 0;

	variant_init(&k4, "thp_chase", "4k", NULL);
	variant_init(&thp, "thp_chase", "thp", NULL);
	variant_init(&h2, "thp_chase", "hugetlb_2m",
		     t->hugetlb_2m_speedup > 0 ? NULL :
			     "2 MiB hugetlb pool has 0 free pages, needs 512");
	variant_init(&h1, "thp_chase", "hugetlb_1g",
		     !t->has_1g ? "1 GiB hugetlb pages: absent (no /sys/kernel/mm/hugepages/hugepages-1048576kB)" :
		     t->hugetlb_1g_speedup > 0 ?
				  NULL :
				  "1 GiB hugetlb pool has 0 free pages, needs 1");
	k4_ns = metric(&k4, "ns_per_access", "ns");
	thp_ns = metric(&thp, "ns_per_access", "ns");
	hf = metric(&thp, "huge_fraction", "fraction");
	h2_ns = metric(&h2, "ns_per_access", "ns");
	h1_ns = metric(&h1, "ns_per_access", "ns");
	for (int i = 0; i < REPEATS; i++) {
		double base = around(&run->rng, 220.0, 0.03) * drift[i];

		k4_ns[i] = base;
		thp_ns[i] = base / (t->thp_speedup * arg_thp_scale) *
			    around(&run->rng, 1, 0.03);
		hf[i] = t->huge_fraction > 0 ?
				fmin(1.0, around(&run->rng, t->huge_fraction,
						 t->huge_fraction < 1 ? 0.05 : 0)) :
				0;
		h2_ns[i] = t->hugetlb_2m_speedup > 0 ?
				   base / t->hugetlb_2m_speedup *
					   around(&run->rng, 1, 0.03) :
				   0;
		h1_ns[i] = t->hugetlb_1g_speedup > 0 ?
				   base / t->hugetlb_1g_speedup *
					   around(&run->rng, 1, 0.03) :
				   0;
	}
	metric(&k4, "huge_fraction", "fraction"); /* zeros */
	param(&thp, "thp_enabled", t->thp_mode, 0);

	variant_init(&nohuge, "thp_fault", "nohuge", NULL);
	variant_init(&fthp, "thp_fault", "thp", NULL);
	n_p99 = metric(&nohuge, "fault_p99_us", "us");
	n_p999 = metric(&nohuge, "fault_p999_us", "us");
	n_total = metric(&nohuge, "total_ms", "ms");
	t_p99 = metric(&fthp, "fault_p99_us", "us");
	t_p999 = metric(&fthp, "fault_p999_us", "us");
	t_total = metric(&fthp, "total_ms", "ms");
	t_hf = metric(&fthp, "huge_fraction", "fraction");
	for (int i = 0; i < REPEATS; i++) {
		n_p99[i] = around(&run->rng, 3.5, 0.1) * drift[i];
		n_p999[i] = around(&run->rng, 12.5, 0.1) * drift[i];
		n_total[i] = around(&run->rng, 460, 0.05) * drift[i];
		/* without huge pages the thp variant faults like nohuge */
		t_p99[i] = thp_faults ? around(&run->rng, 0.07, 0.1) :
					around(&run->rng, 3.5, 0.1) * drift[i];
		t_p999[i] = thp_faults ? around(&run->rng, 310, 0.15) :
					 around(&run->rng, 12.5, 0.1);
		t_total[i] = thp_faults ? around(&run->rng, 180, 0.08) :
					  around(&run->rng, 460, 0.05);
		t_hf[i] = thp_faults ? hf[i] : 0;
	}

	variant_add(run, &k4);
	variant_add(run, &thp);
	variant_add(run, &h2);
	variant_add(run, &h1);
	variant_add(run, &nohuge);
	variant_add(run, &fthp);
	compare(run, "thp_speedup", &k4, &thp, "ns_per_access");
	compare(run, "hugetlb_2m_speedup", &k4, &h2, "ns_per_access");
	compare(run, "hugetlb_1g_speedup", &k4, &h1, "ns_per_access");
	compare(run, "thp_fault_total_speedup", &nohuge, &fthp, "total_ms");
	compare(run, "thp_fault_p999_ratio", &fthp, &nohuge, "fault_p999_us");
}

/* randread: pread at depth 1, the io_uring engines and libaio at 32. */
static void bench_randread(struct run *run, const double *drift)
{
	const struct fleet_type *t = run->t;
	bool denied = t->sqpoll_denied_new && run->kernel == 1;
	struct variant v[5];
	static const char *const names[] = { "pread", "io_uring",
					     "io_uring_sqpoll",
					     "io_uring_fixed", "libaio" };
	double *iops[5], *lat[5];

	for (int e = 0; e < 5; e++) {
		variant_init(&v[e], "randread", names[e],
			     e == 2 && denied ? "sqpoll: EPERM" : NULL);
		param(&v[e], "engine", names[e], 0);
		param(&v[e], "iodepth", NULL, e ? 32 : 1);
		iops[e] = metric(&v[e], "iops", "IO/s");
		lat[e] = metric(&v[e], "lat_p50_us", "us");
	}
	for (int i = 0; i < REPEATS; i++) {
		double pread = around(&run->rng, t->pread_iops, 0.03) * drift[i];
		double uring = pread * around(&run->rng, t->gain[run->kernel],
					      t->gain_cv);

		iops[0][i] = pread;
		iops[1][i] = uring;
		iops[2][i] = uring * around(&run->rng, 0.85, 0.04);
		iops[3][i] = uring * around(&run->rng, 1.0, 0.03);
		iops[4][i] = pread * around(&run->rng, t->libaio_iops_ratio, 0.03);
		for (int e = 0; e < 5; e++)
			lat[e][i] = (e ? 32 : 1) * 1e6 / iops[e][i];
	}
	for (int e = 0; e < 5; e++)
		variant_add(run, &v[e]);
	compare(run, "iouring_vs_pread", &v[1], &v[0], "iops");
	compare(run, "iouring_vs_libaio", &v[1], &v[4], "iops");
	compare(run, "iouring_fixed_vs_iouring", &v[3], &v[1], "iops");
	compare(run, "sqpoll_vs_iouring", &v[2], &v[1], "iops");
}

/* The run's bench messages (bench_run_free() them). */
static Fleetbench__BenchRun *bench_run(struct run *run)
{
	double drift[REPEATS];

	run->bench = xmalloc(sizeof(*run->bench));
	fleetbench__bench_run__init(run->bench);
	run->hot = rng_double(&run->rng) < run->t->noisy_share;
	/* what a repeat's neighbours do to every variant alike */
	for (int i = 0; i < REPEATS; i++)
		drift[i] = around(&run->rng, 1.0, 0.02);
	bench_thp(run, drift);
	bench_randread(run, drift);
	run->bench->profile = xstrdup("full");
	run->bench->has_seed = 1;
	run->bench->seed = (int64_t)run->seed;
	return run->bench;
}

/* A version 7 UUID (time-ordered: the spool sends oldest first, and a
 * name sorts in time order when two files share an mtime). */
static void run_id(struct run *run)
{
	uint64_t ms = (uint64_t)run->started_ms, a = rng_next(&run->rng),
		 b = rng_next(&run->rng);

	snprintf(run->run_id, sizeof(run->run_id),
		 "%08" PRIx64 "-%04" PRIx64 "-7%03" PRIx64 "-%04" PRIx64
		 "-%012" PRIx64,
		 ms >> 16, ms & 0xffff, a & 0xfff,
		 0x8000 | ((a >> 12) & 0x3fff), b & UINT64_C(0xffffffffffff));
}

/*
 * Marks randread/io_uring_sqpoll failed, as the agent reports a variant
 * whose process died by a signal: the failure text, no metrics, no
 * windows, and its comparison without a ratio. Set on the built Report:
 * the agent's report builder on this branch knows no failed status.
 */
static int sqpoll_crash(Fleetbench__Report *rep)
{
	static const char failure[] =
		"SIGSEGV in randread/io_uring_sqpoll (repeat 2 of 9)";

	for (size_t i = 0; i < rep->n_benchmarks; i++) {
		Fleetbench__Benchmark *b = rep->benchmarks[i];

		if (strcmp(b->benchmark, "randread") ||
		    strcmp(b->variant, "io_uring_sqpoll"))
			continue;
		for (size_t k = 0; k < b->n_metrics; k++)
			fleetbench__metric__free_unpacked(b->metrics[k], NULL);
		for (size_t k = 0; k < b->n_windows; k++)
			fleetbench__window__free_unpacked(b->windows[k], NULL);
		free(b->metrics);
		free(b->windows);
		b->metrics = NULL;
		b->windows = NULL;
		b->n_metrics = b->n_windows = 0;
		b->failure = strdup(failure);
		if (!b->failure)
			return -ENOMEM;
	}
	for (size_t i = 0; i < rep->n_comparisons; i++) {
		Fleetbench__Comparison *c = rep->comparisons[i];

		if (strcmp(c->name, "sqpoll_vs_iouring"))
			continue;
		c->has_ratio = c->has_ci_low = c->has_ci_high = false;
		c->has_level = false;
		free(c->method);
		c->method = NULL;
		free(c->reason);
		c->reason = strdup("io_uring_sqpoll failed");
		if (!c->reason)
			return -ENOMEM;
	}
	return 0;
}

/* Report.method from --method KEY, with the full profile's parameters. */
static int set_method(Fleetbench__Report *rep)
{
	Fleetbench__Method *m = calloc(1, sizeof(*m));
	size_t plen = strcspn(arg_method, "+");

	if (!m)
		return -ENOMEM;
	fleetbench__method__init(m);
	rep->method = m;
	m->key = strdup(arg_method);
	m->profile = strndup(arg_method, plen);
	if (!m->key || !m->profile)
		return -ENOMEM;
	m->repeats = REPEATS;
	m->chase_bytes = strncmp(arg_method, "quick", plen) ? 1ull << 30 :
							       128ull << 20;
	m->chase_accesses = 10000000;
	m->fault_bytes = 256ull << 20;
	m->file_bytes = 1ull << 30;
	m->io_ms = 3000;
	m->iodepth = 32;
	m->seq_bytes = 1ull << 30;
	m->seq_block = 1ull << 20;
	m->fs_increments = 100000;
	return 0;
}

static int spool_run(struct spool *s, struct run *run)
{
	const struct fleet_type *t = run->t;
	struct json_object *probe = probe_json(run);
	Fleetbench__BenchRun *bench = bench_run(run);
	Fleetbench__Report *rep = NULL;
	_cleanup_free_ uint8_t *buf = NULL;
	char err[256], when[32];
	time_t sec = (time_t)(run->started_ms / 1000);
	size_t len;
	int r;

	r = report_build(probe, bench, run->started_ms,
			 run->started_ms + 170000, &rep, err);
	json_object_put(probe);
	bench_run_free(bench);
	if (r < 0) {
		fprintf(stderr, "fleetgen: report_build: %s\n", err);
		return r;
	}
	free(rep->run_id);
	rep->run_id = strdup(run->run_id);
	r = rep->run_id ? 0 : -ENOMEM;
	if (r == 0 && t->sqpoll_crashes_new && run->kernel == 1)
		r = sqpoll_crash(rep);
	if (r == 0 && arg_method)
		r = set_method(rep);
	if (r == 0)
		r = codec_validate_report(rep, run->started_ms + DAY_MS, err);
	if (r == 0)
		r = codec_pack_report(rep, &buf, &len);
	report_free(rep);
	if (r < 0) {
		fprintf(stderr, "fleetgen: %s: %s\n", run->run_id,
			r == -EINVAL ? err : strerror(-r));
		return r;
	}
	r = spool_put(s, run->run_id, buf, len, err);
	if (r < 0) {
		fprintf(stderr, "fleetgen: spool_put: %s\n", err);
		return r;
	}
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&sec));
	printf("%s\t%s\t%s\t%s\t%s\t%s\n", run->run_id, t->provider,
	       t->instance_type, run->hostname, t->kernel[run->kernel], when);
	return 0;
}

/* Spools run idx of host h of fleet[ti] on kernel k (0 old, 1 new) unless
 * --host or --kernel leave it out. Returns 1 (spooled), 0 (left out) or
 * -errno. */
static int gen_run(struct spool *s, size_t ti, int h, int k, int idx)
{
	const struct fleet_type *t = &fleet[ti];
	struct run run = { .t = t, .host = h, .kernel = k, .index = idx };
	uint64_t hseed = mix(arg_seed, ti * 16 + (uint64_t)h);
	struct rng hr;
	int r;

	if (idx >= t->runs)
		return 0;
	snprintf(run.hostname, sizeof(run.hostname), "%s-%d", t->host_prefix,
		 h + 1);
	if ((arg_host && strcmp(arg_host, run.hostname)) ||
	    (arg_kernel && (k == 0) != !strcmp(arg_kernel, "old")))
		return 0;
	rng_seed(&hr, hseed);
	snprintf(run.machine_id, sizeof(run.machine_id),
		 "%016" PRIx64 "%016" PRIx64, rng_next(&hr), rng_next(&hr));
	/* in loop order (main), 20 minutes apart */
	run.started_ms = FLEET_START_MS + k * NEW_KERNEL_AFTER_MS +
			 idx * 7 * DAY_MS + ((int64_t)ti * HOSTS + h) * 1200000;
	/* non-negative: the report's seed is an int64 */
	run.seed = mix(hseed, (uint64_t)(k * 16 + idx)) >> 1;
	/* another method's runs are other runs */
	for (const char *p = arg_method; p && *p; p++)
		run.seed = mix(run.seed, (uint64_t)(unsigned char)*p) >> 1;
	rng_seed(&run.rng, run.seed);
	run_id(&run);
	r = spool_run(s, &run);
	return r < 0 ? r : 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: fleetgen --spool DIR [--seed N] [--host NAME] [--kernel old|new]\n"
		   "                [--method KEY [--thp-scale X]]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "spool", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'S' },
		{ "host", required_argument, NULL, 'H' },
		{ "kernel", required_argument, NULL, 'k' },
		{ "method", required_argument, NULL, 'm' },
		{ "thp-scale", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct spool *s;
	char err[SPOOL_ERR_LEN];
	int c, n = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			arg_spool = optarg;
			break;
		case 'S':
			arg_seed = strtoull(optarg, NULL, 10);
			break;
		case 'H':
			arg_host = optarg;
			break;
		case 'k':
			arg_kernel = optarg;
			break;
		case 'm':
			arg_method = optarg;
			break;
		case 't':
			arg_thp_scale = strtod(optarg, NULL);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!arg_spool || optind < argc ||
	    (arg_kernel && strcmp(arg_kernel, "old") && strcmp(arg_kernel, "new"))) {
		usage(stderr);
		return 2;
	}
	s = spool_open(arg_spool, 0, err);
	if (!s) {
		fprintf(stderr, "fleetgen: %s\n", err);
		return 1;
	}
	/* kernel-major order: the whole fleet's old runs, then the new */
	for (int k = 0; k < 2; k++)
		for (int idx = 0; idx < 4; idx++)
			for (size_t ti = 0; ti < ARRAY_SIZE(fleet); ti++)
				for (int h = 0; h < HOSTS; h++) {
					int r = gen_run(s, ti, h, k, idx);

					if (r < 0) {
						spool_close(s);
						return 1;
					}
					n += r;
				}
	spool_close(s);
	fprintf(stderr, "fleetgen: %d reports spooled in %s\n", n, arg_spool);
	return 0;
}
