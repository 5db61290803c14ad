/* SPDX-License-Identifier: MIT */
/*
 * Fleet alerts pushed to Prometheus Alertmanager's API v2: the alerts to
 * send, read from the database (fleetbench_alertmanager_alerts(),
 * schema/functions/55_alertmanager.sql) into one JSON body, and the POST
 * of that body to URL/api/v2/alerts with libcurl. Written once for the
 * collector's push thread (collector/am_push.c) and `fleetbench alerts
 * push` (cli/alerts.c). Nothing here logs: errors come back as -errno with
 * the reason in the caller's err buffer. docs/alerts.md, "Alertmanager".
 */
#ifndef FLEETBENCH_ALERTMANAGER_H
#define FLEETBENCH_ALERTMANAGER_H

#include <stddef.h>
#include <stdint.h>

#include "pg.h"

#define AM_ERR_LEN 512
/*
 * An open alert is sent firing until this many push intervals from now:
 * a sender that stops lets Alertmanager resolve its alerts by then, and
 * an alert acknowledged in that window is sent resolved.
 */
#define AM_VALID_INTERVALS 4

/*
 * Once per process, before any thread uses the functions below
 * (curl_global_init). Returns 0 or -ENOMEM.
 */
int am_init(void);

/* Undoes am_init(), after every thread is done with them. */
void am_cleanup(void);

/*
 * Checks that url is an absolute http:// or https:// URL with a host and
 * no query or fragment (a path is kept: an Alertmanager behind a route
 * prefix). Returns 0, or -EINVAL with the reason in err.
 */
int am_url_check(const char *url, char err[AM_ERR_LEN]);

/* The alerts of one push. */
struct am_alerts {
	char *body; /* a JSON array of postable alerts */
	size_t firing; /* open fleet alerts, sent firing */
	size_t resolved; /* acknowledged ones, sent resolved */
};

/*
 * Reads the open fleet alerts, firing until valid_ms from now, and those
 * acknowledged in the last resolved_ms, resolved at their acknowledgement,
 * into ret (am_alerts_release() it). Returns 0, or pg_query()'s error
 * (-EIO: the connection is lost) with the reason in err, or -ENOMEM or
 * -EBADMSG (a row that is not JSON).
 */
int am_alerts_read(struct pg *pg, int64_t valid_ms, int64_t resolved_ms,
		   struct am_alerts *ret, char err[AM_ERR_LEN]);

/* Frees what am_alerts_read() put in a; a zeroed one is fine. */
void am_alerts_release(struct am_alerts *a);

/*
 * POSTs body (a JSON array of postable alerts) to url/api/v2/alerts,
 * giving up after timeout_ms. Returns 0 on a 2xx answer; -EPROTO for
 * another HTTP status, with the status and the start of the answer in
 * err; -ETIMEDOUT, -ECONNREFUSED, -EHOSTUNREACH or -EIO when there is no
 * answer, with curl's reason in err.
 */
int am_post(const char *url, const char *body, int timeout_ms,
	    char err[AM_ERR_LEN]);

#endif
