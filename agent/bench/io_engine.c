/* SPDX-License-Identifier: MIT */
/* I/O engines, latency histogram and data pattern for randread/seqwrite. */
#include "io_engine.h"

#include <errno.h>
#include <libaio.h>
#include <liburing.h>
#include <linux/magic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cleanup.h"
#include "clock.h"
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
		io_pattern_fill(buf, len, off, noise);
		r = write_full(fd, buf, len, off);
		if (r < 0)
			return r;
	}
	while (fdatasync(fd) < 0) {
		if (errno != EINTR || bench_interrupted())
			return -errno;
	}
	return 0;
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

/* ---- engines ---- */

struct io_slot {
	void *buf;
	uint64_t off;
	uint64_t t_submit; /* ns, of the first issue of the I/O in it */
	bool used; /* has held a completed I/O (pattern check) */
	unsigned int retries; /* of the I/O in it: see run_complete() */
	struct iocb iocb; /* libaio */
};

struct io_ctx {
	struct io_job job;
	struct io_slot *slots;
	void *bufs;
	bool ring_ok;
	struct io_uring ring;
	io_context_t aio;
	struct io_event *aio_events;
	const char *ring_flags; /* the io_uring setup flags in use */
	/* the offset generator */
	struct rng rng;
	uint64_t nblocks, next, issued, to_issue;
	struct io_stats *st; /* of the run in progress: its counters */
};

static double cpu_now(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return NAN;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static const char *errname(int err)
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
	if (c->ring_ok)
		io_uring_queue_exit(&c->ring);
	if (c->aio)
		io_destroy(c->aio);
	free(c->aio_events);
	free(c->slots);
	free(c->bufs);
	free(c);
}

/*
 * fio's ring: completions run when the task enters the kernel anyway (no
 * IPI to interrupt it in user space) and, with DEFER_TASKRUN, only when it
 * asks for them. Each set is tried in turn; a kernel that refuses a flag
 * (EINVAL: older than 6.1 or 5.19) gets the next, as fio falls back.
 */
static const struct {
	unsigned int flags;
	const char *name;
} ring_flag_sets[] = {
	{ IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER |
		  IORING_SETUP_DEFER_TASKRUN,
	  "COOP_TASKRUN|SINGLE_ISSUER|DEFER_TASKRUN" },
	{ IORING_SETUP_COOP_TASKRUN, "COOP_TASKRUN" },
	{ 0, "none" },
};

