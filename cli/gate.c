/* SPDX-License-Identifier: MIT */
/*
 * fleetbench gate: may a kernel roll on? One query of fleet_gate()
 * (schema/functions/70_gate.sql), repeated every --interval while a group
 * waits for canaries, up to --wait. The exit status is the verdict, for
 * a roll-out tool to branch on (docs/queries.md, "gate").
 */
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "clock.h"
#include "cmd.h"
#include "log.h"

/* The exit status: every group passed, one failed, some still wait when
 * --wait is over (or no host reported from the kernel), bad usage (as
 * every command), and the database or the output failed: not 1, which
 * is a verdict here. */
#define GATE_PASS 0
#define GATE_FAIL 1
#define GATE_WAITING 3
#define GATE_ERROR 4

enum {
	OPT_KERNEL = 0x100,
	OPT_WHERE,
	OPT_MIN_HOSTS,
	OPT_SINCE,
	OPT_WAIT,
	OPT_INTERVAL,
};

static const char usage[] =
	"usage: fleetbench gate --kernel RELEASE [--where KEY=VALUE]...\n"
	"                       [--min-hosts N] [--since TIME]\n"
	"                       [--wait DURATION [--interval DURATION]]\n"
	"                       [common options]\n"
	"\n"
	"The roll-out gate of kernel RELEASE: for each provider and instance\n"
	"type with hosts on RELEASE, their runs on it are compared with the same\n"
	"hosts' runs on their previous kernel by the alert rules\n"
	"(docs/alerts.md): any change of the io_uring fingerprint fails, and so\n"
	"does a gain that moved by a fifth or more, beyond the noise. One row\n"
	"per group: pass, fail (reasons, in words) or waiting (fewer than N\n"
	"hosts compared yet). psql: fleet_gate(kernel, min_hosts, since,\n"
	"filter), the view fleet_gate_latest.\n"
	"\n"
	"options:\n"
	"      --kernel RELEASE     the new kernel release (uname -r)\n"
	"      --where KEY=VALUE    only hosts whose runs on RELEASE have KEY\n"
	"                           VALUE (repeat it), e.g. provider=aws or\n"
	"                           tag.ring=canary; any key but kernel\n"
	"      --min-hosts N        a group waits until N of its hosts are\n"
	"                           compared (default 1)\n"
	"      --since TIME         only runs on RELEASE started at or after TIME\n"
	"                           (e.g. 2025-03-31 or '2025-03-31 12:00+02')\n"
	"      --wait DURATION      while a group waits (and none failed), ask\n"
	"                           again until DURATION is over (e.g. 30m;\n"
	"                           default 0: once)\n"
	"      --interval DURATION  how often to ask while waiting (default 30s)\n"
	"\n"
	"Exit status: 0 every group passed, 1 a group failed (even if others\n"
	"wait), 3 still waiting when --wait is over (also when no host has\n"
	"reported from RELEASE), 2 bad usage, 4 the database or the output\n"
	"failed.\n";

/* The verdicts; table and csv join the lists, json keeps them arrays. */
static const char gate_sql[] =
	"SELECT provider, instance_type, verdict, hosts, compared, "
	"       array_to_string(previous_kernels, ', ') AS previous_kernels, "
	"       array_to_string(reasons, '; ') AS reasons "
	"FROM fleet_gate($1, $2::integer, $3::timestamptz, $4::jsonb)";
static const char gate_json_sql[] =
	"SELECT provider, instance_type, verdict, hosts, compared, "
	"       to_jsonb(previous_kernels) AS previous_kernels, "
	"       to_jsonb(reasons) AS reasons "
	"FROM fleet_gate($1, $2::integer, $3::timestamptz, $4::jsonb)";

static void json_release(struct json_object **o)
{
	json_object_put(*o);
}

/* A command's status as the gate's: 1 is a verdict here. */
static int gate_status(int r)
{
	return r == CMD_FAILED ? GATE_ERROR : r;
}

/* The verdict of a result: GATE_FAIL, GATE_WAITING (also no rows) or
 * GATE_PASS. */
static int verdict(const PGresult *res)
{
	int col = PQfnumber(res, "verdict");
	int n = PQntuples(res), waiting = n == 0;

	for (int i = 0; i < n; i++) {
		const char *v = PQgetvalue(res, i, col);

		if (!strcmp(v, "fail"))
			return GATE_FAIL;
		if (!strcmp(v, "waiting"))
			waiting++;
	}
	return waiting ? GATE_WAITING : GATE_PASS;
}

