/* SPDX-License-Identifier: MIT */
/*
 * Delivery of fleet alerts (migration 005, schema/baseline.sql) to the alert hook: a
 * thread of `fleetbench-collector serve` with its own PostgreSQL
 * connection, woken by NOTIFY fleetbench_alerts, that runs the hook
 * command once per new fleet alert with the alert as JSON on standard
 * input, records the outcome in fleet_alerts and retries failures with
 * backoff. It logs what it does, as the serve loop does; ingestion never
 * waits for it. docs/alerts.md describes it.
 */
#ifndef FLEETBENCH_ALERT_H
#define FLEETBENCH_ALERT_H

struct alert_hook_opts {
	const char *dsn; /* libpq conninfo or URI; NULL or "": PG* variables */
	const char *command; /* run with /bin/sh -c */
	int timeout_ms; /* for one run of the command */
	int retry_ms; /* the first retry's delay, doubled up to an hour */
};

struct alert_hook;

/*
 * Copies o and starts the thread (which connects by itself, and again
 * whenever the connection is lost). Call it after the signals the serve
 * loop reads are blocked, so that the thread inherits the mask. Returns
 * NULL with errno set when the thread cannot be started.
 */
struct alert_hook *alert_hook_start(const struct alert_hook_opts *o);

/*
 * Lets a hook run in hand finish (at most its timeout), stops the thread
 * and frees h; NULL is fine.
 */
void alert_hook_stop(struct alert_hook *h);

#endif