static int uring_new(struct io_ctx *c, char *why, size_t whylen)
{
	struct io_uring_params params;
	struct io_uring_probe *probe;
	unsigned int op = c->job.write ? IORING_OP_WRITE : IORING_OP_READ;
	int r = -EINVAL;

	if (c->job.engine == IO_ENGINE_URING_SQPOLL) {
		/* The IPI-saving flags are meaningless (EINVAL) with SQPOLL,
		 * whose thread completes the requests itself. */
		params = (struct io_uring_params){
			.flags = IORING_SETUP_SQPOLL |
				 (c->job.sq_aff ? IORING_SETUP_SQ_AFF : 0),
			.sq_thread_idle = IO_SQPOLL_IDLE_MS,
			.sq_thread_cpu = c->job.sq_cpu,
		};
		c->ring_flags = "SQPOLL";
		r = io_uring_queue_init_params(c->job.depth, &c->ring, &params);
	} else {
		for (size_t i = 0; i < ARRAY_SIZE(ring_flag_sets) && r == -EINVAL;
		     i++) {
			params = (struct io_uring_params){
				.flags = ring_flag_sets[i].flags,
			};
			c->ring_flags = ring_flag_sets[i].name;
			r = io_uring_queue_init_params(c->job.depth, &c->ring,
						       &params);
		}
	}
	if (r < 0) {
		snprintf(why, whylen, "%s: %s",
			 c->job.engine == IO_ENGINE_URING_SQPOLL ?
				 "sqpoll" :
				 "io_uring_setup",
			 errname(-r));
		return r;
	}
	c->ring_ok = true;
	/* IORING_OP_READ/WRITE arrived in 5.6: check, as fio does. */
	if (c->job.engine != IO_ENGINE_URING_FIXED) {
		probe = io_uring_get_probe_ring(&c->ring);
		r = probe && io_uring_opcode_supported(probe, (int)op) ? 0 :
									 -EOPNOTSUPP;
		if (probe)
			io_uring_free_probe(probe);
		if (r < 0) {
			snprintf(why, whylen, "io_uring: IORING_OP_%s: %s",
				 c->job.write ? "WRITE" : "READ",
				 errname(-r));
			return r;
		}
	}
	if (c->job.engine == IO_ENGINE_URING_FIXED) {
		_cleanup_free_ struct iovec *iov =
			calloc(c->job.depth, sizeof(*iov));

		if (!iov)
			return -ENOMEM;
		for (unsigned int i = 0; i < c->job.depth; i++) {
			iov[i].iov_base = c->slots[i].buf;
			iov[i].iov_len = c->job.block;
		}
		r = io_uring_register_files(&c->ring, &c->job.fd, 1);
		if (r < 0) {
			snprintf(why, whylen, "register files: %s",
				 errname(-r));
			return r;
		}
		r = io_uring_register_buffers(&c->ring, iov, c->job.depth);
		if (r < 0) {
			snprintf(why, whylen, "register buffers: %s",
				 errname(-r));
			return r;
		}
	}
	return 0;
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
	if (c->job.engine == IO_ENGINE_SYNC)
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

	switch (c->job.engine) {
	case IO_ENGINE_SYNC:
		break;
	case IO_ENGINE_URING:
	case IO_ENGINE_URING_SQPOLL:
	case IO_ENGINE_URING_FIXED:
		r = uring_new(c, why, whylen);
		if (r < 0)
			goto err;
		break;
	case IO_ENGINE_LIBAIO:
		c->aio_events = calloc(c->job.depth, sizeof(*c->aio_events));
		if (!c->aio_events) {
			r = -ENOMEM;
			goto err;
		}
		r = io_setup((int)c->job.depth, &c->aio);
		if (r < 0) {
			c->aio = NULL;
			snprintf(why, whylen, "io_setup: %s", errname(-r));
			goto err;
		}
		break;
	default:
		snprintf(why, whylen, "unknown engine");
		r = -EINVAL;
		goto err;
	}
	*ret = c;
	return 0;
err:
	io_ctx_free(c);
	return r;
}

/* The next offset to issue; false when a size-based job has issued all. */
static bool next_offset(struct io_ctx *c, uint64_t *ret)
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

static int datasync(int fd)
{
	while (fdatasync(fd) < 0) {
		if (errno != EINTR || bench_interrupted())
			return -errno;
	}
	return 0;
}

/*
 * The run's state shared by every engine: when it started, whether it
 * still queues, and what it counted.
 */
struct io_run {
	uint64_t t0, deadline, end;
	double cpu0, cpu1;
	bool stop; /* no more I/O is queued */
	bool counting; /* completions reaped now are counted */
	int err;
};

/*
 * Called once per reap, before the completions are looked at, with the
 * time they were reaped: decides whether they count and whether their
 * slots are queued again.
 */
static void run_reaped(struct io_ctx *c, struct io_run *run, uint64_t now)
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

/*
 * One completed I/O of slot s, reaped at now with result res (bytes or
 * -errno). Returns whether the slot is to be queued again: at the same
 * offset when the I/O came back EAGAIN or EINTR (retried, up to
 * IO_MAX_RETRIES times, its latency still counted from its first issue),
 * else at the new offset it put in s->off. Any other error, a short
 * transfer, or a completion stamped before its issue stops the run with
 * that error in run->err.
 */
static bool run_complete(struct io_ctx *c, struct io_run *run,
			 struct io_slot *s, long long res, uint64_t now,
			 struct io_stats *st)
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
	return !run->stop && next_offset(c, &s->off);
}

/* Stamps the issue of the I/O in s, unless it is a retry of one. */
static void stamp_issue(struct io_slot *s)
{
	if (!s->retries)
		s->t_submit = mono_ns();
}

