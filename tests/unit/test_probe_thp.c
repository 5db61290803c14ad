/* SPDX-License-Identifier: MIT */
/* The THP probe over every fixture tree and on the running machine. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cleanup.h"
#include "probe_test.h"

#define THP "/sys/kernel/mm/transparent_hugepage"

/* A bracketed item: selected value and option list. */
static void check_mode(struct json_object *r, const char *key,
		       const char *selected, const char *options)
{
	char path[128];

	snprintf(path, sizeof(path), "%s.selected", key);
	CHECK_EQ_STR(jstr(r, path), selected);
	snprintf(path, sizeof(path), "%s.options", key);
	CHECK_EQ_STR(jjoin(r, path), options);
	CHECK_EQ_INT(jkeys(r, key), 2);
}

struct khugepaged {
	int64_t defrag, scan_sleep, alloc_sleep, pages_to_scan, max_ptes_none;
};

static void check_khugepaged(struct json_object *r,
			     const struct khugepaged *k)
{
	CHECK_EQ_INT(jkeys(r, "thp.khugepaged"), 5);
	CHECK_EQ_INT(jint(r, "thp.khugepaged.defrag"), k->defrag);
	CHECK_EQ_INT(jint(r, "thp.khugepaged.scan_sleep_millisecs"),
		     k->scan_sleep);
	CHECK_EQ_INT(jint(r, "thp.khugepaged.alloc_sleep_millisecs"),
		     k->alloc_sleep);
	CHECK_EQ_INT(jint(r, "thp.khugepaged.pages_to_scan"),
		     k->pages_to_scan);
	CHECK_EQ_INT(jint(r, "thp.khugepaged.max_ptes_none"),
		     k->max_ptes_none);
}

static const struct khugepaged kh_default = { 1, 10000, 60000, 4096, 511 };

#define MODES3 "always madvise never"
#define DEFRAG5 "always defer defer+madvise madvise never"
#define SHMEM6 "always within_size advise never deny force"
#define MTHP4 "always inherit madvise never"

static void check_kvm_guest(void)
{
	struct json_object *r = probe_fixture("kvm-guest", NULL);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_INT(jkeys(r, "thp"), 6);
	check_mode(r, "thp.enabled", "madvise", MODES3);
	check_mode(r, "thp.defrag", "madvise", DEFRAG5);
	check_mode(r, "thp.shmem_enabled", "never", SHMEM6);
	CHECK_EQ_INT(jint(r, "thp.hpage_pmd_size"), 2097152);
	CHECK_EQ_STR(jstr(r, "thp.mthp"), "unknown (absent)");
	check_khugepaged(r, &kh_default);
	json_object_put(r);
}

static void check_vps(void)
{
	static const int64_t sizes[] = { 16, 32, 64, 128, 256, 512, 1024, 2048 };
	const struct fake_sys fs = { .setup_err = -EPERM };
	struct json_object *r = probe_fixture("vps-thp-always", &fs);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_INT(jkeys(r, "thp"), 6);
	check_mode(r, "thp.enabled", "always", MODES3);
	check_mode(r, "thp.defrag", "madvise", DEFRAG5);
	check_mode(r, "thp.shmem_enabled", "never", SHMEM6);
	CHECK_EQ_INT(jint(r, "thp.hpage_pmd_size"), 2097152);
	CHECK_EQ_INT(jlen(r, "thp.mthp"), ARRAY_SIZE(sizes));
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		char path[64];

		snprintf(path, sizeof(path), "thp.mthp[%zu].size_kb", i);
		CHECK_EQ_INT(jint(r, path), sizes[i]);
		snprintf(path, sizeof(path), "thp.mthp[%zu]", i);
		CHECK_EQ_INT(jkeys(r, path), 2);
		snprintf(path, sizeof(path), "thp.mthp[%zu].enabled", i);
		check_mode(r, path, sizes[i] == 2048 ? "inherit" : "never",
			   MTHP4);
	}
	check_khugepaged(r, &kh_default);
	json_object_put(r);
}

