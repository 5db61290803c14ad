/* SPDX-License-Identifier: MIT */
/*
 * The I/O engines' loops under the conditions that "cannot happen": an
 * SQPOLL ring whose SQ is still full when the loop has reaped a slot (the
 * NULL SQE that crashed the agent), completions with an error, short reads,
 * and every engine's latencies against what Little's law allows for the
 * IOPS and depth of the same window.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "check.h"
#include "cleanup.h"
#include "io_engine.h"

#define MiB (1ULL << 20)
#define BLOCK 4096u

static const struct {
	enum io_engine engine;
	const char *name;
} engines[] = {
	{ IO_ENGINE_SYNC, "pread" },
	{ IO_ENGINE_URING, "io_uring" },
	{ IO_ENGINE_URING_SQPOLL, "io_uring_sqpoll" },
	{ IO_ENGINE_URING_FIXED, "io_uring_fixed" },
	{ IO_ENGINE_LIBAIO, "libaio" },
};

/* A file of bytes of the pattern in dir; flags: O_DIRECT or 0. */
static int pattern_file(const char *dir, uint64_t bytes, int flags)
{
	int fd = bench_tmpfile(dir, O_DIRECT);

	if (fd < 0)
		return fd;
	if (io_pattern_write_file(fd, bytes, 7) < 0) {
		close(fd);
		return -EIO;
	}
	if (!flags) {
		/* The same file, buffered: reads served from the page cache
		 * complete inline, inside the submission. */
		char path[64];
		int bfd;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		bfd = open(path, O_RDONLY | O_CLOEXEC);
		close(fd);
		fd = bfd < 0 ? -errno : bfd;
	}
	return fd;
}

static int run_job(const struct io_job *job, struct io_stats *st,
		   char *why, size_t whylen)
{
	struct io_ctx *ctx;
	int r = io_ctx_new(job, &ctx, why, whylen);

	if (r < 0)
		return r;
	r = io_ctx_run(ctx, 1234, st);
	io_ctx_free(ctx);
	return r;
}

/*
 * The crash of issue 11: SQPOLL, a 2-entry ring kept full, and reads that
 * complete inside the kernel thread's submission (a cached file), so their
 * CQEs are posted before the thread publishes the SQ head. The loop reaps
 * a completion, finds no free SQE, and must wait for one: tens of
 * thousands of submissions, with the poller on the submitter's CPU and on
 * the other one. How often the ring is found full is the scheduler's:
 * 0 to 1,074 times in 60,000 I/Os here, and CI once saw none in both
 * runs; so the pair is run again, at most SQPOLL_ROUNDS times, until one
 * wait has been seen and survived.
 */
#define SQPOLL_ROUNDS 8
static void test_sqpoll_ring_full(const char *dir)
{
	static struct io_stats st;
	uint64_t waits = 0, ios = 0;
	int fd = pattern_file(dir, 8 * MiB, 0);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t old, one;

	CHECK_(fd >= 0, "pattern file: %s", strerror(-fd));
	if (fd < 0)
		return;
	CHECK_OK(sched_getaffinity(0, sizeof(old), &old));
	for (int round = 0; round < SQPOLL_ROUNDS && !waits; round++)
	for (long cpu = 0; cpu < (ncpu > 2 ? 2 : ncpu); cpu++) {
		struct io_job job = {
			.engine = IO_ENGINE_URING_SQPOLL,
			.fd = fd,
			.random = true,
			.span = 8 * MiB,
			.block = BLOCK,
			.depth = 2,
			.total_bytes = 60000ULL * BLOCK,
			.sq_aff = true,
			.sq_cpu = (unsigned int)cpu,
		};
		char why[256] = "";
		int r;

		/* The submitter on CPU 0, the poller on CPU 0 then 1. */
		CPU_ZERO(&one);
		CPU_SET(0, &one);
		sched_setaffinity(0, sizeof(one), &one);
		r = run_job(&job, &st, why, sizeof(why));
		if (r == -EPERM || r == -EINVAL || r == -EOPNOTSUPP) {
			/* The machine refuses SQPOLL: that is the fact. */
			printf("sqpoll on cpu %ld refused: %s (%s)\n", cpu,
			       strerror(-r), why);
			CHECK(strstr(why, "sqpoll") != NULL);
			round = SQPOLL_ROUNDS; /* a refusal does not change */
			continue;
		}
		CHECK_(r == 0, "sqpoll cpu %ld: %s (%s)", cpu, strerror(-r),
		       why);
		CHECK_EQ_INT(st.ios, 60000);
		CHECK_EQ_INT(st.retries, 0);
		waits += st.sq_full_waits;
		ios += st.ios;
		printf("sqpoll round %d, poller on cpu %ld: %llu I/Os, %llu SQ-full waits\n",
		       round + 1, cpu, (unsigned long long)st.ios,
		       (unsigned long long)st.sq_full_waits);
	}
	sched_setaffinity(0, sizeof(old), &old);
	/* The full SQ did happen, and every time it was waited out. */
	if (ios)
		CHECK_(waits > 0, "no SQ-full wait in %llu I/Os (%d rounds)",
		       (unsigned long long)ios, SQPOLL_ROUNDS);
	close(fd);
}

