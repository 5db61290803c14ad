/* SPDX-License-Identifier: MIT */
/*
 * randread and seqwrite: the latency histogram on known inputs, the data
 * pattern and the fully written file, a tiny real run of every engine, the
 * engines' skips agreeing with the io_uring probe, the tmpfs and space
 * refusals, --randread-file left untouched, and no file left behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <linux/magic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "bench.h"
#include "bench_test.h"
#include "check.h"
#include "cleanup.h"
#include "io_engine.h"
#include "probe.h"
#include "probe_test.h"
#include "rand.h"

#define MiB (1ULL << 20)

static const char *const randread_names[] = { "pread", "io_uring",
					       "io_uring_sqpoll",
					       "io_uring_fixed", "libaio" };
static const char *const seqwrite_names[] = { "pwrite", "io_uring" };

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank quantile of sorted v[0..n). */
static uint64_t exact_quantile(const uint64_t *v, size_t n, double q)
{
	size_t rank = (size_t)ceil(q * (double)n);

	return v[rank ? rank - 1 : 0];
}

static void test_histogram(void)
{
	static struct lat_hist h;
	static uint64_t v[200000];
	const double qs[] = { 0, 0.01, 0.5, 0.9, 0.99, 0.999, 1 };
	struct rng rng;

	lat_hist_reset(&h);
	CHECK(isnan(lat_hist_quantile(&h, 0.5)));

	/* below 256 ns every value has its own bucket: exact */
	for (uint64_t x = 10; x <= 200; x += 10)
		lat_hist_add(&h, x);
	CHECK_EQ_INT(h.count, 20);
	CHECK(lat_hist_quantile(&h, 0.5) == 100);
	CHECK(lat_hist_quantile(&h, 0.95) == 190);
	CHECK(lat_hist_quantile(&h, 0) == 10);
	CHECK(lat_hist_quantile(&h, 1) == 200);
	CHECK(isnan(lat_hist_quantile(&h, 1.5)));

	/* one value: every quantile is that value (clamped to min/max) */
	lat_hist_reset(&h);
	for (int i = 0; i < 1000; i++)
		lat_hist_add(&h, 123456789);
	CHECK(lat_hist_quantile(&h, 0.5) == 123456789);
	CHECK(lat_hist_quantile(&h, 0.999) == 123456789);

	/* 1..1000 us: p50 500 us, p99 990 us, p99.9 999 us within 0.4% */
	lat_hist_reset(&h);
	for (uint64_t us = 1; us <= 1000; us++)
		lat_hist_add(&h, us * 1000);
	CHECK(fabs(lat_hist_quantile(&h, 0.5) - 500e3) <= 500e3 * 0.004);
	CHECK(fabs(lat_hist_quantile(&h, 0.99) - 990e3) <= 990e3 * 0.004);
	CHECK(fabs(lat_hist_quantile(&h, 0.999) - 999e3) <= 999e3 * 0.004);
	CHECK(lat_hist_quantile(&h, 1) == 1000e3);
	CHECK(lat_hist_quantile(&h, 0) == 1e3);

	/* log-uniform 100 ns .. 100 ms against the exact order statistics */
	lat_hist_reset(&h);
	rng_seed(&rng, 7);
	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		v[i] = (uint64_t)(100.0 * pow(1e6, rng_double(&rng)));
		lat_hist_add(&h, v[i]);
	}
	qsort(v, ARRAY_SIZE(v), sizeof(v[0]), cmp_u64);
	for (size_t i = 0; i < ARRAY_SIZE(qs); i++) {
		double e = (double)exact_quantile(v, ARRAY_SIZE(v), qs[i]);
		double got = lat_hist_quantile(&h, qs[i]);

		CHECK_(fabs(got - e) <= e * 0.004 + 0.5,
		       "q %.3f: histogram %.1f, exact %.1f", qs[i], got, e);
	}
	/* far out: a 1000 s latency still lands in a bucket */
	lat_hist_add(&h, 1000000000000ULL);
	CHECK(lat_hist_quantile(&h, 1) == 1e12);
}

