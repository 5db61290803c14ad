/* SPDX-License-Identifier: MIT */
/*
 * The report as it goes into the spool: the run's one report (report.h),
 * checked as a collector would check it (codec.h), packed.
 * A report the collector would refuse is refused here, before it takes
 * spool space.
 */
#ifndef FLEETBENCH_PACK_H
#define FLEETBENCH_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "fleetbench.pb-c.h"

#define PACK_ERR_LEN 512
#define PACK_RUN_ID_LEN 37 /* a UUID's 36 characters and the NUL */

/*
 * Checks rep (a report of report_build(), tags added) as the collector
 * will and packs it into a new buffer (*ret, *ret_len; free() it).
 * Returns 0, or -errno with err saying which step failed and why: "the
 * report would be rejected: ..." (-EINVAL) or "cannot pack the report:
 * ..." (-E2BIG: over the message size limit).
 */
int report_pack(const Fleetbench__Report *rep, uint8_t **ret, size_t *ret_len,
		char err[PACK_ERR_LEN]);

#endif
