/* SPDX-License-Identifier: MIT */
/* The benchmark driver: profiles, the table, results, windows, safety. */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "bench_modules.h"
#include "cleanup.h"
#include "probe.h"
#include "probe_stat.h"
#include "stats.h"

#define MAX_METRICS 24
#define BOOTSTRAP_RESAMPLES 10000
#define CI_LEVEL 0.95

static const struct bench_ops *const bench_table[] = {
	&bench_thp_chase_ops, &bench_thp_fault_ops, &bench_randread_ops,
	&bench_seqwrite_ops,  &bench_false_sharing_ops,
};

/*
 * quick: at most 30 s on 2 vCPUs; standard: at most 3 minutes with the
 * sizes of docs/bench.md; full: bigger and longer.
 */
static const struct bench_params profiles[] = {
	{
		.profile = "quick",
		.repeats = 3,
		.chase_bytes = 128ULL << 20,
		.chase_accesses = 4000000,
		.fault_bytes = 256ULL << 20,
		.file_bytes = 256ULL << 20,
		.io_ms = 500,
		.iodepth = 32,
		.seq_bytes = 64ULL << 20,
		.seq_block = 128 << 10,
		.fs_increments = 20000000,
	},
	{
		.profile = "standard",
		.repeats = 5,
		.chase_bytes = 1ULL << 30,
		.chase_accesses = 50000000,
		.fault_bytes = 1ULL << 30,
		.file_bytes = 1ULL << 30,
		.io_ms = 1500,
		.iodepth = 32,
		.seq_bytes = 256ULL << 20,
		.seq_block = 128 << 10,
		.fs_increments = 100000000,
	},
	{
		.profile = "full",
		.repeats = 9,
		.chase_bytes = 4ULL << 30,
		.chase_accesses = 100000000,
		.fault_bytes = 4ULL << 30,
		.file_bytes = 4ULL << 30,
		.io_ms = 5000,
		.iodepth = 32,
		.seq_bytes = 1ULL << 30,
		.seq_block = 128 << 10,
		.fs_increments = 200000000,
	},
};

int bench_params_profile(struct bench_params *p, const char *profile)
{
	for (size_t i = 0; i < ARRAY_SIZE(profiles); i++) {
		const struct bench_params *q = &profiles[i];

		if (strcmp(q->profile, profile))
			continue;
		p->repeats = q->repeats;
		p->chase_bytes = q->chase_bytes;
		p->chase_accesses = q->chase_accesses;
		p->fault_bytes = q->fault_bytes;
		p->file_bytes = q->file_bytes;
		p->io_ms = q->io_ms;
		p->iodepth = q->iodepth;
		p->seq_bytes = q->seq_bytes;
		p->seq_block = q->seq_block;
		p->fs_increments = q->fs_increments;
		return 0;
	}
	return -EINVAL;
}

size_t bench_count(void)
{
	return ARRAY_SIZE(bench_table);
}

const struct bench_ops *bench_get(size_t i)
{
	return i < ARRAY_SIZE(bench_table) ? bench_table[i] : NULL;
}

const struct bench_ops *bench_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(bench_table); i++)
		if (!strcmp(bench_table[i]->name, name))
			return bench_table[i];
	return NULL;
}

/* ---- signals ---- */

static volatile sig_atomic_t bench_stop;

static void bench_on_signal(int sig)
{
	(void)sig;
	bench_stop = 1;
}

