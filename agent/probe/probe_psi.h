/* SPDX-License-Identifier: MIT */
/*
 * Pressure stall information (PSI): the /proc/pressure/{cpu,io,memory}
 * parser and the share math, for the psi probe and the benchmarks' windows.
 */
#ifndef FLEETBENCH_PROBE_PSI_H
#define FLEETBENCH_PROBE_PSI_H

#include <stdbool.h>
#include <stdint.h>

/* The resources, in report order; probe_psi_resource() names them. */
enum probe_psi_res {
	PSI_CPU,
	PSI_IO,
	PSI_MEMORY,
	PSI_NRES,
};

/* "cpu", "io", "memory"; NULL past PSI_NRES. */
const char *probe_psi_resource(enum probe_psi_res res);

/* Where the kernel keeps them: "/proc/pressure/cpu", ... */
#define PROBE_PSI_DIR "/proc/pressure"

/*
 * The totals of one pressure file: the microseconds during which at least
 * one task (some) or every non-idle task (full) was stalled on the resource
 * since boot. The kernel has printed a "full" line for cpu only since 5.13
 * (always zero system-wide); io and memory have always had one.
 */
struct probe_psi_totals {
	uint64_t some_us, full_us; /* full_us is 0 without a full line */
	bool has_full;
};

/*
 * Parses the text of a pressure file:
 *     some avg10=0.00 avg60=0.00 avg300=0.00 total=0
 *     full avg10=0.00 avg60=0.00 avg300=0.00 total=0
 * The "some" line is required, the "full" line optional, both in that
 * order, each with avg10, avg60 and avg300 (decimal numbers) and total (a
 * decimal integer), each ended by a newline (none: the text was cut
 * short). Returns 0, or -EBADMSG for anything else; *ret is written only
 * on success.
 */
int probe_psi_parse(const char *text, struct probe_psi_totals *ret);

/*
 * The share of wall_s seconds that the total grew from a_us to b_us, in
 * percent, rounded to two decimals and at most 100 (see docs/bench.md:
 * the kernel's and the caller's clocks differ by microseconds). Returns 0,
 * -ERANGE when the total went backwards, -EINVAL when wall_s is not
 * positive.
 */
int probe_psi_percent(uint64_t a_us, uint64_t b_us, double wall_s,
		      double *ret);

#endif
