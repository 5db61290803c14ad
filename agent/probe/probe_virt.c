/* SPDX-License-Identifier: MIT */
/* Virtualization layers (CPUID, DMI, container markers) and host labels. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "probe_modules.h"

#define DMI_DIR "/sys/class/dmi/id"
#define DMI_STR_MAX 256
#define CPUID_HV_BIT (1u << 31)
#define CPUID_HV_LEAF 0x40000000u

/* The 12-byte vendor signatures at CPUID 0x40000000, trailing NULs cut. */
static const struct {
	const char *sig;
	const char *name;
} hv_signatures[] = {
	{ "KVMKVMKVM", "kvm" },		{ "Microsoft Hv", "hyperv" },
	{ "VMwareVMware", "vmware" },	{ "XenVMMXenVMM", "xen" },
	{ "bhyve bhyve ", "bhyve" },	{ "TCGTCGTCGTCG", "qemu-tcg" },
	{ " lrpepyh  vr", "parallels" }, { "ACRNACRNACRN", "acrn" },
	{ "QNXQVMBSQG", "qnx" },	{ "VBoxVBoxVBox", "virtualbox" },
};

/* SMBIOS 3.x chassis types (DSP0134 7.4.1), indexed by number. */
static const char *const chassis_types[] = {
	[1] = "Other",
	[2] = "Unknown",
	[3] = "Desktop",
	[4] = "Low Profile Desktop",
	[5] = "Pizza Box",
	[6] = "Mini Tower",
	[7] = "Tower",
	[8] = "Portable",
	[9] = "Laptop",
	[10] = "Notebook",
	[11] = "Hand Held",
	[12] = "Docking Station",
	[13] = "All in One",
	[14] = "Sub Notebook",
	[15] = "Space-saving",
	[16] = "Lunch Box",
	[17] = "Main Server Chassis",
	[18] = "Expansion Chassis",
	[19] = "SubChassis",
	[20] = "Bus Expansion Chassis",
	[21] = "Peripheral Chassis",
	[22] = "RAID Chassis",
	[23] = "Rack Mount Chassis",
	[24] = "Sealed-case PC",
	[25] = "Multi-system chassis",
	[26] = "Compact PCI",
	[27] = "Advanced TCA",
	[28] = "Blade",
	[29] = "Blade Enclosure",
	[30] = "Tablet",
	[31] = "Convertible",
	[32] = "Detachable",
	[33] = "IoT Gateway",
	[34] = "Embedded PC",
	[35] = "Mini PC",
	[36] = "Stick PC",
};

/*
 * The DMI files reported, in report order. product_serial, product_uuid and
 * board_serial are root-only and deliberately not read.
 */
static const char *const dmi_fields[] = {
	"sys_vendor",	"product_name",	  "product_version", "board_vendor",
	"board_name",	"bios_vendor",	  "bios_version",    "chassis_vendor",
	"chassis_type", "chassis_asset_tag",
};

/*
 * DMI strings that name a hypervisor, matched as prefixes of product_name,
 * sys_vendor, board_vendor, bios_vendor and product_version (the fields and
 * table systemd's detect-virt uses). Only consulted when CPUID does not
 * name one: the hypervisor bit can be hidden, and there is no CPUID off x86.
 */
static const char *const dmi_vm_fields[] = {
	"product_name", "sys_vendor", "board_vendor", "bios_vendor",
	"product_version",
};

static const struct {
	const char *prefix;
	const char *vm;
} dmi_vm_prefixes[] = {
	{ "KVM", "kvm" },
	{ "OpenStack", "kvm" },
	{ "KubeVirt", "kvm" },
	{ "Amazon EC2", "kvm" },
	{ "Google Compute Engine", "kvm" },
	{ "QEMU", "qemu" },
	{ "Bochs", "qemu" },
	{ "VMware", "vmware" },
	{ "VMW", "vmware" },
	{ "innotek GmbH", "virtualbox" },
	{ "VirtualBox", "virtualbox" },
	{ "Xen", "xen" },
	{ "Parallels", "parallels" },
	{ "BHYVE", "bhyve" },
	{ "Hyper-V", "hyperv" },
	{ "Apple Virtualization", "apple" },
};

