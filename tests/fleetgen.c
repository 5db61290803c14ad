/* SPDX-License-Identifier: MIT */
/*
 * fleetgen: writes a realistic fleet's reports into an agent spool, for
 * `fleetbench-agent send` to deliver through the real collector over
 * CURVE. Seven instance types of three providers, three hosts each, two
 * kernel releases each; every run carries a probe and the benchmarks' raw
 * repeat samples drawn from known distributions (seeded: the same seed
 * gives the same reports, run ids included), and the comparisons computed
 * from them by the agent's own statistics (common/stats.c) before the
 * agent's own report builder (agent/ship/report.c) and spool (agent/ship/spool.c)
 * take them. tests/fixtures/README.md describes the fleet.
 *
 *   fleetgen --spool DIR [--seed N] [--host NAME] [--kernel old|new]
 *            [--method PROFILE [--chase-bytes SIZE] [--thp-scale X]]
 *
 * --method sets Report.method as an agent of that profile does, with
 * --chase-bytes as an override (its key then names it, "standard+
 * chase_bytes=64M"); --thp-scale multiplies the THP speedup
 * (a quick run's smaller working set gains less); the runs' ids differ
 * from those of another method.
 *
 * prints one line per report spooled: run_id, provider, instance type,
 * hostname, kernel release, started (ISO 8601), tab-separated.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "cleanup.h"
#include "codec.h"
#include "fleetgen.h"
#include "report.h"
#include "spool.h"
#include "tool.h"

#define DAY_MS (24LL * 3600 * 1000)
/* 2025-03-03T00:00:00Z: the old kernels' first runs */
#define FLEET_START_MS 1740960000000LL
#define NEW_KERNEL_AFTER_MS (28 * DAY_MS)

/* tests/fixtures/README.md tells the story of each. */
static const struct fleet_type fleet[] = {
	{ "aws", "m6i.large", "us-east-1", "aws-m6i", 2, 8007580,
	  { "6.1.0-18-cloud-amd64", "6.1.0-21-cloud-amd64" }, 3, "madvise",
	  1.35, 1.0, 0, true, 0, 16000, { 3.0, 3.0 }, 0.04, 3.0 / 1.03,
	  false, 0, false },
	{ "aws", "c6i.xlarge", "us-east-1", "aws-c6i", 4, 7902120,
	  { "6.1.0-18-cloud-amd64", "6.5.0-0.deb12.4-cloud-amd64" }, 3,
	  "madvise", 1.38, 1.0, 0, true, 0, 20000, { 3.2, 3.2 }, 0.04,
	  3.2 / 1.02, true, 0, false },
	{ "gcp", "n2-standard-2", "europe-west1", "gcp-n2", 2, 8141560,
	  { "5.15.0-1042-gcp", "6.2.0-1014-gcp" }, 3, "madvise", 1.30, 1.0,
	  0, true, 0, 15000, { 3.0, 1.1 }, 0.04, 3.0 / 1.02, false, 0, false },
	{ "gcp", "e2-standard-4", "europe-west1", "gcp-e2", 4, 16393220,
	  { "5.15.0-1042-gcp", "6.2.0-1014-gcp" }, 3, "madvise", 1.25, 1.0,
	  0, true, 0, 12000, { 3.0, 2.9 }, 0.20, 3.0 / 1.02, false, 0.25,
	  false },
	{ "hetzner", "cx22", "fsn1", "hz-cx22", 2, 3911000,
	  { "6.1.0-18-amd64", "6.1.0-21-amd64" }, 3, "never", 1.0, 0.0, 0,
	  false, 0, 30000, { 2.5, 2.5 }, 0.04, 2.5 / 1.01, false, 0, false },
	{ "hetzner", "ccx23", "fsn1", "hz-ccx23", 4, 16005000,
	  { "6.1.0-18-amd64", "6.1.0-21-amd64" }, 3, "always", 1.42, 1.0,
	  1.45, true, 1.50, 35000, { 2.8, 2.8 }, 0.04, 2.8 / 1.03, false,
	  0, false },
	{ "ovh", "b2-7", "gra", "ovh-b2", 2, 7110000,
	  { "6.8.0-45-generic", "6.8.0-49-generic" }, 1, "madvise", 1.15,
	  0.55, 0, false, 0, 10000, { 2.2, 2.2 }, 0.06, 2.2 / 1.02, false,
	  0.5, true },
};

#define HOSTS 3

