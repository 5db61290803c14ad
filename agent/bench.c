/* SPDX-License-Identifier: MIT */
/*
 * The benchmark driver: profiles, the table, results, windows, safety, and
 * each benchmark's child process with the checks of what it hands back.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_modules.h"
#include "bounds.h"
#include "cleanup.h"
#include "fault.h"
#include "fdio.h"
#include "probe.h"
#include "probe_stat.h"
#include "stats.h"
#include "sys/sys.h"

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
 *
 * timeout_s limits one benchmark's process, setup to teardown. It only
 * has to catch a benchmark that hangs, never a slow one: on 2 shared vCPUs
 * the whole standard suite takes about 2 min 43 s and its longest
 * benchmark (randread: a 1 GiB file written, then 6 engines x 5 repeats x
 * 1.5 s) about a minute, so each limit is at least 4 times the whole
 * profile's run there: quick 120 s, standard 600 s, full 1800 s.
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
		.timeout_s = 120,
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
		.timeout_s = 600,
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
		.timeout_s = 1800,
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
		p->timeout_s = q->timeout_s;
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

/* The signal that asked to stop (SIGINT, SIGTERM), 0 while none did. */
static volatile sig_atomic_t bench_stop;

static void bench_on_signal(int sig)
{
	bench_stop = sig;
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

/*
 * Where a benchmark's child is, in a MAP_SHARED page the parent reads once
 * the child has ended (so it can say where the child died), and the system
 * settings to restore should it die. The child writes it with plain stores
 * (no allocation, no lock): safe at any point, from a signal handler too.
 */
#define WHERE_VARIANTS 32
#define WHERE_NAME 64
#define WHERE_RESTORE 4

enum bench_phase {
	PHASE_START,
	PHASE_SETUP,
	PHASE_RUN,
	PHASE_COMPARE,
	PHASE_TEARDOWN,
	PHASE_REPORT,
};

struct bench_where {
	int phase; /* enum bench_phase */
	int variant; /* the window last begun (index into variants), -1 */
	long long repeat; /* 0-based, in PHASE_RUN */
	int error; /* errno of a child that exits CHILD_EXIT_ERROR */
	int signal; /* what stopped a child that exits CHILD_EXIT_STOPPED */
	unsigned int nvariants; /* announced by bench_result_new */
	char variants[WHERE_VARIANTS][WHERE_NAME];
	struct {
		int armed;
		char path[256];
		char value[32];
	} restore[WHERE_RESTORE];
};

/* A child's exit statuses besides 0 (results written). */
enum {
	CHILD_EXIT_ERROR = 90, /* a step returned -errno: where->error */
	CHILD_EXIT_STOPPED = 91, /* SIGINT or SIGTERM: where->signal */
};

struct bench_result {
	struct bench_run *run;
	int slot; /* index in where->variants, -1: not announced */
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
	struct bench_where *where; /* in a benchmark's child, else NULL */
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
	res->slot = -1;
	if (run->where && run->where->nvariants < WHERE_VARIANTS) {
		struct bench_where *w = run->where;
		unsigned int n = w->nvariants;

		snprintf(w->variants[n], WHERE_NAME, "%s", variant);
		/* the name first: a death between the stores is harmless */
		__atomic_store_n(&w->nvariants, n + 1, __ATOMIC_RELEASE);
		res->slot = (int)n;
	}
	return res;
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
	char point[80];

	if (res->run->where) {
		res->run->where->variant = res->slot;
		/* tests crash a benchmark in its N-th window (reliability.md) */
		snprintf(point, sizeof(point), "bench-%s", res->benchmark);
		fault_point(point);
	}
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

int bench_write_file(struct bench_run *run, const char *path,
		     const char *value)
{
	_cleanup_close_ int fd = -1;
	size_t len = strlen(value);
	ssize_t n;

	/* relative to the root's fd, as probe_read_file() reads */
	while (*path == '/')
		path++;
	fd = openat(run->pctx.root_fd, path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, value, len);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

int bench_restore_arm(struct bench_run *run, const char *path,
		      const char *previous)
{
	struct bench_where *w = run->where;

	if (!w)
		return 0; /* not in a child: teardown is the only restore */
	if (strlen(path) >= sizeof(w->restore[0].path) ||
	    strlen(previous) >= sizeof(w->restore[0].value))
		return -ENAMETOOLONG;
	for (size_t i = 0; i < WHERE_RESTORE; i++) {
		if (w->restore[i].armed)
			continue;
		snprintf(w->restore[i].path, sizeof(w->restore[i].path), "%s",
			 path);
		snprintf(w->restore[i].value, sizeof(w->restore[i].value),
			 "%s", previous);
		__atomic_store_n(&w->restore[i].armed, 1, __ATOMIC_RELEASE);
		return 0;
	}
	return -ENOSPC;
}

void bench_restore_done(struct bench_run *run, const char *path)
{
	struct bench_where *w = run->where;

	for (size_t i = 0; w && i < WHERE_RESTORE; i++)
		if (w->restore[i].armed && !strcmp(w->restore[i].path, path))
			__atomic_store_n(&w->restore[i].armed, 0,
					 __ATOMIC_RELEASE);
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
	json_object_object_add(o, "failure", NULL);
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

int bench_only_has(const char *only, const char *name)
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

/* ---- failed results ---- */

static struct json_object *failed_json(const char *benchmark,
				       const char *variant,
				       struct json_object *params,
				       const char *failure)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "benchmark",
			       json_object_new_string(benchmark));
	json_object_object_add(o, "variant", json_object_new_string(variant));
	json_object_object_add(o, "status", json_object_new_string("failed"));
	json_object_object_add(o, "skip_reason", NULL);
	json_object_object_add(o, "failure", json_object_new_string(failure));
	json_object_object_add(o, "parameters",
			       params ? json_object_get(params) :
					json_object_new_object());
	json_object_object_add(o, "metrics", json_object_new_array());
	json_object_object_add(o, "repeats", json_object_new_array());
	json_object_object_add(o, "noisy", json_object_new_boolean(false));
	return o;
}

static const char *jstring(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static struct json_object *jarray(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_array))
		return NULL;
	return v;
}

/* A number, or NaN for null, a non-number or nothing. */
static double jdouble(struct json_object *v)
{
	if (!json_object_is_type(v, json_type_double) &&
	    !json_object_is_type(v, json_type_int))
		return NAN;
	return json_object_get_double(v);
}

/*
 * Each comparison of benchmark whose numerator or denominator is variant
 * becomes ratio null with the reason, in bench_compare()'s shape for a
 * skipped side.
 */
static void comparisons_fail(struct json_object *comparisons,
			     const char *benchmark, const char *variant,
			     const char *failure)
{
	for (size_t i = 0; i < json_object_array_length(comparisons); i++) {
		struct json_object *c = json_object_array_get_idx(comparisons, i);
		const char *b = jstring(c, "benchmark");
		const char *num = jstring(c, "numerator");
		const char *den = jstring(c, "denominator");
		static const char *const keep[] = { "name", "benchmark",
						    "metric", "numerator",
						    "denominator" };
		struct json_object *n, *v;
		char reason[1024];

		if (!b || strcmp(b, benchmark) || !num || !den ||
		    (strcmp(num, variant) && strcmp(den, variant)))
			continue;
		n = json_object_new_object();
		for (size_t k = 0; k < ARRAY_SIZE(keep); k++)
			if (json_object_object_get_ex(c, keep[k], &v))
				json_object_object_add(n, keep[k],
						       json_object_get(v));
		json_object_object_add(n, "ratio", NULL);
		snprintf(reason, sizeof(reason), "%s failed: %s", variant,
			 failure);
		json_object_object_add(n, "reason",
				       json_object_new_string(reason));
		json_object_array_put_idx(comparisons, i, n);
	}
}

/* The bounds of one "ok" result: 0, or -ERANGE with why. */
static int result_bounds(struct json_object *res, char *why, size_t whylen)
{
	struct json_object *metrics = jarray(res, "metrics");
	struct json_object *repeats = jarray(res, "repeats");
	size_t nwall = repeats ? json_object_array_length(repeats) : 0;
	_cleanup_free_ double *wall = calloc(nwall + 1, sizeof(*wall));
	int r = 0;

	if (!wall) {
		snprintf(why, whylen, "no memory to check the samples");
		return -ENOMEM;
	}
	for (size_t k = 0; k < nwall; k++) {
		struct json_object *w = json_object_array_get_idx(repeats, k);
		struct json_object *v = NULL;

		json_object_object_get_ex(w, "wall_s", &v);
		wall[k] = jdouble(v);
	}
	for (size_t i = 0; r == 0 && metrics &&
			   i < json_object_array_length(metrics);
	     i++) {
		struct json_object *m = json_object_array_get_idx(metrics, i);
		struct json_object *samples = jarray(m, "samples");
		size_t n = samples ? json_object_array_length(samples) : 0;
		_cleanup_free_ double *x = calloc(n + 1, sizeof(*x));
		const char *name = jstring(m, "metric");
		const char *unit = jstring(m, "unit");

		if (!x) {
			snprintf(why, whylen, "no memory to check the samples");
			return -ENOMEM;
		}
		for (size_t k = 0; k < n; k++)
			x[k] = jdouble(json_object_array_get_idx(samples, k));
		r = bounds_check_metric(name ? name : "?", unit ? unit : "?",
					x, n, wall, nwall, why, whylen);
	}
	return r;
}

size_t bench_check_bounds(struct json_object *results,
			  struct json_object *comparisons)
{
	size_t failed = 0;

	for (size_t i = 0; i < json_object_array_length(results); i++) {
		struct json_object *res = json_object_array_get_idx(results, i);
		const char *status = jstring(res, "status");
		const char *benchmark = jstring(res, "benchmark");
		const char *variant = jstring(res, "variant");
		struct json_object *params = NULL;
		char why[512], failure[600];

		if (!status || strcmp(status, "ok") || !benchmark || !variant ||
		    result_bounds(res, why, sizeof(why)) == 0)
			continue;
		snprintf(failure, sizeof(failure), "out of bounds: %s", why);
		json_object_object_get_ex(res, "parameters", &params);
		comparisons_fail(comparisons, benchmark, variant, failure);
		/* the new result holds what it keeps of the old one */
		json_object_array_put_idx(results, i,
					  failed_json(benchmark, variant,
						      params, failure));
		failed++;
	}
	return failed;
}

size_t bench_report_failed(struct json_object *report)
{
	struct json_object *results = jarray(report, "results");
	size_t n = 0;

	for (size_t i = 0; results && i < json_object_array_length(results);
	     i++) {
		const char *status =
			jstring(json_object_array_get_idx(results, i), "status");

		n += status && !strcmp(status, "failed");
	}
	return n;
}

/* ---- the child ---- */

/* Writes the child's results and comparisons into fd as one object. */
static int child_write(struct bench_run *run, int fd)
{
	struct json_object *o = json_object_new_object();
	struct json_object *results = json_object_new_array();
	const char *text;
	int r;

	if (!o || !results) {
		json_object_put(o);
		json_object_put(results);
		return -ENOMEM;
	}
	json_object_object_add(o, "results", results);
	for (size_t i = 0; i < run->nresults; i++)
		json_object_array_add(results, result_json(run->results[i]));
	json_object_object_add(o, "comparisons",
			       json_object_get(run->comparisons));
	/* NaN and Infinity are written as such: the bounds pass fails them */
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	r = text ? fd_write_all(fd, text, strlen(text)) : -ENOMEM;
	json_object_put(o);
	return r;
}

static void where_phase(struct bench_where *w, int phase)
{
	w->variant = -1;
	w->phase = phase;
}

/*
 * The child: runs one benchmark as the suite did in-process, then writes
 * its results into out and exits; never returns. It leaves through
 * _exit(): the parent's stdio buffers and atexit handlers are not its own.
 */
static void __attribute__((noreturn))
child_main(struct bench_run *run, const struct bench_ops *ops, pid_t parent,
	   int out)
{
	const struct bench_params *p = run->params;
	struct bench_where *w = run->where;
	char name[32];
	void *state = NULL;
	int r;

	/* "fb-<benchmark>": the kernel keeps 15 characters */
	snprintf(name, sizeof(name), "fb-%s", ops->name);
	prctl(PR_SET_NAME, name, 0, 0, 0);
	/* an agent killed outright: stop as on SIGTERM, tearing down */
	prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
	if (getppid() != parent)
		bench_stop = SIGTERM;
	where_phase(w, PHASE_SETUP);
	snprintf(name, sizeof(name), "bench-setup-%s", ops->name);
	r = fault_point(name);
	if (r == 0)
		r = ops->setup(run, p, &state);
	for (long long k = 0; r == 0 && k < p->repeats; k++) {
		where_phase(w, PHASE_RUN);
		w->repeat = k;
		r = bench_interrupted() ? -EINTR :
					  ops->run(run, state, (unsigned int)k);
	}
	if (r == 0 && ops->compare) {
		where_phase(w, PHASE_COMPARE);
		ops->compare(run, state);
	}
	/* after a failure the page keeps saying where it happened */
	if (r == 0)
		where_phase(w, PHASE_TEARDOWN);
	ops->teardown(run, state);
	if (r == 0 && bench_interrupted())
		r = -EINTR;
	if (r == 0) {
		where_phase(w, PHASE_REPORT);
		r = child_write(run, out);
	}
	if (r == -EINTR) {
		w->signal = bench_stop;
		_exit(CHILD_EXIT_STOPPED);
	}
	if (r < 0) {
		w->error = -r;
		_exit(CHILD_EXIT_ERROR);
	}
	_exit(0);
}

/* ---- the parent ---- */

/* "SIGSEGV" for SIGSEGV; "signal N" for one without a name. */
static void signal_name(int sig, char *buf, size_t len)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else
		snprintf(buf, len, "signal %d", sig);
}

