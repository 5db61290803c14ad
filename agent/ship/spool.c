/* SPDX-License-Identifier: MIT */
/*
 * The agent's durable spool: one checksummed file per report (spool.h).
 * This half opens the spool and writes reports into it; spool_read.c lists,
 * reads and checks them, and moves them on.
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

#include "cleanup.h"
#include "durable.h"
#include "fault.h"
#include "spool_fs.h"
#include "uuid_str.h"

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
			r = durable_fsync_parent(p);
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
		spool_errf(err, "no spool directory given");
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		spool_errf(err, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	s->dfd = s->rejected_fd = s->quarantine_fd = -1;
	s->limit = limit_bytes;
	subdir_fds[0] = &s->rejected_fd;
	subdir_fds[1] = &s->quarantine_fd;

	r = mkdir_p(dir);
	if (r < 0) {
		spool_errf(err, "cannot create spool directory '%s': %s", dir,
			   strerror(-r));
		goto err;
	}
	s->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dfd < 0) {
		r = -errno;
		spool_errf(err, "cannot open spool directory '%s': %s", dir,
			   strerror(-r));
		goto err;
	}
	for (size_t i = 0; i < ARRAY_SIZE(subdirs); i++) {
		r = open_subdir(s->dfd, subdirs[i]);
		if (r < 0) {
			spool_errf(err, "cannot open '%s/%s': %s", dir,
				   subdirs[i], strerror(-r));
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

/* Sums the sizes of the spooled reports. */
static int spool_sum(struct spool *s, uint64_t *ret)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	uint64_t sum = 0;
	int r;

	r = spool_dir_open(s->dfd, &d);
	if (r < 0)
		return r;
	while ((errno = 0, de = readdir(d))) {
		struct stat st;

		if (!spool_has_suffix(de->d_name, SPOOL_EXT))
			continue;
		if (fstatat(s->dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			return -errno;
		}
		if (spool_is_report(de->d_name, &st))
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
		spool_errf(err, "run id '%s' is not a canonical lowercase UUID",
			   run_id ? run_id : "(null)");
		return -EINVAL;
	}
	if (!payload && len) {
		spool_errf(err, "no payload");
		return -EINVAL;
	}
	if (len > UINT32_MAX) {
		spool_errf(err,
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
		spool_errf(err, "cannot lock the spool: %s", strerror(-r));
		return r;
	}

	if (fstatat(s->dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!replace) {
			spool_errf(err, "report %s is already spooled", run_id);
			r = -EEXIST;
			goto out;
		}
		if (!spool_is_report(name, &st)) {
			spool_errf(err, "'%s' is not a spooled report", name);
			r = -EINVAL;
			goto out;
		}
		old = (uint64_t)st.st_size;
	} else if (errno != ENOENT) {
		r = -errno;
		spool_errf(err, "cannot check '%s': %s", name, strerror(-r));
		goto out;
	} else if (replace) {
		spool_errf(err, "report %s is not spooled", run_id);
		r = -ENOENT;
		goto out;
	}
	r = spool_sum(s, &held);
	if (r < 0) {
		spool_errf(err, "cannot size the spool: %s", strerror(-r));
		goto out;
	}
	/* a replaced report's bytes are freed by the same rename */
	held -= old < held ? old : held;
	need = SPOOL_HDR_LEN + (uint64_t)len;
	if (s->limit && held + need > s->limit) {
		spool_errf(err,
			   "spool full: it holds %" PRIu64
			   " bytes, report %s needs %" PRIu64
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
		spool_errf(err, "cannot remove stale '%s': %s", tmp,
			   strerror(-r));
		goto out;
	}
	r = durable_write_tmp(s->dfd, tmp, hdr, sizeof(hdr), payload, len);
	if (r < 0) {
		spool_errf(err, "cannot write '%s': %s", tmp, strerror(-r));
		goto out;
	}
	/*
	 * a crash here leaves only the .tmp: the report was never spooled
	 * (replace: the old report stays, whole)
	 */
	fault_point("spool-before-rename");
	if (renameat(s->dfd, tmp, s->dfd, name) < 0) {
		r = -errno;
		spool_errf(err, "cannot rename '%s': %s", tmp, strerror(-r));
		unlinkat(s->dfd, tmp, 0);
		goto out;
	}
	/* the rename is durable only once the directory is */
	r = spool_fsync(s->dfd);
	if (r < 0)
		spool_errf(err, "cannot sync the spool directory: %s",
			   strerror(-r));
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
