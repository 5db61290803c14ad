/* SPDX-License-Identifier: MIT */
/*
 * What keeps a benchmark from hurting its host: memory and disk space
 * checked with a margin before a buffer or a file is made, and work files
 * that nothing leaves behind.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "probe.h"

int bench_check_memory(struct bench_run *run, uint64_t bytes, char *err,
		       size_t errlen)
{
	_cleanup_free_ char *meminfo = NULL;
	char val[64];
	unsigned long long avail_kb;
	uint64_t avail, margin;

	if (bench_read_file(run, "/proc/meminfo", &meminfo) < 0 ||
	    probe_kv(meminfo, "MemAvailable", val, sizeof(val)) < 0 ||
	    sscanf(val, "%llu kB", &avail_kb) != 1) {
		snprintf(err, errlen,
			 "refused: MemAvailable unknown, cannot check that %llu MiB fit",
			 (unsigned long long)(bytes >> 20));
		return -ENOMEM;
	}
	avail = (uint64_t)avail_kb << 10;
	margin = avail / 4 > (256ULL << 20) ? avail / 4 : 256ULL << 20;
	if (bytes + margin > avail) {
		snprintf(err, errlen,
			 "refused: %llu MiB does not fit in MemAvailable %llu MiB with a %llu MiB margin",
			 (unsigned long long)(bytes >> 20),
			 (unsigned long long)(avail >> 20),
			 (unsigned long long)(margin >> 20));
		return -ENOMEM;
	}
	return 0;
}

int bench_check_space(const char *dir, uint64_t bytes, char *err,
		      size_t errlen)
{
	struct statvfs sv;
	uint64_t avail, margin;

	if (statvfs(dir, &sv) < 0) {
		int r = -errno;

		snprintf(err, errlen, "cannot use directory '%s': %s", dir,
			 strerror(-r));
		return r;
	}
	avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	margin = avail / 10 > (512ULL << 20) ? avail / 10 : 512ULL << 20;
	if (bytes + margin > avail) {
		snprintf(err, errlen,
			 "refused: a %llu MiB file does not fit in the %llu MiB free in '%s' with a %llu MiB margin",
			 (unsigned long long)(bytes >> 20),
			 (unsigned long long)(avail >> 20), dir,
			 (unsigned long long)(margin >> 20));
		return -ENOSPC;
	}
	return 0;
}

int bench_tmpfile(const char *dir, int flags)
{
	char path[4096];
	int fd;

	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC | flags, 0600);
	if (fd >= 0)
		return fd;
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != ENOENT)
		return -errno;
	/* No O_TMPFILE here: a named file, unlinked before any I/O. */
	for (int i = 0; i < 100; i++) {
		snprintf(path, sizeof(path), "%s/.fleetbench-%d-%d.tmp", dir,
			 (int)getpid(), i);
		fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | flags,
			  0600);
		if (fd >= 0) {
			unlink(path);
			return fd;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}
