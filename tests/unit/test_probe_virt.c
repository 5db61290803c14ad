/* SPDX-License-Identifier: MIT */
/* The virt and labels sections: fixture trees, built trees, the real host. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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

/* The dmi.* items in report order, chassis_type_name after chassis_type. */
static const char *const dmi_keys[] = {
	"sys_vendor",	"product_name",	 "product_version",   "board_vendor",
	"board_name",	"bios_vendor",	 "bios_version",      "chassis_vendor",
	"chassis_type", "chassis_type_name", "chassis_asset_tag",
};
#define NDMI (sizeof(dmi_keys) / sizeof(dmi_keys[0]))

static const char *vstr(struct json_object *r, const char *path)
{
	char full[256];

	snprintf(full, sizeof(full), "virt.%s", path);
	return jstr(r, full);
}

/* JSON null (present but null), not a missing key. */
static bool is_null(struct json_object *r, const char *path)
{
	return !jget(r, path) && !strcmp(jstr(r, path), "");
}

static bool is_type(struct json_object *r, const char *path, json_type t)
{
	return json_object_is_type(jget(r, path), t);
}

static void check_dmi(struct json_object *r, const char *const exp[NDMI])
{
	for (size_t i = 0; i < NDMI; i++) {
		char path[128];

		snprintf(path, sizeof(path), "virt.dmi.%s", dmi_keys[i]);
		CHECK_(!strcmp(jstr(r, path), exp[i]), "%s == \"%s\", expected \"%s\"",
		       path, jstr(r, path), exp[i]);
	}
}

static void check_markers(struct json_object *r, size_t n,
			  const char *const exp[])
{
	struct json_object *m = jget(r, "virt.container.markers");

	CHECK(json_object_is_type(m, json_type_array));
	CHECK_EQ_INT(json_object_array_length(m), n);
	for (size_t i = 0; i < n; i++) {
		char path[64];

		snprintf(path, sizeof(path), "virt.container.markers[%zu]", i);
		CHECK_EQ_STR(jstr(r, path), exp[i]);
	}
}

static void check_label(struct json_object *r, const char *label,
			const char *value, const char *source)
{
	char path[64];

	snprintf(path, sizeof(path), "labels.%s.value", label);
	CHECK_EQ_STR(jstr(r, path), value);
	snprintf(path, sizeof(path), "labels.%s.source", label);
	CHECK_EQ_STR(jstr(r, path), source);
}

static void check_cpuid_kvm(struct json_object *r)
{
	CHECK_EQ_STR(vstr(r, "cpuid.hypervisor_bit"), "true");
	CHECK(is_type(r, "virt.cpuid.hypervisor_bit", json_type_boolean));
	CHECK_EQ_STR(vstr(r, "cpuid.signature"), "KVMKVMKVM");
	CHECK_EQ_STR(vstr(r, "cpuid.hypervisor"), "kvm");
}

static void test_kvm_guest(void)
{
	static const char *const dmi[NDMI] = {
		"QEMU",
		"Standard PC (Q35 + ICH9, 2009)",
		"pc-q35-7.2",
		"unknown (absent)",
		"unknown (absent)",
		"SeaBIOS",
		"1.16.2-debian-1.16.2-1",
		"QEMU",
		"1",
		"Other",
		"",
	};
	struct fake_sys fs = { 0 };
	struct json_object *r = probe_fixture("kvm-guest", &fs);

	CHECK(r != NULL);
	if (!r)
		return;
	check_cpuid_kvm(r);
	CHECK_EQ_STR(vstr(r, "cpuinfo_hypervisor_flag"), "true");
	CHECK(is_type(r, "virt.cpuinfo_hypervisor_flag", json_type_boolean));
	CHECK_EQ_STR(vstr(r, "sys_hypervisor_type"), "unknown (absent)");
	CHECK_EQ_STR(vstr(r, "dmi.present"), "true");
	check_dmi(r, dmi);
	/* An empty DMI file is the empty string, not null. */
	CHECK(is_type(r, "virt.dmi.chassis_asset_tag", json_type_string));
	CHECK_EQ_STR(vstr(r, "vm.name"), "kvm");
	CHECK_EQ_STR(vstr(r, "vm.source"), "cpuid");
	CHECK_EQ_STR(vstr(r, "container.name"), "none");
	check_markers(r, 0, NULL);
	check_label(r, "provider", "qemu-kvm", "dmi");
	check_label(r, "instance_type",
		    "unknown (not given; DMI does not carry the instance type on qemu-kvm)",
		    "none");
	check_label(r, "region", "unknown (not given)", "none");
	json_object_put(r);
}

