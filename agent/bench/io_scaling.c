/* SPDX-License-Identifier: MIT */
/*
 * io_scaling: io_uring random 4 KiB O_DIRECT reads of randread's file with
 * 1, 2, 4, ... jobs up to the online vCPUs (the vCPU count always among
 * them) at queue depths 1, 4, 16, 32 and 64, and the knee: the smallest
 * depth within 5% of the best IOPS at a job count.
 *
 * A job is a thread with its own fd (the file reopened) and its own ring
 * (io_engine.c's io_uring engine, the randread loop): the ring is made in
 * the thread that submits to it, for SINGLE_ISSUER and DEFER_TASKRUN
 * refuse any other task. The jobs of a point start together (a gate), and
 * the point's IOPS is the sum of their I/Os over the longest job's time,
 * as fio's group_reporting sums a group's I/Os over its longest runtime.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_io.h"
#include "bench_modules.h"
#include "cleanup.h"
#include "io_engine.h"
#include "rand.h"

#define SCALING_BLOCK 4096u
/* Of the best IOPS at a job count, what the knee's depth reaches. */
#define KNEE_FRACTION 0.95
/* 1, 2, 4, ..., 2^k below the vCPU count, and the count: 64-bit worth. */
#define MAX_JOB_COUNTS 66

static const unsigned int depths[] = { 1, 4, 16, 32, 64 };
#define NDEPTHS ARRAY_SIZE(depths)

struct point {
	unsigned int jobs, depth;
	struct bench_result *res;
};

/* Where the jobs of a point wait until all are ready, then start. */
struct gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int ready;
	bool go, abort;
};

struct scaling_state;

struct job {
	struct scaling_state *s;
	struct io_job io;
	uint64_t seed;
	struct io_stats *st;
	int err;
	char why[256];
	pthread_t tid;
};

struct scaling_state {
	const struct bench_params *p;
	struct io_file f;
	unsigned int ncpu;
	int *fds; /* ncpu: fds[0] is f.fd, the others reopen it */
	unsigned int counts[MAX_JOB_COUNTS];
	size_t ncounts;
	struct point *pts; /* ncounts x NDEPTHS, by job count then depth */
	size_t npts;
	struct bench_result *knee;
	struct job *jobs; /* ncpu */
	struct io_stats *stats; /* ncpu */
	struct lat_hist *lat; /* the jobs' histograms merged */
	double *iops; /* npts: this repeat's, NAN when not measured */
	struct gate gate;
};

static struct point *point_at(struct scaling_state *s, size_t c, size_t d)
{
	return &s->pts[c * NDEPTHS + d];
}

static void skip_all(struct scaling_state *s, const char *why)
{
	for (size_t i = 0; i < s->npts; i++)
		bench_result_skip(s->pts[i].res, "%s", why);
	bench_result_skip(s->knee, "%s", why);
}

static void *job_main(void *arg)
{
	struct job *j = arg;
	struct gate *g = &j->s->gate;
	struct io_ctx *ctx = NULL;
	bool go;

	j->err = io_ctx_new(&j->io, &ctx, j->why, sizeof(j->why));
	pthread_mutex_lock(&g->lock);
	g->ready++;
	pthread_cond_broadcast(&g->cond);
	while (!g->go)
		pthread_cond_wait(&g->cond, &g->lock);
	go = !g->abort;
	pthread_mutex_unlock(&g->lock);
	if (j->err == 0 && go)
		j->err = io_ctx_run(ctx, j->seed, j->st);
	io_ctx_free(ctx);
	return NULL;
}

