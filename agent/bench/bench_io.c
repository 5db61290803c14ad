/* SPDX-License-Identifier: MIT */
/* randread and seqwrite: O_DIRECT random reads and sequential writes. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "bench_io.h"
#include "bench_modules.h"
#include "cleanup.h"
#include "io_engine.h"
#include "rand.h"

#define RANDREAD_BLOCK 4096u
#define MAX_VARIANTS 5

struct io_variant {
	const char *name;
	enum io_engine engine;
	struct bench_result *res;
};

struct io_state {
	const struct bench_params *p;
	struct io_file f; /* the file, its span and filesystem */
	bool write; /* seqwrite, else randread */
	uint32_t block;
	struct io_variant v[MAX_VARIANTS];
	size_t nv;
	struct io_stats *stats; /* one run's, reused (the histogram is big) */
};

static const struct io_variant randread_variants[] = {
	{ "pread", IO_ENGINE_SYNC, NULL },
	{ "io_uring", IO_ENGINE_URING, NULL },
	{ "io_uring_sqpoll", IO_ENGINE_URING_SQPOLL, NULL },
	{ "io_uring_fixed", IO_ENGINE_URING_FIXED, NULL },
	{ "libaio", IO_ENGINE_LIBAIO, NULL },
};

static const struct io_variant seqwrite_variants[] = {
	{ "pwrite", IO_ENGINE_SYNC, NULL },
	{ "io_uring", IO_ENGINE_URING, NULL },
};

static const char *const engine_desc[] = {
	[IO_ENGINE_SYNC] = "psync",
	[IO_ENGINE_URING] = "io_uring",
	[IO_ENGINE_URING_SQPOLL] = "io_uring+SQPOLL",
	[IO_ENGINE_URING_FIXED] = "io_uring+registered file+fixed buffers",
	[IO_ENGINE_LIBAIO] = "libaio",
};

static struct io_variant *find_variant(struct io_state *s, const char *name)
{
	for (size_t i = 0; i < s->nv; i++)
		if (!strcmp(s->v[i].name, name))
			return &s->v[i];
	return NULL;
}

static void skip_all(struct io_state *s, const char *why)
{
	for (size_t i = 0; i < s->nv; i++)
		bench_result_skip(s->v[i].res, "%s", why);
}

static unsigned int variant_depth(const struct io_state *s,
				  const struct io_variant *v)
{
	return v->engine == IO_ENGINE_SYNC ? 1u :
					     (unsigned int)s->p->iodepth;
}

/* Creates the state and one result per variant, with its parameters. */
static int state_new(struct bench_run *run, const struct bench_params *p,
		     const char *benchmark, const struct io_variant *vars,
		     size_t nv, struct io_state **ret)
{
	struct io_state *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->p = p;
	s->f.fd = -1;
	s->stats = malloc(sizeof(*s->stats));
	if (!s->stats) {
		free(s);
		return -ENOMEM;
	}
	*ret = s;
	for (size_t i = 0; i < nv; i++) {
		s->v[i] = vars[i];
		s->v[i].res = bench_result_new(run, benchmark, vars[i].name);
		if (!s->v[i].res)
			return -ENOMEM;
		s->nv++;
		bench_param_str(s->v[i].res, "engine",
				engine_desc[vars[i].engine]);
		bench_param_i64(s->v[i].res, "iodepth",
				variant_depth(s, &s->v[i]));
	}
	return 0;
}

const char *io_work_dir(const struct bench_params *p)
{
	return p->dir ? p->dir : "/var/tmp";
}

static bool fatal(int r)
{
	return r == -ENOMEM || r == -EINTR;
}

/*
 * A new unnamed O_DIRECT file of `bytes` in dir, or -errno with the
 * reason in why: the directory unusable, no room, O_DIRECT refused, or a
 * memory-backed filesystem (where O_DIRECT measures memory copies).
 */
