/* SPDX-License-Identifier: MIT */
/*
 * The codec's rules for what a Report says about how it was run (method:
 * the key and its profile, sizes and counts, the benchmarks it ran) and
 * what the host can (capabilities: THP modes, io_uring setup results and
 * names, hugepage pools, the host's size, CPU model, vm and container).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_test.h"

static void method_init(Fleetbench__Method *m, const char *key,
			const char *profile)
{
	fleetbench__method__init(m);
	m->key = (char *)key;
	m->profile = (char *)profile;
	m->repeats = 3;
	m->chase_bytes = 128u << 20;
	m->chase_accesses = 1000000;
	m->fault_bytes = 64u << 20;
	m->file_bytes = 256u << 20;
	m->io_ms = 2000;
	m->iodepth = 32;
	m->seq_bytes = 256u << 20;
	m->seq_block = 1u << 20;
	m->fs_increments = 1000;
}

static void test_method(void)
{
	static char *only[CODEC_MAX_METHOD_ONLY + 1] = {
		"randread", "seqwrite", "thp_chase", "thp_fault", "randread",
		"seqwrite", "thp_chase", "thp_fault", "randread", "seqwrite",
		"thp_chase", "thp_fault", "randread", "seqwrite", "thp_chase",
		"thp_fault", "randread",
	};
	struct fixture f;
	Fleetbench__Method m;
	Fleetbench__Report *u = NULL;
	char err[CODEC_ERR_LEN], *s;
	uint8_t *buf = NULL;
	size_t len;

	/* absent (an older agent): valid, as before */
	fixture_init(&f);
	expect_valid(&f);
	method_init(&m, "quick", "quick");
	f.r.method = &m;
	expect_valid(&f);
	/* it travels */
	m.key = "quick+iodepth=64+only=randread,seqwrite";
	m.iodepth = 64;
	m.n_only = 2;
	m.only = only;
	expect_valid(&f);
	CHECK_OK(codec_pack_report(&f.r, &buf, &len));
	CHECK_OK(codec_unpack_report(buf, len, &u, err));
	CHECK_(u && u->method && !strcmp(u->method->key, m.key) &&
		       u->method->iodepth == 64 && u->method->n_only == 2 &&
		       !strcmp(u->method->only[1], "seqwrite"),
	       "%s", "method round trip");
	codec_free_report(u);
	free(buf);
	m.n_only = 0;
	m.key = "standard+chase_bytes=64M";
	m.profile = "standard";
	expect_valid(&f);
	m.key = "standard+randread_file";
	m.randread_file = 1;
	expect_valid(&f);
	/* the key starts with the profile, then ends or goes on with '+' */
	m.key = "standardx";
	expect_invalid(&f,
		       "method.key: does not start with the profile 'standard' followed by its end or '+'");
	m.key = "quick+chase_bytes=64M";
	expect_invalid(&f,
		       "method.key: does not start with the profile 'standard' followed by its end or '+'");
	m.key = "standard+Chase";
	expect_invalid(&f,
		       "method.key: byte 9 (0x43) is not one of [a-z0-9_+=,.-KMGT]");
	m.key = "standard+chase bytes";
	expect_invalid(&f,
		       "method.key: byte 14 (0x20) is not one of [a-z0-9_+=,.-KMGT]");
	m.key = "";
	expect_invalid(&f, "method.key: empty");
	s = repeat_char('a', CODEC_MAX_METHOD_KEY + 1);
	memcpy(s, "standard+", 9);
	m.key = s + 1;
	expect_invalid(&f,
		       "method.key: does not start with the profile 'standard' followed by its end or '+'");
	m.key = s;
	expect_invalid(&f, "method.key: 257 bytes, limit 256");
	s[CODEC_MAX_METHOD_KEY] = '\0';
	expect_valid(&f);
	free(s);
	/* a profile of its own: at most 64 bytes */
	s = repeat_char('p', CODEC_MAX_METHOD_PROFILE + 1);
	m.key = m.profile = s + 1;
	expect_valid(&f);
	m.key = m.profile = s;
	expect_invalid(&f, "method.profile: 65 bytes, limit 64");
	free(s);
	/* sizes and counts are positive */
	method_init(&m, "full", "full");
	m.repeats = 0;
	expect_invalid(&f, "method.repeats: 0 is not positive");
	method_init(&m, "full", "full");
	m.iodepth = -1;
	expect_invalid(&f, "method.iodepth: -1 is not positive");
	method_init(&m, "full", "full");
	m.seq_block = 0;
	expect_invalid(&f, "method.seq_block: 0 is not positive");
	/* scaling_ms: optional (older agents), positive when present */
	method_init(&m, "full", "full");
	m.scaling_ms = 0;
	expect_valid(&f);
	m.has_scaling_ms = true;
	expect_invalid(&f, "method.scaling_ms: 0 is not positive");
	m.scaling_ms = 2000;
	/* writeback's optional sizes: absent is fine, present is positive */
	method_init(&m, "full", "full");
	m.has_wb_bytes = true;
	expect_invalid(&f, "method.wb_bytes: 0 is not positive");
	m.wb_bytes = 1 << 20;
	m.has_wb_fsync_bytes = true;
	expect_invalid(&f, "method.wb_fsync_bytes: 0 is not positive");
	m.wb_fsync_bytes = 1 << 20;
	m.has_writeback_dirty_bytes = true; /* 0: tuned not asked */
	expect_valid(&f);
	/* only: benchmark names, at most 16 */
	method_init(&m, "full+only=randread", "full");
	m.n_only = 1;
	m.only = only;
	expect_valid(&f);
	m.n_only = CODEC_MAX_METHOD_ONLY + 1;
	expect_invalid(&f, "method.only: 17 entries, limit 16");
	m.n_only = 1;
	m.only = (char *[]){ "rand read" };
	expect_invalid(&f,
		       "method.only[0]: not a benchmark name ([a-z0-9_])");
	s = repeat_char('b', CODEC_MAX_METHOD_NAME + 1);
	m.only = &s;
	expect_invalid(&f, "method.only[0]: 65 bytes, expected 1 to 64");
	s[CODEC_MAX_METHOD_NAME] = '\0';
	expect_valid(&f);
	free(s);
}

