/* SPDX-License-Identifier: MIT */
/*
 * fleetgen: a run's bench messages, the benchmarks' raw repeat samples
 * drawn from known distributions and the comparisons the agent's own
 * statistics (common/stats.c) compute from them (fleetgen.h).
 */
#include "fleetgen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

#define STEAL_THRESHOLD 5.0
#define BOOTSTRAP 10000

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
static void bench_thp(struct run *run, const double *drift,
		      double thp_scale)
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
		thp_ns[i] = base / (t->thp_speedup * thp_scale) *
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

/* ---- issue 15's benchmarks ---- */

/*
 * What each instance type shows in the benchmarks of issue 15, by host
 * prefix; tests/fixtures/README.md tells the stories. Old and new
 * kernel where a kernel change moves a gain.
 */
struct more {
	const char *host_prefix;
	double mmap_thp_speedup[2]; /* 1: THP for file memory never granted */
	double membw_1t_gbps, membw_thp_gain;
	double qd32_vs_qd1, knee_depth;
	double wb_p99_us, wb_stalls;
	double db_p99_always_vs_never[2]; /* 0: no database run */
};

static const struct more more_table[] = {
	/* shmem THP lost on the new kernel: the mmap THP speedup goes */
	{ "aws-m6i", { 1.28, 1.0 }, 11.0, 1.06, 9.0, 16, 900, 0, { 0, 0 } },
	{ "aws-c6i", { 1.30, 1.30 }, 12.0, 1.05, 11.0, 32, 850, 0, { 0, 0 } },
	{ "gcp-n2", { 1.22, 1.22 }, 9.5, 1.04, 8.0, 16, 1400, 1, { 0, 0 } },
	{ "gcp-e2", { 1.20, 1.20 }, 8.0, 1.03, 6.0, 16, 2600, 3, { 0, 0 } },
	{ "hz-cx22", { 1.0, 1.0 }, 7.5, 1.0, 5.0, 4, 5200, 6, { 1.0, 1.0 } },
	/* THP always: the database's p99 suffers more on the new kernel */
	{ "hz-ccx23", { 1.33, 1.33 }, 13.0, 1.08, 12.0, 32, 700, 0,
	  { 1.10, 1.65 } },
	{ "ovh-b2", { 1.12, 1.12 }, 6.0, 1.02, 4.0, 4, 3100, 4, { 0, 0 } },
};

static const struct more *more_of(const struct fleet_type *t)
{
	for (size_t i = 0; i < sizeof(more_table) / sizeof(*more_table); i++)
		if (!strcmp(more_table[i].host_prefix, t->host_prefix))
			return &more_table[i];
	return &more_table[0];
}

/* mmap_read: random 4 KiB reads of a mapped file, three page modes. */
static void bench_mmap(struct run *run, const struct more *x,
		       const double *drift)
{
	const struct fleet_type *t = run->t;
	double speedup = x->mmap_thp_speedup[run->kernel];
	struct variant k4, thp, huge;
	double *k4_ns, *k4_f, *thp_ns, *thp_f, *thp_hf, *h_ns, *h_f;

	variant_init(&k4, "mmap_read", "4k", NULL);
	variant_init(&thp, "mmap_read", "thp", NULL);
	variant_init(&huge, "mmap_read", "hugetlb",
		     t->hugetlb_2m_speedup > 0 ? NULL :
			     "2 MiB hugetlb pool has 0 free pages");
	k4_ns = metric(&k4, "ns_per_access", "ns");
	k4_f = metric(&k4, "minor_faults_per_1k", "count");
	thp_ns = metric(&thp, "ns_per_access", "ns");
	thp_f = metric(&thp, "minor_faults_per_1k", "count");
	thp_hf = metric(&thp, "huge_fraction", "fraction");
	h_ns = metric(&huge, "ns_per_access", "ns");
	h_f = metric(&huge, "minor_faults_per_1k", "count");
	for (int i = 0; i < REPEATS; i++) {
		double base = around(&run->rng, 480.0, 0.03) * drift[i];

		k4_ns[i] = base;
		k4_f[i] = around(&run->rng, 1000.0, 0.01);
		thp_ns[i] = base / speedup * around(&run->rng, 1, 0.02);
		thp_f[i] = speedup > 1.0 ? around(&run->rng, 2.0, 0.1) :
					   k4_f[i];
		thp_hf[i] = speedup > 1.0 ? 1.0 : 0.0;
		h_ns[i] = base / (speedup > 1.0 ? speedup * 1.05 : 1.3);
		h_f[i] = around(&run->rng, 2.0, 0.1);
	}
	variant_add(run, &k4);
	variant_add(run, &thp);
	variant_add(run, &huge);
	compare(run, "mmap_thp_speedup", &k4, &thp, "ns_per_access");
	compare(run, "mmap_hugetlb_speedup", &k4, &huge, "ns_per_access");
}

