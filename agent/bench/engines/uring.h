/* SPDX-License-Identifier: MIT */
/*
 * What the three io_uring engines share (uring.c): the ring, the loop that
 * keeps it at full depth, and the steps of their setups. They differ in
 * how the ring is set up (uring.c plain, uring_sqpoll.c with a kernel
 * thread polling the SQ, uring_fixed.c with a registered file and
 * buffers), in how an I/O is prepared (fixed) and how a full SQ is waited
 * out (SQPOLL).
 */
#ifndef FLEETBENCH_URING_H
#define FLEETBENCH_URING_H

#include <liburing.h>
#include <stdbool.h>
#include <stddef.h>

#include "engine.h"

struct uring_state {
	struct io_uring ring;
	bool ring_ok; /* the ring is set up: io_uring_queue_exit() */
	bool sqpoll; /* a full SQ is waited out with io_uring_sqring_wait() */
	bool fixed; /* the registered file and buffers are used */
};

/* A new uring_state in c->engine. 0 or -ENOMEM. */
int uring_state_new(struct io_ctx *c, struct uring_state **ret);

/*
 * Sets up the ring with fio's flags (COOP_TASKRUN|SINGLE_ISSUER|
 * DEFER_TASKRUN), falling back to fewer where the kernel refuses them
 * (EINVAL); the set in use in c->ring_flags. 0 or -errno, with why
 * "io_uring_setup: ...".
 */
int uring_init_fallback(struct io_ctx *c, struct uring_state *u, char *why,
			size_t whylen);

/* The job's IORING_OP_READ or IORING_OP_WRITE is supported (5.6): 0, or
 * -EOPNOTSUPP with why. */
int uring_check_op(struct io_ctx *c, struct uring_state *u, char *why,
		   size_t whylen);

int uring_run(struct io_ctx *c, struct io_run *run, struct io_stats *st);
void uring_teardown(struct io_ctx *c);

#endif
