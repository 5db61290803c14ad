/* SPDX-License-Identifier: MIT */
/*
 * fleetbench-collector prune: retention, a whole month (UTC) at a time:
 * the monthly partitions and the runs of every month that ended more than
 * --older-than ago, each month in a transaction of its own; a month with a
 * run that an open alert refers to is kept. The SQL is
 * schema/functions/65_prune.sql; docs/operations.md, "Retention".
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "cmd.h"
#include "log.h"

/* The longest horizon taken: beyond it a typo, not a retention policy. */
#define PRUNE_MAX_YEARS 100

struct prune_unit {
	const char *name; /* as written: "months" */
	const char *sql; /* the interval's unit */
	long long max; /* PRUNE_MAX_YEARS in this unit */
};

static const struct prune_unit prune_units[] = {
	{ "day", "days", PRUNE_MAX_YEARS * 366 },
	{ "days", "days", PRUNE_MAX_YEARS * 366 },
	{ "month", "months", PRUNE_MAX_YEARS * 12 },
	{ "months", "months", PRUNE_MAX_YEARS * 12 },
	{ "year", "years", PRUNE_MAX_YEARS },
	{ "years", "years", PRUNE_MAX_YEARS },
};

/*
 * Parses an age: a positive decimal count and a unit (Ndays, Nmonths,
 * Nyears, or the singular), nothing else, into an interval for PostgreSQL
 * ("13 months"). *ret_short says whether it is under a month (fewer than
 * 30 days). Returns 0 or -EINVAL with why in err.
 */
