/* SPDX-License-Identifier: MIT */
/* The "host" and "kernel" probe sections: fixtures, a built tree, the real
 * host (test_probe_host_parse.c: the parsers on their own). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "check.h"
#include "probe_host.h"
#include "probe_kernel.h"
#include "probe_test.h"

#define KP "kernel.cmdline_params."

static void check_params_unknown(struct json_object *r, const char *reason)
{
	static const char *const keys[] = {
		"transparent_hugepage", "default_hugepagesz", "hugepagesz",
		"hugepages",		"hugepage_pools",
	};
	char path[128];

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		snprintf(path, sizeof(path), KP "%s", keys[i]);
		CHECK_EQ_STR(jstr(r, path), reason);
	}
}

#define MALFORMED_CMDLINE "unknown (malformed: /proc/cmdline is empty)"
#define MALFORMED_CPUINFO "unknown (malformed: /proc/cpuinfo is empty)"
#define MALFORMED_NODES                                                      \
	"unknown (malformed: /sys/devices/system/node/online is not a list " \
	"of ids and ranges)"

struct host_pool {
	const char *size;
	int64_t count;
};

/* What the host and kernel sections of one fixture tree must hold. */
struct host_expect {
	const char *tree;
	struct fake_sys fs;
	const char *hostname, *machine_id, *architecture, *cpu_vendor,
		*cpu_model, *numa_node_list;
	int64_t vcpus_online, vcpus_possible, memory_total_kb,
		memory_available_kb, numa_nodes;
	/* Set: that integer item is unknown for this reason instead. */
	struct {
		const char *vcpus_online, *vcpus_possible, *memory_total_kb,
			*memory_available_kb, *numa_nodes;
	} unknown;
	const char *release, *version, *cmdline;
	/* Set: every cmdline parameter is unknown for this reason, and the
	 * parameter fields below are not looked at. */
	const char *params_unknown;
	/* NULL: the parameter is not set (JSON null). */
	const char *thp, *default_hugepagesz;
	int n_hugepagesz, n_hugepages, n_pools;
	const char *hugepagesz[2], *hugepages[2];
	struct host_pool pools[2];
};

