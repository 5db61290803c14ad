/* SPDX-License-Identifier: MIT */
/*
 * The benchmark profiles and the canonical method key, written once for
 * both sides: the agent starts a bench run from its profile's parameters
 * and keys it (agent/bench/bench_params.c), and the collector makes the key
 * again from the Method's fields when it stores the run
 * (collector/report_params.c). So a run keeps the key of what it measured
 * when a profile's parameters change: a run of an older agent, made with
 * the profile's old parameters, is keyed "standard+chase_accesses=50000000"
 * by a collector that knows the new ones (docs/bench.md, "Profile
 * revisions").
 */
#ifndef FLEETBENCH_METHOD_H
#define FLEETBENCH_METHOD_H

#include <stdbool.h>
#include <stdint.h>

#include "fleetbench.pb-c.h"

/* The Method fields that change a measured quantity, in the order of
 * proto/fleetbench.proto (the key lists its differences so): X(field,
 * size), size true for a byte count (written with a binary suffix). */
#define METHOD_FIELDS(X)                              \
	X(repeats, false) X(chase_bytes, true)        \
	X(chase_accesses, false) X(fault_bytes, true) \
	X(file_bytes, true) X(io_ms, false)           \
	X(iodepth, false) X(seq_bytes, true)          \
	X(seq_block, true) X(fs_increments, false)

/* The same for the optional Method fields (added later, so that reports of
 * older agents stay valid): an absent one is no difference. */
#define METHOD_OPTIONAL_FIELDS(X)                     \
	X(mmap_bytes, true) X(mmap_accesses, false)   \
	X(bw_bytes, true) X(scaling_ms, false)        \
	X(wb_bytes, true) X(wb_fsync_bytes, true)     \
	X(with_database, false) X(db_scale, false)    \
	X(db_rate, false) X(db_seconds, false)        \
	X(writeback_dirty_bytes, true)

/* A profile: its name, every Method field's value, and the agent's limit
 * of one benchmark's process. */
struct method_profile {
	const char *name;
	int64_t repeats;
	uint64_t chase_bytes;
	int64_t chase_accesses;
	uint64_t fault_bytes;
	uint64_t file_bytes;
	int64_t io_ms;
	int64_t iodepth;
	uint64_t seq_bytes;
	uint64_t seq_block;
	int64_t fs_increments;
	uint64_t mmap_bytes;
	int64_t mmap_accesses;
	uint64_t bw_bytes;
	int64_t scaling_ms;
	uint64_t wb_bytes;
	uint64_t wb_fsync_bytes;
	bool with_database;
	int64_t db_scale;
	int64_t db_rate;
	int64_t db_seconds;
	uint64_t writeback_dirty_bytes;
	int64_t timeout_s;
	/* the profile's time budget, seconds: the whole bench run (probe to
	 * report) within it on any host; each benchmark gets a share of it
	 * (docs/bench.md, "Time allowances") */
	int64_t max_s;
	/* adaptive repeats: the target half-width of every interval (percent
	 * of its ratio), each benchmark's time for its rounds, and their
	 * most; `repeats` is their least */
	int64_t target_pct;
	int64_t budget_s;
	int64_t max_repeats;
};

/* The number of profiles: quick, standard, full, in that order. */
#define METHOD_PROFILES 3

/* The profile of that name, NULL for none. */
const struct method_profile *method_profile(const char *name);

/* Its index in that order (0 quick, 1 standard, 2 full), -1 for none. */
int method_profile_index(const char *name);

/*
 * m's canonical key into *ret (malloc'd): m->profile, then each field that
 * differs from the profile's ("+name=value", in the fields' order; an
 * absent optional field is none), then "+only=a,b" when m->only names a
 * subset, then "+randread_file" when it is set. -ENOENT when m->profile is
 * no profile, -ENOMEM.
 */
int method_key(const Fleetbench__Method *m, char **ret);

#endif
