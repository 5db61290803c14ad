/* SPDX-License-Identifier: MIT */
/*
 * What fleetbench-agent's commands share: the config the settings table
 * fills, the command-line state, the exit statuses, and the helpers more
 * than one command calls (cmd.c). Each command is one cmd_<name>.c, listed
 * in main.c's table (git's builtin.h).
 */
#ifndef FLEETBENCH_AGENT_CMD_H
#define FLEETBENCH_AGENT_CMD_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bench.h"
#include "cli.h"
#include "config.h"
#include "link.h"
#include "spool.h"

#define DEFAULT_CONFIG "/etc/fleetbench/agent.conf"
#define DEFAULT_KEY_DIR "/etc/fleetbench"
#define MAX_ENDPOINTS 16

/* Exit statuses (--help, docs/agent.md). */
enum {
	ST_OK = 0,
	ST_FAILURE = 1,
	ST_USAGE = 2,
	ST_UNDELIVERED = 3, /* spooled, not delivered yet: `send` later */
	ST_BENCH_FAILED = 4, /* done, but one or more benchmarks failed */
	ST_INTERRUPTED = 130,
};

struct agent_config {
	char *provider;
	char *instance_type;
	char *region;
	char *work_dir;
	long long steal_window_ms;
	char *spool_dir;
	uint64_t spool_limit;
	char *state_dir; /* the last delivered report's kernel (state.h) */
	char *tags; /* tag lines "key=value\n", the file's then --tag's */
	char *textfile_dir; /* run: DIR/fleetbench.prom (textfile.h) */
	/* [collector] */
	char *endpoints;
	char *server_public_key;
	char *agent_key;
	long long send_timeout_ms;
	long long retries;
	long long backoff_ms;
	long long backoff_max_ms;
	long long retry_wait_max_ms;
	char *endpoint_order; /* listed, random */
	bool insecure;
	/* [bench]: sizes left 0 are taken from the profile */
	struct bench_params bench;
};

/* The getopt values of the flags that set no config key. */
enum {
	OPT_ROOT = 0x100,
	OPT_JSON,
	OPT_ONLY,
	OPT_NAME,
	OPT_NO_SEND,
	OPT_IF_KERNEL_CHANGED,
};

/* The settings table (settings.c): every flag and config key, with help. */
extern const struct config_key agent_settings[];
extern const size_t agent_n_settings;

/* --help (settings.c). */
void agent_usage(FILE *f);

/* Command-line state (main.c). */
extern const char *arg_root;
extern const char *arg_only;
extern const char *arg_name;
extern bool arg_json;
extern bool arg_no_send;
extern bool arg_if_kernel_changed;

/* The commands: each returns an exit status. */
int cmd_probe(struct agent_config *cfg, const struct cli *cli);
int cmd_bench(struct agent_config *cfg, const struct cli *cli);
int cmd_run(struct agent_config *cfg, const struct cli *cli);
int cmd_send(struct agent_config *cfg, const struct cli *cli);
int cmd_spool(struct agent_config *cfg, const struct cli *cli);
int cmd_keygen(struct agent_config *cfg, const struct cli *cli);
/* show FILE takes no options: it runs before they are parsed */
int cmd_show(int argc, char **argv);

/* The probe report, labels and their sources from cfg and cli (logged). */
int agent_probe(const struct agent_config *cfg, const struct cli *cli,
		struct json_object **ret);

/*
 * At the start of probe, bench and run: puts back what a database
 * benchmark that died left (the THP mode kept in the spool, its PostgreSQL
 * directory in the work directory), logging what it did (cmd.c).
 */
void agent_recover(const struct agent_config *cfg);

/* The benchmark suite, sizes from the profile (logged); -errno. */
int agent_bench(struct agent_config *cfg, Fleetbench__BenchRun **ret);

/* The exit status of a failed agent_bench(). */
int agent_bench_status(int r);

/*
 * Prints the probe report (NULL: none) and the bench run (NULL: none): as
 * one JSON object with --json, the bench run under "bench" (by pbjson, or
 * alone when there is no probe), else as tables. Exit status.
 */
int agent_print_report(struct json_object *probe,
		       const Fleetbench__BenchRun *bench,
		       const struct bench_params *params);

/* Opens the spool of cfg, or logs why not and returns NULL. */
struct spool *agent_spool_open(const struct agent_config *cfg);

/* The collector to send to: its endpoints and the keys. */
struct collector {
	char *list; /* the endpoints text, split in place */
	const char *endpoints[MAX_ENDPOINTS];
	size_t n_endpoints;
	char server_public[LINK_KEY_LEN + 1];
	struct link_keypair keys;
};

/* Reads what sending needs, before any work is done. Exit status. */
int collector_setup(const struct agent_config *cfg, struct collector *c);
void collector_release(struct collector *c);

/* Flushes the spool; the summary goes to out (cmd_send.c). Exit status. */
int agent_flush_spool(const struct agent_config *cfg, struct spool *s,
		      const struct collector *c, FILE *out);

#endif