static int sync_run(struct io_ctx *c, struct io_run *run, struct io_stats *st)
{
	struct io_slot *s = &c->slots[0];

	if (!next_offset(c, &s->off))
		return 0;
	for (;;) {
		uint64_t now;
		long long res;

		stamp_issue(s);
		if (c->job.write)
			res = pwrite(c->job.fd, s->buf, c->job.block,
				     (off_t)s->off);
		else
			res = pread(c->job.fd, s->buf, c->job.block,
				    (off_t)s->off);
		if (res < 0)
			res = -errno;
		now = mono_ns();
		run_reaped(c, run, now);
		if (!run_complete(c, run, s, res, now, st))
			break;
	}
	return 0;
}

/* How often a full SQ or a transient refusal is waited out in a row
 * before the run fails: the kernel is not making progress. */
#define IO_MAX_STALLS 100000

/* A transient io_uring_enter() or io_submit() refusal: out of kernel
 * resources (EAGAIN), a CQ overflow to reap first (EBUSY), a signal. */
static bool io_transient(int r)
{
	return r == -EAGAIN || r == -EBUSY || r == -EINTR;
}

/*
 * A free SQE. The loop never has more than depth I/Os in flight in a
 * depth-entry ring, and yet the SQ can be full: with SQPOLL the kernel
 * thread posts a completion before it publishes the SQ head past the
 * entries it consumed, so a slot the loop has reaped may not be free in
 * the ring yet. Waits for space the way liburing documents for SQPOLL
 * (io_uring_sqring_wait()); other setups submit what is queued, which
 * frees the entries at once. Each wait is counted (sq_full_waits).
 */
static int uring_get_sqe(struct io_ctx *c, struct io_uring_sqe **ret)
{
	struct io_uring_sqe *sqe;

	for (unsigned int stalls = 0;
	     !(sqe = io_uring_get_sqe(&c->ring)); stalls++) {
		int r;

		if (stalls == IO_MAX_STALLS)
			return -EBUSY;
		c->st->sq_full_waits++;
		if (c->job.engine == IO_ENGINE_URING_SQPOLL)
			r = io_uring_sqring_wait(&c->ring);
		else
			r = io_uring_submit(&c->ring);
		if (r < 0 && !io_transient(r))
			return r;
		if (r == -EINTR && bench_interrupted())
			return r;
	}
	*ret = sqe;
	return 0;
}

/*
 * Queues slot s and submits it at once, as fio does by default
 * (iodepth_batch_submit=1): the device starts on it while the next
 * completions are still being handled. Handing the device all reaped
 * replacements in one call instead leaves it idle until the whole batch is
 * built, 10-20% of the IOPS on a virtio disk that completes in bursts
 * (docs/bench.md). With SQPOLL the submission is a store to the ring.
 */
static int uring_issue(struct io_ctx *c, struct io_slot *s)
{
	struct io_uring_sqe *sqe;
	unsigned int idx = (unsigned int)(s - c->slots);
	int r;

	r = uring_get_sqe(c, &sqe);
	if (r < 0)
		return r;
	if (c->job.engine == IO_ENGINE_URING_FIXED) {
		if (c->job.write)
			io_uring_prep_write_fixed(sqe, 0, s->buf, c->job.block,
						  s->off, (int)idx);
		else
			io_uring_prep_read_fixed(sqe, 0, s->buf, c->job.block,
						 s->off, (int)idx);
		sqe->flags |= IOSQE_FIXED_FILE;
	} else if (c->job.write) {
		io_uring_prep_write(sqe, c->job.fd, s->buf, c->job.block,
				    s->off);
	} else {
		io_uring_prep_read(sqe, c->job.fd, s->buf, c->job.block,
				   s->off);
	}
	io_uring_sqe_set_data64(sqe, idx);
	stamp_issue(s);
	r = io_uring_submit(&c->ring);
	/* Out of kernel resources: the SQE stays queued and goes with the
	 * next io_uring_enter(), the wait's. */
	if (r >= 0 || io_transient(r))
		return 0;
	return r;
}

/*
 * fio's loop: reap whatever completed (from the ring, without a syscall
 * when something is there; else wait for one), and replace each completion
 * at once, so depth I/Os are in flight all the time.
 */
static int uring_run(struct io_ctx *c, struct io_run *run,
		     struct io_stats *st)
{
	unsigned int outstanding = 0;
	int r;