/* Opens the gate once n jobs are ready (abort: to let them go home). */
static void gate_open(struct gate *g, unsigned int n, bool abort,
		      struct bench_result *res)
{
	pthread_mutex_lock(&g->lock);
	while (g->ready < n)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
	if (res)
		bench_window_begin(res);
	pthread_mutex_lock(&g->lock);
	g->go = true;
	g->abort = abort;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

static uint64_t job_seed(const struct scaling_state *s, unsigned int repeat,
			 const struct point *pt, unsigned int i)
{
	uint64_t x = (uint64_t)s->p->seed ^
		     ((uint64_t)repeat << 40 ^ (uint64_t)pt->jobs << 20 ^
		      (uint64_t)pt->depth << 12 ^ i);

	return splitmix64(&x);
}

static void io_job_of(const struct scaling_state *s, unsigned int depth,
		      int fd, struct io_job *io)
{
	*io = (struct io_job){
		.engine = IO_ENGINE_URING,
		.fd = fd,
		.random = true,
		.span = s->f.span,
		.block = SCALING_BLOCK,
		.depth = depth,
		.duration_ns = (uint64_t)s->p->scaling_ms * 1000000ULL,
		/* Only the agent's own file holds the pattern. */
		.check_pattern = !s->p->randread_file,
	};
}

/* One point once: its jobs started together, their I/Os summed. */
static int run_point(struct scaling_state *s, struct point *pt,
		     unsigned int repeat, double *ret_iops)
{
	struct gate *g = &s->gate;
	unsigned int n = 0;
	uint64_t ios = 0;
	double longest = 0;
	int r = 0;

	g->ready = 0;
	g->go = g->abort = false;
	for (; n < pt->jobs; n++) {
		struct job *j = &s->jobs[n];

		*j = (struct job){ .s = s, .st = &s->stats[n],
				   .seed = job_seed(s, repeat, pt, n) };
		io_job_of(s, pt->depth, s->fds[n], &j->io);
		r = -pthread_create(&j->tid, NULL, job_main, j);
		if (r < 0)
			break;
	}
	gate_open(g, n, r < 0, r < 0 ? NULL : pt->res);
	for (unsigned int i = 0; i < n; i++)
		pthread_join(s->jobs[i].tid, NULL);
	if (r < 0)
		return r;
	bench_window_end(pt->res);

	lat_hist_reset(s->lat);
	for (unsigned int i = 0; i < n; i++) {
		const struct job *j = &s->jobs[i];

		if (j->err < 0)
			return j->err;
		ios += j->st->ios;
		if (j->st->elapsed_s > longest)
			longest = j->st->elapsed_s;
		lat_hist_merge(s->lat, &j->st->lat);
	}
	if (!ios || longest <= 0)
		return -EIO;
	*ret_iops = (double)ios / longest;
	bench_sample(pt->res, "iops", "IO/s", *ret_iops);
	bench_sample(pt->res, "lat_p50_us", "us",
		     lat_hist_quantile(s->lat, 0.50) / 1e3);
	bench_sample(pt->res, "lat_p99_us", "us",
		     lat_hist_quantile(s->lat, 0.99) / 1e3);
	return 0;
}

/*
 * The knee at job count c from this repeat's IOPS: the smallest depth
 * within KNEE_FRACTION of the best. 0 when no depth was measured.
 */
static unsigned int knee_of(struct scaling_state *s, size_t c,
			    double *ret_best)
{
	double best = 0;

	for (size_t d = 0; d < NDEPTHS; d++) {
		double v = s->iops[c * NDEPTHS + d];

		if (isfinite(v) && v > best)
			best = v;
	}
	*ret_best = best;
	for (size_t d = 0; d < NDEPTHS && best > 0; d++) {
		double v = s->iops[c * NDEPTHS + d];

		if (isfinite(v) && v >= KNEE_FRACTION * best)
			return depths[d];
	}
	return 0;
}

static void record_knee(struct scaling_state *s)
{
	for (size_t c = 0; c < s->ncounts; c++) {
		char name[48];
		double best;
		unsigned int knee = knee_of(s, c, &best);

		if (!knee)
			continue;
		snprintf(name, sizeof(name), "knee_depth_j%u", s->counts[c]);
		bench_sample(s->knee, name, "depth", knee);
		snprintf(name, sizeof(name), "best_iops_j%u", s->counts[c]);
		bench_sample(s->knee, name, "IO/s", best);
		if (c + 1 == s->ncounts) {
			bench_sample(s->knee, "knee_depth", "depth", knee);
			bench_sample(s->knee, "best_iops", "IO/s", best);
		}
	}
}

/* One repeat: every point once, the order rotated by the repeat. The
 * knee's window spans the repeat. */
static int scaling_run(struct bench_run *run, void *state,
		       unsigned int repeat)
{
	struct scaling_state *s = state;
	size_t n = s->npts;

	(void)run;
	if (bench_result_skipped(s->knee))
		return 0;
	bench_window_begin(s->knee);
	for (size_t k = 0; k < n; k++) {
		size_t i = (k + repeat) % n;
		int r;

		s->iops[i] = NAN;
		if (bench_result_skipped(s->pts[i].res))
			continue;
		if (bench_interrupted())
			return -EINTR;
		r = run_point(s, &s->pts[i], repeat, &s->iops[i]);
		if (r < 0)
			return r;
	}
	bench_window_end(s->knee);
	record_knee(s);
	return 0;
}

/* The job counts: 1, 2, 4, ... below ncpu, then ncpu. */
static size_t job_counts(unsigned int ncpu, unsigned int *ret)
{
	size_t n = 0;

	for (unsigned int j = 1; j < ncpu && n + 1 < MAX_JOB_COUNTS; j *= 2)
		ret[n++] = j;
	ret[n++] = ncpu;
	return n;
}

static int make_results(struct bench_run *run, struct scaling_state *s)
{
	char name[48], list[64];

	s->npts = s->ncounts * NDEPTHS;
	s->pts = calloc(s->npts, sizeof(*s->pts));
	s->iops = calloc(s->npts, sizeof(*s->iops));
	if (!s->pts || !s->iops)
		return -ENOMEM;
	for (size_t c = 0; c < s->ncounts; c++) {
		for (size_t d = 0; d < NDEPTHS; d++) {
			struct point *pt = point_at(s, c, d);

			pt->jobs = s->counts[c];
			pt->depth = depths[d];
			snprintf(name, sizeof(name), "j%u_qd%u", pt->jobs,
				 pt->depth);
			pt->res = bench_result_new(run, "io_scaling", name);
			if (!pt->res)
				return -ENOMEM;
			bench_param_str(pt->res, "engine", "io_uring");
			bench_param_i64(pt->res, "jobs", pt->jobs);
			bench_param_i64(pt->res, "iodepth", pt->depth);
		}
	}
	s->knee = bench_result_new(run, "io_scaling", "knee");
	if (!s->knee)
		return -ENOMEM;
	bench_param_i64(s->knee, "jobs", s->ncpu);
	snprintf(list, sizeof(list), "%u,%u,%u,%u,%u", depths[0], depths[1],
		 depths[2], depths[3], depths[4]);
	bench_param_str(s->knee, "depths", list);
	bench_param_str(s->knee, "knee",
			"the smallest depth whose IOPS is within 5% of the best "
			"at that job count, per repeat; knee_depth and "
			"best_iops at jobs = vCPUs, knee_depth_j<J> and "
			"best_iops_j<J> per job count");
	return 0;
}

static void describe(struct scaling_state *s, struct bench_result *res)
{
	io_file_params(res, s->p, &s->f);
	bench_param_i64(res, "scaling_ms", s->p->scaling_ms);
	bench_param_i64(res, "vcpus", s->ncpu);
	bench_param_str(res, "offsets",
			"uniform 4 KiB-aligned over the whole file, a PRNG per job");
	bench_param_str(res, "iops",
			"the jobs' I/Os summed over the longest job's time; the "
			"jobs start together, each with its own fd and ring");
}

/* Every job its own open file: fds[0] is the file, the rest reopen it. */
static int open_fds(struct scaling_state *s, char *why, size_t len)
{
	char path[64];

	s->fds[0] = s->f.fd;
	for (unsigned int i = 1; i < s->ncpu; i++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", s->f.fd);
		s->fds[i] = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
		if (s->fds[i] < 0) {
			int r = -errno;

			snprintf(why, len,
				 "cannot reopen the file for job %u (%s): %s",
				 i + 1, path, strerror(-r));
			return r;
		}
	}
	return 0;
}

/* Skips the points of a depth whose ring cannot be made here, saying
 * why; the knee too when no point at the vCPU count is left. */
static int check_depths(struct scaling_state *s)
{
	for (size_t d = 0; d < NDEPTHS; d++) {
		struct io_ctx *ctx;
		struct io_job io;
		char why[256];
		int r;

		io_job_of(s, depths[d], s->f.fd, &io);
		r = io_ctx_new(&io, &ctx, why, sizeof(why));
		if (r == -ENOMEM)
			return r;
		for (size_t c = 0; c < s->ncounts; c++) {
			struct bench_result *res = point_at(s, c, d)->res;

			if (r < 0)
				bench_result_skip(res, "%s", why);
			else if (io_ctx_ring_flags(ctx))
				bench_param_str(res, "ring_flags",
						io_ctx_ring_flags(ctx));
		}
		if (r == 0)
			io_ctx_free(ctx);
	}
	for (size_t d = 0; d < NDEPTHS; d++)
		if (!bench_result_skipped(point_at(s, s->ncounts - 1, d)->res))
			return 0;
	bench_result_skip(s->knee, "no depth can be measured at %u jobs",
			  s->ncpu);
	return 0;
}

static int scaling_setup(struct bench_run *run, const struct bench_params *p,
			 void **state)
{
	struct scaling_state *s = calloc(1, sizeof(*s));
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	char why[512];
	int r;

	*state = s;
	if (!s)
		return -ENOMEM;
	s->p = p;
	s->f.fd = -1;
	s->ncpu = ncpu > 0 ? (unsigned int)ncpu : 1;
	s->ncounts = job_counts(s->ncpu, s->counts);
	pthread_mutex_init(&s->gate.lock, NULL);
	pthread_cond_init(&s->gate.cond, NULL);
	s->fds = malloc(s->ncpu * sizeof(*s->fds));
	if (!s->fds)
		return -ENOMEM;
	for (unsigned int i = 0; i < s->ncpu; i++)
		s->fds[i] = -1;
	s->jobs = calloc(s->ncpu, sizeof(*s->jobs));
	s->stats = calloc(s->ncpu, sizeof(*s->stats));
	s->lat = malloc(sizeof(*s->lat));
	if (!s->jobs || !s->stats || !s->lat)
		return -ENOMEM;
	r = make_results(run, s);
	if (r < 0)
		return r;

	r = io_randread_file(p, &s->f, why, sizeof(why));
	if (r < 0)
		return r;
	for (size_t i = 0; i < s->npts; i++)
		describe(s, s->pts[i].res);
	describe(s, s->knee);
	if (s->f.fd < 0) {
		skip_all(s, why);
		return 0;
	}
	r = open_fds(s, why, sizeof(why));
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		skip_all(s, why);
		return 0;
	}
	return check_depths(s);
}

