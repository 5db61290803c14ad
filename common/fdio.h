/* SPDX-License-Identifier: MIT */
/* Whole-buffer I/O on file descriptors, retried as write(2) requires. */
#ifndef FLEETBENCH_FDIO_H
#define FLEETBENCH_FDIO_H

#include <stddef.h>

/*
 * Writes all len bytes of buf to fd, continuing after short writes and
 * retrying EINTR. Returns 0, or -errno of the write that failed (some of
 * buf may have been written).
 */
int fd_write_all(int fd, const void *buf, size_t len);

#endif
