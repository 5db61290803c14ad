/* SPDX-License-Identifier: MIT */
/* The virt and labels sections on the running machine, checked against
 * CPUID, /proc and /sys read again here. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "check.h"
#include "probe_test.h"

static void trim(char *s)
{
	char *b = s, *e;

	while (*b == ' ' || *b == '\t' || *b == '\n')
		b++;
	e = b + strlen(b);
	while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n'))
		e--;
	*e = '\0';
	memmove(s, b, (size_t)(e - b) + 1);
}

/* 0 with the trimmed text, or -errno; -EBADMSG when not printable ASCII. */
static int read_text(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	for (ssize_t i = 0; i < n; i++)
		if ((buf[i] < 0x20 && buf[i] != '\n' && buf[i] != '\t') ||
		    (unsigned char)buf[i] > 0x7e)
			return -EBADMSG;
	buf[n] = '\0';
	trim(buf);
	return 0;
}

static void test_real_machine(void)
{
	struct probe_opts opts = {
		.root = "/",
		.work_dir = "/tmp",
		.steal_window_ms = 0,
		.sys = &probe_sys_real,
	};
	struct json_object *r = NULL, *m;
	char buf[4096], *line = NULL;
	struct stat st;
	size_t cap = 0;
	bool bit = false, dmi;
	FILE *f;
	int err;

	CHECK_OK(probe_run(&opts, &r));
	if (!r)
		return;

#if defined(__x86_64__) || defined(__i386__)
	{
		unsigned int a = 0, b = 0, c = 0, d = 0;

		CHECK(__get_cpuid(1, &a, &b, &c, &d));
		bit = c & (1u << 31);
		CHECK_EQ_STR(jstr(r, "virt.cpuid.hypervisor_bit"),
			     bit ? "true" : "false");
		if (bit) {
			char sig[13] = { 0 };

			__cpuid(0x40000000, a, b, c, d);
			memcpy(sig, &b, 4);
			memcpy(sig + 4, &c, 4);
			memcpy(sig + 8, &d, 4);
			CHECK_EQ_STR(jstr(r, "virt.cpuid.signature"), sig);
			snprintf(buf, sizeof(buf), "%s",
				 jstr(r, "virt.cpuid.hypervisor"));
			CHECK_EQ_STR(jstr(r, "virt.vm.name"), buf);
			CHECK_EQ_STR(jstr(r, "virt.vm.source"), "cpuid");
		} else {
			CHECK(jnull(r, "virt.cpuid.signature"));
		}
	}
#else
	CHECK_EQ_STR(jstr(r, "virt.cpuid.hypervisor_bit"), "unknown (not supported)");
#endif

	/* cpuinfo: the first flags line, tokenized. */
	f = fopen("/proc/cpuinfo", "re");
	if (f) {
		const char *expect = "unknown (absent: no flags line in /proc/cpuinfo)";

		while (getline(&line, &cap, f) > 0) {
			char *colon = strchr(line, ':'), *save = NULL;

			if (strncmp(line, "flags", 5) || !colon)
				continue;
			expect = "false";
			for (char *t = strtok_r(colon + 1, " \t\n", &save); t;
			     t = strtok_r(NULL, " \t\n", &save))
				if (!strcmp(t, "hypervisor"))
					expect = "true";
			break;
		}
		fclose(f);
		free(line);
		CHECK_EQ_STR(jstr(r, "virt.cpuinfo_hypervisor_flag"), expect);
	}

	err = read_text("/sys/hypervisor/type", buf, sizeof(buf));
	if (err == -ENOENT)
		CHECK_EQ_STR(jstr(r, "virt.sys_hypervisor_type"), "unknown (absent)");
	else if (!err && *buf)
		CHECK_EQ_STR(jstr(r, "virt.sys_hypervisor_type"), buf);

	/* DMI, each file read again here. */
	dmi = stat("/sys/class/dmi/id", &st) == 0 && S_ISDIR(st.st_mode);
	CHECK_EQ_STR(jstr(r, "virt.dmi.present"), dmi ? "true" : "false");
	for (size_t i = 0; i < NDMI; i++) {
		char path[128], key[64];

		if (!strcmp(dmi_keys[i], "chassis_type_name"))
			continue;
		snprintf(path, sizeof(path), "/sys/class/dmi/id/%s",
			 dmi_keys[i]);
		snprintf(key, sizeof(key), "virt.dmi.%s", dmi_keys[i]);
		err = read_text(path, buf, sizeof(buf));
		if (err == -ENOENT || err == -ENOTDIR)
			CHECK_EQ_STR(jstr(r, key), "unknown (absent)");
		else if (!err && strlen(buf) < 256)
			CHECK_EQ_STR(jstr(r, key), buf);
		else
			CHECK(!strncmp(jstr(r, key), "unknown (", 9));
	}
	if (!dmi) {
		CHECK_EQ_STR(jstr(r, "virt.dmi.chassis_type_name"),
			     "unknown (absent)");
		if (!bit)
			CHECK(!strcmp(jstr(r, "virt.vm.name"), "none") ||
			      !strncmp(jstr(r, "virt.vm.name"), "unknown (", 9));
		CHECK_EQ_STR(jstr(r, "labels.provider.value"),
			     "unknown (not given; DMI absent)");
		CHECK_EQ_STR(jstr(r, "labels.provider.source"), "none");
		CHECK_EQ_STR(jstr(r, "labels.instance_type.value"),
			     "unknown (not given; DMI absent)");
		CHECK_EQ_STR(jstr(r, "labels.instance_type.source"), "none");
	} else {
		CHECK(!strcmp(jstr(r, "labels.provider.source"), "dmi") ||
		      !strcmp(jstr(r, "labels.provider.source"), "none"));
	}
	CHECK_EQ_STR(jstr(r, "labels.region.value"), "unknown (not given)");
	CHECK_EQ_STR(jstr(r, "labels.region.source"), "none");

	/* Container markers that are plain files. */
	m = jget(r, "virt.container.markers");
	CHECK(json_object_is_type(m, json_type_array));
	{
		static const char *const files[] = { "/.dockerenv",
						     "/run/.containerenv" };
		size_t n = json_object_array_length(m);

		for (size_t i = 0; i < 2; i++) {
			bool listed = false;

			for (size_t j = 0; j < n; j++)
				if (!strcmp(json_object_get_string(
						    json_object_array_get_idx(
							    m, j)),
					    files[i]))
					listed = true;
			CHECK_(listed == (access(files[i], F_OK) == 0),
			       "marker %s listed %d", files[i], listed);
		}
		if (n == 0)
			CHECK_EQ_STR(jstr(r, "virt.container.name"), "none");
		else
			CHECK(strcmp(jstr(r, "virt.container.name"), "none") != 0);
	}
	json_object_put(r);
}

int main(void)
{
	test_real_machine();
	return check_summary();
}
