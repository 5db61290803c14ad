/* SPDX-License-Identifier: MIT */
/* The cpufreq probe over every fixture tree and on the running machine. */
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "probe_test.h"

#define POLICY_DIR "/sys/devices/system/cpu/cpufreq"

/* Guests without a cpufreq directory: the host sets the frequency. */
static void check_host_controlled(const char *tree, const struct fake_sys *fs)
{
	struct json_object *r = probe_fixture(tree, fs);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_INT(jkeys(r, "cpufreq"), 2);
	CHECK_EQ_STR(jstr(r, "cpufreq.state"), "host-controlled");
	CHECK_EQ_INT(jlen(r, "cpufreq.policies"), 0);
	json_object_put(r);
}

static void test_baremetal(void)
{
	struct fake_sys fs = { .hypervisor_bit = -1 };
	struct json_object *r = probe_fixture("baremetal-numa", &fs);
	char path[128], want[32];

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_STR(jstr(r, "cpufreq.state"), "present");
	CHECK_EQ_INT(jlen(r, "cpufreq.policies"), 32);
	/* Numeric order: policy10 follows policy9, not policy1. */
	for (int i = 0; i < 32; i++) {
#define AT(key) (snprintf(path, sizeof(path), "cpufreq.policies[%d]%s", i, key), path)
		CHECK_EQ_INT(jkeys(r, AT("")), 8);
		snprintf(want, sizeof(want), "policy%d", i);
		CHECK_EQ_STR(jstr(r, AT(".name")), want);
		snprintf(want, sizeof(want), "%d", i);
		CHECK_EQ_STR(jstr(r, AT(".cpus")), want);
		CHECK_EQ_STR(jstr(r, AT(".governor")), "performance");
		CHECK_EQ_STR(jstr(r, AT(".driver")), "intel_pstate");
		CHECK_EQ_INT(jlen(r, AT(".available_governors")), 2);
		CHECK_EQ_STR(jjoin(r, AT(".available_governors")),
			     "performance powersave");
		CHECK_EQ_INT(jint(r, AT(".min_khz")), 800000);
		CHECK_EQ_INT(jint(r, AT(".max_khz")), 3200000);
		CHECK_EQ_INT(jint(r, AT(".cur_khz")), 1995000 + (i % 4) * 2500);
#undef AT
	}
	json_object_put(r);
}

static void test_malformed(void)
{
	struct json_object *r = probe_fixture("malformed", NULL);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_STR(jstr(r, "cpufreq.state"), "present");
	CHECK_EQ_INT(jlen(r, "cpufreq.policies"), 1);
	CHECK_EQ_INT(jkeys(r, "cpufreq.policies[0]"), 8);
	CHECK_EQ_STR(jstr(r, "cpufreq.policies[0].name"), "policy0");
	CHECK_EQ_STR(jstr(r, "cpufreq.policies[0].cpus"), "0");
	CHECK_EQ_STR(jstr(r, "cpufreq.policies[0].governor"),
		     "unknown (malformed: " POLICY_DIR
		     "/policy0/scaling_governor empty)");
	CHECK_EQ_STR(jstr(r, "cpufreq.policies[0].driver"), "acpi-cpufreq");
	CHECK_EQ_STR(jstr(r, "cpufreq.policies[0].available_governors"),
		     "unknown (absent)");
	CHECK_EQ_INT(jint(r, "cpufreq.policies[0].min_khz"), 800000);
	CHECK_EQ_STR(jstr(r, "cpufreq.policies[0].max_khz"),
		     "unknown (malformed: " POLICY_DIR
		     "/policy0/scaling_max_freq is not an integer)");
	CHECK_EQ_STR(jstr(r, "cpufreq.policies[0].cur_khz"),
		     "unknown (malformed: " POLICY_DIR
		     "/policy0/scaling_cur_freq empty)");
	json_object_put(r);
}

static int read_str(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t len;

	if (!f)
		return -errno;
	if (!fgets(buf, (int)size, f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	len = strlen(buf);
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		buf[--len] = '\0';
	return 0;
}

/*
 * The running machine: the policy count from a glob, and each governor read
 * through the per-CPU link (cpuN/cpufreq -> ../cpufreq/policyM) instead.
 */
static void test_real(void)
{
	struct probe_opts opts = {
		.root = "/",
		.work_dir = "/var/tmp",
		.steal_window_ms = 0,
		.sys = &probe_sys_real,
	};
	struct json_object *r = NULL;
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);
	glob_t g = { 0 };
	size_t n;

	CHECK_OK(probe_run(&opts, &r));
	if (!r)
		return;
	n = glob(POLICY_DIR "/policy[0-9]*", 0, NULL, &g) == 0 ? g.gl_pathc :
								0;
	globfree(&g);
	printf("real machine: %zu cpufreq policies\n", n);
	CHECK_EQ_STR(jstr(r, "cpufreq.state"),
		     n ? "present" : "host-controlled");
	CHECK_EQ_INT(jlen(r, "cpufreq.policies"), n);
	for (size_t i = 0; i < n; i++) {
		char path[128], cpus[256], file[256], gov[64];
		long first;

		snprintf(path, sizeof(path), "cpufreq.policies[%zu].cpus", i);
		snprintf(cpus, sizeof(cpus), "%s", jstr(r, path));
		if (!strncmp(cpus, "unknown", 7))
			continue;
		first = strtol(cpus, NULL, 10);
		CHECK(first >= 0 && first < ncpus);
		snprintf(path, sizeof(path), "cpufreq.policies[%zu].governor",
			 i);
		snprintf(file, sizeof(file),
			 "/sys/devices/system/cpu/cpu%ld/cpufreq/scaling_governor",
			 first);
		if (read_str(file, gov, sizeof(gov)) == 0)
			CHECK_EQ_STR(jstr(r, path), gov);
	}
	json_object_put(r);
}

int main(void)
{
	struct fake_sys vps = { .setup_err = -EPERM };
	struct fake_sys old = { .probe_err = -EINVAL,
				.features = IORING_FEAT_SINGLE_MMAP };

	check_host_controlled("kvm-guest", NULL);
	check_host_controlled("vps-thp-always", &vps);
	check_host_controlled("old-kernel", &old);
	test_baremetal();
	test_malformed();
	test_real();
	return check_summary();
}
