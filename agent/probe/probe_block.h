/* SPDX-License-Identifier: MIT */
/* The pure parsers behind the block probe, exposed for unit tests. */
#ifndef FLEETBENCH_PROBE_BLOCK_H
#define FLEETBENCH_PROBE_BLOCK_H

#include "probe.h"

/* One /proc/self/mountinfo line; the strings point into the parsed text. */
struct block_mount {
	unsigned int major, minor;
	const char *mount_point; /* unescaped */
	const char *mount_options; /* field 6, per mount: "rw,noatime" */
	const char *fstype;
	const char *source; /* unescaped, "" when the kernel shows none */
	const char *super_options;
};

/*
 * Finds the mount holding the absolute, normalised path in mountinfo text:
 * the longest mount point that is path or a parent directory of it; of equal
 * mount points the later line wins (it is mounted on top). The text is split
 * and unescaped (\040 and the like) in place, and *ret points into it.
 * Returns 0; -ENOENT when no mount covers path; -EBADMSG when the text is
 * empty, does not end in a newline (truncated) or has a line that is not in
 * the mountinfo format, with *ret_line set to that line (1-based).
 */
int block_mountinfo_find(char *text, const char *path, struct block_mount *ret,
			 unsigned int *ret_line);

/*
 * The transport of block device `name` from the target of its /sys/block
 * link (NULL when unknown): "virtio", "nvme", "sata", "scsi", "usb", "xen",
 * "mmc", "loop", "zram", "dm", "md" or "other".
 */
const char *block_transport(const char *name, const char *link);

/*
 * Parses queue/scheduler: "none [mq-deadline] kyber" as a bracketed list,
 * and a lone name without brackets ("none", for queues that cannot have an
 * elevator) as that name selected. 0, -EBADMSG or -ENOMEM; *ret is written
 * only on success (probe_bracket_release() it).
 */
int block_parse_scheduler(const char *text, struct probe_bracket *ret);

#endif
