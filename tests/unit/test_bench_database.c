/* SPDX-License-Identifier: MIT */
/*
 * The database benchmark's pure parts and its restore at the agent's start:
 * pgbench's per-transaction logs and output parsed; database_recover()
 * writing back the THP mode a dead run kept in the spool (below a fake
 * root), leaving a live run's alone, and removing the PostgreSQL
 * directories dead runs left but not a live one's. The benchmark itself,
 * against a real PostgreSQL, is tests/integration/test_bench_database.sh.
 */
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cleanup.h"
#include "database.h"
#include "file.h"
#include "pgrun.h"
#include "probe_test.h"

#define THP "sys/kernel/mm/transparent_hugepage/enabled"

static void test_log_parse(void)
{
	struct pgbench_lat lat = { 0 };

	/* pgbench 15 -l with --rate: a schedule lag column */
	CHECK_OK(pgbench_log_parse("1 1 1408 0 1796285689 527982 128\n"
				   "0 1 3631 0 1796285689 528997 86\n"
				   "\n"
				   "2 3 1561\t0 1796285689 528663 1473\n",
				   &lat));
	CHECK_EQ_INT(lat.n, 3);
	CHECK(lat.n == 3 && fabs(lat.ms[0] - 1.408) < 1e-9 &&
	      fabs(lat.ms[1] - 3.631) < 1e-9 && fabs(lat.ms[2] - 1.561) < 1e-9);
	/* without --rate (six fields), no final newline; skipped and failed
	 * transactions are counted, not timed */
	CHECK_OK(pgbench_log_parse("0 7 250 0 1796285689 1000\n"
				   "0 8 skipped 0 1796285689 2000 5\n"
				   "0 9 failed 0 1796285689 3000 5\n"
				   "0 10 99 0 1796285689 4000",
				   &lat));
	CHECK_EQ_INT(lat.n, 5);
	CHECK_EQ_INT(lat.failed, 2);
	CHECK(lat.n == 5 && fabs(lat.ms[4] - 0.099) < 1e-9);
	/* not a log: refused, the lines before it kept */
	CHECK_EQ_INT(pgbench_log_parse("0 11 100 0 1796285689 5000\n"
				       "0 12 1.5 0 1796285689 6000\n",
				       &lat),
		     -EBADMSG);
	CHECK_EQ_INT(lat.n, 6);
	CHECK_EQ_INT(pgbench_log_parse("0 1 100\n", &lat), -EBADMSG);
	CHECK_EQ_INT(pgbench_log_parse("0 1 -5 0 1 2\n", &lat), -EBADMSG);
	CHECK_EQ_INT(pgbench_log_parse("0 1 5 0 1 2 3 4 5\n", &lat), -EBADMSG);
	CHECK_EQ_INT(pgbench_log_parse("0 1 skippedx 0 1 2\n", &lat),
		     -EBADMSG);
	CHECK_EQ_INT(lat.n, 6);
	free(lat.ms);
}

static void test_tps(void)
{
	double tps = 0;

	CHECK_OK(pgbench_tps(
		"latency average = 1.637 ms\n"
		"initial connection time = 37.959 ms\n"
		"tps = 2033.767206 (without initial connection time)\n",
		&tps));
	CHECK(fabs(tps - 2033.767206) < 1e-6);
	CHECK_EQ_INT(pgbench_tps("number of transactions: 0\n", &tps),
		     -EBADMSG);
	/* only at the start of a line */
	CHECK_EQ_INT(pgbench_tps("xtps = 5\n", &tps), -EBADMSG);
}

/* The content of root/rel, "" when unreadable (static buffer). */
static const char *content(const char *root, const char *rel)
{
	static char buf[256];
	_cleanup_free_ char *text = NULL;
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	buf[0] = '\0';
	if (read_full_file(path, sizeof(buf) - 1, &text) >= 0)
		snprintf(buf, sizeof(buf), "%s", text);
	return buf;
}

static bool exists(const char *root, const char *rel)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return access(path, F_OK) == 0;
}

