/* SPDX-License-Identifier: MIT */
/*
 * The reading half of the spool (spool.h): listing (and sweeping what an
 * interrupted put left), reading and checking a file, quarantining a
 * damaged one, and the collector's verdicts: ack deletes, reject moves.
 */
#include "spool.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "array.h"
#include "cleanup.h"
#include "durable.h"
#include "spool_fs.h"
#include "uuid_str.h"

struct sort_entry {
	struct spool_entry e;
	long nsec;
};

static int entry_cmp(const void *pa, const void *pb)
{
	const struct sort_entry *a = pa, *b = pb;

	if (a->e.mtime != b->e.mtime)
		return a->e.mtime < b->e.mtime ? -1 : 1;
	if (a->nsec != b->nsec)
		return a->nsec < b->nsec ? -1 : 1;
	return strcmp(a->e.name, b->e.name);
}

int spool_list(struct spool *s, struct spool_entry **ret)
{
	_cleanup_closedir_ DIR *d = NULL;
	_cleanup_free_ struct sort_entry *v = NULL;
	struct spool_entry *out;
	struct dirent *de;
	size_t n = 0, cap = 0;
	bool sweep, swept = false;
	int r = 0;

	/* a put in progress holds the lock: its temporary file is live */
	sweep = flock(s->dfd, LOCK_EX | LOCK_NB) == 0;

	r = spool_dir_open(s->dfd, &d);
	if (r < 0)
		goto out;
	while ((errno = 0, de = readdir(d))) {
		struct stat st;
		struct sort_entry *se;
		size_t nl = strlen(de->d_name);

		if (fstatat(s->dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			r = -errno;
			goto out;
		}
		if (!S_ISREG(st.st_mode))
			continue; /* rejected/, quarantine/, anything else */
		if (spool_has_suffix(de->d_name, SPOOL_TMP_EXT)) {
			if (!sweep)
				continue;
			if (unlinkat(s->dfd, de->d_name, 0) < 0 &&
			    errno != ENOENT) {
				r = -errno;
				goto out;
			}
			swept = true;
			continue;
		}
		if (!spool_is_report(de->d_name, &st))
			continue;
		if (ARRAY_RESERVE(v, cap, n + 1) < 0) {
			r = -ENOMEM;
			goto out;
		}
		se = &v[n++];
		memset(se, 0, sizeof(*se));
		memcpy(se->e.name, de->d_name, nl + 1);
		/* the run id from the name; spool_read checks the header */
		nl -= strlen(SPOOL_EXT);
		memcpy(se->e.run_id, de->d_name,
		       nl < UUID_TEXT_LEN ? nl : UUID_TEXT_LEN);
		se->e.size = (uint64_t)st.st_size;
		se->e.mtime = st.st_mtim.tv_sec;
		se->nsec = st.st_mtim.tv_nsec;
	}
	if (errno) {
		r = -errno;
		goto out;
	}
	if (swept && fsync(s->dfd) < 0) {
		r = -errno;
		goto out;
	}
	if (n)
		qsort(v, n, sizeof(*v), entry_cmp);
	out = calloc(n ? n : 1, sizeof(*out));
	if (!out) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		out[i] = v[i].e;
	*ret = out;
	r = (int)n;
out:
	if (sweep)
		flock(s->dfd, LOCK_UN);
	return r;
}

/*
 * Moves a damaged file to quarantine/ without replacing an earlier one of
 * the same name (NAME, then NAME.1, NAME.2, ...), then syncs both dirs.
 */
static int quarantine(struct spool *s, const char *name)
{
	char dst[96];
	int r;

	for (unsigned i = 0; i < 1000; i++) {
		if (i)
			snprintf(dst, sizeof(dst), "%s.%u", name, i);
		else
			snprintf(dst, sizeof(dst), "%s", name);
		if (renameat2(s->dfd, name, s->quarantine_fd, dst,
			      RENAME_NOREPLACE) == 0)
			goto synced;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
synced:
	r = spool_fsync(s->quarantine_fd);
	if (r >= 0)
		r = spool_fsync(s->dfd);
	return r;
}

static int pread_all(int fd, void *buf, size_t len, off_t off)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO; /* shrank under us */
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/*
 * Checks a header against the file name (NULL: any) and size: true when
 * good, else false with the reason in why.
 */
static bool header_ok(const uint8_t *hdr, const char *name, uint64_t size,
		      uint32_t *ret_len, uint32_t *ret_crc, char *why,
		      size_t whylen)
{
	size_t stem = name ? strlen(name) - strlen(SPOOL_EXT) : UUID_TEXT_LEN;
	const char *rid = (const char *)hdr + HDR_RUN_ID;
	uint32_t version, len, crc;

	memcpy(&version, hdr + HDR_VERSION, 4);
	memcpy(&len, hdr + HDR_LENGTH, 4);
	memcpy(&crc, hdr + HDR_CRC, 4);
	version = le32toh(version);
	len = le32toh(len);
	crc = le32toh(crc);

	if (memcmp(hdr, SPOOL_MAGIC, 8)) {
		snprintf(why, whylen, "bad magic (not a spool file)");
		return false;
	}
	if (version != SPOOL_VERSION) {
		snprintf(why, whylen, "format version %u, expected %u", version,
			 SPOOL_VERSION);
		return false;
	}
	if (!uuid_text_valid_n(rid, strnlen(rid, UUID_TEXT_LEN + 1)) ||
	    hdr[HDR_PAD - 1]) {
		snprintf(why, whylen, "run id in the header is not a UUID");
		return false;
	}
	for (size_t i = HDR_PAD; i < SPOOL_HDR_LEN; i++) {
		if (hdr[i]) {
			snprintf(why, whylen,
				 "header padding byte %zu is not zero", i);
			return false;
		}
	}
	if (name &&
	    (stem != UUID_TEXT_LEN || memcmp(rid, name, UUID_TEXT_LEN))) {
		snprintf(why, whylen,
			 "run id %.36s does not match the file name", rid);
		return false;
	}
	if ((uint64_t)len != size - SPOOL_HDR_LEN) {
		snprintf(why, whylen,
			 "payload length %u, but the file holds %" PRIu64
			 " bytes after the header",
			 len, size - SPOOL_HDR_LEN);
		return false;
	}
	*ret_len = len;
	*ret_crc = crc;
	return true;
}

int spool_read(struct spool *s, const struct spool_entry *e, uint8_t **ret,
	       size_t *ret_len, char err[SPOOL_ERR_LEN])
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ uint8_t *buf = NULL;
	uint8_t hdr[SPOOL_HDR_LEN];
	char why[160];
	struct stat st;
	uint32_t len = 0, crc = 0, got;
	int r;

	if (!spool_entry_name_ok(e->name)) {
		spool_errf(err, "'%.63s' is not a spool file name", e->name);
		return -EINVAL;
	}
	fd = openat(s->dfd, e->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		spool_errf(err, "cannot open '%s': %s", e->name, strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		spool_errf(err, "cannot stat '%s': %s", e->name, strerror(-r));
		return r;
	}
	if (st.st_size == 0) {
		snprintf(why, sizeof(why), "empty file");
		goto bad;
	}
	if (st.st_size < SPOOL_HDR_LEN) {
		snprintf(why, sizeof(why),
			 "truncated: %lld bytes, shorter than the %d-byte header",
			 (long long)st.st_size, SPOOL_HDR_LEN);
		goto bad;
	}
	r = pread_all(fd, hdr, sizeof(hdr), 0);
	if (r < 0) {
		spool_errf(err, "cannot read '%s': %s", e->name, strerror(-r));
		return r;
	}
	if (!header_ok(hdr, e->name, (uint64_t)st.st_size, &len, &crc, why,
		       sizeof(why)))
		goto bad;
	buf = malloc(len ? len : 1);
	if (!buf) {
		spool_errf(err, "out of memory reading '%s' (%u bytes)",
			   e->name, len);
		return -ENOMEM;
	}
	r = pread_all(fd, buf, len, SPOOL_HDR_LEN);
	if (r < 0) {
		spool_errf(err, "cannot read '%s': %s", e->name, strerror(-r));
		return r;
	}
	got = (uint32_t)crc32_z(0L, buf, len);
	if (got != crc) {
		snprintf(why, sizeof(why),
			 "checksum mismatch: header says crc32 %08x, payload has %08x",
			 crc, got);
		goto bad;
	}
	*ret = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
bad:
	r = quarantine(s, e->name);
	if (r < 0)
		spool_errf(err,
			   "damaged spool file '%s': %s (cannot quarantine it: %s)",
			   e->name, why, strerror(-r));
	else
		spool_errf(err,
			   "damaged spool file '%s' moved to " QUARANTINE_DIR "/: %s",
			   e->name, why);
	return -EBADMSG;
}

int spool_ack(struct spool *s, const struct spool_entry *e)
{
	if (!spool_entry_name_ok(e->name))
		return -EINVAL;
	/* already gone (another send acked it) is the same outcome */
	if (unlinkat(s->dfd, e->name, 0) < 0 && errno != ENOENT)
		return -errno;
	return spool_fsync(s->dfd);
}

int spool_reject(struct spool *s, const struct spool_entry *e,
		 const char *reason)
{
	char rname[96], rtmp[104];
	_cleanup_free_ char *text = NULL;
	int r;

	if (!spool_entry_name_ok(e->name))
		return -EINVAL;
	if (asprintf(&text, "%s\n",
		     reason && *reason ? reason : "(no reason given)") < 0) {
		text = NULL;
		return -ENOMEM;
	}
	snprintf(rname, sizeof(rname), "%s" REASON_EXT, e->name);
	snprintf(rtmp, sizeof(rtmp), "%s.tmp", rname);

	/*
	 * The reason goes first: a crash before the move leaves the report in
	 * the spool, to be sent and rejected again, never a reasonless reject.
	 */
	if (unlinkat(s->rejected_fd, rtmp, 0) < 0 && errno != ENOENT)
		return -errno;
	r = durable_write_tmp(s->rejected_fd, rtmp, text, strlen(text), "", 0);
	if (r < 0)
		return r;
	if (renameat(s->rejected_fd, rtmp, s->rejected_fd, rname) < 0) {
		r = -errno;
		unlinkat(s->rejected_fd, rtmp, 0);
		return r;
	}
	if (renameat(s->dfd, e->name, s->rejected_fd, e->name) < 0)
		return -errno;
	r = spool_fsync(s->rejected_fd);
	if (r >= 0)
		r = spool_fsync(s->dfd);
	return r;
}

static int count_files(int dfd, bool skip_reasons, unsigned *ret)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	unsigned n = 0;
	int r;

	r = spool_dir_open(dfd, &d);
	if (r < 0)
		return r;
	while ((errno = 0, de = readdir(d))) {
		struct stat st;

		if (skip_reasons && (spool_has_suffix(de->d_name, REASON_EXT) ||
				     spool_has_suffix(de->d_name, ".tmp")))
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			return -errno;
		}
		if (S_ISREG(st.st_mode))
			n++;
	}
	if (errno)
		return -errno;
	*ret = n;
	return 0;
}

