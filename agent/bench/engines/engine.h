/* SPDX-License-Identifier: MIT */
/*
 * What an I/O engine is to io_engine.c, as fio's struct ioengine_ops: an
 * ops table per engine, one file each (psync.c, uring.c, uring_sqpoll.c,
 * uring_fixed.c, libaio.c), listed in io_engine.c's table by enum
 * io_engine. io_engine.c keeps what every engine shares: the job's buffers
 * and slots, the offsets, the run's clock and counting, the pattern check.
 */
#ifndef FLEETBENCH_ENGINE_H
#define FLEETBENCH_ENGINE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "io_engine.h"
#include "rand.h"

/* One I/O in flight, and its buffer. */
struct io_slot {
	void *buf;
	uint64_t off;
	uint64_t t_submit; /* ns, of the first issue of the I/O in it */
	bool used; /* has held a completed I/O (pattern check) */
	unsigned int retries; /* of the I/O in it: see io_run_complete() */
};

struct io_ctx {
	struct io_job job;
	const struct io_engine_ops *ops;
	void *engine; /* the engine's own state, set by its setup */
	struct io_slot *slots; /* job.depth of them */
	void *bufs;
	const char *ring_flags; /* the io_uring setup flags in use */
	/* the offset generator */
	struct rng rng;
	uint64_t nblocks, next, issued, to_issue;
	struct io_stats *st; /* of the run in progress: its counters */
};

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

struct io_engine_ops {
	const char *name;
	/* One I/O at a time: the job's depth is taken as 1. */
	bool depth_one;
	/*
	 * After the slots and their buffers: the ring, the aio context, the
	 * registrations, in c->engine. -errno with the failed step in why
	 * ("sqpoll: EPERM"); teardown runs after a failure too.
	 */
	int (*setup)(struct io_ctx *c, char *why, size_t whylen);
	/*
	 * One run: issues from io_next_offset() until it says done or the
	 * run stops, calling io_run_reaped() once per reap and
	 * io_run_complete() per completion. 0 (run->err says how the run
	 * ended) or the engine's -errno; nothing in flight once teardown ran.
	 */
	int (*run)(struct io_ctx *c, struct io_run *run, struct io_stats *st);
	/* Frees what setup made (c->engine may be NULL or half made). */
	void (*teardown)(struct io_ctx *c);
};

extern const struct io_engine_ops io_engine_psync; /* psync.c */
extern const struct io_engine_ops io_engine_uring; /* uring.c */
extern const struct io_engine_ops io_engine_uring_sqpoll; /* uring_sqpoll.c */
extern const struct io_engine_ops io_engine_uring_fixed; /* uring_fixed.c */
extern const struct io_engine_ops io_engine_libaio; /* libaio.c */

/* ---- shared by the engines (io_engine.c) ---- */

/* How often a full SQ or a transient refusal is waited out in a row
 * before the run fails: the kernel is not making progress. */
#define IO_MAX_STALLS 100000

/* The errno name of err ("EPERM"), "unknown error" without one. */
const char *io_errname(int err);

/* The next offset to issue; false when a size-based job has issued all. */
bool io_next_offset(struct io_ctx *c, uint64_t *ret);

/*
 * Called once per reap, before the completions are looked at, with the
 * time they were reaped: decides whether they count and whether their
 * slots are queued again.
 */
void io_run_reaped(struct io_ctx *c, struct io_run *run, uint64_t now);

/*
 * One completed I/O of slot s, reaped at now with result res (bytes or
 * -errno). Returns whether the slot is to be queued again: at the same
 * offset when the I/O came back EAGAIN or EINTR (retried, up to
 * IO_MAX_RETRIES times, its latency still counted from its first issue),
 * else at the new offset it put in s->off. Any other error, a short
 * transfer, or a completion stamped before its issue stops the run with
 * that error in run->err.
 */
bool io_run_complete(struct io_ctx *c, struct io_run *run, struct io_slot *s,
		     long long res, uint64_t now, struct io_stats *st);

/* Stamps the issue of the I/O in s, unless it is a retry of one. */
static inline void io_stamp_issue(struct io_slot *s)
{
	if (!s->retries)
		s->t_submit = mono_ns();
}

/* A transient io_uring_enter() or io_submit() refusal: out of kernel
 * resources (EAGAIN), a CQ overflow to reap first (EBUSY), a signal. */
static inline bool io_transient(int r)
{
	return r == -EAGAIN || r == -EBUSY || r == -EINTR;
}

#endif
