/* SPDX-License-Identifier: MIT */
/*
 * writeback: a tiny real run under the host's vm.dirty_* (recorded as they
 * are in /proc/sys/vm), the tuned variant only when asked and the limits
 * restored after it (also when its process is SIGKILLed in the tuned
 * window), the tmpfs and space refusals, the method key, and no file left
 * behind.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "bench_test.h"
#include "check.h"
#include "probe_test.h"

#define MiB (1ULL << 20)
#define TUNED_BYTES (64 * MiB)

static const char *const dirty_names[] = {
	"dirty_ratio",		  "dirty_background_ratio",
	"dirty_bytes",		  "dirty_background_bytes",
	"dirty_expire_centisecs", "dirty_writeback_centisecs",
};
#define N_DIRTY (sizeof(dirty_names) / sizeof(dirty_names[0]))

/* /proc/sys/vm/<name> as the kernel prints it now; INT64_MIN unreadable. */
static int64_t vm_read(const char *name)
{
	char path[128];
	long long v;
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/proc/sys/vm/%s", name);
	f = fopen(path, "re");
	if (!f)
		return INT64_MIN;
	ok = fscanf(f, "%lld", &v) == 1;
	fclose(f);
	return ok ? v : INT64_MIN;
}

static void vm_read_all(int64_t v[N_DIRTY])
{
	for (size_t i = 0; i < N_DIRTY; i++)
		v[i] = vm_read(dirty_names[i]);
}

/* Every setting as it was in before. */
static void check_unchanged(const int64_t before[N_DIRTY], const char *who)
{
	int64_t now[N_DIRTY];

	vm_read_all(now);
	for (size_t i = 0; i < N_DIRTY; i++)
		CHECK_(now[i] == before[i], "%s: vm.%s is %lld, was %lld", who,
		       dirty_names[i], (long long)now[i],
		       (long long)before[i]);
}

static struct bench_params tiny_params(const char *dir)
{
	return (struct bench_params){
		.profile = "quick",
		.dir = (char *)dir,
		.repeats = 2,
		.wb_bytes = 8 * MiB,
		.wb_fsync_bytes = 2 * MiB,
		.steal_threshold_pct = 5,
		.seed = 42,
	};
}

static struct json_object *suite(const struct bench_params *p)
{
	struct json_object *report = NULL;
	char err[512] = "";
	int r = jbench_run(p, "writeback", &report, err, sizeof(err));

	CHECK_(r == 0, "bench_suite_run: %s (%s)", strerror(-r), err);
	return r == 0 ? report : NULL;
}

/* The samples of metric in res (n of them expected) in out; 0 or -1. */
static int samples(struct json_object *res, const char *metric, double *out,
		   size_t n)
{
	struct json_object *s = jget(jmetric(res, metric), "samples");

	CHECK_(s && json_object_array_length(s) == n,
	       "%s %s: %zu samples, want %zu", jstr(res, "variant"), metric,
	       s ? json_object_array_length(s) : 0, n);
	if (!s || json_object_array_length(s) != n)
		return -1;
	for (size_t i = 0; i < n; i++)
		out[i] = json_object_get_double(json_object_array_get_idx(s, i));
	return 0;
}

/* ok, one sample of every metric per repeat, p50 <= p99 <= max, stalls
 * no more than writes, a positive rate, 4 fsyncs of 2 MiB. */
static void check_measured(struct json_object *res, size_t repeats)
{
	double p50[8], p99[8], max[8], stalls[8], mbps[8], fsync[8], peak[8];
	int64_t writes = jpint(res, "writes");

	CHECK_EQ_STR(jstatus(res), "ok");
	CHECK_EQ_INT(writes, 8 * MiB / (128 << 10));
	CHECK_EQ_INT(jpint(res, "fsyncs"), 4);
	CHECK_EQ_INT(jpint(res, "block_bytes"), 128 << 10);
	CHECK_EQ_INT(jpint(res, "wb_bytes"), 8 * MiB);
	CHECK_EQ_INT(jpint(res, "wb_fsync_bytes"), 2 * MiB);
	CHECK_EQ_INT(jlen(res, "metrics"), 7);
	CHECK_EQ_INT(jlen(res, "windows"), repeats);
	if (samples(res, "write_p50_us", p50, repeats) < 0 ||
	    samples(res, "write_p99_us", p99, repeats) < 0 ||
	    samples(res, "write_max_us", max, repeats) < 0 ||
	    samples(res, "stalls_100ms", stalls, repeats) < 0 ||
	    samples(res, "mb_per_s", mbps, repeats) < 0 ||
	    samples(res, "fsync_max_ms", fsync, repeats) < 0 ||
	    samples(res, "dirty_peak_mb", peak, repeats) < 0)
		return;
	for (size_t i = 0; i < repeats; i++) {
		CHECK_(p50[i] > 0 && p50[i] <= p99[i] && p99[i] <= max[i],
		       "%s repeat %zu: p50 %g p99 %g max %g us",
		       jstr(res, "variant"), i, p50[i], p99[i], max[i]);
		CHECK_(stalls[i] >= 0 && stalls[i] <= (double)writes,
		       "stalls %g of %lld writes", stalls[i], (long long)writes);
		/* a stall is a write over 100 ms: none unless the max is one */
		CHECK(stalls[i] == 0 || max[i] > 100000);
		CHECK(mbps[i] > 0);
		CHECK(fsync[i] >= 0);
		CHECK(peak[i] >= 0);
		printf("%s repeat %zu: p50 %.1f p99 %.1f max %.1f us, %g stalls, %.0f MB/s, fsync max %.1f ms, dirty peak %.0f MB\n",
		       jstr(res, "variant"), i, p50[i], p99[i], max[i],
		       stalls[i], mbps[i], fsync[i], peak[i]);
	}
}

