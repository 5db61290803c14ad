/* SPDX-License-Identifier: MIT */
/*
 * The canonical method key both sides make (proto/method.h): the agent's
 * key of a run equals the one the collector makes again from its fields;
 * a run an older agent made with a profile's earlier parameters is keyed
 * by them; an optional field an older agent never sent is no difference;
 * a profile the collector does not know has no key of its making.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "check.h"
#include "cleanup.h"
#include "method.h"

/* The Method the agent of today makes for profile, every field the
 * profile's own (freed with fleetbench__method__free_unpacked) */
static Fleetbench__Method *method_of_profile(const char *profile)
{
	struct bench_params p = { 0 };
	Fleetbench__Method *m = NULL;

	CHECK_OK(bench_params_profile(&p, profile));
	p.profile = (char *)profile;
	CHECK_OK(bench_method_new(&p, NULL, &m));
	return m;
}

/* method_key(m) is want */
static void check_key(const Fleetbench__Method *m, const char *want,
		      const char *what)
{
	char *key = NULL;

	CHECK_EQ_INT(method_key(m, &key), 0);
	CHECK_(key && !strcmp(key, want), "%s: key '%s', expected '%s'", what,
	       key ? key : "(null)", want);
	free(key);
}

static void test_profiles(void)
{
	static const char *const names[] = { "quick", "standard", "full" };

	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		Fleetbench__Method *m = method_of_profile(names[i]);

		CHECK(method_profile(names[i]) != NULL);
		if (!m)
			continue;
		check_key(m, names[i], "a profile's own parameters");
		fleetbench__method__free_unpacked(m, NULL);
	}
	CHECK(method_profile("fast") == NULL);
	CHECK(method_profile(NULL) == NULL);
}

/* What the agent keys, the collector keys the same */
static void test_agent_same(void)
{
	static const struct {
		const char *profile, *only;
		long long chase_accesses, io_ms;
		bool file;
	} cases[] = {
		{ "standard", NULL, 0, 0, false },
		{ "quick", "randread,seqwrite", 0, 700, false },
		{ "full", NULL, 50000000, 0, true },
		{ "standard", "database", 0, 0, false },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct bench_params p = { 0 };
		Fleetbench__Method *m = NULL;
		char *key = NULL;

		CHECK_OK(bench_params_profile(&p, cases[i].profile));
		p.profile = (char *)cases[i].profile;
		if (cases[i].chase_accesses)
			p.chase_accesses = cases[i].chase_accesses;
		if (cases[i].io_ms)
			p.io_ms = cases[i].io_ms;
		if (cases[i].file)
			p.randread_file = (char *)"/dev/vda";
		CHECK_OK(bench_method_new(&p, cases[i].only, &m));
		if (!m)
			continue;
		CHECK_EQ_INT(method_key(m, &key), 0);
		CHECK_(key && !strcmp(key, m->key),
		       "case %zu: collector's key '%s', agent's '%s'", i,
		       key ? key : "(null)", m->key);
		free(key);
		fleetbench__method__free_unpacked(m, NULL);
	}
}

/* A run of an older agent, whose profiles had other parameters */
static void test_older_agent(void)
{
	Fleetbench__Method *m;

	/* standard before its revision of 2026-12-03: 50 M loads per
	 * repeat, and none of issue 15's fields */
	m = method_of_profile("standard");
	if (m) {
		m->chase_accesses = 50000000;
		m->has_mmap_bytes = m->has_mmap_accesses = false;
		m->has_bw_bytes = m->has_scaling_ms = false;
		m->has_wb_bytes = m->has_wb_fsync_bytes = false;
		m->has_with_database = m->has_db_scale = false;
		m->has_db_rate = m->has_db_seconds = false;
		m->has_writeback_dirty_bytes = false;
		m->mmap_bytes = 1; /* absent: not read */
		check_key(m, "standard+chase_accesses=50000000",
			  "standard's earlier chase_accesses");
		fleetbench__method__free_unpacked(m, NULL);
	}

	/* full of that revision, with --only: every earlier value named, in
	 * the fields' order, before the subset */
	m = method_of_profile("full");
	if (m) {
		m->repeats = 3;
		m->chase_accesses = 100000000;
		m->io_ms = 5000;
		m->mmap_accesses = 10000000;
		m->scaling_ms = 2000;
		m->db_seconds = 8;
		m->only[0] = strdup("randread");
		m->n_only = 1;
		check_key(m,
			  "full+repeats=3+chase_accesses=100000000+io_ms=5000+mmap_accesses=10000000+scaling_ms=2000+db_seconds=8+only=randread",
			  "full's earlier parameters");
		fleetbench__method__free_unpacked(m, NULL);
	}

	/* sizes with their suffix, a flag as 1 */
	m = method_of_profile("quick");
	if (m) {
		m->chase_bytes = (64ULL << 20) + 4096;
		m->wb_bytes = 1ULL << 30;
		m->with_database = true;
		m->randread_file = true;
		check_key(m,
			  "quick+chase_bytes=65540K+wb_bytes=1G+with_database=1+randread_file",
			  "sizes and flags");
		fleetbench__method__free_unpacked(m, NULL);
	}
}

static void test_unknown_profile(void)
{
	Fleetbench__Method *m = method_of_profile("quick");
	char *key = NULL;

	if (!m)
		return;
	free(m->profile);
	m->profile = strdup("turbo");
	CHECK_EQ_INT(method_key(m, &key), -ENOENT);
	CHECK(key == NULL);
	fleetbench__method__free_unpacked(m, NULL);
}

int main(void)
{
	test_profiles();
	test_agent_same();
	test_older_agent();
	test_unknown_profile();
	return check_summary();
}
