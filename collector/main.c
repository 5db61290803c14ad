/* SPDX-License-Identifier: MIT */
/* fleetbench-collector: the command line of the fleet's report collector. */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "alert.h"
#include "cleanup.h"
#include "cli.h"
#include "codec.h"
#include "config.h"
#include "ingest.h"
#include "link.h"
#include "log.h"
#include "migrate.h"
#include "pg.h"

#define DEFAULT_CONFIG "/etc/fleetbench/collector.conf"
#define FD_LIMIT_WANTED 4096
#define MMAP_THRESHOLD (16 * 1024) /* bytes: see heap_setup() */
/* what setrlimit accepts when the hard limit is "unlimited" */
#define FD_LIMIT_UNLIMITED 1048576

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
	bool insecure;
	char *schema_dir;
	char *alert_hook;
	long long alert_hook_timeout_ms;
	long long alert_hook_retry_ms;
};

#define C(field) offsetof(struct collector_config, field)

static const struct config_key collector_keys[] = {
	{ "collector", "bind", CONFIG_STR, C(bind), "tcp://127.0.0.1:5555", 0,
	  0, "ZeroMQ endpoint to listen on" },
	{ "collector", "dsn", CONFIG_STR, C(dsn), NULL, 0, 0,
	  "PostgreSQL conninfo or URI (default: the PG* environment)" },
	{ "collector", "server_key", CONFIG_STR, C(server_key), NULL, 0, 0,
	  "the collector's secret CURVE key file (NAME.key, mode 0600)" },
	{ "collector", "allowlist", CONFIG_STR, C(allowlist), NULL, 0, 0,
	  "agent public keys: a directory of *.pub files or a file of keys" },
	{ "collector", "max_msg_size", CONFIG_SIZE, C(max_msg_size), "4M",
	  4096, CODEC_MAX_MESSAGE, "largest report accepted; a bigger one drops its sender" },
	{ "collector", "heartbeat_ms", CONFIG_INT, C(heartbeat_ms), "5000", 100,
	  600000, "ZMTP heartbeat interval; a peer silent for 3 is dropped" },
	{ "collector", "batch_max", CONFIG_INT, C(batch_max), "256", 1, 10000,
	  "reports committed in one transaction at most" },
	{ "collector", "batch_wait_ms", CONFIG_INT, C(batch_wait_ms), "2", 0,
	  1000, "how long a batch waits for more reports" },
	{ "collector", "db_connections", CONFIG_INT, C(db_connections), "2", 1,
	  INGEST_CONNECTIONS_MAX,
	  "connections to PostgreSQL, each storing one batch at a time" },
	{ "collector", "admit_bytes", CONFIG_SIZE, C(admit_bytes), "2M", 0,
	  1u << 30,
	  "report bytes let in at once (offered and granted, not yet answered); 0: no bound" },
	{ "collector", "insecure", CONFIG_BOOL, C(insecure), "false", 0, 0,
	  "plaintext without CURVE: no encryption, every client accepted" },
	{ "collector", "schema_dir", CONFIG_STR, C(schema_dir), NULL, 0, 0,
	  "directory of the NNN_*.sql migrations and functions/NN_*.sql" },
	{ "collector", "alert_hook", CONFIG_STR, C(alert_hook), NULL, 0, 0,
	  "command run with each new fleet alert as JSON on standard input" },
	{ "collector", "alert_hook_timeout_ms", CONFIG_INT,
	  C(alert_hook_timeout_ms), "10000", 100, 600000,
	  "how long one run of the alert hook may take" },
	{ "collector", "alert_hook_retry_ms", CONFIG_INT,
	  C(alert_hook_retry_ms), "60000", 100, 3600000,
	  "delay before retrying a failed alert hook, doubled per failure" },
};

