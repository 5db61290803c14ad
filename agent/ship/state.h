/* SPDX-License-Identifier: MIT */
/*
 * The agent's state directory: the kernel of the last report the collector
 * stored (COMMITTED or DUPLICATE), so that `run --if-kernel-changed` can
 * tell a host that booted a new kernel from one that only rebooted. One
 * small JSON file, STATE_FILE, replaced atomically (a temporary file,
 * fsync, rename, fsync of the directory): after a crash it holds the old
 * state or the new one, whole. Nothing here logs; errors come back as
 * -errno with the reason in err.
 */
#ifndef FLEETBENCH_STATE_H
#define FLEETBENCH_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STATE_ERR_LEN 256
#define STATE_FILE "last-delivered.json"
/* a release and a version at the wire's limits, escaped, fit */
#define STATE_MAX_BYTES (128u << 10)

/* The kernel of the last delivered report, as STATE_FILE holds it. */
struct state {
	char *kernel_release;
	char *kernel_version; /* "" when the report had none */
	char *run_id; /* the report's */
	int64_t delivered_unix_ms; /* when its Ack came */
};

/*
 * The state of the packed Report in report[0..len) (as send's events carry
 * it), delivered at delivered_unix_ms, into *ret (state_release() it).
 * Returns 0; -EBADMSG when it does not decode as a Report (err says why);
 * -ENOMEM. A Report that decodes but fails today's validation still gives
 * its kernel: the collector has stored it.
 */
int state_from_report(const void *report, size_t len, int64_t delivered_unix_ms,
		      struct state *ret, char err[STATE_ERR_LEN]);

/*
 * Writes st as dir/STATE_FILE, atomically and durably, under an flock of
 * dir (two agents writing at once each replace the file whole). dir is
 * created, mode 0700, when it is missing, but not its parents: the agent
 * makes no directory elsewhere. On failure nothing is left behind but the
 * old state. Returns 0 or -errno, err saying what failed.
 */
int state_write(const char *dir, const struct state *st,
		char err[STATE_ERR_LEN]);

/*
 * Reads dir/STATE_FILE into *ret (state_release() it), written only on
 * success. Returns 0; -ENOENT when there is none (no report delivered
 * yet); -EBADMSG when it is damaged: not a JSON object of at most
 * STATE_MAX_BYTES with a non-empty string kernel_release, a string
 * kernel_version, a run_id that is a UUID and an integer
 * delivered_unix_ms (err names what is wrong); other -errno of reading.
 */
int state_read(const char *dir, struct state *ret, char err[STATE_ERR_LEN]);

/* Frees the strings of st (NULL fields are fine) and zeroes it. */
void state_release(struct state *st);

/*
 * Whether the running kernel, release and version as uname(2) gives them,
 * is the one of st: both strings equal. A NULL release or version is never
 * equal.
 */
bool state_kernel_unchanged(const struct state *st, const char *release,
			    const char *version);

#endif
