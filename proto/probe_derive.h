/* SPDX-License-Identifier: MIT */
/*
 * The report's typed columns from its typed probe (Report.probe, field
 * 15), by a table of item paths: Host and Kernel (the agent fills them),
 * Capabilities (the collector's typed columns; agents before issue 37
 * also sent them as field 14, which must then agree).
 */
#ifndef FLEETBENCH_PROBE_DERIVE_H
#define FLEETBENCH_PROBE_DERIVE_H

#include <stdbool.h>
#include <stddef.h>

#include "fleetbench.pb-c.h"

/* A new message (*ret, even on failure: free it) with each field from
 * its probe item; an item not read, or not fitting, leaves the field
 * unset. 0 or -ENOMEM. */
int probe_derive_host(const Fleetbench__Probe *p, Fleetbench__Host **ret);
int probe_derive_kernel(const Fleetbench__Probe *p, Fleetbench__Kernel **ret);
int probe_derive_capabilities(const Fleetbench__Probe *p,
			      Fleetbench__Capabilities **ret);

/*
 * Why the probe item at path was not taken into a required field: the
 * probe's reason when it could not read the item (*unknown true), else
 * "missing" or "not a non-empty string".
 */
const char *probe_not_taken(const Fleetbench__Probe *probe, const char *path,
			    bool *unknown);

/*
 * Whether capabilities c are those its probe p gives: 0, -EINVAL with err
 * naming the first field that differs and the probe item it comes from
 * (both values for a string), or -ENOMEM.
 */
int probe_caps_check(const Fleetbench__Capabilities *c,
		     const Fleetbench__Probe *p, char *err, size_t err_len);

#endif
