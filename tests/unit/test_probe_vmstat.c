/* SPDX-License-Identifier: MIT */
/*
 * The vmstat and steal probes: the /proc/stat parser and the steal math
 * directly, every fixture tree, roots missing the files, and the running
 * machine with a short steal window.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "cleanup.h"
#include "probe_stat.h"
#include "probe_test.h"

#define STAT_BAD "unknown (malformed: no complete \"cpu \" line in /proc/stat)"

/* ---- /proc/stat parsing and the percentage, directly ---- */

static void check_stat_parse(void)
{
	struct probe_cpu_times t;

	CHECK_OK(probe_stat_parse("cpu  10 1 20 300 4 5 6 7 8 9\n"
				  "cpu0 10 1 20 300 4 5 6 7 8 9\nctxt 5\n",
				  &t));
	CHECK_EQ_INT(t.user, 10);
	CHECK_EQ_INT(t.nice, 1);
	CHECK_EQ_INT(t.system, 20);
	CHECK_EQ_INT(t.idle, 300);
	CHECK_EQ_INT(t.iowait, 4);
	CHECK_EQ_INT(t.irq, 5);
	CHECK_EQ_INT(t.softirq, 6);
	CHECK_EQ_INT(t.steal, 7);
	/* not the first line; eight fields (no guest columns); one space */
	CHECK_OK(probe_stat_parse("intr 0\ncpu 1 2 3 4 5 6 7 18446744073709551615\n",
				  &t));
	CHECK_EQ_INT(t.user, 1);
	CHECK(t.steal == UINT64_MAX);

	CHECK_EQ_INT(probe_stat_parse("", &t), -EBADMSG);
	CHECK_EQ_INT(probe_stat_parse("cpu0 1 2 3 4 5 6 7 8 0 0\n", &t),
		     -EBADMSG);
	CHECK_EQ_INT(probe_stat_parse("cpu  1925 0 88", &t), -EBADMSG);
	CHECK_EQ_INT(probe_stat_parse("cpu  1 2 3\ncpu0 1 2 3 4 5 6 7 8\n", &t),
		     -EBADMSG);
	/* all eight fields but no newline: the last may be cut */
	CHECK_EQ_INT(probe_stat_parse("cpu  1 2 3 4 5 6 7 8", &t), -EBADMSG);
	CHECK_EQ_INT(probe_stat_parse("cpu  1 2 x 4 5 6 7 8\n", &t), -EBADMSG);
	CHECK_EQ_INT(probe_stat_parse("cpu  1 2 3 4 5 6 7 8 0 zz\n", &t),
		     -EBADMSG);
	CHECK_EQ_INT(probe_stat_parse("cpu  -1 2 3 4 5 6 7 8\n", &t), -EBADMSG);
	CHECK_EQ_INT(probe_stat_parse("cpu  1 2 3 4 5 6 7 8x\n", &t), -EBADMSG);
	CHECK_EQ_INT(probe_stat_parse("cpu  1 2 3 4 5 6 7 "
				      "99999999999999999999999\n",
				      &t),
		     -EBADMSG);
}

