/* SPDX-License-Identifier: MIT */
/*
 * io_scaling: a tiny real sweep (every point ok with one sample per repeat,
 * the knee one of the depths and by its rule, best_iops the best point of
 * its repeat), its place in the profiles (full only, the quick and standard
 * method keys unchanged), scaling_ms in the method, the tmpfs refusal, and
 * no file left behind.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
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
#include "probe_test.h"

#define MiB (1ULL << 20)
#define MAX_COUNTS 66

static const unsigned int depths[] = { 1, 4, 16, 32, 64 };
#define NDEPTHS ARRAY_SIZE(depths)

/* The job counts the benchmark sweeps: 1, 2, 4, ... below the online
 * vCPUs, and their count. */
static size_t job_counts(unsigned int *ret)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int n = ncpu > 0 ? (unsigned int)ncpu : 1;
	size_t k = 0;

	for (unsigned int j = 1; j < n; j *= 2)
		ret[k++] = j;
	ret[k++] = n;
	return k;
}

static int dir_entries(const char *path)
{
	_cleanup_closedir_ DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	return n;
}

static const char *skip_reason(struct json_object *r)
{
	return r && !strcmp(jstatus(r), "skipped") ?
		       json_object_get_string(jget(r, "skip_reason")) :
		       NULL;
}

static size_t nsamples(struct json_object *r, const char *metric)
{
	struct json_object *s = jget(jmetric(r, metric), "samples");

	return s ? json_object_array_length(s) : 0;
}

static double sample(struct json_object *r, const char *metric, size_t i)
{
	struct json_object *s = jget(jmetric(r, metric), "samples");

	return s && i < json_object_array_length(s) ?
		       json_object_get_double(json_object_array_get_idx(s, i)) :
		       NAN;
}

static struct json_object *point(struct json_object *report, unsigned int j,
				 unsigned int d)
{
	char name[48];

	snprintf(name, sizeof(name), "j%u_qd%u", j, d);
	return jresult(report, "io_scaling", name);
}

static struct bench_params tiny_params(const char *dir)
{
	return (struct bench_params){
		.profile = "quick",
		.dir = (char *)dir,
		.repeats = 2,
		.file_bytes = 16 * MiB,
		.scaling_ms = 20,
		.io_ms = 10,
		.iodepth = 32,
		.steal_threshold_pct = 5,
		.seed = 42,
	};
}

static struct json_object *suite(const struct bench_params *p,
				 const char *only)
{
	struct json_object *report = NULL;
	char err[512] = "";
	int r = jbench_run(p, only, &report, err, sizeof(err));

	CHECK_(r == 0, "bench_suite_run: %s (%s)", strerror(-r), err);
	return r == 0 ? report : NULL;
}

/* The knee of job count j in repeat k, by the rule, from the points'
 * reported samples; its best IOPS in *ret_best. */
static unsigned int expected_knee(struct json_object *report, unsigned int j,
				  size_t k, double *ret_best)
{
	double best = 0;

	for (size_t d = 0; d < NDEPTHS; d++) {
		double v = sample(point(report, j, depths[d]), "iops", k);

		if (v > best)
			best = v;
	}
	*ret_best = best;
	for (size_t d = 0; d < NDEPTHS; d++)
		if (sample(point(report, j, depths[d]), "iops", k) >=
		    0.95 * best)
			return depths[d];
	return 0;
}

static bool is_depth(double v)
{
	for (size_t d = 0; d < NDEPTHS; d++)
		if (v == depths[d])
			return true;
	return false;
}

static void check_knee(struct json_object *report, const unsigned int *counts,
		       size_t ncounts, size_t repeats)
{
	struct json_object *knee = jresult(report, "io_scaling", "knee");
	unsigned int ncpu = counts[ncounts - 1];

	CHECK_EQ_STR(jstatus(knee), "ok");
	CHECK_EQ_INT(jpint(knee, "jobs"), ncpu);
	CHECK_EQ_INT(nsamples(knee, "knee_depth"), repeats);
	CHECK_EQ_INT(nsamples(knee, "best_iops"), repeats);
	CHECK_EQ_INT(json_object_array_length(jget(knee, "windows")), repeats);
	for (size_t k = 0; k < repeats; k++) {
		double depth = sample(knee, "knee_depth", k);
		double best = sample(knee, "best_iops", k), want_best;
		unsigned int want = expected_knee(report, ncpu, k, &want_best);

		CHECK_(is_depth(depth), "repeat %zu: knee_depth %g", k, depth);
		CHECK_EQ_INT(depth, want);
		CHECK_(fabs(best - want_best) <= want_best * 1e-9,
		       "repeat %zu: best_iops %g, the best point %g", k, best,
		       want_best);
		printf("repeat %zu: knee at %u jobs: depth %g, best %.0f IOPS\n",
		       k, ncpu, depth, best);
		for (size_t c = 0; c < ncounts; c++) {
			char m[48];
			unsigned int kj =
				expected_knee(report, counts[c], k, &want_best);

			snprintf(m, sizeof(m), "knee_depth_j%u", counts[c]);
			CHECK_EQ_INT(sample(knee, m, k), kj);
			snprintf(m, sizeof(m), "best_iops_j%u", counts[c]);
			CHECK(fabs(sample(knee, m, k) - want_best) <=
			      want_best * 1e-9);
		}
	}
}

