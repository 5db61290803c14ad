/* SPDX-License-Identifier: MIT */
/* The agent's durable spool: one checksummed file per report (spool.h). */
#include "spool.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
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
#include "fault.h"
#include "fdio.h"
#include "uuid_str.h"

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

static void errf(char err[SPOOL_ERR_LEN], const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void errf(char err[SPOOL_ERR_LEN], const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(err, SPOOL_ERR_LEN, fmt, ap);
	va_end(ap);
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* A plain name inside the spool directory, as spool_list makes them. */
static bool entry_name_ok(const char *name)
{
	size_t n = strnlen(name, ENTRY_NAME_LEN);

	return n > strlen(SPOOL_EXT) && n < ENTRY_NAME_LEN &&
	       !strchr(name, '/') && has_suffix(name, SPOOL_EXT);
}

static int fsync_fd(int fd)
{
	return fsync(fd) < 0 ? -errno : 0;
}

/* Syncs the directory holding path, so that a new entry in it persists. */
static int fsync_parent(const char *path)
{
	_cleanup_free_ char *p = strdup(path);
	_cleanup_close_ int fd = -1;
	char *slash;

	if (!p)
		return -ENOMEM;
	slash = strrchr(p, '/');
	if (!slash)
		strcpy(p, ".");
	else
		slash[slash == p] = '\0'; /* "/x" has the parent "/" */
	fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return fsync_fd(fd);
}

/* mkdir -p, creating what is missing with mode 0700, durably. */
static int mkdir_p(const char *path)
{
	_cleanup_free_ char *p = strdup(path);

	if (!p)
		return -ENOMEM;
	for (char *c = p + 1;; c++) {
		char save = *c;
		int r;

		if (save != '/' && save != '\0')
			continue;
		*c = '\0';
		if (mkdir(p, 0700) == 0) {
			r = fsync_parent(p);
			if (r < 0)
				return r;
		} else if (errno != EEXIST) {
			return -errno;
		}
		*c = save;
		if (!save)
			return 0;
	}
}

static int open_subdir(int dfd, const char *name)
{
	int fd;

	if (mkdirat(dfd, name, 0700) == 0) {
		if (fsync(dfd) < 0)
			return -errno;
	} else if (errno != EEXIST) {
		return -errno;
	}
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

struct spool *spool_open(const char *dir, uint64_t limit_bytes,
			 char err[SPOOL_ERR_LEN])
{
	static const char *const subdirs[] = { REJECTED_DIR, QUARANTINE_DIR };
	struct spool *s;
	int *subdir_fds[ARRAY_SIZE(subdirs)];
	int r;

	if (!dir || !*dir) {
		errf(err, "no spool directory given");
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		errf(err, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	s->dfd = s->rejected_fd = s->quarantine_fd = -1;
	s->limit = limit_bytes;
	subdir_fds[0] = &s->rejected_fd;
	subdir_fds[1] = &s->quarantine_fd;

	r = mkdir_p(dir);
	if (r < 0) {
		errf(err, "cannot create spool directory '%s': %s", dir,
		     strerror(-r));
		goto err;
	}
	s->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dfd < 0) {
		r = -errno;
		errf(err, "cannot open spool directory '%s': %s", dir,
		     strerror(-r));
		goto err;
	}
	for (size_t i = 0; i < ARRAY_SIZE(subdirs); i++) {
		r = open_subdir(s->dfd, subdirs[i]);
		if (r < 0) {
			errf(err, "cannot open '%s/%s': %s", dir, subdirs[i],
			     strerror(-r));
			goto err;
		}
		*subdir_fds[i] = r;
	}
	return s;
err:
	spool_close(s);
	errno = -r;
	return NULL;
}

void spool_close(struct spool *s)
{
	if (!s)
		return;
	closep(&s->dfd);
	closep(&s->rejected_fd);
	closep(&s->quarantine_fd);
	free(s);
}

/*
 * Creates tmp in dfd exclusively (0600), writes a then b, fsyncs and
 * closes. On any failure the temporary file is removed.
 */
static int write_tmp(int dfd, const char *tmp, const void *a, size_t alen,
		     const void *b, size_t blen)
{
	int fd, r;

	fd = openat(dfd, tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	r = fd_write_all(fd, a, alen);
	if (r >= 0)
		r = fd_write_all(fd, b, blen);
	/* the data must be on disk before the rename makes it visible */
	if (r >= 0)
		r = fsync_fd(fd);
	if (close(fd) < 0 && r >= 0)
		r = -errno;
	if (r < 0)
		unlinkat(dfd, tmp, 0);
	return r;
}

/* A spooled report: a regular NAME.fbr whose name fits an entry. */
static bool is_report(const char *name, const struct stat *st)
{
	return S_ISREG(st->st_mode) && has_suffix(name, SPOOL_EXT) &&
	       strlen(name) < ENTRY_NAME_LEN;
}

/* A new DIR stream over dfd (which stays open). */
static int dir_open(int dfd, DIR **ret)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	*ret = fdopendir(fd);
	if (!*ret) {
		closep(&fd);
		return -errno;
	}
	return 0;
}

/* Sums the sizes of the spooled reports. */
static int spool_sum(struct spool *s, uint64_t *ret)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	uint64_t sum = 0;
	int r;

	r = dir_open(s->dfd, &d);
	if (r < 0)
		return r;
	while ((errno = 0, de = readdir(d))) {
		struct stat st;

		if (!has_suffix(de->d_name, SPOOL_EXT))
			continue;
		if (fstatat(s->dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			return -errno;
		}
		if (is_report(de->d_name, &st))
			sum += (uint64_t)st.st_size;
	}
	if (errno)
		return -errno;
	*ret = sum;
	return 0;
}

uint64_t spool_bytes(struct spool *s)
{
	uint64_t sum = 0;

	return spool_sum(s, &sum) < 0 ? 0 : sum;
}

/*
 * spool_put (replace false: run_id must not be spooled) and spool_replace
 * (replace true: it must be, and the rename puts the new file over it).
 */
static int spool_write(struct spool *s, const char *run_id, const void *payload,
		       size_t len, bool replace, char err[SPOOL_ERR_LEN])
{
	uint8_t hdr[SPOOL_HDR_LEN] = { 0 };
	char name[64], tmp[64];
	uint32_t v;
	uint64_t held, need, old = 0;
	struct stat st;
	int r;

	if (!run_id || !uuid_text_valid(run_id)) {
		errf(err, "run id '%s' is not a canonical lowercase UUID",
		     run_id ? run_id : "(null)");
		return -EINVAL;
	}
	if (!payload && len) {
		errf(err, "no payload");
		return -EINVAL;
	}
	if (len > UINT32_MAX) {
		errf(err,
		     "report %s is %zu bytes, more than a spool file holds",
		     run_id, len);
		return -EMSGSIZE;
	}
	snprintf(name, sizeof(name), "%s" SPOOL_EXT, run_id);
	snprintf(tmp, sizeof(tmp), "%s" SPOOL_TMP_EXT, run_id);

	/*
	 * Puts are serialized so that the limit and duplicate checks hold;
	 * spool_list only sweeps temporary files when no put holds the lock.
	 */
	if (flock(s->dfd, LOCK_EX) < 0) {
		r = -errno;
		errf(err, "cannot lock the spool: %s", strerror(-r));
		return r;
	}

	if (fstatat(s->dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!replace) {
			errf(err, "report %s is already spooled", run_id);
			r = -EEXIST;
			goto out;
		}
		if (!is_report(name, &st)) {
			errf(err, "'%s' is not a spooled report", name);
			r = -EINVAL;
			goto out;
		}
		old = (uint64_t)st.st_size;
	} else if (errno != ENOENT) {
		r = -errno;
		errf(err, "cannot check '%s': %s", name, strerror(-r));
		goto out;
	} else if (replace) {
		errf(err, "report %s is not spooled", run_id);
		r = -ENOENT;
		goto out;
	}
	r = spool_sum(s, &held);
	if (r < 0) {
		errf(err, "cannot size the spool: %s", strerror(-r));
		goto out;
	}
	/* a replaced report's bytes are freed by the same rename */
	held -= old < held ? old : held;
	need = SPOOL_HDR_LEN + (uint64_t)len;
	if (s->limit && held + need > s->limit) {
		errf(err,
		     "spool full: it holds %" PRIu64 " bytes, report %s needs %" PRIu64
		     ", limit is %" PRIu64 " bytes",
		     held, run_id, need, s->limit);
		r = -ENOSPC;
		goto out;
	}

	memcpy(hdr, SPOOL_MAGIC, 8);
	v = htole32(SPOOL_VERSION);
	memcpy(hdr + HDR_VERSION, &v, 4);
	v = htole32((uint32_t)len);
	memcpy(hdr + HDR_LENGTH, &v, 4);
	v = htole32((uint32_t)crc32_z(0L, payload ? payload : (const void *)"",
				      len));
	memcpy(hdr + HDR_CRC, &v, 4);
	memcpy(hdr + HDR_RUN_ID, run_id, UUID_TEXT_LEN);

	/* every put holds the lock, so a temporary file here is a crash's */
	if (unlinkat(s->dfd, tmp, 0) < 0 && errno != ENOENT) {
		r = -errno;
		errf(err, "cannot remove stale '%s': %s", tmp, strerror(-r));
		goto out;
	}
	r = write_tmp(s->dfd, tmp, hdr, sizeof(hdr), payload, len);
	if (r < 0) {
		errf(err, "cannot write '%s': %s", tmp, strerror(-r));
		goto out;
	}
	/*
	 * a crash here leaves only the .tmp: the report was never spooled
	 * (replace: the old report stays, whole)
	 */
	fault_point("spool-before-rename");
	if (renameat(s->dfd, tmp, s->dfd, name) < 0) {
		r = -errno;
		errf(err, "cannot rename '%s': %s", tmp, strerror(-r));
		unlinkat(s->dfd, tmp, 0);
		goto out;
	}
	/* the rename is durable only once the directory is */
	r = fsync_fd(s->dfd);
	if (r < 0)
		errf(err, "cannot sync the spool directory: %s", strerror(-r));
out:
	flock(s->dfd, LOCK_UN);
	return r;
}

int spool_put(struct spool *s, const char *run_id, const void *payload,
	      size_t len, char err[SPOOL_ERR_LEN])
{
	return spool_write(s, run_id, payload, len, false, err);
}

int spool_replace(struct spool *s, const char *run_id, const void *payload,
		  size_t len, char err[SPOOL_ERR_LEN])
{
	return spool_write(s, run_id, payload, len, true, err);
}

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

	r = dir_open(s->dfd, &d);
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
		if (has_suffix(de->d_name, SPOOL_TMP_EXT)) {
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
		if (!is_report(de->d_name, &st))
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
	r = fsync_fd(s->quarantine_fd);
	if (r >= 0)
		r = fsync_fd(s->dfd);
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

	if (!entry_name_ok(e->name)) {
		errf(err, "'%.63s' is not a spool file name", e->name);
		return -EINVAL;
	}
	fd = openat(s->dfd, e->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		errf(err, "cannot open '%s': %s", e->name, strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		errf(err, "cannot stat '%s': %s", e->name, strerror(-r));
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
		errf(err, "cannot read '%s': %s", e->name, strerror(-r));
		return r;
	}
	if (!header_ok(hdr, e->name, (uint64_t)st.st_size, &len, &crc, why,
		       sizeof(why)))
		goto bad;
	buf = malloc(len ? len : 1);
	if (!buf) {
		errf(err, "out of memory reading '%s' (%u bytes)", e->name,
		     len);
		return -ENOMEM;
	}
	r = pread_all(fd, buf, len, SPOOL_HDR_LEN);
	if (r < 0) {
		errf(err, "cannot read '%s': %s", e->name, strerror(-r));
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
		errf(err,
		     "damaged spool file '%s': %s (cannot quarantine it: %s)",
		     e->name, why, strerror(-r));
	else
		errf(err,
		     "damaged spool file '%s' moved to " QUARANTINE_DIR "/: %s",
		     e->name, why);
	return -EBADMSG;
}

int spool_ack(struct spool *s, const struct spool_entry *e)
{
	if (!entry_name_ok(e->name))
		return -EINVAL;
	/* already gone (another send acked it) is the same outcome */
	if (unlinkat(s->dfd, e->name, 0) < 0 && errno != ENOENT)
		return -errno;
	return fsync_fd(s->dfd);
}

int spool_reject(struct spool *s, const struct spool_entry *e,
		 const char *reason)
{
	char rname[96], rtmp[104];
	_cleanup_free_ char *text = NULL;
	int r;

	if (!entry_name_ok(e->name))
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
	r = write_tmp(s->rejected_fd, rtmp, text, strlen(text), "", 0);
	if (r < 0)
		return r;
	if (renameat(s->rejected_fd, rtmp, s->rejected_fd, rname) < 0) {
		r = -errno;
		unlinkat(s->rejected_fd, rtmp, 0);
		return r;
	}
	if (renameat(s->dfd, e->name, s->rejected_fd, e->name) < 0)
		return -errno;
	r = fsync_fd(s->rejected_fd);
	if (r >= 0)
		r = fsync_fd(s->dfd);
	return r;
}

static int count_files(int dfd, bool skip_reasons, unsigned *ret)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	unsigned n = 0;
	int r;

	r = dir_open(dfd, &d);
	if (r < 0)
		return r;
	while ((errno = 0, de = readdir(d))) {
		struct stat st;

		if (skip_reasons && (has_suffix(de->d_name, REASON_EXT) ||
				     has_suffix(de->d_name, ".tmp")))
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
		errf(err, "cannot read '%s': %s", path, strerror(-r));
		return r;
	}
	if (!S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > SPOOL_HDR_LEN + (uint64_t)UINT32_MAX) {
		errf(err, "'%s' is not a report file (%s)", path,
		     S_ISREG(st.st_mode) ? "too large" : "not a regular file");
		return -EINVAL;
	}
	size = (size_t)st.st_size;
	buf = malloc(size ? size : 1);
	if (!buf) {
		errf(err, "out of memory reading '%s' (%zu bytes)", path, size);
		return -ENOMEM;
	}
	r = pread_all(fd, buf, size, 0);
	if (r < 0) {
		errf(err, "cannot read '%s': %s", path, strerror(-r));
		return r;
	}
	if (size < 8 || memcmp(buf, SPOOL_MAGIC, 8)) {
		/* no spool header: the packed report itself */
		*ret = TAKE_PTR(buf);
		*ret_len = size;
		return 0;
	}
	if (size < SPOOL_HDR_LEN) {
		errf(err, "damaged spool file '%s': truncated: %zu bytes, shorter than the %d-byte header",
		     path, size, SPOOL_HDR_LEN);
		return -EBADMSG;
	}
	if (!header_ok(buf, NULL, size, &len, &crc, why, sizeof(why))) {
		errf(err, "damaged spool file '%s': %s", path, why);
		return -EBADMSG;
	}
	if ((uint32_t)crc32_z(0L, buf + SPOOL_HDR_LEN, len) != crc) {
		errf(err, "damaged spool file '%s': checksum mismatch", path);
		return -EBADMSG;
	}
	memmove(buf, buf + SPOOL_HDR_LEN, len);
	*ret = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}