static const struct host_expect host_expects[] = {
	{
		.tree = "kvm-guest",
		.hostname = "bench-kvm-01",
		.machine_id = "5f1c0b7e2a9d4c3e8b6a7d2f1e0c9b8a",
		.architecture = "x86_64",
		.cpu_vendor = "AuthenticAMD",
		.cpu_model = "AMD EPYC 7B13",
		.vcpus_online = 2,
		.vcpus_possible = 2,
		.memory_total_kb = 4015608,
		.memory_available_kb = 3521004,
		.numa_nodes = 1,
		.numa_node_list = "0",
		.release = "6.1.0-18-amd64",
		.version = "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 "
			   "(2024-02-01)",
		.cmdline = "BOOT_IMAGE=/boot/vmlinuz-6.1.0-18-amd64 "
			   "root=UUID=5c3e1f9a-58b8-4d1f-9a51-2b0c1c3e7e11 ro "
			   "console=ttyS0,115200n8 quiet",
	},
	{
		.tree = "vps-thp-always",
		.fs = { .setup_err = -EPERM },
		/* A container: its hostname is the container id. */
		.hostname = "3f9c2a7b1d4e",
		/* No /etc/machine-id in the image: dbus's copy is used. */
		.machine_id = "a0e4c6d81b2f47f9935e1c7d0b3a6f24",
		.architecture = "x86_64",
		.cpu_vendor = "GenuineIntel",
		.cpu_model = "DO-Regular",
		.vcpus_online = 4,
		.vcpus_possible = 4,
		.memory_total_kb = 8138792,
		.memory_available_kb = 7201320,
		.numa_nodes = 1,
		.numa_node_list = "0",
		.release = "6.8.0-45-generic",
		.version = "#45-Ubuntu SMP PREEMPT_DYNAMIC Fri Aug 30 12:02:04 "
			   "UTC 2024",
		.cmdline = "BOOT_IMAGE=/vmlinuz-6.8.0-45-generic "
			   "root=LABEL=cloudimg-rootfs ro console=tty1 "
			   "console=ttyS0 transparent_hugepage=always",
		.thp = "always",
	},
	{
		.tree = "baremetal-numa",
		.fs = { .hypervisor_bit = -1 },
		.hostname = "r750-bench-07",
		.machine_id = "c4d2e8f01a3b4c5d9e7f60718293a4b5",
		.architecture = "x86_64",
		.cpu_vendor = "GenuineIntel",
		.cpu_model = "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
		.vcpus_online = 32,
		.vcpus_possible = 32,
		.memory_total_kb = 263843012,
		.memory_available_kb = 251442880,
		.numa_nodes = 2,
		.numa_node_list = "0-1",
		.release = "6.6.15",
		.version = "#1 SMP PREEMPT_DYNAMIC Thu Feb  1 10:00:00 UTC "
			   "2024",
		.cmdline = "BOOT_IMAGE=/vmlinuz-6.6.15 "
			   "root=/dev/mapper/vg0-root ro "
			   "default_hugepagesz=1G hugepagesz=1G hugepages=4 "
			   "hugepagesz=2M hugepages=1024 "
			   "transparent_hugepage=madvise",
		.thp = "madvise",
		.default_hugepagesz = "1G",
		.n_hugepagesz = 2,
		.hugepagesz = { "1G", "2M" },
		.n_hugepages = 2,
		.hugepages = { "4", "1024" },
		.n_pools = 2,
		.pools = { { "1G", 4 }, { "2M", 1024 } },
	},
	{
		.tree = "old-kernel",
		.fs = {
			.probe_err = -EINVAL,
			.features = IORING_FEAT_SINGLE_MMAP,
		},
		.hostname = "ip-172-31-22-140",
		.machine_id = "ec2b7f3a9d1e4f6a8c0b2d4e6f809a1b",
		.architecture = "x86_64",
		.cpu_vendor = "GenuineIntel",
		.cpu_model = "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz",
		.vcpus_online = 2,
		.vcpus_possible = 2,
		.memory_total_kb = 7864804,
		.memory_available_kb = 7012212,
		.numa_nodes = 1,
		.numa_node_list = "0",
		.release = "5.4.0-1103-aws",
		.version = "#111~18.04.1-Ubuntu SMP Tue May 23 20:04:10 UTC "
			   "2023",
		.cmdline = "BOOT_IMAGE=/boot/vmlinuz-5.4.0-1103-aws "
			   "root=PARTUUID=7a7d2b1e-01 ro console=tty1 "
			   "console=ttyS0 nvme_core.io_timeout=4294967295 "
			   "panic=-1",
	},
	{
		.tree = "malformed",
		.hostname = "unknown (malformed: /proc/sys/kernel/hostname "
			    "holds a NUL byte)",
		.machine_id = "unknown (malformed: /etc/machine-id is not 32 "
			      "lowercase hex digits)",
		.architecture = "x86_64",
		.cpu_vendor = MALFORMED_CPUINFO,
		.cpu_model = MALFORMED_CPUINFO,
		.unknown = {
			.vcpus_online = "unknown (malformed: "
					"/sys/devices/system/cpu/online is "
					"not a list of ids and ranges)",
			.vcpus_possible = "unknown (malformed: "
					  "/sys/devices/system/cpu/possible "
					  "is not a list of ids and ranges)",
			.memory_available_kb = "unknown (malformed: "
					       "/proc/meminfo is truncated)",
			.numa_nodes = MALFORMED_NODES,
		},
		/* The first line survived the truncation, the rest did not. */
		.memory_total_kb = 4015608,
		.numa_node_list = MALFORMED_NODES,
		.release = "unknown (malformed: /proc/sys/kernel/osrelease is "
			   "empty)",
		.version = "unknown (malformed: /proc/sys/kernel/version is "
			   "truncated)",
		.cmdline = MALFORMED_CMDLINE,
		.params_unknown = MALFORMED_CMDLINE,
	},
};

/* The CHECK macros name the expression, not the item: say which it was. */
static void expect_str(struct json_object *r, const struct host_expect *e,
		       const char *path, const char *want)
{
	int fail = check_fail_;

	if (want)
		CHECK_EQ_STR(jstr(r, path), want);
	else
		CHECK(jnull(r, path));
	if (check_fail_ != fail)
		fprintf(stderr, "  in %s: %s\n", e->tree, path);
}

static void expect_int(struct json_object *r, const struct host_expect *e,
		       const char *path, int64_t want)
{
	int fail = check_fail_;

	CHECK_EQ_INT(jint(r, path), want);
	if (check_fail_ != fail)
		fprintf(stderr, "  in %s: %s\n", e->tree, path);
}