/* membw: STREAM copy, scale, add, triad; one thread and all vCPUs. */
static void bench_membw(struct run *run, const struct more *x,
			const double *drift)
{
	static const char *const names[] = { "4k_1t", "thp_1t", "4k_all",
					     "thp_all" };
	static const char *const kernels[] = { "copy_gbps", "scale_gbps",
					       "add_gbps", "triad_gbps" };
	static const double of_triad[] = { 0.95, 0.93, 1.02, 1.0 };
	struct variant v[4];
	double *m[4][5];
	/* all vCPUs: bandwidth grows sublinearly with the threads */
	double scale_all = 1.0 + 0.55 * (run->t->vcpus - 1);

	for (int k = 0; k < 4; k++) {
		variant_init(&v[k], "membw", names[k], NULL);
		param(&v[k], "threads", NULL, k < 2 ? 1 : run->t->vcpus);
		for (int j = 0; j < 4; j++)
			m[k][j] = metric(&v[k], kernels[j], "GB/s");
		m[k][4] = metric(&v[k], "huge_fraction", "fraction");
	}
	for (int i = 0; i < REPEATS; i++) {
		double base = around(&run->rng, x->membw_1t_gbps, 0.02) /
			      drift[i];

		for (int k = 0; k < 4; k++) {
			double triad = base * (k >= 2 ? scale_all : 1.0) *
				       (k % 2 ? x->membw_thp_gain *
							around(&run->rng, 1, 0.01) :
						1.0);

			for (int j = 0; j < 4; j++)
				m[k][j][i] = triad * of_triad[j];
			m[k][4][i] = k % 2 && x->membw_thp_gain > 1.0 ? 1.0 : 0.0;
		}
	}
	for (int k = 0; k < 4; k++)
		variant_add(run, &v[k]);
	compare(run, "membw_thp_gain", &v[3], &v[2], "triad_gbps");
	compare(run, "membw_thread_scaling", &v[2], &v[0], "triad_gbps");
}

/* io_scaling: io_uring random reads, 1 and all jobs by five depths, and
 * the knee: the smallest depth within 5% of the best. */
static void bench_scaling(struct run *run, const struct more *x,
			  const double *drift)
{
	static const int depths[] = { 1, 4, 16, 32, 64 };
	const struct fleet_type *t = run->t;
	struct variant v[2][5], knee;
	double *iops[2][5], *kd, *best;
	char name[2][5][24];

	for (int j = 0; j < 2; j++)
		for (int d = 0; d < 5; d++) {
			snprintf(name[j][d], sizeof(name[j][d]), "j%d_qd%d",
				 j ? t->vcpus : 1, depths[d]);
			variant_init(&v[j][d], "io_scaling", name[j][d], NULL);
			param(&v[j][d], "iodepth", NULL, depths[d]);
			iops[j][d] = metric(&v[j][d], "iops", "IO/s");
		}
	variant_init(&knee, "io_scaling", "knee", NULL);
	kd = metric(&knee, "knee_depth", "depth");
	best = metric(&knee, "best_iops", "IO/s");
	for (int i = 0; i < REPEATS; i++) {
		double qd1 = around(&run->rng, t->pread_iops, 0.03) * drift[i];
		double top = 0;

		for (int j = 0; j < 2; j++)
			for (int d = 0; d < 5; d++) {
				/* grows until the knee, flat after it */
				double f = depths[d] >= x->knee_depth ?
						   x->qd32_vs_qd1 :
						   1.0 + (x->qd32_vs_qd1 - 1.0) *
								 depths[d] /
								 x->knee_depth;

				iops[j][d][i] = qd1 * f * (j ? 1.6 : 1.0) *
						around(&run->rng, 1, 0.02);
				if (iops[j][d][i] > top)
					top = iops[j][d][i];
			}
		kd[i] = x->knee_depth;
		best[i] = top;
	}
	for (int j = 0; j < 2; j++)
		for (int d = 0; d < 5; d++)
			variant_add(run, &v[j][d]);
	variant_add(run, &knee);
	compare(run, "iouring_qd32_vs_qd1", &v[0][3], &v[0][0], "iops");
}