/* ---- capabilities ---- */

struct caps {
	Fleetbench__Capabilities c;
	Fleetbench__HugepagePool h[2], *hp[2];
	char *ops[4], *feats[2];
};

/* What the probe of a KVM guest with 2 MiB and 1 GiB pools reports. */
static void caps_init(struct caps *k)
{
	static char *const ops[] = { "NOP", "READV", "WRITEV", "READ_FIXED" };
	static char *const feats[] = { "SINGLE_MMAP", "FAST_POLL" };

	memset(k, 0, sizeof(*k));
	fleetbench__capabilities__init(&k->c);
	memcpy(k->ops, ops, sizeof(ops));
	memcpy(k->feats, feats, sizeof(feats));
	for (size_t i = 0; i < 2; i++) {
		fleetbench__hugepage_pool__init(&k->h[i]);
		k->hp[i] = &k->h[i];
		k->h[i].has_nr = k->h[i].has_free = 1;
	}
	k->h[0].size_kb = 2048;
	k->h[0].nr = 512;
	k->h[0].free = 500;
	k->h[1].size_kb = 1048576;
	k->h[1].nr = k->h[1].free = 0;
	k->c.thp_enabled = "madvise";
	k->c.thp_defrag = "defer+madvise";
	k->c.thp_shmem_enabled = "within_size";
	k->c.n_hugepages = 2;
	k->c.hugepages = k->hp;
	k->c.has_io_uring_disabled = 1;
	k->c.io_uring_disabled = 0;
	k->c.io_uring_setup = "ok";
	k->c.has_io_uring_setup_errno = 1;
	k->c.io_uring_setup_errno = 0;
	k->c.sqpoll = "EPERM";
	k->c.has_sqpoll_errno = 1;
	k->c.sqpoll_errno = EPERM;
	k->c.n_io_uring_opcodes = 4;
	k->c.io_uring_opcodes = k->ops;
	k->c.n_io_uring_features = 2;
	k->c.io_uring_features = k->feats;
	k->c.has_vcpus = 1;
	k->c.vcpus = 2;
	k->c.has_memory_kb = 1;
	k->c.memory_kb = 4015608;
	k->c.cpu_model = "Intel\xc2\xae Xeon\xc2\xae Platinum 8259CL CPU @ 2.50GHz";
	k->c.vm = "kvm";
	k->c.container = "none";
}