static void check_baremetal(void)
{
	static const struct khugepaged kh = { 1, 1000, 60000, 8192, 64 };
	const struct fake_sys fs = { .hypervisor_bit = -1 };
	struct json_object *r = probe_fixture("baremetal-numa", &fs);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_INT(jkeys(r, "thp"), 6);
	check_mode(r, "thp.enabled", "madvise", MODES3);
	check_mode(r, "thp.defrag", "defer+madvise", DEFRAG5);
	check_mode(r, "thp.shmem_enabled", "advise", SHMEM6);
	CHECK_EQ_INT(jint(r, "thp.hpage_pmd_size"), 2097152);
	CHECK_EQ_STR(jstr(r, "thp.mthp"), "unknown (absent)");
	check_khugepaged(r, &kh);
	json_object_put(r);
}

static void check_old_kernel(void)
{
	const struct fake_sys fs = {
		.probe_err = -EINVAL,
		.features = IORING_FEAT_SINGLE_MMAP | IORING_FEAT_NODROP,
	};
	struct json_object *r = probe_fixture("old-kernel", &fs);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_INT(jkeys(r, "thp"), 6);
	check_mode(r, "thp.enabled", "always", MODES3);
	check_mode(r, "thp.defrag", "madvise", DEFRAG5);
	check_mode(r, "thp.shmem_enabled", "never", SHMEM6);
	CHECK_EQ_INT(jint(r, "thp.hpage_pmd_size"), 2097152);
	CHECK_EQ_STR(jstr(r, "thp.mthp"), "unknown (absent)");
	check_khugepaged(r, &kh_default);
	json_object_put(r);
}

static void check_malformed(void)
{
	struct json_object *r = probe_fixture("malformed", NULL);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_INT(jkeys(r, "thp"), 6);
	CHECK_EQ_STR(jstr(r, "thp.enabled"),
		     "unknown (malformed: " THP "/enabled has no single "
		     "[selected] value)");
	CHECK_EQ_STR(jstr(r, "thp.defrag"),
		     "unknown (malformed: " THP "/defrag empty)");
	CHECK_EQ_STR(jstr(r, "thp.shmem_enabled"),
		     "unknown (malformed: " THP "/shmem_enabled has no single "
		     "[selected] value)");
	CHECK_EQ_STR(jstr(r, "thp.hpage_pmd_size"),
		     "unknown (malformed: " THP "/hpage_pmd_size is not an "
		     "integer)");
	/* 64kB has a cut-off mode, 2048kB only a shmem mode */
	CHECK_EQ_INT(jlen(r, "thp.mthp"), 2);
	CHECK_EQ_INT(jint(r, "thp.mthp[0].size_kb"), 64);
	CHECK_EQ_STR(jstr(r, "thp.mthp[0].enabled"),
		     "unknown (malformed: " THP "/hugepages-64kB/enabled has no "
		     "single [selected] value)");
	CHECK_EQ_INT(jint(r, "thp.mthp[1].size_kb"), 2048);
	CHECK_EQ_STR(jstr(r, "thp.mthp[1].enabled"), "unknown (absent)");
	CHECK_EQ_INT(jkeys(r, "thp.khugepaged"), 5);
	CHECK_EQ_INT(jint(r, "thp.khugepaged.defrag"), 1);
	CHECK_EQ_STR(jstr(r, "thp.khugepaged.scan_sleep_millisecs"),
		     "unknown (malformed: " THP "/khugepaged/"
		     "scan_sleep_millisecs empty)");
	CHECK_EQ_INT(jint(r, "thp.khugepaged.alloc_sleep_millisecs"), 60000);
	CHECK_EQ_STR(jstr(r, "thp.khugepaged.pages_to_scan"),
		     "unknown (malformed: " THP "/khugepaged/pages_to_scan is "
		     "not an integer)");
	CHECK_EQ_STR(jstr(r, "thp.khugepaged.max_ptes_none"),
		     "unknown (malformed: " THP "/khugepaged/max_ptes_none is "
		     "not an integer)");
	json_object_put(r);
}

/* ---- the running machine, read independently with stdio ---- */

/* The first line of path into buf; -errno. */
static int read_first_line(const char *path, char *buf, size_t size)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	if (!fgets(buf, (int)size, f))
		return -EIO;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* The bracketed mode file at path against the item at key. */
