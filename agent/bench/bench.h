/* SPDX-License-Identifier: MIT */
/*
 * The standardized benchmark suite: what the probe says a host allows,
 * measured. Each benchmark is a struct bench_ops in the table in bench.c;
 * the driver runs setup, then `repeats` calls of run (each measuring every
 * variant once, interleaved A B A B ... so drift hits all variants alike),
 * then teardown, and computes medians and ratio intervals from the raw
 * per-repeat samples.
 *
 * Each benchmark runs in a child process of its own, named "fb-<benchmark>"
 * (cut to 15 characters: "fb-false_sharin"), which hands its results back
 * when it is done. A child that dies (a signal, an error, an overrun of
 * timeout_s) costs only its own benchmark: its variants are reported
 * "failed" with where it died, and the other benchmarks' samples are kept.
 *
 * The results are the report's own messages (proto/fleetbench.proto): each
 * variant a Fleetbench__Benchmark (with its Params, Metrics and Windows),
 * each comparison a Fleetbench__Comparison, the method a
 * Fleetbench__Method, all held in a Fleetbench__BenchRun. A variant's
 * status is its fields': failure set means failed, skip_reason set means
 * skipped, else ok (bench_variant_status()). JSON is made from them only
 * at the edge (`bench --json`, by pbjson_from_message(); docs/bench.md).
 *
 * Benchmark modules do not print: they record samples, or skip a variant
 * with a reason, and return -errno when they cannot go on (which fails
 * their benchmark, not the suite).
 */
#ifndef FLEETBENCH_BENCH_H
#define FLEETBENCH_BENCH_H

#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "fleetbench.pb-c.h"
#include "method.h"

/* Sizes and counts of one run; a profile fills them, flags override. */
struct bench_params {
	char *profile; /* "quick", "standard" or "full" */
	char *dir; /* work directory for files (randread, seqwrite) */
	long long repeats;
	uint64_t chase_bytes; /* thp_chase buffer */
	long long chase_accesses; /* dependent loads per repeat */
	uint64_t fault_bytes; /* thp_fault region */
	uint64_t file_bytes; /* randread file, written in full first */
	long long io_ms; /* randread time per engine per repeat */
	long long iodepth; /* io_uring and libaio queue depth */
	uint64_t seq_bytes; /* seqwrite bytes per engine per repeat */
	uint64_t seq_block; /* seqwrite block size */
	long long fs_increments; /* false_sharing increments per thread */
	uint64_t wb_bytes; /* writeback: buffered bytes written per repeat */
	uint64_t wb_fsync_bytes; /* writeback: an fsync every so many bytes */
	uint64_t mmap_bytes; /* mmap_read file size */
	long long mmap_accesses; /* mmap_read dependent loads per repeat */
	long long scaling_ms; /* io_scaling time per point per repeat */
	uint64_t bw_bytes; /* membw: one of its 3 arrays */
	long long steal_threshold_pct; /* a repeat above it is noisy */
	/* a window with more CPU pressure (PSI cpu "some", percent of its
	 * wall time) is noisy; also I/O pressure, in the I/O benchmarks */
	long long psi_cpu_threshold_pct;
	long long psi_io_threshold_pct;
	/* Adaptive repeats: at least `repeats` rounds, then more until every
	 * comparison's interval is within target_pct of its ratio, while the
	 * benchmark's rounds fit in budget_s, at most max_repeats rounds.
	 * false: exactly `repeats` (--repeats N). */
	bool adaptive;
	long long target_pct;
	long long budget_s;
	long long max_repeats;
	/* The whole run's time, seconds (--max-seconds; the profile's budget
	 * by default): each benchmark's allowance is a share of what is left
	 * of it when the benchmark starts, by its weight (docs/bench.md,
	 * "Time allowances"). run_started: when the run began (bench_now();
	 * 0: when bench_suite_run() was called), so the probe's time counts. */
	long long max_seconds;
	double run_started;
	long long reserve_hugetlb; /* 2 MiB pages to reserve (root), 0: none */
	/* writeback's tuned variant: vm.dirty_bytes (root), 0: not run */
	uint64_t writeback_dirty_bytes;
	long long seed; /* PRNG seed: permutations, offsets, bootstrap */
	char *randread_file; /* read this existing file instead (vs_fio) */
	const char *root; /* kernel files below this root; NULL: "/" (tests) */
	long long timeout_s; /* limit of one benchmark's process, 0: none */
	bool with_database; /* database: asked for (root only) */
	long long db_scale; /* database: pgbench -i scale (about 15 MB each) */
	long long db_rate; /* database: pgbench --rate, transactions/s */
	long long db_seconds; /* database: pgbench -T per mode per repeat */
	char *pg_bindir; /* database: initdb, postgres, pgbench; NULL: PG 15's */
	const char *spool_dir; /* database: keeps the THP mode to restore */
};

