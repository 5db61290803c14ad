/* SPDX-License-Identifier: MIT */
/* fleetbench alerts push: the fleet alerts to Alertmanager, once. */
#include "alerts_push.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alertmanager.h"
#include "log.h"

/* the collector's alertmanager_interval_ms and _timeout_ms, alike */
#define INTERVAL_DEFAULT_MS 60000
#define INTERVAL_MIN_MS 100
#define INTERVAL_MAX_MS 3600000
#define TIMEOUT_DEFAULT_MS 10000
#define TIMEOUT_MIN_MS 100
#define TIMEOUT_MAX_MS 600000

/* MS of --flag: v, or dflt when NULL; -1 (logged) when not in range */
static long long ms_option(const char *flag, const char *v, long long dflt,
			   long long min, long long max)
{
	long long ms;
	char *end;

	if (!v)
		return dflt;
	errno = 0;
	ms = strtoll(v, &end, 10);
	if (errno || end == v || *end || ms < min || ms > max) {
		log_error("--%s must be a number of milliseconds from %lld to %lld, not '%s'",
			  flag, min, max, v);
		return -1;
	}
	return ms;
}

int alerts_push(struct cmd_ctx *ctx, const char *url, const char *interval,
		const char *timeout)
{
	long long interval_ms, timeout_ms;
	struct am_alerts a = { 0 };
	PGresult *res = NULL;
	char err[AM_ERR_LEN];
	int64_t valid;
	int r;

	if (am_url_check(url, err) < 0) {
		log_error("--alertmanager: %s", err);
		return CMD_USAGE;
	}
	interval_ms = ms_option("interval", interval, INTERVAL_DEFAULT_MS,
				INTERVAL_MIN_MS, INTERVAL_MAX_MS);
	timeout_ms = ms_option("timeout", timeout, TIMEOUT_DEFAULT_MS,
			       TIMEOUT_MIN_MS, TIMEOUT_MAX_MS);
	if (interval_ms < 0 || timeout_ms < 0)
		return CMD_USAGE;
	/* connects (and says why it cannot) */
	r = cmd_query(ctx, "SELECT 1", 0, NULL, &res);
	PQclear(res);
	if (r != CMD_OK)
		return r;
	valid = (int64_t)AM_VALID_INTERVALS * interval_ms;
	if (am_alerts_read(ctx->pg, valid, valid, &a, err) < 0) {
		log_error("cannot read the alerts: %s", err);
		return CMD_FAILED;
	}
	if (am_init() < 0) {
		log_error("libcurl cannot be initialised");
		am_alerts_release(&a);
		return CMD_FAILED;
	}
	/* an empty push too: it tells whether Alertmanager is there */
	r = am_post(url, a.body, (int)timeout_ms, err);
	am_cleanup();
	if (r < 0) {
		log_error("cannot push the alerts to Alertmanager: %s", err);
		am_alerts_release(&a);
		return CMD_FAILED;
	}
	printf("pushed %zu firing and %zu resolved alert(s) to %s\n", a.firing,
	       a.resolved, url);
	am_alerts_release(&a);
	if (fflush(stdout) != 0) {
		log_error("cannot write the output: %s", strerror(errno));
		return CMD_FAILED;
	}
	return CMD_OK;
}