static void test_pattern(void)
{
	_cleanup_free_ void *buf = NULL;
	uint64_t noise[IO_PATTERN_BLOCK / 8];
	char name[32];

	for (size_t i = 0; i < ARRAY_SIZE(noise); i++)
		noise[i] = 0x0101010101010101ULL * (i % 250 + 1);
	CHECK_EQ_INT(posix_memalign(&buf, 4096, 4 * IO_PATTERN_BLOCK), 0);
	io_pattern_fill(buf, 4 * IO_PATTERN_BLOCK, 8192, noise);
	CHECK(io_pattern_check(buf, 8192));
	CHECK(io_pattern_check((char *)buf + 3 * IO_PATTERN_BLOCK,
			       8192 + 3 * IO_PATTERN_BLOCK));
	CHECK(!io_pattern_check(buf, 4096)); /* from the wrong place */
	memset(buf, 0, IO_PATTERN_BLOCK);
	CHECK(!io_pattern_check(buf, 8192)); /* a hole reads zeros */

	CHECK_EQ_STR(io_fs_name(TMPFS_MAGIC, name, sizeof(name)), "tmpfs");
	CHECK_EQ_STR(io_fs_name(EXT4_SUPER_MAGIC, name, sizeof(name)), "ext4");
	CHECK_EQ_STR(io_fs_name(0x1234, name, sizeof(name)), "fs 0x1234");
	CHECK(io_fs_is_memory(TMPFS_MAGIC));
	CHECK(!io_fs_is_memory(EXT4_SUPER_MAGIC));
}

/* The file the agent writes is data all the way: no hole, no unwritten
 * extent, every block read back with O_DIRECT is the pattern. */
static void test_file_written(const char *dir)
{
	const uint64_t bytes = 8 * MiB;
	_cleanup_free_ void *buf = NULL;
	struct stat st;
	struct rng rng;
	int fd, nonzero = 0;

	fd = bench_tmpfile(dir, O_DIRECT);
	CHECK_OK(fd);
	if (fd < 0)
		return;
	CHECK_OK(io_pattern_write_file(fd, bytes, 99));
	CHECK_OK(fstat(fd, &st));
	CHECK_EQ_INT(st.st_size, bytes);
	CHECK((uint64_t)st.st_blocks * 512 >= bytes);
	CHECK_EQ_INT(lseek(fd, 0, SEEK_HOLE), bytes);
	CHECK_EQ_INT(posix_memalign(&buf, 4096, IO_PATTERN_BLOCK), 0);
	rng_seed(&rng, 3);
	for (int i = 0; i < 64; i++) {
		uint64_t off = rng_below(&rng, bytes / IO_PATTERN_BLOCK) *
			       IO_PATTERN_BLOCK;
		const unsigned char *b = buf;

		memset(buf, 0, IO_PATTERN_BLOCK);
		CHECK_EQ_INT(pread(fd, buf, IO_PATTERN_BLOCK, (off_t)off),
			     IO_PATTERN_BLOCK);
		CHECK(io_pattern_check(buf, off));
		for (size_t k = 16; k < IO_PATTERN_BLOCK; k++)
			nonzero += b[k] != 0;
	}
	/* the body is non-zero too, not just the header */
	CHECK_EQ_INT(nonzero, 64 * (IO_PATTERN_BLOCK - 16));
	close(fd);
}

static const char *skip_reason(struct json_object *r)
{
	return r && !strcmp(jstatus(r), "skipped") ?
		       json_object_get_string(jget(r, "skip_reason")) :
		       NULL;
}

/* The samples of metric in result r (NULL when none). */
static struct json_object *samples(struct json_object *r, const char *metric)
{
	return jget(jmetric(r, metric), "samples");
}

static double sample(struct json_object *r, const char *metric, size_t i)
{
	struct json_object *s = samples(r, metric);

	return s && i < json_object_array_length(s) ?
		       json_object_get_double(json_object_array_get_idx(s, i)) :
		       NAN;
}

