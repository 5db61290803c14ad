/* SPDX-License-Identifier: MIT */
/*
 * The collector under load: committed reports per second, Ack latency and
 * collector memory, against PostgreSQL's own COPY of the same rows.
 *
 *   ingest [--agents N] [--reports N] [--pause MS [--pause-fixed]] [--connections N]
 *          [--probe-only] [--no-offers] [--timeout S] [--collector PATH]
 *          [--agent PATH]
 *          [--keep] [-- SERVE-OPTION...]
 *
 * It sets everything up itself, on loopback only: a throwaway PostgreSQL
 * (tests/harness/pg), `fleetbench-collector migrate`, then `serve` on
 * tcp://127.0.0.1:* with CURVE and an allowlist of every simulated agent's
 * key. Then:
 *  1. --agents DEALER sockets (all in this process, driven by one epoll
 *     over their ZMQ_FDs, each with its own CURVE keys) each send --reports reports one at a
 *     time, as the agent does: offer, wait for the grant, send, wait for
 *     the Ack (--no-offers: send at once, as agents older than offers) (and --pause: an exponential wait of
 *     that mean, a Poisson stream together; --pause-fixed: exactly that),
 *     send the next;
 *  2. the rows those reports became are exported, given fresh run_ids and
 *     loaded again with COPY FROM STDIN in one transaction, timed;
 *  3. --connections new DEALERs connect and send one report each, then
 *     stay connected and idle while the collector's RSS is read.
 * The reports come from a real probe and a tiny real bench run of the agent
 * (agent/ship/report.c), varied in run_id, host and labels. SERVE-OPTIONs are
 * passed on to `serve` (--batch-max 64, say). docs/performance.md has the
 * figures of the reference machine. Exit status 0 when the run completed
 * (missed targets are printed as such), 1 when it failed.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "cleanup.h"
#include "codec.h"
#include "fleet.h"
#include "link.h"
#include "rand.h"
#include "log.h"

#define MiB (1024.0 * 1024.0)
#define COPY_CHUNK (1u << 20) /* bytes per PQputCopyData */
#define IDLE_S 2 /* the connections of phase 3 stay idle this long */
#define RETRY_DELAY_NS 100000000LL /* after RETRY_LATER */
#define WARM_NS 1000000000LL /* see struct phase's warm_p99_ms */

/* Targets of issue 4 on the reference machine (docs/performance.md). */
#define TARGET_RATE 1000.0 /* committed reports/s */
#define TARGET_COPY_RATIO 0.6 /* of the COPY rate */
#define BEFORE_DISK_BYTES 46095.0 /* per report, the 008 layout (docs/performance.md) */
#define TARGET_P99_MS 100.0
#define TARGET_RSS_MIB 64.0 /* with --connections connected */
#define TARGET_CONNECTIONS 1000

static unsigned long arg_agents = 200;
static unsigned long arg_reports = 10;
static unsigned long arg_connections = TARGET_CONNECTIONS;
static unsigned long arg_timeout_s = 600;
static unsigned long arg_pause_ms;
static bool arg_pause_fixed;
static struct rng pause_rng;
static const char *arg_collector = COLLECTOR_PATH;
static const char *arg_agent = AGENT_PATH;
static bool arg_keep;
static bool arg_probe_only;
static bool arg_no_offers;
static char **arg_serve_extra; /* after "--" */
static int arg_n_serve_extra;

/*
 * The two tables a report fills (schema/010_lean.sql): its run and its
 * results. run_id is the first column of each, which the export relies on
 * and checks. Constant SQL: COPY takes no parameters; a partitioned table
 * is copied out through a query.
 */
static const struct copy_table {
	const char *name;
	const char *out;
	const char *in;
} copy_tables[] = {
	{ "runs", "COPY (SELECT * FROM runs) TO STDOUT",
	  "COPY runs FROM STDIN" },
	{ "run_results", "COPY (SELECT * FROM run_results) TO STDOUT",
	  "COPY run_results FROM STDIN" },
};

/* Bytes on disk of the reports' rows, heap + indexes + TOAST, per run */
#define DISK_BYTES_SQL                                                        \
	"SELECT ((SELECT pg_total_relation_size('runs')) +"                    \
	"        (SELECT sum(pg_total_relation_size(relid))"                   \
	"         FROM pg_partition_tree('run_results')))::float8 /"          \
	"       greatest((SELECT count(*) FROM runs), 1)"

/* One simulated agent: a DEALER sending its reports in order. */
struct sim {
	void *sock;
	struct fleet_msg *msgs;
	size_t n, next; /* next: the report in flight, or to send */
	int64_t sent_ns; /* first send of msgs[next] */
	bool waiting; /* for the grant or the Ack of msgs[next] */
	bool granted; /* msgs[next] was granted: send it, await its Ack */
	bool unsent; /* msgs[next] is due but not sent yet */
	int64_t due_ns; /* not before then (--pause, RETRY_LATER) */
};

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

/*
 * A thread that only sleeps 1 ms at a time and notes how late it wakes:
 * when the slowest Acks coincide with its longest delay, the whole machine
 * (the hypervisor, the host) stalled, not the collector or PostgreSQL.
 */
struct bystander {
	pthread_t thread;
	atomic_bool stop;
	int64_t max_late_ns, max_at_ns;
	size_t over_50ms;
};

