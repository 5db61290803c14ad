/* SPDX-License-Identifier: MIT */
/*
 * swarm: a fleet of simulated agents against one collector that is
 * restarted while they send (docs/reliability.md, item 12).
 *
 *   swarm [--agents N] [--reports N] [--spread S] [--send-timeout MS]
 *         [--restarts N] [--down MS] [--sources N] [--timeout S]
 *         [--collector PATH] [--agent PATH] [--keep] [-- SERVE-OPTION...]
 *
 * It sets up what bench/ingest does (bench/fleet.h: a
 * throwaway PostgreSQL, `serve` on loopback with CURVE and an allowlist of
 * every simulated agent's key, reports built from the real agent's probe
 * and a tiny bench run). Then --agents agents, all in this process on one
 * zmq_poll loop, each with its own CURVE keys, start at random moments
 * within --spread seconds and deliver their --reports reports as
 * `fleetbench-agent send` does (agent/ship/send.c): one DEALER connection,
 * reports one at a time, each offered first and sent when granted
 * (docs/wire.md, "Offer and grant"), the grant and the Ack each awaited
 * until --send-timeout; on a timeout the socket is dropped and a new one
 * connected after a backoff doubling from 0.5 s to 30 s with equal jitter;
 * RETRY_LATER ends the pass (the agent comes back 1 to 2 s later, as a
 * timer would start it). Once each next (restarts + 1)-th of the reports
 * is acknowledged, the collector is restarted on the same port: the odd
 * restarts with SIGTERM (it finishes its batch in hand), the even ones
 * with SIGKILL, down for --down ms each time.
 *
 * When every report is acknowledged (COMMITTED or DUPLICATE) it checks the
 * database: the runs stored are exactly the reports sent, each once. It
 * prints the figures; exit status 0 when all was delivered and checked, 1
 * when not, 2 for bad usage.
 */
#include <errno.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include <zmq.h>

#include "cleanup.h"
#include "clock.h"
#include "codec.h"
#include "fleet.h"
#include "link.h"
#include "log.h"
#include "measure.h"
#include "rand.h"
#include "tool.h"

#define BACKOFF_MS 500 /* the agent's defaults (docs/agent.md) */
#define BACKOFF_MAX_MS 30000
#define RETRY_LATER_MS 1000 /* the next pass after RETRY_LATER, plus up to
			     * as much again */
#define TICK_MS 100 /* the longest poll */
#define MS 1000000LL /* ns */

static unsigned long arg_agents = 500;
static unsigned long arg_reports = 2;
static unsigned long arg_spread_s = 10;
static unsigned long arg_send_timeout_ms = 5000;
static unsigned long arg_restarts = 2;
static unsigned long arg_down_ms = 1000;
static unsigned long arg_sources = 1;
static unsigned long arg_timeout_s = 900;
static const char *arg_collector = COLLECTOR_PATH;
static const char *arg_agent = AGENT_PATH;
static bool arg_keep;

enum state { IDLE, CONNECTING, WAITING, DONE };

/* One simulated agent delivering its reports in order. */
struct agent {
	void *sock;
	struct fleet_msg *msgs;
	size_t n, next; /* next: the report being delivered */
	enum state state;
	int64_t due_ns; /* IDLE: when to connect */
	int64_t deadline_ns; /* CONNECTING, WAITING: end of the attempt */
	int64_t first_ns; /* the first attempt for msgs[next] */
	unsigned timeouts; /* in a row, for the backoff */
	size_t index;
	bool granted; /* msgs[next] was granted on this connection */
};

struct restart {
	int64_t stop_ns, start_ns, resumed_ns; /* resumed: first Ack after */
	size_t acked; /* when it was stopped */
	int sig;
};

struct swarm {
	struct fleet fleet;
	struct agent *agents;
	struct fleet_msg *msgs;
	size_t total, acked, done_agents;
	size_t committed, duplicate, rejected, retry_later, timeouts,
		connects, stray, granted;
	double *lat_ms; /* per acknowledged report */
	struct restart *restarts;
	size_t n_restarts;
	bool down; /* the collector is stopped */
	char port_endpoint[128]; /* where it listens, again after a restart */
	long peak_kb; /* the largest VmHWM of the collectors */
	int64_t start_ns, end_ns, mem_ns;
	struct rng rng;
};