static void test_vps_thp_always(void)
{
	static const char *const dmi[NDMI] = {
		"DigitalOcean",	    "Droplet",	"20171212",
		"unknown (absent)", "unknown (absent)",
		"DigitalOcean",	    "20171212", "QEMU",
		"1",		    "Other",	"",
	};
	static const char *const markers[] = { "/.dockerenv" };
	struct fake_sys fs = { .setup_err = -EPERM };
	struct json_object *r = probe_fixture("vps-thp-always", &fs);

	CHECK(r != NULL);
	if (!r)
		return;
	check_cpuid_kvm(r);
	CHECK_EQ_STR(vstr(r, "cpuinfo_hypervisor_flag"), "true");
	CHECK_EQ_STR(vstr(r, "sys_hypervisor_type"), "unknown (absent)");
	CHECK_EQ_STR(vstr(r, "dmi.present"), "true");
	check_dmi(r, dmi);
	CHECK_EQ_STR(vstr(r, "vm.name"), "kvm");
	CHECK_EQ_STR(vstr(r, "vm.source"), "cpuid");
	/* Two layers: KVM underneath, docker on top. */
	CHECK_EQ_STR(vstr(r, "container.name"), "docker");
	check_markers(r, 1, markers);
	check_label(r, "provider", "digitalocean", "dmi");
	check_label(r, "instance_type",
		    "unknown (not given; DMI does not carry the instance type on digitalocean)",
		    "none");
	check_label(r, "region", "unknown (not given)", "none");
	json_object_put(r);
}

static void test_baremetal_numa(void)
{
	static const char *const dmi[NDMI] = {
		"Dell Inc.", "PowerEdge R650", "",
		"Dell Inc.", "0Y2G81",	       "Dell Inc.",
		"1.8.2",     "Dell Inc.",      "23",
		"Rack Mount Chassis", "",
	};
	struct fake_sys fs = { .hypervisor_bit = -1 };
	struct json_object *r = probe_fixture("baremetal-numa", &fs);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_STR(vstr(r, "cpuid.hypervisor_bit"), "false");
	CHECK(is_null(r, "virt.cpuid.signature"));
	CHECK(is_null(r, "virt.cpuid.hypervisor"));
	CHECK_EQ_STR(vstr(r, "cpuinfo_hypervisor_flag"), "false");
	CHECK_EQ_STR(vstr(r, "sys_hypervisor_type"), "unknown (absent)");
	CHECK_EQ_STR(vstr(r, "dmi.present"), "true");
	check_dmi(r, dmi);
	CHECK_EQ_STR(vstr(r, "vm.name"), "none");
	CHECK_EQ_STR(vstr(r, "vm.source"), "none");
	CHECK_EQ_STR(vstr(r, "container.name"), "none");
	check_markers(r, 0, NULL);
	check_label(r, "provider",
		    "unknown (not given; DMI sys_vendor 'Dell Inc.' names no known provider)",
		    "none");
	check_label(r, "instance_type",
		    "unknown (not given; DMI names no known provider)", "none");
	check_label(r, "region", "unknown (not given)", "none");
	json_object_put(r);
}

