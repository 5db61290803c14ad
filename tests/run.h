/* SPDX-License-Identifier: MIT */
/* Runs a program for a test and captures its output and exit status. */
#ifndef FLEETBENCH_TEST_RUN_H
#define FLEETBENCH_TEST_RUN_H

#include <sys/types.h>

struct run_result {
	int status; /* exit status, or 128 + signal */
	char *out; /* standard output, NUL-terminated */
	char *err; /* standard error, NUL-terminated */
};

/*
 * Runs argv (argv[0] is a path) with stdin from /dev/null; when uid is not
 * -1 the child drops to that uid/gid first. Returns 0 or -errno.
 */
int run_program(char *const argv[], uid_t uid, struct run_result *ret);

void run_result_release(struct run_result *r);

#endif