/* ---- the agents ---- */

static void agent_close(struct swarm *s, struct agent *a)
{
	if (a->sock)
		zmq_close(a->sock);
	a->sock = NULL;
	a->granted = false; /* a new connection offers again */
}

/* The endpoint agent a connects to: from a source address of its own
 * within 127.0.0.0/8 when --sources asks for more than one. */
static void agent_endpoint(const struct swarm *s, const struct agent *a,
			   char *buf, size_t size)
{
	if (arg_sources <= 1) {
		snprintf(buf, size, "%s", s->port_endpoint);
		return;
	}
	/* "tcp://SOURCE:0;HOST:PORT" (zmq_tcp(7)): 127.0.0.2 and on */
	snprintf(buf, size, "tcp://127.0.%zu.%zu:0;%s",
		 (a->index % arg_sources + 2) / 256,
		 (a->index % arg_sources + 2) % 256,
		 s->port_endpoint + strlen("tcp://"));
}

static int agent_connect(struct swarm *s, struct agent *a, int64_t now)
{
	char endpoint[192];

	agent_endpoint(s, a, endpoint, sizeof(endpoint));
	a->sock = link_client_new(s->fleet.zctx,
				  &(struct link_client_opts){
					  .endpoint = endpoint,
					  .server_public = s->fleet.server_public,
					  .keys = &s->fleet.keys[a->index],
				  });
	if (!a->sock)
		return log_error("cannot make agent socket %zu for '%s': %s",
				 a->index, endpoint, strerror(errno));
	s->connects++;
	a->state = CONNECTING;
	a->deadline_ns = now + (int64_t)arg_send_timeout_ms * MS;
	if (!a->first_ns)
		a->first_ns = now;
	return 0;
}

/* The k-th backoff (k >= 1) in ns, with equal jitter (agent/ship/send.c). */
static int64_t backoff_ns(struct swarm *s, unsigned k)
{
	uint64_t d = BACKOFF_MS;

	for (unsigned i = 1; i < k && d < BACKOFF_MAX_MS; i++)
		d *= 2;
	if (d > BACKOFF_MAX_MS)
		d = BACKOFF_MAX_MS;
	return (int64_t)(d - d / 2 + rng_below(&s->rng, d / 2 + 1)) * MS;
}

/* No Ack in time: drop the socket, connect again after a backoff. */
static void agent_timeout(struct swarm *s, struct agent *a, int64_t now)
{
	agent_close(s, a);
	s->timeouts++;
	a->state = IDLE;
	a->due_ns = now + backoff_ns(s, ++a->timeouts);
}

/* Sends msgs[next] once granted, else its offer. */
static int agent_send(struct swarm *s, struct agent *a, int64_t now)
{
	int r = fleet_send(a->sock, &a->msgs[a->next], a->granted, 0);

	if (r == -EAGAIN || r == -EINTR)
		return 0; /* not writable after all: poll again */
	if (r < 0)
		return log_error("agent %zu cannot send: %s", a->index,
				 zmq_strerror(-r));
	a->state = WAITING;
	return 0;
}

static void agent_acked(struct swarm *s, struct agent *a, int64_t now)
{
	s->lat_ms[s->acked++] = (double)(now - a->first_ns) / 1e6;
	a->first_ns = 0;
	a->timeouts = 0;
	for (size_t i = 0; i < s->n_restarts; i++)
		if (s->restarts[i].start_ns && !s->restarts[i].resumed_ns)
			s->restarts[i].resumed_ns = now;
	if (++a->next == a->n) {
		agent_close(s, a);
		a->state = DONE;
		s->done_agents++;
		return;
	}
	/* the next report on the same connection, with a fresh attempt */
	a->first_ns = now;
	a->deadline_ns = now + (int64_t)arg_send_timeout_ms * MS;
	a->state = CONNECTING;
}