static void expect_len(struct json_object *r, const struct host_expect *e,
		       const char *path, int want)
{
	int fail = check_fail_;

	CHECK_EQ_INT(jlen(r, path), want);
	if (check_fail_ != fail)
		fprintf(stderr, "  in %s: %s\n", e->tree, path);
}

/* An array of strings under KP: its length, then each element. */
static void expect_strs(struct json_object *r, const struct host_expect *e,
			const char *key, const char *const *want, int n)
{
	char path[128];

	snprintf(path, sizeof(path), KP "%s", key);
	expect_len(r, e, path, n);
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), KP "%s[%d]", key, i);
		expect_str(r, e, path, want[i]);
	}
}

static void check_host_expect(const struct host_expect *e)
{
	const struct {
		const char *path, *want;
	} strs[] = {
		{ "host.hostname", e->hostname },
		{ "host.machine_id", e->machine_id },
		{ "host.architecture", e->architecture },
		{ "host.cpu_vendor", e->cpu_vendor },
		{ "host.cpu_model", e->cpu_model },
		{ "host.numa_node_list", e->numa_node_list },
		{ "kernel.release", e->release },
		{ "kernel.version", e->version },
		{ "kernel.cmdline", e->cmdline },
	};
	const struct {
		const char *path;
		int64_t want;
		const char *unknown;
	} ints[] = {
		{ "host.vcpus_online", e->vcpus_online,
		  e->unknown.vcpus_online },
		{ "host.vcpus_possible", e->vcpus_possible,
		  e->unknown.vcpus_possible },
		{ "host.memory_total_kb", e->memory_total_kb,
		  e->unknown.memory_total_kb },
		{ "host.memory_available_kb", e->memory_available_kb,
		  e->unknown.memory_available_kb },
		{ "host.numa_nodes", e->numa_nodes, e->unknown.numa_nodes },
	};
	struct json_object *r = probe_fixture(e->tree, &e->fs);
	char path[128];

	CHECK(r != NULL);
	if (!r) {
		fprintf(stderr, "  in %s\n", e->tree);
		return;
	}
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		expect_str(r, e, strs[i].path, strs[i].want);
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		if (ints[i].unknown)
			expect_str(r, e, ints[i].path, ints[i].unknown);
		else
			expect_int(r, e, ints[i].path, ints[i].want);
	}

	if (e->params_unknown) {
		check_params_unknown(r, e->params_unknown);
		json_object_put(r);
		return;
	}
	expect_str(r, e, KP "transparent_hugepage", e->thp);
	expect_str(r, e, KP "default_hugepagesz", e->default_hugepagesz);
	expect_strs(r, e, "hugepagesz", e->hugepagesz, e->n_hugepagesz);
	expect_strs(r, e, "hugepages", e->hugepages, e->n_hugepages);
	expect_len(r, e, KP "hugepage_pools", e->n_pools);
	for (int i = 0; i < e->n_pools; i++) {
		snprintf(path, sizeof(path), KP "hugepage_pools[%d].size", i);
		expect_str(r, e, path, e->pools[i].size);
		snprintf(path, sizeof(path), KP "hugepage_pools[%d].count", i);
		expect_int(r, e, path, e->pools[i].count);
	}
	json_object_put(r);
}

static void test_fixture_trees(void)
{
	for (size_t i = 0; i < sizeof(host_expects) / sizeof(host_expects[0]);
	     i++)
		check_host_expect(&host_expects[i]);
}

/* The architecture is uname's, whatever the files say. */
static void test_kvm_guest_machine(void)
{
	struct fake_sys fs = { .machine = "aarch64" };
	struct json_object *r = probe_fixture("kvm-guest", &fs);

	CHECK(r != NULL);
	CHECK_EQ_STR(jstr(r, "host.architecture"), "aarch64");
	json_object_put(r);
}

/* -------- a tree built here: arm64, old meminfo, files absent -------- */

static int write_file(const char *root, const char *path, const char *text)
{
	char full[PATH_MAX];
	FILE *f;

	snprintf(full, sizeof(full), "%s/%s", root, path);
	f = fopen(full, "we");
	if (!f)
		return -errno;
	fputs(text, f);
	return fclose(f) ? -errno : 0;
}

