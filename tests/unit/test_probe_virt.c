/* SPDX-License-Identifier: MIT */
/* The virt and labels sections over fixture trees and built trees, one
 * table of cases; test_probe_virt_real.c checks the running machine. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>


#include "check.h"
#include "cleanup.h"
#include "probe_test.h"

static const char *vstr(struct json_object *r, const char *path)
{
	char full[256];

	snprintf(full, sizeof(full), "virt.%s", path);
	return jstr(r, full);
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

/* -------- the cases: a fixture tree or files, and what virt says -------- */

/* One item below "virt.": its string, JSON null, or its JSON type. */
enum want_kind { W_EQ, W_NULL, W_BOOL, W_STRING };
struct want {
	const char *path, *str;
	enum want_kind kind;
};
#define EQ(p, s) { p, s, W_EQ }
#define ISNULL(p) { p, NULL, W_NULL }
#define TYPED(p, k) { p, NULL, k }

struct file {
	const char *rel, *data;
	ssize_t len; /* 0: strlen(data) */
};
#define DMI(field, value) { "sys/class/dmi/id/" field, value "\n", 0 }

struct virt_case {
	const char *what; /* named on a failure */
	const char *tree; /* a fixture tree; NULL: a tree of these files */
	struct file files[6];
	struct fake_sys fs;
	bool kvm_cpuid; /* CPUID says KVM, as the fake does by default */
	const char *dmi[NDMI]; /* checked when dmi[0] is set */
	bool dmi_absent; /* every dmi.* item "unknown (absent)" */
	bool markers_checked; /* the list is markers[], no more */
	const char *markers[3];
	struct want wants[10];
	struct {
		const char *label, *value, *source;
	} labels[3];
};

#define NOT_SUPPORTED "unknown (not supported)"
#define NOT_GIVEN "unknown (not given)"
#define ABSENT "unknown (absent)"
#define BAD_SIGNATURE \
	"unknown (malformed: non-printable byte in CPUID 0x40000000 signature)"
#define NO_PROVIDER(vendor)                                                  \
	{ "provider",                                                         \
	  "unknown (not given; DMI sys_vendor '" vendor                       \
	  "' names no known provider)",                                       \
	  "none" },                                                           \
	{ "instance_type", "unknown (not given; DMI names no known provider)", \
	  "none" },                                                           \
	{ "region", NOT_GIVEN, "none" }
#define NO_INSTANCE_TYPE(provider)                                          \
	{ "instance_type",                                                   \
	  "unknown (not given; DMI does not carry the instance type on "      \
	  provider ")",                                                       \
	  "none" }

static const struct fake_sys nocpuid = { .cpuid_err = -ENOTSUP };
static const struct fake_sys clear = { .hypervisor_bit = -1 };