/* The variant's vm.* parameters are want[] (as read from /proc/sys/vm). */
static void check_dirty_params(struct json_object *res,
			       const int64_t want[N_DIRTY])
{
	char key[64];

	for (size_t i = 0; i < N_DIRTY; i++) {
		snprintf(key, sizeof(key), "vm.%s", dirty_names[i]);
		CHECK_(jpint(res, key) == want[i], "%s %s = %lld, /proc %lld",
		       jstr(res, "variant"), key, (long long)jpint(res, key),
		       (long long)want[i]);
	}
	CHECK(jpint(res, "dirty_threshold_bytes") > 0);
	CHECK(jpint(res, "dirty_background_threshold_bytes") > 0);
}

/* Under the host's settings only: no tuned variant, no comparison. */
static void test_host(const char *dir)
{
	struct bench_params p = tiny_params(dir);
	struct json_object *report, *res;
	int64_t before[N_DIRTY];

	vm_read_all(before);
	report = suite(&p);
	if (!report)
		return;
	res = jresult(report, "writeback", "host");
	check_measured(res, 2);
	check_dirty_params(res, before);
	CHECK_EQ_STR(jpstr(res, "filesystem"), "ext4");
	CHECK(jresult(report, "writeback", "tuned") == NULL);
	CHECK_EQ_INT(jlen(report, "comparisons"), 0);
	CHECK_EQ_INT(jlen(report, "benchmarks"), 1);
	check_unchanged(before, "host run");
	json_object_put(report);
	CHECK_EQ_INT(bench_dir_entries(dir), 0);
}

/*
 * --writeback-dirty-bytes 64M: as root, tuned measured under vm.dirty_bytes
 * 64M (background 32M) and every setting put back; otherwise tuned is
 * skipped, since /proc/sys/vm cannot be written, and nothing changes.
 */
static void test_tuned(const char *dir)
{
	struct bench_params p = tiny_params(dir);
	struct json_object *report, *host, *tuned, *c;
	int64_t before[N_DIRTY], during[N_DIRTY];

	vm_read_all(before);
	memcpy(during, before, sizeof(during));
	during[0] = during[1] = 0; /* writing the bytes zeroes the ratios */
	during[2] = TUNED_BYTES;
	during[3] = TUNED_BYTES / 2;
	p.writeback_dirty_bytes = TUNED_BYTES;
	report = suite(&p);
	if (!report)
		return;
	host = jresult(report, "writeback", "host");
	tuned = jresult(report, "writeback", "tuned");
	check_measured(host, 2);
	check_dirty_params(host, before);
	CHECK(tuned != NULL);
	CHECK_EQ_INT(jpint(tuned, "writeback_dirty_bytes"), TUNED_BYTES);
	CHECK_EQ_INT(jpint(tuned, "writeback_dirty_background_bytes"),
		     TUNED_BYTES / 2);
	c = jcomparison(report, "writeback_tuned_vs_host");
	CHECK(c != NULL);
	CHECK_EQ_STR(jstr(c, "metric"), "write_p99_us");
	CHECK_EQ_STR(jstr(c, "numerator"), "tuned");
	if (geteuid() == 0) {
		check_measured(tuned, 2);
		check_dirty_params(tuned, during);
		CHECK_EQ_INT(jpint(tuned, "dirty_threshold_bytes"), TUNED_BYTES);
		CHECK_EQ_STR(jpstr(tuned, "tuned_restored"), "ok");
		CHECK(jget(c, "ratio") != NULL);
		printf("writeback_tuned_vs_host = %s\n", jstr(c, "ratio"));
	} else {
		CHECK_EQ_STR(jstatus(tuned), "skipped");
		CHECK_(strstr(jstr(tuned, "skip_reason"), "EACCES") != NULL,
		       "tuned: %s", jstr(tuned, "skip_reason"));
		CHECK(jget(c, "reason") != NULL);
	}
	check_unchanged(before, "tuned run");
	json_object_put(report);
	CHECK_EQ_INT(bench_dir_entries(dir), 0);
}

/*
 * The benchmark's process SIGKILLed in its second window, tuned's first
 * (host runs first in repeat 0): the agent writes the limits back. Not
 * root, tuned is skipped and the second window is host's: nothing to
 * restore, and nothing changed.
 */