static void test_built_tree(void)
{
	static const char *const dirs[] = {
		"proc", "proc/sys", "proc/sys/kernel", "sys", "sys/devices",
		"sys/devices/system", "sys/devices/system/cpu",
	};
	static const char *const files[] = {
		"proc/cpuinfo", "proc/meminfo", "proc/cmdline",
		"proc/sys/kernel/osrelease", "sys/devices/system/cpu/online",
	};
	char root[] = "/tmp/fb-host-XXXXXX", path[PATH_MAX];
	/* no CPUID and no io_uring, as on an arm64 guest of an old kernel */
	struct fake_sys arm = { .cpuid_err = -ENOTSUP, .machine = "aarch64",
				.setup_err = -ENOSYS };
	struct probe_opts opts = { .work_dir = "/tmp" };
	struct json_object *r = NULL;

	if (!mkdtemp(root)) {
		CHECK_OK(-errno);
		return;
	}
	opts.root = root;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
		CHECK_OK(mkdir(path, 0755) < 0 ? -errno : 0);
	}
	/* An arm64 guest's cpuinfo: no vendor_id, no model name. */
	CHECK_OK(write_file(root, "proc/cpuinfo",
			    "processor\t: 0\n"
			    "BogoMIPS\t: 243.75\n"
			    "Features\t: fp asimd evtstrm aes pmull sha1 sha2 "
			    "crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc "
			    "dcpop asimddp ssbs\n"
			    "CPU implementer\t: 0x41\n"
			    "CPU architecture: 8\n"
			    "CPU variant\t: 0x3\n"
			    "CPU part\t: 0xd0c\n"
			    "CPU revision\t: 1\n"
			    "\n"
			    "processor\t: 1\n"
			    "CPU implementer\t: 0x42\n"
			    "\n"));
	/* Before MemAvailable existed. */
	CHECK_OK(write_file(root, "proc/meminfo",
			    "MemTotal:        2048000 kB\n"
			    "MemFree:         1024000 kB\n"));
	/* Quotes, '-' for '_', a repeated key and init's part after "--". */
	CHECK_OK(write_file(root, "proc/cmdline",
			    "ro \"quiet\" hugepages=16 transparent-hugepage=never "
			    "transparent_hugepage=\"always\" hugepagesz=1G "
			    "hugepages=0:2,1:3 hugepagesz=2M hugepages=12x "
			    "-- hugepages=99 transparent_hugepage=madvise\n"));
	CHECK_OK(write_file(root, "proc/sys/kernel/osrelease",
			    "6.1.0\n2nd line\n"));
	CHECK_OK(write_file(root, "sys/devices/system/cpu/online",
			    "0-1,4,6-7\n"));

	r = probe_fixture_opts(NULL, &arm, &opts);
	CHECK(r != NULL);
	if (r) {
		CHECK_EQ_STR(jstr(r, "host.hostname"), "unknown (absent)");
		CHECK_EQ_STR(jstr(r, "host.machine_id"), "unknown (absent)");
		CHECK_EQ_STR(jstr(r, "host.architecture"), "aarch64");
		CHECK_EQ_STR(jstr(r, "host.cpu_vendor"), "0x41");
		CHECK_EQ_STR(jstr(r, "host.cpu_model"),
			     "implementer 0x41 part 0xd0c");
		CHECK_EQ_INT(jint(r, "host.vcpus_online"), 5);
		CHECK_EQ_STR(jstr(r, "host.vcpus_possible"),
			     "unknown (absent)");
		CHECK_EQ_INT(jint(r, "host.memory_total_kb"), 2048000);
		CHECK_EQ_STR(jstr(r, "host.memory_available_kb"),
			     "unknown (absent)");
		/* A kernel without NUMA has no node directory. */
		CHECK_EQ_STR(jstr(r, "host.numa_nodes"), "unknown (absent)");
		CHECK_EQ_STR(jstr(r, "host.numa_node_list"),
			     "unknown (absent)");

		CHECK_EQ_STR(jstr(r, "kernel.release"),
			     "unknown (malformed: /proc/sys/kernel/osrelease "
			     "has more than one line)");
		CHECK_EQ_STR(jstr(r, "kernel.version"), "unknown (absent)");
		CHECK_EQ_STR(jstr(r, KP "transparent_hugepage"), "always");
		CHECK(jnull(r, KP "default_hugepagesz"));
		CHECK_EQ_INT(jlen(r, KP "hugepagesz"), 2);
		CHECK_EQ_INT(jlen(r, KP "hugepages"), 3);
		CHECK_EQ_STR(jstr(r, KP "hugepages[1]"), "0:2,1:3");
		CHECK_EQ_INT(jlen(r, KP "hugepage_pools"), 3);
		CHECK_EQ_STR(jstr(r, KP "hugepage_pools[0].size"), "default");
		CHECK_EQ_INT(jint(r, KP "hugepage_pools[0].count"), 16);
		CHECK_EQ_STR(jstr(r, KP "hugepage_pools[1].size"), "1G");
		CHECK_EQ_INT(jint(r, KP "hugepage_pools[1].count"), 5);
		CHECK_EQ_STR(jstr(r, KP "hugepage_pools[2].size"), "2M");
		CHECK_EQ_STR(jstr(r, KP "hugepage_pools[2].count"),
			     "unknown (malformed: hugepages=12x is not a page "
			     "count)");
		json_object_put(r);
	}

	/* Without /proc/cmdline every parameter is unknown for that reason. */
	snprintf(path, sizeof(path), "%s/proc/cmdline", root);
	CHECK_OK(unlink(path) < 0 ? -errno : 0);
	r = probe_fixture_opts(NULL, &arm, &opts);
	CHECK(r != NULL);
	if (r) {
		CHECK_EQ_STR(jstr(r, "kernel.cmdline"), "unknown (absent)");
		check_params_unknown(r, "unknown (absent)");
		json_object_put(r);
	}

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, files[i]);
		unlink(path);
	}
	for (size_t i = sizeof(dirs) / sizeof(dirs[0]); i-- > 0;) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
		CHECK_OK(rmdir(path) < 0 ? -errno : 0);
	}
	CHECK_OK(rmdir(root) < 0 ? -errno : 0);
}

