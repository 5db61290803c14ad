/* SPDX-License-Identifier: MIT */
/* uring_sqpoll: io_uring with IORING_SETUP_SQPOLL, a kernel thread polling
 * the SQ, so a submission is a store to the ring. */
#include "uring.h"

#include <stdio.h>

static int sqpoll_setup(struct io_ctx *c, char *why, size_t whylen)
{
	/* The IPI-saving flags are meaningless (EINVAL) with SQPOLL, whose
	 * thread completes the requests itself. */
	struct io_uring_params params = {
		.flags = IORING_SETUP_SQPOLL |
			 (c->job.sq_aff ? IORING_SETUP_SQ_AFF : 0),
		.sq_thread_idle = IO_SQPOLL_IDLE_MS,
		.sq_thread_cpu = c->job.sq_cpu,
	};
	struct uring_state *u;
	int r;

	r = uring_state_new(c, &u);
	if (r < 0)
		return r;
	u->sqpoll = true;
	c->ring_flags = "SQPOLL";
	r = io_uring_queue_init_params(c->job.depth, &u->ring, &params);
	if (r < 0) {
		snprintf(why, whylen, "sqpoll: %s", io_errname(-r));
		return r;
	}
	u->ring_ok = true;
	return uring_check_op(c, u, why, whylen);
}

const struct io_engine_ops io_engine_uring_sqpoll = {
	.name = "uring_sqpoll",
	.setup = sqpoll_setup,
	.run = uring_run,
	.teardown = uring_teardown,
};
