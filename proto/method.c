/* SPDX-License-Identifier: MIT */
/* The benchmark profiles and the canonical method key (method.h). */
#include "method.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

/*
 * quick: at most 30 s on 2 vCPUs; standard: at most 3 minutes; full
 * (with the scaling sweep and the database): at most 15 minutes. The
 * sizes and their wall times are in docs/bench.md; a change of a value
 * here changes what the profile's key means, so the runs stored with the
 * old value are keyed by it (docs/bench.md, "Profile revisions": schema
 * 018 re-keyed the runs of the revision before this one).
 *
 * timeout_s limits one benchmark's process, setup to teardown. It only
 * has to catch a benchmark that hangs, never a slow one: each limit is at
 * least 4 times the whole profile's run on 2 shared vCPUs: quick 120 s,
 * standard 600 s, full 1800 s.
 *
 * Dependent loads (thp_chase, mmap_read) cost 150-450 ns each with 4 KiB
 * pages on 2 vCPUs, depending on the host: chase_accesses 20 M (more than
 * one pass over standard's 16.7 M slots) keeps standard's thp_chase to
 * about a minute where 50 M took 165 s.
 */
static const struct method_profile profiles[] = {
	{
		.name = "quick",
		.repeats = 3,
		.chase_bytes = 128ULL << 20,
		.chase_accesses = 4000000,
		.fault_bytes = 256ULL << 20,
		.file_bytes = 256ULL << 20,
		.io_ms = 500,
		.iodepth = 32,
		.seq_bytes = 64ULL << 20,
		.seq_block = 128 << 10,
		.fs_increments = 20000000,
		.wb_bytes = 64ULL << 20,
		.wb_fsync_bytes = 16ULL << 20,
		.mmap_bytes = 64ULL << 20,
		.mmap_accesses = 2000000,
		.scaling_ms = 200,
		.bw_bytes = 44ULL << 20,
		.db_scale = 10,
		.db_rate = 500,
		.db_seconds = 3,
		.timeout_s = 120,
		.max_s = 30,
		.target_pct = 10,
		.budget_s = 3,
		.max_repeats = 8,
	},
	{
		.name = "standard",
		.repeats = 5,
		.chase_bytes = 1ULL << 30,
		.chase_accesses = 20000000,
		.fault_bytes = 1ULL << 30,
		.file_bytes = 1ULL << 30,
		.io_ms = 1500,
		.iodepth = 32,
		.seq_bytes = 256ULL << 20,
		.seq_block = 128 << 10,
		.fs_increments = 100000000,
		.wb_bytes = 256ULL << 20,
		.wb_fsync_bytes = 32ULL << 20,
		.mmap_bytes = 512ULL << 20,
		.mmap_accesses = 3000000,
		.scaling_ms = 1000,
		.bw_bytes = 96ULL << 20,
		.db_scale = 20,
		.db_rate = 1000,
		.db_seconds = 5,
		.timeout_s = 600,
		.max_s = 180,
		.target_pct = 5,
		.budget_s = 60,
		.max_repeats = 20,
	},
	{
		.name = "full",
		.repeats = 9,
		.chase_bytes = 4ULL << 30,
		.chase_accesses = 20000000,
		.fault_bytes = 4ULL << 30,
		.file_bytes = 4ULL << 30,
		.io_ms = 2000,
		.iodepth = 32,
		.seq_bytes = 1ULL << 30,
		.seq_block = 128 << 10,
		.fs_increments = 200000000,
		/* past the dirty limit of a host with up to ~30 GiB free
		 * or cached at dirty_ratio 20 (4.1-4.6 GiB here), one fsync
		 * at the end: a disk slower than the writes reaches the
		 * throttle (docs/bench.md, writeback) */
		.wb_bytes = 6ULL << 30,
		.wb_fsync_bytes = 6ULL << 30,
		.mmap_bytes = 2ULL << 30,
		.mmap_accesses = 5000000,
		.scaling_ms = 1000,
		.bw_bytes = 256ULL << 20,
		.db_scale = 100,
		.db_rate = 1000,
		.db_seconds = 5,
		.timeout_s = 1800,
		.max_s = 900,
		.target_pct = 5,
		.budget_s = 240,
		.max_repeats = 40,
	},
};

_Static_assert(ARRAY_SIZE(profiles) == METHOD_PROFILES,
	       "METHOD_PROFILES counts the profiles");

int method_profile_index(const char *name)
{
	for (size_t i = 0; name && i < ARRAY_SIZE(profiles); i++)
		if (!strcmp(profiles[i].name, name))
			return (int)i;
	return -1;
}

const struct method_profile *method_profile(const char *name)
{
	int i = method_profile_index(name);

	return i < 0 ? NULL : &profiles[i];
}

/* v with the largest binary suffix that divides it exactly ("64M"). */
static void put_size(FILE *f, unsigned long long v)
{
	static const char suffix[] = "KMGT";
	int k = -1;

	while (k < 3 && v && !(v & 1023)) {
		v >>= 10;
		k++;
	}
	fprintf(f, "%llu", v);
	if (k >= 0)
		fputc(suffix[k], f);
}

/* "+field=value" into f */
static void put_difference(FILE *f, const char *field, bool size,
			   unsigned long long v)
{
	fprintf(f, "+%s=", field);
	if (size)
		put_size(f, v);
	else
		fprintf(f, "%lld", (long long)v);
}

int method_key(const Fleetbench__Method *m, char **ret)
{
	const struct method_profile *prof = method_profile(m->profile);
	char *key = NULL;
	size_t len = 0;
	FILE *f;

	if (!prof)
		return -ENOENT;
	f = open_memstream(&key, &len);
	if (!f)
		return -ENOMEM;
	fputs(prof->name, f);
#define X(field, size)                                                      \
	if ((unsigned long long)m->field != (unsigned long long)prof->field) \
		put_difference(f, #field, size, (unsigned long long)m->field);
	METHOD_FIELDS(X)
#undef X
#define X(field, size)                                                     \
	if (m->has_##field &&                                               \
	    (unsigned long long)m->field != (unsigned long long)prof->field) \
		put_difference(f, #field, size, (unsigned long long)m->field);
	METHOD_OPTIONAL_FIELDS(X)
#undef X
	for (size_t i = 0; i < m->n_only; i++)
		fprintf(f, "%s%s", i ? "," : "+only=", m->only[i]);
	if (m->randread_file)
		fputs("+randread_file", f);
	if (fclose(f) != 0 || !key) {
		free(key);
		return -ENOMEM;
	}
	*ret = key;
	return 0;
}
