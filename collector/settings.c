/* SPDX-License-Identifier: MIT */
/*
 * fleetbench-collector's settings, each declared once: its flag, config
 * key, type, range and help. The config parser, the flag parser and --help
 * are all made from this table (common/cli.h).
 */
#include <stddef.h>
#include <stdio.h>

#include "cleanup.h"
#include "cli.h"
#include "cmd.h"
#include "codec.h"
#include "ingest.h"

#define C(field) offsetof(struct collector_config, field)

/* In --help's order. */
const struct config_key collector_settings[] = {
	CLI_FLAG("config", 'c', "FILE", 'c',
		 "collector config (default " DEFAULT_CONFIG " if present)"),
	CONFIG_KEY("collector", "bind", CONFIG_STR, C(bind),
		   "tcp://127.0.0.1:5555", 0, 0, "bind", "ENDPOINT",
		   "listen here (default tcp://127.0.0.1:5555)"),
	CONFIG_KEY("collector", "dsn", CONFIG_STR, C(dsn), NULL, 0, 0, "dsn",
		   "CONNINFO",
		   "PostgreSQL conninfo or URI (default: the PG*\n"
		   "environment variables)"),
	CONFIG_KEY("collector", "server_key", CONFIG_STR, C(server_key), NULL, 0,
		   0, "server-key", "FILE",
		   "the collector's secret key (NAME.key, mode 0600)"),
	CONFIG_KEY("collector", "allowlist", CONFIG_STR, C(allowlist), NULL, 0,
		   0, "allowlist", "PATH",
		   "agent public keys allowed to send: a directory\n"
		   "of *.pub files or a file of keys, one a line;\n"
		   "reloaded on SIGHUP"),
	CONFIG_KEY("collector", "max_msg_size", CONFIG_SIZE, C(max_msg_size),
		   "4M", 4096, CODEC_MAX_MESSAGE, "max-msg-size", "SIZE",
		   "largest report accepted; a bigger one drops its\n"
		   "sender's connection (default 4M, at most 4M)"),
	CONFIG_KEY("collector", "heartbeat_ms", CONFIG_INT, C(heartbeat_ms),
		   "5000", 100, 600000, "heartbeat", "MS",
		   "heartbeat interval, a peer silent for three is\n"
		   "dropped (default 5000)"),
	CONFIG_KEY("collector", "batch_max", CONFIG_INT, C(batch_max), "256", 1,
		   10000, "batch-max", "N",
		   "reports committed in one transaction (default 256)"),
	CONFIG_KEY("collector", "batch_wait_ms", CONFIG_INT, C(batch_wait_ms),
		   "2", 0, 1000, "batch-wait", "MS",
		   "how long a batch waits to fill up (default 2)"),
	CONFIG_KEY("collector", "db_connections", CONFIG_INT,
		   C(db_connections), "2", 1, INGEST_CONNECTIONS_MAX,
		   "db-connections", "N",
		   "connections to PostgreSQL, each storing one\n"
		   "batch at a time (1 to 4, default 2)"),
	CONFIG_KEY("collector", "admit_bytes", CONFIG_SIZE, C(admit_bytes), "2M",
		   0, 1u << 30, "admit-bytes", "SIZE",
		   "bytes of reports let in at once: agents offer a\n"
		   "report first and the offers beyond this wait\n"
		   "for a grant (default 2M; 0: no bound)"),
	CONFIG_KEY("collector", "admit_wait_ms", CONFIG_INT, C(admit_wait_ms),
		   "4500", 0, 3600000, "admit-wait", "MS",
		   "admission control: let in only what the measured\n"
		   "commit rate stores within this; an agent offering\n"
		   "more is told when to come back (default 4500,\n"
		   "below the agents' send_timeout_ms; 0: off)"),
	CONFIG_KEY("collector", "retry_after_min_ms", CONFIG_INT,
		   C(retry_after_min_ms), "1000", 1, 86400000, "retry-after-min",
		   "MS", "shortest retry-after hint (default 1000)"),
	CONFIG_KEY("collector", "retry_after_max_ms", CONFIG_INT,
		   C(retry_after_max_ms), "600000", 1, 86400000,
		   "retry-after-max", "MS",
		   "longest retry-after hint (default 600000)"),
	/* a switch: sets true */
	CONFIG_KEY("collector", "insecure", CONFIG_BOOL, C(insecure), "false", 0,
		   0, "insecure", NULL,
		   "plaintext, no CURVE: no encryption and every\n"
		   "client accepted (tests and trusted networks only)"),
	CONFIG_KEY("collector", "schema_dir", CONFIG_STR, C(schema_dir), NULL, 0,
		   0, "schema-dir", "DIR",
		   "the NNN_*.sql migrations and functions/NN_*.sql\n"
		   "(default " FLEETBENCH_SCHEMA_DIR ",\n"
		   "else the source tree's " FLEETBENCH_SOURCE_SCHEMA_DIR ")"),
	CONFIG_KEY("collector", "alert_hook", CONFIG_STR, C(alert_hook), NULL, 0,
		   0, "alert-hook", "CMD",
		   "run CMD (with /bin/sh -c) for each new fleet\n"
		   "alert, the alert as JSON on its standard input"),
	CONFIG_KEY("collector", "alert_hook_timeout_ms", CONFIG_INT,
		   C(alert_hook_timeout_ms), "10000", 100, 600000,
		   "alert-hook-timeout", "MS",
		   "stop a hook run after MS (default 10000)"),
	CONFIG_KEY("collector", "alert_hook_retry_ms", CONFIG_INT,
		   C(alert_hook_retry_ms), "60000", 100, 3600000,
		   "alert-hook-retry", "MS",
		   "retry a failed hook after MS, doubled per\n"
		   "failure up to an hour (default 60000)"),
	CONFIG_KEY("collector", "alertmanager_url", CONFIG_STR,
		   C(alertmanager_url), NULL, 0, 0, "alertmanager-url", "URL",
		   "push the open fleet alerts to Alertmanager's\n"
		   "API v2 at URL (http:// or https://), and the\n"
		   "acknowledged ones as resolved"),
	CONFIG_KEY("collector", "alertmanager_interval_ms", CONFIG_INT,
		   C(alertmanager_interval_ms), "60000", 100, 3600000,
		   "alertmanager-interval", "MS",
		   "push them again every MS; each is sent firing\n"
		   "for four times MS (default 60000)"),
	CONFIG_KEY("collector", "alertmanager_timeout_ms", CONFIG_INT,
		   C(alertmanager_timeout_ms), "10000", 100, 600000,
		   "alertmanager-timeout", "MS",
		   "give up on a push after MS (default 10000)"),
	CONFIG_KEY("collector", "metrics_listen", CONFIG_STR, C(metrics_listen),
		   NULL, 0, 0, "metrics-listen", "HOST:PORT",
		   "serve Prometheus metrics at\n"
		   "http://HOST:PORT/metrics (e.g. 127.0.0.1:9477;\n"
		   "port 0: any free one; default: off)"),
	CONFIG_KEY("collector", "metrics_max_groups", CONFIG_INT,
		   C(metrics_max_groups), "500", 1, 100000,
		   "metrics-max-groups", "N",
		   "fleet groups (provider, instance type, kernel,\n"
		   "method) /metrics exports, the latest first\n"
		   "(default 500)"),
	CLI_HEADING("keygen:"),
	CLI_FLAG("dir", 0, "DIR", OPT_DIR, "write the keys here (default .)"),
	CLI_FLAG("name", 0, "NAME", OPT_NAME,
		 "key file names (default collector)"),
	CLI_HEADING("prune:"),
	CLI_FLAG("older-than", 0, "AGE", OPT_OLDER_THAN,
		 "drop the months that ended AGE ago: Ndays,\n"
		 "Nmonths or Nyears (e.g. 13months)"),
	CLI_FLAG("dry-run", 0, NULL, OPT_DRY_RUN,
		 "print what would be dropped, change nothing"),
	CLI_FLAG("force", 0, NULL, OPT_FORCE,
		 "allow an AGE under one month"),
	CLI_FLAG("help", 'h', NULL, 'h', "show this help"),
	CLI_FLAG("version", 'V', NULL, 'V', "show the version"),
};