/*
 * Waits for the child: forwards SIGINT/SIGTERM as SIGTERM (SIGKILL after
 * BENCH_STOP_WAIT_S), SIGKILLs it past limit_s (0: none) and says so in
 * *ret_timed_out. Its wait status in *ret_status. 0 or -errno.
 */
static int child_wait(pid_t pid, long long limit_s, int *ret_status,
		      bool *ret_timed_out)
{
	_cleanup_close_ int pidfd = sys_pidfd_open(pid);
	double start = bench_now(), stop_at = 0;
	bool termed = false, killed = false, timed_out = false;
	int status;

	for (;;) {
		pid_t got = waitpid(pid, &status, WNOHANG);
		struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
		double now = bench_now();

		if (got == pid)
			break;
		if (got < 0 && errno != EINTR)
			return -errno;
		if (!killed && bench_interrupted()) {
			if (!termed) {
				kill(pid, SIGTERM);
				termed = true;
				stop_at = now + BENCH_STOP_WAIT_S;
			} else if (now >= stop_at) {
				kill(pid, SIGKILL);
				killed = true;
			}
		}
		if (!killed && !termed && limit_s > 0 &&
		    now - start >= (double)limit_s) {
			kill(pid, SIGKILL);
			killed = timed_out = true;
		}
		/*
		 * The pidfd wakes us when the child ends; at most 200 ms
		 * asleep, so a signal that lands just before the poll (or a
		 * kernel without pidfd) costs no more than that.
		 */
		poll(&pfd, pidfd >= 0 ? 1 : 0, 200);
	}
	*ret_status = status;
	*ret_timed_out = timed_out;
	return 0;
}

