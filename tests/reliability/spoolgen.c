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
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "sample_report.h"
#include "spool.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: spoolgen --spool-dir DIR --count N [--shaped] [--text TEXT]\n"
		   "                [--provider P] [--instance-type T]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "spool-dir", required_argument, NULL, 'd' },
		{ "count", required_argument, NULL, 'n' },
		{ "shaped", no_argument, NULL, 's' },
		{ "text", required_argument, NULL, 't' },
		{ "provider", required_argument, NULL, 'p' },
		{ "instance-type", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct sample_report s = { 0 };
	const char *dir = NULL;
	char err[SPOOL_ERR_LEN], run_id[37], *end;
	unsigned long count = 0;
	bool shaped = false;
	struct spool *sp;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 'n':
			errno = 0;
			count = strtoul(optarg, &end, 10);
			if (errno || *end || !count || count > 1000000) {
				fprintf(stderr, "spoolgen: bad --count '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 's':
			shaped = true;
			break;
		case 't':
			s.text = optarg;
			break;
		case 'p':
			s.provider = optarg;
			break;
		case 'i':
			s.instance_type = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || !dir || !count) {
		usage(stderr);
		return 2;
	}
	sp = spool_open(dir, 0, err);
	if (!sp) {
		fprintf(stderr, "spoolgen: %s\n", err);
		return 1;
	}
	s.run_id = run_id;
	for (unsigned long i = 0; i < count; i++) {
		uint8_t *buf = NULL;
		size_t len = 0;
		int r = codec_uuid_new(run_id);

		s.shape = shaped ? (unsigned)i + 1 : 0;
		if (r == 0)
			r = sample_report_pack(&s, &buf, &len);
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
