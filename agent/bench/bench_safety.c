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

#include "bench_internal.h"
#include "bench_io.h"
#include "cleanup.h"
#include "probe.h"

/* The room kept free beside what a benchmark takes: memory 25% of
 * MemAvailable (at least 256 MiB), disk 10% of the free space (at least
 * 512 MiB). */
static uint64_t memory_margin(uint64_t avail)
{
	return avail / 4 > (256ULL << 20) ? avail / 4 : 256ULL << 20;
}

static uint64_t disk_margin(uint64_t avail)
{
	return avail / 10 > (512ULL << 20) ? avail / 10 : 512ULL << 20;
}

/* MemAvailable in bytes, or -ENOENT when it cannot be read. */
static int memory_available(struct bench_run *run, uint64_t *ret)
{
	_cleanup_free_ char *meminfo = NULL;
	char val[64];
	unsigned long long avail_kb;

	if (bench_read_file(run, "/proc/meminfo", &meminfo) < 0 ||
	    probe_kv(meminfo, "MemAvailable", val, sizeof(val)) < 0 ||
	    sscanf(val, "%llu kB", &avail_kb) != 1)
		return -ENOENT;
	*ret = (uint64_t)avail_kb << 10;
	return 0;
}

/* dir's free space in bytes, or -errno with why in err. */
static int disk_available(const char *dir, uint64_t *ret, char *err,
			  size_t errlen)
{
	struct statvfs sv;

	if (statvfs(dir, &sv) < 0) {
		int r = -errno;

		snprintf(err, errlen, "cannot use directory '%s': %s", dir,
			 strerror(-r));
		return r;
	}
	*ret = (uint64_t)sv.f_bavail * sv.f_frsize;
	return 0;
}

int bench_check_memory(struct bench_run *run, uint64_t bytes, char *err,
		       size_t errlen)
{
	uint64_t avail = 0;

	if (memory_available(run, &avail) < 0) {
		snprintf(err, errlen,
			 "refused: MemAvailable unknown, cannot check that %llu MiB fit",
			 (unsigned long long)(bytes >> 20));
		return -ENOMEM;
	}
	if (bytes + memory_margin(avail) > avail) {
		snprintf(err, errlen,
			 "refused: %llu MiB does not fit in MemAvailable %llu MiB with a %llu MiB margin",
			 (unsigned long long)(bytes >> 20),
			 (unsigned long long)(avail >> 20),
			 (unsigned long long)(memory_margin(avail) >> 20));
		return -ENOMEM;
	}
	return 0;
}

int bench_check_space(const char *dir, uint64_t bytes, char *err,
		      size_t errlen)
{
	uint64_t avail = 0;
	int r = disk_available(dir, &avail, err, errlen);

	if (r < 0)
		return r;
	if (bytes + disk_margin(avail) > avail) {
		snprintf(err, errlen,
			 "refused: a %llu MiB file does not fit in the %llu MiB free in '%s' with a %llu MiB margin",
			 (unsigned long long)(bytes >> 20),
			 (unsigned long long)(avail >> 20), dir,
			 (unsigned long long)(disk_margin(avail) >> 20));
		return -ENOSPC;
	}
	return 0;
}

int bench_check_room(const struct bench_params *p, const char *only,
		     char *err, size_t errlen)
{
	struct bench_run run = {
		.params = p,
		.popts = { .root = p->root ? p->root : "/" },
	};
	_cleanup_close_ int root_fd = -1;
	const char *mem_by = NULL, *disk_by = NULL;
	uint64_t mem = 0, disk = 0, avail = 0;
	int r;

	for (size_t i = 0; i < bench_count(); i++) {
		const struct bench_ops *ops = bench_get(i);
		uint64_t m = 0, d = 0;

		if (!ops->needs || !bench_selected(ops, p->profile, only))
			continue;
		ops->needs(p, &m, &d);
		if (m > mem) {
			mem = m;
			mem_by = ops->name;
		}
		if (d > disk) {
			disk = d;
			disk_by = ops->name;
		}
	}
	run.pctx.opts = &run.popts;
	root_fd = open(run.popts.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	run.pctx.root_fd = root_fd;
	/* an unknown MemAvailable: each benchmark says so when it checks */
	if (mem_by && root_fd >= 0 && memory_available(&run, &avail) == 0 &&
	    mem + memory_margin(avail) > avail) {
		snprintf(err, errlen,
			 "refused: profile %s needs %llu MiB of memory at once (%s) and a %llu MiB margin, but MemAvailable is %llu MiB",
			 p->profile, (unsigned long long)(mem >> 20), mem_by,
			 (unsigned long long)(memory_margin(avail) >> 20),
			 (unsigned long long)(avail >> 20));
		return -ENOMEM;
	}
	if (!disk_by)
		return 0;
	r = disk_available(io_work_dir(p), &avail, err, errlen);
	if (r < 0)
		return r;
	if (disk + disk_margin(avail) > avail) {
		snprintf(err, errlen,
			 "refused: profile %s needs %llu MiB of disk in '%s' (%s) and a %llu MiB margin, but %llu MiB are free there",
			 p->profile, (unsigned long long)(disk >> 20),
			 io_work_dir(p), disk_by,
			 (unsigned long long)(disk_margin(avail) >> 20),
			 (unsigned long long)(avail >> 20));
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
