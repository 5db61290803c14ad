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
	bool info; /* its lines are information, not warnings */
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

/* A line per key (a peer) at most once a minute, the repeats counted in
 * its next line; lines of distinct keys are limited by all (100 a
 * minute). The RATELIMIT_KEYS keys logged last are remembered. */
#define RATELIMIT_KEYS 64
struct ratelimit_key {
	char key[192];
	bool used;
	int64_t logged_ms;
	unsigned long stamp; /* the order keys were logged in */
	unsigned long suppressed;
};
struct ratelimit_keyed {
	struct ratelimit all; /* what: "handshakes"; info */
	unsigned long stamp;
	struct ratelimit_key keys[RATELIMIT_KEYS];
};

/*
 * Logs a warning (rl->info: an information line), at most 10 a minute
 * per rl; the next minute's first one is preceded by how many were not
 * logged. One thread per rl.
 */
void complain_limited(struct ratelimit *rl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Logs the line of key (a warning, or information with rk->all.info)
 * unless key's was logged less than a minute ago (then counted). One
 * thread per rk. */
void complain_keyed(struct ratelimit_keyed *rk, const char *key,
		    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
