/* SPDX-License-Identifier: MIT */
/* What test_report.c and test_report_typed.c share. */
#ifndef FLEETBENCH_TEST_REPORT_H
#define FLEETBENCH_TEST_REPORT_H

#include <stdint.h>

#include "check.h"
#include "cleanup.h"
#include "clock.h"
#include "codec.h"

/* rep validated, packed and unpacked by the real codec: the copy, or NULL
 * after a failed check. */
static inline Fleetbench__Report *round_trip(const Fleetbench__Report *rep)
{
	_cleanup_free_ uint8_t *buf = NULL;
	Fleetbench__Report *out = NULL;
	char err[CODEC_ERR_LEN] = "";
	size_t len = 0;
	int r;

	r = codec_validate_report(rep, wall_ms(), err);
	CHECK_(r == 0, "codec_validate_report: %d (%s)", r, err);
	CHECK_OK(codec_pack_report(rep, &buf, &len));
	if (!buf)
		return NULL;
	r = codec_unpack_report(buf, len, &out, err);
	CHECK_(r == 0, "codec_unpack_report: %d (%s)", r, err);
	return out;
}

#endif