enum dmi_match {
	MATCH_EXACT,
	MATCH_PREFIX,
	MATCH_CONTAINS_NOCASE,
};

struct dmi_cond {
	const char *field; /* NULL ends the rule */
	enum dmi_match match;
	const char *pattern;
};

/*
 * Provider inference: the first rule whose conditions all hold wins, so
 * specific rules (Oracle Cloud on QEMU DMI, EC2 on Xen DMI) come before the
 * generic hypervisor vendors at the end.
 */
static const struct {
	const char *provider;
	struct dmi_cond cond[3];
} provider_rules[] = {
	{ "aws", { { "sys_vendor", MATCH_EXACT, "Amazon EC2" } } },
	{ "aws", { { "bios_vendor", MATCH_EXACT, "Amazon EC2" } } },
	/* Xen-era EC2: sys_vendor "Xen", bios_version "4.11.amazon" */
	{ "aws", { { "bios_version", MATCH_CONTAINS_NOCASE, "amazon" } } },
	{ "gcp", { { "sys_vendor", MATCH_EXACT, "Google" } } },
	{ "gcp", { { "product_name", MATCH_EXACT, "Google Compute Engine" } } },
	{ "azure",
	  { { "sys_vendor", MATCH_EXACT, "Microsoft Corporation" },
	    { "product_name", MATCH_EXACT, "Virtual Machine" },
	    { "chassis_asset_tag", MATCH_EXACT,
	      "7783-7084-3265-9085-8269-3286-77" } } },
	{ "digitalocean", { { "sys_vendor", MATCH_PREFIX, "DigitalOcean" } } },
	{ "digitalocean", { { "bios_vendor", MATCH_PREFIX, "DigitalOcean" } } },
	{ "hetzner", { { "sys_vendor", MATCH_PREFIX, "Hetzner" } } },
	{ "openstack", { { "product_name", MATCH_EXACT, "OpenStack Nova" } } },
	{ "openstack",
	  { { "product_name", MATCH_EXACT, "OpenStack Compute" } } },
	{ "openstack",
	  { { "sys_vendor", MATCH_EXACT, "OpenStack Foundation" } } },
	{ "alibaba", { { "sys_vendor", MATCH_PREFIX, "Alibaba Cloud" } } },
	{ "oci", { { "chassis_asset_tag", MATCH_EXACT, "OracleCloud.com" } } },
	{ "scaleway", { { "sys_vendor", MATCH_PREFIX, "Scaleway" } } },
	{ "vultr", { { "sys_vendor", MATCH_PREFIX, "Vultr" } } },
	{ "linode", { { "sys_vendor", MATCH_PREFIX, "Linode" } } },
	{ "linode", { { "sys_vendor", MATCH_PREFIX, "Akamai" } } },
	{ "ovh", { { "sys_vendor", MATCH_PREFIX, "OVH" } } },
	{ "tencent", { { "sys_vendor", MATCH_PREFIX, "Tencent Cloud" } } },
	{ "exoscale", { { "sys_vendor", MATCH_PREFIX, "Exoscale" } } },
	{ "qemu-kvm", { { "sys_vendor", MATCH_EXACT, "QEMU" } } },
	{ "vmware", { { "sys_vendor", MATCH_EXACT, "VMware, Inc." } } },
	{ "xen", { { "sys_vendor", MATCH_EXACT, "Xen" } } },
};

/* Container kinds, most specific first: a lower rank wins the verdict. */
enum container_rank {
	RANK_SYSTEMD, /* /run/systemd/container, written by the manager */
	RANK_KUBEPODS,
	RANK_CONTAINERENV,
	RANK_LIBPOD,
	RANK_DOCKERENV,
	RANK_DOCKER_CGROUP,
	RANK_LXC_CGROUP,
	RANK_WSL,
	RANK_NONE,
};

/* /proc/1/cgroup path substrings that give a container away. */
static const struct {
	const char *needle;
	const char *marker;
	const char *name;
	enum container_rank rank;
} cgroup_markers[] = {
	{ "kubepods", "/proc/1/cgroup: kubepods", "kubernetes", RANK_KUBEPODS },
	{ "libpod", "/proc/1/cgroup: libpod", "podman", RANK_LIBPOD },
	{ "docker", "/proc/1/cgroup: docker", "docker", RANK_DOCKER_CGROUP },
	{ "/lxc", "/proc/1/cgroup: lxc", "lxc", RANK_LXC_CGROUP },
};