static void sleep_s(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s,
			       .tv_nsec = (long)((s - floor(s)) * 1e9) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * --wait and --interval in seconds, checked by the server (a PostgreSQL
 * interval: 30s, 10m, 1h) with errors naming the flag, and --since.
 */
static int check_times(struct cmd_ctx *ctx, const char *wait,
		       const char *interval, const char *since,
		       double *ret_wait, double *ret_interval)
{
	const char *params[] = { wait, interval, since };
	PGresult *res = NULL;
	int r;

	r = cmd_query(ctx,
		      "SELECT coalesce(fleetbench_cli_seconds($1, '--wait'), 0), "
		      "       coalesce(fleetbench_cli_seconds($2, '--interval'), 30), "
		      "       fleetbench_cli_time($3, '--since')",
		      3, params, &res);
	if (r != CMD_OK)
		return gate_status(r);
	*ret_wait = strtod(PQgetvalue(res, 0, 0), NULL);
	*ret_interval = strtod(PQgetvalue(res, 0, 1), NULL);
	PQclear(res);
	if (*ret_interval <= 0) {
		log_error("--interval '%s': must be above 0", interval);
		return CMD_USAGE;
	}
	return CMD_OK;
}

int cmd_gate(struct cmd_ctx *ctx, int argc, char **argv)
{
	static const struct option options[] = {
		{ "kernel", required_argument, NULL, OPT_KERNEL },
		{ "where", required_argument, NULL, OPT_WHERE },
		{ "min-hosts", required_argument, NULL, OPT_MIN_HOSTS },
		{ "since", required_argument, NULL, OPT_SINCE },
		{ "wait", required_argument, NULL, OPT_WAIT },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ 0 },
	};
	_cleanup_(json_release) struct json_object *filter = NULL;
	const char *kernel = NULL, *min_hosts = "1", *since = NULL;
	const char *wait_arg = NULL, *interval_arg = NULL;
	double wait_s, interval_s, deadline;
	PGresult *res = NULL;
	char *end;
	long n;
	int c, r;

	while ((c = cmd_getopt(ctx, argc, argv, NULL, options, usage)) != -1) {
		switch (c) {
		case OPT_KERNEL:
			kernel = optarg;
			break;
		case OPT_WHERE:
			if (cmd_where(&filter, optarg) < 0)
				return CMD_USAGE;
			break;
		case OPT_MIN_HOSTS:
			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || n < 1 ||
			    n > INT_MAX) {
				log_error("--min-hosts '%s': a number of hosts, 1 or more",
					  optarg);
				return CMD_USAGE;
			}
			min_hosts = optarg;
			break;
		case OPT_SINCE:
			since = optarg;
			break;
		case OPT_WAIT:
			wait_arg = optarg;
			break;
		case OPT_INTERVAL:
			interval_arg = optarg;
			break;
		case CMD_OPT_HELP:
			return CMD_OK;
		default:
			return CMD_USAGE;
		}
	}
	r = cmd_no_operands(argc, argv);
	if (r != CMD_OK)
		return r;
	if (!kernel || !*kernel) {
		log_error("gate needs --kernel RELEASE, the new kernel (see --help)");
		return CMD_USAGE;
	}
	r = check_times(ctx, wait_arg, interval_arg, since, &wait_s,
			&interval_s);
	if (r != CMD_OK)
		return r;
	deadline = mono_s() + wait_s;

	for (;;) {
		const char *params[] = { kernel, min_hosts, since,
					 cmd_filter_param(filter) };
		double left;

		r = cmd_query(ctx,
			      ctx->format == OUT_JSON ? gate_json_sql : gate_sql,
			      4, params, &res);
		if (r == CMD_USAGE)
			return r;
		left = deadline - mono_s();
		if (r != CMD_OK) {
			/* a database that went away while we wait: again at
			 * the next interval, until the wait is over */
			if (left <= 0)
				return GATE_ERROR;
			log_warn("gate: asking again in %.0f s", fmin(interval_s, left));
		} else {
			r = verdict(res);
			if (r != GATE_WAITING || left <= 0)
				break;
			log_info("gate: %s; asking again in %.0f s (%.0f s left of --wait)",
				 PQntuples(res) ? "a group waits for canaries" :
						  "no host has reported from this kernel yet",
				 fmin(interval_s, left), left);
			PQclear(res);
			res = NULL;
		}
		sleep_s(fmin(interval_s, left));
	}
	if (PQntuples(res) == 0)
		log_warn("no host has reported from kernel '%s' yet%s%s%s: waiting",
			 kernel, since ? " since " : "", since ? since : "",
			 filter ? " (with --where)" : "");
	{
		int out;

		/* a table that fits: the reasons on lines of their own */
		ctx->detail = "reasons";
		out = cmd_output(ctx, res, NULL);

		if (out != CMD_OK)
			return gate_status(out);
	}
	return r;
}