/* Flags that set config keys, applied after the file so they win. */
static const struct cli_flag flag_keys[] = {
	{ "bind", "collector", "bind", false },
	{ "dsn", "collector", "dsn", false },
	{ "server-key", "collector", "server_key", false },
	{ "allowlist", "collector", "allowlist", false },
	{ "max-msg-size", "collector", "max_msg_size", false },
	{ "heartbeat", "collector", "heartbeat_ms", false },
	{ "batch-max", "collector", "batch_max", false },
	{ "batch-wait", "collector", "batch_wait_ms", false },
	{ "db-connections", "collector", "db_connections", false },
	{ "admit-bytes", "collector", "admit_bytes", false },
	{ "insecure", "collector", "insecure", false }, /* a switch: sets true */
	{ "schema-dir", "collector", "schema_dir", false },
	{ "alert-hook", "collector", "alert_hook", false },
	{ "alert-hook-timeout", "collector", "alert_hook_timeout_ms", false },
	{ "alert-hook-retry", "collector", "alert_hook_retry_ms", false },
};

enum {
	OPT_DIR = 0x100,
	OPT_NAME,
};

static const char *arg_config;
static const char *arg_dir = ".";
static const char *arg_name = "collector";

/* The installed schema, else the source tree's (a build tree). */
static const char *default_schema_dir(void)
{
	struct stat st;

	if (stat(FLEETBENCH_SCHEMA_DIR, &st) == 0 && S_ISDIR(st.st_mode))
		return FLEETBENCH_SCHEMA_DIR;
	return FLEETBENCH_SOURCE_SCHEMA_DIR;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fleetbench-collector COMMAND [OPTIONS]\n"
		"\n"
		"commands:\n"
		"  serve    receive agents' reports and commit them into PostgreSQL\n"
		"  migrate  apply the schema migrations to the database, then its\n"
		"           function files when a migration ran or a file changed\n"
		"  keygen   write the collector's CURVE keypair (NAME.key, NAME.pub)\n"
		"\n"
		"options:\n"
		"  -c, --config FILE        collector config (default " DEFAULT_CONFIG
		" if present)\n"
		"      --bind ENDPOINT      listen here (default tcp://127.0.0.1:5555)\n"
		"      --dsn CONNINFO       PostgreSQL conninfo or URI (default: the PG*\n"
		"                           environment variables)\n"
		"      --server-key FILE    the collector's secret key (NAME.key, mode 0600)\n"
		"      --allowlist PATH     agent public keys allowed to send: a directory\n"
		"                           of *.pub files or a file of keys, one a line;\n"
		"                           reloaded on SIGHUP\n"
		"      --max-msg-size SIZE  largest report accepted; a bigger one drops its\n"
		"                           sender's connection (default 4M, at most 4M)\n"
		"      --heartbeat MS       heartbeat interval, a peer silent for three is\n"
		"                           dropped (default 5000)\n"
		"      --batch-max N        reports committed in one transaction (default 256)\n"
		"      --batch-wait MS      how long a batch waits to fill up (default 2)\n"
		"      --db-connections N   connections to PostgreSQL, each storing one\n"
		"                           batch at a time (1 to 4, default 2)\n"
		"      --admit-bytes SIZE   bytes of reports let in at once: agents offer a\n"
		"                           report first and the offers beyond this wait\n"
		"                           for a grant (default 2M; 0: no bound)\n"
		"      --insecure           plaintext, no CURVE: no encryption and every\n"
		"                           client accepted (tests and trusted networks only)\n"
		"      --schema-dir DIR     the NNN_*.sql migrations and functions/NN_*.sql\n"
		"                           (default %s)\n"
		"      --alert-hook CMD     run CMD (with /bin/sh -c) for each new fleet\n"
		"                           alert, the alert as JSON on its standard input\n"
		"      --alert-hook-timeout MS  stop a hook run after MS (default 10000)\n"
		"      --alert-hook-retry MS    retry a failed hook after MS, doubled per\n"
		"                           failure up to an hour (default 60000)\n"
		"  keygen:\n"
		"      --dir DIR            write the keys here (default .)\n"
		"      --name NAME          key file names (default collector)\n"
		"  -h, --help               show this help\n"
		"  -V, --version            show the version\n"
		"\n"
		"SIZE takes K, M suffixes (powers of 1024). Every option but --config,\n"
		"--dir and --name is also a key of the config file's [collector] section:\n"
		"bind, dsn, server_key, allowlist, max_msg_size, heartbeat_ms, batch_max,\n"
		"batch_wait_ms, db_connections, admit_bytes, insecure (true/false), schema_dir,\n"
		"alert_hook, alert_hook_timeout_ms, alert_hook_retry_ms. Signals:\n"
		"SIGHUP reloads the allowlist, SIGTERM and SIGINT stop after the\n"
		"batches in hand.\n"
		"See docs/operations.md and docs/alerts.md.\n",
		default_schema_dir());
}

