/* SPDX-License-Identifier: MIT */
/*
 * fleetbench-agent run: probe and bench in one report; with a collector
 * configured (or --no-send) the report is spooled, then the spool is sent.
 * --if-kernel-changed first asks the state directory (state.h) whether
 * the running kernel has been reported already.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/utsname.h>

#include "cleanup.h"
#include "clock.h"
#include "cmd.h"
#include "log.h"
#include "pack.h"
#include "state.h"

/*
 * What the bench part of a report may add to the probe part, for the room
 * check before benchmarking: a whole quick run adds about 13 KiB (17
 * variants), more repeats a little more.
 */
#define BENCH_ALLOWANCE (32 << 10)

/* The report packed for the spool (pack.h), or logged why not. Exit status. */
static int pack_logged(struct json_object *probe,
		       const Fleetbench__BenchRun *bench, int64_t started,
		       int64_t finished, char run_id[PACK_RUN_ID_LEN],
		       uint8_t **ret, size_t *ret_len)
{
	char err[PACK_ERR_LEN];

	if (report_pack(probe, bench, started, finished, run_id, ret, ret_len,
			err) < 0) {
		log_error("%s", err);
		return ST_FAILURE;
	}
	return ST_OK;
}

/*
 * Before benchmarking: the report's probe part must make a valid report, and
 * it and an allowance for the bench part must fit in the spool. Exit status.
 */
static int check_room(const struct agent_config *cfg, struct spool *s,
		      struct json_object *probe, int64_t started)
{
	_cleanup_free_ uint8_t *buf = NULL;
	char run_id[PACK_RUN_ID_LEN];
	size_t len;
	uint64_t need, held = spool_bytes(s);
	int r = pack_logged(probe, NULL, started, wall_ms(), run_id, &buf, &len);

	if (r != ST_OK)
		return r;
	need = 64 + len + BENCH_ALLOWANCE; /* docs/spool.md: 64-byte header */
	if (cfg->spool_limit && held + need > cfg->spool_limit) {
		log_error("spool '%s' has no room for this run: it holds %" PRIu64
			  " bytes, the report needs about %" PRIu64
			  ", the limit is %" PRIu64
			  " bytes; send the spool (fleetbench-agent send) or raise spool_limit",
			  cfg->spool_dir, held, need, cfg->spool_limit);
		return ST_FAILURE;
	}
	return ST_OK;
}

/* Writes the report into the spool: durably, before any send. */
static int spool_report(const struct agent_config *cfg, struct spool *s,
			struct json_object *probe,
			const Fleetbench__BenchRun *bench, int64_t started,
			int64_t finished)
{
	_cleanup_free_ uint8_t *buf = NULL;
	char err[SPOOL_ERR_LEN] = "", run_id[PACK_RUN_ID_LEN];
	size_t len;
	int r = pack_logged(probe, bench, started, finished, run_id, &buf,
			    &len);

	if (r != ST_OK)
		return r;
	r = spool_put(s, run_id, buf, len, err);
	if (r < 0) {
		log_error("cannot spool report %s in '%s': %s", run_id,
			  cfg->spool_dir, err[0] ? err : strerror(-r));
		return ST_FAILURE;
	}
	log_info("report %s spooled in %s (%zu bytes)", run_id,
		 cfg->spool_dir, len);
	return ST_OK;
}

/*
 * --if-kernel-changed: whether the running kernel is the one of the last
 * delivered report, so that this run has nothing to add. Anything that
 * leaves it in doubt (no state yet, a damaged one, uname failing) runs.
 */
static bool kernel_unchanged(const struct agent_config *cfg)
{
	char err[STATE_ERR_LEN] = "";
	struct state st;
	struct utsname u;
	bool same;
	int r;

	if (uname(&u) < 0) {
		log_warn("cannot read the running kernel (uname): %s: running",
			 strerror(errno));
		return false;
	}
	r = state_read(cfg->state_dir, &st, err);
	if (r == -ENOENT) {
		log_info("no delivered report recorded in '%s' yet: running",
			 cfg->state_dir);
		return false;
	}
	if (r < 0) {
		log_warn("%s: running", err);
		return false;
	}
	same = state_kernel_unchanged(&st, u.release, u.version);
	if (same)
		log_info("kernel %s unchanged since the last delivered report %s: nothing to do",
			 u.release, st.run_id);
	else
		log_info("kernel %s (%s) is not that of the last delivered report %s, %s (%s): running",
			 u.release, u.version, st.run_id, st.kernel_release,
			 st.kernel_version);
	state_release(&st);
	return same;
}

int cmd_run(struct agent_config *cfg, const struct cli *cli)
{
	struct json_object *report = NULL;
	Fleetbench__BenchRun *bench = NULL;
	/* a run spools when it has a collector to send to, or is told to */
	bool spooling = arg_no_send || (cfg->endpoints && *cfg->endpoints);
	struct collector c = { 0 };
	struct spool *s = NULL;
	int64_t started = wall_ms();
	size_t failed = 0;
	int r, ret;

	/* before anything else: a run with nothing to do touches nothing */
	if (arg_if_kernel_changed && kernel_unchanged(cfg))
		return ST_OK;
	if (spooling && !arg_no_send) {
		ret = collector_setup(cfg, &c);
		if (ret != ST_OK)
			goto out;
	}
	if (spooling) {
		s = agent_spool_open(cfg);
		if (!s) {
			ret = ST_FAILURE;
			goto out;
		}
	}
	ret = ST_FAILURE;
	r = agent_probe(cfg, cli, &report);
	if (r < 0)
		goto out;
	if (spooling) {
		ret = check_room(cfg, s, report, started);
		if (ret != ST_OK)
			goto out;
	}
	r = agent_bench(cfg, &bench);
	if (r < 0) {
		ret = agent_bench_status(r);
		goto out;
	}
	ret = ST_OK;
	failed = bench_report_failed(bench);
	if (spooling)
		ret = spool_report(cfg, s, report, bench, started,
				   wall_ms());
	/* printed even when spooling failed: the results are not lost */
	r = agent_print_report(report, bench, &cfg->bench);
	if (ret == ST_OK)
		ret = r;
	if (ret == ST_OK && spooling && !arg_no_send)
		ret = agent_flush_spool(cfg, s, &c, stderr);
	/* 1 and 3 say more than a failed benchmark: they win */
	if (ret == ST_OK && failed)
		ret = ST_BENCH_FAILED;
out:
	bench_run_free(bench);
	json_object_put(report);
	spool_close(s);
	collector_release(&c);
	return ret;
}

