/* SPDX-License-Identifier: MIT */
/*
 * Minimal test helpers (collectd's src/testing.h, liburing's test/helpers.h).
 * Each CHECK counts a pass or prints the failure with file and line; a test
 * ends with `return check_summary();`, which prints "N passed, N failed".
 */
#ifndef FLEETBENCH_CHECK_H
#define FLEETBENCH_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int check_pass_, check_fail_;

#define CHECK_(cond, fmt, ...)                                               \
	do {                                                                 \
		if (cond) {                                                  \
			check_pass_++;                                       \
		} else {                                                     \
			check_fail_++;                                       \
			fprintf(stderr, "FAIL %s:%d: " fmt "\n", __FILE__,   \
				__LINE__, __VA_ARGS__);                      \
		}                                                            \
	} while (0)

#define CHECK(cond) CHECK_((cond), "%s", #cond)

#define CHECK_EQ_INT(actual, expected)                                       \
	do {                                                                 \
		long long a_ = (long long)(actual);                          \
		long long e_ = (long long)(expected);                        \
		CHECK_(a_ == e_, "%s == %lld, expected %lld", #actual, a_,   \
		       e_);                                                  \
	} while (0)

#define CHECK_EQ_STR(actual, expected)                                       \
	do {                                                                 \
		const char *a_ = (actual);                                   \
		const char *e_ = (expected);                                 \
		CHECK_(a_ && e_ && !strcmp(a_, e_),                          \
		       "%s == \"%s\", expected \"%s\"", #actual,             \
		       a_ ? a_ : "(null)", e_ ? e_ : "(null)");              \
	} while (0)

/* A call that returns >= 0 on success and -errno on failure. */
#define CHECK_OK(expr)                                                       \
	do {                                                                 \
		long long r_ = (long long)(expr);                            \
		CHECK_(r_ >= 0, "%s returned %lld (%s)", #expr, r_,          \
		       r_ < 0 ? strerror((int)-r_) : "ok");                  \
	} while (0)

static inline int check_summary(void)
{
	printf("%d passed, %d failed\n", check_pass_, check_fail_);
	return check_fail_ ? 1 : 0;
}

#endif