/* ---- keygen ---- */

static int cmd_keygen(void)
{
	struct link_keypair kp;
	int r;

	r = link_keygen(arg_dir, arg_name, &kp);
	if (r == -EEXIST) {
		log_error("'%s/%s.key' or '%s/%s.pub' exists: keys are never overwritten",
			  arg_dir, arg_name, arg_dir, arg_name);
		return 1;
	}
	if (r < 0) {
		log_error("cannot write keys '%s/%s.key' and '.pub': %s", arg_dir,
			  arg_name, strerror(-r));
		return 1;
	}
	printf("wrote %s/%s.key (secret, mode 0600) and %s/%s.pub\n"
	       "public key: %s\n",
	       arg_dir, arg_name, arg_dir, arg_name, kp.public_key);
	explicit_bzero(&kp, sizeof(kp));
	return 0;
}

/* ---- migrate ---- */

struct db {
	struct pg *pg;
	struct pg_migration *m;
	size_t n;
	struct pg_function_file *f; /* schema/functions */
	size_t n_f;
};

static void db_release(struct db *d)
{
	pg_free(d->pg);
	pg_migrations_free(d->m, d->n);
	pg_functions_free(d->f, d->n_f);
}

/* Reads the migrations and the function files, and connects. */
static int db_open(struct db *d, const struct collector_config *cfg)
{
	char err[PG_ERR_LEN];
	int r;

	r = pg_migrations_scan(cfg->schema_dir, &d->m, err);
	if (r < 0)
		return log_error("%s", err);
	d->n = (size_t)r;
	r = pg_functions_scan(cfg->schema_dir, &d->f, err);
	if (r < 0)
		return log_error("%s", err);
	d->n_f = (size_t)r;
	d->pg = pg_new(cfg->dsn);
	if (!d->pg)
		return log_error("out of memory");
	if (pg_connect(d->pg, err) < 0)
		return log_error("%s", err);
	return 0;
}

/*
 * Pending migrations first, each in its own transaction; then, when one
 * ran or a function file differs from the one recorded, all function files
 * in one transaction (schema/README.md).
 */
static int cmd_migrate(const struct collector_config *cfg)
{
	struct db d = { 0 };
	char err[PG_ERR_LEN];
	size_t applied = 0, reapplied = 0;
	int r, ret = 1;

	if (db_open(&d, cfg) < 0)
		goto out;
	r = pg_migrations_check(d.pg, d.m, d.n, err);
	if (r < 0 && r != -ENOENT) {
		log_error("refusing to migrate: %s", err);
		goto out;
	}
	for (size_t i = 0; i < d.n; i++) {
		bool ran;

		if (pg_migration_apply(d.pg, &d.m[i], &ran, err) < 0) {
			log_error("migration '%s' failed, nothing of it applied: %s",
				  d.m[i].name, err);
			goto out;
		}
		if (ran) {
			printf("applied %s\n", d.m[i].name);
			applied++;
		}
	}
	r = pg_migrations_check(d.pg, d.m, d.n, err);
	if (r != 0) {
		log_error("the database is still not current: %s",
			  r > 0 ? "migrations are missing" : err);
		goto out;
	}
	r = pg_functions_check(d.pg, d.f, d.n_f, err);
	if (r < 0) {
		log_error("cannot compare the function files: %s", err);
		goto out;
	}
	if (applied || r > 0) {
		if (pg_functions_apply(d.pg, d.f, d.n_f, err) < 0) {
			log_error("the function files failed, nothing of them applied: %s",
				  err);
			goto out;
		}
		for (size_t i = 0; i < d.n_f; i++)
			printf("re-applied %s/%s\n", PG_FUNCTIONS_DIR,
			       d.f[i].name);
		reapplied = d.n_f;
	}
	r = pg_functions_check(d.pg, d.f, d.n_f, err);
	if (r != 0) {
		log_error("the function files are still not current: %s", err);
		goto out;
	}
	printf("the database is current: %zu migrations, %zu applied now, %zu function files, %zu re-applied now\n",
	       d.n, applied, d.n_f, reapplied);
	ret = fflush(stdout) == 0 ? 0 : 1;
out:
	db_release(&d);
	return ret;
}