static struct bench_params tiny_params(const char *dir)
{
	return (struct bench_params){
		.profile = "quick",
		.dir = (char *)dir,
		.repeats = 2,
		.file_bytes = 16 * MiB,
		.io_ms = 100,
		.iodepth = 32,
		.seq_bytes = 4 * MiB,
		.seq_block = 128 << 10,
		.steal_threshold_pct = 5,
		.seed = 42,
	};
}

static struct json_object *suite(const struct bench_params *p)
{
	struct json_object *report = NULL;
	char err[512] = "";
	int r = jbench_run(p, "randread,seqwrite", &report, err,
				sizeof(err));

	CHECK_(r == 0, "bench_suite_run: %s (%s)", strerror(-r), err);
	return r == 0 ? report : NULL;
}

/* Every variant: ok with one sample per repeat, iops (or MB/s) > 0 and
 * p50 <= p99 (<= p99.9), or skipped with a reason. */
static void check_measured(struct json_object *report, const char *bench,
			   const char *const *names, size_t n, long long repeats)
{
	bool rr = !strcmp(bench, "randread");

	for (size_t i = 0; i < n; i++) {
		struct json_object *r = jresult(report, bench, names[i]);
		const char *why = skip_reason(r);

		CHECK_(r != NULL, "%s/%s missing", bench, names[i]);
		if (!r)
			continue;
		if (why) {
			CHECK_(*why, "%s/%s skipped without a reason", bench,
			       names[i]);
			printf("%s/%s skipped: %s\n", bench, names[i], why);
			continue;
		}
		CHECK_EQ_INT(json_object_array_length(
				     samples(r, rr ? "iops" : "mb_per_s")),
			     repeats);
		CHECK_EQ_INT(json_object_array_length(jget(r, "windows")),
			     repeats);
		for (long long k = 0; k < repeats; k++) {
			double rate = sample(r, rr ? "iops" : "mb_per_s", k);
			double p50 = sample(r, "lat_p50_us", k);
			double p99 = sample(r, "lat_p99_us", k);
			double p999 = rr ? sample(r, "lat_p999_us", k) : p99;
			double cpu = sample(r, "cpu_s_per_1k_io", k);

			CHECK_(rate > 0 && p50 > 0 && p50 <= p99 &&
				       p99 <= p999 && cpu >= 0,
			       "%s/%s repeat %lld: rate %g p50 %g p99 %g p99.9 %g cpu %g",
			       bench, names[i], k, rate, p50, p99, p999, cpu);
			printf("%s/%s repeat %lld: %.0f %s, p50 %.1f us, p99 %.1f us, p99.9 %.1f us\n",
			       bench, names[i], k, rate, rr ? "IOPS" : "MB/s",
			       p50, p99, p999);
		}
	}
}

/* io_uring variants agree with what the probe says this host permits. */
static void check_probe_agrees(struct json_object *report)
{
	struct probe_opts opts = { .root = "/", .work_dir = "/var/tmp" };
	struct json_object *probe = NULL;
	const char *setup, *sqpoll;
	const char *why_uring, *why_sqpoll;

	CHECK_OK(probe_run(&opts, &probe));
	if (!probe)
		return;
	setup = jstr(probe, "io_uring.setup");
	sqpoll = jstr(probe, "io_uring.sqpoll");
	why_uring = skip_reason(jresult(report, "randread", "io_uring"));
	why_sqpoll = skip_reason(
		jresult(report, "randread", "io_uring_sqpoll"));
	printf("probe: io_uring setup %s, sqpoll %s\n", setup, sqpoll);
	if (!strcmp(setup, "ok")) {
		CHECK_(why_uring == NULL, "probe: io_uring ok, variant: %s",
		       why_uring);
		CHECK(skip_reason(jresult(report, "randread",
					  "io_uring_fixed")) == NULL);
		CHECK(skip_reason(jresult(report, "seqwrite",
					  "io_uring")) == NULL);
	} else {
		CHECK(why_uring != NULL);
	}
	if (!strcmp(sqpoll, "ok")) {
		CHECK_(why_sqpoll == NULL, "probe: sqpoll ok, variant: %s",
		       why_sqpoll);
	} else if (!strcmp(setup, "ok")) {
		char want[64];

		snprintf(want, sizeof(want), "sqpoll: %s", sqpoll);
		CHECK_EQ_STR(why_sqpoll, want);
	}
	json_object_put(probe);
}

