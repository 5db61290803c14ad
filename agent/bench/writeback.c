/* SPDX-License-Identifier: MIT */
/* writeback: buffered write() latency and stalls under the vm.dirty_* limits */
#include "bench_modules.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "io_engine.h"
#include "kfiles.h"
#include "probe.h"
#include "rand.h"
#include "stats.h"

#define WB_BLOCK (128u << 10) /* one write(), as cp and rsync issue */
#define WB_STALL_NS 100000000LL /* a write() over 100 ms is a stall */
/* writes between bench_interrupted() and samples of the dirty pages */
#define WB_CHECK_EVERY 64
#define VM_DIR "/proc/sys/vm/"

/* ---- the host's vm.dirty_* settings ---- */

enum {
	D_RATIO,
	D_BG_RATIO,
	D_BYTES,
	D_BG_BYTES,
	D_EXPIRE,
	D_WRITEBACK,
	D_N,
};

static const char *const dirty_names[D_N] = {
	[D_RATIO] = "dirty_ratio",
	[D_BG_RATIO] = "dirty_background_ratio",
	[D_BYTES] = "dirty_bytes",
	[D_BG_BYTES] = "dirty_background_bytes",
	[D_EXPIRE] = "dirty_expire_centisecs",
	[D_WRITEBACK] = "dirty_writeback_centisecs",
};

/* The settings as read, with the -errno of those that could not be. */
struct dirty {
	int64_t v[D_N];
	int err[D_N];
	/* /proc/vmstat nr_dirty_threshold and nr_dirty_background_threshold,
	 * the limits the kernel derives from them, in pages; -1: unknown */
	int64_t thresh, bg_thresh;
};

static void dirty_read(struct bench_run *run, struct dirty *d)
{
	_cleanup_free_ char *vmstat = NULL;
	char path[128], val[32];

	for (int i = 0; i < D_N; i++) {
		snprintf(path, sizeof(path), VM_DIR "%s", dirty_names[i]);
		d->err[i] = kfile_read_i64(run, path, &d->v[i]);
	}
	d->thresh = d->bg_thresh = -1;
	if (bench_read_file(run, "/proc/vmstat", &vmstat) < 0)
		return;
	if (probe_kv(vmstat, "nr_dirty_threshold", val, sizeof(val)) < 0 ||
	    probe_parse_i64(val, &d->thresh) < 0)
		d->thresh = -1;
	if (probe_kv(vmstat, "nr_dirty_background_threshold", val,
		     sizeof(val)) < 0 ||
	    probe_parse_i64(val, &d->bg_thresh) < 0)
		d->bg_thresh = -1;
}

/* The settings as parameters named as the probe reports them
 * ("vm.dirty_ratio"), and the kernel's thresholds in bytes. */
static void dirty_param(struct bench_result *res, const struct dirty *d)
{
	long page = sysconf(_SC_PAGESIZE);
	char key[64];

	for (int i = 0; i < D_N; i++) {
		snprintf(key, sizeof(key), "vm.%s", dirty_names[i]);
		if (d->err[i] < 0)
			bench_param_str(res, key, probe_reason(d->err[i]));
		else
			bench_param_i64(res, key, d->v[i]);
	}
	if (d->thresh >= 0)
		bench_param_i64(res, "dirty_threshold_bytes", d->thresh * page);
	if (d->bg_thresh >= 0)
		bench_param_i64(res, "dirty_background_threshold_bytes",
				d->bg_thresh * page);
}

/* ---- the tuned variant's change and its restore ---- */

/*
 * What puts a limit back as the host had it. The kernel keeps each limit
 * either as a ratio or as bytes (writing one zeroes the other) and refuses
 * 0 bytes, so a host on ratios is restored by writing its ratio, which
 * zeroes the bytes again; a host on bytes by writing its bytes.
 */
struct restore {
	char path[64];
	char value[32];
};

static void restore_of(const struct dirty *d, int bytes, int ratio,
		       struct restore *ret)
{
	int i = d->v[bytes] > 0 ? bytes : ratio;

	snprintf(ret->path, sizeof(ret->path), VM_DIR "%s", dirty_names[i]);
	snprintf(ret->value, sizeof(ret->value), "%lld", (long long)d->v[i]);
}

/* ---- the benchmark ---- */

struct wb_variant {
	const char *name;
	bool tuned;
	struct bench_result *res;
};

