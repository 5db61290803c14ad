/* SPDX-License-Identifier: MIT */
/* What the virt probe (probe_virt.c) offers the labels probe. */
#ifndef FLEETBENCH_PROBE_VIRT_H
#define FLEETBENCH_PROBE_VIRT_H

#include <json-c/json.h>

/* A DMI field's string from the report's virt.dmi object; NULL when the
 * field is unknown or missing (or dmi is NULL). */
const char *virt_dmi_get(struct json_object *dmi, const char *field);

#endif