/* One benchmark variant's results: built by the driver, filled by ops. */
struct bench_result;

/* The state of one suite run: results, the repeat window, the stop flag. */
struct bench_run;

struct bench_ops {
	const char *name;
	const char *summary;
	/* Runs in the "full" profile only (a long sweep), unless --only names
	 * it: quick and standard leave it out. */
	bool full_only;
	/* An I/O benchmark: a window with I/O pressure above
	 * psi_io_threshold_pct is noisy too. */
	bool io;
	/* The I/O rule's threshold for it is at least this, percent: its own
	 * writes stall tasks that are not its threads (the filesystem's
	 * journal, the device's completions), which its own waits do not
	 * explain (docs/bench.md, "Trust markers"). 0: the setting alone. */
	long long io_threshold_min_pct;
	/* Its share of the profile's time, per profile (quick, standard,
	 * full: proto/method.h's order): the allowance of a benchmark is what
	 * is left of the run times its weight over the weights of the
	 * benchmarks still to run (bench.c, allowance_of()). Set from the
	 * time its least rounds take in that profile (docs/bench.md, "Time
	 * allowances"). */
	unsigned int weight[METHOD_PROFILES];
	/* Optional: the memory it holds at once and the disk space it writes
	 * in p->dir, bytes, with p's sizes. The run refuses to start when the
	 * largest of either does not fit (bench_check_room()); each
	 * benchmark checks again when it makes them. */
	void (*needs)(const struct bench_params *p, uint64_t *memory,
		      uint64_t *disk);
	/* Allocates buffers and files, decides which variants run (creating
	 * their results, skipped or not). *state is passed to run/teardown.
	 * Returns 0 or -errno; a benchmark that cannot run at all on this host
	 * creates its results as skipped and returns 0. */
	int (*setup)(struct bench_run *run, const struct bench_params *p,
		     void **state);
	/* One repeat: measures every non-skipped variant once, interleaved. */
	int (*run)(struct bench_run *run, void *state, unsigned int repeat);
	/* Frees everything setup made; also called after a failed run or an
	 * interrupt. Must accept what a failed setup left. */
	void (*teardown)(struct bench_run *run, void *state);
	/* Adds the comparisons (ratios with intervals) from the samples. */
	void (*compare)(struct bench_run *run, void *state);
	/* Optional, in the agent: after the benchmark's process died
	 * without its teardown (killed on its timeout, by a signal),
	 * removes what it left on the host. Says what it did in what ("":
	 * nothing); the number of things done, or -errno. */
	int (*recover)(const struct bench_params *p, char *what, size_t len);
};

/* ---- driver ---- */

/* Fills p with a profile's defaults. -EINVAL for an unknown profile. */
int bench_params_profile(struct bench_params *p, const char *profile);

/* The benchmarks, in run order. */
size_t bench_count(void);
const struct bench_ops *bench_get(size_t i);
const struct bench_ops *bench_find(const char *name);

