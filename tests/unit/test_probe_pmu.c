/* SPDX-License-Identifier: MIT */
/* The pmu probe: this host's real answer, substituted refusals, CPU table. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cleanup.h"
#include "file.h"
#include "pmu.h"
#include "probe_test.h"
#include "sys/sys.h"

/* What perf_event_open(2) of ev says here, opened by the test itself. */
static const char *direct(const struct pmu_event *ev)
{
	struct perf_event_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = ev->type;
	attr.config = ev->config;
	attr.disabled = 1;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	fd = sys_perf_event_open(&attr, 0, -1, -1, 0);
	if (fd >= 0) {
		close(fd);
		return "ok";
	}
	return strerrorname_np(-fd);
}

/* The real probe on this host agrees with a direct perf_event_open. */
static void test_real(void)
{
	struct probe_opts opts = { .root = "/", .work_dir = "/tmp" };
	struct json_object *r = NULL;
	struct pmu_event walk;
	char why[160], *text = NULL;
	int64_t paranoid;

	CHECK_OK(probe_run(&opts, &r));
	if (!r)
		return;
	CHECK_EQ_STR(jstr(r, "pmu.dtlb_load_misses"),
		     direct(&pmu_dtlb_load_misses));
	CHECK_EQ_STR(jstr(r, "pmu.cycles"), direct(&pmu_cpu_cycles));
	printf("this host: dtlb_load_misses %s, cycles %s, page_walk_cycles %s\n",
	       jstr(r, "pmu.dtlb_load_misses"), jstr(r, "pmu.cycles"),
	       jstr(r, "pmu.page_walk_cycles"));
	if (pmu_walk_cycles_event(sys_cpuid, &walk, why, sizeof(why)) == 0) {
		CHECK_EQ_STR(jstr(r, "pmu.page_walk_cycles"), direct(&walk));
		CHECK_EQ_STR(jstr(r, "pmu.page_walk_event"), walk.name);
	} else {
		char want[200];

		snprintf(want, sizeof(want), "unknown (%s)", why);
		CHECK_EQ_STR(jstr(r, "pmu.page_walk_cycles"), want);
		CHECK_EQ_STR(jstr(r, "pmu.page_walk_event"), want);
	}
	CHECK(read_full_file("/proc/sys/kernel/perf_event_paranoid", 4096,
			     &text) >= 0);
	if (text && sscanf(text, "%lld", (long long *)&paranoid) == 1)
		CHECK_EQ_INT(jint(r, "pmu.perf_event_paranoid"), paranoid);
	free(text);
	json_object_put(r);
}

/* Substituted errors come out as their names; an open counter as "ok". */
static void test_substituted(void)
{
	static const int errs[] = { -ENOENT, -EACCES, -EOPNOTSUPP, 0 };
	static const char *const names[] = { "ENOENT", "EACCES", "EOPNOTSUPP",
					     "ok" };

	for (size_t i = 0; i < 4; i++) {
		/* a Skylake server: a page-walk event is known */
		struct fake_sys fs = { .perf_err = errs[i],
				       .cpu_vendor = "GenuineIntel",
				       .cpu_eax1 = 0x00050654 };
		struct json_object *r = probe_fixture("kvm-guest", &fs);

		CHECK(r != NULL);
		if (!r)
			continue;
		CHECK_EQ_STR(jstr(r, "pmu.dtlb_load_misses"), names[i]);
		CHECK_EQ_STR(jstr(r, "pmu.cycles"), names[i]);
		CHECK_EQ_STR(jstr(r, "pmu.page_walk_cycles"), names[i]);
		CHECK_EQ_STR(jstr(r, "pmu.page_walk_event"),
			     "DTLB_LOAD_MISSES.WALK_PENDING");
		CHECK_EQ_INT(jint(r, "pmu.perf_event_paranoid"), 2);
		json_object_put(r);
	}
}

/* No known walk event: AMD, no CPUID; no paranoid file: absent. */
static void test_unknown(void)
{
	struct fake_sys amd = { .cpu_vendor = "AuthenticAMD",
				.cpu_eax1 = 0x00a10f11 }; /* Zen 4 */
	struct fake_sys none = { .cpuid_err = -ENOTSUP };
	struct json_object *r = probe_fixture("vps-thp-always", &amd);

	CHECK(r != NULL);
	if (r) {
		CHECK_EQ_STR(jstr(r, "pmu.dtlb_load_misses"), "ok");
		CHECK_EQ_STR(jstr(r, "pmu.page_walk_cycles"),
			     "unknown (no page-walk-cycles event known for CPU 'AuthenticAMD' family 25 model 17 (AMD Zen counts table walks, not their cycles))");
		CHECK_EQ_STR(jstr(r, "pmu.perf_event_paranoid"),
			     "unknown (absent)");
		json_object_put(r);
	}
	r = probe_fixture("vps-thp-always", &none);
	CHECK(r != NULL);
	if (r) {
		CHECK_EQ_STR(jstr(r, "pmu.page_walk_event"),
			     "unknown (no CPUID: no raw event known)");
		json_object_put(r);
	}
}

static const char *table_vendor;
static uint32_t table_eax1;

static int table_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t ret[4])
{
	(void)subleaf;
	memset(ret, 0, 4 * sizeof(ret[0]));
	if (leaf == 0) {
		memcpy(&ret[1], table_vendor, 4);
		memcpy(&ret[3], table_vendor + 4, 4);
		memcpy(&ret[2], table_vendor + 8, 4);
	} else if (leaf == 1) {
		ret[0] = table_eax1;
	}
	return 0;
}

/* The table: family/model decoding and the two event codes. */
static void test_table(void)
{
	static const struct {
		const char *vendor;
		uint32_t eax1;
		uint64_t config; /* 0: no event known */
	} cases[] = {
		{ "GenuineIntel", 0x000306c3, 0x1008 }, /* Haswell 0x3c */
		{ "GenuineIntel", 0x00050654, 0x1008 }, /* Skylake-SP 0x55 */
		{ "GenuineIntel", 0x000606a6, 0x1008 }, /* Ice Lake-SP 0x6a */
		{ "GenuineIntel", 0x000806f8, 0x1012 }, /* Sapphire R. 0x8f */
		{ "GenuineIntel", 0x000c06f2, 0x1012 }, /* Emerald R. 0xcf */
		{ "GenuineIntel", 0x000906a3, 0 }, /* Alder Lake: hybrid */
		{ "GenuineIntel", 0x00000f41, 0 }, /* Pentium 4 */
		{ "AuthenticAMD", 0x00a10f11, 0 }, /* Zen 4 */
		{ "AuthenticAMD", 0x000306c3, 0 }, /* Intel's numbers, AMD */
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct pmu_event ev = { 0 };
		char why[160] = "";
		int r;

		table_vendor = cases[i].vendor;
		table_eax1 = cases[i].eax1;
		r = pmu_walk_cycles_event(table_cpuid, &ev, why, sizeof(why));
		if (cases[i].config) {
			CHECK_(r == 0 && ev.type == PERF_TYPE_RAW &&
				       ev.config == cases[i].config,
			       "%s %#x: r %d config %#llx", cases[i].vendor,
			       cases[i].eax1, r, (unsigned long long)ev.config);
		} else {
			CHECK_EQ_INT(r, -ENOENT);
			CHECK_(strstr(why, cases[i].vendor) != NULL, "why: %s",
			       why);
		}
	}
}

int main(void)
{
	test_real();
	test_substituted();
	test_unknown();
	test_table();
	return check_summary();
}