static const struct virt_case virt_cases[] = {
	{ .what = "kvm-guest", .tree = "kvm-guest", .kvm_cpuid = true,
	  .dmi = { "QEMU", "Standard PC (Q35 + ICH9, 2009)", "pc-q35-7.2",
		   ABSENT, ABSENT, "SeaBIOS", "1.16.2-debian-1.16.2-1", "QEMU",
		   "1", "Other", "" },
	  .markers_checked = true,
	  .wants = { EQ("cpuinfo_hypervisor_flag", "true"),
		     TYPED("cpuinfo_hypervisor_flag", W_BOOL),
		     EQ("sys_hypervisor_type", ABSENT), EQ("dmi.present", "true"),
		     /* An empty DMI file is the empty string, not null. */
		     TYPED("dmi.chassis_asset_tag", W_STRING),
		     EQ("vm.name", "kvm"), EQ("vm.source", "cpuid"),
		     EQ("container.name", "none") },
	  .labels = { { "provider", "qemu-kvm", "dmi" },
		      NO_INSTANCE_TYPE("qemu-kvm"),
		      { "region", NOT_GIVEN, "none" } } },
	{ .what = "vps-thp-always", .tree = "vps-thp-always",
	  .fs = { .setup_err = -EPERM }, .kvm_cpuid = true,
	  .dmi = { "DigitalOcean", "Droplet", "20171212", ABSENT, ABSENT,
		   "DigitalOcean", "20171212", "QEMU", "1", "Other", "" },
	  /* Two layers: KVM underneath, docker on top. */
	  .markers_checked = true, .markers = { "/.dockerenv" },
	  .wants = { EQ("cpuinfo_hypervisor_flag", "true"),
		     EQ("sys_hypervisor_type", ABSENT), EQ("dmi.present", "true"),
		     EQ("vm.name", "kvm"), EQ("vm.source", "cpuid"),
		     EQ("container.name", "docker") },
	  .labels = { { "provider", "digitalocean", "dmi" },
		      NO_INSTANCE_TYPE("digitalocean"),
		      { "region", NOT_GIVEN, "none" } } },
	{ .what = "baremetal-numa", .tree = "baremetal-numa", .fs = clear,
	  .dmi = { "Dell Inc.", "PowerEdge R650", "", "Dell Inc.", "0Y2G81",
		   "Dell Inc.", "1.8.2", "Dell Inc.", "23", "Rack Mount Chassis",
		   "" },
	  .markers_checked = true,
	  .wants = { EQ("cpuid.hypervisor_bit", "false"),
		     ISNULL("cpuid.signature"), ISNULL("cpuid.hypervisor"),
		     EQ("cpuinfo_hypervisor_flag", "false"),
		     EQ("sys_hypervisor_type", ABSENT), EQ("dmi.present", "true"),
		     EQ("vm.name", "none"), EQ("vm.source", "none"),
		     EQ("container.name", "none") },
	  .labels = { NO_PROVIDER("Dell Inc.") } },
	{ .what = "old-kernel", .tree = "old-kernel",
	  .fs = { .probe_err = -EINVAL }, .kvm_cpuid = true,
	  .dmi = { "Amazon EC2", "m5.large", "", "Amazon EC2", "", "Amazon EC2",
		   "1.0", "Amazon EC2", "1", "Other", "Amazon EC2" },
	  .markers_checked = true,
	  .wants = { EQ("cpuinfo_hypervisor_flag", "true"),
		     EQ("sys_hypervisor_type", ABSENT), EQ("dmi.present", "true"),
		     EQ("vm.name", "kvm"), EQ("vm.source", "cpuid"),
		     EQ("container.name", "none") },
	  .labels = { { "provider", "aws", "dmi" },
		      { "instance_type", "m5.large", "dmi" },
		      { "region", NOT_GIVEN, "none" } } },
	{ .what = "malformed", .tree = "malformed", .kvm_cpuid = true,
	  .dmi = { "",
		   "unknown (malformed: /sys/class/dmi/id/product_name has "
		   "non-printable bytes)",
		   ABSENT, ABSENT, ABSENT,
		   "unknown (malformed: /sys/class/dmi/id/bios_vendor has "
		   "non-printable bytes)",
		   "1.16.2-deb", "", "x",
		   "unknown (malformed: chassis_type 'x' is not a number)",
		   ABSENT },
	  .markers_checked = true,
	  .wants = { EQ("cpuinfo_hypervisor_flag",
			"unknown (malformed: /proc/cpuinfo empty)"),
		     EQ("sys_hypervisor_type", ABSENT), EQ("dmi.present", "true"),
		     EQ("vm.name", "kvm"), EQ("vm.source", "cpuid"),
		     EQ("container.name",
			"unknown (malformed: /proc/1/cgroup is not "
			"hierarchy:controllers:path lines)") },
	  .labels = { NO_PROVIDER("") } },

	/* No CPUID (non-x86), or a hidden hypervisor bit: DMI names the VM. */
	{ .what = "kvm-guest without CPUID", .tree = "kvm-guest", .fs = nocpuid,
	  .wants = { EQ("cpuid.hypervisor_bit", NOT_SUPPORTED),
		     EQ("cpuid.signature", NOT_SUPPORTED),
		     EQ("cpuid.hypervisor", NOT_SUPPORTED),
		     EQ("vm.name", "qemu"), EQ("vm.source", "dmi") } },
	{ .what = "kvm-guest, bit hidden", .tree = "kvm-guest", .fs = clear,
	  .wants = { EQ("cpuid.hypervisor_bit", "false"),
		     ISNULL("cpuid.signature"), ISNULL("cpuid.hypervisor"),
		     EQ("vm.name", "qemu"), EQ("vm.source", "dmi") } },
	/* Bare metal without CPUID: DMI is readable and names no VM. */
	{ .what = "baremetal-numa without CPUID", .tree = "baremetal-numa",
	  .fs = nocpuid,
	  .wants = { EQ("vm.name", "none"), EQ("vm.source", "none") } },

	/* Providers, in trees built of DMI files. */
	{ .what = "azure: three DMI fields together",
	  .files = { DMI("sys_vendor", "Microsoft Corporation"),
		     DMI("product_name", "Virtual Machine"),
		     DMI("chassis_asset_tag",
			 "7783-7084-3265-9085-8269-3286-77"),
		     DMI("chassis_type", "3") },
	  .fs = { .hv_signature = "Microsoft Hv" },
	  .wants = { EQ("cpuid.hypervisor", "hyperv"), EQ("vm.name", "hyperv"),
		     EQ("vm.source", "cpuid"), EQ("dmi.present", "true"),
		     EQ("dmi.bios_vendor", ABSENT),
		     EQ("dmi.chassis_type_name", "Desktop") },
	  .labels = { { "provider", "azure", "dmi" },
		      NO_INSTANCE_TYPE("azure") } },
	{ .what = "hyper-v elsewhere: the VM from DMI, no provider",
	  .files = { DMI("sys_vendor", "Microsoft Corporation"),
		     DMI("product_name", "Virtual Machine"),
		     DMI("chassis_type", "17") },
	  .fs = clear,
	  .wants = { EQ("vm.name", "hyperv"), EQ("vm.source", "dmi"),
		     EQ("dmi.chassis_type_name", "Main Server Chassis") },
	  .labels = { { "provider",
			"unknown (not given; DMI sys_vendor "
			"'Microsoft Corporation' names no known provider)",
			"none" } } },
	{ .what = "oracle cloud: QEMU DMI plus its asset tag",
	  .files = { DMI("sys_vendor", "QEMU"),
		     DMI("product_name", "Standard PC (i440FX + PIIX, 1996)"),
		     DMI("chassis_asset_tag", "OracleCloud.com"),
		     DMI("chassis_type", "99") },
	  .wants = { EQ("dmi.chassis_type_name",
			"unknown (no SMBIOS name for chassis type 99)") },
	  .labels = { { "provider", "oci", "dmi" } } },
	{ .what = "xen-era ec2: only bios_version tells",
	  .files = { DMI("sys_vendor", "Xen"), DMI("product_name", "HVM domU"),
		     DMI("bios_vendor", "Xen"),
		     DMI("bios_version", "4.11.amazon"),
		     { "sys/hypervisor/type", "xen\n", 0 } },
	  .fs = { .hv_signature = "XenVMMXenVMM" },
	  .wants = { EQ("sys_hypervisor_type", "xen"), EQ("vm.name", "xen") },
	  .labels = { { "provider", "aws", "dmi" }, NO_INSTANCE_TYPE("aws") } },
	{ .what = "ec2 bare metal: no hypervisor, same vendor strings",
	  .files = { DMI("sys_vendor", "Amazon EC2"),
		     DMI("bios_vendor", "Amazon EC2"),
		     DMI("product_name", "m5.metal") },
	  .fs = clear,
	  .wants = { EQ("vm.name", "none"), EQ("vm.source", "none") },
	  .labels = { { "provider", "aws", "dmi" },
		      { "instance_type", "m5.metal", "dmi" } } },
	{ .what = "google compute engine, bit hidden",
	  .files = { DMI("sys_vendor", "Google"),
		     DMI("product_name", "Google Compute Engine") },
	  .fs = clear,
	  .wants = { EQ("vm.name", "kvm"), EQ("vm.source", "dmi") },
	  .labels = { { "provider", "gcp", "dmi" } } },
	{ .what = "hetzner cloud",
	  .files = { DMI("sys_vendor", "Hetzner"),
		     DMI("product_name", "vServer") },
	  .labels = { { "provider", "hetzner", "dmi" } } },
	{ .what = "a vmware guest",
	  .files = { DMI("sys_vendor", "VMware, Inc."),
		     DMI("product_name", "VMware Virtual Platform") },
	  .fs = clear,
	  .wants = { EQ("vm.name", "vmware") },
	  .labels = { { "provider", "vmware", "dmi" } } },

	/* Containers, in trees built of their markers. */
	{ .what = "lxc with systemd inside; no DMI, no CPUID, no cpuinfo",
	  .files = { { "run/systemd/container", "lxc\n", 0 },
		     { "proc/1/cgroup",
		       "12:pids:/lxc.payload.c1/init.scope\n"
		       "1:name=systemd:/lxc.payload.c1/init.scope\n"
		       "0::/lxc.payload.c1/init.scope\n",
		       0 } },
	  .fs = nocpuid, .dmi_absent = true, .markers_checked = true,
	  .markers = { "/run/systemd/container: lxc", "/proc/1/cgroup: lxc" },
	  .wants = { EQ("container.name", "lxc"),
		     EQ("cpuinfo_hypervisor_flag", ABSENT),
		     EQ("dmi.present", "false"),
		     EQ("vm.name", "unknown (not supported: no CPUID and no "
				   "readable DMI)"),
		     EQ("vm.source", "none") },
	  .labels = { { "provider", "unknown (not given; DMI absent)", "none" },
		      { "instance_type", "unknown (not given; DMI absent)",
			"none" } } },
	{ .what = "a kubernetes pod on docker; cpuinfo without the flag",
	  .files = { { ".dockerenv", "", 0 },
		     { "proc/1/cgroup",
		       "12:pids:/kubepods/burstable/pod1234/abcd\n"
		       "1:name=systemd:/kubepods/burstable/pod1234/abcd\n"
		       "0::/\n",
		       0 },
		     /* only the first flags line counts, only whole words */
		     { "proc/cpuinfo",
		       "processor\t: 0\nflags\t\t: fpu vme hypervisorx\n"
		       "vmx flags\t: hypervisor\n\n"
		       "processor\t: 1\nflags\t\t: fpu hypervisor\n",
		       0 } },
	  .markers_checked = true,
	  .markers = { "/.dockerenv", "/proc/1/cgroup: kubepods" },
	  .wants = { EQ("container.name", "kubernetes"),
		     EQ("cpuinfo_hypervisor_flag", "false") } },
	{ .what = "podman; an arm64 cpuinfo (no flags line)",
	  .files = { { "run/.containerenv", "engine=\"podman-4.3.1\"\n", 0 },
		     { "proc/1/cgroup",
		       "0::/machine.slice/libpod-0123.scope/container\n", 0 },
		     { "proc/cpuinfo",
		       "processor\t: 0\nFeatures\t: fp asimd evtstrm\n", 0 } },
	  .markers_checked = true,
	  .markers = { "/run/.containerenv", "/proc/1/cgroup: libpod" },
	  .wants = { EQ("container.name", "podman"),
		     EQ("cpuinfo_hypervisor_flag",
			"unknown (absent: no flags line in /proc/cpuinfo)") } },
	{ .what = "docker on cgroup v1 without /.dockerenv",
	  .files = { { "proc/1/cgroup",
		       "12:memory:/docker/0123abcd\n"
		       "11:cpu,cpuacct:/docker/0123abcd\n",
		       0 } },
	  .markers_checked = true, .markers = { "/proc/1/cgroup: docker" },
	  .wants = { EQ("container.name", "docker") } },
	{ .what = "wsl2; /proc/1/cgroup absent is not an error",
	  .files = { { "proc/sys/kernel/osrelease",
		       "5.15.153.1-microsoft-standard-WSL2\n", 0 } },
	  .markers_checked = true,
	  .markers = { "/proc/sys/kernel/osrelease: microsoft" },
	  .wants = { EQ("container.name", "wsl") } },
	{ .what = "a marker names the container when the cgroup file is bad",
	  .files = { { ".dockerenv", "", 0 }, { "proc/1/cgroup", "\0\0\0", 3 } },
	  .markers_checked = true, .markers = { "/.dockerenv" },
	  .wants = { EQ("container.name", "docker") } },
};

