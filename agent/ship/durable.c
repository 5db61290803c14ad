/* SPDX-License-Identifier: MIT */
/* Files that survive a crash (durable.h). */
#include "durable.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdio.h"

int durable_fsync_parent(const char *path)
{
	_cleanup_free_ char *p = strdup(path);
	_cleanup_close_ int fd = -1;
	char *slash;
	size_t n;

	if (!p)
		return -ENOMEM;
	n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
	slash = strrchr(p, '/');
	if (!slash)
		strcpy(p, ".");
	else
		slash[slash == p] = '\0'; /* "/x" has the parent "/" */
	fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return fsync(fd) < 0 ? -errno : 0;
}

int durable_write_tmp(int dfd, const char *tmp, const void *a, size_t alen,
		      const void *b, size_t blen)
{
	return durable_write_tmp_mode(dfd, tmp, 0600, a, alen, b, blen);
}

int durable_write_tmp_mode(int dfd, const char *tmp, mode_t mode,
			   const void *a, size_t alen, const void *b,
			   size_t blen)
{
	int fd, r;

	fd = openat(dfd, tmp,
		    O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	/* the umask may have taken bits that mode asks for */
	r = fchmod(fd, mode) < 0 ? -errno : 0;
	if (r >= 0)
		r = fd_write_all(fd, a, alen);
	if (r >= 0)
		r = fd_write_all(fd, b, blen);
	/* the data must be on disk before the rename makes it visible */
	if (r >= 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r >= 0)
		r = -errno;
	if (r < 0)
		unlinkat(dfd, tmp, 0);
	return r;
}