void bench_install_signals(void)
{
	struct sigaction sa = { .sa_handler = bench_on_signal };

	/* No SA_RESTART: a sleeping or blocked benchmark wakes with EINTR. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

bool bench_interrupted(void)
{
	return bench_stop != 0;
}

/* ---- results ---- */

struct bench_metric {
	char name[48];
	char unit[16];
	double *v;
	size_t n, cap;
};

struct bench_result {
	struct bench_run *run;
	char *benchmark, *variant;
	char *skip_reason;
	struct json_object *params;
	struct json_object *repeats;
	struct bench_metric metrics[MAX_METRICS];
	size_t nmetrics;
	bool noisy;
	/* the open window */
	struct probe_cpu_times w_times;
	int w_times_ok;
	double w_start;
};

struct bench_run {
	const struct bench_params *params;
	struct probe_ctx pctx; /* root_fd, for kernel files */
	struct probe_opts popts;
	struct bench_result **results;
	size_t nresults, cap;
	struct json_object *comparisons;
};

const struct bench_params *bench_params_of(struct bench_run *run)
{
	return run->params;
}

const char *bench_root(struct bench_run *run)
{
	return run->popts.root;
}

ssize_t bench_read_file(struct bench_run *run, const char *path, char **ret)
{
	return probe_read_file(&run->pctx, path, ret);
}

double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct bench_result *bench_result_new(struct bench_run *run,
				      const char *benchmark,
				      const char *variant)
{
	struct bench_result *res;

	if (run->nresults == run->cap) {
		size_t cap = run->cap ? run->cap * 2 : 16;
		struct bench_result **r =
			realloc(run->results, cap * sizeof(*r));

		if (!r)
			return NULL;
		run->results = r;
		run->cap = cap;
	}
	res = calloc(1, sizeof(*res));
	if (!res)
		return NULL;
	res->run = run;
	res->benchmark = strdup(benchmark);
	res->variant = strdup(variant);
	res->params = json_object_new_object();
	res->repeats = json_object_new_array();
	if (!res->benchmark || !res->variant || !res->params ||
	    !res->repeats) {
		free(res->benchmark);
		free(res->variant);
		json_object_put(res->params);
		json_object_put(res->repeats);
		free(res);
		return NULL;
	}
	run->results[run->nresults++] = res;
	return res;
}

static void bench_result_free(struct bench_result *res)
{
	if (!res)
		return;
	for (size_t i = 0; i < res->nmetrics; i++)
		free(res->metrics[i].v);
	free(res->benchmark);
	free(res->variant);
	free(res->skip_reason);
	json_object_put(res->params);
	json_object_put(res->repeats);
	free(res);
}

void bench_result_skip(struct bench_result *res, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	free(res->skip_reason);
	res->skip_reason = strdup(buf);
}

bool bench_result_skipped(const struct bench_result *res)
{
	return res->skip_reason != NULL;
}

const char *bench_result_variant(const struct bench_result *res)
{
	return res->variant;
}

void bench_param_i64(struct bench_result *res, const char *key, int64_t v)
{
	json_object_object_add(res->params, key, json_object_new_int64(v));
}

void bench_param_str(struct bench_result *res, const char *key,
		     const char *v)
{
	json_object_object_add(res->params, key, json_object_new_string(v));
}

static int read_cpu_times(struct bench_run *run, struct probe_cpu_times *ret)
{
	_cleanup_free_ char *text = NULL;
	ssize_t n = probe_read_file(&run->pctx, "/proc/stat", &text);

	if (n < 0)
		return (int)n;
	return probe_stat_parse(text, ret);
}

static double read_loadavg1(struct bench_run *run)
{
	char buf[128];
	double v;

	if (probe_read_line(&run->pctx, "/proc/loadavg", buf, sizeof(buf)) < 0 ||
	    sscanf(buf, "%lf", &v) != 1)
		return NAN;
	return v;
}

void bench_window_begin(struct bench_result *res)
{
	res->w_times_ok = read_cpu_times(res->run, &res->w_times) == 0;
	res->w_start = bench_now();
}

static void put_number(struct json_object *o, const char *key, double v)
{
	json_object_object_add(o, key,
			       isfinite(v) ? json_object_new_double(v) : NULL);
}

void bench_window_end(struct bench_result *res)
{
	struct json_object *rep = json_object_new_object();
	struct probe_cpu_times now;
	double steal = NAN, wall = bench_now() - res->w_start;
	long long threshold = res->run->params->steal_threshold_pct;
	bool noisy;

	if (res->w_times_ok && read_cpu_times(res->run, &now) == 0 &&
	    probe_steal_percent(&res->w_times, &now, &steal) < 0)
		steal = NAN;
	noisy = isfinite(steal) && steal > (double)threshold;
	res->noisy |= noisy;
	put_number(rep, "steal_pct", steal);
	put_number(rep, "loadavg1", read_loadavg1(res->run));
	put_number(rep, "wall_s", wall);
	json_object_object_add(rep, "noisy", json_object_new_boolean(noisy));
	json_object_array_add(res->repeats, rep);
}

static struct bench_metric *metric_find(const struct bench_result *res,
					const char *name)
{
	for (size_t i = 0; i < res->nmetrics; i++)
		if (!strcmp(res->metrics[i].name, name))
			return (struct bench_metric *)&res->metrics[i];
	return NULL;
}

void bench_sample(struct bench_result *res, const char *metric,
		  const char *unit, double v)
{
	struct bench_metric *m = metric_find(res, metric);

	if (!m) {
		if (res->nmetrics == MAX_METRICS)
			return;
		m = &res->metrics[res->nmetrics++];
		snprintf(m->name, sizeof(m->name), "%s", metric);
		snprintf(m->unit, sizeof(m->unit), "%s", unit);
	}
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 8;
		double *nv = realloc(m->v, cap * sizeof(*nv));

		if (!nv)
			return;
		m->v = nv;
		m->cap = cap;
	}
	m->v[m->n++] = v;
}