/* ---- serve ---- */

/* Called from the ZAP thread: a whole line under the stdio lock. */
static void auth_log(void *data, bool accepted, const char *address,
		     const char *mechanism, const char *key)
{
	flockfile(stderr);
	if (accepted)
		log_info("accepted %s agent %s%s from %s", mechanism,
			 key ? "with key " : "", key ? key : "", address);
	else
		log_warn("refused %s peer %s%s from %s", mechanism,
			 key ? "with key " : "without a key", key ? key : "",
			 address);
	funlockfile(stderr);
}

/* One fd per connected agent: raise the soft limit to the hard one. */
static void fd_limit_check(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		log_warn("cannot read the file descriptor limit: %s",
			 strerror(errno));
		return;
	}
	if (rl.rlim_cur < rl.rlim_max) {
		struct rlimit want = { rl.rlim_max, rl.rlim_max };
		int r = setrlimit(RLIMIT_NOFILE, &want);

		/* "unlimited" is refused above fs.nr_open */
		if (r < 0 && rl.rlim_max == RLIM_INFINITY &&
		    rl.rlim_cur < FD_LIMIT_UNLIMITED) {
			want.rlim_cur = FD_LIMIT_UNLIMITED;
			r = setrlimit(RLIMIT_NOFILE, &want);
		}
		if (r == 0)
			rl.rlim_cur = want.rlim_cur;
		else
			log_warn("cannot raise the file descriptor limit from %llu to %llu: %s",
				 (unsigned long long)rl.rlim_cur,
				 (unsigned long long)want.rlim_cur,
				 strerror(errno));
	}
	log_info("file descriptor limit %llu (hard %llu): one per connected agent",
		 (unsigned long long)rl.rlim_cur,
		 (unsigned long long)rl.rlim_max);
	if (rl.rlim_cur < FD_LIMIT_WANTED)
		log_warn("the file descriptor limit %llu is below %d: fewer than %llu agents can be connected at once (raise LimitNOFILE= or ulimit -n)",
			 (unsigned long long)rl.rlim_cur, FD_LIMIT_WANTED,
			 (unsigned long long)rl.rlim_cur);
}

/*
 * A report and the messages that carry it (about 20 KB each) are
 * allocated by one thread and freed by another (ZeroMQ's I/O thread, the
 * serve loop). From glibc's arenas, a burst of them leaves the freed
 * chunks resident until the next malloc_trim(); mapped on their own
 * (above MMAP_THRESHOLD) they go back to the kernel when freed, so the RSS
 * follows what is held: 4.6 MiB less at the peak of 1,000 agents sending
 * at once (docs/performance.md). A threshold set by the operator
 * (MALLOC_MMAP_THRESHOLD_, GLIBC_TUNABLES) is left as it is.
 */
static void heap_setup(void)
{
	const char *tunables = getenv("GLIBC_TUNABLES");

	if (getenv("MALLOC_MMAP_THRESHOLD_") ||
	    (tunables && strstr(tunables, "mmap_threshold")))
		return;
	if (!mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))
		log_warn("cannot set malloc's mmap threshold to %d bytes: freed reports stay resident until trimmed",
			 MMAP_THRESHOLD);
}

/* SIGHUP, SIGTERM and SIGINT through a signalfd, blocked before any thread
 * starts so that every thread inherits the mask. */
