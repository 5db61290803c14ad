/* SPDX-License-Identifier: MIT */
/* mmap_read: smaps of shmem, the shmem_enabled decision, runs on this host. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "bench_test.h"
#include "check.h"
#include "kfiles.h"
#include "probe_test.h"

#define POOL "/sys/kernel/mm/hugepages/hugepages-2048kB"
#define SHMEM "/sys/kernel/mm/transparent_hugepage/shmem_enabled"
#define MIB (1ULL << 20)

static const char *const variants[] = { "4k", "thp", "hugetlb" };

/* ---- smaps: a shmem file's huge pages ---- */

#define VMA(head, rss, shmem_pmd, file_pmd)                \
	head "\n"                                          \
	"Size:            8192 kB\n"                       \
	"KernelPageSize:     4 kB\n"                       \
	"Rss:            " rss " kB\n"                     \
	"AnonHugePages:      0 kB\n"                       \
	"ShmemPmdMapped: " shmem_pmd " kB\n"               \
	"FilePmdMapped:  " file_pmd " kB\n"                \
	"Shared_Hugetlb:     0 kB\n"                       \
	"Private_Hugetlb:    0 kB\n"                       \
	"VmFlags: rd wr sh mr mw me ms sd hg \n"

static const char smaps_shmem[] =
	/* a memfd mapped shared: 3 of its 4 huge pages mapped by PMD */
	VMA("7f0000000000-7f0000800000 rw-s 00000000 00:01 2051                       /memfd:fb-mmap_read-thp (deleted)",
	    "8192", "6144", "0")
	/* a file on a filesystem with large folios */
	VMA("7f0000800000-7f0001000000 r--s 00000000 fe:00 1234                       /var/tmp/data",
	    "8192", "0", "2048");

static void test_smaps_shmem(void)
{
	struct thp_smaps_vma v;
	uint64_t bytes;

	CHECK_OK(thp_smaps_find(smaps_shmem, 0x7f0000000000, &v));
	CHECK_EQ_INT(v.shmem_pmd_kb, 6144);
	CHECK_EQ_INT(v.file_pmd_kb, 0);
	CHECK_OK(thp_smaps_find(smaps_shmem, 0x7f0000800000, &v));
	CHECK_EQ_INT(v.file_pmd_kb, 2048);
	CHECK_OK(thp_smaps_huge_bytes(smaps_shmem, 0x7f0000000000,
				      0x7f0000800000, &bytes));
	CHECK_EQ_INT(bytes, 6 * MIB);
	CHECK_OK(thp_smaps_huge_bytes(smaps_shmem, 0x7f0000000000,
				      0x7f0001000000, &bytes));
	CHECK_EQ_INT(bytes, 8 * MIB);
	/* capped at the part of the VMA asked about */
	CHECK_OK(thp_smaps_huge_bytes(smaps_shmem, 0x7f0000000000,
				      0x7f0000200000, &bytes));
	CHECK_EQ_INT(bytes, 2 * MIB);
}

/* ---- helpers ---- */

static void base_params(struct bench_params *p, const char *dir)
{
	memset(p, 0, sizeof(*p));
	CHECK_OK(bench_params_profile(p, "quick"));
	p->profile = "quick";
	p->dir = (char *)dir;
	p->seed = 42;
	p->steal_threshold_pct = 5;
	p->mmap_bytes = 8 * MIB;
	p->mmap_accesses = 100000;
	p->repeats = 2;
}

/* n samples of metric, each within [lo, hi]. */
#define check_samples(res, metric, n, lo, hi)                                 \
	do {                                                                  \
		char why_[256];                                               \
		CHECK_(jsamples_within(res, metric, n, lo, hi, why_,          \
				       sizeof(why_)),                         \
		       "%s", why_);                                           \
	} while (0)

/* The number of entries of dir other than . and .. (-1: unreadable). */
static int dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

/* The [selected] word of a kernel file of this host into buf. */
static int host_bracket(const char *path, char *buf, size_t size)
{
	char line[256], *a, *b;
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	a = fgets(line, sizeof(line), f) ? strchr(line, '[') : NULL;
	fclose(f);
	b = a ? strchr(a, ']') : NULL;
	if (!b)
		return -EBADMSG;
	snprintf(buf, size, "%.*s", (int)(b - a - 1), a + 1);
	return 0;
}

