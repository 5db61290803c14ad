/* SPDX-License-Identifier: MIT */
/* The kernel command line parser of probe_kernel.c: C values, and the
 * probe items made from them. */
#ifndef FLEETBENCH_PROBE_KERNEL_H
#define FLEETBENCH_PROBE_KERNEL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A hugepages= on the command line: its text, the hugepagesz= before it
 * ("default" when none) and the page count it gives, when it is one. */
struct kernel_cmdline_pool {
	const char *size;
	const char *count;
	int64_t pages; /* the total over "node:N,..." */
	bool valid; /* count is N or "node:N,..." */
};

/* The huge page parameters of a kernel command line; every string points
 * into buf. */
struct kernel_cmdline {
	char *buf;
	const char *thp; /* transparent_hugepage=, the last; NULL: not given */
	const char *default_size; /* default_hugepagesz=, the last */
	const char *psi; /* psi=, the last; NULL: not given (probe_psi.c) */
	const char **sizes; /* every hugepagesz=, in order */
	size_t n_sizes, sizes_cap;
	struct kernel_cmdline_pool *pools; /* every hugepages=, in order */
	size_t n_pools, pools_cap;
};

/*
 * Splits a kernel command line the way the kernel does (white space
 * separates, double quotes group, "--" ends the kernel's part) into *ret
 * (free with kernel_cmdline_free()). Returns 0 or -ENOMEM.
 */
int kernel_cmdline_parse(const char *cmdline, struct kernel_cmdline *ret);
void kernel_cmdline_free(struct kernel_cmdline *c);

/*
 * kernel_cmdline_parse(), then the probe's cmdline_params items: sets on
 * out the huge page parameters: transparent_hugepage and default_hugepagesz
 * (the last value given, or null), hugepagesz and hugepages (every value in
 * order) and hugepage_pools ({ size, count } per hugepages=, size being the
 * hugepagesz= before it or "default"). A count that is neither N nor
 * "node:N,..." is { "unknown": "malformed: ..." }. Returns 0 or -ENOMEM.
 */
int kernel_parse_cmdline(const char *cmdline, struct json_object *out);

#endif
