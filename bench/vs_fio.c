/* SPDX-License-Identifier: MIT */
/*
 * randread against fio: the same file, the same parameters (4 KiB random
 * O_DIRECT reads, uniform offsets without a random map, time-based),
 * alternating fio and the agent in one run (fio, agent, fio, agent, ...,
 * fio: each agent run is compared with the mean of the fio runs just
 * before and after it, so a drifting host favours neither), and prints
 * agent / fio IOPS per pair and the median per engine: pread vs fio's
 * psync at depth 1, io_uring and libaio at depth 32. Target: every median
 * in 0.95-1.10.
 *
 * With --scaling, io_scaling's points of more than one job instead: fio
 * --numjobs=J --group_reporting --ioengine=io_uring --iodepth=D for each
 * point jJ_qdD of the agent's sweep (J = 2, 4, ... up to the online vCPUs
 * and their count, D = 1, 4, 16, 32, 64), alternating in the same way, and
 * per point the ratio of the medians, agent IOPS / fio IOPS. Target:
 * 0.90-1.10.
 *
 *   vs_fio [-f FILE] [-d DIR] [-s SIZE_MIB] [-p PAIRS] [-t SECONDS]
 *          [-q DEPTH] [--scaling]
 *
 * Without -f it writes a SIZE_MIB file (default 1024) in DIR (default
 * /var/tmp) with the agent's pattern, in full, and removes it at the end;
 * -f uses an existing file or block device read-only. Defaults: 5 pairs,
 * 3 s per engine per run, depth 32. fio comes from PATH (or FIO), the
 * agent from this build (or AGENT). Exit 0 when every median is in the
 * target, 3 when one is not, 1 when something failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "bench_test.h"
#include "cleanup.h"
#include "io_engine.h"
#include "run.h"
#include "stats.h"
#include "tool.h"

#define MAX_PAIRS 64
#define TARGET_LO 0.95
#define TARGET_HI 1.10
#define SCALING_LO 0.90
#define SCALING_HI 1.10
/* io_scaling's depths and most points (job counts x depths) */
static const int scaling_depths[] = { 1, 4, 16, 32, 64 };
#define NSDEPTHS (sizeof(scaling_depths) / sizeof(scaling_depths[0]))
#define MAX_POINTS (64 * NSDEPTHS)

static const struct {
	const char *agent; /* the agent's variant */
	const char *fio; /* fio's ioengine */
	bool queued; /* at the depth, else depth 1 */
} engines[] = {
	{ "pread", "psync", false },
	{ "io_uring", "io_uring", true },
	{ "libaio", "libaio", true },
};
#define NENGINES (sizeof(engines) / sizeof(engines[0]))

static char made_file[4096]; /* removed at exit when set */

static void remove_made_file(void)
{
	if (made_file[0])
		unlink(made_file);
}