static long long host_i64(const char *path)
{
	long long v = -1;
	FILE *f = fopen(path, "re");

	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static int host_write(const char *path, long long v)
{
	FILE *f = fopen(path, "we");

	if (!f)
		return -errno;
	fprintf(f, "%lld\n", v);
	return fclose(f) == 0 ? 0 : -errno;
}

/* ---- a fixture root: the decision from shmem_enabled ---- */

/* A tree with what the driver and mmap_read read; shmem (NULL: absent). */
static char *make_tree(const char *shmem, const char *meminfo)
{
	static const char *const files[][2] = {
		{ "proc/vmstat", "nr_free_pages 5000000\n" },
		{ "proc/stat", "cpu  100 0 100 1000 0 0 0 0 0 0\n" },
		{ "proc/loadavg", "0.10 0.20 0.30 1/100 1234\n" },
		{ "sys/kernel/mm/transparent_hugepage/enabled",
		  "always [madvise] never\n" },
		{ "sys/kernel/mm/transparent_hugepage/defrag",
		  "always defer defer+madvise [madvise] never\n" },
		{ "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "0\n" },
		{ "sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages",
		  "0\n" },
		{ "sys/kernel/mm/hugepages/hugepages-2048kB/resv_hugepages",
		  "0\n" },
	};
	char *root = tree_new();

	tree_put(root, "proc/meminfo", meminfo, -1);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		tree_put(root, files[i][0], files[i][1], -1);
	if (shmem)
		tree_put(root, SHMEM + 1, shmem, -1);
	return root;
}

#define MEMINFO_BIG "MemTotal: 67108864 kB\nMemAvailable: 67108864 kB\n"

/* mmap_read with the fixture's shmem_enabled: the thp variant's fate. */
static struct json_object *fixture_run(const char *shmem, const char *meminfo,
				       const char *dir)
{
	struct json_object *report = NULL;
	struct bench_params p;
	char err[512] = "";
	char *root = make_tree(shmem, meminfo);

	base_params(&p, dir);
	p.root = root;
	CHECK_OK(jbench_run(&p, "mmap_read", &report, err, sizeof(err)));
	if (!report)
		fprintf(stderr, "bench_suite_run: %s\n", err);
	tree_free(root);
	return report;
}

static void test_shmem_decision(void)
{
	static const struct {
		const char *file, *selected, *skip; /* skip NULL: it runs */
	} cases[] = {
		{ "always within_size advise [never] deny force\n", "never",
		  "shmem_enabled=never" },
		{ "always within_size advise never [deny] force\n", "deny",
		  "shmem_enabled=deny" },
		{ "always within_size [advise] never deny force\n", "advise",
		  NULL },
		{ "[always] within_size advise never deny force\n", "always",
		  NULL },
		{ "always [within_size] advise never deny force\n",
		  "within_size", NULL },
		{ "always within_size advise never deny [force]\n", "force",
		  NULL },
		{ NULL, "absent", "shmem_enabled: absent" },
	};
	char *dir = tree_new();

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_object *report =
			fixture_run(cases[i].file, MEMINFO_BIG, dir);
		struct json_object *r4 = jresult(report, "mmap_read", "4k");
		struct json_object *rt = jresult(report, "mmap_read", "thp");
		struct json_object *rh = jresult(report, "mmap_read", "hugetlb");

		CHECK_EQ_STR(jpstr(rt, "shmem_enabled"), cases[i].selected);
		CHECK_EQ_STR(jpstr(r4, "shmem_enabled"), cases[i].selected);
		CHECK_EQ_STR(jstatus(r4), "ok");
		check_samples(r4, "ns_per_access", 2, 1e-3, 1e6);
		if (cases[i].skip) {
			CHECK_EQ_STR(jstatus(rt), "skipped");
			CHECK_EQ_STR(jstr(rt, "skip_reason"), cases[i].skip);
			CHECK_EQ_INT(jlen(rt, "metrics"), 0);
			CHECK(!jget(jcomparison(report, "mmap_thp_speedup"),
				    "ratio"));
		} else {
			/* the fixture decides; the host's own pages decide
			 * the coverage, which is measured either way */
			CHECK_EQ_STR(jstatus(rt), "ok");
			check_samples(rt, "ns_per_access", 2, 1e-3, 1e6);
			check_samples(rt, "huge_fraction", 2, 0, 1);
			CHECK(jget(jcomparison(report, "mmap_thp_speedup"),
				   "ratio") != NULL);
		}
		/* the fixture's pool is empty */
		CHECK_EQ_STR(jstr(rh, "skip_reason"),
			     "2 MiB hugetlb pool has 0 free pages, needs 4");
		CHECK_EQ_STR(jstr(jcomparison(report, "mmap_hugetlb_speedup"),
				  "reason"),
			     "hugetlb was skipped");
		json_object_put(report);
	}
	CHECK_EQ_INT(dir_entries(dir), 0);
	tree_free(dir);
}

/* Too big for MemAvailable: every variant refused before any memfd. */
static void test_refusal(void)
{
	char *dir = tree_new();
	struct json_object *report = fixture_run(
		"always within_size [advise] never deny force\n",
		"MemTotal: 1048576 kB\nMemAvailable: 65536 kB\n", dir);

	for (size_t i = 0; i < 3; i++) {
		struct json_object *r = jresult(report, "mmap_read",
						variants[i]);

		CHECK_EQ_STR(jstatus(r), "skipped");
		CHECK_(!strncmp(jstr(r, "skip_reason"), "refused: ", 9),
		       "%s: %s", variants[i], jstr(r, "skip_reason"));
		CHECK_EQ_INT(jlen(r, "metrics"), 0);
	}
	json_object_put(report);
	tree_free(dir);
}

/* ---- this host ---- */

/* The variants as this host's files say they must come out. */
static void test_host(void)
{
	struct json_object *report = NULL, *r4, *rt, *rh;
	char shmem[64], err[512] = "";
	char *dir = tree_new();
	struct bench_params p;
	long long nfree, resv;

	base_params(&p, dir);
	CHECK_OK(host_bracket(SHMEM, shmem, sizeof(shmem)));
	nfree = host_i64(POOL "/free_hugepages");
	resv = host_i64(POOL "/resv_hugepages");
	CHECK_OK(jbench_run(&p, "mmap_read", &report, err, sizeof(err)));
	if (!report) {
		fprintf(stderr, "bench_suite_run: %s\n", err);
		tree_free(dir);
		return;
	}
	r4 = jresult(report, "mmap_read", "4k");
	rt = jresult(report, "mmap_read", "thp");
	rh = jresult(report, "mmap_read", "hugetlb");

	CHECK_EQ_STR(jstatus(r4), "ok");
	check_samples(r4, "ns_per_access", 2, 1e-3, 1e6);
	/* a fresh mapping each repeat: its first touches fault, at most one
	 * fault per page of the file (fault-around maps several at once) */
	check_samples(r4, "minor_faults_per_1k", 2, 1e-3,
		      (8 * MIB / 4096) * 1000.0 / 100000 + 1);
	check_samples(r4, "huge_fraction", 2, 0, 0); /* MADV_NOHUGEPAGE */
	CHECK_EQ_INT(jlen(r4, "windows"), 2);
	CHECK_EQ_INT(jpint(r4, "pages"), 8 * MIB / 4096);
	CHECK_EQ_INT(jpint(r4, "accesses"), 100000);
	CHECK_EQ_INT(jpint(r4, "mmap_bytes"), 8 * MIB);
	CHECK_EQ_INT(jpint(r4, "seed"), 42);
	CHECK_EQ_STR(jpstr(r4, "shmem_enabled"), shmem);
	CHECK_EQ_STR(jpstr(rt, "shmem_enabled"), shmem);

	if (!strcmp(shmem, "never") || !strcmp(shmem, "deny")) {
		char want[64];

		snprintf(want, sizeof(want), "shmem_enabled=%s", shmem);
		CHECK_EQ_STR(jstatus(rt), "skipped");
		CHECK_EQ_STR(jstr(rt, "skip_reason"), want);
	} else {
		/* advise and the rest: huge pages for the whole aligned file */
		CHECK_EQ_STR(jstatus(rt), "ok");
		check_samples(rt, "ns_per_access", 2, 1e-3, 1e6);
		check_samples(rt, "huge_fraction", 2, 1, 1);
	}

	if (nfree - resv < 4) {
		char want[160];

		snprintf(want, sizeof(want),
			 resv > 0 ? "2 MiB hugetlb pool has %lld free pages (%lld more reserved by other mappings), needs 4" :
				    "2 MiB hugetlb pool has %lld free pages, needs 4",
			 nfree - resv, resv);
		CHECK_EQ_STR(jstatus(rh), "skipped");
		CHECK_EQ_STR(jstr(rh, "skip_reason"), want);
	} else {
		CHECK_EQ_STR(jstatus(rh), "ok");
		check_samples(rh, "huge_fraction", 2, 1, 1);
	}
	/* memfds only: the work directory stays empty */
	CHECK_EQ_INT(dir_entries(dir), 0);
	json_object_put(report);
	tree_free(dir);
}

/*
 * The hugetlb path for real: as root, 4 pages of 2 MiB reserved by the
 * benchmark (--reserve-hugetlb), the file all hugetlb, the pool size
 * written back. Without root the reservation is refused, and that is
 * what the report says.
 */
static void test_hugetlb(void)
{
	long long nr0 = host_i64(POOL "/nr_hugepages");
	struct json_object *report = NULL, *rh, *c;
	char *dir = tree_new();
	struct bench_params p;
	char err[512] = "";
	double ratio;

	CHECK_(nr0 >= 0, "%s/nr_hugepages readable", POOL);
	base_params(&p, dir);
	p.reserve_hugetlb = 4;
	CHECK_OK(jbench_run(&p, "mmap_read", &report, err, sizeof(err)));
	rh = jresult(report, "mmap_read", "hugetlb");
	if (geteuid() != 0) {
		CHECK_EQ_STR(jpstr(rh, "reserve_hugetlb_result"), "EACCES");
		json_object_put(report);
		tree_free(dir);
		return;
	}
	/* the test's own restore, should the benchmark's have failed */
	if (host_i64(POOL "/nr_hugepages") != nr0)
		CHECK_OK(host_write(POOL "/nr_hugepages", nr0));
	if (strcmp(jpstr(rh, "reserve_hugetlb_result"), "already free")) {
		CHECK_EQ_STR(jpstr(rh, "reserve_hugetlb_restored"), "ok");
		CHECK_EQ_INT(host_i64(POOL "/nr_hugepages"), nr0);
	}
	if (!strcmp(jpstr(rh, "reserve_hugetlb_result"), "ok") ||
	    !strcmp(jpstr(rh, "reserve_hugetlb_result"), "already free")) {
		CHECK_EQ_STR(jstatus(rh), "ok");
		check_samples(rh, "ns_per_access", 2, 1e-3, 1e6);
		/* Private_Hugetlb + Shared_Hugetlb over the mapping */
		check_samples(rh, "huge_fraction", 2, 1, 1);
		/* 4 huge pages: 4 faults per fresh mapping (and room for
		 * 2 more of anything else in the window) */
		check_samples(rh, "minor_faults_per_1k", 2, 4 * 1000.0 / 100000,
			      6 * 1000.0 / 100000);
		CHECK_EQ_STR(jpstr(rh, "huge_fraction_from"),
			     "smaps Private_Hugetlb+Shared_Hugetlb");
		c = jcomparison(report, "mmap_hugetlb_speedup");
		CHECK(jdouble(c, "ratio", &ratio) && ratio > 0);
		CHECK_EQ_STR(jstr(c, "numerator"), "4k");
		CHECK_EQ_STR(jstr(c, "denominator"), "hugetlb");
	} else {
		/* no contiguous memory left for the pool: said so */
		CHECK_EQ_STR(jpstr(rh, "reserve_hugetlb_result"), "partial");
		CHECK_EQ_STR(jstatus(rh), "skipped");
	}
	CHECK_EQ_INT(dir_entries(dir), 0);
	json_object_put(report);
	tree_free(dir);
}

/* The sizes are the method's: a change of them is another method. */
static void test_method(void)
{
	Fleetbench__Method *m = NULL;
	struct bench_params p;

	base_params(&p, "/tmp");
	p.repeats = 3;
	CHECK_OK(bench_method_new(&p, "mmap_read", &m));
	if (!m)
		return;
	CHECK_EQ_STR(m->key,
		     "quick+mmap_bytes=8M+mmap_accesses=100000+only=mmap_read");
	CHECK(m->has_mmap_bytes && m->has_mmap_accesses);
	CHECK_EQ_INT(m->mmap_bytes, 8 * MIB);
	CHECK_EQ_INT(m->mmap_accesses, 100000);
	fleetbench__method__free_unpacked(m, NULL);
	CHECK_OK(bench_params_profile(&p, "standard"));
	CHECK_EQ_INT(p.mmap_bytes, 512 * MIB);
	CHECK_EQ_INT(p.mmap_accesses, 3000000);
	CHECK_OK(bench_params_profile(&p, "full"));
	CHECK_EQ_INT(p.mmap_bytes, 2048 * MIB);
	CHECK_EQ_INT(p.mmap_accesses, 5000000);
}

int main(void)
{
	test_smaps_shmem();
	test_method();
	test_shmem_decision();
	test_refusal();
	test_host();
	test_hugetlb();
	return check_summary();
}
