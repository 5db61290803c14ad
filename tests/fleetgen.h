/* SPDX-License-Identifier: MIT */
/*
 * What the parts of fleetgen (tests/fleetgen.c) share: an instance type of
 * the fleet, one run of a host, and the run's probe (fleetgen_probe.c) and
 * bench messages (fleetgen_bench.c).
 */
#ifndef FLEETBENCH_TEST_FLEETGEN_H
#define FLEETBENCH_TEST_FLEETGEN_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "fleetbench.pb-c.h"
#include "rand.h"

#define REPEATS 9 /* the full profile */

struct fleet_type {
	const char *provider, *instance_type, *region, *host_prefix;
	int vcpus;
	long long memory_kb;
	const char *kernel[2]; /* old, new */
	int runs; /* per host and kernel */
	const char *thp_mode;
	double thp_speedup, huge_fraction;
	double hugetlb_2m_speedup; /* 0: no free 2 MiB pages, skipped */
	bool has_1g; /* 1 GiB pages offered by the kernel */
	double hugetlb_1g_speedup; /* 0: no 1 GiB pool, skipped */
	double pread_iops;
	double gain[2]; /* io_uring / pread IOPS, old and new kernel */
	double gain_cv; /* spread of io_uring IOPS across repeats */
	double libaio_iops_ratio; /* libaio / pread IOPS, both kernels */
	bool sqpoll_denied_new; /* the new kernel refuses SQPOLL: EPERM */
	double noisy_share; /* share of runs next to a noisy neighbour, in
			       which 30% of the repeats see steal above 5% */
	bool sqpoll_crashes_new; /* randread/io_uring_sqpoll dies by SIGSEGV
				    on the new kernel: failed */
};

struct run {
	const struct fleet_type *t;
	int host, kernel, index;
	char hostname[64], machine_id[33], run_id[37];
	int64_t started_ms;
	uint64_t seed;
	struct rng rng;
	Fleetbench__BenchRun *bench; /* the agent's messages, as it fills them */
	bool hot; /* a noisy neighbour during this run */
};

/* The probe's JSON of run, as the agent's probe prints it (put it). */
struct json_object *fleetgen_probe_json(const struct run *run);

/*
 * The run's bench messages, drawn from its rng, as the agent fills them
 * (bench_run_free() them); thp_scale multiplies the THP speedup.
 */
Fleetbench__BenchRun *fleetgen_bench_run(struct run *run, double thp_scale);

#endif