static void on_signal(int sig)
{
	remove_made_file();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* The path of name in PATH, in buf; NULL when absent. */
static const char *which(const char *name, char *buf, size_t size)
{
	const char *path = getenv("PATH");
	char *copy, *save = NULL;

	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	copy = strdup(path);
	if (!copy)
		return NULL;
	for (char *d = strtok_r(copy, ":", &save); d;
	     d = strtok_r(NULL, ":", &save)) {
		snprintf(buf, size, "%s/%s", d, name);
		if (access(buf, X_OK) == 0) {
			free(copy);
			return buf;
		}
	}
	free(copy);
	return NULL;
}

static struct json_object *jobj(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	json_object_object_get_ex(o, key, &v);
	return v;
}

/* Runs argv and parses its standard output as JSON. */
static struct json_object *run_json(char *const argv[])
{
	struct run_result rr;
	struct json_object *j;
	const char *start;

	if (run_program(argv, (uid_t)-1, &rr) < 0) {
		fprintf(stderr, "cannot run %s\n", argv[0]);
		return NULL;
	}
	/* fio may print notes before its JSON */
	start = strchr(rr.out, '{');
	j = rr.status == 0 && start ? json_tokener_parse(start) : NULL;
	if (!j)
		fprintf(stderr, "%s failed (status %d): %s%s\n", argv[0],
			rr.status, rr.out, rr.err);
	run_result_release(&rr);
	return j;
}

/* fio with jobs jobs (> 1: --numjobs and --group_reporting, so the first
 * job's figures are the group's: IOPS summed, latency over all). */
static int run_fio(const char *fio, const char *file, const char *engine,
		   int jobs, int depth, int seconds, double *ret_iops,
		   double *ret_p50)
{
	char e[64], d[32], t[32], f[4200], nj[32];
	char *argv[] = { (char *)fio,	   "--name=vs_fio",
			 f,		   "--rw=randread",
			 "--bs=4k",	   "--direct=1",
			 e,		   d,
			 "--time_based",   t,
			 "--norandommap",  "--randrepeat=0",
			 "--output-format=json", nj,
			 "--group_reporting", NULL };
	struct json_object *j, *read;

	snprintf(f, sizeof(f), "--filename=%s", file);
	snprintf(e, sizeof(e), "--ioengine=%s", engine);
	snprintf(d, sizeof(d), "--iodepth=%d", depth);
	snprintf(t, sizeof(t), "--runtime=%d", seconds);
	snprintf(nj, sizeof(nj), "--numjobs=%d", jobs);
	if (jobs <= 1)
		argv[13] = NULL; /* one job: the command line of old */
	j = run_json(argv);
	if (!j)
		return -EIO;
	read = jobj(json_object_array_get_idx(jobj(j, "jobs"), 0), "read");
	*ret_iops = json_object_get_double(jobj(read, "iops"));
	*ret_p50 = json_object_get_double(jobj(
			   jobj(jobj(read, "clat_ns"), "percentile"),
			   "50.000000")) /
		   1e3;
	json_object_put(j);
	return *ret_iops > 0 ? 0 : -EIO;
}

/* fio once per engine, in the agent's order. */
static int run_fio_all(const char *fio, const char *file, int depth,
		       int seconds, double iops[NENGINES],
		       double p50[NENGINES])
{
	for (size_t e = 0; e < NENGINES; e++)
		if (run_fio(fio, file, engines[e].fio, 1,
			    engines[e].queued ? depth : 1, seconds, &iops[e],
			    &p50[e]) < 0)
			return 1;
	return 0;
}

/* One agent run measures every engine: their IOPS and p50 by engine. */
static int run_agent(const char *agent, const char *file, int depth,
		     int seconds, double iops[NENGINES], double p50[NENGINES])
{
	char ms[32], q[32];
	char *argv[] = { (char *)agent, "bench",	  "--only",
			 "randread",	"--randread-file", (char *)file,
			 "--io-ms",	ms,		  "--iodepth",
			 q,		"--repeats",	  "1",
			 "--json",	NULL };
	struct json_object *j, *results;
	int found = 0;

	snprintf(ms, sizeof(ms), "%d", seconds * 1000);
	snprintf(q, sizeof(q), "%d", depth);
	j = run_json(argv);
	if (!j)
		return -EIO;
	results = jobj(j, "benchmarks");
	for (size_t i = 0; i < json_object_array_length(results); i++) {
		struct json_object *r = json_object_array_get_idx(results, i);
		const char *var = json_object_get_string(jobj(r, "variant"));
		struct json_object *metrics = jobj(r, "metrics");

		for (size_t e = 0; e < NENGINES; e++) {
			if (strcmp(var, engines[e].agent))
				continue;
			if (!strcmp(jstatus(r), "skipped")) {
				fprintf(stderr, "agent skipped %s: %s\n", var,
					json_object_get_string(
						jobj(r, "skip_reason")));
				continue;
			}
			for (size_t m = 0;
			     m < json_object_array_length(metrics); m++) {
				struct json_object *mo =
					json_object_array_get_idx(metrics, m);
				const char *name = json_object_get_string(
					jobj(mo, "metric"));

				if (!strcmp(name, "iops")) {
					iops[e] = jmedian(mo);
					found++;
				} else if (!strcmp(name, "lat_p50_us")) {
					p50[e] = jmedian(mo);
				}
			}
		}
	}
	json_object_put(j);
	return found == (int)NENGINES ? 0 : -EIO;
}

/* ---- --scaling: io_scaling's points of more than one job ---- */

struct spoint {
	int jobs, depth;
	double agent[MAX_PAIRS]; /* IOPS of each agent run */
	double fio[MAX_PAIRS + 1]; /* of each fio run, one more */
};

/* io_scaling's points with jobs > 1: 2, 4, ... below the online vCPUs and
 * their count, at each depth. Their number (0 on one vCPU). */
static size_t scaling_points(struct spoint *pts)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	size_t n = 0;

	for (long j = 2; n + NSDEPTHS <= MAX_POINTS; j *= 2) {
		long jobs = j < ncpu ? j : ncpu; /* then the count itself */

		if (jobs < 2)
			break;
		for (size_t d = 0; d < NSDEPTHS; d++)
			pts[n++] = (struct spoint){ .jobs = (int)jobs,
						    .depth = scaling_depths[d] };
		if (jobs == ncpu)
			break;
	}
	return n;
}

static int run_fio_points(const char *fio, const char *file, int seconds,
			  struct spoint *pts, size_t n, int k)
{
	for (size_t i = 0; i < n; i++) {
		double p50;

		if (run_fio(fio, file, "io_uring", pts[i].jobs, pts[i].depth,
			    seconds, &pts[i].fio[k], &p50) < 0)
			return -EIO;
	}
	return 0;
}

