/* SPDX-License-Identifier: MIT */
/* The benchmarks: one file per benchmark family, each exporting its ops. */
#ifndef FLEETBENCH_BENCH_MODULES_H
#define FLEETBENCH_BENCH_MODULES_H

#include "bench.h"

extern const struct bench_ops bench_thp_chase_ops;     /* thp_chase.c */
extern const struct bench_ops bench_thp_fault_ops;     /* thp_fault.c */
extern const struct bench_ops bench_randread_ops;      /* bench_io.c */
extern const struct bench_ops bench_seqwrite_ops;      /* bench_io.c */
extern const struct bench_ops bench_false_sharing_ops; /* bench_false_sharing.c */
extern const struct bench_ops bench_core_latency_ops;  /* core_latency.c */
extern const struct bench_ops bench_writeback_ops;     /* writeback.c */
extern const struct bench_ops bench_mmap_read_ops;     /* mmap_read.c */
extern const struct bench_ops bench_membw_ops;         /* membw.c */
extern const struct bench_ops bench_io_scaling_ops;    /* io_scaling.c */
extern const struct bench_ops bench_database_ops;      /* database.c */

#endif