struct wb_state {
	struct wb_variant v[2];
	size_t nv; /* 1, or 2 with --writeback-dirty-bytes */
	int fd;
	char *buf; /* one block of PRNG bytes */
	uint64_t writes; /* per repeat, each WB_BLOCK bytes */
	uint64_t per_fsync; /* writes between fsyncs */
	double *lat; /* ns of each write() of one repeat */
	double *fsync_ns; /* of each fsync() of one repeat */
	size_t nfsync;
	struct dirty host;
	uint64_t tuned_bytes; /* vm.dirty_bytes of tuned; background: half */
	struct restore fg, bg;
	bool tuned_seen; /* its settings recorded */
	int restore_err; /* the first failed restore, or 0 */
	char restore_why[160];
};

/* Opens the work file, or says in why (the variants' skip reason) why
 * not: its directory unusable or memory-backed, or too small. */
static int wb_open(struct wb_state *st, const char *dir, uint64_t bytes,
		   struct bench_result *res, char *why, size_t len)
{
	bool memory;
	char fs[32];
	int fd, r;

	r = io_dir_fs(dir, fs, sizeof(fs), &memory, why, len);
	if (r < 0)
		return r;
	bench_param_str(res, "filesystem", fs);
	if (memory) {
		snprintf(why, len,
			 "%s on %s is memory-backed: nothing is written back",
			 fs, dir);
		return -EOPNOTSUPP;
	}
	r = bench_check_space(dir, bytes, why, len);
	if (r < 0)
		return r;
	fd = bench_tmpfile(dir, 0);
	if (fd < 0) {
		snprintf(why, len, "cannot create a file in '%s': %s", dir,
			 strerror(-fd));
		return fd;
	}
	st->fd = fd;
	return 0;
}

/* Whether this process may change the limits: each restore value written
 * back as it is, which changes nothing. 0, or why not in why. */
static int tuned_allowed(struct bench_run *run, struct wb_state *st,
			 char *why, size_t len)
{
	const struct restore *rs[2] = { &st->fg, &st->bg };

	for (int i = 0; i < 2; i++) {
		int r = bench_write_file(run, rs[i]->path, rs[i]->value);

		if (r < 0) {
			snprintf(why, len, "cannot write %s: %s", rs[i]->path,
				 kfile_errname(r));
			return r;
		}
	}
	return 0;
}

static int wb_setup(struct bench_run *run, const struct bench_params *p,
		    void **state)
{
	struct wb_state *st = calloc(1, sizeof(*st));
	char why[512] = "";
	struct rng rng;

	if (!st)
		return -ENOMEM;
	*state = st;
	st->fd = -1;
	st->nv = p->writeback_dirty_bytes ? 2 : 1;
	st->tuned_bytes = p->writeback_dirty_bytes;
	st->writes = (p->wb_bytes + WB_BLOCK - 1) / WB_BLOCK;
	st->per_fsync = (p->wb_fsync_bytes + WB_BLOCK - 1) / WB_BLOCK;
	if (!st->per_fsync || st->per_fsync > st->writes)
		st->per_fsync = st->writes;
	st->nfsync = st->writes ? (st->writes + st->per_fsync - 1) /
					  st->per_fsync :
				  0;
	dirty_read(run, &st->host);
	restore_of(&st->host, D_BYTES, D_RATIO, &st->fg);
	restore_of(&st->host, D_BG_BYTES, D_BG_RATIO, &st->bg);
	for (size_t i = 0; i < st->nv; i++) {
		struct wb_variant *v = &st->v[i];

		v->name = i ? "tuned" : "host";
		v->tuned = i == 1;
		v->res = bench_result_new(run, "writeback", v->name);
		if (!v->res)
			return -ENOMEM;
		bench_param_i64(v->res, "wb_bytes", (int64_t)p->wb_bytes);
		bench_param_i64(v->res, "wb_fsync_bytes",
				(int64_t)(st->per_fsync * WB_BLOCK));
		bench_param_i64(v->res, "block_bytes", WB_BLOCK);
		bench_param_i64(v->res, "writes", (int64_t)st->writes);
		bench_param_i64(v->res, "fsyncs", (int64_t)st->nfsync);
		bench_param_str(v->res, "clock",
				"CLOCK_MONOTONIC read before and after each write()");
		if (v->tuned) {
			bench_param_i64(v->res, "writeback_dirty_bytes",
					(int64_t)st->tuned_bytes);
			bench_param_i64(v->res, "writeback_dirty_background_bytes",
					(int64_t)(st->tuned_bytes / 2));
		} else {
			dirty_param(v->res, &st->host);
		}
	}
	if (!st->writes)
		snprintf(why, sizeof(why), "wb_bytes is 0");
	else
		wb_open(st, p->dir, st->writes * WB_BLOCK, st->v[0].res, why,
			sizeof(why));
	if (why[0]) {
		for (size_t i = 0; i < st->nv; i++)
			bench_result_skip(st->v[i].res, "%s", why);
		return 0;
	}
	if (st->nv == 2 && tuned_allowed(run, st, why, sizeof(why)) < 0)
		bench_result_skip(st->v[1].res, "%s", why);

	st->lat = malloc(st->writes * sizeof(*st->lat));
	st->fsync_ns = malloc(st->nfsync * sizeof(*st->fsync_ns));
	st->buf = malloc(WB_BLOCK);
	if (!st->lat || !st->fsync_ns || !st->buf)
		return -ENOMEM;
	/* touched now, so recording a latency never faults */
	memset(st->lat, 0, st->writes * sizeof(*st->lat));
	memset(st->fsync_ns, 0, st->nfsync * sizeof(*st->fsync_ns));
	rng_seed(&rng, (uint64_t)p->seed);
	for (size_t i = 0; i < WB_BLOCK / sizeof(uint64_t); i++)
		((uint64_t *)st->buf)[i] = rng_next(&rng);
	return 0;
}

