/* SPDX-License-Identifier: MIT */
/*
 * fleetbench-agent run: probe and bench in one report; with a collector
 * configured (or --no-send) the report is spooled, then the spool is sent.
 * --if-kernel-changed first asks the state directory (state.h) whether
 * the running kernel has been reported already.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "clock.h"
#include "cmd.h"
#include "codec.h"
#include "file.h"
#include "log.h"
#include "pack.h"
#include "report.h"
#include "state.h"
#include "tags.h"
#include "textfile.h"

/*
 * What the bench part of a report may add to the probe part, for the room
 * check before benchmarking: a whole quick run adds about 13 KiB (17
 * variants), more repeats a little more.
 */
#define BENCH_ALLOWANCE (32 << 10)

/* rep packed for the spool (pack.h), or logged why not. Exit status. */
static int pack_logged(const Fleetbench__Report *rep, uint8_t **ret,
		       size_t *ret_len)
{
	char err[PACK_ERR_LEN];

	if (report_pack(rep, ret, ret_len, err) < 0) {
		log_error("%s", err);
		return ST_FAILURE;
	}
	return ST_OK;
}

/*
 * The run's one report, from its probe and tags (the bench part added
 * after the benchmarks: report_add_bench()), in *ret. Exit status.
 */
static int report_start(struct json_object *probe, int64_t started,
			const struct tags *tags, Fleetbench__Report **ret)
{
	char why[REPORT_ERR_LEN];
	int r = report_build(probe, NULL, started, wall_ms(), ret, why);

	if (r == 0 && tags_to_report(tags, *ret) < 0) {
		snprintf(why, sizeof(why), "out of memory");
		r = -ENOMEM;
	}
	if (r < 0) {
		log_error("cannot make the report: %s", why);
		return ST_FAILURE;
	}
	return ST_OK;
}

/*
 * Before benchmarking: the report's probe part must be a valid report, and
 * it and an allowance for the bench part must fit in the spool. Exit status.
 */
static int check_room(const struct agent_config *cfg, struct spool *s,
		      const Fleetbench__Report *rep)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;
	uint64_t need, held = spool_bytes(s);
	int r = pack_logged(rep, &buf, &len);

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
			const Fleetbench__Report *rep)
{
	_cleanup_free_ uint8_t *buf = NULL;
	char err[SPOOL_ERR_LEN] = "";
	size_t len;
	int r = pack_logged(rep, &buf, &len);

	if (r != ST_OK)
		return r;
	r = spool_put(s, rep->run_id, buf, len, err);
	if (r < 0) {
		log_error("cannot spool report %s in '%s': %s", rep->run_id,
			  cfg->spool_dir, err[0] ? err : strerror(-r));
		return ST_FAILURE;
	}
	log_info("report %s spooled in %s (%zu bytes)", rep->run_id,
		 cfg->spool_dir, len);
	return ST_OK;
}

/*
 * One line of a /proc/sys/kernel file, without its newline: 0 and *ret
 * (free() it), or -errno (-ENODATA: empty).
 */
static int kernel_line(const char *path, char **ret)
{
	char *s = NULL;
	ssize_t n = read_full_file(path, 4096, &s);

	if (n < 0)
		return (int)n;
	s[strcspn(s, "\n")] = '\0';
	if (!*s) {
		free(s);
		return -ENODATA;
	}
	*ret = s;
	return 0;
}

/*
 * --if-kernel-changed: whether the running kernel is the one of the last
 * delivered report, so that this run has nothing to add. Anything that
 * leaves it in doubt (no state yet, a damaged one, the kernel unreadable)
 * runs. The running kernel is read where the probe reads the report's
 * kernel.release and kernel.version (the same values as uname(2)'s), so
 * that what is compared is what a report would say: on a real host they
 * never differ; where /proc/sys/kernel/osrelease is bind-mounted over (the
 * kernel roll-out's test, ansible/kernel_canary.yml) both follow it.
 * Always the running kernel's files, not those below --root.
 */
static bool kernel_unchanged(const struct agent_config *cfg)
{
	static const char *const files[] = { "/proc/sys/kernel/osrelease",
					     "/proc/sys/kernel/version" };
	_cleanup_free_ char *release = NULL, *version = NULL;
	char **vals[] = { &release, &version };
	char err[STATE_ERR_LEN] = "";
	struct state st;
	bool same;
	int r;

	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		r = kernel_line(files[i], vals[i]);
		if (r < 0) {
			log_warn("cannot read the running kernel ('%s'): %s: running",
				 files[i], strerror(-r));
			return false;
		}
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
	same = state_kernel_unchanged(&st, release, version);
	if (same)
		log_info("kernel %s unchanged since the last delivered report %s: nothing to do",
			 release, st.run_id);
	else
		log_info("kernel %s (%s) is not that of the last delivered report %s, %s (%s): running",
			 release, version, st.run_id, st.kernel_release,
			 st.kernel_version);
	state_release(&st);
	return same;
}