	for (unsigned int i = 0; i < c->job.depth; i++) {
		if (!next_offset(c, &c->slots[i].off))
			break;
		r = uring_issue(c, &c->slots[i]);
		if (r < 0)
			return r; /* io_uring_queue_exit() cancels the rest */
		outstanding++;
	}
	while (outstanding) {
		struct io_uring_cqe *cqe;
		unsigned int ready;
		uint64_t now;

		if (io_uring_peek_cqe(&c->ring, &cqe) < 0) {
			/* Also submits an SQE a full kernel queue bounced. */
			r = io_uring_submit_and_wait(&c->ring, 1);
			if (r < 0 && !io_transient(r))
				return r;
		}
		/*
		 * The completions present now, all stamped with now: the
		 * resubmissions below enter the kernel, which may post more
		 * CQEs meanwhile (DEFER_TASKRUN runs its task work there).
		 * Those are left for the next reap, with their own time:
		 * stamped with this one, an I/O issued after now would
		 * complete before it was issued.
		 */
		ready = io_uring_cq_ready(&c->ring);
		now = mono_ns();
		run_reaped(c, run, now);
		for (unsigned int i = 0; i < ready; i++) {
			struct io_slot *s;

			/* Present: counted by io_uring_cq_ready() above. */
			if (io_uring_peek_cqe(&c->ring, &cqe) < 0)
				break;
			s = &c->slots[cqe->user_data];
			if (!run_complete(c, run, s, cqe->res, now, st)) {
				io_uring_cqe_seen(&c->ring, cqe);
				outstanding--;
				continue;
			}
			io_uring_cqe_seen(&c->ring, cqe);
			r = uring_issue(c, s);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* io_submit() of slot s alone, at once (see uring_issue()). */
static int aio_issue(struct io_ctx *c, struct io_slot *s)
{
	struct iocb *iocb = &s->iocb;
	int r;

	if (c->job.write)
		io_prep_pwrite(iocb, c->job.fd, s->buf, c->job.block,
			       (long long)s->off);
	else
		io_prep_pread(iocb, c->job.fd, s->buf, c->job.block,
			      (long long)s->off);
	iocb->data = s;
	stamp_issue(s);
	/* EAGAIN: out of kernel resources for a moment (the slot's own I/O
	 * has completed, so the context has room); a signal: again. */
	for (unsigned int stalls = 0; stalls < IO_MAX_STALLS; stalls++) {
		r = io_submit(c->aio, 1, &iocb);
		if (r == 1)
			return 0;
		if (r >= 0)
			return -EIO; /* 0 submitted of 1, with no error */
		if (!io_transient(r) || (r == -EINTR && bench_interrupted()))
			return r;
		c->st->sq_full_waits++;
		sched_yield();
	}
	return -EBUSY;
}

/* The same loop over libaio: io_getevents() for at least one, then one
 * io_submit() per replacement. */
static int aio_run(struct io_ctx *c, struct io_run *run, struct io_stats *st)
{
	unsigned int outstanding = 0;
	int r;

	for (unsigned int i = 0; i < c->job.depth; i++) {
		if (!next_offset(c, &c->slots[i].off))
			break;
		r = aio_issue(c, &c->slots[i]);
		if (r < 0)
			return r; /* io_destroy() waits for what was submitted */
		outstanding++;
	}
	while (outstanding) {
		uint64_t now;

		r = io_getevents(c->aio, 1, (long)c->job.depth, c->aio_events,
				 NULL);
		if (r == -EINTR)
			continue;
		if (r < 0)
			return r;
		now = mono_ns();
		run_reaped(c, run, now);
		for (int i = 0; i < r; i++) {
			struct io_slot *s = c->aio_events[i].data;
			long long res = (long)c->aio_events[i].res;
			int err;

			if (!run_complete(c, run, s, res, now, st)) {
				outstanding--;
				continue;
			}
			err = aio_issue(c, s);
			if (err < 0)
				return err;
		}
	}
	return 0;
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
	switch (c->job.engine) {
	case IO_ENGINE_SYNC:
		r = sync_run(c, &run, ret);
		break;
	case IO_ENGINE_LIBAIO:
		r = aio_run(c, &run, ret);
		break;
	default:
		r = uring_run(c, &run, ret);
		break;
	}
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
