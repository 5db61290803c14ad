/* SPDX-License-Identifier: MIT */
/*
 * The report as it goes into the spool: built from the probe and the bench
 * run (report.h), checked as a collector would check it (codec.h), packed.
 * A report the collector would refuse is refused here, before it takes
 * spool space.
 */
#ifndef FLEETBENCH_PACK_H
#define FLEETBENCH_PACK_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "fleetbench.pb-c.h"
#include "tags.h"

#define PACK_ERR_LEN 512
#define PACK_RUN_ID_LEN 37 /* a UUID's 36 characters and the NUL */

/*
 * Packs the report of probe and bench (NULL: none), run from started to
 * finished (Unix ms), with tags (NULL: none; tags.h), into a new buffer (*ret, *ret_len; free() it) and
 * writes its run id into run_id. Returns 0, or -errno with err saying which
 * step failed and why: "cannot make the report: ...", "the report would be
 * rejected: ..." (-EINVAL) or "cannot pack the report: ..." (-E2BIG: over
 * the message size limit).
 */
int report_pack(struct json_object *probe, const Fleetbench__BenchRun *bench,
		int64_t started, int64_t finished, const struct tags *tags,
		char run_id[PACK_RUN_ID_LEN], uint8_t **ret, size_t *ret_len,
		char err[PACK_ERR_LEN]);

#endif