static void check_want(struct json_object *r, const struct want *w)
{
	char full[256];

	snprintf(full, sizeof(full), "virt.%s", w->path);
	switch (w->kind) {
	case W_EQ:
		CHECK_EQ_STR(vstr(r, w->path), w->str);
		break;
	case W_NULL:
		CHECK(jnull(r, full));
		break;
	case W_BOOL:
		CHECK(jis(r, full, json_type_boolean));
		break;
	case W_STRING:
		CHECK(jis(r, full, json_type_string));
		break;
	}
}

static void check_case(const struct virt_case *c)
{
	int fail = check_fail_;
	struct probe_opts opts = { 0 };
	struct json_object *r;
	char *root = NULL;
	size_t n;

	if (!c->tree) {
		root = tree_new();
		for (size_t i = 0; i < ARRAY_SIZE(c->files) && c->files[i].rel;
		     i++)
			tree_put(root, c->files[i].rel, c->files[i].data,
				 c->files[i].len ? c->files[i].len : -1);
		opts.root = root;
	}
	r = probe_fixture_opts(c->tree, &c->fs, &opts);
	CHECK(r != NULL);
	if (r && c->kvm_cpuid) {
		CHECK_EQ_STR(vstr(r, "cpuid.hypervisor_bit"), "true");
		CHECK(jis(r, "virt.cpuid.hypervisor_bit", json_type_boolean));
		CHECK_EQ_STR(vstr(r, "cpuid.signature"), "KVMKVMKVM");
		CHECK_EQ_STR(vstr(r, "cpuid.hypervisor"), "kvm");
	}
	for (size_t i = 0; r && i < ARRAY_SIZE(c->wants) && c->wants[i].path;
	     i++)
		check_want(r, &c->wants[i]);
	if (r && c->dmi[0])
		check_dmi(r, c->dmi);
	if (r && c->dmi_absent) {
		const char *absent[NDMI];

		for (size_t i = 0; i < NDMI; i++)
			absent[i] = ABSENT;
		check_dmi(r, absent);
	}
	for (n = 0; n < ARRAY_SIZE(c->markers) && c->markers[n]; n++)
		;
	if (r && c->markers_checked)
		check_markers(r, n, c->markers);
	for (size_t i = 0; r && i < ARRAY_SIZE(c->labels) && c->labels[i].label;
	     i++)
		check_label(r, c->labels[i].label, c->labels[i].value,
			    c->labels[i].source);
	if (check_fail_ != fail)
		fprintf(stderr, "  in: %s\n", c->what);
	json_object_put(r);
	tree_free(root);
}

static void test_cases(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(virt_cases); i++)
		check_case(&virt_cases[i]);
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

int main(void)
{
	test_cases();
	test_given_labels();
	test_signatures();
	return check_summary();
}
