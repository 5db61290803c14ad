/* SPDX-License-Identifier: MIT */
/* Raw syscalls and CPU instructions, converted to -errno once, here. */
#include "sys.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

int sys_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t ret[4])
{
#if defined(__x86_64__) || defined(__i386__)
	/*
	 * Hypervisor leaves (0x40000000..) are not covered by the basic or
	 * extended maximum, so they are executed unconditionally: a CPU
	 * without a hypervisor returns zeros or the highest basic leaf there.
	 */
	if (leaf < 0x40000000u || leaf >= 0x80000000u) {
		unsigned int max = __get_cpuid_max(leaf & 0x80000000u, NULL);

		if (max == 0 || leaf > max)
			return -ENOTSUP;
	}
	__cpuid_count(leaf, subleaf, ret[0], ret[1], ret[2], ret[3]);
	return 0;
#else
	(void)leaf;
	(void)subleaf;
	(void)ret;
	return -ENOTSUP;
#endif
}

int sys_io_uring_setup(uint32_t entries, struct io_uring_params *p)
{
	long r = syscall(__NR_io_uring_setup, entries, p);

	return r < 0 ? -errno : (int)r;
}

int sys_io_uring_register(int fd, unsigned int opcode, void *arg,
			  unsigned int nr_args)
{
	long r = syscall(__NR_io_uring_register, fd, opcode, arg, nr_args);

	return r < 0 ? -errno : (int)r;
}

int sys_pidfd_open(pid_t pid)
{
#ifdef __NR_pidfd_open
	long r = syscall(__NR_pidfd_open, pid, 0);

	return r < 0 ? -errno : (int)r;
#else
	(void)pid;
	return -ENOSYS;
#endif
}

int sys_perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu,
			int group_fd, unsigned long flags)
{
	long r = syscall(__NR_perf_event_open, attr, pid, cpu, group_fd,
			 flags | PERF_FLAG_FD_CLOEXEC);

	return r < 0 ? -errno : (int)r;
}

int sys_madvise_thp(void *addr, size_t len, bool huge)
{
	return madvise(addr, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) < 0 ?
		       -errno :
		       0;
}

int sys_mmap_anon(size_t len, size_t hugetlb_page_size, void **ret)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS;
	void *p;

	if (hugetlb_page_size) {
		if (hugetlb_page_size & (hugetlb_page_size - 1))
			return -EINVAL;
		/* MAP_HUGE_* encodes log2 of the page size. */
		flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB |
			(__builtin_ctzll(hugetlb_page_size) << MAP_HUGE_SHIFT);
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	*ret = p;
	return 0;
}

int sys_memfd(const char *name, size_t hugetlb_page_size)
{
	unsigned int flags = MFD_CLOEXEC;
	int fd;

	if (hugetlb_page_size) {
		if (hugetlb_page_size & (hugetlb_page_size - 1))
			return -EINVAL;
		/* MFD_HUGE_* encodes log2 of the page size at MAP_HUGE_SHIFT
		 * (linux/memfd.h: MFD_HUGE_SHIFT is the same 26) */
		flags |= MFD_HUGETLB | ((unsigned int)__builtin_ctzll(
						hugetlb_page_size)
					<< MAP_HUGE_SHIFT);
	}
	fd = memfd_create(name, flags);
	return fd < 0 ? -errno : fd;
}
