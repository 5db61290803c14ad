/* SPDX-License-Identifier: MIT */
/* The profiles of a bench run, and its method key: the profile and what
 * overrides it. */
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

/*
 * quick: at most 30 s on 2 vCPUs; standard: at most 3 minutes with the
 * sizes of docs/bench.md; full: bigger and longer.
 *
 * timeout_s limits one benchmark's process, setup to teardown. It only
 * has to catch a benchmark that hangs, never a slow one: on 2 shared vCPUs
 * the whole standard suite takes about 2 min 43 s and its longest
 * benchmark (randread: a 1 GiB file written, then 6 engines x 5 repeats x
 * 1.5 s) about a minute, so each limit is at least 4 times the whole
 * profile's run there: quick 120 s, standard 600 s, full 1800 s.
 *
 * mmap_read's accesses are dependent loads of about 200 ns (64 MiB) to
 * 400 ns (2 GiB) with 4 KiB pages on 2 vCPUs, a little over half that with
 * huge pages, per variant per repeat: quick about 2.5 s for the 4k/thp
 * pair, standard (3 M, not more) about 12 s, full (10 M at 2 GiB) about
 * 100 s with all three variants (docs/bench.md, mmap_read).
 */
static const struct bench_params profiles[] = {
	{
		.profile = "quick",
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
		.timeout_s = 120,
		.db_scale = 10,
		.db_rate = 500,
		.db_seconds = 3,
	},
	{
		.profile = "standard",
		.repeats = 5,
		.chase_bytes = 1ULL << 30,
		.chase_accesses = 50000000,
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
		.timeout_s = 600,
		.db_scale = 20,
		.db_rate = 1000,
		.db_seconds = 5,
	},
	{
		.profile = "full",
		.repeats = 9,
		.chase_bytes = 4ULL << 30,
		.chase_accesses = 100000000,
		.fault_bytes = 4ULL << 30,
		.file_bytes = 4ULL << 30,
		.io_ms = 5000,
		.iodepth = 32,
		.seq_bytes = 1ULL << 30,
		.seq_block = 128 << 10,
		.fs_increments = 200000000,
		/* past the dirty limit of a host with up to ~30 GiB free
		 * or cached at dirty_ratio 20 (4.1-4.6 GiB here), one fsync
		 * at the end: a disk slower than the writes reaches the
		 * throttle; 9 x 6 GiB took 1.5 to 4.5 minutes here
		 * (docs/bench.md, writeback) */
		.wb_bytes = 6ULL << 30,
		.wb_fsync_bytes = 6ULL << 30,
		.mmap_bytes = 2ULL << 30,
		.mmap_accesses = 10000000,
		.scaling_ms = 2000,
		.bw_bytes = 256ULL << 20,
		.timeout_s = 1800,
		.db_scale = 100,
		.db_rate = 1000,
		.db_seconds = 8,
	},
};

int bench_params_profile(struct bench_params *p, const char *profile)
{
	for (size_t i = 0; i < ARRAY_SIZE(profiles); i++) {
		const struct bench_params *q = &profiles[i];

		if (strcmp(q->profile, profile))
			continue;
		p->repeats = q->repeats;
		p->chase_bytes = q->chase_bytes;
		p->chase_accesses = q->chase_accesses;
		p->fault_bytes = q->fault_bytes;
		p->file_bytes = q->file_bytes;
		p->io_ms = q->io_ms;
		p->iodepth = q->iodepth;
		p->seq_bytes = q->seq_bytes;
		p->seq_block = q->seq_block;
		p->fs_increments = q->fs_increments;
		p->wb_bytes = q->wb_bytes;
		p->wb_fsync_bytes = q->wb_fsync_bytes;
		p->mmap_bytes = q->mmap_bytes;
		p->mmap_accesses = q->mmap_accesses;
		p->scaling_ms = q->scaling_ms;
		p->bw_bytes = q->bw_bytes;
		p->timeout_s = q->timeout_s;
		p->db_scale = q->db_scale;
		p->db_rate = q->db_rate;
		p->db_seconds = q->db_seconds;
		return 0;
	}
	return -EINVAL;
}

