/* SPDX-License-Identifier: MIT */
/*
 * A simulated fleet on loopback, shared by the load programs
 * (bench/ingest, tests/reliability/load/swarm): a work directory, a
 * throwaway PostgreSQL (tests/harness/pg), `fleetbench-collector migrate`
 * and `serve` with CURVE and an allowlist of every simulated agent's key,
 * and realistic reports, each a variant of one built from the real agent's
 * probe of this host and a tiny bench run. Failures are logged (log.h)
 * and returned as -1: these are the programs' own main loops.
 */
#ifndef FLEETBENCH_TEST_FLEET_H
#define FLEETBENCH_TEST_FLEET_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fleetbench.pb-c.h"
#include "link.h"

struct fleet {
	/* set before fleet_init() */
	const char *collector_path; /* fleetbench-collector */
	const char *agent_path; /* fleetbench-agent */
	char **serve_extra; /* more options of `serve` */
	int n_serve_extra;
	bool keep; /* fleet_release() keeps the work directory */
	bool probe_only; /* reports without benchmark results */
	int64_t deadline_ns; /* fleet_check_time() fails after (mono_ns) */
	/* NULL, or "sync" or "async": a streaming standby of the server
	 * (tests/harness/pg standby), the primary waiting for it at each
	 * commit with "sync" */
	const char *standby;

	char work[64]; /* /tmp/fb<name>.XXXXXX */
	char pg_dir[96];
	char standby_dir[96];
	bool standby_started;
	char conninfo[256];
	char endpoint[128]; /* where the collector listens */
	char log_path[128]; /* the collector's log, one per start */
	char server_public[LINK_KEY_LEN + 1];
	struct link_keypair *keys; /* one per simulated agent */
	size_t n_keys;
	Fleetbench__Report *tmpl;
	bool pg_started;
	pid_t collector; /* 0: not running */
	unsigned starts; /* collectors started so far */
	void *zctx; /* for the simulated agents, sized by fleet_init() */
};

/* One packed report and its run_id. */
struct fleet_msg {
	uint8_t *buf;
	size_t len;
	char run_id[37];
};

/* Set by SIGINT and SIGTERM once fleet_signals() installed the handler. */
extern volatile sig_atomic_t fleet_interrupted;

/* SIGINT and SIGTERM set fleet_interrupted; SIGPIPE is ignored. */
void fleet_signals(void);

/* -EINTR when interrupted, -ETIMEDOUT past f->deadline_ns, else 0. */
int fleet_check_time(const struct fleet *f);

/* What fleet_check_time()'s failure means, for a log line. */
const char *fleet_time_error(int r);

/*
 * Raises the soft file descriptor limit for this many sockets (two each
 * here, one each in the collector). Fails when the hard limit is too low.
 */
int fleet_fd_limit(size_t sockets);

/*
 * The work directory /tmp/fb<name>.XXXXXX, an empty config file, the
 * collector's keypair and n_keys agent keypairs with their allowlist, the
 * report template (the agent's probe and bench, or the probe alone), and a
 * ZeroMQ context for n_keys sockets.
 */
int fleet_init(struct fleet *f, const char *name, size_t n_keys);

/*
 * Packs the template as a run of simulated agent `agent`: a new run_id,
 * the agent's own hostname and machine_id, one of five label sets by agent
 * index; validated as the collector will. free(m->buf) when done.
 */
int fleet_msg_make(const struct fleet *f, size_t agent, struct fleet_msg *m);

/*
 * Sends what a simulated agent sends next for m, as agent/ship/send.c does
 * (docs/wire.md, "Offer and grant"): its Offer until it is granted, then
 * the report; with ZMQ_DONTWAIT; the Offer with offer_flags (CODEC_OFFER_).
 * 0, or -errno (-EAGAIN: not now).
 */
int fleet_send(void *sock, const struct fleet_msg *m, bool granted,
	       unsigned offer_flags);

/* Whether an Ack answering m is the one expected: while m waits for its
 * grant (granted false) GRANTED, RETRY_LATER or REJECTED; for the report
 * anything but GRANTED. */
bool fleet_ack_expected(const Fleetbench__Ack *ack, bool granted);

/* A throwaway PostgreSQL in work/pg, migrated by the collector
 * (fleet_server.c, as the collector's functions below). */
int fleet_pg_start(struct fleet *f);

/*
 * `serve` on bind (NULL: tcp://127.0.0.1:*, else a loopback endpoint such
 * as the one a killed collector had), its log in work/collector.N.log;
 * returns once it listens, with f->endpoint set. It dies with this program
 * (PR_SET_PDEATHSIG).
 */
int fleet_collector_start(struct fleet *f, const char *bind);

/* SIGTERM (it finishes the batch in hand), SIGKILL after 10 s; the exit
 * status (128 + signal when killed), 0 when none was running. */
int fleet_collector_stop(struct fleet *f);

/* SIGKILL, and reaps it. */
void fleet_collector_kill(struct fleet *f);

/* The last lines of the collector's log, on standard error. */
void fleet_collector_log_tail(const struct fleet *f);

/* The first line of the collector's log holding key, after it, in out;
 * 0 or -ENOENT. */
int fleet_collector_log_find(const struct fleet *f, const char *key,
			     char *out, size_t size);

/* The pids of the collector's PostgreSQL backends (one a connection of
 * `serve --db-connections`), at most max; returns how many, 0 on error. */
int fleet_collector_backends(const struct fleet *f, pid_t *pids, int max);

/* Stops the collector and PostgreSQL, frees, removes the work directory
 * unless f->keep. */
void fleet_release(struct fleet *f);

/* Runs argv; its stdout in *ret_out (free it) when ret_out is not NULL.
 * 0, or -1 (logged) when it cannot run or exits with a status. */
int fleet_run_checked(char *const argv[], char **ret_out);

/* Writes path (created with mode, or truncated) with len bytes of data:
 * 0 or -errno. */
int fleet_write_file(const char *path, const char *data, size_t len,
		     mode_t mode);

/* Stops the throwaway PostgreSQL, when it was started. */
void fleet_pg_stop(struct fleet *f);

#endif