static int work_file(struct io_file *f, const char *dir, uint64_t bytes,
		     char *why, size_t len)
{
	bool memory;
	int fd, r;

	r = io_dir_fs(dir, f->fs, sizeof(f->fs), &memory, why, len);
	if (r < 0)
		return r;
	r = bench_check_space(dir, bytes, why, len);
	if (r < 0)
		return r;
	fd = bench_tmpfile(dir, O_DIRECT);
	if (fd == -EINVAL) {
		snprintf(why, len, "O_DIRECT refused by %s on %s", f->fs, dir);
		return fd;
	}
	if (fd < 0) {
		snprintf(why, len, "cannot create a file in '%s': %s", dir,
			 strerror(-fd));
		return fd;
	}
	if (memory) {
		close(fd);
		snprintf(why, len,
			 "%s on %s is memory-backed: O_DIRECT there reaches no device",
			 f->fs, dir);
		return -EMEDIUMTYPE;
	}
	return fd;
}

/*
 * Creates and writes the work file: 0 with f->fd set, 0 with f->fd -1 and
 * why saying why it cannot be, or a fatal -errno.
 */
static int make_file(struct io_file *f, const char *dir, uint64_t bytes,
		     uint64_t seed, char *why, size_t len)
{
	int r;

	r = work_file(f, dir, bytes, why, len);
	if (r < 0)
		return fatal(r) ? r : 0;
	f->fd = r;
	f->span = bytes;
	r = io_pattern_write_file(f->fd, bytes, seed);
	if (r < 0) {
		close(TAKE_FD(f->fd));
		if (fatal(r))
			return r;
		if (r == -ETIME)
			snprintf(why, len,
				 "writing the %llu MiB file in %s did not end within the benchmark's allowance",
				 (unsigned long long)(bytes >> 20), dir);
		else
			snprintf(why, len,
				 "writing the %llu MiB file in %s failed: %s",
				 (unsigned long long)(bytes >> 20), dir,
				 strerror(-r));
	}
	return 0;
}

/* make_file() for the state's variants: skips them all when it cannot. */
static int make_state_file(struct io_state *s, uint64_t bytes, uint64_t seed)
{
	char why[512];
	int r = make_file(&s->f, io_work_dir(s->p), bytes, seed, why,
			  sizeof(why));

	if (r == 0 && s->f.fd < 0)
		skip_all(s, why);
	return r;
}

static void job_of(const struct io_state *s, const struct io_variant *v,
		   struct io_job *job)
{
	*job = (struct io_job){
		.engine = v->engine,
		.fd = s->f.fd,
		.write = s->write,
		.random = !s->write,
		.span = s->f.span,
		.block = s->block,
		.depth = variant_depth(s, v),
		.duration_ns = s->write ? 0 :
					  (uint64_t)s->p->io_ms * 1000000ULL,
		.total_bytes = s->write ? s->f.span : 0,
		.datasync = s->write,
		/* Only the agent's own file holds the pattern. */
		.check_pattern = !s->write && !s->p->randread_file,
	};
}

/* Skips the variants whose engine cannot be set up here, saying why. */
static int check_engines(struct io_state *s)
{
	for (size_t i = 0; i < s->nv; i++) {
		struct io_variant *v = &s->v[i];
		struct io_ctx *ctx;
		struct io_job job;
		char why[256];
		int r;

		if (bench_result_skipped(v->res))
			continue;
		job_of(s, v, &job);
		r = io_ctx_new(&job, &ctx, why, sizeof(why));
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			bench_result_skip(v->res, "%s", why);
			continue;
		}
		if (io_ctx_ring_flags(ctx))
			bench_param_str(v->res, "ring_flags",
					io_ctx_ring_flags(ctx));
		io_ctx_free(ctx);
	}
	return 0;
}

/* The offsets of each engine and repeat: reproducible from the seed. */
static uint64_t run_seed(const struct io_state *s, unsigned int repeat,
			 const struct io_variant *v)
{
	uint64_t x = (uint64_t)s->p->seed ^
		     ((uint64_t)repeat << 32 | (uint64_t)v->engine << 1 |
		      (uint64_t)s->write);

	return splitmix64(&x);
}

