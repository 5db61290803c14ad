/* SPDX-License-Identifier: MIT */
/*
 * uring: io_uring with IORING_OP_READ / IORING_OP_WRITE, and the ring code
 * the SQPOLL and fixed engines share with it (uring.h).
 */
#include "uring.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "cleanup.h"

int uring_state_new(struct io_ctx *c, struct uring_state **ret)
{
	struct uring_state *u = calloc(1, sizeof(*u));

	if (!u)
		return -ENOMEM;
	c->engine = u;
	*ret = u;
	return 0;
}

void uring_teardown(struct io_ctx *c)
{
	struct uring_state *u = c->engine;

	if (!u)
		return;
	if (u->ring_ok)
		io_uring_queue_exit(&u->ring);
	free(u);
	c->engine = NULL;
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

int uring_init_fallback(struct io_ctx *c, struct uring_state *u, char *why,
			size_t whylen)
{
	int r = -EINVAL;

	for (size_t i = 0; i < ARRAY_SIZE(ring_flag_sets) && r == -EINVAL;
	     i++) {
		struct io_uring_params params = {
			.flags = ring_flag_sets[i].flags,
		};

		c->ring_flags = ring_flag_sets[i].name;
		r = io_uring_queue_init_params(c->job.depth, &u->ring, &params);
	}
	if (r < 0) {
		snprintf(why, whylen, "io_uring_setup: %s", io_errname(-r));
		return r;
	}
	u->ring_ok = true;
	return 0;
}

int uring_check_op(struct io_ctx *c, struct uring_state *u, char *why,
		   size_t whylen)
{
	unsigned int op = c->job.write ? IORING_OP_WRITE : IORING_OP_READ;
	struct io_uring_probe *probe = io_uring_get_probe_ring(&u->ring);
	int r;

	/* IORING_OP_READ/WRITE arrived in 5.6: check, as fio does. */
	r = probe && io_uring_opcode_supported(probe, (int)op) ? 0 :
								 -EOPNOTSUPP;
	if (probe)
		io_uring_free_probe(probe);
	if (r < 0)
		snprintf(why, whylen, "io_uring: IORING_OP_%s: %s",
			 c->job.write ? "WRITE" : "READ", io_errname(-r));
	return r;
}

static int uring_setup(struct io_ctx *c, char *why, size_t whylen)
{
	struct uring_state *u;
	int r;

	r = uring_state_new(c, &u);
	if (r == 0)
		r = uring_init_fallback(c, u, why, whylen);
	if (r == 0)
		r = uring_check_op(c, u, why, whylen);
	return r;
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
static int uring_get_sqe(struct io_ctx *c, struct uring_state *u,
			 struct io_uring_sqe **ret)
{
	struct io_uring_sqe *sqe;

	for (unsigned int stalls = 0;
	     !(sqe = io_uring_get_sqe(&u->ring)); stalls++) {
		int r;

		if (stalls == IO_MAX_STALLS)
			return -EBUSY;
		c->st->sq_full_waits++;
		if (u->sqpoll)
			r = io_uring_sqring_wait(&u->ring);
		else
			r = io_uring_submit(&u->ring);
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
static int uring_issue(struct io_ctx *c, struct uring_state *u,
		       struct io_slot *s)
{
	struct io_uring_sqe *sqe;
	unsigned int idx = (unsigned int)(s - c->slots);
	int r;

	r = uring_get_sqe(c, u, &sqe);
	if (r < 0)
		return r;
	if (u->fixed) {
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
	io_stamp_issue(s);
	r = io_uring_submit(&u->ring);
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
int uring_run(struct io_ctx *c, struct io_run *run, struct io_stats *st)
{
	struct uring_state *u = c->engine;
	unsigned int outstanding = 0;
	int r;

	for (unsigned int i = 0; i < c->job.depth; i++) {
		if (!io_next_offset(c, &c->slots[i].off))
			break;
		r = uring_issue(c, u, &c->slots[i]);
		if (r < 0)
			return r; /* io_uring_queue_exit() cancels the rest */
		outstanding++;
	}
	while (outstanding) {
		struct io_uring_cqe *cqe;
		unsigned int ready;
		uint64_t now;

		if (io_uring_peek_cqe(&u->ring, &cqe) < 0) {
			/* Also submits an SQE a full kernel queue bounced. */
			r = io_uring_submit_and_wait(&u->ring, 1);
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
		ready = io_uring_cq_ready(&u->ring);
		now = mono_ns();
		io_run_reaped(c, run, now);
		for (unsigned int i = 0; i < ready; i++) {
			struct io_slot *s;

			/* Present: counted by io_uring_cq_ready() above. */
			if (io_uring_peek_cqe(&u->ring, &cqe) < 0)
				break;
			s = &c->slots[cqe->user_data];
			if (!io_run_complete(c, run, s, cqe->res, now, st)) {
				io_uring_cqe_seen(&u->ring, cqe);
				outstanding--;
				continue;
			}
			io_uring_cqe_seen(&u->ring, cqe);
			r = uring_issue(c, u, s);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

const struct io_engine_ops io_engine_uring = {
	.name = "uring",
	.setup = uring_setup,
	.run = uring_run,
	.teardown = uring_teardown,
};