/* Sets the tuned limits, armed to be restored should this process die. */
static int tuned_apply(struct bench_run *run, struct wb_state *st)
{
	char val[32];
	int r;

	r = bench_restore_arm(run, st->fg.path, st->fg.value);
	if (r == 0)
		r = bench_restore_arm(run, st->bg.path, st->bg.value);
	if (r < 0)
		return r;
	snprintf(val, sizeof(val), "%llu", (unsigned long long)st->tuned_bytes);
	r = bench_write_file(run, VM_DIR "dirty_bytes", val);
	if (r < 0)
		return r;
	snprintf(val, sizeof(val), "%llu",
		 (unsigned long long)st->tuned_bytes / 2);
	return bench_write_file(run, VM_DIR "dirty_background_bytes", val);
}

/* Puts the host's limits back and checks that they are; the first
 * failure is kept for the parameter tuned_restored. */
static void tuned_restore(struct bench_run *run, struct wb_state *st)
{
	const struct restore *rs[2] = { &st->fg, &st->bg };
	struct dirty now;

	for (int i = 0; i < 2; i++) {
		int r = bench_write_file(run, rs[i]->path, rs[i]->value);

		if (r == 0) {
			bench_restore_done(run, rs[i]->path);
		} else if (!st->restore_err) {
			st->restore_err = r;
			snprintf(st->restore_why, sizeof(st->restore_why),
				 "writing %s to %s: %s", rs[i]->value,
				 rs[i]->path, kfile_errname(r));
		}
	}
	dirty_read(run, &now);
	for (int i = 0; i < D_N && !st->restore_err; i++)
		if (now.err[i] != st->host.err[i] ||
		    now.v[i] != st->host.v[i]) {
			st->restore_err = -EIO;
			snprintf(st->restore_why, sizeof(st->restore_why),
				 "vm.%s is %lld, was %lld", dirty_names[i],
				 (long long)now.v[i], (long long)st->host.v[i]);
		}
}

/* The pages the kernel counts against the dirty limits now (nr_dirty +
 * nr_writeback, as balance_dirty_pages() does); -1 when unknown. */