static void real_mode(struct json_object *r, const char *key,
		      const char *path)
{
	char line[512], want[128], jpath[128];
	const char *open_br, *close_br;
	int err = read_first_line(path, line, sizeof(line));

	if (err == -ENOENT) {
		CHECK_EQ_STR(jstr(r, key), "unknown (absent)");
		return;
	}
	CHECK_OK(err);
	if (err < 0)
		return;
	open_br = strchr(line, '[');
	close_br = open_br ? strchr(open_br, ']') : NULL;
	CHECK_(open_br && close_br, "%s has no [selected] value: %s", path,
	       line);
	if (!open_br || !close_br)
		return;
	snprintf(want, sizeof(want), "%.*s", (int)(close_br - open_br - 1),
		 open_br + 1);
	snprintf(jpath, sizeof(jpath), "%s.selected", key);
	CHECK_EQ_STR(jstr(r, jpath), want);
}

static void real_int(struct json_object *r, const char *key,
		     const char *path)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	long long v;

	if (!f) {
		CHECK_EQ_STR(jstr(r, key), errno == ENOENT ? "unknown (absent)" :
							     "<unreadable>");
		return;
	}
	CHECK_(fscanf(f, "%lld", &v) == 1, "%s is not a number", path);
	CHECK_EQ_INT(jint(r, key), v);
}

static int size_cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

static void check_real(void)
{
	static const char *const khugepaged[] = {
		"defrag", "scan_sleep_millisecs", "alloc_sleep_millisecs",
		"pages_to_scan", "max_ptes_none",
	};
	struct probe_opts opts = {
		.root = "/",
		.work_dir = "/var/tmp",
		.steal_window_ms = 0,
		.sys = &probe_sys_real,
	};
	struct json_object *r = NULL;
	_cleanup_closedir_ DIR *d = NULL;
	long sizes[64];
	size_t n = 0;
	struct dirent *de;
	char path[512], key[128];

	CHECK_OK(probe_run(&opts, &r));
	if (!r)
		return;
	real_mode(r, "thp.enabled", THP "/enabled");
	real_mode(r, "thp.defrag", THP "/defrag");
	real_mode(r, "thp.shmem_enabled", THP "/shmem_enabled");
	real_int(r, "thp.hpage_pmd_size", THP "/hpage_pmd_size");
	for (size_t i = 0; i < ARRAY_SIZE(khugepaged); i++) {
		snprintf(path, sizeof(path), THP "/khugepaged/%s",
			 khugepaged[i]);
		snprintf(key, sizeof(key), "thp.khugepaged.%s", khugepaged[i]);
		real_int(r, key, path);
	}

	/* mTHP: one entry per hugepages-<N>kB directory, smallest first */
	d = opendir(THP);
	while (d && (de = readdir(d)) && n < ARRAY_SIZE(sizes)) {
		char *end;
		long kb;

		if (strncmp(de->d_name, "hugepages-", 10))
			continue;
		kb = strtol(de->d_name + 10, &end, 10);
		if (strcmp(end, "kB"))
			continue;
		sizes[n++] = kb;
	}
	if (n == 0) {
		CHECK_EQ_STR(jstr(r, "thp.mthp"), "unknown (absent)");
	} else {
		qsort(sizes, n, sizeof(sizes[0]), size_cmp);
		CHECK_EQ_INT(jlen(r, "thp.mthp"), n);
		for (size_t i = 0; i < n; i++) {
			snprintf(key, sizeof(key), "thp.mthp[%zu].size_kb", i);
			CHECK_EQ_INT(jint(r, key), sizes[i]);
			snprintf(key, sizeof(key), "thp.mthp[%zu].enabled", i);
			snprintf(path, sizeof(path),
				 THP "/hugepages-%ldkB/enabled", sizes[i]);
			real_mode(r, key, path);
		}
	}
	json_object_put(r);
}

int main(void)
{
	check_kvm_guest();
	check_vps();
	check_baremetal();
	check_old_kernel();
	check_malformed();
	check_real();
	return check_summary();
}