static void *bystander_run(void *arg)
{
	struct bystander *b = arg;
	const struct timespec ms = { 0, 1000000 };

	while (!atomic_load(&b->stop)) {
		int64_t t0 = mono_ns(), late;

		nanosleep(&ms, NULL);
		late = mono_ns() - t0 - 1000000;
		if (late > b->max_late_ns) {
			b->max_late_ns = late;
			b->max_at_ns = t0;
		}
		b->over_50ms += late > 50000000;
	}
	return NULL;
}

/* ---- setup: programs, files, keys ---- */

/* ---- PostgreSQL and the collector ---- */

/* ---- the simulated agents ---- */

/* Sends msgs[next], or first its offer (docs/wire.md). */
static int sim_send(struct sim *s)
{
	int r = fleet_send(s->sock, &s->msgs[s->next],
			   arg_no_offers || s->granted);

	if (r < 0) {
		if (r != -EAGAIN)
			return r;
		s->unsent = true;
		return 0;
	}
	if (!s->waiting)
		s->sent_ns = mono_ns();
	s->waiting = true;
	s->unsent = false;
	return 0;
}

struct tally {
	struct phase *ph;
	double *lat_ms; /* per committed report */
	int64_t *sent_ns; /* and when it was first sent */
	double slowest_ms; /* the slowest Ack's latency, and its send */
	int64_t slowest_sent_ns;
	int64_t *ack_ns; /* when each commit's Ack came, in order */
	size_t done;
};

/*
 * The wait before an agent's next report: --pause MS exactly with
 * --pause-fixed; else drawn from an exponential distribution of mean MS,
 * so that the agents' sends together are a Poisson stream of
 * agents * 1000 / MS reports/s, as from hosts whose timers are their own.
 * A fixed pause lets the agents fall into step: those answered by one
 * batch all send again at the same instant, and the bunches grow.
 */
static int64_t pause_ns(void)
{
	double mean = (double)arg_pause_ms * 1e6;
	double u;

	if (arg_pause_fixed)
		return (int64_t)mean;
	/* uniform in (0, 1]: 53 random bits */
	u = (double)((rng_next(&pause_rng) >> 11) + 1) * 0x1p-53;
	return (int64_t)(-log(u) * mean);
}

/* One Ack for s: counts it and sends s's next report. */
static int sim_ack(struct sim *s, const uint8_t *buf, size_t len,
		   struct tally *t)
{
	struct phase *ph = t->ph;
	Fleetbench__Ack *ack = NULL;
	int64_t now = mono_ns();
	int r = codec_unpack_ack(buf, len, &ack);

	if (r < 0 || !s->waiting || strcmp(ack->run_id, s->msgs[s->next].run_id) ||
	    !fleet_ack_expected(ack, arg_no_offers || s->granted)) {
		ph->stray++;
		codec_free_ack(ack);
		return 0;
	}
	s->granted = ack->status == FLEETBENCH__ACK__STATUS__GRANTED;
	switch (ack->status) {
	case FLEETBENCH__ACK__STATUS__GRANTED:
		codec_free_ack(ack);
		return sim_send(s);
	case FLEETBENCH__ACK__STATUS__COMMITTED:
		t->lat_ms[ph->committed] = (double)(now - s->sent_ns) / 1e6;
		t->sent_ns[ph->committed] = s->sent_ns;
		if (t->lat_ms[ph->committed] > t->slowest_ms) {
			t->slowest_ms = t->lat_ms[ph->committed];
			t->slowest_sent_ns = s->sent_ns;
		}
		t->ack_ns[ph->committed] = now;
		memcpy(ph->committed_ids[ph->committed], ack->run_id, 37);
		ph->committed++;
		break;
	case FLEETBENCH__ACK__STATUS__DUPLICATE:
		ph->duplicate++;
		break;
	case FLEETBENCH__ACK__STATUS__REJECTED:
		if (!ph->rejected)
			log_warn("report %s rejected: %s", ack->run_id,
				 ack->reason ? ack->reason : "(no reason)");
		ph->rejected++;
		break;
	default: /* RETRY_LATER: the same report again, a little later;
		  * its latency still counts from the first send */
		ph->retried++;
		s->unsent = true;
		s->due_ns = now + RETRY_DELAY_NS;
		codec_free_ack(ack);
		return 0;
	}
	codec_free_ack(ack);
	s->waiting = false;
	t->done++;
	if (++s->next < s->n && !arg_pause_ms)
		return sim_send(s);
	s->unsent = s->next < s->n;
	s->due_ns = now + pause_ns();
	return 0;
}

/* Receives every Ack waiting on s. */
static int sim_drain(struct sim *s, struct tally *t)
{
	uint8_t buf[CODEC_MAX_ACK + 1];

	for (;;) {
		int n = zmq_recv(s->sock, buf, sizeof(buf), ZMQ_DONTWAIT);

		if (n < 0)
			return errno == EAGAIN ? 0 : -errno;
		if ((size_t)n > sizeof(buf)) {
			t->ph->stray++; /* truncated: not an Ack */
			continue;
		}
		int r = sim_ack(s, buf, (size_t)n, t);

		if (r < 0)
			return r;
	}
}

/*
 * Receives what waits on s when its ZMQ_FD was readable or s was just used:
 * the descriptor only says that s's state may have changed (zmq_getsockopt
 * ZMQ_FD), and an Ack that arrived during a send raises it no more, so
 * ZMQ_EVENTS is asked each time.
 */