/*
 * Writes back what the child left armed (bench_restore_arm); a failure is
 * appended to note ("; restoring PATH failed: ...").
 */
static void where_restore(struct bench_run *run, struct bench_where *w,
			  char *note, size_t notelen)
{
	for (size_t i = 0; i < WHERE_RESTORE; i++) {
		size_t len = strlen(note);
		int r;

		if (!__atomic_load_n(&w->restore[i].armed, __ATOMIC_ACQUIRE))
			continue;
		r = bench_write_file(run, w->restore[i].path,
				     w->restore[i].value);
		if (r < 0)
			snprintf(note + len, notelen - len,
				 "; restoring %s to %s failed: %s",
				 w->restore[i].path, w->restore[i].value,
				 strerror(-r));
		w->restore[i].armed = 0;
	}
}

/* " in thp_chase/thp (repeat 1 of 5)", from the page. */
static void where_text(const struct bench_where *w, const char *benchmark,
		       long long repeats, char *buf, size_t len)
{
	unsigned int n = __atomic_load_n(&w->nvariants, __ATOMIC_ACQUIRE);
	bool in_variant = w->variant >= 0 && (unsigned int)w->variant < n;
	char pos[64];

	switch (w->phase) {
	case PHASE_RUN:
		snprintf(pos, sizeof(pos), "repeat %lld of %lld",
			 w->repeat + 1, repeats);
		break;
	case PHASE_SETUP:
		snprintf(pos, sizeof(pos), "setup");
		break;
	case PHASE_COMPARE:
		snprintf(pos, sizeof(pos), "compare");
		break;
	case PHASE_TEARDOWN:
		snprintf(pos, sizeof(pos), "teardown");
		break;
	case PHASE_REPORT:
		snprintf(pos, sizeof(pos), "writing its results");
		break;
	default:
		snprintf(pos, sizeof(pos), "starting");
		break;
	}
	snprintf(buf, len, " in %s%s%.*s (%s)", benchmark, in_variant ? "/" : "",
		 WHERE_NAME, in_variant ? w->variants[w->variant] : "", pos);
}

