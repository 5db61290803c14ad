/* SPDX-License-Identifier: MIT */
/* Hugetlb pools: the default page size, each size's pool and its node split. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "probe_modules.h"

#define HUGEPAGES_DIR "/sys/kernel/mm/hugepages"
#define NODE_DIR "/sys/devices/system/node"
#define SIZE_2M_KB 2048
#define SIZE_1G_KB 1048576
#define MAX_SIZES 64
#define MAX_NODES 1024 /* MAX_NUMNODES with NODES_SHIFT 10 */

/* The counters of one pool: report key and sysfs file name. */
struct pool_file {
	const char *key;
	const char *file;
};

static const struct pool_file size_files[] = {
	{ "nr", "nr_hugepages" },
	{ "free", "free_hugepages" },
	{ "resv", "resv_hugepages" },
	{ "surplus", "surplus_hugepages" },
	{ "overcommit", "nr_overcommit_hugepages" },
};

/* Per-node pools have no reservation or overcommit counters. */
static const struct pool_file node_files[] = {
	{ "nr", "nr_hugepages" },
	{ "free", "free_hugepages" },
	{ "surplus", "surplus_hugepages" },
};

/* Parses the decimal number at s up to suffix, which must end the string. */
static int parse_num_suffix(const char *s, const char *suffix, uint64_t *ret)
{
	size_t slen = strlen(suffix);
	const char *p = s;
	uint64_t v = 0;

	if (*p < '0' || *p > '9')
		return -EBADMSG;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -EBADMSG;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (strncmp(p, suffix, slen) || p[slen])
		return -EBADMSG;
	*ret = v;
	return 0;
}

/* "hugepages-2048kB" gives 2048; anything else is not a pool directory. */
static int parse_size_name(const char *name, uint64_t *ret)
{
	static const char prefix[] = "hugepages-";
	uint64_t v;

	if (strncmp(name, prefix, sizeof(prefix) - 1))
		return -EINVAL;
	if (parse_num_suffix(name + sizeof(prefix) - 1, "kB", &v) < 0 ||
	    v == 0 || v > INT64_MAX)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static int int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* "Hugepagesize:    2048 kB" in /proc/meminfo. */
static void probe_default_size(struct probe_ctx *ctx, struct json_object *out)
{
	_cleanup_free_ char *meminfo = NULL;
	ssize_t n = probe_read_file(ctx, "/proc/meminfo", &meminfo);
	char buf[64];
	uint64_t v;
	int r;

	if (n < 0) {
		item_unknown_err(out, "default_size_kb", (int)n);
		return;
	}
	r = probe_kv(meminfo, "Hugepagesize", buf, sizeof(buf));
	/* The kernel ends every line: without the last newline the file was
	 * cut short, otherwise the kernel has no hugetlb. */
	if (r == -ENOENT && (n == 0 || meminfo[n - 1] != '\n')) {
		item_unknown(out, "default_size_kb",
			     "malformed: /proc/meminfo truncated");
		return;
	}
	if (r == -ENOENT) {
		item_unknown_err(out, "default_size_kb", r);
		return;
	}
	if (r < 0 || parse_num_suffix(buf, " kB", &v) < 0 || v == 0 ||
	    v > INT64_MAX) {
		item_unknown(out, "default_size_kb",
			     "malformed: Hugepagesize in /proc/meminfo");
		return;
	}
	item_i64(out, "default_size_kb", (int64_t)v);
}

/*
 * The pool sizes under /sys/kernel/mm/hugepages, sorted. Returns how many,
 * or -errno when the directory cannot be read (no hugetlb in this kernel).
 */
static int list_sizes(struct probe_ctx *ctx, uint64_t *sizes, size_t max)
{
	_cleanup_closedir_ DIR *d = probe_opendir(ctx, HUGEPAGES_DIR);
	struct dirent *de;
	size_t n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)) && n < max) {
		uint64_t v;

		if (parse_size_name(de->d_name, &v) == 0)
			sizes[n++] = v;
	}
	qsort(sizes, n, sizeof(sizes[0]), u64_cmp);
	return (int)n;
}

