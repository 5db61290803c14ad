/* SPDX-License-Identifier: MIT */
/*
 * The collector's own health as /metrics shows it (metrics.h): a snapshot
 * of the serve loop's counters, gauges and histograms, which the loop
 * fills (serve.c) and publishes under a mutex for the metrics thread to
 * read. Nothing here locks or allocates: observing is a few additions on
 * the serve loop's thread.
 */
#ifndef FLEETBENCH_HEALTH_H
#define FLEETBENCH_HEALTH_H

#include <stddef.h>

/* Why a report was answered REJECTED (the label reason="..."). */
enum health_reject {
	HEALTH_REJECT_FRAMING, /* not one frame, or an empty one */
	HEALTH_REJECT_INVALID, /* does not decode or validate (codec.h) */
	HEALTH_REJECT_RANGE, /* a value over its column's range */
	HEALTH_REJECT_DATABASE, /* PostgreSQL refused it (class 22, 23) */
	HEALTH_REJECT_N,
};

/* Why a peer or a message was turned away without being stored. */
enum health_refused {
	HEALTH_REFUSED_PEER, /* handshake refused by ZAP: key not allowed
				(metrics.c counts these) */
	HEALTH_REFUSED_ADMISSION, /* over admission control's bound */
	HEALTH_REFUSED_QUEUE_FULL, /* ADMIT_QUEUE_MAX offers waiting */
	HEALTH_REFUSED_STOPPING, /* a report that came while stopping */
	HEALTH_REFUSED_N,
};

#define HEALTH_BUCKETS_MAX 16

/* The upper bounds of the histograms' buckets, ascending (the last
 * bucket, +Inf, is implied), defined in metrics.c. */
extern const double health_batch_size_le[];
extern const size_t health_n_batch_size_le;
extern const double health_commit_seconds_le[];
extern const size_t health_n_commit_seconds_le;

/* A histogram: bucket[i] counts the values in (le[i-1], le[i]], not
 * cumulative (the exposition adds them up); bucket[n_le] is +Inf's. */
struct health_histogram {
	unsigned long bucket[HEALTH_BUCKETS_MAX];
	unsigned long count;
	double sum;
};

/* Adds v to h, whose bounds are the n ascending values le. */
static inline void health_observe(struct health_histogram *h,
				  const double *le, size_t n, double v)
{
	size_t i = 0;

	while (i < n && v > le[i])
		i++;
	h->bucket[i]++;
	h->count++;
	h->sum += v;
}

struct collector_health {
	/* counters: messages that were reports (offers apart) */
	unsigned long received, committed, duplicate, retry_later, unacked,
		dropped, ack_lost;
	unsigned long rejected[HEALTH_REJECT_N];
	unsigned long refused[HEALTH_REFUSED_N];
	unsigned long offers, offers_granted, offers_lapsed, offers_stale,
		offers_rejected, offers_in_hand, returned;
	unsigned long db_reconnects;
	/* gauges */
	double backlog; /* offers waiting + grants outstanding + in hand */
	double offers_waiting;
	double admission_bound; /* reports; 0: no admission control */
	double admission_rate; /* reports/s the database answers */
	double db_connections, db_connections_up;
	struct health_histogram batch_size; /* reports per transaction */
	struct health_histogram commit_seconds; /* of committed batches */
};

#endif
