/* SPDX-License-Identifier: MIT */
/* What bench_io.c (randread, seqwrite) shares with io_scaling.c: the file
 * randread reads. */
#ifndef FLEETBENCH_BENCH_IO_H
#define FLEETBENCH_BENCH_IO_H

#include <stddef.h>
#include <stdint.h>

#include "bench.h"

struct io_file {
	int fd; /* O_DIRECT; -1: none */
	uint64_t span; /* bytes in use: whole 4 KiB blocks */
	char fs[32]; /* its filesystem ("ext4") */
};

/* The work directory of p: p->dir, else /var/tmp. */
const char *io_work_dir(const struct bench_params *p);

/*
 * The file randread reads: p->randread_file opened read-only with
 * O_DIRECT, else an unnamed O_DIRECT file of p->file_bytes (whole 4 KiB
 * blocks) in io_work_dir(p), written in full with the pattern seeded by
 * p->seed (io_pattern_write_file()), so nothing is left behind. Returns 0
 * with f->fd open (the caller closes it); 0 with f->fd -1 and why saying
 * why it cannot be, a skip reason (the directory unusable, no room,
 * O_DIRECT refused, a memory-backed filesystem, a file too small); or
 * -ENOMEM / -EINTR.
 */
int io_randread_file(const struct bench_params *p, struct io_file *f,
		     char *why, size_t len);

/* The file's parameters on res: block_bytes (4096), file_bytes (f's span,
 * else p's whole blocks), file, dir (when the agent's own), fs. */
void io_file_params(struct bench_result *res, const struct bench_params *p,
		    const struct io_file *f);

/* bench_ops.needs of randread and io_scaling: its file, unless
 * p->randread_file names one. */
void io_randread_needs(const struct bench_params *p, uint64_t *memory,
		       uint64_t *disk);

#endif
