/* SPDX-License-Identifier: MIT */
/* Transparent huge pages: the modes and khugepaged settings in sysfs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "probe_modules.h"

#define THP_DIR "/sys/kernel/mm/transparent_hugepage"

static int mthp_cmp(const void *a, const void *b)
{
	long x = strtol(*(const char *const *)a + strlen("hugepages-"), NULL, 10);
	long y = strtol(*(const char *const *)b + strlen("hugepages-"), NULL, 10);

	return (x > y) - (x < y);
}

/*
 * Multi-size THP (6.8+): one hugepages-<size>kB directory per folio size,
 * each with its own enabled mode. Absent on older kernels.
 */
static void probe_mthp(struct probe_ctx *ctx, struct json_object *out)
{
	_cleanup_closedir_ DIR *d = probe_opendir(ctx, THP_DIR);
	char *names[64];
	size_t n = 0;
	struct dirent *de;
	struct json_object *arr;
	int size_kb;

	if (!d) {
		item_unknown_err(out, "mthp", -errno);
		return;
	}
	while ((de = readdir(d)) && n < ARRAY_SIZE(names)) {
		char *name;

		if (sscanf(de->d_name, "hugepages-%dkB", &size_kb) != 1)
			continue;
		name = strdup(de->d_name);
		if (name)
			names[n++] = name;
	}
	if (n == 0) {
		item_unknown(out, "mthp", "absent");
		return;
	}
	qsort(names, n, sizeof(names[0]), mthp_cmp);
	arr = item_array(out, "mthp");
	for (size_t i = 0; i < n; i++) {
		struct json_object *e;
		char path[512];

		e = json_object_new_object();
		sscanf(names[i], "hugepages-%dkB", &size_kb);
		item_i64(e, "size_kb", size_kb);
		snprintf(path, sizeof(path), THP_DIR "/%s/enabled", names[i]);
		item_file_bracket(ctx, e, "enabled", path);
		json_object_array_add(arr, e);
		free(names[i]);
	}
}

static int probe_thp(struct probe_ctx *ctx, struct json_object *out)
{
	static const char *const bracketed[] = {
		"enabled", "defrag", "shmem_enabled",
	};
	static const char *const khugepaged[] = {
		"defrag", "scan_sleep_millisecs", "alloc_sleep_millisecs",
		"pages_to_scan", "max_ptes_none",
	};
	struct json_object *k;
	char path[256];

	for (size_t i = 0; i < ARRAY_SIZE(bracketed); i++) {
		snprintf(path, sizeof(path), THP_DIR "/%s", bracketed[i]);
		item_file_bracket(ctx, out, bracketed[i], path);
	}
	item_file_i64(ctx, out, "hpage_pmd_size", THP_DIR "/hpage_pmd_size");

	probe_mthp(ctx, out);

	k = item_object(out, "khugepaged");
	for (size_t i = 0; i < ARRAY_SIZE(khugepaged); i++) {
		snprintf(path, sizeof(path), THP_DIR "/khugepaged/%s",
			 khugepaged[i]);
		item_file_i64(ctx, k, khugepaged[i], path);
	}
	return 0;
}

const struct probe_ops probe_thp_ops = {
	.name = "thp",
	.run = probe_thp,
};
