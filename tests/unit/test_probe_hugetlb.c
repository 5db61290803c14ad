/* SPDX-License-Identifier: MIT */
/* The hugetlb probe over every fixture tree and on the running machine. */
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "probe_test.h"

struct pool {
	const char *name;
	int64_t size_kb, nr, free, resv, surplus, overcommit;
};

static void check_pool(struct json_object *r, int i, const struct pool *p)
{
	char path[128];

#define AT(key) (snprintf(path, sizeof(path), "hugetlb.sizes[%d].%s", i, key), path)
	CHECK_EQ_STR(jstr(r, AT("name")), p->name);
	CHECK_EQ_INT(jint(r, AT("size_kb")), p->size_kb);
	CHECK_EQ_INT(jint(r, AT("nr")), p->nr);
	CHECK_EQ_INT(jint(r, AT("free")), p->free);
	CHECK_EQ_INT(jint(r, AT("resv")), p->resv);
	CHECK_EQ_INT(jint(r, AT("surplus")), p->surplus);
	CHECK_EQ_INT(jint(r, AT("overcommit")), p->overcommit);
#undef AT
}

static void check_node(struct json_object *r, int i, int j, int64_t node,
		       int64_t nr, int64_t free_, int64_t surplus)
{
	char path[128];

#define AT(key) (snprintf(path, sizeof(path), "hugetlb.sizes[%d].nodes[%d].%s", i, j, key), path)
	CHECK_EQ_INT(jint(r, AT("node")), node);
	CHECK_EQ_INT(jint(r, AT("nr")), nr);
	CHECK_EQ_INT(jint(r, AT("free")), free_);
	CHECK_EQ_INT(jint(r, AT("surplus")), surplus);
#undef AT
}

static const struct pool empty_2m = { "hugepages-2048kB", 2048, 0, 0, 0, 0, 0 };
static const struct pool empty_1g = { "hugepages-1048576kB", 1048576, 0, 0,
				      0, 0, 0 };

/* A one-node guest with both pool sizes present and empty. */
static void check_empty_guest(const char *tree, const struct fake_sys *fs)
{
	struct json_object *r = probe_fixture(tree, fs);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_INT(jint(r, "hugetlb.default_size_kb"), 2048);
	CHECK_EQ_INT(jint(r, "hugetlb.vm_nr_hugepages"), 0);
	CHECK_EQ_STR(jstr(r, "hugetlb.size_2m_present"), "true");
	CHECK_EQ_STR(jstr(r, "hugetlb.size_1g_present"), "true");
	CHECK_EQ_INT(jlen(r, "hugetlb.sizes"), 2);
	check_pool(r, 0, &empty_2m);
	check_pool(r, 1, &empty_1g);
	for (int i = 0; i < 2; i++) {
		char path[64];

		snprintf(path, sizeof(path), "hugetlb.sizes[%d].nodes", i);
		CHECK_EQ_INT(jlen(r, path), 1);
		check_node(r, i, 0, 0, 0, 0, 0);
	}
	json_object_put(r);
}

static void test_vps(void)
{
	struct fake_sys fs = { .setup_err = -EPERM };
	struct json_object *r = probe_fixture("vps-thp-always", &fs);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_INT(jint(r, "hugetlb.default_size_kb"), 2048);
	CHECK_EQ_INT(jint(r, "hugetlb.vm_nr_hugepages"), 0);
	CHECK_EQ_STR(jstr(r, "hugetlb.size_2m_present"), "true");
	CHECK_EQ_STR(jstr(r, "hugetlb.size_1g_present"), "false");
	CHECK_EQ_INT(jlen(r, "hugetlb.sizes"), 1);
	check_pool(r, 0, &empty_2m);
	CHECK_EQ_INT(jlen(r, "hugetlb.sizes[0].nodes"), 1);
	check_node(r, 0, 0, 0, 0, 0, 0);
	json_object_put(r);
}