/* Reads what arrived for a: 0, or -1 (logged). */
static int agent_recv(struct swarm *s, struct agent *a, int64_t now)
{
	uint8_t buf[CODEC_MAX_ACK + 1];

	while (a->sock) {
		Fleetbench__Ack *ack = NULL;
		int n = zmq_recv(a->sock, buf, sizeof(buf), ZMQ_DONTWAIT);

		if (n < 0)
			return errno == EAGAIN ? 0 :
						 log_error("agent %zu cannot receive: %s",
							   a->index,
							   zmq_strerror(errno));
		if ((size_t)n > sizeof(buf) ||
		    codec_unpack_ack(buf, (size_t)n, &ack) < 0 ||
		    a->state != WAITING ||
		    strcmp(ack->run_id, a->msgs[a->next].run_id) ||
		    !fleet_ack_expected(ack, a->granted)) {
			s->stray++;
			codec_free_ack(ack);
			continue;
		}
		a->granted = ack->status == FLEETBENCH__ACK__STATUS__GRANTED;
		switch (ack->status) {
		case FLEETBENCH__ACK__STATUS__GRANTED:
			/* the report next, its Ack awaited anew */
			s->granted++;
			a->deadline_ns = now + (int64_t)arg_send_timeout_ms * MS;
			a->state = CONNECTING;
			break;
		case FLEETBENCH__ACK__STATUS__COMMITTED:
			s->committed++;
			agent_acked(s, a, now);
			break;
		case FLEETBENCH__ACK__STATUS__DUPLICATE:
			s->duplicate++;
			agent_acked(s, a, now);
			break;
		case FLEETBENCH__ACK__STATUS__REJECTED:
			log_error("report %s rejected: %s", ack->run_id,
				  ack->reason ? ack->reason : "(no reason)");
			s->rejected++;
			agent_close(s, a);
			a->state = DONE;
			s->done_agents++;
			break;
		default: /* RETRY_LATER: the pass ends, the next comes later */
			s->retry_later++;
			agent_close(s, a);
			a->state = IDLE;
			a->due_ns = now + (RETRY_LATER_MS +
					   (int64_t)rng_below(&s->rng,
							      RETRY_LATER_MS)) *
						  MS;
			break;
		}
		codec_free_ack(ack);
	}
	return 0;
}

/* ---- the collector's restarts ---- */

/* Stops the collector when the next share of the reports is acknowledged,
 * starts it again --down ms later. */
static int restarts_step(struct swarm *s, int64_t now)
{
	struct fleet *f = &s->fleet;
	struct restart *r;

	if (s->down) {
		r = &s->restarts[s->n_restarts - 1];
		if (now < r->stop_ns + (int64_t)arg_down_ms * MS)
			return 0;
		if (fleet_collector_start(f, s->port_endpoint) < 0)
			return -1;
		r->start_ns = mono_ns();
		s->down = false;
		return 0;
	}
	if (s->n_restarts == arg_restarts ||
	    s->acked < s->total * (s->n_restarts + 1) / (arg_restarts + 1))
		return 0;
	r = &s->restarts[s->n_restarts++];
	r->acked = s->acked;
	r->sig = s->n_restarts % 2 ? SIGTERM : SIGKILL;
	if (r->sig == SIGTERM) {
		int status = fleet_collector_stop(f);

		if (status != 0)
			log_warn("the collector exited with status %d on SIGTERM",
				 status);
	} else {
		fleet_collector_kill(f);
	}
	r->stop_ns = mono_ns();
	s->down = true;
	return 0;
}

/* The collector's peak RSS so far, read once a second. */
static void memory_step(struct swarm *s, int64_t now)
{
	long hwm, rss;

	if (now < s->mem_ns || s->down)
		return;
	s->mem_ns = now + 1000 * MS;
	if (proc_mem(s->fleet.collector, &hwm, &rss) == 0 && hwm > s->peak_kb)
		s->peak_kb = hwm;
}

/* ---- the run ---- */

