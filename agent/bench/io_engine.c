/* SPDX-License-Identifier: MIT */
/*
 * What the I/O engines of randread/seqwrite share: the latency histogram,
 * the data pattern, the job's slots and offsets, the run's counting; and
 * the table of engines (engines/, one file each behind struct
 * io_engine_ops).
 */
#include "io_engine.h"

#include <errno.h>
#include <linux/magic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "bench.h"
#include "cleanup.h"
#include "clock.h"
#include "engines/engine.h"
#include "rand.h"

#define IO_PATTERN_MAGIC 0x316b6c626f696266ULL /* "fbioblk1" */
#define FILL_CHUNK (1u << 20)

/* ---- latency histogram ---- */

void lat_hist_reset(struct lat_hist *h)
{
	memset(h, 0, sizeof(*h));
}

static unsigned int lat_index(uint64_t v)
{
	unsigned int e, shift;

	if (v < LAT_EXACT)
		return (unsigned int)v;
	e = 63u - (unsigned int)__builtin_clzll(v); /* >= LAT_SUB_BITS + 1 */
	shift = e - LAT_SUB_BITS;
	return LAT_EXACT + (e - LAT_SUB_BITS - 1) * (1u << LAT_SUB_BITS) +
	       (unsigned int)((v >> shift) & ((1u << LAT_SUB_BITS) - 1));
}

/* The middle of bucket i. */
static double lat_value(unsigned int i)
{
	unsigned int g, sub, shift;
	double lo, width;

	if (i < LAT_EXACT)
		return (double)i;
	g = (i - LAT_EXACT) >> LAT_SUB_BITS;
	sub = (i - LAT_EXACT) & ((1u << LAT_SUB_BITS) - 1);
	shift = g + 1;
	lo = ldexp((double)((1u << LAT_SUB_BITS) + sub), (int)shift);
	width = ldexp(1.0, (int)shift);
	return lo + (width - 1) / 2;
}

void lat_hist_add(struct lat_hist *h, uint64_t ns)
{
	if (!h->count || ns < h->min)
		h->min = ns;
	if (ns > h->max)
		h->max = ns;
	h->count++;
	h->sum += (double)ns;
	h->buckets[lat_index(ns)]++;
}

