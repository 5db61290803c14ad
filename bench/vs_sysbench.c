/* SPDX-License-Identifier: MIT */
/*
 * membw against sysbench memory (Debian's sysbench package) on the same
 * host, alternating the two in one run (sysbench, agent, sysbench, agent,
 * ..., sysbench: each agent run is compared with the mean of the sysbench
 * runs just before and after it, so a drifting host favours neither), and
 * prints agent / sysbench GB/s per pair and the median per comparable
 * pair. Target: every median in 0.90-1.10.
 *
 *   vs_sysbench [-s SIZE_MIB] [-S SYSBENCH_MIB] [-p PAIRS] [-b BEST_OF]
 *               [-n PASSES] [-f PRIO]
 *
 * What is comparable: sysbench memory --memory-oper=read|write
 * --memory-access-mode=seq streams a buffer of --memory-block-size bytes
 * per thread (--memory-scope=local) in 8-byte loads or stores, nothing
 * else: a read-only or a write-only stream, not a copy. So its read is
 * compared with the agent's read kernel (read_gbps: loads of one array,
 * summed) and its write with the agent's write kernel (write_gbps: stores
 * of one value over one array), never with copy or triad. Both count the
 * bytes the program touches (a store's write-allocate read is counted by
 * neither); sysbench prints MiB/sec, converted here to GB/s (1e9 bytes).
 * One thread against 4k_1t, one per online vCPU (--threads) against
 * 4k_all. sysbench's buffers come from posix_memalign, which THP backs in
 * THP mode "always" (and other programs may switch the mode during a run:
 * the database benchmark does), so sysbench runs with THP disabled for it
 * alone (prctl PR_SET_THP_DISABLE, inherited by the child, cleared before
 * the agent runs): 4 KiB pages on both sides, whatever the mode.
 *
 * As alike a statistic on both sides as sysbench allows: the agent's
 * figure is the best of its 3 iterations (one pass over the array each,
 * STREAM's "best rate"), sysbench's the best of BEST_OF (default 3) runs
 * of PASSES (default 64) passes over each thread's buffer
 * (--memory-total-size = block x threads x PASSES, --time=0). sysbench
 * cannot time one pass: its total time holds a fixed start-up (a 1 GiB
 * read took 93 ms where 16 GiB took 1.04 s here), which 4 passes turned
 * into a 2x "slower" sysbench, so each run is long; and one time-based
 * run, not the best of several, would average every preemption of a
 * shared host into sysbench's figure while the agent keeps its fastest
 * pass.
 *
 * -f PRIO runs this program, and so sysbench and the agent it starts, under
 * SCHED_FIFO at PRIO (root): on a host busy with other work, CFS preempts
 * a one-second sysbench run many times and a 12 ms agent pass rarely, so
 * the ratio there measures the load, not the tools (1.2-1.4 at load 8 on
 * 2 vCPUs; about 1.0 under SCHED_FIFO in the same minutes). The kernel's
 * RT throttling (sched_rt_runtime_us) still leaves the others 5%.
 *
 * SIZE_MIB (default 256) is sysbench's block (each thread's buffer) and
 * the agent's --bw-bytes (one array, the threads' slices of it): both far
 * beyond the last-level cache. sysbench 1.0.20 takes only a power of two:
 * for the agent's 44 MiB (quick) or 96 MiB (standard), -S gives sysbench
 * the powers of two on either side (docs/bench.md, membw). Defaults: 5 pairs, the agent with
 * --repeats 1.
 * sysbench is /usr/bin/sysbench (or SYSBENCH), the agent from this build
 * (or AGENT). Exit 0 when every median is in the target, 3 when one is
 * not, 1 when something failed.
 */
#include <errno.h>
#include <json-c/json.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "bench_test.h"
#include "run.h"
#include "stats.h"
#include "tool.h"

#define MAX_PAIRS 64
#define TARGET_LO 0.90
#define TARGET_HI 1.10
#define SYSBENCH_DEFAULT "/usr/bin/sysbench"

static const struct {
	const char *name;
	const char *oper; /* sysbench --memory-oper */
	bool all; /* one thread per online vCPU, else one */
	const char *metric; /* the agent's */
} pairs[] = {
	{ "read_1t", "read", false, "read_gbps" },
	{ "write_1t", "write", false, "write_gbps" },
	{ "read_all", "read", true, "read_gbps" },
	{ "write_all", "write", true, "write_gbps" },
};
#define NPAIRS (sizeof(pairs) / sizeof(pairs[0]))

/* sysbench's "... MiB transferred (R MiB/sec)" as GB/s; 0 when absent. */
static double sysbench_gbps(const char *out)
{
	const char *p = strstr(out, "MiB transferred (");
	double mib;

	if (!p || sscanf(p, "MiB transferred (%lf MiB/sec)", &mib) != 1)
		return 0;
	return mib * 1048576.0 / 1e9;
}