const size_t collector_n_settings = ARRAY_SIZE(collector_settings);

static const struct cli_help help = {
	.head = "usage: fleetbench-collector COMMAND [OPTIONS]\n"
		"\n"
		"commands:\n"
		"  serve    receive agents' reports and commit them into PostgreSQL\n"
		"  migrate  apply the schema migrations to the database, then its\n"
		"           function files when a migration ran or a file changed\n"
		"  keygen   write the collector's CURVE keypair (NAME.key, NAME.pub)\n"
		"  prune    drop the months of runs older than --older-than AGE\n"
		"           (partitions and runs; months with open alerts kept)\n"
		"  load     store the reports on standard input, JSON as\n"
		"           `fleetbench-agent show` prints them, as serve would\n",
	.keys = "SIZE takes K, M suffixes (powers of 1024). Every option but --config\n"
		"and those of keygen and prune is also a key of the config file, the\n"
		"option in brackets where it is not the key with '_' written '-':\n",
	.tail = "Signals: SIGHUP reloads the allowlist, SIGTERM and SIGINT stop after\n"
		"the batches in hand.\n"
		"See docs/operations.md and docs/alerts.md.\n",
};

void collector_usage(FILE *f)
{
	cli_usage(f, &help, collector_settings, collector_n_settings);
}