static void test_baremetal(void)
{
	static const struct pool p2m = { "hugepages-2048kB", 2048, 1024, 1000,
					 0, 0, 0 };
	static const struct pool p1g = { "hugepages-1048576kB", 1048576, 4, 4,
					 0, 0, 0 };
	struct fake_sys fs = { .hypervisor_bit = -1 };
	struct json_object *r = probe_fixture("baremetal-numa", &fs);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_INT(jint(r, "hugetlb.default_size_kb"), 1048576);
	/* vm.nr_hugepages is the pool of the default size, here 1 GiB. */
	CHECK_EQ_INT(jint(r, "hugetlb.vm_nr_hugepages"), 4);
	CHECK_EQ_STR(jstr(r, "hugetlb.size_2m_present"), "true");
	CHECK_EQ_STR(jstr(r, "hugetlb.size_1g_present"), "true");
	CHECK_EQ_INT(jlen(r, "hugetlb.sizes"), 2);
	check_pool(r, 0, &p2m);
	CHECK_EQ_INT(jlen(r, "hugetlb.sizes[0].nodes"), 2);
	check_node(r, 0, 0, 0, 512, 512, 0);
	check_node(r, 0, 1, 1, 512, 488, 0);
	check_pool(r, 1, &p1g);
	CHECK_EQ_INT(jlen(r, "hugetlb.sizes[1].nodes"), 2);
	check_node(r, 1, 0, 0, 2, 2, 0);
	check_node(r, 1, 1, 1, 2, 2, 0);
	json_object_put(r);
}

static void test_old_kernel(void)
{
	struct fake_sys fs = {
		.probe_err = -EINVAL,
		.features = IORING_FEAT_SINGLE_MMAP | IORING_FEAT_NODROP |
			    IORING_FEAT_SUBMIT_STABLE,
	};

	check_empty_guest("old-kernel", &fs);
}

static void test_malformed(void)
{
	struct json_object *r = probe_fixture("malformed", NULL);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_STR(jstr(r, "hugetlb.default_size_kb"),
		     "unknown (malformed: /proc/meminfo truncated)");
	CHECK_EQ_STR(jstr(r, "hugetlb.vm_nr_hugepages"),
		     "unknown (malformed: /proc/sys/vm/nr_hugepages is not an integer)");
	CHECK_EQ_STR(jstr(r, "hugetlb.size_2m_present"), "true");
	CHECK_EQ_STR(jstr(r, "hugetlb.size_1g_present"), "false");
	CHECK_EQ_INT(jlen(r, "hugetlb.sizes"), 1);
	CHECK_EQ_STR(jstr(r, "hugetlb.sizes[0].name"), "hugepages-2048kB");
	CHECK_EQ_INT(jint(r, "hugetlb.sizes[0].size_kb"), 2048);
	CHECK_EQ_INT(jint(r, "hugetlb.sizes[0].nr"), 0);
	CHECK_EQ_STR(jstr(r, "hugetlb.sizes[0].free"), "unknown (absent)");
	CHECK_EQ_STR(jstr(r, "hugetlb.sizes[0].resv"),
		     "unknown (malformed: /sys/kernel/mm/hugepages/hugepages-2048kB/resv_hugepages empty)");
	CHECK_EQ_INT(jint(r, "hugetlb.sizes[0].surplus"), 0);
	CHECK_EQ_STR(jstr(r, "hugetlb.sizes[0].overcommit"),
		     "unknown (malformed: /sys/kernel/mm/hugepages/hugepages-2048kB/nr_overcommit_hugepages is not an integer)");
	CHECK_EQ_INT(jlen(r, "hugetlb.sizes[0].nodes"), 1);
	CHECK_EQ_INT(jint(r, "hugetlb.sizes[0].nodes[0].node"), 0);
	CHECK_EQ_INT(jint(r, "hugetlb.sizes[0].nodes[0].nr"), 0);
	CHECK_EQ_STR(jstr(r, "hugetlb.sizes[0].nodes[0].free"),
		     "unknown (malformed: /sys/devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages empty)");
	CHECK_EQ_INT(jint(r, "hugetlb.sizes[0].nodes[0].surplus"), 0);
	json_object_put(r);
}

/* A counter file read with stdio, independently of the probe. */
static int read_ll(const char *path, long long *ret)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return -errno;
	ok = fscanf(f, "%lld", ret) == 1;
	fclose(f);
	return ok ? 0 : -EBADMSG;
}

static int size_cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