/*
 * The results of a benchmark whose child failed: every variant it
 * announced, "failed"; the one it died in says what happened, the others
 * "benchmark process died: " and the same. None announced: one result,
 * variant "*". Its comparisons are absent: compare never ran or its
 * results were lost.
 */
static void fail_benchmark(struct json_object *results,
			   const struct bench_where *w, const char *benchmark,
			   const char *failure)
{
	unsigned int n = __atomic_load_n(&w->nvariants, __ATOMIC_ACQUIRE);
	char other[1024];

	snprintf(other, sizeof(other), "benchmark process died: %s", failure);
	if (!n)
		json_object_array_add(results, failed_json(benchmark, "*", NULL,
							   failure));
	for (unsigned int i = 0; i < n; i++) {
		char variant[WHERE_NAME];

		snprintf(variant, sizeof(variant), "%.*s", WHERE_NAME - 1,
			 w->variants[i]);
		json_object_array_add(
			results,
			failed_json(benchmark, variant, NULL,
				    w->variant < 0 || (unsigned int)w->variant == i ?
					    failure :
					    other));
	}
}

/* Appends src's elements (NULL: none) to dst, each with a new reference. */
static void array_append(struct json_object *dst, struct json_object *src)
{
	for (size_t i = 0; src && i < json_object_array_length(src); i++)
		json_object_array_add(
			dst, json_object_get(json_object_array_get_idx(src, i)));
}

