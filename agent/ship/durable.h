/* SPDX-License-Identifier: MIT */
/*
 * Writing files that survive a crash, for the spool and the state
 * directory: a temporary file written and synced before it is renamed,
 * and the directory synced after an entry is made in it.
 */
#ifndef FLEETBENCH_DURABLE_H
#define FLEETBENCH_DURABLE_H

#include <stddef.h>
#include <sys/types.h>

/* Syncs the directory holding path (the path's last component removed;
 * trailing slashes ignored), so that a new entry in it persists. 0 or
 * -errno. */
int durable_fsync_parent(const char *path);

/*
 * Creates tmp in dfd exclusively (0600, not through a symlink), writes a
 * then b, fsyncs and closes. On any failure the temporary file is
 * removed. 0 or -errno.
 */
int durable_write_tmp(int dfd, const char *tmp, const void *a, size_t alen,
		      const void *b, size_t blen);

/*
 * The same with the file's mode set to mode exactly, whatever the umask
 * (the node_exporter textfile is 0644: another user reads it).
 */
int durable_write_tmp_mode(int dfd, const char *tmp, mode_t mode,
			   const void *a, size_t alen, const void *b,
			   size_t blen);

#endif
