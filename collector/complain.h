/* SPDX-License-Identifier: MIT */
/*
 * Rate-limited logging for the serve loop: a condition that persists (a
 * database that stays down) and bursts of distinct events (rejected
 * reports, lost Acks) are logged without flooding the journal.
 */
#ifndef FLEETBENCH_COMPLAIN_H
#define FLEETBENCH_COMPLAIN_H

#include <stdbool.h>
#include <stdint.h>

/* collectd's c_complain: a condition that persists is logged when it
 * starts, then at growing intervals, and once when it ends. Zeroed: not
 * active. */
struct complaint {
	int64_t next_ms;
	int64_t interval_ms;
	unsigned long suppressed;
	bool active;
};

/* A burst of distinct events (systemd's ratelimit); what names them in
 * the line that counts those not logged ("rejected reports"). */
struct ratelimit {
	const char *what;
	int64_t window_ms;
	unsigned n;
	unsigned long suppressed;
};

/*
 * Logs an error for the condition c: when it starts, then again after
 * 10 s, 20 s, ... up to hourly, with the number of messages suppressed
 * in between.
 */
void complain(struct complaint *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The condition has ended: logs msg (info) if it was active. */
void complain_release(struct complaint *c, const char *msg);

/*
 * Logs a warning, at most 10 a minute per rl; the next minute's first
 * one is preceded by how many were not logged.
 */
void complain_limited(struct ratelimit *rl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