static void check_steal_math(void)
{
	const struct probe_cpu_times zero = { 0 };
	struct probe_cpu_times a = { .user = 100, .idle = 800, .steal = 100 };
	struct probe_cpu_times b = a;
	double pct = -1;

	CHECK_OK(probe_steal_percent(&zero, &a, &pct));
	CHECK(pct == 10.0);
	/* only steal moved */
	b.steal += 50;
	CHECK_OK(probe_steal_percent(&a, &b, &pct));
	CHECK(pct == 100.0);
	/* 1 of 3 ticks: rounded to two decimals */
	b = a;
	b.steal += 1;
	b.user += 2;
	CHECK_OK(probe_steal_percent(&a, &b, &pct));
	CHECK(pct == 33.33);
	/* 2 of 3 */
	b.user -= 1;
	b.steal += 1;
	CHECK_OK(probe_steal_percent(&a, &b, &pct));
	CHECK(pct == 66.67);
	/* every field counts towards the total */
	b = (struct probe_cpu_times){ .user = 1, .nice = 1, .system = 1,
				      .idle = 1, .iowait = 1, .irq = 1,
				      .softirq = 1, .steal = 1 };
	CHECK_OK(probe_steal_percent(&zero, &b, &pct));
	CHECK(pct == 12.5);
	/* no steal at all */
	b.steal = 0;
	CHECK_OK(probe_steal_percent(&zero, &b, &pct));
	CHECK(pct == 0.0);
	/* the kvm-guest fixture's line: 4800 of 4000000 */
	b = (struct probe_cpu_times){ 182345, 120, 45678, 3757057,
				      8000,   0,   2000,  4800 };
	CHECK_OK(probe_steal_percent(&zero, &b, &pct));
	CHECK(pct == 0.12);

	pct = -1;
	CHECK_EQ_INT(probe_steal_percent(&a, &a, &pct), -ENODATA);
	CHECK_EQ_INT(probe_steal_percent(&zero, &zero, &pct), -ENODATA);
	b = a;
	b.idle += 100;
	b.steal -= 1;
	CHECK_EQ_INT(probe_steal_percent(&a, &b, &pct), -ERANGE);
	CHECK_EQ_INT(probe_steal_percent(&b, &zero, &pct), -ERANGE);
	CHECK(pct == -1);
}

/* ---- fixtures ---- */

/* Every thp_* and compact_* line of the tree's vmstat, read with stdio,
 * is a counter with that value, and there are no others. */
static void check_counters_file(struct json_object *r, const char *tree)
{
	char path[4096], name[128], key[192];
	_cleanup_fclose_ FILE *f = NULL;
	long long v;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/proc/vmstat", fixture_path(tree));
	f = fopen(path, "re");
	CHECK_(f != NULL, "%s: %s", path, strerror(errno));
	if (!f)
		return;
	while (fscanf(f, "%127s %lld", name, &v) == 2) {
		if (strncmp(name, "thp_", 4) && strncmp(name, "compact_", 8))
			continue;
		n++;
		snprintf(key, sizeof(key), "vmstat.counters.%s", name);
		CHECK_(jint(r, key) == v, "%s: %s == %" PRId64 ", expected %lld",
		       tree, key, jint(r, key), v);
	}
	CHECK_EQ_INT(jkeys(r, "vmstat.counters"), n);
}

struct tree {
	const char *name;
	struct fake_sys fs;
	int64_t ncounters;
	int64_t fault_alloc, fault_fallback, split_page, compact_stall;
	const char *since_boot;
};

static const struct tree trees[] = {
	{ "kvm-guest", { 0 }, 33, 1843, 12, 31, 4, "0.12" },
	{ "vps-thp-always", { .setup_err = -EPERM }, 33, 918273, 20431,
	  14002, 3311, "3.50" },
	{ "baremetal-numa", { .hypervisor_bit = -1 }, 33, 204811, 0, 87, 0,
	  "0.00" },
	{ "old-kernel",
	  { .probe_err = -EINVAL,
	    .features = IORING_FEAT_SINGLE_MMAP | IORING_FEAT_NODROP },
	  24, 33120, 410, 640, 77, "0.25" },
};

static void check_tree(const struct tree *t)
{
	struct json_object *r = probe_fixture(t->name, &t->fs);
	double d;

	CHECK_(r != NULL, "%s: no report", t->name);
	if (!r)
		return;
	CHECK_EQ_INT(jkeys(r, "vmstat"), 1);
	CHECK_EQ_INT(jkeys(r, "vmstat.counters"), t->ncounters);
	CHECK_EQ_INT(jint(r, "vmstat.counters.thp_fault_alloc"),
		     t->fault_alloc);
	CHECK_EQ_INT(jint(r, "vmstat.counters.thp_fault_fallback"),
		     t->fault_fallback);
	CHECK_EQ_INT(jint(r, "vmstat.counters.thp_split_page"), t->split_page);
	CHECK_EQ_INT(jint(r, "vmstat.counters.compact_stall"),
		     t->compact_stall);
	check_counters_file(r, t->name);

	CHECK_EQ_INT(jkeys(r, "steal"), 3);
	CHECK_EQ_INT(jint(r, "steal.window_ms"), 0);
	CHECK_EQ_STR(jstr(r, "steal.percent"), "unknown (skipped (window 0))");
	CHECK_EQ_STR(jstr(r, "steal.since_boot_percent"), t->since_boot);
	CHECK(jdouble(r, "steal.since_boot_percent", &d) &&
	      d == strtod(t->since_boot, NULL));
	json_object_put(r);
}

