/* SPDX-License-Identifier: MIT */
/* CPU frequency scaling: governor and limits per cpufreq policy. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "cleanup.h"
#include "probe_modules.h"

#define CPUFREQ_DIR "/sys/devices/system/cpu/cpufreq"

/* "policy<N>" with N a plain decimal number; -1 for anything else. */
static long policy_number(const char *name)
{
	const char *p = name + strlen("policy");
	char *end;
	long n;

	if (strncmp(name, "policy", strlen("policy")) || *p < '0' || *p > '9')
		return -1;
	errno = 0;
	n = strtol(p, &end, 10);
	if (errno || *end || n < 0)
		return -1;
	return n;
}

static int long_cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

/*
 * Collects the policy numbers found in CPUFREQ_DIR, sorted. Returns the count
 * (0 when the directory holds none) or -errno.
 */
static int list_policies(struct probe_ctx *ctx, long **ret)
{
	_cleanup_closedir_ DIR *d = probe_opendir(ctx, CPUFREQ_DIR);
	_cleanup_free_ long *nums = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	if (!d)
		return -errno;
	errno = 0;
	while ((de = readdir(d))) {
		long num = policy_number(de->d_name);

		if (num < 0)
			continue;
		if (ARRAY_RESERVE(nums, cap, n + 1) < 0)
			return -ENOMEM;
		nums[n++] = num;
	}
	if (errno)
		return -errno;
	if (n > 1)
		qsort(nums, n, sizeof(*nums), long_cmp);
	*ret = TAKE_PTR(nums);
	return (int)n;
}

/* scaling_available_governors: a space-separated list, as an array. */
static void item_governor_list(struct probe_ctx *ctx, struct json_object *o,
			       const char *key, const char *path)
{
	char buf[4096], *save = NULL;
	ssize_t n = item_read_line(ctx, o, key, path, buf, sizeof(buf));
	struct json_object *arr;

	if (n < 0)
		return;
	arr = item_array(o, key);
	for (char *tok = strtok_r(buf, " \t", &save); tok;
	     tok = strtok_r(NULL, " \t", &save))
		json_object_array_add(arr, json_object_new_string(tok));
}

static void probe_policy(struct probe_ctx *ctx, struct json_object *arr,
			 long num)
{
	static const struct {
		const char *key, *file;
		bool is_int;
	} items[] = {
		{ "cpus", "affected_cpus", false },
		{ "governor", "scaling_governor", false },
		{ "driver", "scaling_driver", false },
		{ "available_governors", "scaling_available_governors",
		  false },
		{ "min_khz", "scaling_min_freq", true },
		{ "max_khz", "scaling_max_freq", true },
		{ "cur_khz", "scaling_cur_freq", true },
	};
	struct json_object *p = json_object_new_object();
	char name[32], path[256];

	if (!p)
		return;
	snprintf(name, sizeof(name), "policy%ld", num);
	item_str(p, "name", name);
	for (size_t i = 0; i < ARRAY_SIZE(items); i++) {
		snprintf(path, sizeof(path), CPUFREQ_DIR "/%s/%s", name,
			 items[i].file);
		if (!strcmp(items[i].key, "available_governors"))
			item_governor_list(ctx, p, items[i].key, path);
		else if (items[i].is_int)
			item_file_i64(ctx, p, items[i].key, path);
		else
			item_file_str(ctx, p, items[i].key, path);
	}
	json_object_array_add(arr, p);
}

static int probe_cpufreq(struct probe_ctx *ctx, struct json_object *out)
{
	_cleanup_free_ long *nums = NULL;
	struct json_object *arr;
	int n = list_policies(ctx, &nums);

	if (n == -ENOMEM)
		return n;
	/* No cpufreq directory, or one without policies: the hypervisor or
	 * the firmware sets the frequency, the guest cannot. */
	if (n == 0 || n == -ENOENT || n == -ENOTDIR) {
		item_str(out, "state", "host-controlled");
		item_array(out, "policies");
		return 0;
	}
	if (n < 0) {
		item_unknown_err(out, "state", n);
		item_unknown_err(out, "policies", n);
		return 0;
	}
	item_str(out, "state", "present");
	arr = item_array(out, "policies");
	for (int i = 0; i < n; i++)
		probe_policy(ctx, arr, nums[i]);
	return 0;
}

const struct probe_ops probe_cpufreq_ops = {
	.name = "cpufreq",
	.run = probe_cpufreq,
};
