/* SPDX-License-Identifier: MIT */
/* The kernel command line parser of probe_kernel.c, exposed for its test. */
#ifndef FLEETBENCH_PROBE_KERNEL_H
#define FLEETBENCH_PROBE_KERNEL_H

#include <json-c/json.h>

/*
 * Splits a kernel command line the way the kernel does (white space
 * separates, double quotes group, "--" ends the kernel's part) and sets on
 * out the huge page parameters: transparent_hugepage and default_hugepagesz
 * (the last value given, or null), hugepagesz and hugepages (every value in
 * order) and hugepage_pools ({ size, count } per hugepages=, size being the
 * hugepagesz= before it or "default"). A count that is neither N nor
 * "node:N,..." is { "unknown": "malformed: ..." }. Returns 0 or -ENOMEM.
 */
int kernel_parse_cmdline(const char *cmdline, struct json_object *out);

#endif
