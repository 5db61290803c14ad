/* SPDX-License-Identifier: MIT */
/*
 * The I/O engines behind randread and seqwrite (pread/pwrite, io_uring
 * plain, with SQPOLL, with a registered file and fixed buffers, libaio),
 * the per-I/O latency histogram, and the data pattern the agent writes so
 * that a read can be checked against it. Each engine is a file of
 * engines/ behind struct io_engine_ops (engines/engine.h); io_engine.c
 * lists them in one table by enum io_engine.
 *
 * Every queued engine keeps its queue at full depth the way fio does by
 * default: reap whatever completed, and replace each completion at once,
 * submitting it on its own before handling the next, so the device starts
 * on it while the others are still being handled. docs/bench.md (randread,
 * "Accuracy against fio, and why a batch loop measures less") says
 * why: on a virtio disk that completes in bursts, a loop that resubmits
 * the reaped batch in one call measured 15-20% below fio.
 */
#ifndef FLEETBENCH_IO_ENGINE_H
#define FLEETBENCH_IO_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- latency histogram ---- */

/*
 * Log-linear: values below 256 ns are exact, above that every power of two
 * is split in 128 buckets, so a quantile is within 0.4% of the true order
 * statistic (fio's histogram is within 1.6%). Covers 1 ns to 2^64 ns.
 */
#define LAT_SUB_BITS 7
#define LAT_EXACT (2u << LAT_SUB_BITS) /* 256: below it, one bucket a ns */
#define LAT_BUCKETS (LAT_EXACT + (64 - LAT_SUB_BITS - 1) * (1u << LAT_SUB_BITS))

struct lat_hist {
	uint64_t count;
	uint64_t min, max; /* exact, ns */
	double sum; /* ns: the mean, for Little's law checks */
	uint64_t buckets[LAT_BUCKETS];
};

void lat_hist_reset(struct lat_hist *h);
void lat_hist_add(struct lat_hist *h, uint64_t ns);

/* Adds every value of src to dst (the jobs of one run, io_scaling). */
void lat_hist_merge(struct lat_hist *dst, const struct lat_hist *src);

/*
 * Quantile q in [0, 1] in ns by nearest rank (the smallest recorded value
 * with at least ceil(q * count) values at or below it), as the middle of
 * its bucket clamped to [min, max]: exact below 256 ns and at the first
 * and last rank (min and max are kept), within 0.4% elsewhere.
 * NAN when the histogram is empty.
 */
double lat_hist_quantile(const struct lat_hist *h, double q);

/* ---- the data pattern ---- */

#define IO_PATTERN_BLOCK 4096u

/*
 * Fills buf (len a multiple of IO_PATTERN_BLOCK, destined for file offset
 * off, a multiple of it) with the pattern: every 4 KiB block starts with a
 * magic number and its own offset, the rest is `noise` (IO_PATTERN_BLOCK
 * bytes of PRNG output), so no block is zero and a block read from the
 * wrong place or a hole is recognised.
 */
void io_pattern_fill(void *buf, size_t len, uint64_t off, const void *noise);

/* Whether the 4 KiB block in buf is the pattern's block for offset off. */
bool io_pattern_check(const void *buf, uint64_t off);

/*
 * Writes `bytes` (a multiple of IO_PATTERN_BLOCK) of the pattern to fd
 * (opened O_DIRECT) from offset 0 in 1 MiB sequential writes, then
 * fdatasync()s, so every block is written data on the device: not a hole,
 * not a preallocated unwritten extent. Returns 0 or -errno (-EINTR when
 * bench_interrupted(); -ETIME when bench_overdue(); -EIO for a short
 * write).
 */
int io_pattern_write_file(int fd, uint64_t bytes, uint64_t seed);

/* ---- filesystems ---- */

/* Name of statfs f_type ("ext4", "tmpfs", "xfs", ...); else "fs 0x..." in
 * buf. */
const char *io_fs_name(long f_type, char *buf, size_t size);