/* -------- the real host, against the kernel read another way -------- */

/* The first line of a file, without its newline; NULL when unreadable. */
static char *first_line(const char *path)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!f)
		return NULL;
	n = getline(&line, &cap, f);
	fclose(f);
	if (n <= 0) {
		free(line);
		return NULL;
	}
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == ' '))
		line[--n] = '\0';
	return line;
}

/* "Key: value" of the first processor in /proc/cpuinfo; NULL if none. */
static char *cpuinfo_value(const char *key)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[4096], *ret = NULL;

	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f) && line[0] != '\n') {
		char *colon = strchr(line, ':');
		char *k_end = colon;
		char *v;

		if (!colon)
			continue;
		while (k_end > line && (k_end[-1] == '\t' || k_end[-1] == ' '))
			k_end--;
		if ((size_t)(k_end - line) != strlen(key) ||
		    strncmp(line, key, strlen(key)))
			continue;
		v = colon + 1 + strspn(colon + 1, " \t");
		v[strcspn(v, "\n")] = '\0';
		while (*v && v[strlen(v) - 1] == ' ')
			v[strlen(v) - 1] = '\0';
		ret = strdup(v);
		break;
	}
	fclose(f);
	return ret;
}

static long long meminfo_kb(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char name[64];
	long long v;

	if (!f)
		return -1;
	while (fscanf(f, "%63[^:]: %lld kB\n", name, &v) == 2) {
		if (!strcmp(name, key)) {
			fclose(f);
			return v;
		}
	}
	fclose(f);
	return -1;
}

/* Compares a string item with an independently found value, or checks it
 * is unknown when that value could not be found either. */
static void check_same(struct json_object *r, const char *path,
		       const char *want)
{
	if (want) {
		CHECK_EQ_STR(jstr(r, path), want);
	} else {
		CHECK(item_is_unknown(jget(r, path)));
		if (!item_is_unknown(jget(r, path)))
			fprintf(stderr, "  %s = %s\n", path, jstr(r, path));
	}
}

