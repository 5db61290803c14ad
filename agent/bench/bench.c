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
	Fleetbench__Benchmark *msg; /* in run->out->benchmarks */
	/* the open window */
	struct probe_cpu_times w_times;
	int w_times_ok;
	double w_start;
};

struct bench_run {
	const struct bench_params *params;
	struct probe_ctx pctx; /* root_fd, for kernel files */
	struct probe_opts popts;
	struct bench_result **results; /* the handles of out->benchmarks */
	size_t nresults;
	/* what this process measured: in a child, what it hands back */
	Fleetbench__BenchRun *out;
	struct bench_where *where; /* in a benchmark's child, else NULL */
};

/*
 * Makes room for element n of the array *arrp of elements of size bytes,
 * that only ever grew by one through here: its capacity is the next power
 * of two from n, so it doubles when n reaches one. 0 or -ENOMEM.
 */
static int grow(void *arrp, size_t n, size_t size)
{
	void **arr = arrp;
	void *a;

	if (n & (n - 1))
		return 0;
	a = realloc(*arr, (n ? 2 * n : 1) * size);
	if (!a)
		return -ENOMEM;
	*arr = a;
	return 0;
}

/* Frees the n messages of the repeated field *arrp and empties it. */
static void drop_messages(void *arrp, size_t *n)
{
	ProtobufCMessage ***arr = arrp;

	for (size_t i = 0; i < *n; i++)
		protobuf_c_message_free_unpacked((*arr)[i], NULL);
	free(*arr);
	*arr = NULL;
	*n = 0;
}

/* A finite v sets an optional double; NaN or infinity leaves it unset. */
static void set_double(protobuf_c_boolean *has, double *dst, double v)
{
	*has = isfinite(v);
	*dst = *has ? v : 0;
}

/* A new Benchmark appended to out; NULL on ENOMEM. */
static Fleetbench__Benchmark *benchmark_append(Fleetbench__BenchRun *out,
					       const char *benchmark,
					       const char *variant)
{
	Fleetbench__Benchmark *b;

	if (grow(&out->benchmarks, out->n_benchmarks,
		 sizeof(*out->benchmarks)) < 0)
		return NULL;
	b = malloc(sizeof(*b));
	if (!b)
		return NULL;
	fleetbench__benchmark__init(b);
	b->benchmark = strdup(benchmark);
	b->variant = strdup(variant);
	if (!b->benchmark || !b->variant) {
		fleetbench__benchmark__free_unpacked(b, NULL);
		return NULL;
	}
	out->benchmarks[out->n_benchmarks++] = b;
	return b;
}

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

	if (grow(&run->results, run->nresults, sizeof(*run->results)) < 0)
		return NULL;
	res = calloc(1, sizeof(*res));
	if (!res)
		return NULL;
	res->msg = benchmark_append(run->out, benchmark, variant);
	if (!res->msg) {
		free(res);
		return NULL;
	}
	res->run = run;
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
	free(res->msg->skip_reason);
	res->msg->skip_reason = strdup(buf);
}

bool bench_result_skipped(const struct bench_result *res)
{
	return res->msg->skip_reason != NULL;
}

const char *bench_result_variant(const struct bench_result *res)
{
	return res->msg->variant;
}

/* The parameter key of res, emptied of its value (added when new), or NULL
 * on ENOMEM. */
static Fleetbench__Param *param_put(struct bench_result *res, const char *key)
{
	Fleetbench__Benchmark *b = res->msg;
	Fleetbench__Param *p;

	for (size_t i = 0; i < b->n_parameters; i++) {
		p = b->parameters[i];
		if (strcmp(p->key, key))
			continue;
		if (p->value_case == FLEETBENCH__PARAM__VALUE_STRING_VALUE)
			free(p->string_value);
		p->value_case = FLEETBENCH__PARAM__VALUE__NOT_SET;
		return p;
	}
	if (grow(&b->parameters, b->n_parameters, sizeof(*b->parameters)) < 0)
		return NULL;
	p = malloc(sizeof(*p));
	if (!p)
		return NULL;
	fleetbench__param__init(p);
	p->key = strdup(key);
	if (!p->key) {
		free(p);
		return NULL;
	}
	b->parameters[b->n_parameters++] = p;
	return p;
}