static void check_malformed(void)
{
	static const struct {
		const char *name;
		const char *want;
	} counters[] = {
		{ "thp_migration_success", "0" },
		{ "thp_migration_fail", "0" },
		{ "thp_migration_split", "0" },
		{ "compact_migrate_scanned", "81234" },
		{ "compact_free_scanned", "412331" },
		{ "compact_isolated", "15830" },
		{ "compact_stall", "4" },
		{ "compact_fail", "unknown (malformed: /proc/vmstat compact_fail "
				  "is not a count)" },
		{ "compact_success", "unknown (malformed: /proc/vmstat "
				     "compact_success is not a count)" },
		{ "compact_daemon_wake", "28" },
		{ "compact_daemon_migrate_scanned", "6012" },
		{ "compact_daemon_free_scanned", "40521" },
		{ "thp_fault_alloc", "unknown (malformed: /proc/vmstat "
				     "thp_fault_alloc is not a count)" },
		{ "thp_fault_fallback", "unknown (malformed: /proc/vmstat "
					"thp_fault_fallback is not a count)" },
		{ "thp_fault_fallback_charge", "0" },
		{ "thp_collapse_alloc", "97" },
		{ "thp_collapse_alloc_failed", "0" },
		{ "thp_file_alloc", "0" },
		{ "thp_file_fallback", "0" },
		{ "thp_file_fallback_charge", "0" },
		{ "thp_file_mapped", "0" },
		/* the file ends inside the next line's name */
		{ "thp_split_page", "unknown (malformed: /proc/vmstat "
				    "truncated)" },
	};
	struct json_object *r = probe_fixture("malformed", NULL);
	char key[128];

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_INT(jkeys(r, "vmstat.counters"), ARRAY_SIZE(counters));
	for (size_t i = 0; i < ARRAY_SIZE(counters); i++) {
		snprintf(key, sizeof(key), "vmstat.counters.%s",
			 counters[i].name);
		CHECK_EQ_STR(jstr(r, key), counters[i].want);
	}
	CHECK_EQ_INT(jkeys(r, "steal"), 3);
	CHECK_EQ_INT(jint(r, "steal.window_ms"), 0);
	CHECK_EQ_STR(jstr(r, "steal.percent"), "unknown (skipped (window 0))");
	CHECK_EQ_STR(jstr(r, "steal.since_boot_percent"), STAT_BAD);
	json_object_put(r);
}

/* A probe run over root with a steal window; NULL on failure. */
static struct json_object *run_root(const char *root, unsigned int window)
{
	struct probe_opts opts = {
		.root = root,
		.work_dir = "/var/tmp",
		.steal_window_ms = window,
		.sys = &probe_sys_real,
	};
	struct json_object *r = NULL;

	CHECK_OK(probe_run(&opts, &r));
	return r;
}

/* Static fixture files: both samples are the same text. */
static void check_fixture_window(void)
{
	struct json_object *r = run_root(fixture_path("kvm-guest"), 20);

	if (r) {
		CHECK_EQ_INT(jint(r, "steal.window_ms"), 20);
		CHECK_EQ_STR(jstr(r, "steal.percent"),
			     "unknown (no CPU time elapsed)");
		CHECK_EQ_STR(jstr(r, "steal.since_boot_percent"), "0.12");
		json_object_put(r);
	}
	r = run_root(fixture_path("malformed"), 20);
	if (r) {
		CHECK_EQ_STR(jstr(r, "steal.percent"), STAT_BAD);
		CHECK_EQ_STR(jstr(r, "steal.since_boot_percent"), STAT_BAD);
		json_object_put(r);
	}
}

/* ---- roots without the files, or with odd ones ---- */

