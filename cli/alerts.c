/* SPDX-License-Identifier: MIT */
/* fleetbench alerts: list the fleet alerts, or acknowledge one. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alerts_push.h"
#include "cmd.h"
#include "log.h"

enum {
	OPT_OPEN = 0x100,
	OPT_SINCE,
	OPT_HOSTS,
	OPT_ALERTMANAGER,
	OPT_INTERVAL,
	OPT_TIMEOUT,
};

static const char usage[] =
	"usage: fleetbench alerts [--open] [--since DATE] [--hosts]\n"
	"       fleetbench alerts ack ID\n"
	"       fleetbench alerts push --alertmanager URL [--interval MS]\n"
	"                                  [--timeout MS]\n"
	"\n"
	"Lists the fleet alerts, newest first: one row per change of the\n"
	"io_uring fingerprint or gain that hosts of one provider and instance\n"
	"type showed on one new kernel, with how many hosts. 'ack ID'\n"
	"acknowledges fleet alert ID and its hosts' alerts (docs/alerts.md).\n"
	"'push' sends the open alerts to Alertmanager's API v2 once, and those\n"
	"acknowledged in the last four intervals as resolved.\n"
	"\n"
	"options:\n"
	"      --open               only the alerts not acknowledged\n"
	"      --since DATE         only those raised at or after DATE (a date\n"
	"                           or timestamp, e.g. 2024-05-01 or '2024-05-01\n"
	"                           12:00+02')\n"
	"      --hosts              one row per host and kernel pair instead\n"
	"push options:\n"
	"      --alertmanager URL   Alertmanager's base URL (http:// or https://)\n"
	"      --interval MS        how often you run push: open alerts are sent\n"
	"                           firing for four times MS (default 60000)\n"
	"      --timeout MS         give up on the POST after MS (default 10000)\n";

/* --open ($1) and --since ($2), newest first */
#define FILTER                                                               \
	"WHERE ($1::boolean IS NOT TRUE OR acknowledged_at IS NULL) "        \
	"  AND ($2::timestamptz IS NULL OR created_at >= $2::timestamptz) " \
	"ORDER BY created_at DESC, id DESC"

static const char fleet_sql[] =
	"SELECT id, kind, provider, instance_type, "
	"       to_jsonb(old_kernels) AS old_kernels, new_kernel, "
	"       hosts, summary, change, created_at, last_host_at, "
	"       acknowledged_at, delivered_at, delivery_attempts, "
	"       delivery_error, effect "
	"FROM alert_summary " FILTER;
static const char hosts_sql[] =
	"SELECT fleet_alert_id AS alert, id AS host_alert, kind, provider, "
	"       instance_type, machine_id, hostname, old_kernel, new_kernel, "
	"       fleetbench_alert_text(kind, diff) AS summary, diff, "
	"       old_run_id, new_run_id, created_at, acknowledged_at "
	"FROM alerts " FILTER;

/* What a terminal's table leaves out; csv and json get everything. */
static const char *const fleet_table_hide[] = {
	"change", "last_host_at", "delivery_attempts", "delivery_error",
	"effect", NULL
};
static const char *const hosts_table_hide[] = {
	"host_alert", "machine_id", "diff", "old_run_id", "new_run_id", NULL
};

static int ack(struct cmd_ctx *ctx, const char *id)
{
	const char *params[] = { id };
	PGresult *res = NULL;
	char *end;
	long long v;
	int r;

	errno = 0;
	v = strtoll(id, &end, 10);
	if (errno || end == id || *end || v <= 0) {
		log_error("alert ID must be a positive number, not '%s'", id);
		return CMD_USAGE;
	}
	r = cmd_query(ctx,
		      "SELECT acknowledged_at, already, "
		      "       (SELECT count(*) FROM alerts "
		      "        WHERE fleet_alert_id = $1::bigint) "
		      "FROM fleetbench_alert_ack($1::bigint)",
		      1, params, &res);
	if (r != CMD_OK)
		return r;
	if (PQntuples(res) != 1) {
		log_error("there is no alert %lld (see 'fleetbench alerts')", v);
		r = CMD_FAILED;
	} else if (!strcmp(PQgetvalue(res, 0, 1), "t")) {
		printf("alert %lld was already acknowledged at %s\n", v,
		       PQgetvalue(res, 0, 0));
	} else {
		printf("acknowledged alert %lld and its %s host alert(s) at %s\n",
		       v, PQgetvalue(res, 0, 2), PQgetvalue(res, 0, 0));
	}
	PQclear(res);
	if (r == CMD_OK && fflush(stdout) != 0) {
		log_error("cannot write the output: %s", strerror(errno));
		r = CMD_FAILED;
	}
	return r;
}

int cmd_alerts(struct cmd_ctx *ctx, int argc, char **argv)
{
	static const struct option options[] = {
		{ "open", no_argument, NULL, OPT_OPEN },
		{ "since", required_argument, NULL, OPT_SINCE },
		{ "hosts", no_argument, NULL, OPT_HOSTS },
		{ "alertmanager", required_argument, NULL, OPT_ALERTMANAGER },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ 0 },
	};
	const char *since = NULL, *open = NULL;
	const char *am_url = NULL, *am_interval = NULL, *am_timeout = NULL;
	bool pushing = false;
	bool hosts = false, listing = false;
	const char *params[2];
	int c;

	while ((c = cmd_getopt(ctx, argc, argv, "", options, usage)) != -1) {
		switch (c) {
		case OPT_OPEN:
			open = "true";
			listing = true;
			break;
		case OPT_SINCE:
			since = optarg;
			listing = true;
			break;
		case OPT_HOSTS:
			hosts = true;
			listing = true;
			break;
		case OPT_ALERTMANAGER:
			am_url = optarg;
			pushing = true;
			break;
		case OPT_INTERVAL:
			am_interval = optarg;
			pushing = true;
			break;
		case OPT_TIMEOUT:
			am_timeout = optarg;
			pushing = true;
			break;
		case CMD_OPT_HELP:
			return CMD_OK;
		default:
			return CMD_USAGE;
		}
	}
	if (optind < argc && !strcmp(argv[optind], "push")) {
		if (listing || argc - optind != 1) {
			log_error("usage: fleetbench alerts push --alertmanager URL [--interval MS] [--timeout MS]");
			return CMD_USAGE;
		}
		if (!am_url) {
			log_error("push needs --alertmanager URL");
			return CMD_USAGE;
		}
		return alerts_push(ctx, am_url, am_interval, am_timeout);
	}
	if (pushing) {
		log_error("--alertmanager, --interval and --timeout are options of 'alerts push'");
		return CMD_USAGE;
	}
	if (optind < argc && !strcmp(argv[optind], "ack")) {
		if (listing) {
			log_error("ack takes an alert ID only, not --open, --since or --hosts");
			return CMD_USAGE;
		}
		if (argc - optind != 2) {
			log_error("usage: fleetbench alerts ack ID");
			return CMD_USAGE;
		}
		return ack(ctx, argv[optind + 1]);
	}
	if (cmd_no_operands(argc, argv) != CMD_OK)
		return CMD_USAGE;
	params[0] = open;
	params[1] = since;
	/* a table that fits: the sentence on lines of its own */
	ctx->detail = "summary";
	{
		static struct cmd_why why = { .what = "alerts" };

		why.since = since;
		why.method = open ? "open" : NULL;
		ctx->why = &why;
	}
	return cmd_print(ctx, hosts ? hosts_sql : fleet_sql, 2, params,
			 ctx->format != OUT_TABLE ? NULL :
			 hosts			  ? hosts_table_hide :
						    fleet_table_hide);
}
