/* SPDX-License-Identifier: MIT */
/*
 * What fleetbench-collector's commands share: the config the settings table
 * fills, the command-line state, and the database they open (cmd.c). Each
 * command is one cmd_<name>.c, listed in main.c's table.
 */
#ifndef FLEETBENCH_COLLECTOR_CMD_H
#define FLEETBENCH_COLLECTOR_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "migrate.h"
#include "pg.h"

#define DEFAULT_CONFIG "/etc/fleetbench/collector.conf"

struct collector_config {
	char *bind;
	char *dsn;
	char *server_key;
	char *allowlist;
	uint64_t max_msg_size;
	long long heartbeat_ms;
	long long batch_max;
	long long batch_wait_ms;
	long long db_connections;
	uint64_t admit_bytes;
	long long admit_wait_ms;
	long long retry_after_min_ms;
	long long retry_after_max_ms;
	bool insecure;
	char *schema_dir;
	char *alert_hook;
	long long alert_hook_timeout_ms;
	long long alert_hook_retry_ms;
	char *metrics_listen; /* NULL: no /metrics */
	long long metrics_max_groups;
	char *alertmanager_url;
	long long alertmanager_interval_ms;
	long long alertmanager_timeout_ms;
};

/* The getopt values of the flags that set no config key. */
enum {
	OPT_DIR = 0x100,
	OPT_NAME,
	OPT_OLDER_THAN, /* prune's */
	OPT_DRY_RUN,
	OPT_FORCE,
};

/* The settings table (settings.c): every flag and config key, with help. */
extern const struct config_key collector_settings[];
extern const size_t collector_n_settings;

/* --help (settings.c). */
void collector_usage(FILE *f);

/* keygen's --dir and --name (main.c). */
extern const char *arg_dir;
extern const char *arg_name;

/* prune's --older-than, --dry-run and --force (main.c). */
extern const char *arg_older_than;
extern bool arg_dry_run;
extern bool arg_force;

/* The commands: each returns an exit status (0, 1). */
int cmd_serve(const struct collector_config *cfg);
int cmd_migrate(const struct collector_config *cfg);
int cmd_keygen(const struct collector_config *cfg);
int cmd_prune(const struct collector_config *cfg);
int cmd_load(const struct collector_config *cfg);

/* The database and what the schema directory holds. */
struct db {
	struct pg *pg;
	struct pg_migration *m;
	size_t n;
	struct pg_function_file *f; /* schema/functions */
	size_t n_f;
};

/* Reads the migrations and the function files, and connects (logged). */
int db_open(struct db *d, const struct collector_config *cfg);
void db_release(struct db *d);
/* Refuses (logged) a database that is not migrated to this collector's
 * migrations and function files, or whose schema others may create in
 * (db_check_creators); verb names the command ("serve"). */
int db_check_schema(struct db *d, const char *verb);
/* Refuses (logged) a schema in which a role other than its owner may
 * create objects: "refusing to VERB: ROLE may create objects in schema
 * S ...". 0, or -1. */
int db_check_creators(struct db *d, const char *verb);

#endif