static int write_file(const char *dir, const char *rel, const char *text)
{
	char path[4096];
	_cleanup_close_ int fd = -1;
	size_t len = strlen(text);

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	return write(fd, text, len) == (ssize_t)len ? 0 : -EIO;
}

static void check_required(struct json_object *r, const char *want)
{
	static const char *const required[] = {
		"thp_fault_alloc", "thp_fault_fallback", "thp_split_page",
		"compact_stall",
	};
	char key[128];

	CHECK_EQ_INT(jkeys(r, "vmstat.counters"), 4);
	for (size_t i = 0; i < ARRAY_SIZE(required); i++) {
		snprintf(key, sizeof(key), "vmstat.counters.%s", required[i]);
		CHECK_EQ_STR(jstr(r, key), want);
	}
}

static void check_odd_roots(void)
{
	char root[] = "/tmp/fleetbench-test-vmstat-XXXXXX";
	char proc[sizeof(root) + 8], path[sizeof(root) + 32];
	struct json_object *r;

	CHECK(mkdtemp(root) != NULL);

	/* nothing at all: the four still reported, as absent */
	r = run_root(root, 0);
	if (r) {
		check_required(r, "unknown (absent)");
		CHECK_EQ_STR(jstr(r, "steal.percent"),
			     "unknown (skipped (window 0))");
		CHECK_EQ_STR(jstr(r, "steal.since_boot_percent"),
			     "unknown (absent)");
		json_object_put(r);
	}
	r = run_root(root, 10);
	if (r) {
		CHECK_EQ_STR(jstr(r, "steal.percent"), "unknown (absent)");
		CHECK_EQ_STR(jstr(r, "steal.since_boot_percent"),
			     "unknown (absent)");
		json_object_put(r);
	}

	snprintf(proc, sizeof(proc), "%s/proc", root);
	CHECK_OK(mkdir(proc, 0755) < 0 ? -errno : 0);

	/* empty vmstat */
	CHECK_OK(write_file(root, "proc/vmstat", ""));
	r = run_root(root, 0);
	if (r) {
		check_required(r, "unknown (malformed: /proc/vmstat empty)");
		json_object_put(r);
	}

	/* a kernel without two of the four: complete file, so "absent" */
	CHECK_OK(write_file(root, "proc/vmstat",
			    "nr_free_pages 10\nthp_fault_alloc 5\n"
			    "compact_stall 7\nthpx 1\nthp_Bad 2\n"));
	r = run_root(root, 0);
	if (r) {
		CHECK_EQ_INT(jkeys(r, "vmstat.counters"), 4);
		CHECK_EQ_INT(jint(r, "vmstat.counters.thp_fault_alloc"), 5);
		CHECK_EQ_INT(jint(r, "vmstat.counters.compact_stall"), 7);
		CHECK_EQ_STR(jstr(r, "vmstat.counters.thp_fault_fallback"),
			     "unknown (absent)");
		CHECK_EQ_STR(jstr(r, "vmstat.counters.thp_split_page"),
			     "unknown (absent)");
		json_object_put(r);
	}

	/* an all-zero cpu line: no time since boot to share out */
	CHECK_OK(write_file(root, "proc/stat", "cpu  0 0 0 0 0 0 0 0 0 0\n"));
	r = run_root(root, 0);
	if (r) {
		CHECK_EQ_STR(jstr(r, "steal.since_boot_percent"),
			     "unknown (no CPU time elapsed)");
		json_object_put(r);
	}

	snprintf(path, sizeof(path), "%s/proc/vmstat", root);
	unlink(path);
	snprintf(path, sizeof(path), "%s/proc/stat", root);
	unlink(path);
	rmdir(proc);
	rmdir(root);
}

/* ---- the running machine ---- */

struct counter {
	char name[64];
	long long v;
};

/* The thp_* and compact_* counters of the real /proc/vmstat. */
static size_t read_counters(struct counter *c, size_t max)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/vmstat", "re");
	char name[128];
	long long v;
	size_t n = 0;

	while (f && n < max && fscanf(f, "%127s %lld", name, &v) == 2) {
		if (strncmp(name, "thp_", 4) && strncmp(name, "compact_", 8))
			continue;
		snprintf(c[n].name, sizeof(c[n].name), "%s", name);
		c[n++].v = v;
	}
	return n;
}