/* The fixture with k's capabilities, changed by stmt, gives want. */
#define caps_case(stmt, want)                                                \
	do {                                                                 \
		fixture_init(&f);                                            \
		caps_init(&k);                                               \
		f.r.capabilities = &k.c;                                     \
		stmt;                                                        \
		expect_(&f, want, __LINE__);                                 \
	} while (0)

static void test_capabilities(void)
{
	struct fixture f;
	struct caps k;
	Fleetbench__Report *u = NULL;
	Fleetbench__HugepagePool many[CODEC_MAX_HUGEPAGE_SIZES + 1],
		*manyp[CODEC_MAX_HUGEPAGE_SIZES + 1];
	char *names[CODEC_MAX_IOURING_NAMES + 1], err[CODEC_ERR_LEN], *s;
	uint8_t *buf = NULL;
	size_t len;

	/* absent (an older agent), empty (all unknown) and full: valid */
	fixture_init(&f);
	expect_valid(&f);
	caps_case(fleetbench__capabilities__init(&k.c), NULL);
	caps_case((void)0, NULL);
	/* and every field travels */
	CHECK_OK(codec_pack_report(&f.r, &buf, &len));
	CHECK_OK(codec_unpack_report(buf, len, &u, err));
	CHECK(u && u->capabilities);
	if (u && u->capabilities) {
		const Fleetbench__Capabilities *c = u->capabilities;

		CHECK_EQ_STR(c->thp_enabled, "madvise");
		CHECK_EQ_STR(c->thp_defrag, "defer+madvise");
		CHECK_EQ_STR(c->thp_shmem_enabled, "within_size");
		CHECK(c->n_hugepages == 2 && c->hugepages[0]->size_kb == 2048 &&
		      c->hugepages[0]->nr == 512 &&
		      c->hugepages[0]->free == 500 &&
		      c->hugepages[1]->size_kb == 1048576 &&
		      c->hugepages[1]->has_free);
		CHECK(c->has_io_uring_disabled && c->io_uring_disabled == 0);
		CHECK_EQ_STR(c->io_uring_setup, "ok");
		CHECK(c->has_io_uring_setup_errno &&
		      c->io_uring_setup_errno == 0);
		CHECK_EQ_STR(c->sqpoll, "EPERM");
		CHECK(c->has_sqpoll_errno && c->sqpoll_errno == EPERM);
		CHECK(c->n_io_uring_opcodes == 4 &&
		      !strcmp(c->io_uring_opcodes[3], "READ_FIXED"));
		CHECK(c->n_io_uring_features == 2 &&
		      !strcmp(c->io_uring_features[1], "FAST_POLL"));
		CHECK(c->has_vcpus && c->vcpus == 2);
		CHECK(c->has_memory_kb && c->memory_kb == 4015608);
		CHECK_EQ_STR(c->cpu_model, k.c.cpu_model);
		CHECK_EQ_STR(c->vm, "kvm");
		CHECK_EQ_STR(c->container, "none");
	}
	codec_free_report(u);
	free(buf);

	/* THP modes */
	caps_case(k.c.thp_enabled = "always", NULL);
	caps_case(k.c.thp_enabled = "Madvise",
		  "capabilities.thp_enabled: bad bytes, not [a-z_+]");
	caps_case(k.c.thp_defrag = "defer madvise",
		  "capabilities.thp_defrag: bad bytes, not [a-z_+]");
	caps_case(k.c.thp_shmem_enabled = "",
		  "capabilities.thp_shmem_enabled: empty, not [a-z_+]");
	caps_case(k.c.thp_enabled = "madvise\xc3",
		  "capabilities.thp_enabled: invalid UTF-8 at byte 7");
	s = repeat_char('a', CODEC_MAX_CAP_NAME + 1);
	caps_case(k.c.thp_enabled = s,
		  "capabilities.thp_enabled: 65 bytes, limit 64");
	caps_case(k.c.thp_enabled = s + 1, NULL);
	free(s);

	/* setup results: "ok" with 0, an errno's name with its number */
	caps_case(k.c.io_uring_setup = "EPERM"; k.c.io_uring_setup_errno = 1,
		  NULL);
	caps_case(k.c.io_uring_setup = "ERRNO_200";
		  k.c.io_uring_setup_errno = 200, NULL);
	caps_case(k.c.io_uring_setup = "EPERM",
		  "capabilities.io_uring_setup_errno: 0 is outside [1, 4095] for a failed setup");
	caps_case(k.c.sqpoll_errno = CODEC_MAX_ERRNO + 1,
		  "capabilities.sqpoll_errno: 4096 is outside [1, 4095] for a failed setup");
	caps_case(k.c.sqpoll_errno = -1,
		  "capabilities.sqpoll_errno: -1 is outside [1, 4095] for a failed setup");
	caps_case(k.c.io_uring_setup_errno = 5,
		  "capabilities.io_uring_setup_errno: 5, but io_uring_setup is \"ok\" (expected 0)");
	caps_case(k.c.io_uring_setup = "eperm",
		  "capabilities.io_uring_setup: neither \"ok\" nor an errno name (E[A-Z0-9_]+)");
	caps_case(k.c.sqpoll = "E",
		  "capabilities.sqpoll: neither \"ok\" nor an errno name (E[A-Z0-9_]+)");
	caps_case(k.c.sqpoll = "OK",
		  "capabilities.sqpoll: neither \"ok\" nor an errno name (E[A-Z0-9_]+)");
	caps_case(k.c.sqpoll = NULL,
		  "capabilities.sqpoll_errno: set without capabilities.sqpoll");
	caps_case(k.c.sqpoll = NULL; k.c.has_sqpoll_errno = 0, NULL);
	caps_case(k.c.has_io_uring_setup_errno = 0, NULL);

	/* io_uring_disabled: 0, 1 or 2 */
	caps_case(k.c.io_uring_disabled = 2, NULL);
	caps_case(k.c.io_uring_disabled = 3,
		  "capabilities.io_uring_disabled: 3 is not 0, 1 or 2");
	caps_case(k.c.io_uring_disabled = -1,
		  "capabilities.io_uring_disabled: -1 is not 0, 1 or 2");

	/* opcode and feature names: [A-Z0-9_], each once, 256 at most */
	caps_case(k.ops[2] = "write v",
		  "capabilities.io_uring_opcodes[2]: not a name of [A-Z0-9_]");
	caps_case(k.ops[1] = "",
		  "capabilities.io_uring_opcodes[1]: not a name of [A-Z0-9_]");
	caps_case(k.ops[3] = "NOP",
		  "capabilities.io_uring_opcodes[3]: same as io_uring_opcodes[0]");
	caps_case(k.feats[1] = "fast_poll",
		  "capabilities.io_uring_features[1]: not a name of [A-Z0-9_]");
	caps_case(k.feats[1] = "SINGLE_MMAP",
		  "capabilities.io_uring_features[1]: same as io_uring_features[0]");
	s = repeat_char('A', CODEC_MAX_CAP_NAME + 1);
	caps_case(k.ops[0] = s,
		  "capabilities.io_uring_opcodes[0]: 65 bytes, limit 64");
	caps_case(k.ops[0] = s + 1, NULL);
	free(s);
	for (size_t i = 0; i <= CODEC_MAX_IOURING_NAMES; i++)
		if (asprintf(&names[i], "OP_%zu", i) < 0)
			names[i] = NULL;
	caps_case(k.c.io_uring_opcodes = names;
		  k.c.n_io_uring_opcodes = CODEC_MAX_IOURING_NAMES, NULL);
	caps_case(k.c.io_uring_features = names;
		  k.c.n_io_uring_features = CODEC_MAX_IOURING_NAMES + 1,
		  "capabilities.io_uring_features: 257 entries, limit 256");
	for (size_t i = 0; i <= CODEC_MAX_IOURING_NAMES; i++)
		free(names[i]);

	/* hugepage sizes: powers of two >= 4 KiB, ascending, each once */
	caps_case(k.h[0].size_kb = 64, NULL);
	caps_case(k.h[0].size_kb = 3000,
		  "capabilities.hugepages[0].size_kb: 3000 is not a power of two of at least 4");
	caps_case(k.h[0].size_kb = 2,
		  "capabilities.hugepages[0].size_kb: 2 is not a power of two of at least 4");
	caps_case(k.h[1].size_kb = 0,
		  "capabilities.hugepages[1].size_kb: 0 is not a power of two of at least 4");
	caps_case(k.h[1].size_kb = 1024,
		  "capabilities.hugepages[1].size_kb: 1024 is not above hugepages[0]'s (sizes ascend, each once)");
	caps_case(k.h[1].size_kb = 2048,
		  "capabilities.hugepages[1].size_kb: 2048 is not above hugepages[0]'s (sizes ascend, each once)");
	caps_case(k.h[0].free = 513,
		  "capabilities.hugepages[0].free: 513 is above nr 512");
	caps_case(k.h[0].free = 513; k.h[0].has_nr = 0, NULL);
	caps_case(k.h[0].has_free = 0, NULL);
	for (size_t i = 0; i <= CODEC_MAX_HUGEPAGE_SIZES; i++) {
		fleetbench__hugepage_pool__init(&many[i]);
		many[i].size_kb = 4ull << i;
		manyp[i] = &many[i];
	}
	caps_case(k.c.hugepages = manyp;
		  k.c.n_hugepages = CODEC_MAX_HUGEPAGE_SIZES, NULL);
	caps_case(k.c.hugepages = manyp;
		  k.c.n_hugepages = CODEC_MAX_HUGEPAGE_SIZES + 1,
		  "capabilities.hugepages: 17 entries, limit 16");

	/* the host's size */
	caps_case(k.c.vcpus = CODEC_MAX_VCPUS, NULL);
	caps_case(k.c.vcpus = 0, "capabilities.vcpus: 0 is outside [1, 65536]");
	caps_case(k.c.vcpus = CODEC_MAX_VCPUS + 1,
		  "capabilities.vcpus: 65537 is outside [1, 65536]");
	caps_case(k.c.has_vcpus = 0; k.c.vcpus = 0, NULL);
	caps_case(k.c.memory_kb = 0,
		  "capabilities.memory_kb: 0 is not positive");

	/* cpu_model: printable text; vm and container: short names */
	caps_case(k.c.cpu_model = "AMD EPYC\t7B13",
		  "capabilities.cpu_model: bad bytes, not printable");
	caps_case(k.c.cpu_model = "",
		  "capabilities.cpu_model: empty, not printable");
	s = repeat_char('x', CODEC_MAX_CPU_MODEL + 1);
	caps_case(k.c.cpu_model = s,
		  "capabilities.cpu_model: 257 bytes, limit 256");
	caps_case(k.c.cpu_model = s + 1, NULL);
	free(s);
	caps_case(k.c.vm = "qemu-tcg", NULL);
	caps_case(k.c.vm = "KVM", "capabilities.vm: bad bytes, not [a-z0-9_.+-]");
	caps_case(k.c.container = "docker/1",
		  "capabilities.container: bad bytes, not [a-z0-9_.+-]");
	caps_case(k.c.container = "",
		  "capabilities.container: empty, not [a-z0-9_.+-]");
}

int main(void)
{
	test_method();
	test_capabilities();
	return check_summary();
}
