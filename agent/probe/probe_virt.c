/* SPDX-License-Identifier: MIT */
/*
 * Virtualization layers: CPUID, the cpuinfo flag, DMI and the VM verdict;
 * the container layer is probe_container.c.
 */
#include "probe_virt.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "probe_container.h"
#include "probe_modules.h"

#define DMI_DIR "/sys/class/dmi/id"
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
 * The DMI files reported, in report order (enum virt_dmi_index).
 * product_serial, product_uuid and board_serial are root-only and
 * deliberately not read.
 */
static const char *const dmi_fields[DMI_NFIELDS] = {
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
	if (!probe_printable(sig, len)) {
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
 * One DMI string into f: the file trimmed of surrounding white space (""
 * is a legitimate value); an error when absent or holding bytes outside
 * printable ASCII.
 */
static void dmi_read_field(struct probe_ctx *ctx, const char *field,
			   struct virt_dmi_field *f)
{
	_cleanup_free_ char *data = NULL;
	char path[128];
	ssize_t n;
	size_t b = 0, e;

	snprintf(path, sizeof(path), DMI_DIR "/%s", field);
	n = probe_read_file(ctx, path, &data);
	if (n < 0) {
		f->err = (int)n;
		return;
	}
	e = (size_t)n;
	while (b < e && is_blank(data[b]))
		b++;
	while (e > b && is_blank(data[e - 1]))
		e--;
	f->err = -EBADMSG;
	if (e - b >= DMI_STR_MAX)
		f->malformed = "longer than 255 bytes";
	else if (!probe_printable(data + b, e - b))
		f->malformed = "has non-printable bytes";
	else
		f->err = 0;
	if (!f->err) {
		memcpy(f->value, data + b, e - b);
		f->value[e - b] = '\0';
	}
}

void virt_dmi_read(struct probe_ctx *ctx, struct virt_dmi *dmi)
{
	_cleanup_closedir_ DIR *d = probe_opendir(ctx, DMI_DIR);
	int err = d ? 0 : -errno;

	*dmi = (struct virt_dmi){ .probed = true, .present = 1 };
	if (err == -ENOENT || err == -ENOTDIR) {
		dmi->present = 0;
		for (size_t i = 0; i < DMI_NFIELDS; i++)
			dmi->f[i].err = -ENOENT;
		return;
	}
	/* Unreadable as a whole (EACCES): try each file for its own reason. */
	if (err < 0)
		dmi->present = err;
	for (size_t i = 0; i < DMI_NFIELDS; i++)
		dmi_read_field(ctx, dmi_fields[i], &dmi->f[i]);
}

const char *virt_dmi_get(const struct virt_dmi *dmi, const char *field)
{
	if (!dmi || !dmi->probed)
		return NULL;
	for (size_t i = 0; i < DMI_NFIELDS; i++)
		if (!strcmp(dmi_fields[i], field))
			return dmi->f[i].err ? NULL : dmi->f[i].value;
	return NULL;
}

/* The unknown item of a field that could not be read. */
static void dmi_item_unknown(struct json_object *o, const char *key,
			     const char *field, const struct virt_dmi_field *f)
{
	if (f->err == -EBADMSG)
		item_unknown(o, key, "malformed: " DMI_DIR "/%s %s", field,
			     f->malformed);
	else
		item_unknown_err(o, key, f->err);
}

static void item_chassis_name(struct json_object *o,
			      const struct virt_dmi_field *type)
{
	static const char key[] = "chassis_type_name";
	int64_t t;

	if (type->err) {
		/* Same reason as chassis_type itself. */
		dmi_item_unknown(o, key, "chassis_type", type);
		return;
	}
	if (probe_parse_i64(type->value, &t) < 0) {
		item_unknown(o, key, "malformed: chassis_type '%s' is not a number",
			     type->value);
		return;
	}
	if (t <= 0 || (uint64_t)t >= ARRAY_SIZE(chassis_types) ||
	    !chassis_types[t]) {
		item_unknown(o, key, "no SMBIOS name for chassis type %lld",
			     (long long)t);
		return;
	}
	item_str(o, key, chassis_types[t]);
}

/* The "dmi" items of what virt_dmi_read() read. */
static void dmi_items(const struct virt_dmi *dmi, struct json_object *out)
{
	struct json_object *o = item_object(out, "dmi");

	if (dmi->present < 0)
		item_unknown_err(o, "present", dmi->present);
	else
		item_bool(o, "present", dmi->present);
	for (size_t i = 0; i < DMI_NFIELDS; i++) {
		const struct virt_dmi_field *f = &dmi->f[i];

		if (f->err)
			dmi_item_unknown(o, dmi_fields[i], dmi_fields[i], f);
		else
			item_str(o, dmi_fields[i], f->value);
		if (i == DMI_CHASSIS_TYPE)
			item_chassis_name(o, f);
	}
}

/* The hypervisor DMI names, or NULL when DMI names none (bare metal). */
static const char *dmi_vm(const struct virt_dmi *dmi)
{
	const char *vendor = virt_dmi_get(dmi, "sys_vendor");
	const char *product = virt_dmi_get(dmi, "product_name");

	/* EC2 bare-metal instances carry the same vendor strings. */
	if (vendor && !strcmp(vendor, "Amazon EC2") && product &&
	    strstr(product, ".metal"))
		return NULL;
	if (vendor && product && !strcmp(vendor, "Microsoft Corporation") &&
	    !strcmp(product, "Virtual Machine"))
		return "hyperv";
	for (size_t i = 0; i < ARRAY_SIZE(dmi_vm_fields); i++) {
		const char *v = virt_dmi_get(dmi, dmi_vm_fields[i]);

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

/*
 * The VM layer: CPUID names the hypervisor when its bit is set; else DMI
 * may (hidden bit, or no CPUID off x86); else bare metal, provided there
 * was something to tell (a clear bit or readable DMI).
 */
static void probe_vm(struct json_object *out, int bit, const char *hv,
		     const struct virt_dmi *dmi)
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
	if (bit == 0 || dmi->present == 1) {
		item_str(vm, "name", "none");
		item_str(vm, "source", "none");
		return;
	}
	item_unknown(vm, "name", "%s: no CPUID and no readable DMI",
		     probe_reason(bit));
	item_str(vm, "source", "none");
}

static int probe_virt(struct probe_ctx *ctx, struct json_object *out)
{
	struct virt_dmi own, *dmi = ctx->dmi ? ctx->dmi : &own;
	const char *hv;
	int bit;

	bit = probe_cpuid(ctx, out, &hv);
	probe_cpuinfo_flag(ctx, out);
	item_file_str(ctx, out, "sys_hypervisor_type", "/sys/hypervisor/type");
	virt_dmi_read(ctx, dmi);
	dmi_items(dmi, out);
	probe_vm(out, bit, hv, dmi);
	return container_probe(ctx, out);
}

const struct probe_ops probe_virt_ops = {
	.name = "virt",
	.run = probe_virt,
};
