/* SPDX-License-Identifier: MIT */
/* libaio: io_setup / io_submit / io_getevents, one io_submit per I/O. */
#include "engine.h"

#include <errno.h>
#include <libaio.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

struct aio_state {
	io_context_t aio;
	struct io_event *events; /* depth of them */
	struct iocb *iocbs; /* one per slot */
};

static int aio_setup(struct io_ctx *c, char *why, size_t whylen)
{
	struct aio_state *a = calloc(1, sizeof(*a));
	int r;

	if (!a)
		return -ENOMEM;
	c->engine = a;
	a->events = calloc(c->job.depth, sizeof(*a->events));
	a->iocbs = calloc(c->job.depth, sizeof(*a->iocbs));
	if (!a->events || !a->iocbs)
		return -ENOMEM;
	r = io_setup((int)c->job.depth, &a->aio);
	if (r < 0) {
		a->aio = NULL;
		snprintf(why, whylen, "io_setup: %s", io_errname(-r));
		return r;
	}
	return 0;
}

static void aio_teardown(struct io_ctx *c)
{
	struct aio_state *a = c->engine;

	if (!a)
		return;
	if (a->aio)
		io_destroy(a->aio);
	free(a->events);
	free(a->iocbs);
	free(a);
	c->engine = NULL;
}

/* io_submit() of slot s alone, at once (see uring.c's uring_issue()). */
static int aio_issue(struct io_ctx *c, struct io_slot *s)
{
	struct aio_state *a = c->engine;
	struct iocb *iocb = &a->iocbs[s - c->slots];
	int r;

	if (c->job.write)
		io_prep_pwrite(iocb, c->job.fd, s->buf, c->job.block,
			       (long long)s->off);
	else
		io_prep_pread(iocb, c->job.fd, s->buf, c->job.block,
			      (long long)s->off);
	iocb->data = s;
	io_stamp_issue(s);
	/* EAGAIN: out of kernel resources for a moment (the slot's own I/O
	 * has completed, so the context has room); a signal: again. */
	for (unsigned int stalls = 0; stalls < IO_MAX_STALLS; stalls++) {
		r = io_submit(a->aio, 1, &iocb);
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

/* The io_uring loop over libaio: io_getevents() for at least one, then
 * one io_submit() per replacement. */
static int aio_run(struct io_ctx *c, struct io_run *run, struct io_stats *st)
{
	struct aio_state *a = c->engine;
	unsigned int outstanding = 0;
	int r;

	for (unsigned int i = 0; i < c->job.depth; i++) {
		if (!io_next_offset(c, &c->slots[i].off))
			break;
		r = aio_issue(c, &c->slots[i]);
		if (r < 0)
			return r; /* io_destroy() waits for what was submitted */
		outstanding++;
	}
	while (outstanding) {
		uint64_t now;

		r = io_getevents(a->aio, 1, (long)c->job.depth, a->events,
				 NULL);
		if (r == -EINTR)
			continue;
		if (r < 0)
			return r;
		now = mono_ns();
		io_run_reaped(c, run, now);
		for (int i = 0; i < r; i++) {
			struct io_slot *s = a->events[i].data;
			long long res = (long)a->events[i].res;
			int err;

			if (!io_run_complete(c, run, s, res, now, st)) {
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

const struct io_engine_ops io_engine_libaio = {
	.name = "libaio",
	.setup = aio_setup,
	.run = aio_run,
	.teardown = aio_teardown,
};
