/* SPDX-License-Identifier: MIT */
/* uring_fixed: io_uring with a registered file and registered buffers
 * (IORING_OP_READ_FIXED / WRITE_FIXED). */
#include "uring.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "cleanup.h"

static int fixed_setup(struct io_ctx *c, char *why, size_t whylen)
{
	_cleanup_free_ struct iovec *iov = NULL;
	struct uring_state *u;
	int r;

	r = uring_state_new(c, &u);
	if (r < 0)
		return r;
	u->fixed = true;
	r = uring_init_fallback(c, u, why, whylen);
	if (r < 0)
		return r;
	/* READ_FIXED and WRITE_FIXED are as old as io_uring: no probe */
	iov = calloc(c->job.depth, sizeof(*iov));
	if (!iov)
		return -ENOMEM;
	for (unsigned int i = 0; i < c->job.depth; i++) {
		iov[i].iov_base = c->slots[i].buf;
		iov[i].iov_len = c->job.block;
	}
	r = io_uring_register_files(&u->ring, &c->job.fd, 1);
	if (r < 0) {
		snprintf(why, whylen, "register files: %s", io_errname(-r));
		return r;
	}
	r = io_uring_register_buffers(&u->ring, iov, c->job.depth);
	if (r < 0) {
		snprintf(why, whylen, "register buffers: %s", io_errname(-r));
		return r;
	}
	return 0;
}

const struct io_engine_ops io_engine_uring_fixed = {
	.name = "uring_fixed",
	.setup = fixed_setup,
	.run = uring_run,
	.teardown = uring_teardown,
};