static int prune_parse_age(const char *s, char *interval, size_t size,
			   bool *ret_short, char *err, size_t err_size)
{
	const char *p = s;
	long long n = 0;

	if (*p < '0' || *p > '9') {
		snprintf(err, err_size,
			 "expected a count and a unit, such as 13months, 400days or 2years");
		return -EINVAL;
	}
	for (; *p >= '0' && *p <= '9'; p++) {
		n = n * 10 + (*p - '0');
		if (n > PRUNE_MAX_YEARS * 366) {
			snprintf(err, err_size, "the count is too large");
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(prune_units); i++) {
		const struct prune_unit *u = &prune_units[i];

		if (strcmp(p, u->name) != 0)
			continue;
		if (n == 0) {
			snprintf(err, err_size,
				 "the age must be positive: prune never drops the current month");
			return -EINVAL;
		}
		if (n > u->max) {
			snprintf(err, err_size, "more than %d years",
				 PRUNE_MAX_YEARS);
			return -EINVAL;
		}
		snprintf(interval, size, "%lld %s", n, u->sql);
		*ret_short = strcmp(u->sql, "days") == 0 && n < 30;
		return 0;
	}
	snprintf(err, err_size,
		 "unknown unit '%s': use days, months or years (e.g. 13months)",
		 p);
	return -EINVAL;
}

/*
 * The columns both queries return, in this order: month (YYYY-MM),
 * partitions (space-separated), their rows and bytes, runs and their
 * bytes, the open alerts (", "-separated) and kept.
 */
#define PRUNE_COLUMNS                                                         \
	"to_char(month, 'YYYY-MM'), "                                         \
	"coalesce(nullif(array_to_string(partitions, ' '), ''), "             \
	"'no partition'), partition_rows, partition_bytes, run_count, "       \
	"run_bytes, array_to_string(open_alerts, ', '), "                     \
	"cardinality(open_alerts), kept"

/* One month's line: verb "would drop", "dropped", "would keep", "kept". */
static void prune_print(PGresult *res, int row, const char *verb)
{
	const char *month = PQgetvalue(res, row, 0);

	if (strcmp(PQgetvalue(res, row, 8), "t") == 0) {
		bool one = strcmp(PQgetvalue(res, row, 7), "1") == 0;

		printf("%s %s: open alert%s %s refer%s to its runs\n", verb,
		       month, one ? "" : "s", PQgetvalue(res, row, 6),
		       one ? "s" : "");
		return;
	}
	printf("%s %s: %s (%s rows, %s bytes), %s runs (%s bytes)\n", verb,
	       month, PQgetvalue(res, row, 1), PQgetvalue(res, row, 2),
	       PQgetvalue(res, row, 3), PQgetvalue(res, row, 4),
	       PQgetvalue(res, row, 5));
}

/* Runs one statement of no interest but its success. */
static int prune_exec(struct pg *pg, const char *sql, char err[PG_ERR_LEN])
{
	_cleanup_pqclear_ PGresult *res = NULL;

	return pg_query(pg, sql, 0, NULL, &res, err);
}

/*
 * A month's drop waits for its tables' locks at most PRUNE_LOCK_WAIT, and
 * is tried PRUNE_LOCK_TRIES times, PRUNE_LOCK_PAUSE_S apart: the ingest
 * queues behind a lock prune waits for, so a prune behind an analyst's
 * open transaction must not wait for it (it stalled the agents' reports
 * for as long).
 */
#define PRUNE_LOCK_WAIT "2s"
#define PRUNE_LOCK_TRIES 3
#define PRUNE_LOCK_PAUSE_S 1

/* The sessions of this database in a transaction for over 2 s, but ours,
 * as "pid N (user, state, since ...)"; "" when none, or when unknown. */
static void lock_holders(struct pg *pg, char *out, size_t size)
{
	_cleanup_pqclear_ PGresult *res = NULL;
	char err[PG_ERR_LEN];

	out[0] = '\0';
	if (pg_query(pg,
		     "SELECT string_agg(format('pid %s (%s, %s since %s)', "
		     "pid, usename, state, to_char(xact_start AT TIME ZONE 'UTC', "
		     "'YYYY-MM-DD HH24:MI:SS UTC')), '; ' ORDER BY xact_start) "
		     "FROM pg_stat_activity WHERE datname = current_database() "
		     "AND pid <> pg_backend_pid() "
		     "AND xact_start < now() - interval '2 seconds'",
		     0, NULL, &res, err) == 0 &&
	    PQntuples(res) == 1 && !PQgetisnull(res, 0, 0))
		snprintf(out, size, "%s", PQgetvalue(res, 0, 0));
}

/*
 * Prunes one month in its own transaction and prints its line; counts it
 * in *dropped or *kept. Returns 0, or -1 (logged) with nothing of the
 * month dropped.
 */
static int prune_month(struct pg *pg, const char *month,
		       const char *interval, long long *dropped,
		       long long *kept)
{
	_cleanup_pqclear_ PGresult *res = NULL;
	char first[16], err[PG_ERR_LEN], holders[PG_ERR_LEN];
	const char *params[] = { first, interval };
	int r = -EBUSY;

	snprintf(first, sizeof(first), "%s-01", month);
	for (int try = 1; r == -EBUSY && try <= PRUNE_LOCK_TRIES; try++) {
		if (try > 1)
			sleep(PRUNE_LOCK_PAUSE_S);
		PQclear(TAKE_PTR(res));
		if (prune_exec(pg, "BEGIN", err) < 0)
			return log_error("cannot prune %s: %s", month, err);
		r = prune_exec(pg, "SET LOCAL lock_timeout = '" PRUNE_LOCK_WAIT "'",
			       err);
		if (r == 0)
			r = pg_query(pg,
				     "SELECT " PRUNE_COLUMNS
				     " FROM (SELECT $1::date AS month, "
				     "* FROM fleetbench_prune_month($1::date, $2::interval)) "
				     "AS x",
				     2, params, &res, err);
		if (r == 0 && PQntuples(res) != 1) {
			snprintf(err, sizeof(err), "%d rows, expected one",
				 PQntuples(res));
			r = -EPROTO;
		}
		if (r == 0)
			r = prune_exec(pg, "COMMIT", err);
		if (r < 0)
			prune_exec(pg, "ROLLBACK", holders);
	}
	if (r == -EBUSY) {
		lock_holders(pg, holders, sizeof(holders));
		return log_error("cannot prune %s, nothing of it dropped: its tables stayed locked by another transaction (%d tries of %s each)%s%s; try again once it ended",
				 month, PRUNE_LOCK_TRIES, PRUNE_LOCK_WAIT,
				 *holders ? ": " : "", holders);
	}
	if (r < 0)
		return log_error("cannot prune %s, nothing of it dropped: %s",
				 month, err);
	if (strcmp(PQgetvalue(res, 0, 8), "t") == 0) {
		prune_print(res, 0, "kept");
		(*kept)++;
	} else {
		prune_print(res, 0, "dropped");
		(*dropped)++;
	}
	return 0;
}

/* One prune at a time per database (two at once had one fail on a
 * partition the other dropped): a session's advisory lock, or -1 naming
 * the session that holds it. */
#define PRUNE_LOCK "112723185853027"

static int prune_lock(struct pg *pg)
{
	_cleanup_pqclear_ PGresult *res = NULL;
	char err[PG_ERR_LEN], holder[128];

	if (pg_query(pg, "SELECT pg_try_advisory_lock(" PRUNE_LOCK ")", 0,
		     NULL, &res, err) < 0)
		return log_error("cannot take prune's lock: %s", err);
	if (!strcmp(PQgetvalue(res, 0, 0), "t"))
		return 0;
	pg_advisory_holder(pg, PRUNE_LOCK, holder, sizeof(holder));
	return log_error("another prune of this database is running%s%s%s; try again once it ended",
			 *holder ? " (" : "", holder, *holder ? ")" : "");
}

int cmd_prune(const struct collector_config *cfg)
{
	_cleanup_pqclear_ PGresult *plan = NULL;
	_cleanup_pqclear_ PGresult *cut = NULL;
	struct db d = { 0 };
	char interval[64], why[128], err[PG_ERR_LEN];
	const char *params[] = { interval };
	long long dropped = 0, kept = 0, rows = 0, bytes = 0, runs = 0;
	bool short_age = false;
	int n, ret = 1;

	if (!arg_older_than) {
		log_error("prune needs --older-than AGE, such as --older-than 13months");
		return 2;
	}
	if (prune_parse_age(arg_older_than, interval, sizeof(interval),
			    &short_age, why, sizeof(why)) < 0) {
		log_error("--older-than '%s': %s", arg_older_than, why);
		return 2;
	}
	if (short_age && !arg_force) {
		log_error("--older-than '%s' is under a month: it would drop last month's runs; add --force if that is meant",
			  arg_older_than);
		return 2;
	}
	if (db_open(&d, cfg) < 0 || db_check_schema(&d, "prune") < 0 ||
	    prune_lock(d.pg) < 0)
		goto out;
	if (pg_query(d.pg,
		     "SELECT to_char((now() - $1::interval) AT TIME ZONE 'UTC', "
		     "'YYYY-MM-DD HH24:MI:SS') || ' UTC'",
		     1, params, &cut, err) < 0 ||
	    pg_query(d.pg,
		     "SELECT " PRUNE_COLUMNS
		     " FROM fleetbench_prune_plan($1::interval)",
		     1, params, &plan, err) < 0) {
		log_error("cannot plan the prune: %s", err);
		goto out;
	}
	n = PQntuples(plan);
	if (n == 0) {
		printf("nothing to drop: no month ended before %s (%s ago)\n",
		       PQgetvalue(cut, 0, 0), interval);
		ret = fflush(stdout) == 0 ? 0 : 1;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		bool held = strcmp(PQgetvalue(plan, i, 8), "t") == 0;

		if (!arg_dry_run) {
			if (prune_month(d.pg, PQgetvalue(plan, i, 0), interval,
					&dropped, &kept) < 0)
				goto out;
			continue;
		}
		prune_print(plan, i, held ? "would keep" : "would drop");
		if (held) {
			kept++;
			continue;
		}
		dropped++;
		rows += strtoll(PQgetvalue(plan, i, 2), NULL, 10);
		bytes += strtoll(PQgetvalue(plan, i, 3), NULL, 10) +
			 strtoll(PQgetvalue(plan, i, 5), NULL, 10);
		runs += strtoll(PQgetvalue(plan, i, 4), NULL, 10);
	}
	if (arg_dry_run)
		printf("dry run: would drop %lld month%s (%lld partition rows, %lld runs, %lld bytes) and keep %lld, of those that ended before %s (%s ago); nothing changed\n",
		       dropped, dropped == 1 ? "" : "s", rows, runs, bytes, kept,
		       PQgetvalue(cut, 0, 0), interval);
	else
		printf("dropped %lld month%s and kept %lld, of those that ended before %s (%s ago)\n",
		       dropped, dropped == 1 ? "" : "s", kept,
		       PQgetvalue(cut, 0, 0), interval);
	ret = fflush(stdout) == 0 ? 0 : 1;
out:
	db_release(&d);
	return ret;
}
