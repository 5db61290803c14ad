/* SPDX-License-Identifier: MIT */
/*
 * fleetbench-collector serve: receive agents' reports and commit them into
 * PostgreSQL (ingest.c), with the keys, signals and limits it needs.
 */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include <zmq.h>

#include "alert.h"
#include "alertmanager.h"
#include "am_push.h"
#include "cleanup.h"
#include "cmd.h"
#include "complain.h"
#include "ingest.h"
#include "link.h"
#include "log.h"
#include "metrics.h"

#define FD_LIMIT_WANTED 4096
#define MMAP_THRESHOLD (16 * 1024) /* bytes: see heap_setup() */
/* what setrlimit accepts when the hard limit is "unlimited" */
#define FD_LIMIT_UNLIMITED 1048576

/*
 * Called from the ZAP thread (the only one to touch these): a line per
 * peer (mechanism, key, address and verdict) at most once a minute, its
 * repeats counted in its next line, as an agent whose key is allowed can
 * connect again and again (each frame over max_msg_size drops its
 * connection) and a stranger can knock as often as it likes; lines of
 * distinct peers at most 100 a minute.
 * fleetbench_collector_peers_accepted_total and _refused_total count
 * them all.
 */
static void auth_log(void *data, bool accepted, const char *address,
		     const char *mechanism, const char *key)
{
	static struct ratelimit_keyed rl_accepted = {
		.all = { .what = "accepted handshakes", .info = true }
	};
	static struct ratelimit_keyed rl_refused = {
		.all = { .what = "refused handshakes" }
	};
	char peer[192];

	metrics_note_handshake(data, accepted); /* NULL without /metrics */
	snprintf(peer, sizeof(peer), "%s %s %s", mechanism, key ? key : "-",
		 address);
	if (accepted)
		complain_keyed(&rl_accepted, peer,
			       "accepted %s agent %s%s from %s", mechanism,
			       key ? "with key " : "", key ? key : "",
			       address);
	else
		complain_keyed(&rl_refused, peer,
			       "refused %s peer %s%s from %s", mechanism,
			       key ? "with key " : "without a key",
			       key ? key : "", address);
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

int cmd_serve(const struct collector_config *cfg)
{
	struct link_allowlist *allow = NULL;
	struct link_server *server = NULL;
	struct alert_hook *hook = NULL;
	struct am_pusher *am = NULL;
	bool am_ready = false;
	struct metrics *metrics = NULL;
	bool metrics_on = cfg->metrics_listen && *cfg->metrics_listen;
	char metrics_err[METRICS_ERR_LEN];
	struct link_keypair keys;
	struct db d = { 0 };
	char err[LINK_ERR_LEN];
	_cleanup_close_ int sigfd = -1;
	void *zctx = NULL;
	int r, ret = 1;

	if (cfg->retry_after_max_ms < cfg->retry_after_min_ms) {
		log_error("retry_after_max_ms (%lld) is below retry_after_min_ms (%lld)",
			  cfg->retry_after_max_ms, cfg->retry_after_min_ms);
		goto out;
	}
	if (cfg->alertmanager_url) {
		char am_err[AM_ERR_LEN];

		if (am_url_check(cfg->alertmanager_url, am_err) < 0) {
			log_error("alertmanager_url: %s", am_err);
			goto out;
		}
	}
	if (metrics_on && metrics_listen_parse(cfg->metrics_listen, NULL, NULL,
					       metrics_err) < 0) {
		log_error("metrics_listen (--metrics-listen): %s", metrics_err);
		goto out;
	}
	if (serve_keys(cfg, &keys, &allow) < 0)
		goto out;
	if (db_open(&d, cfg) < 0 || db_check_schema(&d, "serve") < 0)
		goto out;
	fd_limit_check();
	heap_setup();
	sigfd = signals_open();
	if (sigfd < 0) {
		log_error("cannot set up signals: %s", strerror(-sigfd));
		goto out;
	}
	/* after the signal mask, which its thread inherits */
	if (metrics_on) {
		metrics = metrics_start(&(struct metrics_opts){
						.listen = cfg->metrics_listen,
						.dsn = cfg->dsn,
						.max_groups = (int)cfg->metrics_max_groups,
					},
					metrics_err);
		if (!metrics) {
			log_error("metrics_listen (--metrics-listen): %s",
				  metrics_err);
			goto out;
		}
		log_info("metrics on http://%.*s:%u/metrics",
			 (int)(strrchr(cfg->metrics_listen, ':') -
			       cfg->metrics_listen),
			 cfg->metrics_listen, metrics_port(metrics));
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
					 .log_data = metrics,
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
	if (cfg->alertmanager_url) {
		am_ready = am_init() == 0;
		if (am_ready)
			am = am_pusher_start(&(struct am_push_opts){
				.dsn = cfg->dsn,
				.url = cfg->alertmanager_url,
				.interval_ms = (int)cfg->alertmanager_interval_ms,
				.timeout_ms = (int)cfg->alertmanager_timeout_ms,
			});
		if (!am) {
			log_error("cannot start the Alertmanager push: %s",
				  am_ready ? strerror(errno) :
					     "libcurl cannot be initialised");
			goto out;
		}
		log_info("alertmanager: pushing to %s every %lld ms",
			 cfg->alertmanager_url, cfg->alertmanager_interval_ms);
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
		.admit = {
			.wait_ms = cfg->admit_wait_ms,
			.retry_min_ms = cfg->retry_after_min_ms,
			.retry_max_ms = cfg->retry_after_max_ms,
		},
		.dsn = cfg->dsn,
		.metrics = metrics,
	});
	ret = r < 0 ? 1 : 0;
out:
	alert_hook_stop(hook);
	am_pusher_stop(am);
	if (am_ready)
		am_cleanup();
	explicit_bzero(&keys, sizeof(keys));
	link_server_free(server);
	link_allowlist_free(allow);
	if (zctx)
		zmq_ctx_term(zctx);
	metrics_stop(metrics); /* after the ZAP thread, which counts in it */
	db_release(&d);
	return ret;
}