static unsigned long arg_mib = 256, arg_pairs = 5, arg_best = 3,
		     arg_passes = 64, arg_fifo, arg_sysbench_mib;

/* One sysbench run of arg_passes passes per thread: its GB/s. */
static int run_sysbench_once(const char *sysbench, const char *oper,
			     long threads, double *ret_gbps)
{
	char block[64], total[64], th[32], op[64];
	char *argv[] = { (char *)sysbench,
			 "memory",
			 block,
			 total,
			 "--memory-scope=local",
			 op,
			 "--memory-access-mode=seq",
			 th,
			 "--time=0",
			 "run",
			 NULL };
	struct run_result rr;

	snprintf(block, sizeof(block), "--memory-block-size=%luM",
		 arg_sysbench_mib);
	snprintf(total, sizeof(total), "--memory-total-size=%luM",
		 arg_sysbench_mib * arg_passes * (unsigned long)threads);
	snprintf(op, sizeof(op), "--memory-oper=%s", oper);
	snprintf(th, sizeof(th), "--threads=%ld", threads);
	if (run_program(argv, (uid_t)-1, &rr) < 0) {
		fprintf(stderr, "cannot run %s\n", sysbench);
		return -EIO;
	}
	*ret_gbps = rr.status == 0 ? sysbench_gbps(rr.out) : 0;
	if (*ret_gbps <= 0)
		fprintf(stderr, "%s failed (status %d): %s%s\n", sysbench,
			rr.status, rr.out, rr.err);
	run_result_release(&rr);
	return *ret_gbps > 0 ? 0 : -EIO;
}

/* THP off (1) or back to the system's mode (0) for the programs this one
 * starts from now on. */
static int thp_disable(int off)
{
	if (prctl(PR_SET_THP_DISABLE, (unsigned long)off, 0, 0, 0) < 0) {
		fprintf(stderr, "vs_sysbench: prctl(PR_SET_THP_DISABLE, %d): %s\n",
			off, strerror(errno));
		return -errno;
	}
	return 0;
}

/* The best of arg_best sysbench runs per pair, in the pairs' order, THP
 * off. */
static int run_sysbench_all(const char *sysbench, long vcpus,
			    double gbps[NPAIRS])
{
	int r = thp_disable(1);

	for (size_t i = 0; r == 0 && i < NPAIRS; i++) {
		gbps[i] = 0;
		for (unsigned long k = 0; k < arg_best; k++) {
			double g;

			r = run_sysbench_once(sysbench, pairs[i].oper,
					      pairs[i].all ? vcpus : 1, &g);
			if (r < 0)
				break;
			if (g > gbps[i])
				gbps[i] = g;
		}
	}
	if (thp_disable(0) < 0 && r == 0)
		r = -EIO;
	return r;
}

/* One agent run measures every variant: the pairs' metrics from it. */
static int run_agent(const char *agent, double gbps[NPAIRS])
{
	char bytes[64];
	char *argv[] = { (char *)agent, "bench",   "--profile",
			 "quick",	"--only",  "membw",
			 "--bw-bytes",	bytes,	   "--repeats",
			 "1",		"--json",  NULL };
	struct json_object *j;
	struct run_result rr;
	size_t found = 0;

	snprintf(bytes, sizeof(bytes), "%luM", arg_mib);
	if (run_program(argv, (uid_t)-1, &rr) < 0) {
		fprintf(stderr, "cannot run %s\n", agent);
		return -EIO;
	}
	j = rr.status == 0 ? json_tokener_parse(rr.out) : NULL;
	if (!j)
		fprintf(stderr, "%s failed (status %d): %s%s\n", agent,
			rr.status, rr.out, rr.err);
	run_result_release(&rr);
	if (!j)
		return -EIO;
	for (size_t i = 0; i < NPAIRS; i++) {
		char variant[32];
		struct json_object *res;

		snprintf(variant, sizeof(variant), "4k_%s",
			 pairs[i].all ? "all" : "1t");
		res = jresult(j, "membw", variant);
		if (!res || strcmp(jstatus(res), "ok")) {
			fprintf(stderr, "agent %s: %s %s\n", variant,
				jstatus(res),
				res ? json_object_to_json_string(res) : "");
			continue;
		}
		gbps[i] = jmedian(jmetric(res, pairs[i].metric));
		found += gbps[i] > 0;
	}
	json_object_put(j);
	return found == NPAIRS ? 0 : -EIO;
}

static const struct tool_opt opts[] = {
	{ .name = "size", .short_name = 's', .type = TOOL_ULONG,
	  .target = &arg_mib, .min = 1, .max = 1ul << 20 },
	{ .name = "sysbench-size", .short_name = 'S', .type = TOOL_ULONG,
	  .target = &arg_sysbench_mib, .min = 1, .max = 1ul << 20 },
	{ .name = "pairs", .short_name = 'p', .type = TOOL_ULONG,
	  .target = &arg_pairs, .min = 1, .max = MAX_PAIRS },
	{ .name = "best-of", .short_name = 'b', .type = TOOL_ULONG,
	  .target = &arg_best, .min = 1, .max = 100 },
	{ .name = "passes", .short_name = 'n', .type = TOOL_ULONG,
	  .target = &arg_passes, .min = 1, .max = 1000000 },
	{ .name = "fifo", .short_name = 'f', .type = TOOL_ULONG,
	  .target = &arg_fifo, .min = 1, .max = 99 },
};