static int signals_open(void)
{
	sigset_t mask;
	int fd;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return -errno;
	fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

static int serve_check_schema(struct db *d)
{
	char err[PG_ERR_LEN];
	int r = pg_migrations_check(d->pg, d->m, d->n, err);

	if (r == -ENOENT || (r > 0 && (size_t)r == d->n))
		return log_error("the database is not migrated: run 'fleetbench-collector migrate' first");
	if (r > 0)
		return log_error("the database lacks %d of this collector's %zu migrations: run 'fleetbench-collector migrate' first",
				 r, d->n);
	if (r == -EPROTO)
		return log_error("refusing to serve a newer database: %s", err);
	if (r < 0)
		return log_error("%s", err);
	r = pg_functions_check(d->pg, d->f, d->n_f, err);
	if (r == 0)
		return 0;
	if (r > 0)
		return log_error("the database's functions and views are not this collector's: %s: run 'fleetbench-collector migrate' first",
				 err);
	return log_error("%s", err);
}

/* The server's keys and the allowlist, or plaintext. */
static int serve_keys(const struct collector_config *cfg,
		      struct link_keypair *keys,
		      struct link_allowlist **ret_allow)
{
	char err[LINK_ERR_LEN];
	int r;

	if (cfg->insecure) {
		log_warn("plaintext mode (--insecure): no encryption and no authentication, every client's reports are stored");
		if (cfg->server_key || cfg->allowlist)
			log_warn("server_key and allowlist are ignored in plaintext mode");
		return 0;
	}
	if (!cfg->server_key)
		return log_error("no server key: give --server-key FILE or [collector] server_key (or --insecure for plaintext)");
	if (!cfg->allowlist)
		return log_error("no allowlist of agent keys: give --allowlist PATH or [collector] allowlist");
	r = link_read_secret(cfg->server_key, keys);
	if (r == -EPERM)
		return log_error("server key '%s' is readable by group or others: chmod 600 it",
				 cfg->server_key);
	if (r < 0)
		return log_error("cannot read server key '%s': %s",
				 cfg->server_key,
				 r == -EINVAL ? "not a Z85 secret key" :
						strerror(-r));
	*ret_allow = link_allowlist_load(cfg->allowlist, err);
	if (!*ret_allow)
		return log_error("%s", err);
	if (!link_allowlist_count(*ret_allow))
		log_warn("the allowlist '%s' holds no keys: no agent can connect until it does (SIGHUP reloads it)",
			 cfg->allowlist);
	return 0;
}

static int cmd_serve(const struct collector_config *cfg)
{
	struct link_allowlist *allow = NULL;
	struct link_server *server = NULL;
	struct alert_hook *hook = NULL;
	struct link_keypair keys;
	struct db d = { 0 };
	char err[LINK_ERR_LEN];
	_cleanup_close_ int sigfd = -1;
	void *zctx = NULL;
	int r, ret = 1;

	if (serve_keys(cfg, &keys, &allow) < 0)
		goto out;
	if (db_open(&d, cfg) < 0 || serve_check_schema(&d) < 0)
		goto out;
	fd_limit_check();
	heap_setup();
	sigfd = signals_open();
	if (sigfd < 0) {
		log_error("cannot set up signals: %s", strerror(-sigfd));
		goto out;
	}
	zctx = zmq_ctx_new();
	if (!zctx) {
		log_error("cannot create the ZeroMQ context: %s",
			  zmq_strerror(errno));
		goto out;
	}
	server = link_server_new(zctx,
				 &(struct link_server_opts){
					 .bind = cfg->bind,
					 .keys = cfg->insecure ? NULL : &keys,
					 .allowlist = allow,
					 .max_msg_size = (int)cfg->max_msg_size,
					 .heartbeat_ms = (int)cfg->heartbeat_ms,
					 .log = auth_log,
				 },
				 err);
	if (!server) {
		log_error("%s", err);
		goto out;
	}
	allow = NULL; /* the server's now */
	if (cfg->alert_hook) {
		hook = alert_hook_start(&(struct alert_hook_opts){
			.dsn = cfg->dsn,
			.command = cfg->alert_hook,
			.timeout_ms = (int)cfg->alert_hook_timeout_ms,
			.retry_ms = (int)cfg->alert_hook_retry_ms,
		});
		if (!hook) {
			log_error("cannot start the alert hook: %s",
				  strerror(errno));
			goto out;
		}
		log_info("alert hook: '%s' (timeout %lld ms)", cfg->alert_hook,
			 cfg->alert_hook_timeout_ms);
	}
	log_info("listening on %s (%s), %d migrations current", link_server_endpoint(server),
		 cfg->insecure ? "plaintext" : "CURVE", (int)d.n);
	r = ingest_run(&(struct ingest_opts){
		.server = server,
		.pg = d.pg,
		.migrations = d.m,
		.n_migrations = d.n,
		.allowlist = cfg->insecure ? NULL : cfg->allowlist,
		.sigfd = sigfd,
		.batch_max = (int)cfg->batch_max,
		.batch_wait_ms = (int)cfg->batch_wait_ms,
		.connections = (int)cfg->db_connections,
		.admit_bytes = (size_t)cfg->admit_bytes,
		.dsn = cfg->dsn,
	});
	ret = r < 0 ? 1 : 0;
out:
	alert_hook_stop(hook);
	explicit_bzero(&keys, sizeof(keys));
	link_server_free(server);
	link_allowlist_free(allow);
	if (zctx)
		zmq_ctx_term(zctx);
	db_release(&d);
	return ret;
}

/* ---- command line ---- */

static int load_config(struct collector_config *cfg, const struct cli *cli)
{
	if (cli_load_config(cli, arg_config, DEFAULT_CONFIG, cfg) < 0)
		return -1;
	if (!cfg->schema_dir) {
		cfg->schema_dir = strdup(default_schema_dir());
		if (!cfg->schema_dir)
			return log_error("out of memory");
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option own_opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "dir", required_argument, NULL, OPT_DIR },
		{ "name", required_argument, NULL, OPT_NAME },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
	};
	struct collector_config cfg = { 0 };
	struct cli cli;
	const char *command;
	bool keygen_opts = false;
	int c, ret = 2;

	log_init("fleetbench-collector");
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("fleetbench-collector %s\n", FLEETBENCH_VERSION);
		return 0;
	}
	command = argv[1];
	if (strcmp(command, "serve") && strcmp(command, "migrate") &&
	    strcmp(command, "keygen")) {
		log_error("unknown command '%s' (see --help)", command);
		return 2;
	}

	if (cli_init(&cli, own_opts, ARRAY_SIZE(own_opts), flag_keys,
		     ARRAY_SIZE(flag_keys), collector_keys,
		     ARRAY_SIZE(collector_keys)) < 0) {
		log_error("out of memory");
		ret = 1;
		goto out;
	}
	optind = 2;
	while ((c = cli_getopt(&cli, argc, argv, ":c:hV")) != -1) {
		switch (c) {
		case 'c':
			arg_config = optarg;
			break;
		case OPT_DIR:
			arg_dir = optarg;
			keygen_opts = true;
			break;
		case OPT_NAME:
			arg_name = optarg;
			keygen_opts = true;
			break;
		case 'h':
			usage(stdout);
			ret = 0;
			goto out;
		case 'V':
			printf("fleetbench-collector %s\n", FLEETBENCH_VERSION);
			ret = 0;
			goto out;
		default: /* -EINVAL, logged */
			goto out;
		}
	}
	if (keygen_opts && strcmp(command, "keygen")) {
		log_error("--dir and --name are options of keygen only");
		goto out;
	}

	if (!strcmp(command, "keygen")) {
		if (cli.n_values) {
			log_error("keygen takes --dir and --name only, not --%s",
				  cli.values[0].flag->flag);
			goto out;
		}
		ret = cmd_keygen();
		goto out;
	}
	if (load_config(&cfg, &cli) < 0)
		goto out;
	ret = !strcmp(command, "serve") ? cmd_serve(&cfg) : cmd_migrate(&cfg);
out:
	config_release(collector_keys, ARRAY_SIZE(collector_keys), &cfg);
	cli_release(&cli);
	return ret;
}
