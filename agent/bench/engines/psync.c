/* SPDX-License-Identifier: MIT */
/* psync: pread / pwrite, one I/O at a time. */
#include "engine.h"

#include <errno.h>
#include <unistd.h>

static int psync_run(struct io_ctx *c, struct io_run *run,
		     struct io_stats *st)
{
	struct io_slot *s = &c->slots[0];

	if (!io_next_offset(c, &s->off))
		return 0;
	for (;;) {
		uint64_t now;
		long long res;

		io_stamp_issue(s);
		if (c->job.write)
			res = pwrite(c->job.fd, s->buf, c->job.block,
				     (off_t)s->off);
		else
			res = pread(c->job.fd, s->buf, c->job.block,
				    (off_t)s->off);
		if (res < 0)
			res = -errno;
		now = mono_ns();
		io_run_reaped(c, run, now);
		if (!io_run_complete(c, run, s, res, now, st))
			break;
	}
	return 0;
}

const struct io_engine_ops io_engine_psync = {
	.name = "psync",
	.depth_one = true,
	.run = psync_run,
};