static void check_params(struct json_object *report)
{
	struct json_object *r = jresult(report, "randread", "io_uring");

	CHECK_EQ_INT(jpint(r, "file_bytes"), 16 * MiB);
	CHECK_EQ_INT(jpint(r, "iodepth"), 32);
	CHECK_EQ_INT(jpint(r, "block_bytes"), 4096);
	CHECK_EQ_STR(jpstr(r, "engine"), "io_uring");
	r = jresult(report, "randread", "pread");
	CHECK_EQ_INT(jpint(r, "iodepth"), 1);
	r = jresult(report, "seqwrite", "io_uring");
	CHECK_EQ_INT(jpint(r, "block_bytes"), 128 << 10);
	CHECK_EQ_INT(jpint(r, "bytes"), 4 * MiB);
}

static void check_comparisons(struct json_object *report)
{
	static const char *const names[] = {
		"iouring_vs_pread", "iouring_vs_libaio",
		"iouring_fixed_vs_iouring", "sqpoll_vs_iouring",
		"seqwrite_iouring_vs_pwrite",
	};

	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		struct json_object *c = jcomparison(report, names[i]);
		struct json_object *ratio = c ? jget(c, "ratio") : NULL;

		CHECK_(c != NULL, "comparison %s missing", names[i]);
		if (!c)
			continue;
		CHECK(ratio != NULL || jget(c, "reason") != NULL);
		if (ratio)
			printf("%s = %.3f\n", names[i],
			       json_object_get_double(ratio));
	}
}

static void test_real_run(const char *dir)
{
	struct bench_params p = tiny_params(dir);
	struct json_object *report;

	CHECK_EQ_INT(bench_dir_entries(dir), 0);
	report = suite(&p);
	if (!report)
		return;
	check_measured(report, "randread", randread_names,
		       ARRAY_SIZE(randread_names), p.repeats);
	check_measured(report, "seqwrite", seqwrite_names,
		       ARRAY_SIZE(seqwrite_names), p.repeats);
	/* ext4 on this machine and CI: nothing of randread/seqwrite may be
	 * skipped but by the host's io_uring policy */
	CHECK(skip_reason(jresult(report, "randread", "pread")) == NULL);
	CHECK(skip_reason(jresult(report, "randread", "libaio")) == NULL);
	CHECK(skip_reason(jresult(report, "seqwrite", "pwrite")) == NULL);
	check_probe_agrees(report);
	check_params(report);
	check_comparisons(report);
	json_object_put(report);
	CHECK_EQ_INT(bench_dir_entries(dir), 0);
}

/* Every variant of both benchmarks skipped, the reason containing want. */
static void check_all_skipped(struct json_object *report, const char *want,
			      const char *alt)
{
	for (size_t i = 0; i < ARRAY_SIZE(randread_names) + 2; i++) {
		bool rr = i < ARRAY_SIZE(randread_names);
		const char *name =
			rr ? randread_names[i] :
			     seqwrite_names[i - ARRAY_SIZE(randread_names)];
		const char *why = skip_reason(jresult(
			report, rr ? "randread" : "seqwrite", name));

		CHECK_(why && (strstr(why, want) || (alt && strstr(why, alt))),
		       "%s/%s: skip reason '%s' lacks '%s'",
		       rr ? "randread" : "seqwrite", name, why ? why : "(none)",
		       want);
	}
}

/* tmpfs: refused O_DIRECT before Linux 6.6, accepts it since, but reaches
 * no device either way: every variant skipped, saying so. */