static void scaling_teardown(struct bench_run *run, void *state)
{
	struct scaling_state *s = state;

	(void)run;
	if (!s)
		return;
	for (unsigned int i = 1; s->fds && i < s->ncpu; i++)
		if (s->fds[i] >= 0)
			close(s->fds[i]);
	if (s->f.fd >= 0)
		close(s->f.fd);
	pthread_mutex_destroy(&s->gate.lock);
	pthread_cond_destroy(&s->gate.cond);
	free(s->fds);
	free(s->jobs);
	free(s->stats);
	free(s->lat);
	free(s->pts);
	free(s->iops);
	free(s);
}

static void scaling_compare(struct bench_run *run, void *state)
{
	struct scaling_state *s = state;
	size_t qd1 = 0, qd32 = 0;

	for (size_t d = 0; d < NDEPTHS; d++) {
		if (depths[d] == 1)
			qd1 = d;
		if (depths[d] == 32)
			qd32 = d;
	}
	bench_compare(run, "iouring_qd32_vs_qd1", point_at(s, 0, qd32)->res,
		      point_at(s, 0, qd1)->res, "iops");
}

const struct bench_ops bench_io_scaling_ops = {
	.name = "io_scaling",
	.io = true,
	.summary = "io_uring random 4 KiB O_DIRECT reads, 1 to vCPUs jobs x depths 1-64, and the knee",
	.full_only = true,
	.weight = { 20, 20, 100 },
	.needs = io_randread_needs, /* the same file */
	.setup = scaling_setup,
	.run = scaling_run,
	.teardown = scaling_teardown,
	.compare = scaling_compare,
};
