/* SPDX-License-Identifier: MIT */
/* The file-system helpers both halves of the spool use (spool_fs.h). */
#include "spool_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"

void spool_errf(char err[SPOOL_ERR_LEN], const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(err, SPOOL_ERR_LEN, fmt, ap);
	va_end(ap);
}

bool spool_has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

bool spool_entry_name_ok(const char *name)
{
	size_t n = strnlen(name, ENTRY_NAME_LEN);

	return n > strlen(SPOOL_EXT) && n < ENTRY_NAME_LEN &&
	       !strchr(name, '/') && spool_has_suffix(name, SPOOL_EXT);
}

int spool_fsync(int fd)
{
	return fsync(fd) < 0 ? -errno : 0;
}

bool spool_is_report(const char *name, const struct stat *st)
{
	return S_ISREG(st->st_mode) && spool_has_suffix(name, SPOOL_EXT) &&
	       strlen(name) < ENTRY_NAME_LEN;
}

int spool_dir_open(int dfd, DIR **ret)
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
