/* SPDX-License-Identifier: MIT */
/* What the virt probe (probe_virt.c) reads of DMI, and offers the labels
 * probe. */
#ifndef FLEETBENCH_PROBE_VIRT_H
#define FLEETBENCH_PROBE_VIRT_H

#include <stdbool.h>

struct probe_ctx;

#define DMI_STR_MAX 256

/* The DMI fields, in report order. */
enum virt_dmi_index {
	DMI_SYS_VENDOR,
	DMI_PRODUCT_NAME,
	DMI_PRODUCT_VERSION,
	DMI_BOARD_VENDOR,
	DMI_BOARD_NAME,
	DMI_BIOS_VENDOR,
	DMI_BIOS_VERSION,
	DMI_CHASSIS_VENDOR,
	DMI_CHASSIS_TYPE,
	DMI_CHASSIS_ASSET_TAG,
	DMI_NFIELDS
};

struct virt_dmi_field {
	/* 0: value is the trimmed string; -errno when unreadable (-ENOENT:
	 * absent); -EBADMSG when malformed, saying how. */
	int err;
	const char *malformed;
	char value[DMI_STR_MAX];
};

struct virt_dmi {
	bool probed; /* virt_dmi_read() filled it */
	/* 1 present, 0 absent (no /sys/class/dmi/id), -errno unreadable */
	int present;
	struct virt_dmi_field f[DMI_NFIELDS];
};

/* Reads the DMI strings below the probe root into *dmi. */
void virt_dmi_read(struct probe_ctx *ctx, struct virt_dmi *dmi);

/* A field's string by its file name ("sys_vendor"); NULL when it could not
 * be read, or dmi is NULL or not read. */
const char *virt_dmi_get(const struct virt_dmi *dmi, const char *field);

#endif