/*
 * Runs the benchmarks named in `only` (comma-separated; NULL: all) with p
 * and returns their results in *ret (free with bench_run_free()): every
 * variant in run order, the comparisons, the profile, the seed and the
 * method. Each benchmark runs in a child process (see the top). Returns 0,
 * also when benchmarks failed (their failure is set: bench_report_failed()
 * counts them); -EINVAL for an unknown name in only (err says which);
 * -EINTR when SIGINT/SIGTERM arrived (forwarded to the running child as
 * SIGTERM, SIGKILL after BENCH_STOP_WAIT_S; every teardown ran or the child
 * is gone, so no file is left, and a system setting the child changed is
 * restored); other -errno on a failure of the driver itself, with err
 * saying what.
 */
int bench_suite_run(const struct bench_params *p, const char *only,
		    Fleetbench__BenchRun **ret, char *err, size_t errlen);

/* Frees what bench_suite_run() returned (every part from malloc); NULL is
 * fine. */
void bench_run_free(Fleetbench__BenchRun *b);

/* How long a child has to stop after SIGTERM before SIGKILL. */
#define BENCH_STOP_WAIT_S 10

/* "failed" when failure is set, "skipped" when skip_reason is, else "ok". */
const char *bench_variant_status(const Fleetbench__Benchmark *b);

/* The number of variants of b whose failure is set. */
size_t bench_report_failed(const Fleetbench__BenchRun *b);

/*
 * The bounds pass the driver makes over each child's results: every metric
 * of every "ok" variant is checked with bounds_check_metric() against the
 * wall_s of its windows (window k for sample k). A variant that breaks one
 * gets the failure "out of bounds: <why>", its metrics and windows dropped
 * (parameters kept), and each comparison of its benchmark that uses it
 * loses its ratio, interval, level and method and gets the reason
 * "<variant> failed: <failure>". Returns how many variants it failed.
 */
size_t bench_check_bounds(Fleetbench__BenchRun *b);

/* Whether the comma-separated list only names benchmark name. */
int bench_only_has(const char *only, const char *name);

/* Whether ops runs in a run of profile with only (NULL: the profile's
 * own benchmarks): named by only, or, without only, in the profile. */
bool bench_selected(const struct bench_ops *ops, const char *profile,
		    const char *only);

/*
 * The method of a run with p and only (proto/fleetbench.proto, Method):
 * the profile, repeats, chase_bytes, ..., fs_increments, only (the names
 * when a subset ran, in run order) and randread_file, with the key
 * "standard" when p is the profile's own and every benchmark ran, else the
 * profile followed by each difference: "standard+chase_bytes=64M+only=
 * randread". 0 and *ret (free with fleetbench__method__free_unpacked(m,
 * NULL)), -EINVAL for an unknown profile, or -ENOMEM.
 */
int bench_method_new(const struct bench_params *p, const char *only,
		     Fleetbench__Method **ret);

/* Installs the SIGINT/SIGTERM handlers that make bench_interrupted() true. */
void bench_install_signals(void);

/* ---- for bench_*.c modules ---- */

/* True once SIGINT or SIGTERM arrived: stop measuring and return -EINTR. */
bool bench_interrupted(void);

/* Whether the running benchmark's allowance is spent (in its process; no
 * allowance: never): a setup's long loop (writing a file) stops there. */
bool bench_overdue(void);

const struct bench_params *bench_params_of(struct bench_run *run);

/* Root for kernel files (/proc/meminfo, /sys/...): "/" except in tests. */
const char *bench_root(struct bench_run *run);

/*
 * Reads a kernel file below the root (/proc/vmstat, /proc/meminfo,
 * /sys/kernel/mm/hugepages/...) into a new NUL-terminated buffer. Length or
 * -errno. (/proc/self/smaps is this process's own: read it directly.)
 */
ssize_t bench_read_file(struct bench_run *run, const char *path, char **ret);

/*
 * A new result for benchmark/variant, appended to the run's benchmarks,
 * status "ok".
 * NULL on ENOMEM.
 */
struct bench_result *bench_result_new(struct bench_run *run,
				      const char *benchmark,
				      const char *variant);