/* Values systemd and container managers write to /run/systemd/container. */
static const struct {
	const char *value;
	const char *name;
} systemd_containers[] = {
	{ "docker", "docker" },
	{ "podman", "podman" },
	{ "lxc", "lxc" },
	{ "lxc-libvirt", "lxc" },
	{ "systemd-nspawn", "systemd-nspawn" },
	{ "wsl", "wsl" },
};

static bool is_printable(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

/*
 * CPUID: the hypervisor bit (leaf 1 ECX bit 31) and, only when it is set,
 * the vendor signature of leaf 0x40000000. Returns 1 when the bit is set, 0
 * when clear, -errno when CPUID cannot be executed; *ret_hv is the table
 * name of the signature ("other" when unlisted), NULL when not read.
 */
static int probe_cpuid(struct probe_ctx *ctx, struct json_object *out,
		       const char **ret_hv)
{
	static const char bad_sig[] =
		"malformed: non-printable byte in CPUID 0x40000000 signature";
	struct json_object *c = item_object(out, "cpuid");
	const char *name = "other";
	uint32_t r[4] = { 0 };
	char sig[13];
	size_t len;
	int err;

	*ret_hv = NULL;
	err = ctx->sys->cpuid(1, 0, r);
	if (err < 0) {
		item_unknown_err(c, "hypervisor_bit", err);
		item_unknown_err(c, "signature", err);
		item_unknown_err(c, "hypervisor", err);
		return err;
	}
	if (!(r[2] & CPUID_HV_BIT)) {
		item_bool(c, "hypervisor_bit", false);
		item_null(c, "signature");
		item_null(c, "hypervisor");
		return 0;
	}
	item_bool(c, "hypervisor_bit", true);

	err = ctx->sys->cpuid(CPUID_HV_LEAF, 0, r);
	if (err < 0) {
		item_unknown_err(c, "signature", err);
		item_unknown_err(c, "hypervisor", err);
		return 1;
	}
	memcpy(sig, &r[1], 4);
	memcpy(sig + 4, &r[2], 4);
	memcpy(sig + 8, &r[3], 4);
	len = 12;
	while (len > 0 && sig[len - 1] == '\0')
		len--;
	sig[len] = '\0';
	if (!is_printable(sig, len)) {
		item_unknown(c, "signature", "%s", bad_sig);
		item_unknown(c, "hypervisor", "%s", bad_sig);
		return 1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(hv_signatures); i++) {
		if (!strcmp(sig, hv_signatures[i].sig)) {
			name = hv_signatures[i].name;
			break;
		}
	}
	item_str(c, "signature", sig);
	item_str(c, "hypervisor", name);
	*ret_hv = name;
	return 1;
}

/* The "hypervisor" flag the kernel shows in the first flags line. */
static void probe_cpuinfo_flag(struct probe_ctx *ctx, struct json_object *out)
{
	static const char key[] = "cpuinfo_hypervisor_flag";
	_cleanup_free_ char *text = NULL;
	ssize_t n = probe_read_file(ctx, "/proc/cpuinfo", &text);
	const char *line;

	if (n < 0) {
		item_unknown_err(out, key, (int)n);
		return;
	}
	if (n == 0 || memchr(text, '\0', (size_t)n)) {
		item_unknown(out, key, "malformed: /proc/cpuinfo %s",
			     n == 0 ? "empty" : "contains NUL bytes");
		return;
	}
	for (line = text; line && *line;) {
		const char *eol = strchr(line, '\n');
		const char *end = eol ? eol : line + strlen(line);
		const char *p = line;

		line = eol ? eol + 1 : NULL;
		if ((size_t)(end - p) < strlen("flags") ||
		    strncmp(p, "flags", strlen("flags")))
			continue;
		p += strlen("flags");
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p == end || *p != ':')
			continue;
		for (p++; p < end;) {
			const char *tok;

			while (p < end && is_blank(*p))
				p++;
			tok = p;
			while (p < end && !is_blank(*p))
				p++;
			if ((size_t)(p - tok) == strlen("hypervisor") &&
			    !strncmp(tok, "hypervisor", strlen("hypervisor"))) {
				item_bool(out, key, true);
				return;
			}
		}
		item_bool(out, key, false);
		return;
	}
	item_unknown(out, key, "absent: no flags line in /proc/cpuinfo");
}

