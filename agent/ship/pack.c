/* SPDX-License-Identifier: MIT */
/* Check and pack a run's report for the spool (pack.h). */
#include "pack.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "codec.h"

int report_pack(const Fleetbench__Report *rep, uint8_t **ret, size_t *ret_len,
		char err[PACK_ERR_LEN])
{
	char why[CODEC_ERR_LEN];
	int r = codec_validate_report(rep, wall_ms(), why);

	if (r < 0) {
		snprintf(err, PACK_ERR_LEN, "the report would be rejected: %s",
			 why);
		return r;
	}
	r = codec_pack_report(rep, ret, ret_len);
	if (r < 0)
		snprintf(err, PACK_ERR_LEN, "cannot pack the report: %s",
			 r == -E2BIG ? "over the message size limit" :
				       strerror(-r));
	return r;
}