/* Whether f_type is memory-backed (tmpfs, ramfs): O_DIRECT there, where
 * the kernel accepts it (tmpfs does since Linux 6.6), reaches no device. */
bool io_fs_is_memory(long f_type);

/* statfs(dir): its filesystem's name into fs (io_fs_name()) and whether it
 * is memory-backed. 0, or -errno with "cannot use directory ..." in why. */
int io_dir_fs(const char *dir, char *fs, size_t fslen, bool *memory,
	      char *why, size_t len);

/* ---- engines ---- */

enum io_engine {
	IO_ENGINE_SYNC, /* pread / pwrite, depth 1 */
	IO_ENGINE_URING, /* io_uring, IORING_OP_READ/WRITE */
	IO_ENGINE_URING_SQPOLL, /* the same with IORING_SETUP_SQPOLL */
	IO_ENGINE_URING_FIXED, /* registered file, registered buffers */
	IO_ENGINE_LIBAIO, /* io_setup / io_submit / io_getevents */
};

/* The SQPOLL thread's idle time before it sleeps. */
#define IO_SQPOLL_IDLE_MS 50

struct io_job {
	enum io_engine engine;
	int fd; /* opened with O_DIRECT */
	bool write; /* else read */
	bool random; /* uniform block-aligned offsets, else sequential */
	uint64_t span; /* bytes of the file used: a multiple of block */
	uint32_t block; /* bytes per I/O, a multiple of 4096 */
	unsigned int depth; /* I/Os in flight; IO_ENGINE_SYNC uses 1 */
	uint64_t duration_ns; /* > 0: time-based, else size-based: */
	uint64_t total_bytes; /* bytes to transfer, from offset 0 */
	bool datasync; /* a timed fdatasync() after the last write completes */
	bool check_pattern; /* reads: check every buffer against the pattern
			     * after the run (not timed) */
	bool sq_aff; /* SQPOLL: pin its kernel thread to sq_cpu */
	unsigned int sq_cpu;
};

struct io_stats {
	uint64_t ios; /* completed and counted */
	uint64_t bytes;
	double elapsed_s; /* first submission to the end of the run */
	double datasync_s; /* of elapsed_s, the final fdatasync() */
	double cpu_s; /* user + system of the whole process (getrusage) */
	uint64_t checked; /* buffers checked against the pattern */
	uint64_t sq_full_waits; /* waits for a free SQE (or io_submit room) */
	uint64_t retries; /* I/Os reissued after EAGAIN or EINTR */
	struct lat_hist lat; /* submission to completion, per I/O */
};

struct io_ctx;

/*
 * Prepares job: buffers (write buffers get the pattern), the ring or the
 * aio context, registrations. On failure returns -errno and names the step
 * that failed in why ("sqpoll", "io_uring_setup", "register buffers",
 * "io_setup", ...), so a caller can say "sqpoll: EPERM".
 */
int io_ctx_new(const struct io_job *job, struct io_ctx **ret, char *why,
	       size_t whylen);

/*
 * Runs the job once with offsets from a PRNG seeded by seed. Time-based:
 * counts the I/Os completed until the first reap at or past the deadline
 * and the time to that reap, then stops queueing and drains (uncounted).
 * Size-based: all of total_bytes, then the fdatasync() when asked.
 * Returns 0, -EINTR when bench_interrupted(), -EIO for a short transfer,
 * -EILSEQ when a checked buffer does not hold the pattern, or the I/O's
 * -errno. Nothing is left in flight on return.
 */
int io_ctx_run(struct io_ctx *ctx, uint64_t seed, struct io_stats *ret);

/* The io_uring setup flags the ring got ("COOP_TASKRUN|SINGLE_ISSUER|
 * DEFER_TASKRUN", as fio asks; less where the kernel refused; "SQPOLL"),
 * NULL for the other engines. */
const char *io_ctx_ring_flags(const struct io_ctx *ctx);

void io_ctx_free(struct io_ctx *ctx);

#endif
