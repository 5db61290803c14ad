/* SPDX-License-Identifier: MIT */
/* fleetbench-agent spool: the spooled reports, their sizes and ages. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "clock.h"
#include "cmd.h"
#include "log.h"

static void format_age(int64_t s, char *buf, size_t size)
{
	if (s < 0)
		s = 0;
	if (s < 60)
		snprintf(buf, size, "%llds", (long long)s);
	else if (s < 3600)
		snprintf(buf, size, "%lldm %llds", (long long)s / 60,
			 (long long)s % 60);
	else if (s < 86400)
		snprintf(buf, size, "%lldh %lldm", (long long)s / 3600,
			 (long long)s % 3600 / 60);
	else
		snprintf(buf, size, "%lldd %lldh", (long long)s / 86400,
			 (long long)s % 86400 / 3600);
}

int cmd_spool(struct agent_config *cfg, const struct cli *cli)
{
	_cleanup_free_ struct spool_entry *e = NULL;
	unsigned rejected = 0, quarantined = 0;
	struct json_object *o, *list;
	struct spool *s = agent_spool_open(cfg);
	int64_t now = wall_ms() / 1000;
	int n, r;

	if (!s)
		return ST_FAILURE;
	n = spool_list(s, &e);
	r = n < 0 ? n : spool_counts(s, &rejected, &quarantined);
	if (r < 0) {
		log_error("cannot list spool '%s': %s", cfg->spool_dir,
			  strerror(-r));
		spool_close(s);
		return ST_FAILURE;
	}
	if (!arg_json) {
		printf("spool %s: %d report%s, %" PRIu64 " bytes", cfg->spool_dir,
		       n, n == 1 ? "" : "s", spool_bytes(s));
		if (cfg->spool_limit)
			printf(" of %" PRIu64, cfg->spool_limit);
		printf("\n");
		if (n)
			printf("%-36s %10s  %s\n", "RUN ID", "BYTES", "AGE");
		for (int i = 0; i < n; i++) {
			char age[32];

			format_age(now - e[i].mtime, age, sizeof(age));
			printf("%-36s %10" PRIu64 "  %s\n", e[i].run_id,
			       e[i].size, age);
		}
		printf("rejected/: %u, quarantine/: %u\n", rejected,
		       quarantined);
	} else {
		o = json_object_new_object();
		list = json_object_new_array();
		json_object_object_add(o, "spool_dir",
				       json_object_new_string(cfg->spool_dir));
		json_object_object_add(o, "bytes",
				       json_object_new_int64(
					       (int64_t)spool_bytes(s)));
		json_object_object_add(o, "limit",
				       json_object_new_int64(
					       (int64_t)cfg->spool_limit));
		for (int i = 0; i < n; i++) {
			struct json_object *x = json_object_new_object();

			json_object_object_add(
				x, "run_id", json_object_new_string(e[i].run_id));
			json_object_object_add(
				x, "bytes",
				json_object_new_int64((int64_t)e[i].size));
			json_object_object_add(
				x, "age_s", json_object_new_int64(now - e[i].mtime));
			json_object_array_add(list, x);
		}
		json_object_object_add(o, "reports", list);
		json_object_object_add(o, "rejected",
				       json_object_new_int(rejected));
		json_object_object_add(o, "quarantined",
				       json_object_new_int(quarantined));
		printf("%s\n", json_object_to_json_string_ext(
				       o, JSON_C_TO_STRING_PRETTY |
						  JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	}
	spool_close(s);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		log_error("cannot write the listing: %s", strerror(errno));
		return ST_FAILURE;
	}
	return ST_OK;
}

