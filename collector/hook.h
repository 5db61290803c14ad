/* SPDX-License-Identifier: MIT */
/*
 * Runs a hook command: a shell command line given its input on standard
 * input, bounded in time, judged by its exit status. Nothing here logs.
 */
#ifndef FLEETBENCH_HOOK_H
#define FLEETBENCH_HOOK_H

#include <stddef.h>

#define HOOK_ERR_LEN 256
/* after SIGTERM at the timeout, how long the hook has before SIGKILL */
#define HOOK_KILL_GRACE_MS 1000

/*
 * Runs `/bin/sh -c command` in a process group of its own, with len bytes
 * of input on its standard input (then end of file), its standard output
 * sent to standard error, default signal dispositions and an empty signal
 * mask, and the environment plus the NAME=VALUE strings of env (NULL
 * terminated; NULL for none). At timeout_ms after the start the group gets
 * SIGTERM, and SIGKILL HOOK_KILL_GRACE_MS later. Returns 0 when the command
 * exited with status 0; -ETIMEDOUT when it was stopped at the timeout;
 * -EPROTO when it exited with another status or was killed by a signal; or
 * -errno when it could not be started. err says what happened. A command
 * that exits without reading all of its input is judged by its exit
 * status alone: the caller must ignore SIGPIPE (the collector does).
 */
int hook_run(const char *command, const char *const *env, const void *input,
	     size_t len, int timeout_ms, char err[HOOK_ERR_LEN]);

#endif