static int64_t dirty_pages_now(struct bench_run *run)
{
	_cleanup_free_ char *text = NULL;
	int64_t dirty, wb;
	char val[32];

	if (bench_read_file(run, "/proc/vmstat", &text) < 0 ||
	    probe_kv(text, "nr_dirty", val, sizeof(val)) < 0 ||
	    probe_parse_i64(val, &dirty) < 0 ||
	    probe_kv(text, "nr_writeback", val, sizeof(val)) < 0 ||
	    probe_parse_i64(val, &wb) < 0)
		return -1;
	return dirty + wb;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The timed writes and fsyncs of one repeat, and the most pages dirty or
 * under writeback seen between them (-1: unknown); 0 or -errno. */
static int wb_write(struct bench_run *run, struct wb_state *st,
		    int64_t *ret_ns, int64_t *ret_peak)
{
	size_t nf = 0;
	int64_t t_start = mono_ns(), peak = -1;

	for (uint64_t i = 0; i < st->writes; i++) {
		int64_t t0 = mono_ns();
		ssize_t n = write(st->fd, st->buf, WB_BLOCK);

		st->lat[i] = (double)(mono_ns() - t0);
		if (n < 0)
			return -errno;
		if (n != WB_BLOCK)
			return -EIO;
		if ((i + 1) % st->per_fsync == 0 || i + 1 == st->writes) {
			t0 = mono_ns();
			if (fsync(st->fd) < 0)
				return -errno;
			st->fsync_ns[nf++] = (double)(mono_ns() - t0);
		}
		if (i % WB_CHECK_EVERY != WB_CHECK_EVERY - 1)
			continue;
		if (bench_interrupted())
			return -EINTR;
		/* outside the timed calls; about 1 read per 8 MiB */
		int64_t now = dirty_pages_now(run);

		if (now > peak)
			peak = now;
	}
	*ret_ns = mono_ns() - t_start;
	*ret_peak = peak;
	return 0;
}

static void wb_samples(struct wb_state *st, struct wb_variant *v,
		       int64_t total_ns, int64_t peak)
{
	double *lat = st->lat, fmax = 0;
	size_t n = st->writes, stalls = 0;

	for (size_t i = 0; i < n; i++)
		stalls += lat[i] > (double)WB_STALL_NS;
	for (size_t i = 0; i < st->nfsync; i++)
		if (st->fsync_ns[i] > fmax)
			fmax = st->fsync_ns[i];
	qsort(lat, n, sizeof(lat[0]), cmp_double);
	bench_sample(v->res, "write_p50_us", "us",
		     stats_quantile_sorted(lat, n, 0.50) / 1e3);
	bench_sample(v->res, "write_p99_us", "us",
		     stats_quantile_sorted(lat, n, 0.99) / 1e3);
	bench_sample(v->res, "write_max_us", "us", lat[n - 1] / 1e3);
	bench_sample(v->res, "stalls_100ms", "count", (double)stalls);
	bench_sample(v->res, "fsync_max_ms", "ms", fmax / 1e6);
	bench_sample(v->res, "mb_per_s", "MB/s",
		     (double)(n * WB_BLOCK) / ((double)total_ns / 1e9) / 1e6);
	/* against the parameter dirty_threshold_bytes: was it reached? */
	if (peak >= 0)
		bench_sample(v->res, "dirty_peak_mb", "MB",
			     (double)peak * (double)sysconf(_SC_PAGESIZE) / 1e6);
}

static int wb_measure(struct bench_run *run, struct wb_state *st,
		      struct wb_variant *v)
{
	int64_t total_ns = 0, peak = -1;
	int r = 0;

	/* an empty file at offset 0: each repeat writes the same blocks */
	if (ftruncate(st->fd, 0) < 0 || lseek(st->fd, 0, SEEK_SET) < 0)
		return -errno;
	if (v->tuned) {
		r = tuned_apply(run, st);
		if (r == 0 && !st->tuned_seen) {
			struct dirty now;

			dirty_read(run, &now);
			dirty_param(v->res, &now);
			st->tuned_seen = true;
		}
	}
	if (r == 0) {
		bench_window_begin(v->res);
		r = wb_write(run, st, &total_ns, &peak);
		bench_window_end(v->res);
	}
	if (v->tuned)
		tuned_restore(run, st);
	/* the disk use stays one repeat's file */
	if (ftruncate(st->fd, 0) < 0 && r == 0)
		r = -errno;
	if (r < 0)
		return r;
	if (bench_interrupted())
		return -EINTR;
	wb_samples(st, v, total_ns, peak);
	return 0;
}

static int wb_run(struct bench_run *run, void *state, unsigned int repeat)
{
	struct wb_state *st = state;

	for (size_t k = 0; k < st->nv; k++) {
		size_t i = repeat & 1 ? st->nv - 1 - k : k;
		struct wb_variant *v = &st->v[i];
		int r;

		if (bench_result_skipped(v->res))
			continue;
		r = wb_measure(run, st, v);
		if (r < 0)
			return r;
	}
	return 0;
}

static void wb_compare(struct bench_run *run, void *state)
{
	struct wb_state *st = state;

	/* below 1: the tuned limits shorten the slow writes */
	if (st->nv == 2)
		bench_compare(run, "writeback_tuned_vs_host", st->v[1].res,
			      st->v[0].res, "write_p99_us");
}

static void wb_teardown(struct bench_run *run, void *state)
{
	struct wb_state *st = state;

	(void)run;
	if (!st)
		return;
	if (st->nv == 2 && st->v[1].res && st->tuned_seen)
		bench_param_str(st->v[1].res, "tuned_restored",
				st->restore_err ? st->restore_why : "ok");
	if (st->fd >= 0)
		close(st->fd);
	free(st->lat);
	free(st->fsync_ns);
	free(st->buf);
	free(st);
}

static void writeback_needs(const struct bench_params *p, uint64_t *memory,
			    uint64_t *disk)
{
	*memory = 0;
	*disk = p->wb_bytes;
}

const struct bench_ops bench_writeback_ops = {
	.name = "writeback",
	.io = true,
	.summary = "buffered write() latency and stalls under vm.dirty_*",
	.weight = { 4, 4, 55 },
	.needs = writeback_needs,
	.setup = wb_setup,
	.run = wb_run,
	.teardown = wb_teardown,
	.compare = wb_compare,
};
