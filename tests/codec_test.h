/* SPDX-License-Identifier: MIT */
/*
 * What the codec's tests share (tests/unit/test_codec*.c): a realistic
 * Report built from parts a test may change, and the checks that validate
 * it and send it through pack and unpack. The checks are static inline so
 * that they count in the calling test's check.h tally.
 */
#ifndef FLEETBENCH_CODEC_TEST_H
#define FLEETBENCH_CODEC_TEST_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "clock.h"
#include "codec.h"

#define RUN_ID "3f2b8c1e-9a4d-4e7f-b1c2-5d6e7f809a1b"
#define MACHINE_ID "0123456789abcdef0123456789abcdef"
#define DAY_MS (24LL * 3600 * 1000)

/* A realistic Report, built from parts a test may change. */

struct fixture {
	Fleetbench__Report r;
	Fleetbench__Host host;
	Fleetbench__Kernel kernel;
	Fleetbench__Benchmark b[2], *bp[2];
	Fleetbench__Param p[6], *pp[6];
	Fleetbench__Metric m[2], *mp[2];
	double ns[5], frac[5];
	Fleetbench__Window w[5], *wp[5];
	Fleetbench__Comparison c[2], *cp[2];
};

/* The probe_json fixture_init() puts in the Report. */
extern const char fixture_probe_json[];

/* f as a valid Report of two benchmarks and two comparisons. */
void fixture_init(struct fixture *f);

/* A new string of n bytes c (free() it). */
char *repeat_char(char c, size_t n);

/* An input text and what is said about it. */
struct text_case {
	const char *text, *note;
};

/*
 * Validating f gives exactly want (-EINVAL), or passes when want is NULL,
 * and unpacking the packed f says the same.
 */
static inline void expect_(struct fixture *f, const char *want, int line)
{
	char err[CODEC_ERR_LEN];
	Fleetbench__Report *u = NULL;
	uint8_t *buf = NULL;
	size_t len;
	int r, expected = want ? -EINVAL : 0;

	r = codec_validate_report(&f->r, wall_ms(), err);
	CHECK_(r == expected && !strcmp(err, want ? want : ""),
	       "line %d: validate: %d \"%s\", expected \"%s\"", line, r, err,
	       want ? want : "");
	r = codec_pack_report(&f->r, &buf, &len);
	CHECK_(r == 0, "line %d: pack: %d", line, r);
	if (r)
		return;
	r = codec_unpack_report(buf, len, &u, err);
	CHECK_(r == expected && u && !strcmp(err, want ? want : ""),
	       "line %d: unpack: %d \"%s\", expected \"%s\"", line, r, err,
	       want ? want : "");
	/* on -EINVAL too the run_id is there for the Ack */
	if (u)
		CHECK_(!strcmp(u->run_id, f->r.run_id), "line %d: run_id",
		       line);
	codec_free_report(u);
	free(buf);
}
#define expect_invalid(f, want) expect_(f, want, __LINE__)
#define expect_valid(f) expect_(f, NULL, __LINE__)

/* expect_() for cases[i] of a table, naming the case when it fails. */
static inline void expect_case(struct fixture *f, const char *want, size_t i)
{
	int failed = check_fail_;

	expect_(f, want, __LINE__);
	if (check_fail_ != failed)
		fprintf(stderr, "  (cases[%zu])\n", i);
}

#endif