/* steal and total ticks of the real aggregate cpu line. */
static int read_cpu(unsigned long long *steal, unsigned long long *total)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/stat", "re");
	unsigned long long v[8];

	if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu",
			 &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
			 &v[7]) != 8)
		return -EBADMSG;
	*steal = v[7];
	*total = 0;
	for (size_t i = 0; i < 8; i++)
		*total += v[i];
	return 0;
}

static int64_t ms_between(const struct timespec *a, const struct timespec *b)
{
	return (int64_t)(b->tv_sec - a->tv_sec) * 1000 +
	       (b->tv_nsec - a->tv_nsec) / 1000000;
}

static void check_real(void)
{
	static struct counter before[256], after[256];
	unsigned long long s0, t0, s1, t1;
	struct timespec ta, tb;
	struct json_object *r;
	size_t nb, na;
	double pct, boot;

	/* window 0 skips the sample and does not wait */
	r = run_root("/", 0);
	if (r) {
		CHECK_EQ_INT(jint(r, "steal.window_ms"), 0);
		CHECK_EQ_STR(jstr(r, "steal.percent"),
			     "unknown (skipped (window 0))");
		CHECK(jdouble(r, "steal.since_boot_percent", &boot));
		json_object_put(r);
	}

	nb = read_counters(before, ARRAY_SIZE(before));
	CHECK_OK(read_cpu(&s0, &t0));
	clock_gettime(CLOCK_MONOTONIC, &ta);
	r = run_root("/", 50);
	clock_gettime(CLOCK_MONOTONIC, &tb);
	CHECK_OK(read_cpu(&s1, &t1));
	na = read_counters(after, ARRAY_SIZE(after));
	if (!r)
		return;

	/* the probe took at least its window, and the share is a share */
	CHECK_(ms_between(&ta, &tb) >= 50, "probe took %" PRId64 " ms",
	       ms_between(&ta, &tb));
	CHECK(jint(r, "meta.elapsed_ms") >= 50);
	CHECK_EQ_INT(jint(r, "steal.window_ms"), 50);
	CHECK_(jdouble(r, "steal.percent", &pct), "steal.percent: %s",
	       jstr(r, "steal.percent"));
	CHECK_(pct >= 0 && pct <= 100, "steal.percent %g", pct);
	/* sampled between our two reads, so between their extreme shares
	 * (monotonic counters), give or take the rounding */
	CHECK_(jdouble(r, "steal.since_boot_percent", &boot),
	       "steal.since_boot_percent: %s",
	       jstr(r, "steal.since_boot_percent"));
	CHECK_(boot >= 100.0 * (double)s0 / (double)t1 - 0.005 &&
		       boot <= 100.0 * (double)s1 / (double)t0 + 0.005,
	       "since_boot_percent %g outside [%g, %g]", boot,
	       100.0 * (double)s0 / (double)t1, 100.0 * (double)s1 / (double)t0);

	/* the same counters, each between our reads (events only grow) */
	CHECK_EQ_INT(na, nb);
	CHECK_EQ_INT(jkeys(r, "vmstat.counters"), na);
	for (size_t i = 0; i < na; i++) {
		char key[128];
		int64_t v;
		long long v0 = -1;

		snprintf(key, sizeof(key), "vmstat.counters.%s", after[i].name);
		v = jint(r, key);
		for (size_t j = 0; j < nb; j++)
			if (!strcmp(before[j].name, after[i].name))
				v0 = before[j].v;
		CHECK_(v0 >= 0 && v >= v0 && v <= after[i].v,
		       "%s == %" PRId64 ", read %lld before and %lld after", key,
		       v, v0, after[i].v);
	}
	json_object_put(r);
}

int main(void)
{
	check_stat_parse();
	check_steal_math();
	for (size_t i = 0; i < ARRAY_SIZE(trees); i++)
		check_tree(&trees[i]);
	check_malformed();
	check_fixture_window();
	check_odd_roots();
	check_real();
	return check_summary();
}