static const char *arg_spool, *arg_host, *arg_kernel, *arg_method;
static double arg_thp_scale = 1.0;
static uint64_t arg_chase_bytes;
static uint64_t arg_seed = 20250303;

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t x = a ^ (b * 0x9e3779b97f4a7c15ULL);

	return splitmix64(&x);
}

/* A version 7 UUID (time-ordered: the spool sends oldest first, and a
 * name sorts in time order when two files share an mtime). */
static void run_id(struct run *run)
{
	uint64_t ms = (uint64_t)run->started_ms, a = rng_next(&run->rng),
		 b = rng_next(&run->rng);

	snprintf(run->run_id, sizeof(run->run_id),
		 "%08" PRIx64 "-%04" PRIx64 "-7%03" PRIx64 "-%04" PRIx64
		 "-%012" PRIx64,
		 ms >> 16, ms & 0xffff, a & 0xfff,
		 0x8000 | ((a >> 12) & 0x3fff), b & UINT64_C(0xffffffffffff));
}

/*
 * Marks randread/io_uring_sqpoll failed, as the agent reports a variant
 * whose process died by a signal: the failure text, no metrics, no
 * windows, and its comparison without a ratio. Set on the built Report:
 * the agent's report builder on this branch knows no failed status.
 */
static int sqpoll_crash(Fleetbench__Report *rep)
{
	static const char failure[] =
		"SIGSEGV in randread/io_uring_sqpoll (repeat 2 of 9)";

	for (size_t i = 0; i < rep->n_benchmarks; i++) {
		Fleetbench__Benchmark *b = rep->benchmarks[i];

		if (strcmp(b->benchmark, "randread") ||
		    strcmp(b->variant, "io_uring_sqpoll"))
			continue;
		for (size_t k = 0; k < b->n_metrics; k++)
			fleetbench__metric__free_unpacked(b->metrics[k], NULL);
		for (size_t k = 0; k < b->n_windows; k++)
			fleetbench__window__free_unpacked(b->windows[k], NULL);
		free(b->metrics);
		free(b->windows);
		b->metrics = NULL;
		b->windows = NULL;
		b->n_metrics = b->n_windows = 0;
		b->failure = strdup(failure);
		if (!b->failure)
			return -ENOMEM;
	}
	for (size_t i = 0; i < rep->n_comparisons; i++) {
		Fleetbench__Comparison *c = rep->comparisons[i];

		if (strcmp(c->name, "sqpoll_vs_iouring"))
			continue;
		c->has_ratio = c->has_ci_low = c->has_ci_high = false;
		c->has_level = false;
		free(c->method);
		c->method = NULL;
		free(c->reason);
		c->reason = strdup("io_uring_sqpoll failed");
		if (!c->reason)
			return -ENOMEM;
	}
	return 0;
}

/* Report.method as an agent of profile --method makes it (with
 * --chase-bytes, if given, as its one override). */
static int set_method(Fleetbench__Report *rep)
{
	struct bench_params p = { 0 };

	if (bench_params_profile(&p, arg_method) < 0) {
		fprintf(stderr, "fleetgen: --method: '%s' is no profile\n",
			arg_method);
		return -EINVAL;
	}
	p.profile = (char *)arg_method;
	if (arg_chase_bytes)
		p.chase_bytes = arg_chase_bytes;
	return bench_method_new(&p, NULL, &rep->method);
}

static int spool_run(struct spool *s, struct run *run)
{
	const struct fleet_type *t = run->t;
	struct json_object *probe = fleetgen_probe_json(run);
	Fleetbench__BenchRun *bench = fleetgen_bench_run(run, arg_thp_scale);
	Fleetbench__Report *rep = NULL;
	_cleanup_free_ uint8_t *buf = NULL;
	char err[256], when[32];
	time_t sec = (time_t)(run->started_ms / 1000);
	size_t len;
	int r;

	r = report_build(probe, bench, run->started_ms,
			 run->started_ms + 170000, &rep, err);
	json_object_put(probe);
	bench_run_free(bench);
	if (r < 0) {
		fprintf(stderr, "fleetgen: report_build: %s\n", err);
		return r;
	}
	free(rep->run_id);
	rep->run_id = strdup(run->run_id);
	r = rep->run_id ? 0 : -ENOMEM;
	if (r == 0 && t->sqpoll_crashes_new && run->kernel == 1)
		r = sqpoll_crash(rep);
	if (r == 0 && arg_method)
		r = set_method(rep);
	if (r == 0)
		r = codec_validate_report(rep, run->started_ms + DAY_MS, err);
	if (r == 0)
		r = codec_pack_report(rep, &buf, &len);
	report_free(rep);
	if (r < 0) {
		fprintf(stderr, "fleetgen: %s: %s\n", run->run_id,
			r == -EINVAL ? err : strerror(-r));
		return r;
	}
	r = spool_put(s, run->run_id, buf, len, err);
	if (r < 0) {
		fprintf(stderr, "fleetgen: spool_put: %s\n", err);
		return r;
	}
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&sec));
	printf("%s\t%s\t%s\t%s\t%s\t%s\n", run->run_id, t->provider,
	       t->instance_type, run->hostname, t->kernel[run->kernel], when);
	return 0;
}