static int sim_poll(struct sim *s, struct tally *t)
{
	int events = 0;
	size_t len = sizeof(events);

	if (zmq_getsockopt(s->sock, ZMQ_EVENTS, &events, &len) < 0)
		return -errno;
	return events & ZMQ_POLLIN ? sim_drain(s, t) : 0;
}

/* Until every socket is writable, which with ZMQ_IMMEDIATE means its CURVE
 * handshake and the collector's ZAP check are done. */
static int sims_connect(const struct fleet *b, struct sim *sims, size_t n,
			zmq_pollitem_t *items)
{
	size_t ready = 0;

	for (size_t i = 0; i < n; i++)
		items[i].events = ZMQ_POLLOUT; /* 0 once it is ready */
	while (ready < n) {
		int r = fleet_check_time(b);

		if (r < 0)
			return r;
		if (zmq_poll(items, (int)n, 100) < 0 && errno != EINTR)
			return -errno;
		for (size_t i = 0; i < n; i++) {
			if (items[i].events && items[i].revents & ZMQ_POLLOUT) {
				items[i].events = 0;
				ready++;
			}
		}
	}
	return 0;
}

static void phase_figures(struct phase *ph, struct tally *t, int64_t start)
{
	size_t n = ph->committed;
	double *w;

	if (!n)
		return;
	ph->elapsed_s = (double)(t->ack_ns[n - 1] - start) / 1e9;
	ph->rate = ph->elapsed_s > 0 ? (double)n / ph->elapsed_s : 0;
	/* the middle 80% of the Acks: no connection ramp, no stragglers */
	if (n >= 10) {
		size_t lo = n / 10, hi = n - 1 - n / 10;
		double s = (double)(t->ack_ns[hi] - t->ack_ns[lo]) / 1e9;

		ph->steady_rate = s > 0 ? (double)(hi - lo) / s : 0;
	} else {
		ph->steady_rate = ph->rate;
	}
	ph->warm_n = 0;
	w = malloc(n * sizeof(*w));
	for (size_t i = 0; w && i < n; i++)
		if (t->sent_ns[i] >= start + WARM_NS)
			w[ph->warm_n++] = t->lat_ms[i];
	if (ph->warm_n) {
		qsort(w, ph->warm_n, sizeof(*w), cmp_double);
		ph->warm_p99_ms = percentile(w, ph->warm_n, 0.99);
	}
	free(w);
	qsort(t->lat_ms, n, sizeof(*t->lat_ms), cmp_double);
	ph->p50_ms = percentile(t->lat_ms, n, 0.50);
	ph->p99_ms = percentile(t->lat_ms, n, 0.99);
	ph->max_ms = t->lat_ms[n - 1];
}

/* The CPU ms of the collector's backends together, or -1 without one. */
static double backends_cpu_ms(const pid_t *pids, int n)
{
	double sum = 0;

	for (int i = 0; i < n; i++) {
		double ms = proc_cpu_ms(pids[i]);

		if (ms < 0)
			return -1;
		sum += ms;
	}
	return n ? sum : -1;
}

/*
 * n agents, each sending per_agent reports one at a time; then, when idle_s,
 * they stay connected that long. The collector's memory is read once all
 * are connected and at the end. The sockets are closed on return. Fails
 * unless every report was committed.
 */