/*
 * The child's object from fd, with its "results" and "comparisons" arrays
 * (free with json_object_put). 0 or -errno: -EBADMSG when it is not that.
 */
static int child_read(int fd, struct json_object **ret)
{
	_cleanup_free_ char *text = NULL;
	off_t size = lseek(fd, 0, SEEK_END);
	struct json_object *o;
	ssize_t n;

	if (size <= 0)
		return size < 0 ? -errno : -ENODATA;
	text = malloc((size_t)size + 1);
	if (!text)
		return -ENOMEM;
	n = pread(fd, text, (size_t)size, 0);
	if (n != size)
		return n < 0 ? -errno : -EIO;
	text[n] = '\0';
	o = json_tokener_parse(text);
	if (!jarray(o, "results") || !jarray(o, "comparisons")) {
		json_object_put(o);
		return -EBADMSG;
	}
	*ret = o;
	return 0;
}

/*
 * Runs one benchmark in a child and adds its results and comparisons, or
 * its failure, to the arrays. 0, -EINTR when interrupted, or -errno of the
 * parent itself.
 */
static int run_isolated(struct bench_run *run, const struct bench_ops *ops,
			struct json_object *results,
			struct json_object *comparisons)
{
	struct bench_where *w = run->where;
	struct json_object *got = NULL;
	_cleanup_close_ int out = -1;
	char failure[1024] = "", where[160], note[512] = "";
	bool timed_out = false;
	pid_t pid, self = getpid();
	int status = 0, r;

