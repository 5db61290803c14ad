/* SPDX-License-Identifier: MIT */
/*
 * The collector's push of fleet alerts to Prometheus Alertmanager
 * (alertmanager_url): a thread of `fleetbench-collector serve` with its own
 * PostgreSQL connection that sends the open fleet alerts every interval,
 * firing for four intervals, and those acknowledged in that window as
 * resolved (common/alertmanager.h); woken early by NOTIFY
 * fleetbench_alerts for a new alert. It logs what it does, failures
 * rate-limited; ingestion never waits for it. docs/alerts.md,
 * "Alertmanager".
 */
#ifndef FLEETBENCH_AM_PUSH_H
#define FLEETBENCH_AM_PUSH_H

struct am_push_opts {
	const char *dsn; /* libpq conninfo or URI; NULL or "": PG* variables */
	const char *url; /* Alertmanager's base URL, checked by am_url_check() */
	int interval_ms; /* between two pushes */
	int timeout_ms; /* for one POST */
};

struct am_pusher;

/*
 * Copies o and starts the thread (which connects by itself, and again
 * whenever the connection is lost). Call am_init() first, and this after
 * the signals the serve loop reads are blocked. Returns NULL with errno
 * set when the thread cannot be started.
 */
struct am_pusher *am_pusher_start(const struct am_push_opts *o);

/* Lets a POST in hand finish (at most its timeout), stops the thread and
 * frees p; NULL is fine. */
void am_pusher_stop(struct am_pusher *p);

#endif