void bench_param_i64(struct bench_result *res, const char *key, int64_t v)
{
	Fleetbench__Param *p = param_put(res, key);

	if (!p)
		return;
	p->int_value = v;
	p->value_case = FLEETBENCH__PARAM__VALUE_INT_VALUE;
}

void bench_param_str(struct bench_result *res, const char *key,
		     const char *v)
{
	Fleetbench__Param *p = param_put(res, key);

	if (!p)
		return;
	p->string_value = strdup(v);
	if (p->string_value)
		p->value_case = FLEETBENCH__PARAM__VALUE_STRING_VALUE;
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
		snprintf(point, sizeof(point), "bench-%s", res->msg->benchmark);
		fault_point(point);
	}
	res->w_times_ok = read_cpu_times(res->run, &res->w_times) == 0;
	res->w_start = bench_now();
}

void bench_window_end(struct bench_result *res)
{
	Fleetbench__Benchmark *b = res->msg;
	Fleetbench__Window *w;
	struct probe_cpu_times now;
	double steal = NAN, wall = bench_now() - res->w_start;
	long long threshold = res->run->params->steal_threshold_pct;

	if (res->w_times_ok && read_cpu_times(res->run, &now) == 0 &&
	    probe_steal_percent(&res->w_times, &now, &steal) < 0)
		steal = NAN;
	if (grow(&b->windows, b->n_windows, sizeof(*b->windows)) < 0)
		return;
	w = malloc(sizeof(*w));
	if (!w)
		return;
	fleetbench__window__init(w);
	set_double(&w->has_steal_pct, &w->steal_pct, steal);
	set_double(&w->has_loadavg1, &w->loadavg1, read_loadavg1(res->run));
	set_double(&w->has_wall_s, &w->wall_s, wall);
	w->has_noisy = 1;
	w->noisy = isfinite(steal) && steal > (double)threshold;
	b->windows[b->n_windows++] = w;
}

static Fleetbench__Metric *metric_find(const Fleetbench__Benchmark *b,
				       const char *name)
{
	for (size_t i = 0; i < b->n_metrics; i++)
		if (!strcmp(b->metrics[i]->metric, name))
			return b->metrics[i];
	return NULL;
}

/* A new metric of b, or NULL on ENOMEM or past MAX_METRICS. */
static Fleetbench__Metric *metric_add(Fleetbench__Benchmark *b,
				      const char *name, const char *unit)
{
	Fleetbench__Metric *m;

	if (b->n_metrics == MAX_METRICS ||
	    grow(&b->metrics, b->n_metrics, sizeof(*b->metrics)) < 0)
		return NULL;
	m = malloc(sizeof(*m));
	if (!m)
		return NULL;
	fleetbench__metric__init(m);
	m->metric = strdup(name);
	m->unit = strdup(unit);
	if (!m->metric || !m->unit) {
		fleetbench__metric__free_unpacked(m, NULL);
		return NULL;
	}
	b->metrics[b->n_metrics++] = m;
	return m;
}

void bench_sample(struct bench_result *res, const char *metric,
		  const char *unit, double v)
{
	Fleetbench__Metric *m = metric_find(res->msg, metric);

	if (!m)
		m = metric_add(res->msg, metric, unit);
	if (!m || grow(&m->samples, m->n_samples, sizeof(*m->samples)) < 0)
		return;
	m->samples[m->n_samples++] = v;
}

const double *bench_samples(const struct bench_result *res,
			    const char *metric, size_t *ret_n)
{
	Fleetbench__Metric *m = metric_find(res->msg, metric);

	*ret_n = m ? m->n_samples : 0;
	return m ? m->samples : NULL;
}

/* Sets c's five names; 0 or -ENOMEM. */
static int comparison_names(Fleetbench__Comparison *c, const char *name,
			    const Fleetbench__Benchmark *num,
			    const Fleetbench__Benchmark *den,
			    const char *metric)
{
	c->name = strdup(name);
	c->benchmark = strdup(num->benchmark);
	c->metric = strdup(metric);
	c->numerator = strdup(num->variant);
	c->denominator = strdup(den->variant);
	return c->name && c->benchmark && c->metric && c->numerator &&
			       c->denominator ?
		       0 :
		       -ENOMEM;
}