static void test_sweep(const char *dir)
{
	struct bench_params p = tiny_params(dir);
	unsigned int counts[MAX_COUNTS];
	size_t ncounts = job_counts(counts);
	struct json_object *report, *c;

	CHECK_EQ_INT(dir_entries(dir), 0);
	report = suite(&p, "io_scaling");
	if (!report)
		return;
	for (size_t i = 0; i < ncounts; i++) {
		for (size_t d = 0; d < NDEPTHS; d++) {
			struct json_object *r = point(report, counts[i],
						      depths[d]);

			CHECK_(r && !strcmp(jstatus(r), "ok"),
			       "j%u_qd%u: %s %s", counts[i], depths[d],
			       jstatus(r), r ? json_object_to_json_string(r) : "");
			if (!r)
				continue;
			CHECK_EQ_INT(jpint(r, "jobs"), counts[i]);
			CHECK_EQ_INT(jpint(r, "iodepth"), depths[d]);
			CHECK_EQ_INT(jpint(r, "file_bytes"), 16 * MiB);
			CHECK_EQ_INT(jpint(r, "scaling_ms"), 20);
			CHECK_EQ_INT(nsamples(r, "iops"), p.repeats);
			CHECK_EQ_INT(json_object_array_length(
					     jget(r, "windows")),
				     p.repeats);
			for (long long k = 0; k < p.repeats; k++) {
				double iops = sample(r, "iops", (size_t)k);
				double p50 = sample(r, "lat_p50_us", (size_t)k);
				double p99 = sample(r, "lat_p99_us", (size_t)k);

				CHECK_(iops > 0 && p50 > 0 && p50 <= p99,
				       "j%u_qd%u repeat %lld: %g IOPS, p50 %g, p99 %g",
				       counts[i], depths[d], k, iops, p50, p99);
			}
			printf("j%u_qd%u: %.0f IOPS (median)\n", counts[i],
			       depths[d], jmedian(jmetric(r, "iops")));
		}
	}
	/* nothing else under io_scaling: the points and the knee */
	CHECK_EQ_INT(json_object_array_length(jget(report, "benchmarks")),
		     ncounts * NDEPTHS + 1);
	check_knee(report, counts, ncounts, (size_t)p.repeats);
	c = jcomparison(report, "iouring_qd32_vs_qd1");
	CHECK(c && jget(c, "ratio"));
	CHECK(strstr(jstr(report, "method.key"), "+scaling_ms=20"));
	CHECK(strstr(jstr(report, "method.key"), "+only=io_scaling"));
	CHECK_EQ_INT(jint(report, "method.scaling_ms"), 20);
	json_object_put(report);
	CHECK_EQ_INT(dir_entries(dir), 0);
}