/* Marks it skipped with a reason (e.g. "sqpoll: EPERM"); no samples. */
void bench_result_skip(struct bench_result *res, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
bool bench_result_skipped(const struct bench_result *res);
const char *bench_result_variant(const struct bench_result *res);

/* Parameters of the variant, as they were measured. */
void bench_param_i64(struct bench_result *res, const char *key, int64_t v);
void bench_param_str(struct bench_result *res, const char *key,
		     const char *v);

/*
 * Brackets one measured repeat of a variant: records CPU steal and the
 * 1-minute load average over exactly that window, and the wall time.
 */
void bench_window_begin(struct bench_result *res);
void bench_window_end(struct bench_result *res);

/* Appends one raw sample (one per repeat) of metric, in unit. */
void bench_sample(struct bench_result *res, const char *metric,
		  const char *unit, double v);

/* The samples recorded so far for metric; NULL/0 when none. */
const double *bench_samples(const struct bench_result *res,
			    const char *metric, size_t *ret_n);

/*
 * Adds comparison `name`: median(num's metric) / median(den's metric) with
 * a 95% paired-bootstrap interval. Skipped variants or missing samples add
 * a comparison whose ratio is null with the reason.
 */
void bench_compare(struct bench_run *run, const char *name,
		   const struct bench_result *num,
		   const struct bench_result *den, const char *metric);

/* ---- safety ---- */

/*
 * 0 when `bytes` fits in MemAvailable with a margin (25%, at least
 * 256 MiB), else -ENOMEM with why (sizes, MemAvailable) in err.
 */
int bench_check_memory(struct bench_run *run, uint64_t bytes, char *err,
		       size_t errlen);

/* 0 when `bytes` fits in dir's free space with a margin (10%, at least
 * 512 MiB), else -ENOSPC with why in err; -errno when dir is unusable. */
int bench_check_space(const char *dir, uint64_t bytes, char *err,
		      size_t errlen);

/*
 * Before a run (the agent's bench and run; bench_suite_run() leaves each
 * benchmark to refuse on its own): 0 when the most memory any benchmark of
 * it holds at once
 * (bench_ops.needs) fits in MemAvailable, and the largest file in the work
 * directory fits in its free space, each with the margins above; else
 * -ENOMEM or -ENOSPC with err naming both figures and the benchmark that
 * needs them ("refused: profile standard needs 2112 MiB of memory at once
 * (thp_chase) and a 256 MiB margin, but MemAvailable is 1900 MiB").
 */
int bench_check_room(const struct bench_params *p, const char *only,
		     char *err, size_t errlen);

/*
 * Creates an unnamed file in dir (O_TMPFILE, else a named file unlinked at
 * once), so nothing is left behind however the agent ends. flags are added
 * to O_RDWR | O_CLOEXEC (e.g. O_DIRECT). Returns the fd or -errno; with
 * O_DIRECT, -EINVAL means the filesystem refuses direct I/O (tmpfs).
 */
int bench_tmpfile(const char *dir, int flags);

/*
 * Writes value into a kernel file below the root (a hugetlb pool size).
 * 0 or -errno.
 */
int bench_write_file(struct bench_run *run, const char *path,
		     const char *value);

/*
 * Before a benchmark changes a system setting: should its process die
 * before bench_restore_done(run, path), the driver writes `previous` back
 * into path (below the root). Up to 4 at a time; 0, or -ENOSPC when all
 * are in use, -ENAMETOOLONG for a path or value too long to keep.
 */
int bench_restore_arm(struct bench_run *run, const char *path,
		      const char *previous);
/* The setting at path is restored: the driver need not. */
void bench_restore_done(struct bench_run *run, const char *path);

/*
 * Says what went wrong before a step returns -errno (e.g. "initdb failed
 * (exit status 1): ..."): the benchmark's failure is then "<strerror>:
 * <text> in <where>". The last call wins; outside a child it does nothing.
 */
void bench_fail_text(struct bench_run *run, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Monotonic seconds. */
double bench_now(void);

/* The CPUs this process may run on, in *ret (free with CPU_FREE), and the
 * set's size in bytes for the CPU_*_S macros. 0 or -errno. */
int bench_affinity(cpu_set_t **ret, size_t *ret_size);

#endif