/* The NUMA node numbers under /sys/devices/system/node, sorted; 0 if none. */
static size_t list_nodes(struct probe_ctx *ctx, int *nodes, size_t max)
{
	_cleanup_closedir_ DIR *d = probe_opendir(ctx, NODE_DIR);
	struct dirent *de;
	size_t n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max) {
		uint64_t v;

		if (strncmp(de->d_name, "node", 4) ||
		    parse_num_suffix(de->d_name + 4, "", &v) < 0 ||
		    v >= MAX_NODES)
			continue;
		nodes[n++] = (int)v;
	}
	qsort(nodes, n, sizeof(nodes[0]), int_cmp);
	return n;
}

static void pool_items(struct probe_ctx *ctx, struct json_object *o,
		       const char *dir, const struct pool_file *files,
		       size_t nfiles)
{
	char path[512];

	for (size_t i = 0; i < nfiles; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i].file);
		item_file_i64(ctx, o, files[i].key, path);
	}
}

static int probe_size(struct probe_ctx *ctx, struct json_object *arr,
		      uint64_t size_kb, const int *nodes, size_t nnodes)
{
	struct json_object *e = json_object_new_object();
	struct json_object *narr;
	char name[64], dir[256];

	if (!e)
		return -ENOMEM;
	json_object_array_add(arr, e);
	snprintf(name, sizeof(name), "hugepages-%" PRIu64 "kB", size_kb);
	item_str(e, "name", name);
	item_i64(e, "size_kb", (int64_t)size_kb);
	snprintf(dir, sizeof(dir), HUGEPAGES_DIR "/%s", name);
	pool_items(ctx, e, dir, size_files, ARRAY_SIZE(size_files));

	narr = item_array(e, "nodes");
	if (!narr)
		return -ENOMEM;
	for (size_t i = 0; i < nnodes; i++) {
		struct json_object *ne;
		DIR *nd;

		snprintf(dir, sizeof(dir), NODE_DIR "/node%d/hugepages/%s",
			 nodes[i], name);
		nd = probe_opendir(ctx, dir);
		/* A node without the directory has no pool of this size
		 * (a memoryless node, or a kernel without per-node pools). */
		if (!nd && (errno == ENOENT || errno == ENOTDIR))
			continue;
		if (nd)
			closedir(nd);
		ne = json_object_new_object();
		if (!ne)
			return -ENOMEM;
		json_object_array_add(narr, ne);
		item_i64(ne, "node", nodes[i]);
		pool_items(ctx, ne, dir, node_files, ARRAY_SIZE(node_files));
	}
	return 0;
}

static int probe_hugetlb(struct probe_ctx *ctx, struct json_object *out)
{
	uint64_t sizes[MAX_SIZES];
	int nodes[MAX_NODES];
	struct json_object *arr;
	size_t nnodes = 0;
	bool has_2m = false, has_1g = false;
	int nsizes;

	probe_default_size(ctx, out);
	item_file_i64(ctx, out, "vm_nr_hugepages", "/proc/sys/vm/nr_hugepages");

	nsizes = list_sizes(ctx, sizes, ARRAY_SIZE(sizes));
	if (nsizes < 0) {
		item_unknown_err(out, "size_2m_present", nsizes);
		item_unknown_err(out, "size_1g_present", nsizes);
	} else {
		for (int i = 0; i < nsizes; i++) {
			has_2m |= sizes[i] == SIZE_2M_KB;
			has_1g |= sizes[i] == SIZE_1G_KB;
		}
		item_bool(out, "size_2m_present", has_2m);
		item_bool(out, "size_1g_present", has_1g);
		nnodes = list_nodes(ctx, nodes, ARRAY_SIZE(nodes));
	}

	/* Without the sysfs directory there are no pools to list: an empty
	 * array, while the *_present items above say why. */
	arr = item_array(out, "sizes");
	if (!arr)
		return -ENOMEM;
	for (int i = 0; i < nsizes; i++) {
		int r = probe_size(ctx, arr, sizes[i], nodes, nnodes);

		if (r < 0)
			return r;
	}
	return 0;
}

const struct probe_ops probe_hugetlb_ops = {
	.name = "hugetlb",
	.run = probe_hugetlb,
};
