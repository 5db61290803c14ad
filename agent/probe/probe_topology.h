/* SPDX-License-Identifier: MIT */
/*
 * vCPU topology (probe_topology.c): the CPU lists of sysfs, parsed and
 * printed as the kernel prints them, for the probe, core_latency and tests.
 */
#ifndef FLEETBENCH_PROBE_TOPOLOGY_H
#define FLEETBENCH_PROBE_TOPOLOGY_H

#include <stddef.h>

/* CPU numbers a list may hold: the kernel's NR_CPUS is at most 8192. */
#define TOPOLOGY_MAX_CPU 65535

/*
 * Parses a sysfs CPU list ("0-3,8,10-11", as in
 * /sys/devices/system/cpu/online or a cache's shared_cpu_list; white space
 * around it is ignored, "" is no CPU) into a new array of its CPUs in
 * *ret, ascending and without duplicates, and their count in *ret_n (the
 * caller frees *ret; NULL when there is none). Returns 0, -EBADMSG for
 * anything else (a range that runs backwards, a number above
 * TOPOLOGY_MAX_CPU, a stray character) or -ENOMEM; *ret and *ret_n are
 * written only on success.
 */
int topology_cpulist_parse(const char *text, int **ret, size_t *ret_n);

/*
 * Prints the n CPUs of cpus (ascending) as the kernel does: runs of two
 * or more as ranges, joined by commas ("0-3,8"; "0-1", not "0,1"). Returns
 * the length, or -ENOSPC when it does not fit in size bytes (buf then
 * holds a cut string).
 */
int topology_cpulist_format(const int *cpus, size_t n, char *buf,
			    size_t size);

#endif
