/* SPDX-License-Identifier: MIT */
/*
 * fleetbench alerts push: the fleet alerts to Alertmanager once
 * (common/alertmanager.h), for cron or a systemd timer.
 */
#ifndef FLEETBENCH_ALERTS_PUSH_H
#define FLEETBENCH_ALERTS_PUSH_H

#include "cmd.h"

/*
 * Sends the open fleet alerts to url/api/v2/alerts, firing for
 * AM_VALID_INTERVALS times interval (MS, as given: how often this is
 * run), and those acknowledged in that window as resolved, giving up
 * after timeout (MS, as given; NULL: the defaults). Logs; returns the
 * exit status.
 */
int alerts_push(struct cmd_ctx *ctx, const char *url, const char *interval,
		const char *timeout);

#endif