/*
 * One DMI string: the file trimmed of surrounding white space ("" is a
 * legitimate value), unknown when absent or holding bytes outside printable
 * ASCII. Returns 0 or -errno.
 */
static int item_dmi(struct probe_ctx *ctx, struct json_object *o,
		    const char *field)
{
	_cleanup_free_ char *data = NULL;
	char path[128];
	ssize_t n;
	size_t b = 0, e;

	snprintf(path, sizeof(path), DMI_DIR "/%s", field);
	n = probe_read_file(ctx, path, &data);
	if (n < 0) {
		item_unknown_err(o, field, (int)n);
		return (int)n;
	}
	e = (size_t)n;
	while (b < e && is_blank(data[b]))
		b++;
	while (e > b && is_blank(data[e - 1]))
		e--;
	if (e - b >= DMI_STR_MAX) {
		item_unknown(o, field, "malformed: %s longer than %d bytes",
			     path, DMI_STR_MAX - 1);
		return -EBADMSG;
	}
	if (!is_printable(data + b, e - b)) {
		item_unknown(o, field, "malformed: %s has non-printable bytes",
			     path);
		return -EBADMSG;
	}
	data[e] = '\0';
	item_str(o, field, data + b);
	return 0;
}

/* A DMI field's string from a dmi object; NULL when unknown or missing. */
static const char *dmi_get(struct json_object *dmi, const char *field)
{
	struct json_object *v;

	if (!dmi || !json_object_object_get_ex(dmi, field, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static void item_chassis_name(struct json_object *dmi)
{
	static const char key[] = "chassis_type_name";
	struct json_object *v;
	const char *type;
	int64_t t;

	type = dmi_get(dmi, "chassis_type");
	if (!type) {
		struct json_object *reason;

		/* Same reason as chassis_type itself. */
		if (json_object_object_get_ex(dmi, "chassis_type", &v) &&
		    json_object_object_get_ex(v, "unknown", &reason))
			item_unknown(dmi, key, "%s",
				     json_object_get_string(reason));
		else
			item_unknown(dmi, key, "absent");
		return;
	}
	if (probe_parse_i64(type, &t) < 0) {
		item_unknown(dmi, key, "malformed: chassis_type '%s' is not a number",
			     type);
		return;
	}
	if (t <= 0 || (uint64_t)t >= ARRAY_SIZE(chassis_types) ||
	    !chassis_types[t]) {
		item_unknown(dmi, key, "no SMBIOS name for chassis type %lld",
			     (long long)t);
		return;
	}
	item_str(dmi, key, chassis_types[t]);
}

/* The DMI identity strings in sysfs; returns the dmi object or NULL. */
static struct json_object *probe_dmi(struct probe_ctx *ctx,
				     struct json_object *out)
{
	struct json_object *dmi = item_object(out, "dmi");
	_cleanup_closedir_ DIR *d = probe_opendir(ctx, DMI_DIR);
	int err = d ? 0 : -errno;

	if (err == -ENOENT || err == -ENOTDIR) {
		item_bool(dmi, "present", false);
		for (size_t i = 0; i < ARRAY_SIZE(dmi_fields); i++) {
			item_unknown(dmi, dmi_fields[i], "absent");
			if (!strcmp(dmi_fields[i], "chassis_type"))
				item_unknown(dmi, "chassis_type_name", "absent");
		}
		return dmi;
	}
	/* Unreadable as a whole (EACCES): try each file for its own reason. */
	if (err < 0)
		item_unknown_err(dmi, "present", err);
	else
		item_bool(dmi, "present", true);
	for (size_t i = 0; i < ARRAY_SIZE(dmi_fields); i++) {
		item_dmi(ctx, dmi, dmi_fields[i]);
		if (!strcmp(dmi_fields[i], "chassis_type"))
			item_chassis_name(dmi);
	}
	return dmi;
}

/* The hypervisor DMI names, or NULL when DMI names none (bare metal). */
static const char *dmi_vm(struct json_object *dmi)
{
	const char *vendor = dmi_get(dmi, "sys_vendor");
	const char *product = dmi_get(dmi, "product_name");

	/* EC2 bare-metal instances carry the same vendor strings. */
	if (vendor && !strcmp(vendor, "Amazon EC2") && product &&
	    strstr(product, ".metal"))
		return NULL;
	if (vendor && product && !strcmp(vendor, "Microsoft Corporation") &&
	    !strcmp(product, "Virtual Machine"))
		return "hyperv";
	for (size_t i = 0; i < ARRAY_SIZE(dmi_vm_fields); i++) {
		const char *v = dmi_get(dmi, dmi_vm_fields[i]);

		if (!v)
			continue;
		for (size_t j = 0; j < ARRAY_SIZE(dmi_vm_prefixes); j++) {
			const char *p = dmi_vm_prefixes[j].prefix;

			if (!strncmp(v, p, strlen(p)))
				return dmi_vm_prefixes[j].vm;
		}
	}
	return NULL;
}

static bool dmi_present(struct json_object *dmi)
{
	struct json_object *v;

	return json_object_object_get_ex(dmi, "present", &v) &&
	       json_object_is_type(v, json_type_boolean) &&
	       json_object_get_boolean(v);
}

/*
 * The VM layer: CPUID names the hypervisor when its bit is set; else DMI
 * may (hidden bit, or no CPUID off x86); else bare metal, provided there
 * was something to tell (a clear bit or readable DMI).
 */
static void probe_vm(struct json_object *out, int bit, const char *hv,
		     struct json_object *dmi)
{
	struct json_object *vm = item_object(out, "vm");
	const char *name;

	if (bit == 1 && hv) {
		item_str(vm, "name", hv);
		item_str(vm, "source", "cpuid");
		return;
	}
	name = dmi_vm(dmi);
	if (name) {
		item_str(vm, "name", name);
		item_str(vm, "source", "dmi");
		return;
	}
	if (bit == 1) {
		/* The bit is set but the signature could not be read. */
		item_str(vm, "name", "other");
		item_str(vm, "source", "cpuid");
		return;
	}
	if (bit == 0 || dmi_present(dmi)) {
		item_str(vm, "name", "none");
		item_str(vm, "source", "none");
		return;
	}
	item_unknown(vm, "name", "%s: no CPUID and no readable DMI",
		     probe_reason(bit));
	item_str(vm, "source", "none");
}

static bool path_exists(struct probe_ctx *ctx, const char *path)
{
	while (*path == '/')
		path++;
	return faccessat(ctx->root_fd, path, F_OK, 0) == 0;
}

/*
 * Scans /proc/1/cgroup ("hierarchy:controllers:path" lines) and returns a
 * bit per cgroup_markers[] entry found in a path, or -EBADMSG when the text
 * is not in that format.
 */
static int cgroup_scan(const char *text, size_t len)
{
	const char *line = text, *end = text + len;
	int found = 0, lines = 0;

	if (memchr(text, '\0', len))
		return -EBADMSG;
	while (line < end) {
		const char *eol = memchr(line, '\n', (size_t)(end - line));
		const char *lend = eol ? eol : end;
		const char *p = line, *path;

		if (lend == line) {
			line = lend + 1;
			continue;
		}
		while (p < lend && *p >= '0' && *p <= '9')
			p++;
		if (p == line || p == lend || *p != ':')
			return -EBADMSG;
		p = memchr(p + 1, ':', (size_t)(lend - p - 1));
		if (!p || p + 1 >= lend || p[1] != '/')
			return -EBADMSG;
		path = p + 1;
		for (size_t i = 0; i < ARRAY_SIZE(cgroup_markers); i++)
			if (memmem(path, (size_t)(lend - path),
				   cgroup_markers[i].needle,
				   strlen(cgroup_markers[i].needle)))
				found |= 1 << i;
		lines++;
		line = lend + 1;
	}
	return lines ? found : -EBADMSG;
}

struct container_verdict {
	const char *name;
	enum container_rank rank;
};

static int add_marker(struct json_object *markers, struct container_verdict *v,
		      const char *marker, const char *name,
		      enum container_rank rank)
{
	struct json_object *s = json_object_new_string(marker);

	if (!s)
		return -ENOMEM;
	json_object_array_add(markers, s);
	if (rank < v->rank) {
		v->rank = rank;
		v->name = name;
	}
	return 0;
}

/* The container layer: files and cgroup paths container managers leave. */
static int probe_container(struct probe_ctx *ctx, struct json_object *out)
{
	struct container_verdict v = { .name = "none", .rank = RANK_NONE };
	struct json_object *c = item_object(out, "container");
	struct json_object *markers = json_object_new_array();
	_cleanup_free_ char *cgroup = NULL;
	char buf[256], marker[300];
	ssize_t n;
	int r = 0, cgroup_err = 0;

	if (!c || !markers) {
		json_object_put(markers);
		return -ENOMEM;
	}

	n = probe_read_line(ctx, "/run/systemd/container", buf, sizeof(buf));
	if (n >= 0 || n == -EBADMSG || n == -ENODATA) {
		const char *name = "other";

		if (n >= 0 && is_printable(buf, (size_t)n)) {
			for (size_t i = 0; i < ARRAY_SIZE(systemd_containers);
			     i++)
				if (!strcmp(buf, systemd_containers[i].value))
					name = systemd_containers[i].name;
			snprintf(marker, sizeof(marker),
				 "/run/systemd/container: %s", buf);
		} else {
			snprintf(marker, sizeof(marker),
				 "/run/systemd/container: (malformed)");
		}
		r = add_marker(markers, &v, marker, name, RANK_SYSTEMD);
	}
	if (r >= 0 && path_exists(ctx, "/run/.containerenv"))
		r = add_marker(markers, &v, "/run/.containerenv", "podman",
			       RANK_CONTAINERENV);
	if (r >= 0 && path_exists(ctx, "/.dockerenv"))
		r = add_marker(markers, &v, "/.dockerenv", "docker",
			       RANK_DOCKERENV);

	n = probe_read_file(ctx, "/proc/1/cgroup", &cgroup);
	if (n >= 0)
		cgroup_err = cgroup_scan(cgroup, (size_t)n);
	else
		cgroup_err = (int)n;
	for (size_t i = 0; r >= 0 && cgroup_err > 0 &&
			   i < ARRAY_SIZE(cgroup_markers);
	     i++)
		if (cgroup_err & (1 << i))
			r = add_marker(markers, &v, cgroup_markers[i].marker,
				       cgroup_markers[i].name,
				       cgroup_markers[i].rank);

	n = probe_read_line(ctx, "/proc/sys/kernel/osrelease", buf,
			    sizeof(buf));
	if (r >= 0 && n > 0 && strcasestr(buf, "microsoft"))
		r = add_marker(markers, &v,
			       "/proc/sys/kernel/osrelease: microsoft", "wsl",
			       RANK_WSL);
	if (r < 0) {
		json_object_put(markers);
		return r;
	}

	if (v.rank != RANK_NONE || cgroup_err >= 0 || cgroup_err == -ENOENT)
		item_str(c, "name", v.name);
	else if (cgroup_err == -EBADMSG)
		item_unknown(c, "name",
			     "malformed: /proc/1/cgroup is not hierarchy:controllers:path lines");
	else
		item_unknown_err(c, "name", cgroup_err);
	json_object_object_add(c, "markers", markers);
	return 0;
}

static int probe_virt(struct probe_ctx *ctx, struct json_object *out)
{
	struct json_object *dmi;
	const char *hv;
	int bit;

	bit = probe_cpuid(ctx, out, &hv);
	probe_cpuinfo_flag(ctx, out);
	item_file_str(ctx, out, "sys_hypervisor_type", "/sys/hypervisor/type");
	dmi = probe_dmi(ctx, out);
	probe_vm(out, bit, hv, dmi);
	return probe_container(ctx, out);
}

const struct probe_ops probe_virt_ops = {
	.name = "virt",
	.run = probe_virt,
};

/* -------- labels -------- */

static bool cond_holds(struct json_object *dmi, const struct dmi_cond *c)
{
	const char *v = dmi_get(dmi, c->field);

	if (!v)
		return false;
	switch (c->match) {
	case MATCH_EXACT:
		return !strcmp(v, c->pattern);
	case MATCH_PREFIX:
		return !strncmp(v, c->pattern, strlen(c->pattern));
	case MATCH_CONTAINS_NOCASE:
		return strcasestr(v, c->pattern) != NULL;
	}
	return false;
}

/* False, with the reason in why ("not given; DMI absent"), when DMI
 * cannot be used at all. */
static bool dmi_usable(struct json_object *dmi, char *why, size_t size)
{
	struct json_object *present, *reason;

	if (!dmi || !json_object_object_get_ex(dmi, "present", &present)) {
		snprintf(why, size, "not given; DMI not probed");
		return false;
	}
	if (json_object_object_get_ex(present, "unknown", &reason)) {
		snprintf(why, size, "not given; DMI unreadable (%s)",
			 json_object_get_string(reason));
		return false;
	}
	if (!json_object_get_boolean(present)) {
		snprintf(why, size, "not given; DMI absent");
		return false;
	}
	return true;
}

/* The provider DMI names, or NULL with the reason in why. */
static const char *dmi_provider(struct json_object *dmi, char *why,
				size_t size)
{
	const char *vendor;

	if (!dmi_usable(dmi, why, size))
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(provider_rules); i++) {
		bool all = true;

		for (size_t j = 0; all && j < ARRAY_SIZE(provider_rules[i].cond) &&
				   provider_rules[i].cond[j].field;
		     j++)
			all = cond_holds(dmi, &provider_rules[i].cond[j]);
		if (all)
			return provider_rules[i].provider;
	}
	vendor = dmi_get(dmi, "sys_vendor");
	if (vendor)
		snprintf(why, size,
			 "not given; DMI sys_vendor '%s' names no known provider",
			 vendor);
	else
		snprintf(why, size, "not given; DMI sys_vendor unknown and "
				    "no DMI field names a known provider");
	return NULL;
}

/* The instance type where DMI carries it (EC2 Nitro's product_name). */
static const char *dmi_instance_type(struct json_object *dmi,
				     const char *provider, char *why,
				     size_t size)
{
	const char *vendor, *product;

	if (!dmi_usable(dmi, why, size))
		return NULL;
	vendor = dmi_get(dmi, "sys_vendor");
	product = dmi_get(dmi, "product_name");
	if (vendor && !strcmp(vendor, "Amazon EC2")) {
		if (product && *product)
			return product;
		snprintf(why, size,
			 "not given; DMI product_name %s on aws",
			 product ? "empty" : "unreadable");
		return NULL;
	}
	if (provider)
		snprintf(why, size,
			 "not given; DMI does not carry the instance type on %s",
			 provider);
	else
		snprintf(why, size, "not given; DMI names no known provider");
	return NULL;
}

static void item_label(struct json_object *out, const char *key,
		       const struct probe_label *given, const char *inferred,
		       const char *why)
{
	struct json_object *o = item_object(out, key);

	if (given->value) {
		item_str(o, "value", given->value);
		item_str(o, "source", given->source == LABEL_FLAG ? "flag" :
				      given->source == LABEL_DMI  ? "dmi" :
								    "config");
	} else if (inferred) {
		item_str(o, "value", inferred);
		item_str(o, "source", "dmi");
	} else {
		item_unknown(o, "value", "%s", why);
		item_str(o, "source", "none");
	}
}

static int probe_labels(struct probe_ctx *ctx, struct json_object *out)
{
	struct json_object *virt, *dmi = NULL;
	const char *provider, *itype;
	char why[256], iwhy[256];

	if (json_object_object_get_ex(ctx->report, "virt", &virt))
		json_object_object_get_ex(virt, "dmi", &dmi);
	provider = dmi_provider(dmi, why, sizeof(why));
	item_label(out, "provider", &ctx->opts->provider, provider, why);
	itype = dmi_instance_type(dmi, provider, iwhy, sizeof(iwhy));
	item_label(out, "instance_type", &ctx->opts->instance_type, itype,
		   iwhy);
	/* No DMI field carries the region. */
	item_label(out, "region", &ctx->opts->region, NULL, "not given");
	return 0;
}

const struct probe_ops probe_labels_ops = {
	.name = "labels",
	.run = probe_labels,
};
