/* SPDX-License-Identifier: MIT */
/*
 * Inside the spool, for its two halves only: spool.c (open, put, replace)
 * and spool_read.c (list, read, quarantine, ack, reject). The file layout,
 * the directory handle, and the file-system helpers both use.
 */
#ifndef FLEETBENCH_SPOOL_FS_H
#define FLEETBENCH_SPOOL_FS_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "spool.h"

/*
 * The file header, little-endian, 64 bytes:
 *   0  magic "FBSPOOL1"
 *   8  u32 format version
 *  12  u32 payload length
 *  16  u32 CRC-32 (zlib) of the payload
 *  20  run_id, 36 characters and a NUL
 *  57  zero padding
 */
#define SPOOL_MAGIC "FBSPOOL1"
#define SPOOL_VERSION 1u
#define SPOOL_HDR_LEN 64
#define HDR_VERSION 8
#define HDR_LENGTH 12
#define HDR_CRC 16
#define HDR_RUN_ID 20
#define HDR_PAD (HDR_RUN_ID + 37)
#define ENTRY_NAME_LEN sizeof(((struct spool_entry *)0)->name)

#define SPOOL_EXT ".fbr"
#define SPOOL_TMP_EXT ".fbr.tmp"
#define REASON_EXT ".reason"
#define REJECTED_DIR "rejected"
#define QUARANTINE_DIR "quarantine"

struct spool {
	int dfd; /* the spool directory; also its lock (flock) */
	int rejected_fd;
	int quarantine_fd;
	uint64_t limit;
};

/* Formats into err (SPOOL_ERR_LEN bytes; NULL: nothing). */
void spool_errf(char err[SPOOL_ERR_LEN], const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Whether s ends in suffix. */
bool spool_has_suffix(const char *s, const char *suffix);

/* A plain name inside the spool directory, as spool_list makes them. */
bool spool_entry_name_ok(const char *name);

/* A spooled report: a regular NAME.fbr whose name fits an entry. */
bool spool_is_report(const char *name, const struct stat *st);

/* fsync(2): 0 or -errno. */
int spool_fsync(int fd);

/* A new DIR stream over dfd (which stays open): 0 or -errno. */
int spool_dir_open(int dfd, DIR **ret);

#endif