static int phase_run(struct fleet *b, size_t n, size_t per_agent,
		     int idle_s, struct phase *ph)
{
	/* a Poisson stream keeps its rate while the phase's reports last:
	 * each agent holds more than its share, and they send until the
	 * phase's total has been sent */
	size_t slots = per_agent * (arg_pause_ms && !arg_pause_fixed ? 3 : 1);
	struct sim *sims = calloc(n, sizeof(*sims));
	struct fleet_msg *msgs = calloc(n * slots, sizeof(*msgs));
	zmq_pollitem_t *items = calloc(n, sizeof(*items));
	struct tally t = { .ph = ph };
	struct bystander by = { .stop = false };
	bool by_running = false;
	size_t total = n * per_agent, started = 0;
	int64_t start;
	int ep = -1;
	int r = -ENOMEM;

	ph->reports = total;
	t.lat_ms = calloc(total, sizeof(*t.lat_ms));
	t.sent_ns = calloc(total, sizeof(*t.sent_ns));
	t.ack_ns = calloc(total, sizeof(*t.ack_ns));
	ph->committed_ids = calloc(total, sizeof(*ph->committed_ids));
	if (!sims || !msgs || !items || !t.lat_ms || !t.sent_ns || !t.ack_ns ||
	    !ph->committed_ids) {
		log_error("out of memory for %zu reports", total);
		goto out;
	}
	for (size_t i = 0; i < n * slots; i++) {
		if (fleet_msg_make(b, i / slots, &msgs[i]) < 0) {
			r = -EINVAL;
			goto out;
		}
	}
	for (size_t i = 0; i < n; i++) {
		sims[i].msgs = &msgs[i * slots];
		sims[i].n = slots;
		sims[i].sock = link_client_new(
			b->zctx, &(struct link_client_opts){
					 .endpoint = b->endpoint,
					 .server_public = b->server_public,
					 .keys = &b->keys[i],
				 });
		if (!sims[i].sock) {
			r = -errno;
			log_error("cannot make agent socket %zu: %s", i,
				  strerror(errno));
			goto out;
		}
		items[i].socket = sims[i].sock;
	}

	start = mono_ns();
	r = sims_connect(b, sims, n, items);
	if (r < 0) {
		log_error("connecting %zu agents: %s", n,
			  r == -EINTR || r == -ETIMEDOUT ? fleet_time_error(r) :
							 strerror(-r));
		goto out;
	}
	ph->connect_s = (double)(mono_ns() - start) / 1e9;
	if (proc_mem(b->collector, &ph->hwm_kb, &ph->connected_kb) < 0)
		ph->connected_kb = -1;

	pid_t backends[8];
	int n_backends = fleet_collector_backends(b, backends, 8);
	double cpu_c = proc_cpu_ms(b->collector);
	double cpu_b = backends_cpu_ms(backends, n_backends);
	double cpu_a = self_cpu_ms();

	start = mono_ns();
	if (pthread_create(&by.thread, NULL, bystander_run, &by) == 0)
		by_running = true;
	/* with --pause, the first sends spread over one pause, so that the
	 * agents do not stay in step */
	for (size_t i = 0; i < n && r == 0; i++) {
		sims[i].unsent = arg_pause_ms > 0;
		sims[i].due_ns = start + (arg_pause_fixed ?
				 (int64_t)(arg_pause_ms * 1000000 / n * i) :
				 pause_ns());
		if (!arg_pause_ms)
			r = sim_send(&sims[i]);
	}
	/* one epoll over the sockets' ZMQ_FDs: zmq_poll() of 1,000 sockets
	 * at every wake cost the simulated agents more CPU than the
	 * collector spends on their reports */
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		r = -errno;
	for (size_t i = 0; i < n && r == 0; i++) {
		int fd;
		size_t len = sizeof(fd);
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = i };

		if (zmq_getsockopt(sims[i].sock, ZMQ_FD, &fd, &len) < 0 ||
		    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
			r = -errno;
		else
			r = sim_poll(&sims[i], &t);
	}
	while (r == 0 && t.done < total) {
		struct epoll_event evs[64];

		r = fleet_check_time(b);
		if (r < 0) {
			log_error("%zu of %zu reports acknowledged: %s", t.done,
				  total, fleet_time_error(r));
			break;
		}
		int64_t now = mono_ns(), wake = now + 100000000;

		for (size_t i = 0; i < n && r == 0; i++) {
			struct sim *s = &sims[i];

			if (s->unsent && now >= s->due_ns && !s->waiting &&
			    started == total) {
				s->unsent = false; /* the phase's total is out */
				continue;
			}
			if (s->unsent && now >= s->due_ns) {
				started += !s->waiting;
				r = sim_send(s);
				if (r == 0 && s->unsent) /* EAGAIN: soon again */
					s->due_ns = now + 1000000;
				if (r == 0)
					r = sim_poll(s, &t);
			}
			if (s->unsent && s->due_ns < wake)
				wake = s->due_ns;
		}
		if (r < 0)
			break;
		/* up to the next due send, rounded up to whole ms */
		int k = epoll_wait(ep, evs, 64,
				   (int)((wake - now + 999999) / 1000000));

		if (k < 0) {
			r = errno == EINTR ? 0 : -errno;
			continue;
		}
		for (int j = 0; j < k && r == 0; j++)
			r = sim_poll(&sims[evs[j].data.u64], &t);
		if (r < 0 && r != -EINTR && r != -ETIMEDOUT)
			log_error("agent socket: %s", strerror(-r));
	}
	if (ep >= 0)
		close(ep);
	if (by_running) {
		atomic_store(&by.stop, true);
		pthread_join(by.thread, NULL);
		ph->stall_ms = (double)by.max_late_ns / 1e6;
		ph->stall_at_s = (double)(by.max_at_ns - start) / 1e9;
		ph->stalls_50ms = by.over_50ms;
	}
	ph->slowest_sent_s = (double)(t.slowest_sent_ns - start) / 1e9;
	phase_figures(ph, &t, start);
	ph->cpu_collector = ph->cpu_backend = ph->cpu_agents = -1;
	if (ph->committed) {
		double c = proc_cpu_ms(b->collector);
		double k = backends_cpu_ms(backends, n_backends);
		double per = (double)ph->committed;

		if (cpu_c >= 0 && c >= 0)
			ph->cpu_collector = (c - cpu_c) / per;
		if (cpu_b >= 0 && k >= 0)
			ph->cpu_backend = (k - cpu_b) / per;
		ph->cpu_agents = (self_cpu_ms() - cpu_a) / per;
	}
	if (r == 0 && idle_s)
		sleep((unsigned int)idle_s);
	if (proc_mem(b->collector, &ph->hwm_kb, &ph->rss_kb) < 0)
		ph->hwm_kb = ph->rss_kb = -1;
	if (r == 0 && fleet_interrupted)
		r = -EINTR;
	if (r == 0 && ph->committed != total)
		r = log_error("only %zu of %zu reports were committed",
			      ph->committed, total);
out:
	for (size_t i = 0; sims && i < n; i++)
		if (sims[i].sock)
			zmq_close(sims[i].sock);
	for (size_t i = 0; msgs && i < n * slots; i++)
		free(msgs[i].buf);
	free(msgs);
	free(sims);
	free(items);
	free(t.lat_ms);
	free(t.sent_ns);
	free(t.ack_ns);
	return r;
}

static void phase_release(struct phase *ph)
{
	free(ph->committed_ids);
	ph->committed_ids = NULL;
}

/* ---- COPY ---- */

struct idmap {
	char old_id[37], new_id[37];
};

static int cmp_idmap(const void *a, const void *b)
{
	return strcmp(((const struct idmap *)a)->old_id,
		      ((const struct idmap *)b)->old_id);
}