/* Completions with an error stop the run with that error, every engine. */
static void test_error_completions(const char *dir)
{
	static struct io_stats st;
	_cleanup_close_ int fd = pattern_file(dir, 1 * MiB, O_DIRECT);
	_cleanup_close_ int wfd = -1;
	char path[64];

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	/* Reads from a descriptor open for writing only: EBADF. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	wfd = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
	CHECK(wfd >= 0);
	for (size_t i = 0; i < ARRAY_SIZE(engines); i++) {
		struct io_job job = {
			.engine = engines[i].engine,
			.fd = wfd,
			.random = true,
			.span = 1 * MiB,
			.block = BLOCK,
			.depth = 8,
			.duration_ns = 100000000ULL,
		};
		char why[256] = "";
		int r = run_job(&job, &st, why, sizeof(why));

		if (r < 0 && why[0] && strcmp(why, "out of memory") &&
		    engines[i].engine == IO_ENGINE_URING_FIXED &&
		    r != -EBADF)
			continue; /* registration refused: not this test's */
		CHECK_(r == -EBADF, "%s on a write-only fd: %s (%s)",
		       engines[i].name, strerror(-r), why);
	}
}

/* A read past the end of the file is short: -EIO, never a sample. */
static void test_short_reads(const char *dir)
{
	static struct io_stats st;
	_cleanup_close_ int fd = pattern_file(dir, 1 * MiB, O_DIRECT);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(engines); i++) {
		struct io_job job = {
			.engine = engines[i].engine,
			.fd = fd,
			.random = false,
			/* 1 MiB written, 2 MiB read: the second half is
			 * past the end */
			.span = 2 * MiB,
			.block = BLOCK,
			.depth = 4,
			.total_bytes = 2 * MiB,
		};
		char why[256] = "";
		int r = run_job(&job, &st, why, sizeof(why));

		CHECK_(r == -EIO, "%s past EOF: %s (%s)", engines[i].name,
		       strerror(-r), why);
	}
}

/*
 * Little's law: in a closed loop at most depth I/Os are in flight, so the
 * latencies of the I/Os of a window add up to at most depth x its time,
 * and to most of it while the loop keeps the queue full. The median is at
 * most twice the mean and p99 at most 100 times (Markov), and no I/O
 * takes longer than the window. The old loop broke the first and the
 * last: an I/O stamped with the time of a reap that came before its issue.
 */
static void test_littles_law(const char *dir)
{
	static struct io_stats st;
	_cleanup_close_ int fd = pattern_file(dir, 64 * MiB, O_DIRECT);
	const unsigned int depths[] = { 1, 32 };

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(engines); i++) {
		for (size_t d = 0; d < ARRAY_SIZE(depths); d++) {
			unsigned int depth = engines[i].engine == IO_ENGINE_SYNC ?
						     1 :
						     depths[d];
			struct io_job job = {
				.engine = engines[i].engine,
				.fd = fd,
				.random = true,
				.span = 64 * MiB,
				.block = BLOCK,
				.depth = depth,
				.duration_ns = 300000000ULL,
				.check_pattern = true,
			};
			char why[256] = "";
			double mean, bound, p50, p99, window_ns;
			int r = run_job(&job, &st, why, sizeof(why));

			if (r < 0 && engines[i].engine ==
					     IO_ENGINE_URING_SQPOLL &&
			    strstr(why, "sqpoll")) {
				printf("%s: %s\n", engines[i].name, why);
				continue;
			}
			CHECK_(r == 0, "%s depth %u: %s (%s)",
			       engines[i].name, depth, strerror(-r), why);
			if (r < 0 || !st.ios)
				continue;
			window_ns = st.elapsed_s * 1e9;
			mean = st.lat.sum / (double)st.lat.count;
			bound = (double)depth * window_ns / (double)st.ios;
			p50 = lat_hist_quantile(&st.lat, 0.5);
			p99 = lat_hist_quantile(&st.lat, 0.99);
			printf("%-16s depth %2u: %7.0f IO/s, mean %8.1f us, depth/IOPS %8.1f us (%.2f), p50 %8.1f us, p99 %8.1f us, max %8.1f us\n",
			       engines[i].name, depth,
			       (double)st.ios / st.elapsed_s, mean / 1e3,
			       bound / 1e3, mean / bound, p50 / 1e3,
			       p99 / 1e3, (double)st.lat.max / 1e3);
			CHECK_EQ_INT(st.lat.count, st.ios);
			CHECK_(mean <= bound * 1.05,
			       "%s depth %u: mean %.0f ns above depth x window / I/Os %.0f ns",
			       engines[i].name, depth, mean, bound);
			CHECK_(mean >= bound * 0.25,
			       "%s depth %u: mean %.0f ns below a quarter of depth x window / I/Os %.0f ns",
			       engines[i].name, depth, mean, bound);
			CHECK_(p50 <= 2.01 * mean, "%s depth %u: p50 %.0f > 2 x mean %.0f",
			       engines[i].name, depth, p50, mean);
			CHECK_(p99 <= 100.5 * mean, "%s depth %u: p99 %.0f > 100 x mean %.0f",
			       engines[i].name, depth, p99, mean);
			CHECK_((double)st.lat.max <= window_ns * 1.01 + 1e6,
			       "%s depth %u: max %llu ns beyond the %.0f ns window",
			       engines[i].name, depth,
			       (unsigned long long)st.lat.max, window_ns);
			CHECK(st.checked > 0);
		}
	}
}

int main(void)
{
	char dir[] = "io-engine-XXXXXX"; /* in the build tree: a real disk */

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_sqpoll_ring_full(dir);
	test_error_completions(dir);
	test_short_reads(dir);
	test_littles_law(dir);
	rmdir(dir);
	return check_summary();
}
