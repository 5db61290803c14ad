/* SPDX-License-Identifier: MIT */
/*
 * Readers and parsers of the host probe (probe_host.c), shared with the
 * kernel probe and exposed for their unit test.
 */
#ifndef FLEETBENCH_PROBE_HOST_H
#define FLEETBENCH_PROBE_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probe.h"

/*
 * Reads a whole procfs/sysfs text file below the probe root into *ret
 * (caller frees). The kernel ends every such file with a newline, so one
 * missing means it was cut short. Returns 0 or -errno; -EBADMSG when the
 * file is empty, holds a NUL byte, is truncated or (one_line) has more than
 * one line, with *reason saying which ("is empty", "is truncated", ...).
 */
int host_read_text(struct probe_ctx *ctx, const char *path, bool one_line,
		   char **ret, const char **reason);

/* s without the white space around it (cut in place). */
char *host_trim(char *s);

/*
 * Sets key to the trimmed content of a one-line file, or to unknown with
 * the reason ("absent", "malformed: <path> is empty", ...).
 */
void host_item_line(struct probe_ctx *ctx, struct json_object *out,
		    const char *key, const char *path);

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