static int run_variant(struct io_state *s, struct io_variant *v,
		       unsigned int repeat)
{
	struct io_stats *st = s->stats;
	struct io_ctx *ctx;
	struct io_job job;
	char why[256];
	int r;

	/* The ring (and SQPOLL's thread) lives for this run only, so an idle
	 * poller never spins into the next engine's window. */
	job_of(s, v, &job);
	r = io_ctx_new(&job, &ctx, why, sizeof(why));
	if (r < 0)
		return r;
	bench_window_begin(v->res);
	r = io_ctx_run(ctx, run_seed(s, repeat, v), st);
	bench_window_end(v->res);
	io_ctx_free(ctx);
	if (r < 0)
		return r;
	if (!st->ios || st->elapsed_s <= 0)
		return -EIO;

	if (s->write) {
		bench_sample(v->res, "mb_per_s", "MB/s",
			     (double)st->bytes / st->elapsed_s / 1e6);
		bench_sample(v->res, "fdatasync_ms", "ms",
			     st->datasync_s * 1e3);
	} else {
		bench_sample(v->res, "iops", "IO/s",
			     (double)st->ios / st->elapsed_s);
	}
	bench_sample(v->res, "lat_p50_us", "us",
		     lat_hist_quantile(&st->lat, 0.50) / 1e3);
	bench_sample(v->res, "lat_p99_us", "us",
		     lat_hist_quantile(&st->lat, 0.99) / 1e3);
	if (!s->write)
		bench_sample(v->res, "lat_p999_us", "us",
			     lat_hist_quantile(&st->lat, 0.999) / 1e3);
	bench_sample(v->res, "cpu_s_per_1k_io", "s",
		     st->cpu_s / (double)st->ios * 1000.0);
	/* How often the loop found no room to queue (a full SQ, an io_submit
	 * out of resources) and how many I/Os came back EAGAIN or EINTR and
	 * were reissued: a reader sees that it happened. */
	if (v->engine != IO_ENGINE_SYNC)
		bench_sample(v->res, "sq_full_waits", "count",
			     (double)st->sq_full_waits);
	bench_sample(v->res, "retries", "count", (double)st->retries);
	return 0;
}

/* One repeat: every engine once, the order rotated by the repeat. */
static int io_run(struct bench_run *run, void *state, unsigned int repeat)
{
	struct io_state *s = state;
	struct io_variant *active[MAX_VARIANTS];
	size_t n = 0;

	(void)run;
	for (size_t i = 0; i < s->nv; i++)
		if (!bench_result_skipped(s->v[i].res))
			active[n++] = &s->v[i];
	for (size_t k = 0; k < n; k++) {
		int r;

		if (bench_interrupted())
			return -EINTR;
		r = run_variant(s, active[(k + repeat) % n], repeat);
		if (r < 0)
			return r;
	}
	return 0;
}

static void io_teardown(struct bench_run *run, void *state)
{
	struct io_state *s = state;

	(void)run;
	if (!s)
		return;
	if (s->f.fd >= 0)
		close(s->f.fd);
	free(s->stats);
	free(s);
}

/* ---- randread ---- */

/*
 * Opens --randread-file read-only: f->fd and its span, or f->fd -1 and
 * why saying why not.
 */
