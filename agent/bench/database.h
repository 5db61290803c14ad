/* SPDX-License-Identifier: MIT */
/*
 * The database benchmark's parts that others call: pgbench's output,
 * parsed (pure, tested on their own in tests/unit/test_bench_database.c),
 * and the restore, at the agent's next start, of what a run that died left
 * (a THP mode, a PostgreSQL directory).
 */
#ifndef FLEETBENCH_DATABASE_H
#define FLEETBENCH_DATABASE_H

#include <stddef.h>

/* In the spool directory while a run has the THP mode changed: the mode
 * before, one line, fsynced before the first change. */
#define DATABASE_THP_RESTORE "thp-restore"

/* Transaction latencies read from pgbench -l logs. */
struct pgbench_lat {
	double *ms; /* one per transaction, in ms */
	size_t n, cap;
	size_t failed; /* transactions logged "skipped" or "failed" */
};

/*
 * Appends the latencies of one pgbench per-transaction log (pgbench -l:
 * lines "client_id transaction_no time script_no time_epoch time_us
 * [schedule_lag [retries]]", time in us; with --rate it counts from the
 * scheduled start, so a late start is in it) to lat. 0, -EBADMSG for a
 * line that is not one (lat keeps the lines before it), or -ENOMEM.
 */
int pgbench_log_parse(const char *text, struct pgbench_lat *lat);

/* pgbench's own TPS from its output ("tps = 998.5 (without initial
 * connection time)"). 0, or -EBADMSG when the output has none. */
int pgbench_tps(const char *out, double *ret);

/*
 * At the agent's start: writes back the THP mode that a run which died
 * left in spool_dir's DATABASE_THP_RESTORE (below root, NULL: "/"),
 * unless a live run holds it, and removes the PostgreSQL directories dead
 * runs left in work_dir (pgrun_sweep()). What it did, in what ("" when
 * nothing): the number of things done, or -errno with what saying what
 * failed.
 */
int database_recover(const char *root, const char *spool_dir,
		     const char *work_dir, char *what, size_t whatlen);

#endif
