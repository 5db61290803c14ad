/* SPDX-License-Identifier: MIT */
/*
 * The raw kernel and CPU interfaces fleetbench calls directly (liburing's
 * src/syscall.h, fio's os/os-linux.h). Everything here returns -errno.
 */
#ifndef FLEETBENCH_SYS_H
#define FLEETBENCH_SYS_H

#include <linux/io_uring.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Executes CPUID for leaf/subleaf into ret[] = {eax, ebx, ecx, edx}.
 * Returns 0, or -ENOTSUP where the architecture has no CPUID or the leaf is
 * above the maximum the CPU reports.
 */
int sys_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t ret[4]);

/* io_uring_setup(2): a ring fd, or -errno. */
int sys_io_uring_setup(uint32_t entries, struct io_uring_params *p);

/* io_uring_register(2): >= 0, or -errno. */
int sys_io_uring_register(int fd, unsigned int opcode, void *arg,
			  unsigned int nr_args);

/*
 * madvise(2) over [addr, addr + len): MADV_HUGEPAGE when huge, else
 * MADV_NOHUGEPAGE. 0 or -errno (-EINVAL: no THP in this kernel).
 */
int sys_madvise_thp(void *addr, size_t len, bool huge);

/*
 * mmap(2) of len bytes of private anonymous memory into *ret. With
 * hugetlb_page_size 0 the mapping uses normal pages; else MAP_HUGETLB with
 * that huge page size (a power of two: 2 MiB, 1 GiB), so len must be a
 * multiple of it. 0 or -errno.
 */
int sys_mmap_anon(size_t len, size_t hugetlb_page_size, void **ret);

/*
 * memfd_create(2) of an anonymous file named name (close-on-exec): shmem,
 * or with hugetlb_page_size (a power of two: 2 MiB, 1 GiB) hugetlbfs in
 * pages of that size (MFD_HUGETLB). It lives until its last descriptor and
 * mapping are gone: nothing is left in any directory. An fd or -errno.
 */
int sys_memfd(const char *name, size_t hugetlb_page_size);

/*
 * pidfd_open(2): a descriptor (close-on-exec) that polls readable once
 * process pid has ended, or -errno (-ENOSYS before Linux 5.3).
 */
int sys_pidfd_open(pid_t pid);

struct perf_event_attr;

/*
 * perf_event_open(2) with PERF_FLAG_FD_CLOEXEC added to flags: a counter
 * descriptor, or -errno (-ENOENT or -EOPNOTSUPP where the CPU or the
 * hypervisor offers no such event, -EACCES under perf_event_paranoid).
 */
int sys_perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu,
			int group_fd, unsigned long flags);

#endif
