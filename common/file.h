/* SPDX-License-Identifier: MIT */
/*
 * Reading a whole file, written once: /proc and /sys files, key files,
 * the schema's SQL. The buffer is NUL-terminated (text readers need it;
 * the length is returned for the others), grows by doubling, and stops at
 * a caller's limit with -EFBIG instead of taking what a runaway file holds.
 */
#ifndef FLEETBENCH_FILE_H
#define FLEETBENCH_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* Reads fd to its end: the length read, -EFBIG when the file holds more
 * than max bytes, -ENOMEM, or the read's -errno. *ret is written only on
 * success, for the caller to free(). EINTR is retried. */
ssize_t read_full_fd(int fd, size_t max, char **ret);

/* The same for path, opened O_RDONLY | O_CLOEXEC relative to dirfd
 * (AT_FDCWD for the working directory): -errno of openat otherwise. */
ssize_t read_full_fileat(int dirfd, const char *path, size_t max, char **ret);

/* read_full_fileat(AT_FDCWD, ...). */
ssize_t read_full_file(const char *path, size_t max, char **ret);

#endif
