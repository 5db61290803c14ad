/* SPDX-License-Identifier: MIT */
/*
 * The clocks, written once: CLOCK_MONOTONIC for durations and deadlines
 * (it does not jump when the wall clock is set), CLOCK_REALTIME for the
 * wall time a report or a row carries.
 */
#ifndef FLEETBENCH_CLOCK_H
#define FLEETBENCH_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t mono_ms(void)
{
	return mono_ns() / 1000000;
}

static inline double mono_s(void)
{
	return (double)mono_ns() * 1e-9;
}

/* milliseconds since the Unix epoch */
static inline int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