/* writeback: buffered sequential writes under the host's vm.dirty_*. */
static void bench_writeback(struct run *run, const struct more *x,
			    const double *drift)
{
	struct variant host;
	double *p50, *p99, *max, *stalls, *mbs;

	variant_init(&host, "writeback", "host", NULL);
	p50 = metric(&host, "write_p50_us", "us");
	p99 = metric(&host, "write_p99_us", "us");
	max = metric(&host, "write_max_us", "us");
	stalls = metric(&host, "stalls_100ms", "count");
	mbs = metric(&host, "mb_per_s", "MB/s");
	for (int i = 0; i < REPEATS; i++) {
		p50[i] = around(&run->rng, 6.0, 0.05) * drift[i];
		p99[i] = around(&run->rng, x->wb_p99_us, 0.08) * drift[i];
		stalls[i] = (double)(int)(x->wb_stalls *
					  around(&run->rng, 1, 0.3) + 0.5);
		max[i] = stalls[i] > 0 ? around(&run->rng, 240000, 0.2) :
					 around(&run->rng, 60000, 0.2);
		mbs[i] = around(&run->rng, 420, 0.05) / drift[i];
	}
	variant_add(run, &host);
}

/* database: pgbench at a fixed rate under each THP mode (the hosts that
 * run it: --with-database). */
static void bench_database(struct run *run, const struct more *x,
			   const double *drift)
{
	static const char *const names[] = { "thp_never", "thp_madvise",
					     "thp_always" };
	double ratio = x->db_p99_always_vs_never[run->kernel];
	struct variant v[3];
	double *tps[3], *p50[3], *p99[3], *p999[3];

	for (int k = 0; k < 3; k++) {
		variant_init(&v[k], "database", names[k], NULL);
		tps[k] = metric(&v[k], "tps", "tx/s");
		p50[k] = metric(&v[k], "latency_p50_ms", "ms");
		p99[k] = metric(&v[k], "latency_p99_ms", "ms");
		p999[k] = metric(&v[k], "latency_p999_ms", "ms");
	}
	for (int i = 0; i < REPEATS; i++) {
		double base = around(&run->rng, 4.0, 0.03) * drift[i];

		for (int k = 0; k < 3; k++) {
			double f = k == 2 ? ratio : k == 1 ? 1.0 + (ratio - 1) / 4 :
							   1.0;

			tps[k][i] = around(&run->rng, 500, 0.01);
			p50[k][i] = around(&run->rng, 1.2, 0.03) * drift[i];
			p99[k][i] = base * f * around(&run->rng, 1, 0.02);
			p999[k][i] = p99[k][i] * around(&run->rng, 2.5, 0.1);
		}
	}
	for (int k = 0; k < 3; k++)
		variant_add(run, &v[k]);
	compare(run, "db_p99_always_vs_never", &v[2], &v[0], "latency_p99_ms");
}

Fleetbench__BenchRun *fleetgen_bench_run(struct run *run, double thp_scale)
{
	double drift[REPEATS];

	run->bench = xmalloc(sizeof(*run->bench));
	fleetbench__bench_run__init(run->bench);
	run->hot = rng_double(&run->rng) < run->t->noisy_share;
	/* what a repeat's neighbours do to every variant alike */
	for (int i = 0; i < REPEATS; i++)
		drift[i] = around(&run->rng, 1.0, 0.02);
	bench_thp(run, drift, thp_scale);
	bench_randread(run, drift);
	/* after the others' draws: their samples stay as they were */
	{
		const struct more *x = more_of(run->t);

		bench_mmap(run, x, drift);
		bench_membw(run, x, drift);
		bench_scaling(run, x, drift);
		bench_writeback(run, x, drift);
		if (x->db_p99_always_vs_never[run->kernel] > 0)
			bench_database(run, x, drift);
	}
	run->bench->profile = xstrdup("full");
	run->bench->has_seed = 1;
	run->bench->seed = (int64_t)run->seed;
	return run->bench;
}