	memset(w, 0, sizeof(*w));
	w->variant = -1;
	out = memfd_create("fleetbench-results", MFD_CLOEXEC);
	pid = out < 0 ? -1 : fork();
	if (pid == 0)
		child_main(run, ops, self, out);
	if (pid < 0) {
		snprintf(failure, sizeof(failure),
			 "cannot start the benchmark process: %s",
			 strerror(errno));
		goto failed;
	}
	r = child_wait(pid, run->params->timeout_s, &status, &timed_out);
	where_restore(run, w, note, sizeof(note));
	if (r < 0)
		return r;
	if (bench_interrupted())
		return -EINTR;
	where_text(w, ops->name, run->params->repeats, where, sizeof(where));
	if (timed_out) {
		snprintf(failure, sizeof(failure), "timed out after %lld s%s",
			 run->params->timeout_s, where);
	} else if (WIFSIGNALED(status)) {
		char sig[32];

		signal_name(WTERMSIG(status), sig, sizeof(sig));
		snprintf(failure, sizeof(failure), "%s%s", sig, where);
	} else if (WEXITSTATUS(status) == CHILD_EXIT_ERROR) {
		snprintf(failure, sizeof(failure), "%s%s", strerror(w->error),
			 where);
	} else if (WEXITSTATUS(status) == CHILD_EXIT_STOPPED) {
		char sig[32];

		signal_name(w->signal, sig, sizeof(sig));
		snprintf(failure, sizeof(failure), "stopped by %s%s", sig,
			 where);
	} else if (WEXITSTATUS(status) != 0) {
		snprintf(failure, sizeof(failure), "exit status %d%s",
			 WEXITSTATUS(status), where);
	} else {
		r = child_read(out, &got);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			snprintf(failure, sizeof(failure),
				 "its results are unreadable (%s)%s",
				 strerror(-r), where);
	}
failed:
	if (failure[0]) {
		size_t len = strlen(failure);

		snprintf(failure + len, sizeof(failure) - len, "%s", note);
		fail_benchmark(results, w, ops->name, failure);
		return 0;
	}
	bench_check_bounds(jarray(got, "results"), jarray(got, "comparisons"));
	array_append(results, jarray(got, "results"));
	array_append(comparisons, jarray(got, "comparisons"));
	json_object_put(got);
	return 0;
}

int bench_suite_run(const struct bench_params *p, const char *only,
		    struct json_object **ret, char *err, size_t errlen)
{
	struct bench_run run = {
		.params = p,
		.popts = { .root = p->root ? p->root : "/" },
	};
	struct json_object *report = NULL, *results = NULL, *comparisons = NULL;
	struct json_object *method = NULL;
	void *page = MAP_FAILED;
	bool noisy = false;
	int r = 0;

	if (only_check(only, err, errlen) < 0)
		return -EINVAL;
	run.pctx.opts = &run.popts;
	run.pctx.root_fd = open(run.popts.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (run.pctx.root_fd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot open root '%s': %s",
			 run.popts.root, strerror(-r));
		goto out;
	}
	run.comparisons = json_object_new_array();
	results = json_object_new_array();
	comparisons = json_object_new_array();
	page = mmap(NULL, sizeof(struct bench_where), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!run.comparisons || !results || !comparisons || page == MAP_FAILED) {
		r = -ENOMEM;
		goto out;
	}
	run.where = page;

	for (size_t i = 0; i < ARRAY_SIZE(bench_table) && r == 0; i++) {
		const struct bench_ops *ops = bench_table[i];

		if (only && !bench_only_has(only, ops->name))
			continue;
		if (bench_interrupted()) {
			r = -EINTR;
			break;
		}
		r = run_isolated(&run, ops, results, comparisons);
		if (r < 0 && r != -EINTR)
			snprintf(err, errlen, "benchmark %s: %s", ops->name,
				 strerror(-r));
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
	if (bench_method_json(p, only, &method) == 0)
		json_object_object_add(report, "method", method);
	json_object_object_add(report, "steal_threshold_pct",
			       json_object_new_int64(p->steal_threshold_pct));
	for (size_t i = 0; i < json_object_array_length(results); i++) {
		struct json_object *v = NULL;

		json_object_object_get_ex(json_object_array_get_idx(results, i),
					  "noisy", &v);
		noisy |= json_object_get_boolean(v);
	}
	json_object_object_add(report, "noisy", json_object_new_boolean(noisy));
	json_object_object_add(report, "results", TAKE_PTR(results));
	json_object_object_add(report, "comparisons", TAKE_PTR(comparisons));
	*ret = report;
out:
	if (page != MAP_FAILED)
		munmap(page, sizeof(struct bench_where));
	json_object_put(results);
	json_object_put(comparisons);
	json_object_put(run.comparisons);
	if (run.pctx.root_fd >= 0)
		close(run.pctx.root_fd);
	return r;
}