static void test_recover(void)
{
	char *root = tree_new(), spool[4096], work[4096], what[1024], path[4096];
	_cleanup_close_ int held = -1;

	snprintf(spool, sizeof(spool), "%s/spool", root);
	snprintf(work, sizeof(work), "%s/work", root);
	tree_put(root, THP, "always madvise [never]\n", -1);
	CHECK(mkdir(work, 0755) == 0);

	/* nothing kept, no spool directory at all: nothing done */
	CHECK_EQ_INT(database_recover(root, spool, work, what, sizeof(what)),
		     0);
	CHECK_EQ_STR(what, "");

	/* a dead run's file, the mode one it left: written back, removed */
	tree_put(root, THP, "[always] madvise never\n", -1);
	tree_put(root, "spool/" DATABASE_THP_RESTORE,
		 "madvise never   always \n", -1);
	CHECK_EQ_INT(database_recover(root, spool, work, what, sizeof(what)),
		     1);
	CHECK_EQ_STR(content(root, THP), "madvise");
	CHECK(strstr(what, "THP enabled restored to 'madvise'") != NULL);
	CHECK(!exists(root, "spool/" DATABASE_THP_RESTORE));
	/* the one before its last change: the same */
	tree_put(root, THP, "always madvise [never]\n", -1);
	tree_put(root, "spool/" DATABASE_THP_RESTORE,
		 "always  never   madvise\n", -1);
	CHECK_EQ_INT(database_recover(root, spool, work, what, sizeof(what)),
		     1);
	CHECK_EQ_STR(content(root, THP), "always");

	/* a mode the run did not leave (the driver restored it, or the
	 * admin set it since): left alone, the file removed */
	tree_put(root, THP, "always madvise [never]\n", -1);
	tree_put(root, "spool/" DATABASE_THP_RESTORE,
		 "madvise madvise always \n", -1);
	CHECK_EQ_INT(database_recover(root, spool, work, what, sizeof(what)),
		     1);
	CHECK_EQ_STR(content(root, THP), "always madvise [never]\n");
	CHECK(strstr(what, "THP enabled left 'never'") != NULL);
	CHECK(!exists(root, "spool/" DATABASE_THP_RESTORE));

	/* a live run's (it holds the lock): left alone */
	tree_put(root, "spool/" DATABASE_THP_RESTORE,
		 "madvise madvise never  \n", -1);
	snprintf(path, sizeof(path), "%s/" DATABASE_THP_RESTORE, spool);
	held = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(held >= 0 && flock(held, LOCK_EX | LOCK_NB) == 0);
	CHECK_EQ_INT(database_recover(root, spool, work, what, sizeof(what)),
		     0);
	CHECK_EQ_STR(content(root, THP), "always madvise [never]\n");
	CHECK(exists(root, "spool/" DATABASE_THP_RESTORE));
	close(held);
	held = -1;

	/* a file that holds no such line: removed, nothing written */
	tree_put(root, "spool/" DATABASE_THP_RESTORE, "madvise\n", -1);
	CHECK_EQ_INT(database_recover(root, spool, work, what, sizeof(what)),
		     0);
	CHECK_EQ_STR(content(root, THP), "always madvise [never]\n");
	CHECK(!exists(root, "spool/" DATABASE_THP_RESTORE));

	/* directories dead runs left: removed, with what is in them; a live
	 * run's (locked) and others' names are kept */
	tree_put(root, "work/" PGRUN_PREFIX "dead01/data/base/1/1259", "x", -1);
	tree_put(root, "work/" PGRUN_PREFIX "dead01/data/postmaster.pid",
		 "999999999\n", -1);
	tree_put(root, "work/" PGRUN_PREFIX "dead02/initdb.log", "x", -1);
	tree_put(root, "work/" PGRUN_PREFIX "live01/initdb.log", "x", -1);
	tree_put(root, "work/keep-me/f", "x", -1);
	snprintf(path, sizeof(path), "%s/" PGRUN_PREFIX "live01", work);
	held = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(held >= 0 && flock(held, LOCK_EX | LOCK_NB) == 0);
	CHECK_EQ_INT(database_recover(root, spool, work, what, sizeof(what)),
		     2);
	CHECK(strstr(what, "removed 2 PostgreSQL directories") != NULL);
	CHECK(!exists(root, "work/" PGRUN_PREFIX "dead01"));
	CHECK(!exists(root, "work/" PGRUN_PREFIX "dead02"));
	CHECK(exists(root, "work/" PGRUN_PREFIX "live01/initdb.log"));
	CHECK(exists(root, "work/keep-me/f"));
	CHECK_EQ_INT(pgrun_sweep(work), 0);
	close(held);
	held = -1;
	CHECK_EQ_INT(pgrun_sweep(work), 1);
	CHECK(!exists(root, "work/" PGRUN_PREFIX "live01"));
	tree_free(root);
}

static void test_missing(void)
{
	char *root = tree_new(), bin[4096];

	snprintf(bin, sizeof(bin), "%s/bin", root);
	CHECK_EQ_STR(pgrun_missing(bin), "initdb");
	tree_put(root, "bin/initdb", "#!/bin/sh\n", -1);
	tree_put(root, "bin/postgres", "#!/bin/sh\n", -1);
	snprintf(bin, sizeof(bin), "%s/bin/initdb", root);
	chmod(bin, 0755);
	snprintf(bin, sizeof(bin), "%s/bin/postgres", root);
	chmod(bin, 0755);
	snprintf(bin, sizeof(bin), "%s/bin", root);
	CHECK_EQ_STR(pgrun_missing(bin), "pgbench");
	tree_free(root);
}

int main(void)
{
	test_log_parse();
	test_tps();
	test_recover();
	test_missing();
	return check_summary();
}