/*
 * --textfile-dir: checked before any work, so that a long run does not end
 * with nowhere to write. Exit status.
 */
static int textfile_check(const struct agent_config *cfg)
{
	int r;

	if (!cfg->textfile_dir || !*cfg->textfile_dir)
		return ST_OK;
	r = textfile_check_dir(cfg->textfile_dir);
	if (r < 0) {
		log_error("cannot write the node_exporter textfile in '%s' (textfile_dir): %s",
			  cfg->textfile_dir, strerror(-r));
		return ST_FAILURE;
	}
	return ST_OK;
}

/*
 * --textfile-dir: the report's capabilities and figures for node_exporter
 * (textfile.h), from the Report as it would be spooled, checked as the
 * collector checks it. Exit status.
 */
static int textfile_report(const struct agent_config *cfg,
			   const Fleetbench__Report *rep)
{
	char why[CODEC_ERR_LEN];
	int r;

	if (!cfg->textfile_dir || !*cfg->textfile_dir)
		return ST_OK;
	r = codec_validate_report(rep, wall_ms(), why);
	if (r >= 0) {
		r = textfile_write(rep, cfg->textfile_dir);
		if (r < 0)
			snprintf(why, sizeof(why), "%s", strerror(-r));
	}
	if (r < 0) {
		log_error("cannot write '%s/" TEXTFILE_NAME "': %s",
			  cfg->textfile_dir, why);
		return ST_FAILURE;
	}
	log_info("capabilities and figures written to %s/" TEXTFILE_NAME,
		 cfg->textfile_dir);
	return ST_OK;
}

int cmd_run(struct agent_config *cfg, const struct cli *cli)
{
	struct json_object *report = NULL;
	Fleetbench__BenchRun *bench = NULL;
	Fleetbench__Report *rep = NULL; /* the run's one report */
	/* a run spools when it has a collector to send to, or is told to */
	bool spooling = arg_no_send || (cfg->endpoints && *cfg->endpoints);
	struct collector c = { 0 };
	struct spool *s = NULL;
	int64_t started = wall_ms();
	struct tags tags = { 0 };
	char why[TAGS_ERR_LEN], why_report[REPORT_ERR_LEN];
	size_t failed = 0;
	int r, ret, textfile = ST_OK;

	/* bad tags are bad usage, told before anything runs */
	r = tags_parse(cfg->tags, &tags, why);
	if (r < 0) {
		tags_release(&tags);
		if (r == -ENOMEM) {
			log_error("out of memory");
			return ST_FAILURE;
		}
		log_error("%s", why);
		return ST_USAGE;
	}
	/* before anything else: a run with nothing to do touches nothing */
	if (arg_if_kernel_changed && kernel_unchanged(cfg)) {
		tags_release(&tags);
		return ST_OK;
	}
	if (textfile_check(cfg) != ST_OK) {
		tags_release(&tags);
		return ST_FAILURE;
	}
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
	/* the probe's time counts in the run's max_seconds */
	cfg->bench.run_started = bench_now();
	r = agent_probe(cfg, cli, &report);
	if (r < 0)
		goto out;
	/* a run that neither spools nor writes a textfile prints its
	 * results whatever the report would be */
	ret = report_start(report, started, &tags, &rep);
	if (ret != ST_OK && (spooling || (cfg->textfile_dir &&
					  *cfg->textfile_dir)))
		goto out;
	if (spooling) {
		ret = check_room(cfg, s, rep);
		if (ret != ST_OK)
			goto out;
	}
	ret = ST_FAILURE;
	r = agent_bench(cfg, &bench);
	if (r < 0) {
		ret = agent_bench_status(r);
		goto out;
	}
	failed = bench_report_failed(bench);
	r = rep ? report_add_bench(rep, bench, wall_ms(), why_report) : 0;
	if (r < 0) {
		log_error("cannot make the report: %s", why_report);
		goto out;
	}
	ret = ST_OK;
	if (spooling)
		ret = spool_report(cfg, s, rep);
	/* printed even when spooling failed: the results are not lost */
	r = agent_print_report(report, bench, &cfg->bench);
	if (ret == ST_OK)
		ret = r;
	/* before sending, which may wait out a collector for long */
	textfile = textfile_report(cfg, rep);
	if (ret == ST_OK && spooling && !arg_no_send)
		ret = agent_flush_spool(cfg, s, &c, stderr);
	if (ret == ST_OK)
		ret = textfile;
	/* 1 and 3 say more than a failed benchmark: they win */
	if (ret == ST_OK && failed)
		ret = ST_BENCH_FAILED;
out:
	tags_release(&tags);
	report_free(rep);
	bench_run_free(bench);
	json_object_put(report);
	spool_close(s);
	collector_release(&c);
	return ret;
}

