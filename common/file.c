/* SPDX-License-Identifier: MIT */
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "cleanup.h"

ssize_t read_full_fd(int fd, size_t max, char **ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t cap = 0, len = 0;

	for (;;) {
		ssize_t n;

		if (len + 1 >= cap) {
			/* up to max + 2: room for max bytes, one more to see
			 * that the file goes on, and the NUL */
			size_t ncap = cap ? cap * 2 : 4096;
			char *nbuf;

			if (ncap > max + 2)
				ncap = max + 2;
			if (ncap <= cap)
				return -EFBIG;
			nbuf = realloc(buf, ncap);
			if (!nbuf)
				return -ENOMEM;
			buf = nbuf;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > max)
		return -EFBIG;
	buf[len] = '\0';
	*ret = TAKE_PTR(buf);
	return (ssize_t)len;
}

ssize_t read_full_fileat(int dirfd, const char *path, size_t max, char **ret)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return read_full_fd(fd, max, ret);
}

ssize_t read_full_file(const char *path, size_t max, char **ret)
{
	return read_full_fileat(AT_FDCWD, path, max, ret);
}