static void open_given_file(struct io_file *f, const char *path, char *why,
			    size_t len)
{
	struct statfs sf;
	struct stat st;
	char buf[32];
	uint64_t bytes = 0;
	int fd, r = 0;

	fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd >= 0 && fstatfs(fd, &sf) == 0)
		snprintf(f->fs, sizeof(f->fs), "%s",
			 io_fs_name((long)sf.f_type, buf, sizeof(buf)));
	if (fd < 0 && errno == EINVAL && statfs(path, &sf) == 0) {
		snprintf(why, len, "O_DIRECT refused by %s on %s",
			 io_fs_name((long)sf.f_type, buf, sizeof(buf)), path);
		goto skip;
	}
	if (fd < 0) {
		snprintf(why, len, "cannot open '%s': %s", path,
			 strerror(errno));
		goto skip;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto fail;
	}
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &bytes) < 0) {
			r = -errno;
			goto fail;
		}
	} else if (S_ISREG(st.st_mode)) {
		bytes = (uint64_t)st.st_size;
	} else {
		snprintf(why, len,
			 "'%s' is neither a regular file nor a block device",
			 path);
		goto skip;
	}
	f->span = bytes / RANDREAD_BLOCK * RANDREAD_BLOCK;
	if (!f->span) {
		snprintf(why, len, "'%s' is smaller than %u bytes",
			 path, RANDREAD_BLOCK);
		goto skip;
	}
	f->fd = fd;
	return;
fail:
	snprintf(why, len, "cannot use '%s': %s", path, strerror(-r));
skip:
	if (fd >= 0)
		close(fd);
}

int io_randread_file(const struct bench_params *p, struct io_file *f,
		     char *why, size_t len)
{
	uint64_t bytes = p->file_bytes / RANDREAD_BLOCK * RANDREAD_BLOCK;

	*f = (struct io_file){ .fd = -1 };
	if (p->randread_file) {
		open_given_file(f, p->randread_file, why, len);
		return 0;
	}
	if (!bytes) {
		snprintf(why, len,
			 "file_bytes is smaller than one 4096-byte block");
		return 0;
	}
	return make_file(f, io_work_dir(p), bytes, (uint64_t)p->seed, why, len);
}

void io_file_params(struct bench_result *res, const struct bench_params *p,
		    const struct io_file *f)
{
	bench_param_i64(res, "block_bytes", RANDREAD_BLOCK);
	bench_param_i64(res, "file_bytes",
			(int64_t)(f->span ? f->span :
					    p->file_bytes / RANDREAD_BLOCK *
						    RANDREAD_BLOCK));
	if (p->randread_file) {
		bench_param_str(res, "file", p->randread_file);
	} else {
		bench_param_str(res, "file",
				"unnamed, written in full by the agent first");
		bench_param_str(res, "dir", io_work_dir(p));
	}
	bench_param_str(res, "fs", f->fs);
}

static int randread_setup(struct bench_run *run, const struct bench_params *p,
			  void **state)
{
	struct io_state *s = NULL;
	char why[512];
	int r;

	r = state_new(run, p, "randread", randread_variants,
		      ARRAY_SIZE(randread_variants), &s);
	*state = s;
	if (r < 0)
		return r;
	s->block = RANDREAD_BLOCK;
	r = io_randread_file(p, &s->f, why, sizeof(why));
	if (r < 0)
		return r;
	if (s->f.fd < 0)
		skip_all(s, why);
	for (size_t i = 0; i < s->nv; i++) {
		struct bench_result *res = s->v[i].res;

		io_file_params(res, p, &s->f);
		bench_param_i64(res, "io_ms", p->io_ms);
		bench_param_str(res, "offsets",
				"uniform 4 KiB-aligned over the whole file");
		if (s->v[i].engine == IO_ENGINE_URING_SQPOLL)
			bench_param_i64(res, "sq_thread_idle_ms",
					IO_SQPOLL_IDLE_MS);
	}
	if (s->f.fd < 0)
		return 0;
	return check_engines(s);
}

static void randread_compare(struct bench_run *run, void *state)
{
	struct io_state *s = state;
	struct io_variant *pread = find_variant(s, "pread");
	struct io_variant *uring = find_variant(s, "io_uring");
	struct io_variant *sqpoll = find_variant(s, "io_uring_sqpoll");
	struct io_variant *fixed = find_variant(s, "io_uring_fixed");
	struct io_variant *aio = find_variant(s, "libaio");

	bench_compare(run, "iouring_vs_pread", uring->res, pread->res, "iops");
	bench_compare(run, "iouring_vs_libaio", uring->res, aio->res, "iops");
	bench_compare(run, "iouring_fixed_vs_iouring", fixed->res, uring->res,
		      "iops");
	bench_compare(run, "sqpoll_vs_iouring", sqpoll->res, uring->res,
		      "iops");
}

