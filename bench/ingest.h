/* SPDX-License-Identifier: MIT */
/*
 * What the parts of bench/ingest share: the load generator's phases
 * (ingest_load.c), the COPY baseline (ingest_copy.c), and the figures
 * ingest.c prints.
 */
#ifndef FLEETBENCH_BENCH_INGEST_H
#define FLEETBENCH_BENCH_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fleet.h"
#include "rand.h"

/* What one phase measured. */
struct phase {
	size_t reports, committed, duplicate, rejected, retried, stray;
	double connect_s; /* until every socket finished its handshake */
	double elapsed_s; /* first send to last Ack */
	double rate, steady_rate; /* committed/s: whole, middle 80% */
	double p50_ms, p99_ms, max_ms;
	/* p99 of the reports sent from WARM_NS after the first send on: a
	 * fresh backend's first statements (plan caches, PL/pgSQL compiled)
	 * make the first batches slow, once per connection */
	double warm_p99_ms;
	size_t warm_n;
	long connected_kb; /* the collector's RSS once all were connected */
	long hwm_kb, rss_kb; /* the collector's, after the phase */
	char (*committed_ids)[37]; /* run_ids stored, for the COPY */
	/* CPU ms per committed report: the collector, its backend, this
	 * program's agents; -1 unknown */
	double cpu_collector, cpu_backend, cpu_agents;
	/* the bystander (below): its longest wake-up delay, when (s after
	 * the first send), and how many were over 50 ms; and when the report
	 * with the slowest Ack was sent */
	double stall_ms, stall_at_s, slowest_sent_s;
	size_t stalls_50ms;
};

/* How the simulated agents send (ingest's --pause, --pause-fixed and
 * --no-offers). */
struct ingest_load {
	unsigned long pause_ms; /* between an Ack and the next report */
	bool pause_fixed; /* exactly pause_ms, else exponential of that mean */
	bool no_offers; /* each report at once, without its Offer */
	struct rng rng; /* the pauses */
};

/*
 * n agents, each sending per_agent reports one at a time; then, when idle_s,
 * they stay connected that long. The collector's memory is read once all
 * are connected and at the end. The sockets are closed on return. Fails
 * unless every report was committed.
 */
int ingest_phase_run(struct fleet *b, struct ingest_load *l, size_t n,
		     size_t per_agent, int idle_s, struct phase *ph);

/* Frees what ingest_phase_run() kept in ph. */
void ingest_phase_release(struct phase *ph);

/*
 * The rows the committed reports became, under fresh run_ids, through COPY
 * FROM STDIN into the same tables in one transaction. Only the load and
 * its COMMIT are timed: the export, like the packing of the reports sent,
 * is preparation. Measures the bytes on disk per report first. Returns
 * the COPY's reports per second, or -1.
 */
/* The tables whose bytes a report adds are measured in, as ret_disk[1..]
 * of ingest_copy_rate (ret_disk[0] their sum): runs, run_results,
 * result_shapes, probe_parts, comparison_names (these three's rows shared
 * by runs), run_figures (a run's costs are in its runs row since 040) */
#define DISK_TABLES 6

double ingest_copy_rate(const struct fleet *b, const struct phase *ph,
			size_t *ret_rows, double *ret_cpu,
			double ret_disk[DISK_TABLES + 1]);

#endif