static void test_old_kernel(void)
{
	static const char *const dmi[NDMI] = {
		"Amazon EC2", "m5.large",   "",		  "Amazon EC2",
		"",	      "Amazon EC2", "1.0",	  "Amazon EC2",
		"1",	      "Other",	    "Amazon EC2",
	};
	struct fake_sys fs = { .probe_err = -EINVAL };
	struct json_object *r = probe_fixture("old-kernel", &fs);

	CHECK(r != NULL);
	if (!r)
		return;
	check_cpuid_kvm(r);
	CHECK_EQ_STR(vstr(r, "cpuinfo_hypervisor_flag"), "true");
	CHECK_EQ_STR(vstr(r, "sys_hypervisor_type"), "unknown (absent)");
	CHECK_EQ_STR(vstr(r, "dmi.present"), "true");
	check_dmi(r, dmi);
	CHECK_EQ_STR(vstr(r, "vm.name"), "kvm");
	CHECK_EQ_STR(vstr(r, "vm.source"), "cpuid");
	CHECK_EQ_STR(vstr(r, "container.name"), "none");
	check_markers(r, 0, NULL);
	check_label(r, "provider", "aws", "dmi");
	check_label(r, "instance_type", "m5.large", "dmi");
	check_label(r, "region", "unknown (not given)", "none");
	json_object_put(r);
}

static void test_malformed(void)
{
	static const char *const dmi[NDMI] = {
		"",
		"unknown (malformed: /sys/class/dmi/id/product_name has non-printable bytes)",
		"unknown (absent)",
		"unknown (absent)",
		"unknown (absent)",
		"unknown (malformed: /sys/class/dmi/id/bios_vendor has non-printable bytes)",
		"1.16.2-deb",
		"",
		"x",
		"unknown (malformed: chassis_type 'x' is not a number)",
		"unknown (absent)",
	};
	struct fake_sys fs = { 0 };
	struct json_object *r = probe_fixture("malformed", &fs);

	CHECK(r != NULL);
	if (!r)
		return;
	check_cpuid_kvm(r);
	CHECK_EQ_STR(vstr(r, "cpuinfo_hypervisor_flag"),
		     "unknown (malformed: /proc/cpuinfo empty)");
	CHECK_EQ_STR(vstr(r, "sys_hypervisor_type"), "unknown (absent)");
	CHECK_EQ_STR(vstr(r, "dmi.present"), "true");
	check_dmi(r, dmi);
	CHECK_EQ_STR(vstr(r, "vm.name"), "kvm");
	CHECK_EQ_STR(vstr(r, "vm.source"), "cpuid");
	CHECK_EQ_STR(vstr(r, "container.name"),
		     "unknown (malformed: /proc/1/cgroup is not hierarchy:controllers:path lines)");
	check_markers(r, 0, NULL);
	check_label(r, "provider",
		    "unknown (not given; DMI sys_vendor '' names no known provider)",
		    "none");
	check_label(r, "instance_type",
		    "unknown (not given; DMI names no known provider)", "none");
	check_label(r, "region", "unknown (not given)", "none");
	json_object_put(r);
}

/* Labels given by flag or config win over DMI (which says aws, m5.large). */
static void test_given_labels(void)
{
	struct probe_opts opts = {
		.provider = { "myprov", LABEL_FLAG },
		.instance_type = { "c6.xlarge", LABEL_CONFIG },
		.region = { "eu-central-1", LABEL_FLAG },
	};
	struct probe_opts cfg = {
		.region = { "nyc3", LABEL_CONFIG },
	};
	struct json_object *r;

	r = probe_fixture_opts("old-kernel", NULL, &opts);
	CHECK(r != NULL);
	if (r) {
		check_label(r, "provider", "myprov", "flag");
		check_label(r, "instance_type", "c6.xlarge", "config");
		check_label(r, "region", "eu-central-1", "flag");
		json_object_put(r);
	}
	r = probe_fixture_opts("vps-thp-always", NULL, &cfg);
	CHECK(r != NULL);
	if (r) {
		check_label(r, "provider", "digitalocean", "dmi");
		check_label(r, "region", "nyc3", "config");
		json_object_put(r);
	}
}