struct buf {
	char *data;
	size_t len, cap;
	size_t rows;
};

static int buf_add(struct buf *b, const char *data, size_t len)
{
	if (b->cap - b->len < len) {
		size_t cap = b->cap ? b->cap : 1 << 20;
		char *d;

		while (cap - b->len < len)
			cap *= 2;
		d = realloc(b->data, cap);
		if (!d)
			return -ENOMEM;
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, data, len);
	b->len += len;
	return 0;
}

static int pg_fail(PGconn *pg, const char *what)
{
	return log_error("%s: %s", what, PQerrorMessage(pg));
}

/* Runs constant SQL that returns no rows. */
static int pg_command(PGconn *pg, const char *sql)
{
	PGresult *res = PQexecParams(pg, sql, 0, NULL, NULL, NULL, NULL, 0);
	int r = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : pg_fail(pg, sql);

	PQclear(res);
	return r;
}

/*
 * The rows of table t in PostgreSQL's text COPY format (its escaping, not
 * ours), each with its run_id swapped for the fresh one map gives.
 */
static int copy_export(PGconn *pg, const struct copy_table *t,
		       const struct idmap *map, size_t n, struct buf *out)
{
	PGresult *res = PQexecParams(pg, t->out, 0, NULL, NULL, NULL, NULL, 0);
	char *row;
	int len, r = 0;

	if (PQresultStatus(res) != PGRES_COPY_OUT) {
		PQclear(res);
		return pg_fail(pg, t->out);
	}
	PQclear(res);
	while ((len = PQgetCopyData(pg, &row, 0)) > 0) {
		struct idmap key, *m = NULL;

		if (r == 0 && (len < 37 || row[36] != '\t')) {
			r = log_error("%s: a row does not start with a run_id",
				      t->name);
		} else if (r == 0) {
			memcpy(key.old_id, row, 36);
			key.old_id[36] = '\0';
			m = bsearch(&key, map, n, sizeof(*map), cmp_idmap);
			if (!m)
				r = log_error("%s: a row of run %s, which this benchmark did not commit",
					      t->name, key.old_id);
		}
		if (r == 0) {
			memcpy(row, m->new_id, 36);
			if (buf_add(out, row, (size_t)len) < 0)
				r = log_error("out of memory for the rows of %s",
					      t->name);
			out->rows++;
		}
		PQfreemem(row);
	}
	res = PQgetResult(pg);
	if (len == -2 || PQresultStatus(res) != PGRES_COMMAND_OK)
		r = pg_fail(pg, t->out);
	PQclear(res);
	while ((res = PQgetResult(pg)))
		PQclear(res);
	return r;
}

/* COPY FROM STDIN of rows: 0 or -1 (logged). */
static int copy_load(PGconn *pg, const struct copy_table *t,
		     const struct buf *rows)
{
	PGresult *res = PQexecParams(pg, t->in, 0, NULL, NULL, NULL, NULL, 0);
	int r = 0;

	if (PQresultStatus(res) != PGRES_COPY_IN) {
		PQclear(res);
		return pg_fail(pg, t->in);
	}
	PQclear(res);
	for (size_t off = 0; off < rows->len && r == 0; off += COPY_CHUNK) {
		size_t len = rows->len - off;

		if (len > COPY_CHUNK)
			len = COPY_CHUNK;
		if (PQputCopyData(pg, rows->data + off, (int)len) != 1)
			r = -1;
	}
	if (PQputCopyEnd(pg, r == 0 ? NULL : "aborted") != 1)
		r = -1;
	res = PQgetResult(pg);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		r = -1;
	else if (strtoull(PQcmdTuples(res), NULL, 10) != rows->rows)
		r = log_error("%s: COPY stored %s rows of %zu", t->name,
			      PQcmdTuples(res), rows->rows);
	if (r < 0 && PQresultStatus(res) != PGRES_COMMAND_OK)
		pg_fail(pg, t->in);
	PQclear(res);
	while ((res = PQgetResult(pg)))
		PQclear(res);
	return r;
}

/*
 * The rows the committed reports became, under fresh run_ids, through COPY
 * FROM STDIN into the same tables in one transaction. Only the load and
 * its COMMIT are timed: the export, like the packing of the reports sent,
 * is preparation. Returns the COPY's reports per second, or -1.
 */
