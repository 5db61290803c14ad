/* SPDX-License-Identifier: MIT */
/* Runs a program for a test and captures its output and exit status. */
#ifndef FLEETBENCH_TEST_RUN_H
#define FLEETBENCH_TEST_RUN_H

#include <stdlib.h>
#include <sys/types.h>

#include "check.h"

struct run_result {
	int status; /* exit status, or 128 + signal */
	char *out; /* standard output, NUL-terminated */
	char *err; /* standard error, NUL-terminated */
};

/*
 * Runs argv (argv[0] is a path) with stdin from /dev/null; when uid is not
 * -1 the child drops to that uid/gid first and runs a copy of argv[0] made
 * in a directory under /tmp that any user can reach (removed afterwards):
 * the build tree may be under a directory closed to others. Returns 0 or
 * -errno.
 */
int run_program(char *const argv[], uid_t uid, struct run_result *ret);

void run_result_release(struct run_result *r);

/*
 * RUN_PROGRAM(path, res, uid, args...): run_program() of path with these
 * arguments (the macro ends the list with NULL) into res, as a check: a
 * program that cannot be started fails the test.
 */
#define RUN_PROGRAM(path, res, uid, ...)                                  \
	do {                                                              \
		char *argv_[] = { (char *)(path), __VA_ARGS__, NULL };    \
		CHECK_OK(run_program(argv_, (uid), (res)));               \
	} while (0)

/* RUN_AGENT(res, uid, args...): RUN_PROGRAM() of $AGENT (set by ctest). */
#define RUN_AGENT(res, uid, ...)                                          \
	RUN_PROGRAM(getenv("AGENT"), (res), (uid), __VA_ARGS__)

#endif