/* One agent run of io_scaling: run k's IOPS of every point. */
static int run_agent_points(const char *agent, const char *file, int seconds,
			    struct spoint *pts, size_t n, int k)
{
	char ms[32];
	char *argv[] = { (char *)agent,	   "bench",
			 "--only",	   "io_scaling",
			 "--randread-file", (char *)file,
			 "--scaling-ms",   ms,
			 "--repeats",	   "1",
			 "--json",	   NULL };
	struct json_object *j;
	int r = 0;

	snprintf(ms, sizeof(ms), "%d", seconds * 1000);
	j = run_json(argv);
	if (!j)
		return -EIO;
	for (size_t i = 0; i < n && r == 0; i++) {
		char name[48];
		struct json_object *res;

		snprintf(name, sizeof(name), "j%d_qd%d", pts[i].jobs,
			 pts[i].depth);
		res = jresult(j, "io_scaling", name);
		pts[i].agent[k] = jmedian(jmetric(res, "iops"));
		if (!(pts[i].agent[k] > 0)) {
			fprintf(stderr, "agent: io_scaling/%s %s %s\n", name,
				jstatus(res),
				json_object_get_string(
					jobj(res, "skip_reason")) ?: "");
			r = -EIO;
		}
	}
	json_object_put(j);
	return r;
}

static int scaling_main(const char *agent, const char *fio, const char *file,
			int pairs, int seconds)
{
	static struct spoint pts[MAX_POINTS];
	size_t n = scaling_points(pts);
	int rc = 0;

	if (!n) {
		fprintf(stderr, "vs_fio: one vCPU: io_scaling has no point of more than one job\n");
		return 1;
	}
	printf("vs_fio --scaling: %s, io_uring 4 KiB random O_DIRECT reads, %zu points of more than one job, %d s per point per run, %d pairs\n",
	       file, n, seconds, pairs);
	printf("fio --numjobs=J --group_reporting --iodepth=D; agent: io_scaling's jJ_qdD; ratio = agent / mean of the fio runs around it\n");
	printf("%-4s %-9s %12s %12s %12s %9s\n", "pair", "point", "fio_before",
	       "agent_iops", "fio_after", "agent/fio");
	if (run_fio_points(fio, file, seconds, pts, n, 0) < 0)
		return 1;
	for (int k = 0; k < pairs; k++) {
		if (run_agent_points(agent, file, seconds, pts, n, k) < 0 ||
		    run_fio_points(fio, file, seconds, pts, n, k + 1) < 0)
			return 1;
		for (size_t i = 0; i < n; i++) {
			char name[48];

			snprintf(name, sizeof(name), "j%d_qd%d", pts[i].jobs,
				 pts[i].depth);
			printf("%-4d %-9s %12.0f %12.0f %12.0f %9.3f\n", k + 1,
			       name, pts[i].fio[k], pts[i].agent[k],
			       pts[i].fio[k + 1],
			       pts[i].agent[k] /
				       ((pts[i].fio[k] + pts[i].fio[k + 1]) / 2));
		}
		fflush(stdout);
	}
	printf("agent/fio IOPS, ratio of medians over %d agent and %d fio runs (target %.2f-%.2f):\n",
	       pairs, pairs + 1, SCALING_LO, SCALING_HI);
	for (size_t i = 0; i < n; i++) {
		double a = stats_median(pts[i].agent, (size_t)pairs);
		double f = stats_median(pts[i].fio, (size_t)pairs + 1);
		bool ok = a / f >= SCALING_LO && a / f <= SCALING_HI;

		printf("  j%d_qd%-3d fio %9.0f  agent %9.0f  %.3f %s\n",
		       pts[i].jobs, pts[i].depth, f, a, a / f,
		       ok ? "ok" : "OUT OF TARGET");
		if (!ok)
			rc = 3;
	}
	return rc;
}

static int make_file(const char *dir, long long mib)
{
	int fd, r;

	snprintf(made_file, sizeof(made_file), "%s/fleetbench-vs-fio-%d.dat",
		 dir, (int)getpid());
	fd = open(made_file, O_CREAT | O_EXCL | O_RDWR | O_DIRECT | O_CLOEXEC,
		  0600);
	if (fd < 0) {
		r = -errno;
		made_file[0] = '\0';
		return r;
	}
	r = io_pattern_write_file(fd, (uint64_t)mib << 20, 1);
	close(fd);
	return r;
}

static const char *arg_file, *arg_dir = "/var/tmp";
static unsigned long arg_mib = 1024, arg_pairs = 5, arg_seconds = 3,
		     arg_depth = 32;
static bool arg_scaling;

