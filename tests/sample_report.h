/* SPDX-License-Identifier: MIT */
/*
 * Valid Reports for the test clients (tests/integration/zsend.c,
 * tests/reliability/, tests/fuzz/): packed with the codec, of a few sizes
 * and shapes, optionally carrying one chosen text in every free-text field.
 */
#ifndef FLEETBENCH_SAMPLE_REPORT_H
#define FLEETBENCH_SAMPLE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sample_report {
	const char *run_id; /* required; not checked (zsend sends bad ones) */
	const char *provider; /* NULL: "sample" */
	const char *instance_type; /* NULL: "sample-1" */
	const char *hostname; /* NULL: "sample-host" */
	const char *agent_version; /* NULL: "sample" */
	const char *kernel_release; /* NULL: "6.1.0-sample" */
	/*
	 * Not NULL: this text (at most CODEC_MAX_STRING bytes of UTF-8) in
	 * every free-text field but the machine id and the sources: the
	 * labels, hostname, agent version, kernel version and command line,
	 * profile, a skipped benchmark's name, variant and skip reason, a
	 * parameter key and string value, a metric name and unit, a
	 * comparison's text fields, and probe_json's member "text".
	 */
	const char *text;
	/* with text: the labels and hostname stay as they are without it
	 * (labels refuse control characters, which other fields keep) */
	bool plain_labels;
	/*
	 * 0: the small report: one benchmark false_sharing/shared with the
	 * parameter threads = 2 and the metric ns_per_increment (ns) with
	 * samples 1.5, 2.25, 0.1. n > 0: a larger report whose numbers of
	 * benchmarks, parameters of each type, metrics, samples, windows and
	 * comparisons vary with n.
	 */
	unsigned shape;
	/*
	 * Shape 0 only. failed: a second benchmark, randread/io_uring_sqpoll,
	 * that failed ("SIGSEGV in randread/io_uring_sqpoll (repeat 2 of
	 * 3)": no metrics, no windows). out_of_bounds: the small benchmark
	 * has three windows of 0.5 s, and its sample 1 is 2^64 ns, longer
	 * than its window (proto/bounds.h): a collector refuses it.
	 */
	bool failed, out_of_bounds;
};

/*
 * Packs the report s describes into a new buffer (*ret, free() it), times
 * now. Returns 0 or -errno (codec_pack_report()).
 */
int sample_report_pack(const struct sample_report *s, uint8_t **ret,
		       size_t *ret_len);

/*
 * The same under a new run id (codec_uuid_new()), written into run_id and
 * set as s->run_id.
 */
int sample_report_pack_new(struct sample_report *s, char run_id[37],
			   uint8_t **ret, size_t *ret_len);

#endif