/* full runs it; quick and standard do not, and their keys stay theirs. */
static void test_profiles(const char *dir)
{
	const struct bench_ops *ops = bench_find("io_scaling");
	static const char *const profiles[] = { "quick", "standard", "full" };
	struct bench_params p = tiny_params(dir);
	struct json_object *report;

	CHECK(ops && ops->full_only);
	if (!ops)
		return;
	CHECK(!bench_selected(ops, "quick", NULL));
	CHECK(!bench_selected(ops, "standard", NULL));
	CHECK(bench_selected(ops, "full", NULL));
	CHECK(bench_selected(ops, "quick", "io_scaling"));
	for (size_t i = 0; i < ARRAY_SIZE(profiles); i++) {
		struct bench_params q = { .profile = (char *)profiles[i] };
		Fleetbench__Method *m = NULL;

		CHECK_OK(bench_params_profile(&q, profiles[i]));
		CHECK(q.scaling_ms > 0);
		CHECK_OK(bench_method_new(&q, NULL, &m));
		if (!m)
			continue;
		CHECK_EQ_STR(m->key, profiles[i]);
		CHECK_EQ_INT(m->n_only, 0);
		CHECK(m->has_scaling_ms && m->scaling_ms == q.scaling_ms);
		fleetbench__method__free_unpacked(m, NULL);
		/* another time per point is another method */
		q.scaling_ms = 50;
		CHECK_OK(bench_method_new(&q, NULL, &m));
		if (m) {
			char want[64];

			snprintf(want, sizeof(want), "%s+scaling_ms=50",
				 profiles[i]);
			CHECK_EQ_STR(m->key, want);
			fleetbench__method__free_unpacked(m, NULL);
		}
	}

	/* a real quick run of everything, at tiny sizes: no io_scaling */
	p.repeats = 1;
	p.chase_bytes = 4 * MiB;
	p.chase_accesses = 10000;
	p.fault_bytes = 4 * MiB;
	p.file_bytes = 4 * MiB;
	p.seq_bytes = 1 * MiB;
	p.seq_block = 128 << 10;
	p.fs_increments = 10000;
	report = suite(&p, NULL);
	if (!report)
		return;
	struct json_object *results = jget(report, "benchmarks");

	CHECK(json_object_array_length(results) > 0);
	for (size_t i = 0; i < json_object_array_length(results); i++) {
		struct json_object *r = json_object_array_get_idx(results, i);

		CHECK_(strcmp(jstr(r, "benchmark"), "io_scaling"),
		       "quick ran %s", jstr(r, "variant"));
	}
	CHECK(jcomparison(report, "iouring_qd32_vs_qd1") == NULL);
	CHECK(strstr(jstr(report, "method.key"), "only=") == NULL);
	CHECK(jget(report, "method.only") == NULL ||
	      json_object_array_length(jget(report, "method.only")) == 0);
	json_object_put(report);
	CHECK_EQ_INT(dir_entries(dir), 0);
}

/* tmpfs: O_DIRECT refused (before Linux 6.6) or reaching no device (since):
 * every point and the knee skipped, saying so. */
static void test_tmpfs(void)
{
	struct bench_params p = tiny_params("/dev/shm");
	unsigned int counts[MAX_COUNTS];
	size_t ncounts = job_counts(counts);
	struct json_object *report, *results;
	struct statvfs sv;
	const char *alt = "tmpfs on /dev/shm";

	p.repeats = 1;
	if (statvfs("/dev/shm", &sv) < 0)
		alt = "cannot use directory '/dev/shm'";
	else if ((uint64_t)sv.f_bavail * sv.f_frsize < 1024 * MiB)
		alt = "refused: "; /* a small /dev/shm refuses for space */
	report = suite(&p, "io_scaling");
	if (!report)
		return;
	results = jget(report, "benchmarks");
	CHECK_EQ_INT(json_object_array_length(results), ncounts * NDEPTHS + 1);
	for (size_t i = 0; i < json_object_array_length(results); i++) {
		struct json_object *r = json_object_array_get_idx(results, i);
		const char *why = skip_reason(r);

		CHECK_(why && (strstr(why, "tmpfs on /dev/shm") ||
			       strstr(why, alt)),
		       "%s: skip reason '%s'", jstr(r, "variant"),
		       why ? why : "(none)");
		CHECK_EQ_INT(nsamples(r, "iops"), 0);
	}
	printf("tmpfs: %s\n", skip_reason(point(report, 1, 32)));
	json_object_put(report);
}

/* --randread-file: io_scaling reads it, never writes or removes it. */
static void test_given_file(const char *dir)
{
	struct bench_params p = tiny_params(dir);
	struct json_object *report;
	char path[4096];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/given", dir);
	fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
	CHECK_OK(fd);
	if (fd < 0)
		return;
	CHECK_OK(ftruncate(fd, 4 * MiB));
	close(fd);
	p.randread_file = path;
	p.repeats = 1;
	p.scaling_ms = 10;
	report = suite(&p, "io_scaling");
	if (report) {
		struct json_object *r = point(report, 1, 4);

		CHECK_EQ_STR(jstatus(r), "ok");
		CHECK_EQ_STR(jpstr(r, "file"), path);
		CHECK_EQ_INT(jpint(r, "file_bytes"), 4 * MiB);
		CHECK(sample(r, "iops", 0) > 0);
		json_object_put(report);
	}
	CHECK_OK(stat(path, &st));
	CHECK_EQ_INT(st.st_size, 4 * MiB);
	CHECK_OK(unlink(path));
}

int main(void)
{
	char dir[] = "/var/tmp/fleetbench-test-scaling-XXXXXX";

	if (!mkdtemp(dir)) {
		perror("mkdtemp /var/tmp");
		return 1;
	}
	test_sweep(dir);
	test_profiles(dir);
	test_tmpfs();
	test_given_file(dir);
	CHECK_EQ_INT(dir_entries(dir), 0);
	rmdir(dir);
	return check_summary();
}