int spool_counts(struct spool *s, unsigned *ret_rejected,
		 unsigned *ret_quarantined)
{
	unsigned rej, quar;
	int r;

	r = count_files(s->rejected_fd, true, &rej);
	if (r < 0)
		return r;
	r = count_files(s->quarantine_fd, false, &quar);
	if (r < 0)
		return r;
	if (ret_rejected)
		*ret_rejected = rej;
	if (ret_quarantined)
		*ret_quarantined = quar;
	return 0;
}

int spool_read_file(const char *path, uint8_t **ret, size_t *ret_len,
		    char err[SPOOL_ERR_LEN])
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	_cleanup_free_ uint8_t *buf = NULL;
	uint32_t len = 0, crc = 0;
	size_t size;
	struct stat st;
	char why[160];
	int r;

	if (fd < 0 || fstat(fd, &st) < 0) {
		r = -errno;
		spool_errf(err, "cannot read '%s': %s", path, strerror(-r));
		return r;
	}
	if (!S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > SPOOL_HDR_LEN + (uint64_t)UINT32_MAX) {
		spool_errf(err, "'%s' is not a report file (%s)", path,
			   S_ISREG(st.st_mode) ? "too large" :
						 "not a regular file");
		return -EINVAL;
	}
	size = (size_t)st.st_size;
	buf = malloc(size ? size : 1);
	if (!buf) {
		spool_errf(err, "out of memory reading '%s' (%zu bytes)", path,
			   size);
		return -ENOMEM;
	}
	r = pread_all(fd, buf, size, 0);
	if (r < 0) {
		spool_errf(err, "cannot read '%s': %s", path, strerror(-r));
		return r;
	}
	if (size < 8 || memcmp(buf, SPOOL_MAGIC, 8)) {
		/* no spool header: the packed report itself */
		*ret = TAKE_PTR(buf);
		*ret_len = size;
		return 0;
	}
	if (size < SPOOL_HDR_LEN) {
		spool_errf(err, "damaged spool file '%s': truncated: %zu bytes, shorter than the %d-byte header",
			   path, size, SPOOL_HDR_LEN);
		return -EBADMSG;
	}
	if (!header_ok(buf, NULL, size, &len, &crc, why, sizeof(why))) {
		spool_errf(err, "damaged spool file '%s': %s", path, why);
		return -EBADMSG;
	}
	if ((uint32_t)crc32_z(0L, buf + SPOOL_HDR_LEN, len) != crc) {
		spool_errf(err, "damaged spool file '%s': checksum mismatch",
			   path);
		return -EBADMSG;
	}
	memmove(buf, buf + SPOOL_HDR_LEN, len);
	*ret = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}