static int swarm_setup(struct swarm *s)
{
	uint64_t seed;

	s->total = arg_agents * arg_reports;
	s->agents = calloc(arg_agents, sizeof(*s->agents));
	s->msgs = calloc(s->total, sizeof(*s->msgs));
	s->lat_ms = calloc(s->total, sizeof(*s->lat_ms));
	s->restarts = calloc(arg_restarts + 1, sizeof(*s->restarts));
	if (!s->agents || !s->msgs || !s->lat_ms || !s->restarts)
		return log_error("out of memory for %zu reports", s->total);
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (uint64_t)mono_ns();
	rng_seed(&s->rng, seed);
	for (size_t i = 0; i < s->total; i++)
		if (fleet_msg_make(&s->fleet, i / arg_reports, &s->msgs[i]) < 0)
			return -1;
	return 0;
}

/* Every agent started within --spread; returns when all are done. */
static int swarm_run(struct swarm *s)
{
	size_t n = arg_agents;
	zmq_pollitem_t *items = calloc(n, sizeof(*items));
	size_t *which = calloc(n, sizeof(*which));
	int r = 0;

	if (!items || !which) {
		free(items);
		free(which);
		return log_error("out of memory");
	}
	s->start_ns = mono_ns();
	for (size_t i = 0; i < n; i++) {
		struct agent *a = &s->agents[i];

		a->index = i;
		a->msgs = &s->msgs[i * arg_reports];
		a->n = arg_reports;
		a->due_ns = s->start_ns +
			    (int64_t)rng_below(&s->rng, arg_spread_s * 1000 + 1) * MS;
	}
	while (r == 0 && s->done_agents < n) {
		int64_t now = mono_ns(), wake = now + TICK_MS * MS;
		size_t k = 0;

		r = fleet_check_time(&s->fleet);
		if (r < 0) {
			log_error("%zu of %zu reports acknowledged: %s",
				  s->acked, s->total, fleet_time_error(r));
			break;
		}
		if (restarts_step(s, now) < 0) {
			r = -1;
			break;
		}
		memory_step(s, now);
		for (size_t i = 0; i < n && r == 0; i++) {
			struct agent *a = &s->agents[i];

			if (a->state == IDLE && now >= a->due_ns)
				r = agent_connect(s, a, now);
			else if ((a->state == CONNECTING ||
				  a->state == WAITING) &&
				 now >= a->deadline_ns)
				agent_timeout(s, a, now);
			if (a->state == IDLE && a->due_ns < wake)
				wake = a->due_ns;
			if (a->state != CONNECTING && a->state != WAITING)
				continue;
			if (a->deadline_ns < wake)
				wake = a->deadline_ns;
			items[k] = (zmq_pollitem_t){
				.socket = a->sock,
				.events = a->state == CONNECTING ? ZMQ_POLLOUT :
								   ZMQ_POLLIN,
			};
			which[k++] = i;
		}
		if (r < 0)
			break;
		if (zmq_poll(items, (int)k,
			     wake > now ? (long)((wake - now + MS - 1) / MS) : 0) <
			    0 &&
		    errno != EINTR) {
			r = log_error("zmq_poll: %s", zmq_strerror(errno));
			break;
		}
		now = mono_ns();
		for (size_t j = 0; j < k && r == 0; j++) {
			struct agent *a = &s->agents[which[j]];

			if (items[j].revents & ZMQ_POLLIN)
				r = agent_recv(s, a, now);
			else if (items[j].revents & ZMQ_POLLOUT)
				r = agent_send(s, a, now);
		}
	}
	s->end_ns = mono_ns();
	for (size_t i = 0; i < n; i++)
		agent_close(s, &s->agents[i]);
	free(items);
	free(which);
	return r < 0 ? -1 : 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The runs stored are exactly the reports sent, each once: the run ids of
 * runs, sorted, against the sent ones, sorted. Returns 0 or -1 (logged).
 */
static int swarm_verify(struct swarm *s, size_t *ret_stored)
{
	PGconn *pg = PQconnectdb(s->fleet.conninfo);
	PGresult *res = NULL;
	_cleanup_free_ char **sent = calloc(s->total, sizeof(*sent));
	size_t missing = 0, extra = 0, i = 0, j = 0, rows;
	int r = -1;

	if (!sent) {
		log_error("out of memory");
		goto out;
	}
	if (PQstatus(pg) != CONNECTION_OK) {
		log_error("cannot connect to PostgreSQL: %s", PQerrorMessage(pg));
		goto out;
	}
	res = PQexecParams(pg,
			   "SELECT run_id::text FROM runs ORDER BY run_id::text "
			   "COLLATE \"C\"",
			   0, NULL, NULL, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		log_error("cannot read the runs: %s", PQerrorMessage(pg));
		goto out;
	}
	for (size_t k = 0; k < s->total; k++)
		sent[k] = s->msgs[k].run_id;
	qsort(sent, s->total, sizeof(*sent), cmp_str);
	rows = (size_t)PQntuples(res);
	*ret_stored = rows;
	/* both sorted: a merge finds what is on one side only, and a run id
	 * stored twice would appear as one stored beyond the sent ones */
	while (i < s->total || j < rows) {
		int c = i == s->total ? 1 :
			j == rows     ? -1 :
					strcmp(sent[i], PQgetvalue(res, (int)j, 0));

		if (c < 0) {
			if (!missing++)
				log_error("report %s was acknowledged but is not stored",
					  sent[i]);
			i++;
		} else if (c > 0) {
			if (!extra++)
				log_error("run %s is stored but was not sent (or twice)",
					  PQgetvalue(res, (int)j, 0));
			j++;
		} else {
			i++;
			j++;
		}
	}
	if (missing || extra)
		log_error("%zu reports sent and not stored, %zu runs stored and not sent",
			  missing, extra);
	else
		r = 0;
out:
	PQclear(res);
	PQfinish(pg);
	return r;
}

static void print_figures(const struct swarm *s, size_t stored)
{
	double secs = (double)(s->end_ns - s->start_ns) / 1e9;

	qsort(s->lat_ms, s->acked, sizeof(*s->lat_ms), cmp_double);
	printf("swarm: %lu agents x %lu reports (%zu bytes each), started within %lu s, send timeout %lu ms, %lu source addresses; %ld online CPUs\n",
	       arg_agents, arg_reports, s->msgs[0].len, arg_spread_s,
	       arg_send_timeout_ms, arg_sources, sysconf(_SC_NPROCESSORS_ONLN));
	printf("  delivered %zu of %zu reports in %.1f s (%.1f reports/s): %zu COMMITTED, %zu DUPLICATE; %zu stored once\n",
	       s->acked, s->total, secs, secs > 0 ? (double)s->acked / secs : 0,
	       s->committed, s->duplicate, stored);
	printf("  Ack latency from the first attempt: p50 %.0f ms, p99 %.0f ms, max %.0f ms\n",
	       percentile(s->lat_ms, s->acked, 0.5),
	       percentile(s->lat_ms, s->acked, 0.99),
	       s->acked ? s->lat_ms[s->acked - 1] : 0);
	printf("  %zu connections, %zu grants, %zu timeouts (socket dropped, sent again), %zu RETRY_LATER, %zu rejected, %zu stray Acks\n",
	       s->connects, s->granted, s->timeouts, s->retry_later,
	       s->rejected, s->stray);
	for (size_t i = 0; i < s->n_restarts; i++) {
		const struct restart *r = &s->restarts[i];

		printf("  restart %zu (%s) at %zu acknowledged: down %.1f s, first Ack %.1f s after the start\n",
		       i + 1, r->sig == SIGTERM ? "SIGTERM" : "SIGKILL",
		       r->acked, (double)(r->start_ns - r->stop_ns) / 1e9,
		       r->resumed_ns ? (double)(r->resumed_ns - r->start_ns) / 1e9 :
				       -1.0);
	}
	printf("  collector peak RSS %.1f MiB (largest of the collectors, sampled each second)\n",
	       (double)s->peak_kb / 1024);
}

static const struct tool_opt opts[] = {
	TOOL_OPT_ULONG("agents", &arg_agents, 1, 20000),
	TOOL_OPT_ULONG("reports", &arg_reports, 1, 1000),
	TOOL_OPT_ULONG("spread", &arg_spread_s, 0, 3600),
	TOOL_OPT_ULONG("send-timeout", &arg_send_timeout_ms, 10, 3600000),
	TOOL_OPT_ULONG("restarts", &arg_restarts, 0, 100),
	TOOL_OPT_ULONG("down", &arg_down_ms, 0, 600000),
	TOOL_OPT_ULONG("sources", &arg_sources, 1, 60000),
	TOOL_OPT_ULONG("timeout", &arg_timeout_s, 1, 86400),
	TOOL_OPT_STRING("collector", &arg_collector),
	TOOL_OPT_STRING("agent", &arg_agent),
	TOOL_OPT_FLAG("keep", &arg_keep),
};

static const struct tool tool = TOOL("swarm", opts,
	"usage: swarm [OPTIONS] [-- SERVE-OPTION...]\n"
	"\n"
	"Simulated agents deliver reports to a collector on loopback that is\n"
	"restarted meanwhile; then the database must hold each report once.\n"
	"\n"
	"  --agents N        simulated agents (default 500)\n"
	"  --reports N       reports each (default 2)\n"
	"  --spread S        agents start at random within S seconds (default 10)\n"
	"  --send-timeout MS an attempt's limit, as the agent's (default 5000)\n"
	"  --restarts N      collector restarts, alternately SIGTERM and SIGKILL,\n"
	"                    spread over the delivery (default 2)\n"
	"  --down MS         the collector stays down this long (default 1000)\n"
	"  --sources N       agents connect from N loopback addresses,\n"
	"                    127.0.0.2 and on (default 1: the kernel's choice)\n"
	"  --timeout S       give up after S seconds (default 900)\n"
	"  --collector PATH  fleetbench-collector (default " COLLECTOR_PATH ")\n"
	"  --agent PATH      fleetbench-agent (default " AGENT_PATH ")\n"
	"  --keep            keep the work directory\n",
	.max_args = TOOL_ANY_ARGS);

int main(int argc, char **argv)
{
	struct swarm s = { 0 };
	size_t stored = 0;
	int args, ret = 1;

	log_init("swarm");
	args = tool_parse(&tool, argc, argv);
	if (arg_agents * arg_reports > 1000000)
		tool_usage_error(&tool, "--agents times --reports is over 1000000");
	s.fleet = (struct fleet){
		.collector_path = arg_collector,
		.agent_path = arg_agent,
		.serve_extra = argv + args,
		.n_serve_extra = argc - args,
		.keep = arg_keep,
		.deadline_ns = mono_ns() + (int64_t)arg_timeout_s * 1000000000,
	};
	if (fleet_fd_limit(arg_agents) < 0)
		return 1;
	fleet_signals();
	if (fleet_init(&s.fleet, "swarm", arg_agents) < 0 ||
	    swarm_setup(&s) < 0 || fleet_pg_start(&s.fleet) < 0 ||
	    fleet_collector_start(&s.fleet, NULL) < 0)
		goto out;
	snprintf(s.port_endpoint, sizeof(s.port_endpoint), "%s",
		 s.fleet.endpoint);
	fprintf(stderr, "swarm: collector on %s, PostgreSQL in %s: %lu agents x %lu reports\n",
		s.port_endpoint, s.fleet.pg_dir, arg_agents, arg_reports);
	if (swarm_run(&s) < 0)
		goto out;
	if (s.acked + s.rejected < s.total) {
		log_error("only %zu of %zu reports were acknowledged", s.acked,
			  s.total);
		goto out;
	}
	if (swarm_verify(&s, &stored) < 0)
		goto out;
	print_figures(&s, stored);
	ret = s.rejected ? 1 : 0;
out:
	if (ret != 0 && s.fleet.collector > 0)
		fleet_collector_log_tail(&s.fleet);
	fleet_release(&s.fleet);
	for (size_t i = 0; s.msgs && i < s.total; i++)
		free(s.msgs[i].buf);
	free(s.msgs);
	free(s.agents);
	free(s.lat_ms);
	free(s.restarts);
	return ret;
}
