/* SPDX-License-Identifier: MIT */
/* fleetbench-agent bench: the benchmark suite, its sizes from the profile. */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "log.h"

/* Sizes not set by config or flag come from the profile. */
static int bench_resolve(struct agent_config *cfg)
{
	struct bench_params prof = { 0 };
	struct bench_params *b = &cfg->bench;

	if (bench_params_profile(&prof, b->profile) < 0) {
		log_error("unknown profile '%s' (quick, standard or full)",
			  b->profile);
		return -EINVAL;
	}
	/* repeats from a flag or the config: exactly that many */
	b->adaptive = !b->repeats;
#define FILL(f)               \
	if (!b->f)            \
		b->f = prof.f
	FILL(repeats);
	FILL(target_pct);
	FILL(budget_s);
	FILL(max_repeats);
	FILL(chase_bytes);
	FILL(chase_accesses);
	FILL(fault_bytes);
	FILL(file_bytes);
	FILL(io_ms);
	FILL(iodepth);
	FILL(seq_bytes);
	FILL(seq_block);
	FILL(fs_increments);
	FILL(wb_bytes);
	FILL(wb_fsync_bytes);
	FILL(mmap_bytes);
	FILL(mmap_accesses);
	FILL(scaling_ms);
	FILL(bw_bytes);
	FILL(timeout_s);
	FILL(max_seconds);
	FILL(db_scale);
	FILL(db_rate);
	FILL(db_seconds);
#undef FILL
	if (!b->seed) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		b->seed = (ts.tv_sec * 1000003LL) ^ ts.tv_nsec ^ getpid();
		if (b->seed < 0)
			b->seed = -b->seed;
		b->seed |= 1;
	}
	if (b->adaptive && b->budget_s * 2 > b->timeout_s) {
		log_error("budget_s %lld leaves no room in the benchmark timeout "
			  "of %lld s (timeout_s): at most half of it",
			  b->budget_s, b->timeout_s);
		return -EINVAL;
	}
	if (b->seq_block % 4096) {
		log_error("seq_block %llu is not a multiple of 4096 (O_DIRECT)",
			  (unsigned long long)b->seq_block);
		return -EINVAL;
	}
	if (b->reserve_hugetlb && geteuid() != 0) {
		log_error("--reserve-hugetlb changes the hugetlb pool and needs root");
		return -EPERM;
	}
	if (b->writeback_dirty_bytes && geteuid() != 0) {
		log_error("--writeback-dirty-bytes changes vm.dirty_bytes and needs root");
		return -EPERM;
	}
	if (b->writeback_dirty_bytes && b->writeback_dirty_bytes < (1 << 20)) {
		log_error("writeback_dirty_bytes %llu is below 1M",
			  (unsigned long long)b->writeback_dirty_bytes);
		return -EINVAL;
	}
	if (b->with_database && geteuid() != 0) {
		log_error("--with-database starts PostgreSQL as another user and changes the THP mode: it needs root");
		return -EPERM;
	}
	b->dir = cfg->work_dir;
	b->spool_dir = cfg->spool_dir;
	return 0;
}

/* One line per failed benchmark variant: the journal of a timer's run. */
static void log_failures(const Fleetbench__BenchRun *bench)
{
	for (size_t i = 0; i < bench->n_benchmarks; i++) {
		const Fleetbench__Benchmark *b = bench->benchmarks[i];

		if (b->failure)
			log_error("benchmark %s/%s failed: %s", b->benchmark,
				  b->variant, b->failure);
	}
}

int agent_bench(struct agent_config *cfg, Fleetbench__BenchRun **ret)
{
	char err[512] = "";
	int r;

	agent_recover(cfg);
	r = bench_resolve(cfg);
	if (r < 0)
		return r;
	r = bench_check_room(&cfg->bench, arg_only, err, sizeof(err));
	if (r < 0) {
		log_error("%s", err);
		return r;
	}
	bench_install_signals();
	r = bench_suite_run(&cfg->bench, arg_only, ret, err, sizeof(err));
	if (r == -EINTR)
		log_error("interrupted: the benchmarks stopped and their files are removed");
	else if (r < 0)
		log_error("%s", err[0] ? err : strerror(-r));
	else
		log_failures(*ret);
	return r;
}

int agent_bench_status(int r)
{
	return r == -EINTR ? ST_INTERRUPTED :
	       r == -EINVAL ? ST_USAGE :
			      ST_FAILURE;
}

int cmd_bench(struct agent_config *cfg, const struct cli *cli)
{
	Fleetbench__BenchRun *bench = NULL;
	int r = agent_bench(cfg, &bench);
	int ret;

	if (r < 0)
		return agent_bench_status(r);
	ret = agent_print_report(NULL, bench, &cfg->bench);
	if (ret == ST_OK && bench_report_failed(bench))
		ret = ST_BENCH_FAILED;
	bench_run_free(bench);
	return ret;
}