static void test_tmpfs(void)
{
	struct bench_params p = tiny_params("/dev/shm");
	struct json_object *report;
	struct statvfs sv;
	struct stat st;
	const char *alt = NULL;

	p.repeats = 1;
	if (stat("/dev/shm", &st) < 0) {
		report = suite(&p);
		if (report)
			check_all_skipped(report,
					  "cannot use directory '/dev/shm'",
					  NULL);
		json_object_put(report);
		return;
	}
	/* a small /dev/shm (containers: 64 MiB) refuses for space first */
	if (statvfs("/dev/shm", &sv) == 0 &&
	    (uint64_t)sv.f_bavail * sv.f_frsize < 1024 * MiB)
		alt = "refused: ";
	report = suite(&p);
	if (!report)
		return;
	check_all_skipped(report, "tmpfs on /dev/shm", alt);
	printf("tmpfs: %s\n",
	       skip_reason(jresult(report, "randread", "io_uring")));
	json_object_put(report);
}

static void test_space_refusal(const char *dir)
{
	struct bench_params p = tiny_params(dir);
	struct json_object *report;
	double t0 = bench_now();

	p.file_bytes = 100ULL << 40;
	p.seq_bytes = 100ULL << 40;
	report = suite(&p);
	if (!report)
		return;
	check_all_skipped(report, "refused: ", NULL);
	printf("space: %s\n",
	       skip_reason(jresult(report, "randread", "pread")));
	CHECK(bench_now() - t0 < 5); /* refused before writing anything */
	json_object_put(report);
	CHECK_EQ_INT(bench_dir_entries(dir), 0);
}

static void test_bad_block(const char *dir)
{
	struct bench_params p = tiny_params(dir);
	struct json_object *report;
	const char *why;

	p.seq_block = 6000;
	p.file_bytes = 1000; /* less than one block */
	report = suite(&p);
	if (!report)
		return;
	why = skip_reason(jresult(report, "seqwrite", "io_uring"));
	CHECK(why && strstr(why, "multiple of 4096"));
	why = skip_reason(jresult(report, "randread", "libaio"));
	CHECK(why && strstr(why, "smaller than one 4096-byte block"));
	json_object_put(report);
}

/* --randread-file: read, never written, never removed. */
static void test_given_file(const char *dir)
{
	struct bench_params p = tiny_params(dir);
	struct json_object *report;
	struct stat before, after;
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/given", dir);
	fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_DIRECT | O_CLOEXEC,
		  0600);
	CHECK_OK(fd);
	if (fd < 0)
		return;
	CHECK_OK(io_pattern_write_file(fd, 4 * MiB + 4096, 5));
	close(fd);
	CHECK_OK(stat(path, &before));
	p.randread_file = path;
	p.repeats = 1;
	p.io_ms = 50;
	report = suite(&p);
	if (report) {
		struct json_object *r =
			jresult(report, "randread", "io_uring");

		CHECK(skip_reason(jresult(report, "randread", "pread")) ==
		      NULL);
		CHECK(sample(jresult(report, "randread", "pread"), "iops",
			     0) > 0);
		CHECK_EQ_INT(jpint(r, "file_bytes"), 4 * MiB + 4096);
		CHECK_EQ_STR(jpstr(r, "file"), path);
		json_object_put(report);
	}
	CHECK_OK(stat(path, &after));
	CHECK_EQ_INT(after.st_size, before.st_size);
	CHECK(after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
	      after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
	CHECK_OK(unlink(path));

	/* a missing file: skipped, saying which */
	p.randread_file = path;
	report = suite(&p);
	if (report) {
		const char *why = skip_reason(
			jresult(report, "randread", "io_uring"));

		CHECK(why && strstr(why, "cannot open") && strstr(why, path));
		json_object_put(report);
	}
}

int main(void)
{
	char dir[] = "/var/tmp/fleetbench-test-io-XXXXXX";

	test_histogram();
	test_pattern();
	if (!mkdtemp(dir)) {
		perror("mkdtemp /var/tmp");
		return 1;
	}
	test_file_written(dir);
	test_real_run(dir);
	test_tmpfs();
	test_space_refusal(dir);
	test_bad_block(dir);
	test_given_file(dir);
	CHECK_EQ_INT(bench_dir_entries(dir), 0);
	rmdir(dir);
	return check_summary();
}