void io_randread_needs(const struct bench_params *p, uint64_t *memory,
		       uint64_t *disk)
{
	*memory = 0;
	*disk = p->randread_file ? 0 : p->file_bytes;
}

const struct bench_ops bench_randread_ops = {
	.name = "randread",
	.io = true,
	.summary = "random 4 KiB O_DIRECT reads: pread, io_uring (plain, SQPOLL, fixed), libaio",
	.weight = { 34, 34, 90 },
	.needs = io_randread_needs,
	.setup = randread_setup,
	.run = io_run,
	.teardown = io_teardown,
	.compare = randread_compare,
};

/* ---- seqwrite ---- */

static int seqwrite_setup(struct bench_run *run, const struct bench_params *p,
			  void **state)
{
	struct io_state *s = NULL;
	char why[512];
	uint64_t bytes;
	int r;

	r = state_new(run, p, "seqwrite", seqwrite_variants,
		      ARRAY_SIZE(seqwrite_variants), &s);
	*state = s;
	if (r < 0)
		return r;
	s->write = true;
	s->block = (uint32_t)p->seq_block;
	bytes = p->seq_block ? p->seq_bytes / p->seq_block * p->seq_block : 0;
	for (size_t i = 0; i < s->nv; i++) {
		struct bench_result *res = s->v[i].res;

		bench_param_i64(res, "block_bytes", (int64_t)p->seq_block);
		bench_param_i64(res, "bytes", (int64_t)bytes);
		bench_param_str(res, "dir", io_work_dir(p));
		bench_param_str(res, "datasync",
				"one fdatasync after the last write, timed");
		bench_param_str(res, "file",
				"unnamed, written in full once before the repeats, overwritten in place");
	}
	if (!p->seq_block || p->seq_block % IO_PATTERN_BLOCK ||
	    p->seq_block > (1u << 30)) {
		skip_all(s, "seq_block must be a multiple of 4096 (O_DIRECT), at most 1 GiB");
		return 0;
	}
	if (!bytes) {
		skip_all(s, "seq_bytes is smaller than seq_block");
		return 0;
	}
	r = bench_check_memory(run, (uint64_t)p->iodepth * p->seq_block, why,
			       sizeof(why));
	if (r < 0) {
		skip_all(s, why);
		return 0;
	}
	r = make_state_file(s, bytes, (uint64_t)p->seed);
	if (r < 0)
		return r;
	for (size_t i = 0; i < s->nv; i++)
		bench_param_str(s->v[i].res, "fs", s->f.fs);
	if (s->f.fd < 0)
		return 0;
	return check_engines(s);
}

static void seqwrite_compare(struct bench_run *run, void *state)
{
	struct io_state *s = state;

	bench_compare(run, "seqwrite_iouring_vs_pwrite",
		      find_variant(s, "io_uring")->res,
		      find_variant(s, "pwrite")->res, "mb_per_s");
}

static void seqwrite_needs(const struct bench_params *p, uint64_t *memory,
			   uint64_t *disk)
{
	*memory = (uint64_t)p->iodepth * p->seq_block;
	*disk = p->seq_bytes;
}

const struct bench_ops bench_seqwrite_ops = {
	.name = "seqwrite",
	.io = true,
	/* quiet on an Intel Xeon guest: 17-39% beyond its own waits in 10
	 * windows of 4 runs; with a competing O_DIRECT writer 75-105% */
	.io_threshold_min_pct = 50,
	.summary = "sequential O_DIRECT writes: pwrite vs io_uring, MB/s",
	.weight = { 4, 4, 10 },
	.needs = seqwrite_needs,
	.setup = seqwrite_setup,
	.run = io_run,
	.teardown = io_teardown,
	.compare = seqwrite_compare,
};
