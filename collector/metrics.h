/* SPDX-License-Identifier: MIT */
/*
 * The collector's /metrics endpoint (docs/operations.md, "Metrics
 * (Prometheus)"): libmicrohttpd serving, on a thread of its own, the
 * collector's health (health.h, published by the serve loop) and the
 * fleet's figures, read from PostgreSQL on each scrape over a connection
 * of that thread. Prometheus text format 0.0.4, or OpenMetrics 1.0.0 when
 * the scraper's Accept header asks for it. Nothing here logs.
 */
#ifndef FLEETBENCH_METRICS_H
#define FLEETBENCH_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "health.h"

#define METRICS_ERR_LEN 256

struct metrics_opts {
	const char *listen; /* host:port; port 0: any free port */
	const char *dsn; /* the fleet's figures: NULL or "": PG* variables */
	int max_groups; /* fleet groups exported at most */
};

struct metrics;

/*
 * Checks a metrics_listen value: HOST:PORT, HOST an IPv4 address, a name
 * or a bracketed IPv6 address ([::1]:9477), PORT 0 to 65535. Returns 0
 * with the address in *ret_addr (may be NULL), or -EINVAL with err saying
 * what is wrong.
 */
int metrics_listen_parse(const char *listen, struct sockaddr_storage *ret_addr,
			 socklen_t *ret_len, char err[METRICS_ERR_LEN]);

/*
 * Binds o->listen and starts serving /metrics on libmicrohttpd's thread.
 * Returns NULL with err set (an invalid address, a bind that failed) and
 * errno set.
 */
struct metrics *metrics_start(const struct metrics_opts *o,
			      char err[METRICS_ERR_LEN]);

/* The port bound (the one chosen when o->listen asked for port 0). */
unsigned metrics_port(const struct metrics *m);

/* Replaces the health snapshot that scrapes read (the serve loop's
 * thread; a mutex held for a copy). NULL m does nothing. */
void metrics_publish(struct metrics *m, const struct collector_health *h);

/* Counts a handshake that ZAP accepted or refused (any thread; the
 * refused ones are fleetbench_collector_refused_total{reason="peer"}, up
 * to date though the serve loop sleeps). NULL m: nothing. */
void metrics_note_handshake(struct metrics *m, bool accepted);

/* Stops the thread, closes the socket and the database; NULL is fine. */
void metrics_stop(struct metrics *m);

#endif