/* The parameters that change a measured quantity, in the order of
 * proto/fleetbench.proto's Method fields (the key lists them so). */
#define METHOD_FIELDS(X)                            \
	X(repeats, false) X(chase_bytes, true)      \
	X(chase_accesses, false) X(fault_bytes, true) \
	X(file_bytes, true) X(io_ms, false)         \
	X(iodepth, false) X(seq_bytes, true)        \
	X(seq_block, true) X(fs_increments, false)

/* The same for the optional Method fields (added later, so that reports of
 * older agents stay valid): each sets its has_ too. */
#define METHOD_OPTIONAL_FIELDS(X) \
	X(mmap_bytes, true) X(mmap_accesses, false) \
	X(bw_bytes, true) X(scaling_ms, false) \
	X(wb_bytes, true) X(wb_fsync_bytes, true) \
	X(with_database, false) X(db_scale, false) \
	X(db_rate, false) X(db_seconds, false) \
	X(writeback_dirty_bytes, true)

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

/* Sets the method's numbers from p, each field of the same name. */
static void method_numbers(Fleetbench__Method *m, const struct bench_params *p)
{
#define X(field, size) m->field = p->field;
	METHOD_FIELDS(X)
#undef X
#define X(field, size)           \
	m->field = p->field;     \
	m->has_##field = true;
	METHOD_OPTIONAL_FIELDS(X)
#undef X
}

/* Appends to f p's differences from prof, in the fields' order. */
static void key_differences(FILE *f, const struct bench_params *p,
			    const struct bench_params *prof)
{
#define X(field, size)                                                      \
	if ((unsigned long long)p->field != (unsigned long long)prof->field) { \
		fputs("+" #field "=", f);                                     \
		if (size)                                                     \
			put_size(f, (unsigned long long)p->field);            \
		else                                                          \
			fprintf(f, "%lld", (long long)p->field);              \
	}
	METHOD_FIELDS(X)
	METHOD_OPTIONAL_FIELDS(X)
#undef X
}

int bench_method_new(const struct bench_params *p, const char *only,
		     Fleetbench__Method **ret)
{
	struct bench_params prof = { 0 };
	size_t keylen = 0, nran = 0, nprofile = 0;
	Fleetbench__Method *m;
	FILE *f;

	if (bench_params_profile(&prof, p->profile) < 0)
		return -EINVAL;
	m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	fleetbench__method__init(m);
	m->profile = strdup(p->profile);
	m->only = calloc(bench_count(), sizeof(*m->only));
	f = open_memstream(&m->key, &keylen);
	if (!m->profile || !m->only || !f)
		goto oom;
	fputs(p->profile, f);
	key_differences(f, p, &prof);
	method_numbers(m, p);
	for (size_t i = 0; i < bench_count(); i++) {
		const char *name = bench_get(i)->name;

		if (bench_selected(bench_get(i), p->profile, NULL))
			nprofile++;
		if (!bench_selected(bench_get(i), p->profile, only))
			continue;
		m->only[nran] = strdup(name);
		if (!m->only[nran])
			goto oom;
		nran++;
		m->n_only = nran;
	}
	/* A subset is its own method; the profile's own benchmarks are no
	 * subset. A full_only benchmark named in a quick or standard run
	 * makes the list differ too. */
	bool same = nran == nprofile;

	for (size_t i = 0; same && i < bench_count(); i++)
		same = bench_selected(bench_get(i), p->profile, NULL) ==
		       bench_selected(bench_get(i), p->profile, only);
	if (!same) {
		for (size_t i = 0; i < nran; i++)
			fprintf(f, "%s%s", i ? "," : "+only=", m->only[i]);
	} else {
		for (size_t i = 0; i < nran; i++)
			free(m->only[i]);
		m->n_only = 0;
	}
	if (p->randread_file)
		fputs("+randread_file", f);
	m->randread_file = p->randread_file != NULL;
	if (fclose(f) != 0 || !m->key) {
		f = NULL;
		goto oom;
	}
	*ret = m;
	return 0;
oom:
	if (f)
		fclose(f);
	fleetbench__method__free_unpacked(m, NULL);
	return -ENOMEM;
}
