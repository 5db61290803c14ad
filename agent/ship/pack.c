/* SPDX-License-Identifier: MIT */
/* Build, check and pack a report for the spool (pack.h). */
#include "pack.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "codec.h"
#include "report.h"

int report_pack(struct json_object *probe, const Fleetbench__BenchRun *bench,
		int64_t started, int64_t finished, const struct tags *tags,
		char run_id[PACK_RUN_ID_LEN], uint8_t **ret, size_t *ret_len,
		char err[PACK_ERR_LEN])
{
	char why[REPORT_ERR_LEN > CODEC_ERR_LEN ? REPORT_ERR_LEN :
						  CODEC_ERR_LEN];
	Fleetbench__Report *rep = NULL;
	int r;

	r = report_build(probe, bench, started, finished, &rep, why);
	if (r < 0) {
		snprintf(err, PACK_ERR_LEN, "cannot make the report: %s", why);
		return r;
	}
	r = tags_to_report(tags, rep);
	if (r < 0) {
		snprintf(err, PACK_ERR_LEN, "cannot make the report: out of memory");
		report_free(rep);
		return r;
	}
	r = codec_validate_report(rep, wall_ms(), why);
	if (r < 0) {
		snprintf(err, PACK_ERR_LEN, "the report would be rejected: %s",
			 why);
		report_free(rep);
		return r;
	}
	r = codec_pack_report(rep, ret, ret_len);
	if (r < 0)
		snprintf(err, PACK_ERR_LEN, "cannot pack the report: %s",
			 r == -E2BIG ? "over the message size limit" :
				       strerror(-r));
	else
		snprintf(run_id, PACK_RUN_ID_LEN, "%s", rep->run_id);
	report_free(rep);
	return r;
}
