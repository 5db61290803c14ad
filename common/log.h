/* SPDX-License-Identifier: MIT */
/* Logging for the main loops only: library-like modules return -errno. */
#ifndef FLEETBENCH_LOG_H
#define FLEETBENCH_LOG_H

/* Program name printed before every message; set once by main(). */
void log_init(const char *progname);

/* "prog: error: msg" on stderr. Always returns -1 for `return log_error(..)`. */
int log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