const double *bench_samples(const struct bench_result *res,
			    const char *metric, size_t *ret_n)
{
	struct bench_metric *m = metric_find(res, metric);

	*ret_n = m ? m->n : 0;
	return m ? m->v : NULL;
}

void bench_compare(struct bench_run *run, const char *name,
		   const struct bench_result *num,
		   const struct bench_result *den, const char *metric)
{
	struct json_object *c = json_object_new_object();
	const double *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	struct stats_ratio r;
	const char *why = NULL;

	json_object_object_add(c, "name", json_object_new_string(name));
	json_object_object_add(c, "benchmark",
			       json_object_new_string(num->benchmark));
	json_object_object_add(c, "metric", json_object_new_string(metric));
	json_object_object_add(c, "numerator",
			       json_object_new_string(num->variant));
	json_object_object_add(c, "denominator",
			       json_object_new_string(den->variant));
	if (num->skip_reason || den->skip_reason) {
		why = num->skip_reason ? num->variant : den->variant;
	} else {
		a = bench_samples(num, metric, &na);
		b = bench_samples(den, metric, &nb);
	}
	if (!why && stats_ratio_ci(a, na, b, nb, na == nb, CI_LEVEL,
				   BOOTSTRAP_RESAMPLES,
				   (uint64_t)run->params->seed, &r) == 0) {
		put_number(c, "ratio", r.ratio);
		put_number(c, "ci_low", r.lo);
		put_number(c, "ci_high", r.hi);
		put_number(c, "level", r.level);
		json_object_object_add(
			c, "method",
			json_object_new_string(
				r.paired ? "ratio of medians, paired percentile bootstrap, 10000 resamples" :
					   "ratio of medians, percentile bootstrap, 10000 resamples"));
	} else {
		char reason[256];

		if (why)
			snprintf(reason, sizeof(reason), "%s was skipped", why);
		else
			snprintf(reason, sizeof(reason),
				 "no usable samples of %s", metric);
		json_object_object_add(c, "ratio", NULL);
		json_object_object_add(c, "reason",
				       json_object_new_string(reason));
	}
	json_object_array_add(run->comparisons, c);
}

/* ---- safety ---- */