/* The running machine: the section agrees with the kernel's own files. */
static void test_real(void)
{
	struct probe_opts opts = { .root = "/", .work_dir = "/tmp" };
	struct json_object *r = NULL;
	char line[256], path[512];
	long long v, sizes[64];
	size_t nsizes = 0;
	bool have_default = false;
	struct stat st;
	glob_t g;
	FILE *f;

	CHECK_OK(probe_run(&opts, &r));
	if (!r)
		return;

	f = fopen("/proc/meminfo", "re");
	CHECK(f != NULL);
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Hugepagesize: %lld kB", &v) == 1) {
			CHECK_EQ_INT(jint(r, "hugetlb.default_size_kb"), v);
			have_default = true;
		}
	}
	if (f)
		fclose(f);
	if (!have_default)
		CHECK_EQ_STR(jstr(r, "hugetlb.default_size_kb"),
			     "unknown (absent)");

	if (read_ll("/proc/sys/vm/nr_hugepages", &v) == 0)
		CHECK_EQ_INT(jint(r, "hugetlb.vm_nr_hugepages"), v);
	else
		CHECK_EQ_STR(jstr(r, "hugetlb.vm_nr_hugepages"),
			     "unknown (absent)");

	if (stat("/sys/kernel/mm/hugepages", &st) < 0) {
		CHECK_EQ_STR(jstr(r, "hugetlb.size_2m_present"),
			     "unknown (absent)");
		CHECK_EQ_STR(jstr(r, "hugetlb.size_1g_present"),
			     "unknown (absent)");
		CHECK_EQ_INT(jlen(r, "hugetlb.sizes"), 0);
		json_object_put(r);
		return;
	}
	CHECK_EQ_STR(jstr(r, "hugetlb.size_2m_present"),
		     stat("/sys/kernel/mm/hugepages/hugepages-2048kB", &st) ?
			     "false" :
			     "true");
	CHECK_EQ_STR(jstr(r, "hugetlb.size_1g_present"),
		     stat("/sys/kernel/mm/hugepages/hugepages-1048576kB", &st) ?
			     "false" :
			     "true");

	if (glob("/sys/kernel/mm/hugepages/hugepages-*kB", 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc && nsizes < 64; i++)
			if (sscanf(g.gl_pathv[i],
				   "/sys/kernel/mm/hugepages/hugepages-%lldkB",
				   &v) == 1)
				sizes[nsizes++] = v;
		globfree(&g);
	}
	qsort(sizes, nsizes, sizeof(sizes[0]), size_cmp);
	CHECK_EQ_INT(jlen(r, "hugetlb.sizes"), nsizes);
	for (size_t i = 0; i < nsizes; i++) {
		char key[128];
		size_t nnodes = 0;

		snprintf(key, sizeof(key), "hugetlb.sizes[%zu].size_kb", i);
		CHECK_EQ_INT(jint(r, key), sizes[i]);
		snprintf(key, sizeof(key), "hugetlb.sizes[%zu].name", i);
		snprintf(path, sizeof(path), "hugepages-%lldkB", sizes[i]);
		CHECK_EQ_STR(jstr(r, key), path);
		/* nr and overcommit are set by the administrator, so they do
		 * not move between the two reads; free could. */
		snprintf(path, sizeof(path),
			 "/sys/kernel/mm/hugepages/hugepages-%lldkB/nr_hugepages",
			 sizes[i]);
		snprintf(key, sizeof(key), "hugetlb.sizes[%zu].nr", i);
		if (read_ll(path, &v) == 0)
			CHECK_EQ_INT(jint(r, key), v);
		snprintf(path, sizeof(path),
			 "/sys/kernel/mm/hugepages/hugepages-%lldkB/nr_overcommit_hugepages",
			 sizes[i]);
		snprintf(key, sizeof(key), "hugetlb.sizes[%zu].overcommit", i);
		if (read_ll(path, &v) == 0)
			CHECK_EQ_INT(jint(r, key), v);

		snprintf(path, sizeof(path),
			 "/sys/devices/system/node/node*/hugepages/hugepages-%lldkB",
			 sizes[i]);
		if (glob(path, 0, NULL, &g) == 0) {
			nnodes = g.gl_pathc;
			globfree(&g);
		}
		snprintf(key, sizeof(key), "hugetlb.sizes[%zu].nodes", i);
		CHECK_EQ_INT(jlen(r, key), nnodes);
	}
	json_object_put(r);
}

int main(void)
{
	check_empty_guest("kvm-guest", NULL);
	test_vps();
	test_baremetal();
	test_old_kernel();
	test_malformed();
	test_real();
	return check_summary();
}
