/* SPDX-License-Identifier: MIT */
/*
 * The parsers of the host probe (probe_host.c), exposed for its unit test.
 */
#ifndef FLEETBENCH_PROBE_HOST_H
#define FLEETBENCH_PROBE_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probe.h"

/*
 * Counts the entries of a kernel CPU or node list ("0-3,8-11" gives 8): ids
 * or "lo-hi" ranges separated by commas, ascending and not overlapping, as
 * the kernel prints them, with nothing around them. Returns 0 or -EBADMSG
 * ("", "0-", "3-1", "1,,2", "1,0", white space, garbage); *ret is written
 * only on success.
 */
int host_parse_cpulist(const char *s, int64_t *ret);

/*
 * Finds "key<tabs>: value" in the first block of /proc/cpuinfo text (up to
 * the first blank line, i.e. the first processor) and copies the value,
 * trimmed, into buf. Returns 0, -ENOENT when the block has no such line, or
 * -EBADMSG when the value is empty, does not fit, or its line is cut off
 * before the newline.
 */
int host_cpuinfo_field(const char *text, const char *key, char *buf,
		       size_t size);

#endif
