/* SPDX-License-Identifier: MIT */
/*
 * Hardware (and software) counters around one measured region, through
 * perf_event_open(2): a group of events of the calling thread, user space
 * only, started and stopped together, read with time_enabled and
 * time_running so a multiplexed group is scaled and says so.
 *
 *     struct pmu_group g;
 *     struct pmu_counts c;
 *
 *     if (pmu_open(&g, events, n) == 0) {   // in setup, once
 *             pmu_start(&g);
 *             ... the measured region ...
 *             pmu_stop(&g, &c);             // c.value[i]: event i's count
 *     }
 *     pmu_close(&g);                        // also after a failed open
 *
 * Where the guest has no PMU (most cloud VMs without a vPMU, Firecracker)
 * the hardware events fail with ENOENT or EOPNOTSUPP; under
 * kernel.perf_event_paranoid > 2 (Debian's 3 default without root) with
 * EACCES. Software events (PERF_TYPE_SOFTWARE) work everywhere, which is
 * how the tests exercise the counting path.
 */
#ifndef FLEETBENCH_PMU_H
#define FLEETBENCH_PMU_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PMU_MAX_EVENTS 4

/* One counter: perf_event_attr's type and config, and our name for it. */
struct pmu_event {
	const char *name; /* "dtlb_load_misses" */
	uint32_t type; /* PERF_TYPE_HW_CACHE, PERF_TYPE_RAW, ... */
	uint64_t config;
};

/* dTLB load misses: PERF_TYPE_HW_CACHE, DTLB | OP_READ | RESULT_MISS. */
extern const struct pmu_event pmu_dtlb_load_misses;
/* Core cycles: PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES. */
extern const struct pmu_event pmu_cpu_cycles;

/*
 * The page-walk-cycles event of this CPU, read through cpuid (sys_cpuid, or
 * a test's). There is no generic perf event for it: it is a raw event whose
 * code differs per microarchitecture (Intel's DTLB_LOAD_MISSES.WALK_DURATION
 * on Haswell and Broadwell, .WALK_PENDING from Skylake on; AMD Zen names
 * none). 0 and *ret (with ret->name naming the event); -ENOENT with why
 * saying which CPU has no event we know.
 */
int pmu_walk_cycles_event(int (*cpuid)(uint32_t leaf, uint32_t subleaf,
				       uint32_t ret[4]),
			  struct pmu_event *ret, char *why, size_t whylen);

/* The perf_event_attr pmu_open() uses for ev (the probe tests the same):
 * disabled, exclude_kernel, exclude_hv, group read with both times. */
void pmu_attr(const struct pmu_event *ev, bool leader,
	      struct perf_event_attr *ret);

struct pmu_group {
	size_t n; /* events asked for */
	const struct pmu_event *ev; /* the caller's array, kept */
	int fd[PMU_MAX_EVENTS]; /* -1 when that event did not open */
	int err[PMU_MAX_EVENTS]; /* its -errno then, else 0 */
};

/*
 * Opens ev[0..n) as one group of the calling thread on any CPU, ev[0] the
 * leader. Returns 0, or the leader's -errno (nothing counts then); a later
 * event that fails is left out, with its -errno in g->err[i]. -EINVAL for
 * n of 0 or above PMU_MAX_EVENTS. g is always ready for pmu_close().
 */
int pmu_open(struct pmu_group *g, const struct pmu_event *ev, size_t n);

/* Zeroes and starts the group. 0 or -errno. */
int pmu_start(struct pmu_group *g);

struct pmu_counts {
	size_t n;
	uint64_t raw[PMU_MAX_EVENTS]; /* as read */
	/* raw scaled by time_enabled / time_running; NAN for an event that
	 * did not open, or when the group never ran */
	double value[PMU_MAX_EVENTS];
	uint64_t time_enabled, time_running; /* ns */
	bool multiplexed; /* ran less than it was enabled: values scaled */
};

/* Stops the group and reads it into *ret. 0 or -errno. */
int pmu_stop(struct pmu_group *g, struct pmu_counts *ret);

/* Closes what pmu_open() opened; twice is fine, and so is a zeroed g
 * that pmu_open() never saw. */
void pmu_close(struct pmu_group *g);

/*
 * Fills ret from one PERF_FORMAT_GROUP read ({nr, time_enabled,
 * time_running, value[nr]}) of the open events of g (for tests: the
 * scaling). 0, or -EBADMSG when nr does not match.
 */
int pmu_counts_parse(const struct pmu_group *g, const uint64_t *buf,
		     size_t nbuf, struct pmu_counts *ret);

/* value[i] / accesses: NAN when that value is NAN or accesses is 0. */
double pmu_per_access(const struct pmu_counts *c, size_t i,
		      uint64_t accesses);

/* "ok" for 0, else the errno's name ("ENOENT", "EACCES", ...). */
const char *pmu_errname(int err);

#endif