static double copy_rate(const struct fleet *b, const struct phase *ph,
			size_t *ret_rows, double *ret_cpu, double *ret_disk)
{
	double cpu0;
	struct buf rows[ARRAY_SIZE(copy_tables)] = { 0 };
	struct idmap *map = calloc(ph->committed, sizeof(*map));
	PGconn *pg = PQconnectdb(b->conninfo);
	double rate = -1;
	int64_t start;
	int r = 0;

	if (PQstatus(pg) != CONNECTION_OK) {
		pg_fail(pg, "cannot connect to PostgreSQL");
		goto out;
	}
	if (!map) {
		log_error("out of memory");
		goto out;
	}
	for (size_t i = 0; i < ph->committed && r == 0; i++) {
		memcpy(map[i].old_id, ph->committed_ids[i], 37);
		r = codec_uuid_new(map[i].new_id);
	}
	if (r < 0) {
		log_error("cannot make a run_id: %s", strerror(-r));
		goto out;
	}
	qsort(map, ph->committed, sizeof(*map), cmp_idmap);
	{
		PGresult *res = PQexec(pg, DISK_BYTES_SQL);
		bool ok = PQresultStatus(res) == PGRES_TUPLES_OK;

		if (ok)
			*ret_disk = strtod(PQgetvalue(res, 0, 0), NULL);
		PQclear(res);
		if (!ok) {
			pg_fail(pg, "cannot measure the tables' size");
			goto out;
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(copy_tables); i++)
		if (copy_export(pg, &copy_tables[i], map, ph->committed,
				&rows[i]) < 0)
			goto out;
	if (rows[0].rows != ph->committed) {
		log_error("runs holds %zu rows, %zu reports were committed",
			  rows[0].rows, ph->committed);
		goto out;
	}

	cpu0 = proc_cpu_ms(PQbackendPID(pg));
	start = mono_ns();
	if (pg_command(pg, "BEGIN") < 0)
		goto out;
	for (size_t i = 0; i < ARRAY_SIZE(copy_tables); i++)
		if (copy_load(pg, &copy_tables[i], &rows[i]) < 0)
			goto out;
	if (pg_command(pg, "COMMIT") < 0)
		goto out;
	rate = (double)ph->committed / ((double)(mono_ns() - start) / 1e9);
	*ret_cpu = cpu0 >= 0 ? (proc_cpu_ms(PQbackendPID(pg)) - cpu0) /
				      (double)ph->committed :
			       -1;
	*ret_rows = 0;
	for (size_t i = 0; i < ARRAY_SIZE(copy_tables); i++)
		*ret_rows += rows[i].rows;
out:
	for (size_t i = 0; i < ARRAY_SIZE(copy_tables); i++)
		free(rows[i].data);
	free(map);
	PQfinish(pg);
	return rate;
}

/* ---- the whole run ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ingest [OPTIONS] [-- SERVE-OPTION...]\n"
		"\n"
		"Starts a throwaway PostgreSQL and fleetbench-collector on loopback, sends\n"
		"realistic reports from simulated agents, and prints committed reports/s,\n"
		"Ack latency, the collector's RSS and PostgreSQL's COPY rate of the same rows.\n"
		"\n"
		"  --agents N       agents sending at once (default 200)\n"
		"  --reports N      reports each agent sends, one at a time (default 10)\n"
		"  --pause MS       each agent waits between an Ack and its next report,\n"
		"                   a random time of mean MS (exponential: together the\n"
		"                   agents offer a Poisson stream of agents*1000/MS\n"
		"                   reports/s); default 0: at once, the most load\n"
		"  --pause-fixed    wait exactly MS instead (the agents fall into step)\n"
		"  --connections N  connections held for the RSS phase, 0 skips it\n"
		"                   (default %d)\n"
		"  --probe-only     send probe-only reports (no benchmark results)\n"
		"  --no-offers      send each report at once, without offering it\n"
		"                   first (as agents older than offers)\n"
		"  --timeout S      give up after S seconds (default 600)\n"
		"  --collector PATH fleetbench-collector (default %s)\n"
		"  --agent PATH     fleetbench-agent (default %s)\n"
		"  --keep           keep the work directory (PostgreSQL's data, the\n"
		"                   collector's log)\n"
		"  -h, --help       show this help\n"
		"\n"
		"SERVE-OPTIONs go to 'fleetbench-collector serve' (--batch-max N, ...).\n",
		TARGET_CONNECTIONS, COLLECTOR_PATH, AGENT_PATH);
}

/* The numeric options: a whole number within [min, max]. */
static const struct num_opt num_opts[] = {
	{ "agents", 1, 10000, &arg_agents },
	{ "reports", 1, 100000, &arg_reports },
	{ "pause", 0, 600000, &arg_pause_ms },
	{ "connections", 0, 10000, &arg_connections },
	{ "timeout", 1, 86400, &arg_timeout_s },
};

static int parse_args(int argc, char **argv)
{
	enum { OPT_COLLECTOR = 0x100, OPT_AGENT, OPT_KEEP, OPT_PROBE_ONLY,
	       OPT_PAUSE_FIXED, OPT_NO_OFFERS, OPT_NUM };
	static const struct option options[] = {
		{ "agents", required_argument, NULL, OPT_NUM + 0 },
		{ "reports", required_argument, NULL, OPT_NUM + 1 },
		{ "pause", required_argument, NULL, OPT_NUM + 2 },
		{ "connections", required_argument, NULL, OPT_NUM + 3 },
		{ "timeout", required_argument, NULL, OPT_NUM + 4 },
		{ "collector", required_argument, NULL, OPT_COLLECTOR },
		{ "agent", required_argument, NULL, OPT_AGENT },
		{ "keep", no_argument, NULL, OPT_KEEP },
		{ "probe-only", no_argument, NULL, OPT_PROBE_ONLY },
		{ "no-offers", no_argument, NULL, OPT_NO_OFFERS },
		{ "pause-fixed", no_argument, NULL, OPT_PAUSE_FIXED },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		if (c >= OPT_NUM && c < OPT_NUM + (int)ARRAY_SIZE(num_opts)) {
			if (num_opt_parse(&num_opts[c - OPT_NUM], optarg) < 0)
				return -1;
		} else if (c == OPT_COLLECTOR) {
			arg_collector = optarg;
		} else if (c == OPT_AGENT) {
			arg_agent = optarg;
		} else if (c == OPT_KEEP) {
			arg_keep = true;
		} else if (c == OPT_PROBE_ONLY) {
			arg_probe_only = true;
		} else if (c == OPT_PAUSE_FIXED) {
			arg_pause_fixed = true;
		} else if (c == OPT_NO_OFFERS) {
			arg_no_offers = true;
		} else if (c == 'h') {
			usage(stdout);
			exit(0);
		} else {
			usage(stderr);
			return -1;
		}
	}
	if (arg_agents * arg_reports > 1000000)
		return log_error("--agents times --reports is over 1000000");
	arg_serve_extra = argv + optind;
	arg_n_serve_extra = argc - optind;
	return 0;
}

static const char *verdict(bool met)
{
	return met ? "met" : "MISSED";
}

/*
 * A paced run (--pause) offers less than the collector could take, and a
 * run of a few hundred reports ends inside a batch or two: neither says
 * anything about the rate.
 */
#define MIN_REPORTS_FOR_RATE 500

static const char *rate_verdict(bool met, size_t committed)
{
	if (arg_pause_ms)
		return "(paced)";
	if (committed < MIN_REPORTS_FOR_RATE)
		return "(too few)";
	return verdict(met);
}

static void print_mib(const char *what, long kb, const char *target,
		      const char *v)
{
	if (kb < 0)
		printf("  %-44s %10s  %-10s\n", what, "?", target);
	else
		printf("  %-44s %10.1f  %-10s %s\n", what, (double)kb / 1024,
		       target, v);
}

static void print_results(const struct fleet *b, const struct phase *p1,
			  double copy, size_t copy_rows, double copy_cpu,
			  double disk, const struct phase *p3, size_t msg_len,
			  const char *counters)
{
	double ratio = copy > 0 ? p1->steady_rate / copy : 0;
	long peak = p1->hwm_kb > p3->hwm_kb ? p1->hwm_kb : p3->hwm_kb;
	const Fleetbench__Report *t = b->tmpl;
	size_t metrics = 0;
	char target[32];

	for (size_t i = 0; i < t->n_benchmarks; i++)
		metrics += t->benchmarks[i]->n_metrics;
	printf("fleetbench ingest: %lu agents x %lu reports, pause %lu ms%s, then %lu connections; %ld online CPUs\n",
	       arg_agents, arg_reports, arg_pause_ms,
	       !arg_pause_ms	 ? "" :
	       arg_pause_fixed ? " (fixed)" :
				 " (mean, exponential)",
	       arg_connections,
	       sysconf(_SC_NPROCESSORS_ONLN));
	if (arg_n_serve_extra) {
		printf("serve options:");
		for (int i = 0; i < arg_n_serve_extra; i++)
			printf(" %s", arg_serve_extra[i]);
		printf("\n");
	}
	printf("report: %zu bytes packed, the probe %zu of them (%s), %zu benchmark variants, %zu metrics, %zu comparisons\n",
	       msg_len,
	       t->probe ? fleetbench__probe__get_packed_size(t->probe) :
			  strlen(t->probe_json),
	       t->probe ? "typed" : "JSON text", t->n_benchmarks, metrics,
	       t->n_comparisons);
	printf("\n  %-44s %10s  %-10s %s\n", "", "measured", "target", "");
	printf("  %-44s %10.2f\n", "seconds until every agent was connected",
	       p1->connect_s);
	snprintf(target, sizeof(target), ">= %.0f", TARGET_RATE);
	printf("  %-44s %10.1f  %-10s %s\n",
	       "committed reports/s (middle 80% of Acks)", p1->steady_rate,
	       target, rate_verdict(p1->steady_rate >= TARGET_RATE, p1->committed));
	printf("  %-44s %10.1f\n", "committed reports/s (first send to last Ack)",
	       p1->rate);
	printf("  %-44s %10.1f\n", "COPY of the same rows, reports/s", copy);
	snprintf(target, sizeof(target), ">= %.2f", TARGET_COPY_RATIO);
	printf("  %-44s %10.2f  %-10s %s\n", "ingest / COPY", ratio, target,
	       rate_verdict(ratio >= TARGET_COPY_RATIO, p1->committed));
	printf("  %-44s %10.1f\n", "Ack latency p50, ms", p1->p50_ms);
	snprintf(target, sizeof(target), "< %.0f", TARGET_P99_MS);
	printf("  %-44s %10.1f  %-10s %s\n", "Ack latency p99, ms", p1->p99_ms,
	       target, verdict(p1->p99_ms < TARGET_P99_MS));
	printf("  %-44s %10.1f  %-10s %s\n",
	       "Ack latency p99, reports sent after 1 s, ms", p1->warm_p99_ms,
	       target, verdict(p1->warm_n && p1->warm_p99_ms < TARGET_P99_MS));
	printf("  %-44s %10.1f  (sent at %.2f s)\n", "Ack latency max, ms",
	       p1->max_ms, p1->slowest_sent_s);
	printf("  %-44s %10.1f  (at %.2f s; %zu over 50 ms)\n",
	       "bystander thread's longest wake-up delay, ms", p1->stall_ms,
	       p1->stall_at_s, p1->stalls_50ms);
	printf("  %-44s %10.2f\n", "CPU ms per report: collector", p1->cpu_collector);
	printf("  %-44s %10.2f\n", "CPU ms per report: its PostgreSQL backend",
	       p1->cpu_backend);
	printf("  %-44s %10.2f\n", "CPU ms per report: the simulated agents",
	       p1->cpu_agents);
	printf("  %-44s %10.2f\n", "CPU ms per report: COPY's backend", copy_cpu);
	snprintf(target, sizeof(target), "<= %.0f", BEFORE_DISK_BYTES / 3);
	printf("  %-44s %10.0f  %-10s %s\n", "bytes on disk per report", disk,
	       target, verdict(disk <= BEFORE_DISK_BYTES / 3));
	print_mib("collector peak RSS while sending, MiB", p1->hwm_kb, "", "");
	if (arg_connections) {
		char what[64];

		printf("  %-44s %10.2f\n",
		       "seconds until every connection was up", p3->connect_s);
		printf("  %-44s %10.1f\n", "Ack latency p99 (one report each), ms",
		       p3->p99_ms);
		snprintf(what, sizeof(what), "collector RSS, %lu connected, MiB",
			 arg_connections);
		print_mib(what, p3->connected_kb, "", "");
		snprintf(what, sizeof(what), "collector RSS, %lu idle after, MiB",
			 arg_connections);
		print_mib(what, p3->rss_kb, "", "");
		snprintf(what, sizeof(what), "collector peak RSS, %lu connected, MiB",
			 arg_connections);
		snprintf(target, sizeof(target), "< %.0f", TARGET_RSS_MIB);
		print_mib(what, p3->hwm_kb,
			  arg_connections >= TARGET_CONNECTIONS ? target : "",
			  arg_connections < TARGET_CONNECTIONS ?
				  "" :
				  verdict((double)p3->hwm_kb / 1024 <
					  TARGET_RSS_MIB));
	}
	print_mib("collector peak RSS, whole run, MiB", peak, "", "");
	printf("\nphase 1: %zu reports, %zu committed, %zu duplicate, %zu rejected, %zu retried, %zu stray Acks; COPY loaded %zu rows\n",
	       p1->reports, p1->committed, p1->duplicate, p1->rejected,
	       p1->retried, p1->stray, copy_rows);
	if (arg_connections)
		printf("RSS phase: %zu reports, %zu committed\n", p3->reports,
		       p3->committed);
	if (counters[0])
		printf("collector: messages received %s\n", counters);
}

int main(int argc, char **argv)
{
	struct fleet b = { 0 };
	struct phase p1 = { 0 }, p3 = { 0 };
	char counters[512] = "";
	size_t msg_len = 0, copy_rows = 0, n_sockets;
	double copy = -1, copy_cpu = -1, disk = -1;
	int ret = 1, r;

	log_init("ingest");
	if (parse_args(argc, argv) < 0)
		return 2;
	/* Each report sent is copied into a message that ZeroMQ's I/O thread
	 * frees, and glibc gave that arena's freed top back to the kernel
	 * (madvise, a TLB shootdown on both CPUs) after nearly every burst:
	 * the simulated agents cost 0.29 ms of CPU a report, 0.12 without
	 * it. Their CPU is not what is measured, and it shares the CPUs with
	 * what is: keep freed memory for reuse. */
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
	n_sockets = arg_agents > arg_connections ? arg_agents : arg_connections;
	if (fleet_fd_limit(n_sockets) < 0)
		return 1;
	fleet_signals();
	rng_seed(&pause_rng, (uint64_t)mono_ns());
	b = (struct fleet){
		.collector_path = arg_collector,
		.agent_path = arg_agent,
		.serve_extra = arg_serve_extra,
		.n_serve_extra = arg_n_serve_extra,
		.keep = arg_keep,
		.probe_only = arg_probe_only,
		.deadline_ns = mono_ns() + (int64_t)arg_timeout_s * 1000000000,
	};
	if (fleet_init(&b, "ingest", n_sockets) < 0)
		goto out;
	{
		struct fleet_msg m;

		if (fleet_msg_make(&b, 0, &m) < 0)
			goto out;
		msg_len = m.len;
		free(m.buf);
	}
	if (fleet_pg_start(&b) < 0 || fleet_collector_start(&b, NULL) < 0)
		goto out;
	fprintf(stderr, "ingest: collector on %s, PostgreSQL in %s\n",
		b.endpoint, b.pg_dir);

	fprintf(stderr, "ingest: phase 1: %lu agents x %lu reports\n",
		arg_agents, arg_reports);
	if (phase_run(&b, arg_agents, arg_reports, 0, &p1) < 0)
		goto out;

	fprintf(stderr, "ingest: COPY of the same rows\n");
	copy = copy_rate(&b, &p1, &copy_rows, &copy_cpu, &disk);
	if (copy < 0)
		goto out;

	if (arg_connections) {
		fprintf(stderr, "ingest: RSS phase: %lu connections\n",
			arg_connections);
		/* from here VmHWM is the peak of this phase alone */
		if (proc_reset_hwm(b.collector) < 0)
			log_warn("cannot reset the collector's VmHWM: the peak below includes phase 1");
		if (phase_run(&b, arg_connections, 1, IDLE_S, &p3) < 0)
			goto out;
	}
	zmq_ctx_term(b.zctx);
	b.zctx = NULL;
	r = fleet_collector_stop(&b);
	if (r != 0) {
		fleet_collector_log_tail(&b);
		log_error("the collector exited with status %d", r);
		goto out;
	}
	fleet_collector_log_find(&b, "messages received ", counters,
				 sizeof(counters));
	print_results(&b, &p1, copy, copy_rows, copy_cpu, disk, &p3, msg_len,
		      counters);
	ret = 0;
out:
	if (ret != 0 && b.collector > 0)
		fleet_collector_log_tail(&b);
	phase_release(&p1);
	phase_release(&p3);
	fleet_release(&b);
	return ret;
}