static void test_real_host(void)
{
	struct probe_opts opts = {
		.root = "/",
		.work_dir = "/tmp",
		.steal_window_ms = 0,
		.sys = &probe_sys_real,
	};
	struct json_object *r = NULL;
	struct utsname u;
	char host[HOST_NAME_MAX + 1];
	char *s, *mid;
	long long total;
	long n;
	uint32_t regs[4];

	CHECK_OK(probe_run(&opts, &r));
	if (!r)
		return;
	CHECK_OK(uname(&u));
	CHECK_EQ_STR(jstr(r, "host.architecture"), u.machine);
	CHECK_EQ_STR(jstr(r, "kernel.release"), u.release);
	CHECK_EQ_STR(jstr(r, "kernel.version"), u.version);
	CHECK_OK(gethostname(host, sizeof(host)));
	host[HOST_NAME_MAX] = '\0';
	CHECK_EQ_STR(jstr(r, "host.hostname"), host);

	/* machine-id: systemd's, else dbus's, else unknown. */
	mid = first_line("/etc/machine-id");
	if (!mid && access("/etc/machine-id", F_OK) < 0)
		mid = first_line("/var/lib/dbus/machine-id");
	if (mid && (strlen(mid) != 32 ||
		    strspn(mid, "0123456789abcdef") != 32)) {
		free(mid);
		mid = NULL;
	}
	check_same(r, "host.machine_id", mid);
	free(mid);

	/* The CPU vendor from CPUID where there is one, else cpuinfo. */
	if (probe_sys_real.cpuid(0, 0, regs) == 0) {
		char vendor[13];

		memcpy(vendor, &regs[1], 4);
		memcpy(vendor + 4, &regs[3], 4);
		memcpy(vendor + 8, &regs[2], 4);
		vendor[12] = '\0';
		CHECK_EQ_STR(jstr(r, "host.cpu_vendor"), vendor);
	}
	s = cpuinfo_value("vendor_id");
	if (!s)
		s = cpuinfo_value("CPU implementer");
	check_same(r, "host.cpu_vendor", s);
	free(s);
	s = cpuinfo_value("model name");
	if (s)
		CHECK_EQ_STR(jstr(r, "host.cpu_model"), s);
	free(s);

	/* glibc counts online CPUs from the same kernel list. */
	n = sysconf(_SC_NPROCESSORS_ONLN);
	if (access("/sys/devices/system/cpu/online", R_OK) == 0)
		CHECK_EQ_INT(jint(r, "host.vcpus_online"), n);
	else
		CHECK(item_is_unknown(jget(r, "host.vcpus_online")));
	if (access("/sys/devices/system/cpu/possible", R_OK) == 0) {
		CHECK(jint(r, "host.vcpus_possible") >=
		      jint(r, "host.vcpus_online"));
		CHECK(jint(r, "host.vcpus_possible") >=
		      sysconf(_SC_NPROCESSORS_CONF));
	} else {
		CHECK(item_is_unknown(jget(r, "host.vcpus_possible")));
	}

	total = meminfo_kb("MemTotal");
	CHECK(total > 0);
	CHECK_EQ_INT(jint(r, "host.memory_total_kb"), total);
	if (meminfo_kb("MemAvailable") >= 0) {
		CHECK(jint(r, "host.memory_available_kb") >= 0);
		CHECK(jint(r, "host.memory_available_kb") <= total);
	} else {
		CHECK_EQ_STR(jstr(r, "host.memory_available_kb"),
			     "unknown (absent)");
	}

	/* One nodeN directory per online node. */
	s = first_line("/sys/devices/system/node/online");
	check_same(r, "host.numa_node_list", s);
	if (s) {
		DIR *d = opendir("/sys/devices/system/node");
		struct dirent *de;
		long long nodes = 0;

		while (d && (de = readdir(d))) {
			if (!strncmp(de->d_name, "node", 4) &&
			    de->d_name[4] >= '0' && de->d_name[4] <= '9')
				nodes++;
		}
		if (d)
			closedir(d);
		CHECK_EQ_INT(jint(r, "host.numa_nodes"), nodes);
	} else {
		CHECK_EQ_STR(jstr(r, "host.numa_nodes"), "unknown (absent)");
	}
	free(s);

	/* The command line, and its THP mode where it sets one. */
	s = first_line("/proc/cmdline");
	check_same(r, "kernel.cmdline", s);
	if (s && !strchr(s, '"')) {
		char *save = NULL, *thp = NULL;
		int pages = 0;

		for (char *tok = strtok_r(s, " \t", &save);
		     tok && strcmp(tok, "--");
		     tok = strtok_r(NULL, " \t", &save)) {
			if (!strncmp(tok, "transparent_hugepage=", 21))
				thp = tok + 21;
			if (!strncmp(tok, "hugepages=", 10))
				pages++;
		}
		if (thp)
			CHECK_EQ_STR(jstr(r, KP "transparent_hugepage"), thp);
		else
			CHECK(jnull(r, KP "transparent_hugepage"));
		CHECK_EQ_INT(jlen(r, KP "hugepages"), pages);
		CHECK_EQ_INT(jlen(r, KP "hugepage_pools"), pages);
	}
	free(s);
	json_object_put(r);
}

int main(void)
{
	test_fixture_trees();
	test_kvm_guest_machine();
	test_built_tree();
	test_real_host();
	return check_summary();
}