/* Spools run idx of host h of fleet[ti] on kernel k (0 old, 1 new) unless
 * --host or --kernel leave it out. Returns 1 (spooled), 0 (left out) or
 * -errno. */
static int gen_run(struct spool *s, size_t ti, int h, int k, int idx)
{
	const struct fleet_type *t = &fleet[ti];
	struct run run = { .t = t, .host = h, .kernel = k, .index = idx };
	uint64_t hseed = mix(arg_seed, ti * 16 + (uint64_t)h);
	struct rng hr;
	int r;

	if (idx >= t->runs)
		return 0;
	snprintf(run.hostname, sizeof(run.hostname), "%s-%d", t->host_prefix,
		 h + 1);
	if ((arg_host && strcmp(arg_host, run.hostname)) ||
	    (arg_kernel && (k == 0) != !strcmp(arg_kernel, "old")))
		return 0;
	rng_seed(&hr, hseed);
	snprintf(run.machine_id, sizeof(run.machine_id),
		 "%016" PRIx64 "%016" PRIx64, rng_next(&hr), rng_next(&hr));
	/* in loop order (main), 20 minutes apart */
	run.started_ms = FLEET_START_MS + k * NEW_KERNEL_AFTER_MS +
			 idx * 7 * DAY_MS + ((int64_t)ti * HOSTS + h) * 1200000;
	/* non-negative: the report's seed is an int64 */
	run.seed = mix(hseed, (uint64_t)(k * 16 + idx)) >> 1;
	/* another method's runs are other runs */
	for (const char *p = arg_method; p && *p; p++)
		run.seed = mix(run.seed, (uint64_t)(unsigned char)*p) >> 1;
	if (arg_chase_bytes)
		run.seed = mix(run.seed, arg_chase_bytes) >> 1;
	rng_seed(&run.rng, run.seed);
	run_id(&run);
	r = spool_run(s, &run);
	return r < 0 ? r : 1;
}

static const struct tool_opt opts[] = {
	TOOL_OPT_STRING("spool", &arg_spool),
	TOOL_OPT_U64("seed", &arg_seed),
	TOOL_OPT_STRING("host", &arg_host),
	TOOL_OPT_STRING("kernel", &arg_kernel),
	TOOL_OPT_STRING("method", &arg_method),
	TOOL_OPT_SIZE("chase-bytes", &arg_chase_bytes, 1ULL << 40),
	TOOL_OPT_DOUBLE("thp-scale", &arg_thp_scale),
};

static const struct tool tool = TOOL("fleetgen", opts,
	"usage: fleetgen --spool DIR [--seed N] [--host NAME] [--kernel old|new]\n"
	"                [--method PROFILE [--chase-bytes SIZE] [--thp-scale X]]\n");

int main(int argc, char **argv)
{
	struct spool *s;
	char err[SPOOL_ERR_LEN];
	int n = 0;

	tool_parse(&tool, argc, argv);
	if (!arg_spool)
		tool_usage_error(&tool, "--spool is missing");
	if (arg_kernel && strcmp(arg_kernel, "old") && strcmp(arg_kernel, "new"))
		tool_usage_error(&tool, "--kernel is old or new, not '%s'",
				 arg_kernel);
	s = spool_open(arg_spool, 0, err);
	if (!s) {
		fprintf(stderr, "fleetgen: %s\n", err);
		return 1;
	}
	/* kernel-major order: the whole fleet's old runs, then the new */
	for (int k = 0; k < 2; k++)
		for (int idx = 0; idx < 4; idx++)
			for (size_t ti = 0; ti < ARRAY_SIZE(fleet); ti++)
				for (int h = 0; h < HOSTS; h++) {
					int r = gen_run(s, ti, h, k, idx);

					if (r < 0) {
						spool_close(s);
						return 1;
					}
					n += r;
				}
	spool_close(s);
	fprintf(stderr, "fleetgen: %d reports spooled in %s\n", n, arg_spool);
	return 0;
}
