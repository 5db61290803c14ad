/* SPDX-License-Identifier: MIT */
/* membw: the STREAM-style kernels of membw.c, callable on their own. */
#ifndef FLEETBENCH_MEMBW_H
#define FLEETBENCH_MEMBW_H

#include <stddef.h>
#include <stdint.h>

/* In the order one iteration runs them (STREAM's four, then two more). */
enum membw_kernel {
	MEMBW_COPY, /* c = a */
	MEMBW_SCALE, /* b = s * c */
	MEMBW_ADD, /* c = a + b */
	MEMBW_TRIAD, /* a = b + s * c */
	MEMBW_READ, /* sum of a: loads only, as sysbench memory's read */
	MEMBW_WRITE, /* c = s: stores only, as sysbench memory's write */
	MEMBW_NKERNELS
};

/* The scalar s of scale, triad and write. */
#define MEMBW_SCALAR 3.0

/* The metric of kernel k: "copy_gbps", ..., "write_gbps". */
const char *membw_kernel_metric(enum membw_kernel k);

/*
 * The arrays kernel k moves, counted as STREAM counts them: copy and scale
 * 2 (one read, one written), add and triad 3, read and write 1. The write
 * allocate (a store's line read before it is written) is not counted.
 */
unsigned int membw_kernel_arrays(enum membw_kernel k);

/*
 * One measurement: `threads` threads, each owning slice [lo, hi) of the
 * three arrays (slices start on 4 KiB boundaries), first write their slice
 * (a = 1, b = 2, c = 0: the first touch decides where and in which page
 * size the memory is), wait at a barrier, then run the kernels `iterations`
 * times, each kernel between two barriers and timed by thread 0 from one
 * barrier to the next: a kernel's time is its slowest thread's.
 */
struct membw_job {
	double *a, *b, *c; /* n doubles each, not touched before */
	size_t n;
	unsigned int threads, iterations;

	/* results: the fastest iteration of each kernel (STREAM's "best
	 * rate"), and the bytes that kernel counts per iteration */
	double best_s[MEMBW_NKERNELS];
	uint64_t bytes[MEMBW_NKERNELS];
	unsigned int done; /* iterations completed */
	double read_sum; /* the last read kernel's sum */
};

#define MEMBW_MAX_THREADS 4096

/*
 * Runs job (threads 1 to MEMBW_MAX_THREADS, iterations >= 1). Returns 0,
 * -EINTR when bench_interrupted() stopped it between iterations (done says
 * how many ran), -EINVAL for a bad job, or pthread's -errno.
 */
int membw_job_run(struct membw_job *job);

/* GB/s (1 GB = 1e9 bytes) of bytes moved in seconds; 0 when seconds <= 0. */
double membw_gbps(uint64_t bytes, double seconds);

#endif
