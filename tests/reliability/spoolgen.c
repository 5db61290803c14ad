/* SPDX-License-Identifier: MIT */
/*
 * spoolgen: fills an agent spool with valid reports through the agent's
 * own spool_put() (agent/ship/spool.c), much faster than one `fleetbench-agent
 * run` each, and prints their run ids, one a line. The reports are
 * tests/sample_report.h's: the small one, or shaped ones (--shaped: report
 * i has shape i + 1), optionally with one text in every free-text field.
 *
 * usage: spoolgen --spool-dir DIR --count N [--shaped] [--text TEXT]
 *                 [--provider P] [--instance-type T]
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "sample_report.h"
#include "spool.h"
#include "tool.h"

static const char *arg_dir;
static unsigned long arg_count;
static bool arg_shaped;
static struct sample_report arg_report;

static const struct tool_opt opts[] = {
	TOOL_OPT_STRING("spool-dir", &arg_dir),
	TOOL_OPT_ULONG("count", &arg_count, 1, 1000000),
	TOOL_OPT_FLAG("shaped", &arg_shaped),
	TOOL_OPT_STRING("text", &arg_report.text),
	TOOL_OPT_FLAG("plain-labels", &arg_report.plain_labels),
	TOOL_OPT_STRING("provider", &arg_report.provider),
	TOOL_OPT_STRING("instance-type", &arg_report.instance_type),
};

static const struct tool tool = TOOL("spoolgen", opts,
	"usage: spoolgen --spool-dir DIR --count N [--shaped] [--text TEXT]\n"
	"                [--plain-labels] [--provider P] [--instance-type T]\n");

int main(int argc, char **argv)
{
	char err[SPOOL_ERR_LEN], run_id[37];
	struct spool *sp;

	tool_parse(&tool, argc, argv);
	if (!arg_dir || !arg_count)
		tool_usage_error(&tool, "--spool-dir and --count are needed");
	sp = spool_open(arg_dir, 0, err);
	if (!sp) {
		fprintf(stderr, "spoolgen: %s\n", err);
		return 1;
	}
	for (unsigned long i = 0; i < arg_count; i++) {
		uint8_t *buf = NULL;
		size_t len = 0;
		int r;

		arg_report.shape = arg_shaped ? (unsigned)i + 1 : 0;
		r = sample_report_pack_new(&arg_report, run_id, &buf, &len);
		err[0] = '\0';
		if (r == 0)
			r = spool_put(sp, run_id, buf, len, err);
		free(buf);
		if (r < 0) {
			fprintf(stderr, "spoolgen: report %lu: %s\n", i,
				err[0] ? err : strerror(-r));
			spool_close(sp);
			return 1;
		}
		printf("%s\n", run_id);
	}
	spool_close(sp);
	return fflush(stdout) == 0 ? 0 : 1;
}