/* the short options of old; their long names work too and name them in errors */
static const struct tool_opt opts[] = {
	{ .name = "file", .short_name = 'f', .type = TOOL_STRING,
	  .target = &arg_file },
	{ .name = "dir", .short_name = 'd', .type = TOOL_STRING,
	  .target = &arg_dir },
	{ .name = "size", .short_name = 's', .type = TOOL_ULONG,
	  .target = &arg_mib, .min = 1, .max = 1ul << 30 },
	{ .name = "pairs", .short_name = 'p', .type = TOOL_ULONG,
	  .target = &arg_pairs, .min = 1, .max = MAX_PAIRS },
	{ .name = "time", .short_name = 't', .type = TOOL_ULONG,
	  .target = &arg_seconds, .min = 1, .max = INT_MAX / 1000 },
	{ .name = "depth", .short_name = 'q', .type = TOOL_ULONG,
	  .target = &arg_depth, .min = 1, .max = INT_MAX },
	TOOL_OPT_FLAG("scaling", &arg_scaling),
};

static const struct tool tool = TOOL("vs_fio", opts,
	"usage: vs_fio [-f FILE] [-d DIR] [-s SIZE_MIB] [-p PAIRS] [-t SECONDS] [-q DEPTH]\n"
	"              [--scaling]\n");

int main(int argc, char **argv)
{
	const char *file, *agent, *fio;
	long long mib;
	int pairs, seconds, depth, rc = 0;
	double ratio[NENGINES][MAX_PAIRS];
	double before[NENGINES], before_p50[NENGINES];
	char fiobuf[4096];

	tool_parse(&tool, argc, argv);
	file = arg_file;
	mib = (long long)arg_mib;
	pairs = (int)arg_pairs;
	seconds = (int)arg_seconds;
	depth = (int)arg_depth;
	agent = getenv("AGENT") ? getenv("AGENT") : AGENT_PATH;
	fio = getenv("FIO") ? getenv("FIO") : which("fio", fiobuf,
						     sizeof(fiobuf));
	if (!fio) {
		fprintf(stderr, "vs_fio: fio not found in PATH (apt-get install fio)\n");
		return 1;
	}

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (!file) {
		int r = make_file(arg_dir, mib);

		if (r < 0) {
			fprintf(stderr, "vs_fio: cannot write %lld MiB in '%s': %s\n",
				mib, arg_dir, strerror(-r));
			remove_made_file();
			return 1;
		}
		file = made_file;
	}
	if (arg_scaling) {
		rc = scaling_main(agent, fio, file, pairs, seconds);
		remove_made_file();
		return rc;
	}
	printf("vs_fio: %s, 4 KiB random O_DIRECT reads, %d s per engine per run, depth %d (pread/psync: 1), %d pairs\n",
	       file, seconds, depth, pairs);
	printf("each agent run sits between two fio runs; ratio = agent / mean of the two\n");
	printf("%-4s %-9s %12s %12s %12s %9s %10s %10s\n", "pair", "engine",
	       "fio_before", "agent_iops", "fio_after", "agent/fio",
	       "fio_p50us", "agent_p50us");
	rc = run_fio_all(fio, file, depth, seconds, before, before_p50);
	for (int k = 0; k < pairs && rc == 0; k++) {
		double after[NENGINES], after_p50[NENGINES];
		double ag_iops[NENGINES] = { 0 }, ag_p50[NENGINES] = { 0 };

		if (run_agent(agent, file, depth, seconds, ag_iops, ag_p50) <
			    0 ||
		    run_fio_all(fio, file, depth, seconds, after, after_p50) <
			    0) {
			rc = 1;
			break;
		}
		for (size_t e = 0; e < NENGINES; e++) {
			double f = (before[e] + after[e]) / 2;

			ratio[e][k] = ag_iops[e] / f;
			printf("%-4d %-9s %12.0f %12.0f %12.0f %9.3f %10.1f %10.1f\n",
			       k + 1, engines[e].agent, before[e], ag_iops[e],
			       after[e], ratio[e][k],
			       (before_p50[e] + after_p50[e]) / 2, ag_p50[e]);
			before[e] = after[e];
			before_p50[e] = after_p50[e];
		}
		fflush(stdout);
	}
	if (rc == 0) {
		printf("median agent/fio IOPS over %d pairs (target %.2f-%.2f):\n",
		       pairs, TARGET_LO, TARGET_HI);
		for (size_t e = 0; e < NENGINES; e++) {
			double m = stats_median(ratio[e], (size_t)pairs);
			bool ok = m >= TARGET_LO && m <= TARGET_HI;

			printf("  %-9s (fio %s, depth %d) %.3f %s\n",
			       engines[e].agent, engines[e].fio,
			       engines[e].queued ? depth : 1, m,
			       ok ? "ok" : "OUT OF TARGET");
			if (!ok)
				rc = 3;
		}
	}
	remove_made_file();
	return rc;
}