static void test_tuned_crash(const char *dir)
{
	struct bench_params p = tiny_params(dir);
	struct json_object *report, *res;
	int64_t before[N_DIRTY];
	const char *want = geteuid() == 0 ? "SIGKILL in writeback/tuned" :
					    "SIGKILL in writeback/host";

	vm_read_all(before);
	p.writeback_dirty_bytes = TUNED_BYTES;
	setenv("FLEETBENCH_FAULT", "bench-writeback@2", 1);
	report = suite(&p);
	unsetenv("FLEETBENCH_FAULT");
	if (!report)
		return;
	res = jresult(report, "writeback", "host");
	CHECK_EQ_STR(jstatus(res), "failed");
	CHECK_(strstr(jstr(res, "failure"), want) != NULL, "host: %s",
	       jstr(res, "failure"));
	CHECK_(strstr(jstr(res, "failure"), "restoring") == NULL,
	       "restore failed: %s", jstr(res, "failure"));
	CHECK_EQ_INT(jfailed(report), 2);
	check_unchanged(before, "killed run");
	json_object_put(report);
	CHECK_EQ_INT(bench_dir_entries(dir), 0);
}

/* A memory-backed directory: nothing is written back there. */
static void test_tmpfs(void)
{
	struct bench_params p = tiny_params("/dev/shm");
	struct json_object *report, *res;
	struct stat st;

	report = suite(&p);
	if (!report)
		return;
	res = jresult(report, "writeback", "host");
	CHECK_EQ_STR(jstatus(res), "skipped");
	if (stat("/dev/shm", &st) < 0)
		CHECK_(strstr(jstr(res, "skip_reason"),
			      "cannot use directory '/dev/shm'") != NULL,
		       "%s", jstr(res, "skip_reason"));
	else
		CHECK_EQ_STR(jstr(res, "skip_reason"),
			     "tmpfs on /dev/shm is memory-backed: nothing is written back");
	CHECK_EQ_INT(jlen(res, "metrics"), 0);
	json_object_put(report);
}

/* 100 TiB: refused before a byte is written. */
static void test_space_refusal(const char *dir)
{
	struct bench_params p = tiny_params(dir);
	struct json_object *report, *res;

	p.wb_bytes = 100ULL << 40;
	report = suite(&p);
	if (!report)
		return;
	res = jresult(report, "writeback", "host");
	CHECK_EQ_STR(jstatus(res), "skipped");
	CHECK_(!strncmp(jstr(res, "skip_reason"), "refused: a 104857600 MiB file",
			29),
	       "%s", jstr(res, "skip_reason"));
	json_object_put(report);
	CHECK_EQ_INT(bench_dir_entries(dir), 0);
}

/* The method: the profile's sizes, and each difference in the key. */
static void test_method(void)
{
	struct bench_params p = { 0 };
	Fleetbench__Method *m = NULL;

	CHECK_OK(bench_params_profile(&p, "quick"));
	p.profile = "quick";
	CHECK_EQ_INT(p.wb_bytes, 64 * MiB);
	CHECK_EQ_INT(p.wb_fsync_bytes, 16 * MiB);
	CHECK_OK(bench_params_profile(&p, "standard"));
	CHECK_EQ_INT(p.wb_bytes, 256 * MiB);
	CHECK_EQ_INT(p.wb_fsync_bytes, 32 * MiB);
	CHECK_OK(bench_params_profile(&p, "full"));
	CHECK_EQ_INT(p.wb_bytes, 6144 * MiB);
	p.profile = "full";
	CHECK_OK(bench_method_new(&p, NULL, &m));
	CHECK_EQ_STR(m->key, "full");
	CHECK(m->has_wb_bytes && m->wb_bytes == 6144 * MiB);
	CHECK(m->has_writeback_dirty_bytes && m->writeback_dirty_bytes == 0);
	fleetbench__method__free_unpacked(m, NULL);
	p.wb_bytes = 8 * MiB;
	p.wb_fsync_bytes = 2 * MiB;
	p.writeback_dirty_bytes = TUNED_BYTES;
	CHECK_OK(bench_method_new(&p, "writeback", &m));
	CHECK_EQ_STR(m->key, "full+wb_bytes=8M+wb_fsync_bytes=2M"
			     "+writeback_dirty_bytes=64M+only=writeback");
	CHECK(m->has_wb_fsync_bytes && m->wb_fsync_bytes == 2 * MiB);
	fleetbench__method__free_unpacked(m, NULL);
}

int main(void)
{
	char dir[] = "/var/tmp/fleetbench-test-wb-XXXXXX";

	test_method();
	if (!mkdtemp(dir)) {
		perror("mkdtemp /var/tmp");
		return 1;
	}
	test_host(dir);
	test_tuned(dir);
	test_tuned_crash(dir);
	test_tmpfs();
	test_space_refusal(dir);
	CHECK_EQ_INT(bench_dir_entries(dir), 0);
	rmdir(dir);
	return check_summary();
}