void lat_hist_merge(struct lat_hist *dst, const struct lat_hist *src)
{
	if (!src->count)
		return;
	if (!dst->count || src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	dst->count += src->count;
	dst->sum += src->sum;
	for (unsigned int i = 0; i < LAT_BUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
}

double lat_hist_quantile(const struct lat_hist *h, double q)
{
	uint64_t rank, seen = 0;
	double v;

	if (!h->count || !(q >= 0 && q <= 1))
		return NAN;
	rank = (uint64_t)ceil(q * (double)h->count);
	/* The extremes are known exactly. */
	if (rank <= 1)
		return (double)h->min;
	if (rank >= h->count)
		return (double)h->max;
	for (unsigned int i = 0; i < LAT_BUCKETS; i++) {
		seen += h->buckets[i];
		if (seen < rank)
			continue;
		v = lat_value(i);
		if (v < (double)h->min)
			v = (double)h->min;
		if (v > (double)h->max)
			v = (double)h->max;
		return v;
	}
	return (double)h->max;
}

/* ---- the data pattern ---- */

void io_pattern_fill(void *buf, size_t len, uint64_t off, const void *noise)
{
	for (size_t k = 0; k + IO_PATTERN_BLOCK <= len; k += IO_PATTERN_BLOCK) {
		uint64_t hdr[2] = { IO_PATTERN_MAGIC, off + k };
		char *b = (char *)buf + k;

		memcpy(b, noise, IO_PATTERN_BLOCK);
		memcpy(b, hdr, sizeof(hdr));
	}
}

bool io_pattern_check(const void *buf, uint64_t off)
{
	uint64_t hdr[2];

	memcpy(hdr, buf, sizeof(hdr));
	return hdr[0] == IO_PATTERN_MAGIC && hdr[1] == off;
}

static void noise_fill(uint64_t *w, uint64_t seed)
{
	struct rng rng;

	rng_seed(&rng, seed);
	for (size_t i = 0; i < IO_PATTERN_BLOCK / sizeof(*w); i++)
		w[i] = rng_next(&rng) | 0x0101010101010101ULL; /* no zero byte */
}

/* Full pwrite() of len bytes, retried on EINTR unless interrupted. */
static int write_full(int fd, const void *buf, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, buf, len, (off_t)off);

		if (n < 0 && errno == EINTR && !bench_interrupted())
			continue;
		if (n < 0)
			return -errno;
		if (n == 0 || (size_t)n % IO_PATTERN_BLOCK)
			return -EIO; /* O_DIRECT cannot resume mid-block */
		buf = (const char *)buf + n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* fdatasync(), retried on EINTR unless interrupted. */
static int datasync(int fd)
{
	while (fdatasync(fd) < 0) {
		if (errno != EINTR || bench_interrupted())
			return -errno;
	}
	return 0;
}

int io_pattern_write_file(int fd, uint64_t bytes, uint64_t seed)
{
	_cleanup_free_ void *buf = NULL;
	uint64_t noise[IO_PATTERN_BLOCK / sizeof(uint64_t)];
	int r;

	if (bytes % IO_PATTERN_BLOCK)
		return -EINVAL;
	r = posix_memalign(&buf, IO_PATTERN_BLOCK, FILL_CHUNK);
	if (r)
		return -r;
	noise_fill(noise, seed);
	for (uint64_t off = 0; off < bytes; off += FILL_CHUNK) {
		size_t len = bytes - off < FILL_CHUNK ? (size_t)(bytes - off) :
							FILL_CHUNK;

		if (bench_interrupted())
			return -EINTR;
		if (bench_overdue())
			return -ETIME;
		io_pattern_fill(buf, len, off, noise);
		r = write_full(fd, buf, len, off);
		if (r < 0)
			return r;
	}
	return datasync(fd);
}

/* ---- filesystems ---- */

#ifndef XFS_SUPER_MAGIC
#define XFS_SUPER_MAGIC 0x58465342
#endif
#ifndef ZFS_SUPER_MAGIC
#define ZFS_SUPER_MAGIC 0x2fc12fc1
#endif
#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546
#endif
#ifndef F2FS_SUPER_MAGIC
#define F2FS_SUPER_MAGIC 0xf2f52010
#endif
#ifndef BCACHEFS_SUPER_MAGIC
#define BCACHEFS_SUPER_MAGIC 0xca451a4e
#endif
#ifndef CIFS_SUPER_MAGIC
#define CIFS_SUPER_MAGIC 0xff534d42
#endif
#ifndef SMB2_SUPER_MAGIC
#define SMB2_SUPER_MAGIC 0xfe534d42
#endif
#ifndef V9FS_MAGIC
#define V9FS_MAGIC 0x01021997
#endif

static const struct {
	unsigned long magic;
	const char *name;
} fs_names[] = {
	{ EXT4_SUPER_MAGIC, "ext4" },	  { XFS_SUPER_MAGIC, "xfs" },
	{ BTRFS_SUPER_MAGIC, "btrfs" },	  { TMPFS_MAGIC, "tmpfs" },
	{ RAMFS_MAGIC, "ramfs" },	  { OVERLAYFS_SUPER_MAGIC, "overlay" },
	{ NFS_SUPER_MAGIC, "nfs" },	  { ZFS_SUPER_MAGIC, "zfs" },
	{ FUSE_SUPER_MAGIC, "fuse" },	  { F2FS_SUPER_MAGIC, "f2fs" },
	{ BCACHEFS_SUPER_MAGIC, "bcachefs" }, { CIFS_SUPER_MAGIC, "cifs" },
	{ SMB2_SUPER_MAGIC, "smb2" },	  { V9FS_MAGIC, "9p" },
	{ SQUASHFS_MAGIC, "squashfs" },	  { MSDOS_SUPER_MAGIC, "vfat" },
};

const char *io_fs_name(long f_type, char *buf, size_t size)
{
	unsigned long m = (unsigned long)f_type & 0xffffffffUL;

	for (size_t i = 0; i < ARRAY_SIZE(fs_names); i++)
		if (fs_names[i].magic == m)
			return fs_names[i].name;
	snprintf(buf, size, "fs 0x%lx", m);
	return buf;
}

bool io_fs_is_memory(long f_type)
{
	unsigned long m = (unsigned long)f_type & 0xffffffffUL;

	return m == TMPFS_MAGIC || m == RAMFS_MAGIC;
}

int io_dir_fs(const char *dir, char *fs, size_t fslen, bool *memory,
	      char *why, size_t len)
{
	struct statfs sf;
	char buf[32];
	int r;

	if (statfs(dir, &sf) < 0) {
		r = -errno;
		snprintf(why, len, "cannot use directory '%s': %s", dir,
			 strerror(-r));
		return r;
	}
	snprintf(fs, fslen, "%s",
		 io_fs_name((long)sf.f_type, buf, sizeof(buf)));
	*memory = io_fs_is_memory((long)sf.f_type);
	return 0;
}

/* ---- engines ---- */

/* The engines, by enum io_engine. */
static const struct io_engine_ops *const io_engines[] = {
	[IO_ENGINE_SYNC] = &io_engine_psync,
	[IO_ENGINE_URING] = &io_engine_uring,
	[IO_ENGINE_URING_SQPOLL] = &io_engine_uring_sqpoll,
	[IO_ENGINE_URING_FIXED] = &io_engine_uring_fixed,
	[IO_ENGINE_LIBAIO] = &io_engine_libaio,
};

static double cpu_now(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return NAN;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

const char *io_errname(int err)
{
	const char *n = strerrorname_np(err);

	return n ? n : "unknown error";
}

const char *io_ctx_ring_flags(const struct io_ctx *c)
{
	return c->ring_flags;
}

void io_ctx_free(struct io_ctx *c)
{
	if (!c)
		return;
	if (c->ops && c->ops->teardown)
		c->ops->teardown(c);
	free(c->slots);
	free(c->bufs);
	free(c);
}

int io_ctx_new(const struct io_job *job, struct io_ctx **ret, char *why,
	       size_t whylen)
{
	struct io_ctx *c;
	size_t bytes;
	uint64_t noise[IO_PATTERN_BLOCK / sizeof(uint64_t)];
	int r;

	snprintf(why, whylen, "out of memory");
	if (!job->block || job->block % IO_PATTERN_BLOCK || !job->span ||
	    job->span % job->block || !job->depth ||
	    (!job->duration_ns && !job->total_bytes)) {
		snprintf(why, whylen, "invalid job");
		return -EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->job = *job;
	if ((unsigned int)c->job.engine < ARRAY_SIZE(io_engines))
		c->ops = io_engines[c->job.engine];
	if (c->ops && c->ops->depth_one)
		c->job.depth = 1;
	bytes = (size_t)c->job.depth * c->job.block;
	c->slots = calloc(c->job.depth, sizeof(*c->slots));
	r = posix_memalign(&c->bufs, IO_PATTERN_BLOCK, bytes);
	if (r || !c->slots) {
		r = r ? -r : -ENOMEM;
		goto err;
	}
	noise_fill(noise, 0x5eed);
	for (unsigned int i = 0; i < c->job.depth; i++) {
		c->slots[i].buf = (char *)c->bufs + (size_t)i * c->job.block;
		/* Writes carry the pattern; reads start zeroed, so a buffer a
		 * read did not fill fails the check. */
		if (c->job.write)
			io_pattern_fill(c->slots[i].buf, c->job.block, 0, noise);
		else
			memset(c->slots[i].buf, 0, c->job.block);
	}

	if (!c->ops) {
		snprintf(why, whylen, "unknown engine");
		r = -EINVAL;
		goto err;
	}
	if (c->ops->setup) {
		r = c->ops->setup(c, why, whylen);
		if (r < 0)
			goto err;
	}
	*ret = c;
	return 0;
err:
	io_ctx_free(c);
	return r;
}

bool io_next_offset(struct io_ctx *c, uint64_t *ret)
{
	if (c->to_issue && c->issued >= c->to_issue)
		return false;
	c->issued++;
	if (c->job.random)
		*ret = rng_below(&c->rng, c->nblocks) * c->job.block;
	else
		*ret = (c->next++ % c->nblocks) * c->job.block;
	return true;
}

/* Checks the transfer of one I/O: its result res (bytes or -errno). */
static int io_result_check(const struct io_ctx *c, long long res)
{
	if (res < 0)
		return (int)res;
	return res == c->job.block ? 0 : -EIO;
}

void io_run_reaped(struct io_ctx *c, struct io_run *run, uint64_t now)
{
	run->counting = !run->stop || !c->job.duration_ns;
	if (!run->stop && c->job.duration_ns && now >= run->deadline) {
		run->stop = true;
		run->end = now;
		run->cpu1 = cpu_now();
	}
	if (!run->stop && bench_interrupted()) {
		run->stop = true;
		run->err = -EINTR;
	}
}

/* Times one I/O may come back EAGAIN or EINTR before the run fails. */
#define IO_MAX_RETRIES 16

bool io_run_complete(struct io_ctx *c, struct io_run *run, struct io_slot *s,
		     long long res, uint64_t now, struct io_stats *st)
{
	int r = io_result_check(c, res);

	if ((r == -EAGAIN || r == -EINTR) && !run->stop &&
	    s->retries < IO_MAX_RETRIES) {
		s->retries++;
		st->retries++;
		return true;
	}
	if (r == 0 && now < s->t_submit)
		r = -ERANGE; /* a clock read the wrong way round */
	if (r < 0 && !run->err) {
		run->err = r;
		run->stop = true;
	}
	if (r == 0) {
		s->used = true;
		if (run->counting) {
			st->ios++;
			st->bytes += c->job.block;
			lat_hist_add(&st->lat, now - s->t_submit);
			if (!c->job.duration_ns)
				run->end = now;
		}
	}
	s->retries = 0;
	return !run->stop && io_next_offset(c, &s->off);
}

int io_ctx_run(struct io_ctx *c, uint64_t seed, struct io_stats *ret)
{
	struct io_run run = { 0 };
	int r;

	lat_hist_reset(&ret->lat);
	ret->ios = ret->bytes = ret->checked = 0;
	ret->elapsed_s = ret->datasync_s = ret->cpu_s = 0;
	rng_seed(&c->rng, seed);
	c->nblocks = c->job.span / c->job.block;
	c->next = c->issued = 0;
	c->to_issue = c->job.duration_ns ?
			      0 :
			      (c->job.total_bytes + c->job.block - 1) /
				      c->job.block;
	ret->retries = ret->sq_full_waits = 0;
	c->st = ret;
	for (unsigned int i = 0; i < c->job.depth; i++) {
		c->slots[i].used = false;
		c->slots[i].retries = 0;
	}

	run.cpu0 = cpu_now();
	run.t0 = mono_ns();
	run.deadline = run.t0 + c->job.duration_ns;
	run.end = run.t0;
	r = c->ops->run(c, &run, ret);
	if (r == 0)
		r = run.err;
	if (r < 0)
		return r;
	if (!c->job.duration_ns) {
		if (c->job.write && c->job.datasync) {
			uint64_t t = mono_ns();

			r = datasync(c->job.fd);
			if (r < 0)
				return r;
			run.end = mono_ns();
			ret->datasync_s = (double)(run.end - t) * 1e-9;
		}
		run.cpu1 = cpu_now();
	}
	ret->elapsed_s = (double)(run.end - run.t0) * 1e-9;
	ret->cpu_s = run.cpu1 - run.cpu0;
	if (c->job.check_pattern && !c->job.write) {
		for (unsigned int i = 0; i < c->job.depth; i++) {
			const struct io_slot *s = &c->slots[i];

			if (!s->used)
				continue;
			for (uint32_t k = 0; k < c->job.block;
			     k += IO_PATTERN_BLOCK)
				if (!io_pattern_check((char *)s->buf + k,
						      s->off + k))
					return -EILSEQ;
			ret->checked++;
		}
	}
	return 0;
}