int bench_check_memory(struct bench_run *run, uint64_t bytes, char *err,
		       size_t errlen)
{
	_cleanup_free_ char *meminfo = NULL;
	char val[64];
	unsigned long long avail_kb;
	uint64_t avail, margin;

	if (probe_read_file(&run->pctx, "/proc/meminfo", &meminfo) < 0 ||
	    probe_kv(meminfo, "MemAvailable", val, sizeof(val)) < 0 ||
	    sscanf(val, "%llu kB", &avail_kb) != 1) {
		snprintf(err, errlen,
			 "refused: MemAvailable unknown, cannot check that %llu MiB fit",
			 (unsigned long long)(bytes >> 20));
		return -ENOMEM;
	}
	avail = (uint64_t)avail_kb << 10;
	margin = avail / 4 > (256ULL << 20) ? avail / 4 : 256ULL << 20;
	if (bytes + margin > avail) {
		snprintf(err, errlen,
			 "refused: %llu MiB does not fit in MemAvailable %llu MiB with a %llu MiB margin",
			 (unsigned long long)(bytes >> 20),
			 (unsigned long long)(avail >> 20),
			 (unsigned long long)(margin >> 20));
		return -ENOMEM;
	}
	return 0;
}

int bench_check_space(const char *dir, uint64_t bytes, char *err,
		      size_t errlen)
{
	struct statvfs sv;
	uint64_t avail, margin;

	if (statvfs(dir, &sv) < 0) {
		int r = -errno;

		snprintf(err, errlen, "cannot use directory '%s': %s", dir,
			 strerror(-r));
		return r;
	}
	avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	margin = avail / 10 > (512ULL << 20) ? avail / 10 : 512ULL << 20;
	if (bytes + margin > avail) {
		snprintf(err, errlen,
			 "refused: a %llu MiB file does not fit in the %llu MiB free in '%s' with a %llu MiB margin",
			 (unsigned long long)(bytes >> 20),
			 (unsigned long long)(avail >> 20), dir,
			 (unsigned long long)(margin >> 20));
		return -ENOSPC;
	}
	return 0;
}

int bench_tmpfile(const char *dir, int flags)
{
	char path[4096];
	int fd;

	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC | flags, 0600);
	if (fd >= 0)
		return fd;
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != ENOENT)
		return -errno;
	/* No O_TMPFILE here: a named file, unlinked before any I/O. */
	for (int i = 0; i < 100; i++) {
		snprintf(path, sizeof(path), "%s/.fleetbench-%d-%d.tmp", dir,
			 (int)getpid(), i);
		fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | flags,
			  0600);
		if (fd >= 0) {
			unlink(path);
			return fd;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* ---- report ---- */

static struct json_object *result_json(const struct bench_result *res)
{
	struct json_object *o = json_object_new_object();
	struct json_object *metrics = json_object_new_array();

	json_object_object_add(o, "benchmark",
			       json_object_new_string(res->benchmark));
	json_object_object_add(o, "variant",
			       json_object_new_string(res->variant));
	json_object_object_add(o, "status",
			       json_object_new_string(res->skip_reason ?
							      "skipped" :
							      "ok"));
	json_object_object_add(o, "skip_reason",
			       res->skip_reason ?
				       json_object_new_string(res->skip_reason) :
				       NULL);
	json_object_object_add(o, "parameters", json_object_get(res->params));
	for (size_t i = 0; i < res->nmetrics; i++) {
		const struct bench_metric *m = &res->metrics[i];
		struct json_object *mo = json_object_new_object();
		struct json_object *samples = json_object_new_array();
		struct stats_summary s;

		json_object_object_add(mo, "metric",
				       json_object_new_string(m->name));
		json_object_object_add(mo, "unit",
				       json_object_new_string(m->unit));
		for (size_t k = 0; k < m->n; k++)
			json_object_array_add(samples,
					      json_object_new_double(m->v[k]));
		json_object_object_add(mo, "samples", samples);
		if (stats_summarize(m->v, m->n, &s) == 0) {
			put_number(mo, "median", s.median);
			put_number(mo, "min", s.min);
			put_number(mo, "max", s.max);
		}
		json_object_array_add(metrics, mo);
	}
	json_object_object_add(o, "metrics", metrics);
	json_object_object_add(o, "repeats", json_object_get(res->repeats));
	json_object_object_add(o, "noisy", json_object_new_boolean(res->noisy));
	return o;
}

static int only_has(const char *only, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = only; p && *p;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);

		if (n == len && !strncmp(p, name, n))
			return 1;
		p = comma ? comma + 1 : NULL;
	}
	return 0;
}

