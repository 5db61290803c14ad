/* SPDX-License-Identifier: MIT */
/* The io_uring probe's pure helpers, exposed for unit tests. */
#ifndef FLEETBENCH_PROBE_IOURING_H
#define FLEETBENCH_PROBE_IOURING_H

#include <stdint.h>

/*
 * Why io_uring_setup() failed with err (-errno), given kernel.io_uring_disabled
 * (-1 when unknown), kernel.io_uring_group (-1 when none or unknown) and the
 * text of /proc/self/status (NULL when unreadable). EPERM is explained by the
 * sysctl first (2, or 1 without CAP_SYS_ADMIN in CapEff and outside the
 * group by the Gid/Groups lines), then by a seccomp filter ("Seccomp: 2"),
 * else "unexplained". Returns NULL for err == 0.
 */
const char *iouring_setup_explanation(int err, int64_t disabled, int64_t group,
				      const char *status);

/*
 * The name of io_uring opcode op: "NOP", "READV", ... from the
 * IORING_OP_* enum of <linux/io_uring.h>, NULL beyond it.
 */
const char *iouring_op_name(unsigned int op);

#endif