/* The CPUID signature table, with everything else from kvm-guest. */
static void test_signatures(void)
{
	static const struct {
		const char *sig; /* 12 bytes */
		const char *signature, *hypervisor, *vm, *vm_source;
	} cases[] = {
		{ "Microsoft Hv", "Microsoft Hv", "hyperv", "hyperv", "cpuid" },
		{ "VMwareVMware", "VMwareVMware", "vmware", "vmware", "cpuid" },
		{ "XenVMMXenVMM", "XenVMMXenVMM", "xen", "xen", "cpuid" },
		{ "bhyve bhyve ", "bhyve bhyve ", "bhyve", "bhyve", "cpuid" },
		{ "TCGTCGTCGTCG", "TCGTCGTCGTCG", "qemu-tcg", "qemu-tcg",
		  "cpuid" },
		{ " lrpepyh  vr", " lrpepyh  vr", "parallels", "parallels",
		  "cpuid" },
		{ "ACRNACRNACRN", "ACRNACRNACRN", "acrn", "acrn", "cpuid" },
		{ "QNXQVMBSQG\0\0", "QNXQVMBSQG", "qnx", "qnx", "cpuid" },
		{ "VBoxVBoxVBox", "VBoxVBoxVBox", "virtualbox", "virtualbox",
		  "cpuid" },
		{ "ABCDEFGHIJKL", "ABCDEFGHIJKL", "other", "other", "cpuid" },
		{ "\0\0\0\0\0\0\0\0\0\0\0\0", "", "other", "other", "cpuid" },
		/* Unreadable signature: DMI (QEMU) names the VM instead. */
		{ "KVM\0KVMKVM\0\0\0",
		  "unknown (malformed: non-printable byte in CPUID 0x40000000 signature)",
		  "unknown (malformed: non-printable byte in CPUID 0x40000000 signature)",
		  "qemu", "dmi" },
		{ "KVMKVM\x01KVM\0\0",
		  "unknown (malformed: non-printable byte in CPUID 0x40000000 signature)",
		  "unknown (malformed: non-printable byte in CPUID 0x40000000 signature)",
		  "qemu", "dmi" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fake_sys fs = { .hv_signature = cases[i].sig };
		struct json_object *r = probe_fixture("kvm-guest", &fs);

		CHECK(r != NULL);
		if (!r)
			continue;
		CHECK_EQ_STR(vstr(r, "cpuid.hypervisor_bit"), "true");
		CHECK_EQ_STR(vstr(r, "cpuid.signature"), cases[i].signature);
		CHECK_EQ_STR(vstr(r, "cpuid.hypervisor"), cases[i].hypervisor);
		CHECK_EQ_STR(vstr(r, "vm.name"), cases[i].vm);
		CHECK_EQ_STR(vstr(r, "vm.source"), cases[i].vm_source);
		json_object_put(r);
	}
}

/* No CPUID (non-x86), or a hidden hypervisor bit: DMI names the VM. */
static void test_cpuid_fallbacks(void)
{
	struct fake_sys nocpuid = { .cpuid_err = -ENOTSUP };
	struct fake_sys hidden = { .hypervisor_bit = -1 };
	struct json_object *r;

	r = probe_fixture("kvm-guest", &nocpuid);
	CHECK(r != NULL);
	if (r) {
		CHECK_EQ_STR(vstr(r, "cpuid.hypervisor_bit"),
			     "unknown (not supported)");
		CHECK_EQ_STR(vstr(r, "cpuid.signature"),
			     "unknown (not supported)");
		CHECK_EQ_STR(vstr(r, "cpuid.hypervisor"),
			     "unknown (not supported)");
		CHECK_EQ_STR(vstr(r, "vm.name"), "qemu");
		CHECK_EQ_STR(vstr(r, "vm.source"), "dmi");
		json_object_put(r);
	}
	r = probe_fixture("kvm-guest", &hidden);
	CHECK(r != NULL);
	if (r) {
		CHECK_EQ_STR(vstr(r, "cpuid.hypervisor_bit"), "false");
		CHECK(is_null(r, "virt.cpuid.signature"));
		CHECK(is_null(r, "virt.cpuid.hypervisor"));
		CHECK_EQ_STR(vstr(r, "vm.name"), "qemu");
		CHECK_EQ_STR(vstr(r, "vm.source"), "dmi");
		json_object_put(r);
	}
	/* Bare metal without CPUID: DMI is readable and names no VM. */
	r = probe_fixture("baremetal-numa", &nocpuid);
	CHECK(r != NULL);
	if (r) {
		CHECK_EQ_STR(vstr(r, "vm.name"), "none");
		CHECK_EQ_STR(vstr(r, "vm.source"), "none");
		json_object_put(r);
	}
}

/* -------- trees built by the test -------- */

static char tree[64];

static void tree_new(void)
{
	snprintf(tree, sizeof(tree), "/tmp/fbvirtXXXXXX");
	if (!mkdtemp(tree)) {
		perror("mkdtemp");
		exit(1);
	}
}

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void tree_free(void)
{
	nftw(tree, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Writes tree/rel (creating directories); len -1 means strlen(data). */
static void put(const char *rel, const char *data, ssize_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tree, rel);
	for (char *p = path + strlen(tree) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fwrite(data, 1, len < 0 ? strlen(data) : (size_t)len, f);
	fclose(f);
}

static void put_dmi(const char *field, const char *value)
{
	char rel[128], line[256];

	snprintf(rel, sizeof(rel), "sys/class/dmi/id/%s", field);
	snprintf(line, sizeof(line), "%s\n", value);
	put(rel, line, -1);
}

static struct json_object *run_tree(const struct fake_sys *fs)
{
	struct probe_opts opts = { .root = tree };

	return probe_fixture_opts(NULL, fs, &opts);
}

static void test_providers(void)
{
	struct fake_sys hv = { .hv_signature = "Microsoft Hv" };
	struct fake_sys xen = { .hv_signature = "XenVMMXenVMM" };
	struct fake_sys clear = { .hypervisor_bit = -1 };
	struct json_object *r;

	/* Azure: three DMI fields together. */
	tree_new();
	put_dmi("sys_vendor", "Microsoft Corporation");
	put_dmi("product_name", "Virtual Machine");
	put_dmi("chassis_asset_tag", "7783-7084-3265-9085-8269-3286-77");
	put_dmi("chassis_type", "3");
	r = run_tree(&hv);
	CHECK(r != NULL);
	if (r) {
		CHECK_EQ_STR(vstr(r, "cpuid.hypervisor"), "hyperv");
		CHECK_EQ_STR(vstr(r, "vm.name"), "hyperv");
		CHECK_EQ_STR(vstr(r, "vm.source"), "cpuid");
		CHECK_EQ_STR(vstr(r, "dmi.present"), "true");
		CHECK_EQ_STR(vstr(r, "dmi.bios_vendor"), "unknown (absent)");
		CHECK_EQ_STR(vstr(r, "dmi.chassis_type_name"), "Desktop");
		check_label(r, "provider", "azure", "dmi");
		check_label(r, "instance_type",
			    "unknown (not given; DMI does not carry the instance type on azure)",
			    "none");
		json_object_put(r);
	}
	tree_free();

	/* Hyper-V elsewhere: the VM from DMI, no provider. */
	tree_new();
	put_dmi("sys_vendor", "Microsoft Corporation");
	put_dmi("product_name", "Virtual Machine");
	put_dmi("chassis_type", "17");
	r = run_tree(&clear);
	CHECK(r != NULL);
	if (r) {
		CHECK_EQ_STR(vstr(r, "vm.name"), "hyperv");
		CHECK_EQ_STR(vstr(r, "vm.source"), "dmi");
		CHECK_EQ_STR(vstr(r, "dmi.chassis_type_name"),
			     "Main Server Chassis");
		check_label(r, "provider",
			    "unknown (not given; DMI sys_vendor "
			    "'Microsoft Corporation' names no known provider)",
			    "none");
		json_object_put(r);
	}
	tree_free();

	/* Oracle Cloud VMs carry QEMU DMI plus their asset tag. */
	tree_new();
	put_dmi("sys_vendor", "QEMU");
	put_dmi("product_name", "Standard PC (i440FX + PIIX, 1996)");
	put_dmi("chassis_asset_tag", "OracleCloud.com");
	put_dmi("chassis_type", "99");
	r = run_tree(NULL);
	CHECK(r != NULL);
	if (r) {
		CHECK_EQ_STR(vstr(r, "dmi.chassis_type_name"),
			     "unknown (no SMBIOS name for chassis type 99)");
		check_label(r, "provider", "oci", "dmi");
		json_object_put(r);
	}
	tree_free();

	/* Xen-era EC2: only bios_version tells; the hypervisor is Xen. */
	tree_new();
	put_dmi("sys_vendor", "Xen");
	put_dmi("product_name", "HVM domU");
	put_dmi("bios_vendor", "Xen");
	put_dmi("bios_version", "4.11.amazon");
	put("sys/hypervisor/type", "xen\n", -1);
	r = run_tree(&xen);
	CHECK(r != NULL);
	if (r) {
		CHECK_EQ_STR(vstr(r, "sys_hypervisor_type"), "xen");
		CHECK_EQ_STR(vstr(r, "vm.name"), "xen");
		check_label(r, "provider", "aws", "dmi");
		check_label(r, "instance_type",
			    "unknown (not given; DMI does not carry the instance type on aws)",
			    "none");
		json_object_put(r);
	}
	tree_free();

	/* EC2 bare metal: no hypervisor, same vendor strings. */
	tree_new();
	put_dmi("sys_vendor", "Amazon EC2");
	put_dmi("bios_vendor", "Amazon EC2");
	put_dmi("product_name", "m5.metal");
	r = run_tree(&clear);
	CHECK(r != NULL);
	if (r) {
		CHECK_EQ_STR(vstr(r, "vm.name"), "none");
		CHECK_EQ_STR(vstr(r, "vm.source"), "none");
		check_label(r, "provider", "aws", "dmi");
		check_label(r, "instance_type", "m5.metal", "dmi");
		json_object_put(r);
	}
	tree_free();

	/* Google Compute Engine with the bit hidden. */
	tree_new();
	put_dmi("sys_vendor", "Google");
	put_dmi("product_name", "Google Compute Engine");
	r = run_tree(&clear);
	CHECK(r != NULL);
	if (r) {
		CHECK_EQ_STR(vstr(r, "vm.name"), "kvm");
		CHECK_EQ_STR(vstr(r, "vm.source"), "dmi");
		check_label(r, "provider", "gcp", "dmi");
		json_object_put(r);
	}
	tree_free();

	/* Hetzner Cloud, and a VMware guest. */
	tree_new();
	put_dmi("sys_vendor", "Hetzner");
	put_dmi("product_name", "vServer");
	r = run_tree(NULL);
	CHECK(r != NULL);
	if (r) {
		check_label(r, "provider", "hetzner", "dmi");
		json_object_put(r);
	}
	tree_free();
	tree_new();
	put_dmi("sys_vendor", "VMware, Inc.");
	put_dmi("product_name", "VMware Virtual Platform");
	r = run_tree(&clear);
	CHECK(r != NULL);
	if (r) {
		CHECK_EQ_STR(vstr(r, "vm.name"), "vmware");
		check_label(r, "provider", "vmware", "dmi");
		json_object_put(r);
	}
	tree_free();
}

static void test_containers(void)
{
	struct fake_sys nocpuid = { .cpuid_err = -ENOTSUP };
	struct json_object *r;

	/* LXC with systemd inside; no DMI, no CPUID, no cpuinfo. */
	tree_new();
	put("run/systemd/container", "lxc\n", -1);
	put("proc/1/cgroup",
	    "12:pids:/lxc.payload.c1/init.scope\n"
	    "1:name=systemd:/lxc.payload.c1/init.scope\n"
	    "0::/lxc.payload.c1/init.scope\n",
	    -1);
	r = run_tree(&nocpuid);
	CHECK(r != NULL);
	if (r) {
		static const char *const markers[] = {
			"/run/systemd/container: lxc",
			"/proc/1/cgroup: lxc",
		};

		CHECK_EQ_STR(vstr(r, "container.name"), "lxc");
		check_markers(r, 2, markers);
		CHECK_EQ_STR(vstr(r, "cpuinfo_hypervisor_flag"),
			     "unknown (absent)");
		CHECK_EQ_STR(vstr(r, "dmi.present"), "false");
		for (size_t i = 0; i < NDMI; i++) {
			char path[64];

			snprintf(path, sizeof(path), "dmi.%s", dmi_keys[i]);
			CHECK_EQ_STR(vstr(r, path), "unknown (absent)");
		}
		CHECK_EQ_STR(vstr(r, "vm.name"),
			     "unknown (not supported: no CPUID and no readable DMI)");
		CHECK_EQ_STR(vstr(r, "vm.source"), "none");
		check_label(r, "provider", "unknown (not given; DMI absent)",
			    "none");
		check_label(r, "instance_type",
			    "unknown (not given; DMI absent)", "none");
		json_object_put(r);
	}
	tree_free();

	/* A Kubernetes pod on the docker runtime; cpuinfo without the flag. */
	tree_new();
	put(".dockerenv", "", 0);
	put("proc/1/cgroup",
	    "12:pids:/kubepods/burstable/pod1234/abcd\n"
	    "1:name=systemd:/kubepods/burstable/pod1234/abcd\n"
	    "0::/\n",
	    -1);
	put("proc/cpuinfo",
	    /* only the first flags line counts, and only whole words */
	    "processor\t: 0\nflags\t\t: fpu vme hypervisorx\n"
	    "vmx flags\t: hypervisor\n\n"
	    "processor\t: 1\nflags\t\t: fpu hypervisor\n",
	    -1);
	r = run_tree(NULL);
	CHECK(r != NULL);
	if (r) {
		static const char *const markers[] = {
			"/.dockerenv",
			"/proc/1/cgroup: kubepods",
		};

		CHECK_EQ_STR(vstr(r, "container.name"), "kubernetes");
		check_markers(r, 2, markers);
		CHECK_EQ_STR(vstr(r, "cpuinfo_hypervisor_flag"), "false");
		json_object_put(r);
	}
	tree_free();

	/* Podman; an arm64 cpuinfo (no flags line). */
	tree_new();
	put("run/.containerenv", "engine=\"podman-4.3.1\"\n", -1);
	put("proc/1/cgroup", "0::/machine.slice/libpod-0123.scope/container\n",
	    -1);
	put("proc/cpuinfo", "processor\t: 0\nFeatures\t: fp asimd evtstrm\n",
	    -1);
	r = run_tree(NULL);
	CHECK(r != NULL);
	if (r) {
		static const char *const markers[] = {
			"/run/.containerenv",
			"/proc/1/cgroup: libpod",
		};

		CHECK_EQ_STR(vstr(r, "container.name"), "podman");
		check_markers(r, 2, markers);
		CHECK_EQ_STR(vstr(r, "cpuinfo_hypervisor_flag"),
			     "unknown (absent: no flags line in /proc/cpuinfo)");
		json_object_put(r);
	}
	tree_free();

	/* Docker on cgroup v1 without /.dockerenv. */
	tree_new();
	put("proc/1/cgroup",
	    "12:memory:/docker/0123abcd\n11:cpu,cpuacct:/docker/0123abcd\n", -1);
	r = run_tree(NULL);
	CHECK(r != NULL);
	if (r) {
		static const char *const markers[] = {
			"/proc/1/cgroup: docker",
		};

		CHECK_EQ_STR(vstr(r, "container.name"), "docker");
		check_markers(r, 1, markers);
		json_object_put(r);
	}
	tree_free();

	/* WSL2; /proc/1/cgroup absent is not an error. */
	tree_new();
	put("proc/sys/kernel/osrelease",
	    "5.15.153.1-microsoft-standard-WSL2\n", -1);
	r = run_tree(NULL);
	CHECK(r != NULL);
	if (r) {
		static const char *const markers[] = {
			"/proc/sys/kernel/osrelease: microsoft",
		};

		CHECK_EQ_STR(vstr(r, "container.name"), "wsl");
		check_markers(r, 1, markers);
		json_object_put(r);
	}
	tree_free();

	/* A marker still names the container when the cgroup file is bad. */
	tree_new();
	put(".dockerenv", "", 0);
	put("proc/1/cgroup", "\0\0\0", 3);
	r = run_tree(NULL);
	CHECK(r != NULL);
	if (r) {
		static const char *const markers[] = { "/.dockerenv" };

		CHECK_EQ_STR(vstr(r, "container.name"), "docker");
		check_markers(r, 1, markers);
		json_object_put(r);
	}
	tree_free();
}

/* -------- the real machine, checked against independent reads -------- */

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
		CHECK_EQ_STR(vstr(r, "cpuid.hypervisor_bit"),
			     bit ? "true" : "false");
		if (bit) {
			char sig[13] = { 0 };

			__cpuid(0x40000000, a, b, c, d);
			memcpy(sig, &b, 4);
			memcpy(sig + 4, &c, 4);
			memcpy(sig + 8, &d, 4);
			CHECK_EQ_STR(vstr(r, "cpuid.signature"), sig);
			snprintf(buf, sizeof(buf), "%s",
				 vstr(r, "cpuid.hypervisor"));
			CHECK_EQ_STR(vstr(r, "vm.name"), buf);
			CHECK_EQ_STR(vstr(r, "vm.source"), "cpuid");
		} else {
			CHECK(is_null(r, "virt.cpuid.signature"));
		}
	}
#else
	CHECK_EQ_STR(vstr(r, "cpuid.hypervisor_bit"), "unknown (not supported)");
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
		CHECK_EQ_STR(vstr(r, "cpuinfo_hypervisor_flag"), expect);
	}

	err = read_text("/sys/hypervisor/type", buf, sizeof(buf));
	if (err == -ENOENT)
		CHECK_EQ_STR(vstr(r, "sys_hypervisor_type"), "unknown (absent)");
	else if (!err && *buf)
		CHECK_EQ_STR(vstr(r, "sys_hypervisor_type"), buf);

	/* DMI, each file read again here. */
	dmi = stat("/sys/class/dmi/id", &st) == 0 && S_ISDIR(st.st_mode);
	CHECK_EQ_STR(vstr(r, "dmi.present"), dmi ? "true" : "false");
	for (size_t i = 0; i < NDMI; i++) {
		char path[128], key[64];

		if (!strcmp(dmi_keys[i], "chassis_type_name"))
			continue;
		snprintf(path, sizeof(path), "/sys/class/dmi/id/%s",
			 dmi_keys[i]);
		snprintf(key, sizeof(key), "dmi.%s", dmi_keys[i]);
		err = read_text(path, buf, sizeof(buf));
		if (err == -ENOENT || err == -ENOTDIR)
			CHECK_EQ_STR(vstr(r, key), "unknown (absent)");
		else if (!err && strlen(buf) < 256)
			CHECK_EQ_STR(vstr(r, key), buf);
		else
			CHECK(!strncmp(vstr(r, key), "unknown (", 9));
	}
	if (!dmi) {
		CHECK_EQ_STR(vstr(r, "dmi.chassis_type_name"),
			     "unknown (absent)");
		if (!bit)
			CHECK(!strcmp(vstr(r, "vm.name"), "none") ||
			      !strncmp(vstr(r, "vm.name"), "unknown (", 9));
		check_label(r, "provider", "unknown (not given; DMI absent)",
			    "none");
		check_label(r, "instance_type",
			    "unknown (not given; DMI absent)", "none");
	} else {
		CHECK(!strcmp(jstr(r, "labels.provider.source"), "dmi") ||
		      !strcmp(jstr(r, "labels.provider.source"), "none"));
	}
	check_label(r, "region", "unknown (not given)", "none");

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
			CHECK_EQ_STR(vstr(r, "container.name"), "none");
		else
			CHECK(strcmp(vstr(r, "container.name"), "none") != 0);
	}
	json_object_put(r);
}

int main(void)
{
	test_kvm_guest();
	test_vps_thp_always();
	test_baremetal_numa();
	test_old_kernel();
	test_malformed();
	test_given_labels();
	test_signatures();
	test_cpuid_fallbacks();
	test_providers();
	test_containers();
	test_real_machine();
	return check_summary();
}