/* Every name in only is a benchmark: else -EINVAL naming it. */
static int only_check(const char *only, char *err, size_t errlen)
{
	for (const char *p = only; p && *p;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		size_t i;

		for (i = 0; i < ARRAY_SIZE(bench_table); i++)
			if (strlen(bench_table[i]->name) == n &&
			    !strncmp(p, bench_table[i]->name, n))
				break;
		if (i == ARRAY_SIZE(bench_table)) {
			snprintf(err, errlen, "unknown benchmark '%.*s'",
				 (int)n, p);
			return -EINVAL;
		}
		p = comma ? comma + 1 : NULL;
	}
	return 0;
}

int bench_suite_run(const struct bench_params *p, const char *only,
		    struct json_object **ret, char *err, size_t errlen)
{
	struct bench_run run = {
		.params = p,
		.popts = { .root = p->root ? p->root : "/" },
	};
	struct json_object *report = NULL, *results;
	bool noisy = false;
	int r = 0;

	if (only_check(only, err, errlen) < 0)
		return -EINVAL;
	run.pctx.opts = &run.popts;
	run.pctx.root_fd = open(run.popts.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	run.comparisons = json_object_new_array();
	if (run.pctx.root_fd < 0 || !run.comparisons) {
		r = run.pctx.root_fd < 0 ? -errno : -ENOMEM;
		goto out;
	}

	for (size_t i = 0; i < ARRAY_SIZE(bench_table) && r == 0; i++) {
		const struct bench_ops *ops = bench_table[i];
		void *state = NULL;

		if (only && !only_has(only, ops->name))
			continue;
		if (bench_interrupted()) {
			r = -EINTR;
			break;
		}
		r = ops->setup(&run, p, &state);
		for (long long k = 0; r == 0 && k < p->repeats; k++) {
			if (bench_interrupted())
				r = -EINTR;
			else
				r = ops->run(&run, state, (unsigned int)k);
		}
		if (r == 0 && ops->compare)
			ops->compare(&run, state);
		ops->teardown(&run, state);
		if (r < 0 && r != -EINTR)
			snprintf(err, errlen, "benchmark %s failed: %s",
				 ops->name, strerror(-r));
	}
	if (r == 0 && bench_interrupted())
		r = -EINTR;
	if (r < 0)
		goto out;

	report = json_object_new_object();
	json_object_object_add(report, "profile",
			       json_object_new_string(p->profile));
	json_object_object_add(report, "dir", json_object_new_string(p->dir));
	json_object_object_add(report, "repeats",
			       json_object_new_int64(p->repeats));
	json_object_object_add(report, "seed", json_object_new_int64(p->seed));
	json_object_object_add(report, "steal_threshold_pct",
			       json_object_new_int64(p->steal_threshold_pct));
	results = json_object_new_array();
	for (size_t i = 0; i < run.nresults; i++) {
		json_object_array_add(results, result_json(run.results[i]));
		noisy |= run.results[i]->noisy;
	}
	json_object_object_add(report, "noisy", json_object_new_boolean(noisy));
	json_object_object_add(report, "results", results);
	json_object_object_add(report, "comparisons",
			       json_object_get(run.comparisons));
	*ret = report;
out:
	for (size_t i = 0; i < run.nresults; i++)
		bench_result_free(run.results[i]);
	free(run.results);
	json_object_put(run.comparisons);
	if (run.pctx.root_fd >= 0)
		close(run.pctx.root_fd);
	return r;
}
