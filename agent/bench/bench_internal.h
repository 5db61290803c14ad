/* SPDX-License-Identifier: MIT */
/*
 * What the driver's files share and the benchmarks do not see: the state
 * of a run (struct bench_run), a variant's handle (struct bench_result),
 * the page where a benchmark's child says where it is (struct
 * bench_where), and the few helpers more than one of them calls. The
 * driver is bench.c (the table and the suite), bench_child.c (each
 * benchmark's process), bench_result.c (results, samples, comparisons,
 * bounds), bench_window.c (the measured windows), bench_safety.c,
 * bench_params.c (profiles and the method) and kfiles.c (kernel files).
 */
#ifndef FLEETBENCH_BENCH_INTERNAL_H
#define FLEETBENCH_BENCH_INTERNAL_H

#include <stddef.h>

#include "bench.h"
#include "probe.h"
#include "probe_psi.h"
#include "probe_stat.h"

#define MAX_METRICS 24 /* of one variant */

/*
 * Where a benchmark's child is, in a MAP_SHARED page the parent reads once
 * the child has ended (so it can say where the child died), and the system
 * settings to restore should it die. The child writes it with plain stores
 * (no allocation, no lock): safe at any point, from a signal handler too.
 */
#define WHERE_VARIANTS 32
#define WHERE_NAME 64
#define WHERE_RESTORE 4

enum bench_phase {
	PHASE_START,
	PHASE_SETUP,
	PHASE_RUN,
	PHASE_COMPARE,
	PHASE_TEARDOWN,
	PHASE_REPORT,
};

struct bench_where {
	int phase; /* enum bench_phase */
	int variant; /* the window last begun (index into variants), -1 */
	long long repeat; /* 0-based, in PHASE_RUN */
	long long rounds; /* the rounds done, once bench_rounds() ends */
	int error; /* errno of a child that exits CHILD_EXIT_ERROR */
	char error_text[256]; /* what failed, from bench_fail_text(); "" */
	int signal; /* what stopped a child that exits CHILD_EXIT_STOPPED */
	unsigned int nvariants; /* announced by bench_result_new */
	char variants[WHERE_VARIANTS][WHERE_NAME];
	struct {
		int armed;
		char path[256];
		char value[32];
	} restore[WHERE_RESTORE];
};

/* A BenchRun being built, with the capacities of its arrays
 * (ARRAY_RESERVE: the message keeps only their lengths). */
struct bench_out {
	Fleetbench__BenchRun *msg;
	size_t cap_benchmarks, cap_comparisons, cap_costs;
};

/* A thread's time on a CPU and waiting for one, ns (its schedstat). */
struct bench_thread_time {
	pid_t tid;
	uint64_t run_ns, rq_ns;
};

#define BENCH_OWN_THREADS 64 /* of a window's process, tracked */

struct bench_result {
	struct bench_run *run;
	int slot; /* index in where->variants, -1: not announced */
	Fleetbench__Benchmark *msg; /* in run->out.msg->benchmarks */
	/* the capacities of msg's arrays, and of each metric's samples */
	size_t cap_parameters, cap_metrics, cap_windows;
	size_t cap_samples[MAX_METRICS];
	/* the open window */
	struct probe_cpu_times w_times;
	int w_times_ok;
	double w_start;
	/* PSI totals at its start (w_psi_ok[i]: read), the time before they
	 * were read, and the vCPU the measuring thread began on (-1) */
	struct probe_psi_totals w_psi[PSI_NRES];
	bool w_psi_ok[PSI_NRES];
	double w_psi_start;
	int w_cpu;
	/* the CPU time and runqueue wait of each thread of this process at
	 * its start (w_nown: how many, -1 when unread) */
	struct bench_thread_time w_own[BENCH_OWN_THREADS];
	int w_nown;
};

struct bench_run {
	const struct bench_params *params;
	struct probe_ctx pctx; /* root_fd, for kernel files */
	struct probe_opts popts;
	struct bench_result **results; /* the handles of out's benchmarks */
	size_t nresults, cap_results;
	/* what this process measured: in a child, what it hands back */
	struct bench_out out;
	struct bench_where *where; /* in a benchmark's child, else NULL */
	const struct bench_ops *ops; /* the benchmark this child runs */
	/* the running benchmark's allowance (bench.c, allowance_of()):
	 * seconds, and the bench_now() by which it ends, setup to teardown */
	double allowance_s;
	double deadline;
};

/* ---- bench_result.c ---- */

/* A new Benchmark appended to out; NULL on ENOMEM. */
Fleetbench__Benchmark *bench_out_append(struct bench_out *out,
					const char *benchmark,
					const char *variant);

/* Marks b failed with failure: its metrics and windows go, its parameters
 * stay. 0 or -ENOMEM. */
int bench_benchmark_fail(Fleetbench__Benchmark *b, const char *failure);

/* A finite v sets an optional double; NaN or infinity leaves it unset. */
void bench_set_double(protobuf_c_boolean *has, double *dst, double v);

/* ---- bench_child.c ---- */

/*
 * The measured rounds of one benchmark (ops->run, each a repeat of every
 * variant): exactly `repeats` when fixed, else from `repeats` on until
 * every comparison's interval is within target_pct of its ratio, another
 * round would pass budget_s, or max_repeats are done
 * (stats_adaptive_next(); docs/bench.md). The rounds done in *ret_rounds;
 * 0 or the -errno of ops->run.
 */
int bench_rounds(struct bench_run *run, const struct bench_ops *ops,
		 void *state, long long *ret_rounds);

/* Each comparison of out from first on gets the target, whether its
 * interval reached it, and the rounds it was computed from. */
void bench_comparisons_mark(Fleetbench__BenchRun *out, size_t first,
			    const struct bench_params *p, long long rounds);

/*
 * Runs one benchmark in a child and adds its results and comparisons, or
 * its failure, to out. 0, -EINTR when interrupted, or -errno of the parent
 * itself. run->where is the shared page.
 */
int bench_run_isolated(struct bench_run *run, const struct bench_ops *ops,
		       struct bench_out *out);

#endif