static const struct tool tool = TOOL("vs_sysbench", opts,
	"usage: vs_sysbench [-s SIZE_MIB] [-S SYSBENCH_MIB] [-p PAIRS] [-b BEST_OF] [-n PASSES] [-f PRIO]\n");

int main(int argc, char **argv)
{
	const char *agent, *sysbench;
	double ratio[NPAIRS][MAX_PAIRS], before[NPAIRS];
	long vcpus = sysconf(_SC_NPROCESSORS_ONLN);
	int npairs, rc = 0;

	tool_parse(&tool, argc, argv);
	npairs = (int)arg_pairs;
	if (!arg_sysbench_mib)
		arg_sysbench_mib = arg_mib;
	/* sysbench 1.0.20 refuses any other block ("Invalid value for
	 * memory-block-size: 44M") */
	if (arg_sysbench_mib & (arg_sysbench_mib - 1)) {
		fprintf(stderr, "vs_sysbench: sysbench's block must be a power of two MiB, not %lu: give it one with -S (the agent keeps -s %lu)\n",
			arg_sysbench_mib, arg_mib);
		return 2;
	}
	agent = getenv("AGENT") ? getenv("AGENT") : AGENT_PATH;
	sysbench = getenv("SYSBENCH") ? getenv("SYSBENCH") : SYSBENCH_DEFAULT;
	if (access(sysbench, X_OK) < 0) {
		fprintf(stderr, "vs_sysbench: no sysbench at %s (apt-get install sysbench, or SYSBENCH=PATH)\n",
			sysbench);
		return 1;
	}
	if (vcpus < 1)
		vcpus = 1;
	if (arg_fifo) {
		struct sched_param sp = { .sched_priority = (int)arg_fifo };

		/* inherited by every program started from here on */
		if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0) {
			fprintf(stderr, "vs_sysbench: SCHED_FIFO %lu: %s\n",
				arg_fifo, strerror(errno));
			return 1;
		}
	}

	printf("vs_sysbench: %lu MiB per sysbench thread, %lu MiB per agent array, 1 and %ld threads, %d pairs\n",
	       arg_sysbench_mib, arg_mib, vcpus, npairs);
	printf("sysbench: best of %lu runs of %lu passes per thread; agent: best of its 3 iterations, --repeats 1; %s\n",
	       arg_best, arg_passes,
	       arg_fifo ? "both under SCHED_FIFO" : "normal scheduling");
	printf("sysbench memory seq read/write (8-byte ops, local scope, THP disabled) vs the agent's 4k_1t/4k_all read_gbps/write_gbps\n");
	printf("each agent run sits between two sysbench runs; ratio = agent / mean of the two\n");
	printf("%-4s %-9s %12s %12s %12s %9s\n", "pair", "kernel",
	       "sysb_before", "agent_GB/s", "sysb_after", "agent/sysb");
	if (run_sysbench_all(sysbench, vcpus, before) < 0)
		rc = 1;
	for (int k = 0; k < npairs && rc == 0; k++) {
		double after[NPAIRS], ag[NPAIRS] = { 0 };

		if (run_agent(agent, ag) < 0 ||
		    run_sysbench_all(sysbench, vcpus, after) < 0) {
			rc = 1;
			break;
		}
		for (size_t i = 0; i < NPAIRS; i++) {
			double s = (before[i] + after[i]) / 2;

			ratio[i][k] = ag[i] / s;
			printf("%-4d %-9s %12.2f %12.2f %12.2f %9.3f\n", k + 1,
			       pairs[i].name, before[i], ag[i], after[i],
			       ratio[i][k]);
			before[i] = after[i];
		}
		fflush(stdout);
	}
	if (rc == 0) {
		printf("median agent/sysbench GB/s over %d pairs (target %.2f-%.2f):\n",
		       npairs, TARGET_LO, TARGET_HI);
		for (size_t i = 0; i < NPAIRS; i++) {
			double m = stats_median(ratio[i], (size_t)npairs);
			bool ok = m >= TARGET_LO && m <= TARGET_HI;

			printf("  %-9s (agent 4k_%s %s, sysbench --memory-oper=%s --threads=%ld) %.3f %s\n",
			       pairs[i].name, pairs[i].all ? "all" : "1t",
			       pairs[i].metric, pairs[i].oper,
			       pairs[i].all ? vcpus : 1, m,
			       ok ? "ok" : "OUT OF TARGET");
			if (!ok)
				rc = 3;
		}
	}
	return rc;
}
