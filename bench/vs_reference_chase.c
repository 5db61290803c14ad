/* SPDX-License-Identifier: MIT */
/*
 * thp_chase against the textbook chase (reference_chase): both page modes,
 * identical sizes, alternating the two programs, and prints the agent /
 * reference ratios of ns per access with their medians. Target: within 5%.
 *
 *   vs_reference_chase [BYTES [ACCESSES [PAIRS]]]
 *
 * Defaults: 1 GiB, 50 M accesses, 3 pairs. The binaries are the ones CMake
 * built (AGENT and REFERENCE in the environment override them).
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "stats.h"
#include "tool.h"

#define MAX_PAIRS 64
#define SEED "12345"

static const char *const modes[] = { "4k", "thp" };

static int run_reference(const char *path, const char *bytes,
			 const char *accesses, const char *mode, double *ret,
			 long *ret_huge_kb)
{
	char *argv[] = { (char *)path, (char *)bytes, (char *)accesses,
			 (char *)mode, SEED, NULL };
	struct run_result rr;
	const char *p;
	int r;

	r = run_program(argv, (uid_t)-1, &rr);
	if (r < 0)
		return r;
	p = strstr(rr.out, "ns_per_access ");
	if (rr.status != 0 || !p || sscanf(p, "ns_per_access %lf", ret) != 1) {
		fprintf(stderr, "reference_chase %s failed (%d): %s%s\n", mode,
			rr.status, rr.out, rr.err);
		run_result_release(&rr);
		return -EIO;
	}
	p = strstr(rr.out, "anon_huge_kb ");
	if (!p || sscanf(p, "anon_huge_kb %ld", ret_huge_kb) != 1)
		*ret_huge_kb = -1;
	run_result_release(&rr);
	return 0;
}

/* The first sample of metric of thp_chase variant in the agent's report. */
static int agent_sample(struct json_object *report, const char *variant,
			const char *metric, double *ret)
{
	struct json_object *results, *metrics, *samples;

	if (!json_object_object_get_ex(report, "benchmarks", &results))
		return -EBADMSG;
	for (size_t i = 0; i < json_object_array_length(results); i++) {
		struct json_object *r = json_object_array_get_idx(results, i);
		struct json_object *b, *v;

		if (!json_object_object_get_ex(r, "benchmark", &b) ||
		    !json_object_object_get_ex(r, "variant", &v) ||
		    strcmp(json_object_get_string(b), "thp_chase") ||
		    strcmp(json_object_get_string(v), variant) ||
		    !json_object_object_get_ex(r, "metrics", &metrics))
			continue;
		for (size_t k = 0; k < json_object_array_length(metrics); k++) {
			struct json_object *m =
				json_object_array_get_idx(metrics, k);
			struct json_object *name;

			if (json_object_object_get_ex(m, "metric", &name) &&
			    !strcmp(json_object_get_string(name), metric) &&
			    json_object_object_get_ex(m, "samples", &samples) &&
			    json_object_array_length(samples) > 0) {
				*ret = json_object_get_double(
					json_object_array_get_idx(samples, 0));
				return 0;
			}
		}
	}
	return -ENOENT;
}

static int run_agent(const char *path, const char *bytes,
		     const char *accesses, double ns[2], double huge[2])
{
	char *argv[] = { (char *)path,	    "bench",
			 "--only",	    "thp_chase",
			 "--json",	    "--repeats",
			 "1",		    "--chase-bytes",
			 (char *)bytes,	    "--chase-accesses",
			 (char *)accesses, "--seed",
			 SEED,		    NULL };
	struct json_object *report;
	struct run_result rr;
	int r;

	r = run_program(argv, (uid_t)-1, &rr);
	if (r < 0)
		return r;
	report = rr.status == 0 ? json_tokener_parse(rr.out) : NULL;
	for (int m = 0; report && m < 2; m++) {
		if (agent_sample(report, modes[m], "ns_per_access", &ns[m]) < 0) {
			json_object_put(report);
			report = NULL;
			break;
		}
		if (agent_sample(report, modes[m], "huge_fraction", &huge[m]) <
		    0)
			huge[m] = -1;
	}
	if (!report) {
		fprintf(stderr, "agent failed (%d): %s\n", rr.status, rr.err);
		run_result_release(&rr);
		return -EIO;
	}
	json_object_put(report);
	run_result_release(&rr);
	return 0;
}

int main(int argc, char **argv)
{
	const char *agent = getenv("AGENT") ? getenv("AGENT") : AGENT_PATH;
	const char *ref = getenv("REFERENCE") ? getenv("REFERENCE") :
						REFERENCE_CHASE_PATH;
	static const struct tool tool = {
		.name = "vs_reference_chase",
		.usage = "usage: vs_reference_chase [BYTES [ACCESSES [PAIRS 1..64]]]\n",
		.max_args = 3,
	};
	int a = tool_parse(&tool, argc, argv);
	const char *bytes = a < argc ? argv[a] : "1073741824";
	const char *accesses = a + 1 < argc ? argv[a + 1] : "50000000";
	int pairs = a + 2 < argc ? (int)tool_number(&tool, "PAIRS", argv[a + 2],
						    1, MAX_PAIRS) :
				   3;
	double ref_ns[2][MAX_PAIRS], agent_ns[2][MAX_PAIRS];
	double ratio[2][MAX_PAIRS];
	int ok = 1;

	printf("thp_chase vs reference_chase: %s bytes, %s accesses, %d pairs\n",
	       bytes, accesses, pairs);
	printf("%-5s %-4s %14s %14s %8s   %s\n", "pair", "mode", "reference_ns",
	       "agent_ns", "ratio", "huge (reference kB / agent fraction)");
	for (int k = 0; k < pairs; k++) {
		double ans[2], ahuge[2];
		long rhuge[2];
		int r;

		/* alternate which program goes first, so drift hits both */
		if (k % 2 == 0) {
			for (int m = 0; m < 2; m++) {
				r = run_reference(ref, bytes, accesses, modes[m],
						  &ref_ns[m][k], &rhuge[m]);
				if (r < 0)
					return 1;
			}
			if (run_agent(agent, bytes, accesses, ans, ahuge) < 0)
				return 1;
		} else {
			if (run_agent(agent, bytes, accesses, ans, ahuge) < 0)
				return 1;
			for (int m = 1; m >= 0; m--) {
				r = run_reference(ref, bytes, accesses, modes[m],
						  &ref_ns[m][k], &rhuge[m]);
				if (r < 0)
					return 1;
			}
		}
		for (int m = 0; m < 2; m++) {
			agent_ns[m][k] = ans[m];
			ratio[m][k] = ans[m] / ref_ns[m][k];
			printf("%-5d %-4s %14.2f %14.2f %8.4f   %ld kB / %.3f\n",
			       k + 1, modes[m], ref_ns[m][k], ans[m],
			       ratio[m][k], rhuge[m], ahuge[m]);
		}
		fflush(stdout);
	}
	for (int m = 0; m < 2; m++) {
		double mr = stats_median(ratio[m], (size_t)pairs);
		int within = mr >= 0.95 && mr <= 1.05;

		printf("%s: median agent/reference %.4f (reference %.2f ns, agent %.2f ns): %s\n",
		       modes[m], mr, stats_median(ref_ns[m], (size_t)pairs),
		       stats_median(agent_ns[m], (size_t)pairs),
		       within ? "within 5%" : "OUTSIDE 5%");
		ok &= within;
	}
	return ok ? 0 : 3;
}
