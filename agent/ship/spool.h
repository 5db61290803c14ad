/* SPDX-License-Identifier: MIT */
/*
 * The agent's durable spool: each report waits in its own file until the
 * collector acknowledges it COMMITTED or DUPLICATE. A file is written to a
 * temporary name, fsynced, renamed into place and the directory fsynced, so
 * after a crash a report is either wholly there or not at all. Each file
 * carries a header with a magic, the payload length and a CRC-32 (zlib);
 * a file that fails the check is moved to quarantine/ and reported, never
 * sent. REJECTED reports move to rejected/ with the reason beside them.
 */
#ifndef FLEETBENCH_SPOOL_H
#define FLEETBENCH_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#define SPOOL_ERR_LEN 256

struct spool;

struct spool_entry {
	char run_id[37];
	char name[64]; /* file name in the spool directory */
	uint64_t size; /* file size in bytes */
	int64_t mtime; /* seconds since the epoch */
};

/*
 * Opens (creating with 0700 if needed) the spool at dir, with its
 * rejected/ and quarantine/ subdirectories, and a limit on the bytes it
 * may hold (headers included; 0: no limit). Returns NULL with errno set and
 * err saying what failed.
 */
struct spool *spool_open(const char *dir, uint64_t limit_bytes,
			 char err[SPOOL_ERR_LEN]);
void spool_close(struct spool *s);

/*
 * Stores payload as run_id's report, durably (tmp, fsync, rename, fsync
 * dir). Returns 0; -ENOSPC when it would exceed the limit (nothing already
 * spooled is touched) with err saying the sizes; -EEXIST when run_id is
 * already spooled; other -errno (disk full: the temporary file is removed).
 */
int spool_put(struct spool *s, const char *run_id, const void *payload,
	      size_t len, char err[SPOOL_ERR_LEN]);

/*
 * Replaces run_id's spooled report by payload, as durably as spool_put and
 * atomically: the new file is renamed over the old one, so a crash leaves
 * one of them whole, never neither. The limit counts the new size in place
 * of the old. Returns 0; -ENOENT when run_id is not spooled; -EINVAL for a
 * bad run id or a name that is no regular file; -ENOSPC and other -errno as
 * spool_put (the old report is left as it was). err says which.
 */
int spool_replace(struct spool *s, const char *run_id, const void *payload,
		  size_t len, char err[SPOOL_ERR_LEN]);

/*
 * Lists the spooled reports, oldest first, into a new array (*ret, free()
 * it). Returns the count or -errno. Temporary files of an interrupted put
 * are removed here.
 */
int spool_list(struct spool *s, struct spool_entry **ret);

/*
 * Reads and checks entry's payload into a new buffer. Returns 0, or
 * -EBADMSG after moving a damaged file to quarantine/ (err says why).
 */
int spool_read(struct spool *s, const struct spool_entry *e, uint8_t **ret,
	       size_t *ret_len, char err[SPOOL_ERR_LEN]);

/*
 * Reads the report in the file at path, of any directory: a spool file
 * (from the spool, rejected/ or quarantine/), whose header and CRC are
 * checked but not its name, or else the bare packed report (a file that
 * does not start with the spool's magic). Returns 0 and the payload in a
 * new buffer; -EBADMSG for a damaged spool file, which stays where it is;
 * -EINVAL for a directory or a file over 4 GiB; other -errno. err says
 * which, naming the file.
 */
int spool_read_file(const char *path, uint8_t **ret, size_t *ret_len,
		    char err[SPOOL_ERR_LEN]);

/* The collector stored it: deletes the file (and fsyncs the dir). */
int spool_ack(struct spool *s, const struct spool_entry *e);

/* The collector refused it: moves it to rejected/ with NAME.reason. */
int spool_reject(struct spool *s, const struct spool_entry *e,
		 const char *reason);

/* Bytes currently held (spooled reports only). */
uint64_t spool_bytes(struct spool *s);

/* Counts of rejected/ and quarantine/ files. */
int spool_counts(struct spool *s, unsigned *ret_rejected,
		 unsigned *ret_quarantined);

#endif