void bench_compare(struct bench_run *run, const char *name,
		   const struct bench_result *num,
		   const struct bench_result *den, const char *metric)
{
	Fleetbench__BenchRun *out = run->out;
	Fleetbench__Comparison *c;
	const double *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	struct stats_ratio r;
	const char *why = NULL;

	if (grow(&out->comparisons, out->n_comparisons,
		 sizeof(*out->comparisons)) < 0)
		return;
	c = malloc(sizeof(*c));
	if (!c)
		return;
	fleetbench__comparison__init(c);
	if (comparison_names(c, name, num->msg, den->msg, metric) < 0) {
		fleetbench__comparison__free_unpacked(c, NULL);
		return;
	}
	if (num->msg->skip_reason || den->msg->skip_reason) {
		why = num->msg->skip_reason ? num->msg->variant :
					      den->msg->variant;
	} else {
		a = bench_samples(num, metric, &na);
		b = bench_samples(den, metric, &nb);
	}
	if (!why && stats_ratio_ci(a, na, b, nb, na == nb, CI_LEVEL,
				   BOOTSTRAP_RESAMPLES,
				   (uint64_t)run->params->seed, &r) == 0) {
		set_double(&c->has_ratio, &c->ratio, r.ratio);
		set_double(&c->has_ci_low, &c->ci_low, r.lo);
		set_double(&c->has_ci_high, &c->ci_high, r.hi);
		set_double(&c->has_level, &c->level, r.level);
		c->method = strdup(
			r.paired ? "ratio of medians, paired percentile bootstrap, 10000 resamples" :
				   "ratio of medians, percentile bootstrap, 10000 resamples");
	} else {
		char reason[256];

		if (why)
			snprintf(reason, sizeof(reason), "%s was skipped", why);
		else
			snprintf(reason, sizeof(reason),
				 "no usable samples of %s", metric);
		c->reason = strdup(reason);
	}
	out->comparisons[out->n_comparisons++] = c;
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

const char *bench_variant_status(const Fleetbench__Benchmark *b)
{
	return b->failure ? "failed" : b->skip_reason ? "skipped" : "ok";
}

/* Marks b failed with failure: its metrics and windows go, its parameters
 * stay. 0 or -ENOMEM. */
static int benchmark_fail(Fleetbench__Benchmark *b, const char *failure)
{
	drop_messages(&b->metrics, &b->n_metrics);
	drop_messages(&b->windows, &b->n_windows);
	free(b->skip_reason);
	b->skip_reason = NULL;
	free(b->failure);
	b->failure = strdup(failure);
	return b->failure ? 0 : -ENOMEM;
}

/*
 * Each comparison of benchmark whose numerator or denominator is variant
 * loses its figures and gets the reason "<variant> failed: <failure>", as
 * bench_compare() leaves one with a skipped side.
 */
static void comparisons_fail(Fleetbench__BenchRun *b, const char *benchmark,
			     const char *variant, const char *failure)
{
	for (size_t i = 0; i < b->n_comparisons; i++) {
		Fleetbench__Comparison *c = b->comparisons[i];
		char reason[1024];

		if (strcmp(c->benchmark, benchmark) ||
		    (strcmp(c->numerator, variant) &&
		     strcmp(c->denominator, variant)))
			continue;
		c->has_ratio = c->has_ci_low = c->has_ci_high = 0;
		c->has_level = 0;
		free(c->method);
		c->method = NULL;
		snprintf(reason, sizeof(reason), "%s failed: %s", variant,
			 failure);
		free(c->reason);
		c->reason = strdup(reason);
	}
}

/* The bounds of one "ok" variant: 0, or -ERANGE with why. */
static int benchmark_bounds(const Fleetbench__Benchmark *b, char *why,
			    size_t whylen)
{
	_cleanup_free_ double *wall = calloc(b->n_windows + 1, sizeof(*wall));
	int r = 0;

	if (!wall) {
		snprintf(why, whylen, "no memory to check the samples");
		return -ENOMEM;
	}
	for (size_t k = 0; k < b->n_windows; k++)
		wall[k] = b->windows[k]->has_wall_s ? b->windows[k]->wall_s :
						      NAN;
	for (size_t i = 0; r == 0 && i < b->n_metrics; i++) {
		const Fleetbench__Metric *m = b->metrics[i];

		r = bounds_check_metric(m->metric, m->unit, m->samples,
					m->n_samples, wall, b->n_windows, why,
					whylen);
	}
	return r;
}

size_t bench_check_bounds(Fleetbench__BenchRun *b)
{
	size_t failed = 0;

	for (size_t i = 0; i < b->n_benchmarks; i++) {
		Fleetbench__Benchmark *v = b->benchmarks[i];
		char why[512], failure[600];

		if (v->skip_reason || v->failure ||
		    benchmark_bounds(v, why, sizeof(why)) == 0)
			continue;
		snprintf(failure, sizeof(failure), "out of bounds: %s", why);
		comparisons_fail(b, v->benchmark, v->variant, failure);
		benchmark_fail(v, failure);
		failed++;
	}
	return failed;
}

size_t bench_report_failed(const Fleetbench__BenchRun *b)
{
	size_t n = 0;

	for (size_t i = 0; b && i < b->n_benchmarks; i++)
		n += b->benchmarks[i]->failure != NULL;
	return n;
}

void bench_run_free(Fleetbench__BenchRun *b)
{
	if (b)
		fleetbench__bench_run__free_unpacked(b, NULL);
}

/* ---- the child ---- */

/* Writes the child's benchmarks and comparisons into fd, packed. */
static int child_write(struct bench_run *run, int fd)
{
	size_t len = fleetbench__bench_run__get_packed_size(run->out);
	_cleanup_free_ uint8_t *buf = malloc(len + 1);

	if (!buf)
		return -ENOMEM;
	/* NaN and infinities travel as such: the bounds pass fails them */
	fleetbench__bench_run__pack(run->out, buf);
	return fd_write_all(fd, buf, len);
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
 * announced, failed; the one it died in says what happened, the others
 * "benchmark process died: " and the same. None announced: one variant
 * "*". Its comparisons are absent: compare never ran or its results were
 * lost. 0 or -ENOMEM.
 */
static int fail_benchmark(Fleetbench__BenchRun *out,
			  const struct bench_where *w, const char *benchmark,
			  const char *failure)
{
	unsigned int n = __atomic_load_n(&w->nvariants, __ATOMIC_ACQUIRE);
	Fleetbench__Benchmark *b;
	char other[1024];

	snprintf(other, sizeof(other), "benchmark process died: %s", failure);
	if (!n) {
		b = benchmark_append(out, benchmark, "*");
		if (!b || benchmark_fail(b, failure) < 0)
			return -ENOMEM;
	}
	for (unsigned int i = 0; i < n; i++) {
		char variant[WHERE_NAME];

		snprintf(variant, sizeof(variant), "%.*s", WHERE_NAME - 1,
			 w->variants[i]);
		b = benchmark_append(out, benchmark, variant);
		if (!b ||
		    benchmark_fail(b, w->variant < 0 ||
						      (unsigned int)w->variant == i ?
					      failure :
					      other) < 0)
			return -ENOMEM;
	}
	return 0;
}

/*
 * Moves the *src_n messages of the array *srcp to the end of *dstp (grown
 * by grow()). What did not fit for want of memory stays in src: -ENOMEM.
 */
static int move_messages(void *dstp, size_t *dst_n, void *srcp,
			 size_t *src_n)
{
	void ***dst = dstp, ***src = srcp;
	size_t i;

	for (i = 0; i < *src_n; i++) {
		if (grow(dst, *dst_n, sizeof(void *)) < 0)
			break;
		(*dst)[(*dst_n)++] = (*src)[i];
	}
	if (i && i < *src_n)
		memmove(*src, *src + i, (*src_n - i) * sizeof(void *));
	*src_n -= i;
	return *src_n ? -ENOMEM : 0;
}

/*
 * The child's packed BenchRun from fd (free with bench_run_free()). 0 or
 * -errno: -EBADMSG when it is not one.
 */
static int child_read(int fd, Fleetbench__BenchRun **ret)
{
	_cleanup_free_ uint8_t *buf = NULL;
	off_t size = lseek(fd, 0, SEEK_END);
	Fleetbench__BenchRun *b;
	ssize_t n;

	if (size < 0)
		return -errno;
	buf = malloc((size_t)size + 1);
	if (!buf)
		return -ENOMEM;
	n = pread(fd, buf, (size_t)size, 0);
	if (n != size)
		return n < 0 ? -errno : -EIO;
	b = fleetbench__bench_run__unpack(NULL, (size_t)size, buf);
	if (!b)
		return -EBADMSG;
	*ret = b;
	return 0;
}

/*
 * Runs one benchmark in a child and adds its results and comparisons, or
 * its failure, to out. 0, -EINTR when interrupted, or -errno of the parent
 * itself.
 */
static int run_isolated(struct bench_run *run, const struct bench_ops *ops,
			Fleetbench__BenchRun *out)
{
	struct bench_where *w = run->where;
	Fleetbench__BenchRun *got = NULL;
	_cleanup_close_ int out_fd = -1;
	char failure[1024] = "", where[160], note[512] = "";
	bool timed_out = false;
	pid_t pid, self = getpid();
	int status = 0, r;

	memset(w, 0, sizeof(*w));
	w->variant = -1;
	out_fd = memfd_create("fleetbench-results", MFD_CLOEXEC);
	pid = out_fd < 0 ? -1 : fork();
	if (pid == 0)
		child_main(run, ops, self, out_fd);
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
		r = child_read(out_fd, &got);
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
		return fail_benchmark(out, w, ops->name, failure);
	}
	bench_check_bounds(got);
	r = move_messages(&out->benchmarks, &out->n_benchmarks,
			  &got->benchmarks, &got->n_benchmarks);
	if (r == 0)
		r = move_messages(&out->comparisons, &out->n_comparisons,
				  &got->comparisons, &got->n_comparisons);
	bench_run_free(got);
	return r;
}

/* A new, empty BenchRun; NULL on ENOMEM. */
static Fleetbench__BenchRun *bench_run_new(void)
{
	Fleetbench__BenchRun *b = malloc(sizeof(*b));

	if (b)
		fleetbench__bench_run__init(b);
	return b;
}

int bench_suite_run(const struct bench_params *p, const char *only,
		    Fleetbench__BenchRun **ret, char *err, size_t errlen)
{
	struct bench_run run = {
		.params = p,
		.popts = { .root = p->root ? p->root : "/" },
	};
	Fleetbench__BenchRun *suite = NULL;
	void *page = MAP_FAILED;
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
	/* run.out stays empty here: each child fills its own copy */
	run.out = bench_run_new();
	suite = bench_run_new();
	page = mmap(NULL, sizeof(struct bench_where), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!run.out || !suite || page == MAP_FAILED) {
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
		r = run_isolated(&run, ops, suite);
		if (r < 0 && r != -EINTR)
			snprintf(err, errlen, "benchmark %s: %s", ops->name,
				 strerror(-r));
	}
	if (r == 0 && bench_interrupted())
		r = -EINTR;
	if (r < 0)
		goto out;

	if (p->profile) {
		suite->profile = strdup(p->profile);
		if (!suite->profile) {
			r = -ENOMEM;
			goto out;
		}
	}
	suite->has_seed = 1;
	suite->seed = p->seed;
	/* only an unknown profile has no method: none then, as before */
	r = p->profile ? bench_method_new(p, only, &suite->method) : -EINVAL;
	if (r == -ENOMEM)
		goto out;
	r = 0;
	*ret = TAKE_PTR(suite);
out:
	if (r == -ENOMEM && !err[0])
		snprintf(err, errlen, "out of memory");
	if (page != MAP_FAILED)
		munmap(page, sizeof(struct bench_where));
	bench_run_free(suite);
	bench_run_free(run.out);
	if (run.pctx.root_fd >= 0)
		close(run.pctx.root_fd);
	return r;
}
