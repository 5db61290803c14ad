/* SPDX-License-Identifier: MIT */
/*
 * swarm: a fleet of simulated agents against collectors on loopback
 * (docs/reliability.md, item 12; docs/scaling.md, "Herds").
 *
 *   swarm [--agents N] [--reports N] [--spread S] [--send-timeout MS]
 *         [--restarts N] [--down MS] [--sources N] [--collectors N]
 *         [--agent-mode new|old] [--herd] [--no-before]
 *         [--unloaded-agents N] [--min-goodput PCT] [--max-duplicate PCT]
 *         [--max-done RATIO] [--max-rss MIB] [--timeout S]
 *         [--collector PATH] [--agent PATH] [--keep] [-- SERVE-OPTION...]
 *
 * It sets up what bench/ingest does (bench/fleet.h: a throwaway
 * PostgreSQL, `serve` on loopback with CURVE and an allowlist of every
 * simulated agent's key, reports built from the real agent's probe and a
 * tiny bench run). Then --agents agents, all in this process on one
 * zmq_poll loop, each with its own CURVE keys, start at random moments
 * within --spread seconds and deliver their --reports reports as
 * `fleetbench-agent send` does (agent/ship/send.c): one DEALER connection,
 * reports one at a time, each offered first and sent when granted
 * (docs/wire.md, "Offer and grant"), the grant and the Ack each awaited
 * until --send-timeout; on a timeout the socket is dropped and a new one
 * connected after a backoff from 0.5 s to 30 s. --agent-mode new (the
 * default) is this agent: full jitter, offers that say it honours
 * retry-after hints, a hint waited out (send_retry_after_delay()) before
 * it offers again saying it comes back. --agent-mode old is the agent
 * before admission control: equal jitter, no hints, RETRY_LATER ends the
 * pass (it comes back 1 to 2 s later, as a timer would start it). With
 * --collectors 2 a second collector serves the same database and each
 * agent starts at one of the two at random (endpoint_order = random),
 * failing over after four timeouts in a row. Once each next
 * (restarts + 1)-th of the reports is acknowledged, the first collector
 * is restarted on the same port: the odd restarts with SIGTERM (it tells
 * whoever comes to come back, and finishes its batch in hand), the even
 * ones with SIGKILL, down for --down ms each time.
 *
 * --herd measures a herd against the collector's unloaded rate in one
 * run: first "unloaded" (--unloaded-agents agents, each connecting anew
 * for each report as a real agent's pass does, delivering --agents
 * reports back to back: what the collector stores when not overloaded),
 * then "before" (old agents against a collector without admission
 * control, --admit-wait 0, or against the older collector binary
 * --before-collector names: the behaviour before it), then "after"
 * (new agents, the collector's defaults), then "unloaded" again; each
 * herd phase is --agents agents of one report within --spread s. The
 * database is emptied and the collector started anew before each phase.
 * --no-before leaves out the before phase. The last herd phase must meet
 * --min-goodput (its goodput, reports acknowledged over first send to
 * last Ack, as a percentage of the mean unloaded rate), --max-duplicate
 * (DUPLICATE, percent of the Acks), --max-done (first send to last Ack
 * over the ideal, max(agents / unloaded rate, spread)) and --max-rss.
 *
 * After each phase it checks the database: the runs stored are exactly
 * the reports sent, each once. It prints the figures; exit status 0 when
 * all was delivered, checked and within the limits asked, 1 when not, 2
 * for bad usage.
 */
#include <errno.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/wait.h>
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
#include "send.h"
#include "tool.h"

#define BACKOFF_MS 500 /* the agent's defaults (docs/agent.md) */
#define BACKOFF_MAX_MS 30000
#define RETRIES 3 /* reconnects to one endpoint before the next */
#define RETRY_LATER_MS 1000 /* the next pass after RETRY_LATER, plus up to
			     * as much again */
#define SCAN_MS 10 /* starts and deadlines are looked at this often */
#define MS 1000000LL /* ns */
#define COLLECTORS_MAX 2
#define INGEST_BACKENDS_MAX 8 /* a collector's connections, and more */

static unsigned long arg_agents = 500;
static unsigned long arg_reports = 2;
static unsigned long arg_spread_s = 10;
static unsigned long arg_send_timeout_ms = 5000;
static unsigned long arg_restarts = 2;
static unsigned long arg_down_ms = 1000;
static unsigned long arg_sources = 1;
static unsigned long arg_collectors = 1;
static const char *arg_agent_mode = "new";
static bool arg_herd, arg_no_before;
static unsigned long arg_unloaded_agents = 32;
static unsigned long arg_min_goodput = 0; /* percent; 0: not checked */
static unsigned long arg_max_duplicate = 100; /* percent */
static double arg_max_done = 0; /* 0: not checked */
static unsigned long arg_max_rss = 0; /* MiB; 0: not checked */
static unsigned long arg_timeout_s = 900;
static const char *arg_collector = COLLECTOR_PATH;
static const char *arg_before_collector;
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
	size_t ep; /* the collector it sends to */
	bool granted; /* msgs[next] was granted on this connection */
	bool returning; /* msgs[next] comes back after a hint */
	int fd; /* its socket's ZMQ_FD while watched, else -1 */
};

/* How one phase's agents behave (--herd runs several). */
struct phase {
	const char *name;
	size_t agents, reports;
	unsigned long spread_s;
	bool new_agents; /* honour hints, full jitter */
	bool reconnect_each; /* a new connection for each report */
	bool admission; /* the collector's default admission control */
	unsigned long restarts;
	const char *collector; /* another collector binary; NULL: --collector */
};

struct restart {
	int64_t stop_ns, start_ns, resumed_ns; /* resumed: first Ack after */
	size_t acked; /* when it was stopped */
	size_t offering; /* agents whose offer was unanswered then */
	int sig;
};

/* What a phase measured. */
struct result {
	size_t total, acked, committed, duplicate, stored;
	double secs; /* first send to last Ack */
	double goodput; /* acked / secs */
	double p50, p99, max; /* Ack latency from the first attempt, ms */
	size_t timeouts, retry_later, hinted, connects, granted, stray;
	uint32_t hint_max_ms;
	long peak_kb;
	/* CPU per report acknowledged, ms: the collectors (the first's up
	 * to its last restart), their PostgreSQL backends, this program */
	double cpu_collector, cpu_backends, cpu_agents;
};

struct swarm {
	struct fleet fleet;
	/* the second collector: a copy of the fleet sharing its PostgreSQL,
	 * keys and work directory, with a process and log of its own */
	struct fleet second;
	const struct phase *ph;
	struct agent *agents;
	struct fleet_msg *msgs;
	size_t total, acked, done_agents;
	size_t committed, duplicate, rejected, retry_later, timeouts,
		connects, stray, granted, hinted;
	uint32_t hint_max_ms;
	double *lat_ms; /* per acknowledged report */
	int64_t *ack_ns; /* when each was acknowledged */
	struct restart *restarts;
	size_t n_restarts;
	bool down; /* the first collector is stopped */
	bool stopping; /* SIGTERM sent to it, not exited yet */
	int epfd; /* the agents' sockets, watched */
	/* where each collector listens, again after a restart */
	char port_endpoint[COLLECTORS_MAX][128];
	long peak_kb; /* the largest VmHWM of the collectors */
	int64_t start_ns, first_ns, end_ns, mem_ns;
	double cpu_self0; /* self_cpu_ms() at the start */
	double cpu_collector, cpu_backends; /* at the end */
	struct rng rng;
};

/* ---- the agents ---- */

static void agent_close(struct swarm *s, struct agent *a)
{
	if (a->fd >= 0 && s->epfd >= 0) /* before the socket takes it away */
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, a->fd, NULL);
	a->fd = -1;
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
	const char *ep = s->port_endpoint[a->ep];

	if (arg_sources <= 1) {
		snprintf(buf, size, "%s", ep);
		return;
	}
	/* "tcp://SOURCE:0;HOST:PORT" (zmq_tcp(7)): 127.0.0.2 and on */
	snprintf(buf, size, "tcp://127.0.%zu.%zu:0;%s",
		 (a->index % arg_sources + 2) / 256,
		 (a->index % arg_sources + 2) % 256, ep + strlen("tcp://"));
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
	if (!s->first_ns)
		s->first_ns = now;
	a->state = CONNECTING;
	a->deadline_ns = now + (int64_t)arg_send_timeout_ms * MS;
	if (!a->first_ns)
		a->first_ns = now;
	return 0;
}

/* The k-th backoff (k >= 1) in ns: the agent's full jitter
 * (agent/ship/send.c), or the equal jitter of old agents. */
static int64_t backoff_ns(struct swarm *s, unsigned k)
{
	uint64_t d = BACKOFF_MS;

	if (s->ph->new_agents)
		return (int64_t)send_backoff_full_jitter(&s->rng, BACKOFF_MS,
							 BACKOFF_MAX_MS, k) *
		       MS;
	for (unsigned i = 1; i < k && d < BACKOFF_MAX_MS; i++)
		d *= 2;
	if (d > BACKOFF_MAX_MS)
		d = BACKOFF_MAX_MS;
	return (int64_t)(d - d / 2 + rng_below(&s->rng, d / 2 + 1)) * MS;
}

/* No Ack in time: drop the socket, connect again after a backoff; after
 * 1 + RETRIES in a row, to the next collector. */
static void agent_timeout(struct swarm *s, struct agent *a, int64_t now)
{
	agent_close(s, a);
	s->timeouts++;
	a->state = IDLE;
	a->due_ns = now + backoff_ns(s, ++a->timeouts);
	if (a->timeouts > RETRIES && arg_collectors > 1) {
		a->ep = (a->ep + 1) % arg_collectors;
		a->timeouts = 0;
	}
}

/* Sends msgs[next] once granted, else its offer. */
static int agent_send(struct swarm *s, struct agent *a, int64_t now)
{
	unsigned flags = s->ph->new_agents ?
				 CODEC_OFFER_HINTS |
					 (a->returning ? CODEC_OFFER_RETURNING : 0) :
				 0;
	int r = fleet_send(a->sock, &a->msgs[a->next], a->granted, flags);

	(void)now;
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
	s->ack_ns[s->acked] = now;
	s->lat_ms[s->acked++] = (double)(now - a->first_ns) / 1e6;
	a->first_ns = 0;
	a->timeouts = 0;
	a->returning = false;
	for (size_t i = 0; i < s->n_restarts; i++)
		if (s->restarts[i].start_ns && !s->restarts[i].resumed_ns)
			s->restarts[i].resumed_ns = now;
	if (++a->next == a->n) {
		agent_close(s, a);
		a->state = DONE;
		s->done_agents++;
		return;
	}
	if (s->ph->reconnect_each) { /* as a pass of its own */
		agent_close(s, a);
		a->state = IDLE;
		a->due_ns = now;
		return;
	}
	/* the next report on the same connection, with a fresh attempt */
	a->first_ns = now;
	a->deadline_ns = now + (int64_t)arg_send_timeout_ms * MS;
	a->state = CONNECTING;
}

/* RETRY_LATER: a new agent waits out a hint and comes back; otherwise
 * the pass ends and the next comes 1 to 2 s later. */
static void agent_retry_later(struct swarm *s, struct agent *a,
			      const Fleetbench__Ack *ack, int64_t now)
{
	s->retry_later++;
	agent_close(s, a);
	a->state = IDLE;
	if (s->ph->new_agents && ack->has_retry_after_ms) {
		s->hinted++;
		if (ack->retry_after_ms > s->hint_max_ms)
			s->hint_max_ms = ack->retry_after_ms;
		a->returning = true;
		a->timeouts = 0;
		a->due_ns = now + (int64_t)send_retry_after_delay(
					  &s->rng, ack->retry_after_ms) *
					  MS;
		return;
	}
	a->due_ns = now + (RETRY_LATER_MS +
			   (int64_t)rng_below(&s->rng, RETRY_LATER_MS)) *
				  MS;
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
		    (strcmp(ack->run_id, a->msgs[a->next].run_id) &&
		     !(!*ack->run_id &&
		       ack->status == FLEETBENCH__ACK__STATUS__RETRY_LATER)) ||
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
		default:
			agent_retry_later(s, a, ack, now);
			break;
		}
		codec_free_ack(ack);
	}
	return 0;
}

/* ---- the collectors ---- */

/* The serve options of a phase: the user's, and --admit-wait 0 for one
 * without admission control. */
static void serve_options(struct swarm *s, char **user, int n_user,
			  char **buf)
{
	int n = 0;

	for (int i = 0; i < n_user; i++)
		buf[n++] = user[i];
	s->fleet.collector_path = s->ph->collector ? s->ph->collector :
						     arg_collector;
	if (!s->ph->admission && !s->ph->collector) {
		buf[n++] = "--admit-wait";
		buf[n++] = "0";
	}
	buf[n] = NULL;
	s->fleet.serve_extra = buf;
	s->fleet.n_serve_extra = n;
}

/* Starts the phase's collectors on fresh ports. */
static int collectors_start(struct swarm *s)
{
	if (fleet_collector_start(&s->fleet, NULL) < 0)
		return -1;
	snprintf(s->port_endpoint[0], sizeof(s->port_endpoint[0]), "%s",
		 s->fleet.endpoint);
	if (arg_collectors < 2)
		return 0;
	s->second = s->fleet;
	s->second.collector = 0;
	s->second.starts = 1000 + s->fleet.starts;
	s->second.pg_started = false;
	if (fleet_collector_start(&s->second, NULL) < 0)
		return -1;
	snprintf(s->port_endpoint[1], sizeof(s->port_endpoint[1]), "%s",
		 s->second.endpoint);
	return 0;
}

static void collectors_stop(struct swarm *s)
{
	int status = fleet_collector_stop(&s->fleet);

	if (status != 0)
		log_warn("the collector exited with status %d on SIGTERM",
			 status);
	if (arg_collectors > 1 && s->second.collector > 0 &&
	    (status = fleet_collector_stop(&s->second)) != 0)
		log_warn("the second collector exited with status %d on SIGTERM",
			 status);
}

/* Stops the first collector when the next share of the reports is
 * acknowledged, starts it again --down ms later. */
static int restarts_step(struct swarm *s, int64_t now)
{
	struct fleet *f = &s->fleet;
	struct restart *r;

	if (s->stopping) { /* the agents go on meanwhile, as real ones do */
		int status;
		pid_t p = waitpid(f->collector, &status, WNOHANG);

		r = &s->restarts[s->n_restarts - 1];
		if (p == 0 && now < r->stop_ns + 10000 * MS)
			return 0;
		if (p == 0) {
			log_warn("the collector did not stop in 10 s: killing it");
			fleet_collector_kill(f);
		} else if (p == f->collector && status != 0) {
			log_warn("the collector exited with status %d on SIGTERM",
				 status);
		}
		f->collector = 0;
		s->stopping = false;
		r->stop_ns = mono_ns(); /* down from its exit */
		return 0;
	}
	if (s->down) {
		r = &s->restarts[s->n_restarts - 1];
		if (now < r->stop_ns + (int64_t)arg_down_ms * MS)
			return 0;
		if (fleet_collector_start(f, s->port_endpoint[0]) < 0)
			return -1;
		r->start_ns = mono_ns();
		s->down = false;
		return 0;
	}
	if (s->n_restarts == s->ph->restarts ||
	    s->acked < s->total * (s->n_restarts + 1) / (s->ph->restarts + 1))
		return 0;
	/*
	 * Past the share, the stop waits for agents that are asking for a
	 * turn (their offers unanswered), whom a stopping collector tells to
	 * come back: until the next share of the reports, then it stops
	 * anyway (the herd may have been granted whole by then).
	 */
	size_t offering = 0;

	for (size_t i = 0; i < s->ph->agents; i++)
		offering += s->agents[i].state == WAITING &&
			    !s->agents[i].granted;
	if (!offering && s->acked < s->total * (2 * s->n_restarts + 3) /
					   (2 * s->ph->restarts + 2))
		return 0;
	r = &s->restarts[s->n_restarts++];
	r->acked = s->acked;
	r->offering = offering;
	r->sig = s->n_restarts % 2 ? SIGTERM : SIGKILL;
	r->stop_ns = mono_ns();
	s->down = true;
	if (r->sig == SIGTERM) {
		kill(f->collector, SIGTERM);
		s->stopping = true;
	} else {
		fleet_collector_kill(f);
	}
	return 0;
}

/* The collectors' peak RSS so far, read once a second. */
static void memory_step(struct swarm *s, int64_t now)
{
	const struct fleet *fs[] = { &s->fleet, &s->second };
	long hwm, rss;

	if (now < s->mem_ns)
		return;
	s->mem_ns = now + 1000 * MS;
	for (size_t i = 0; i < arg_collectors && i < COLLECTORS_MAX; i++) {
		if ((i == 0 && s->down) || fs[i]->collector <= 0)
			continue;
		if (proc_mem(fs[i]->collector, &hwm, &rss) == 0 &&
		    hwm > s->peak_kb)
			s->peak_kb = hwm;
	}
}

/* The CPU the collectors and their backends have used (they are about to
 * stop), and this program since the start. */
static void cpu_step(struct swarm *s)
{
	const struct fleet *fs[] = { &s->fleet, &s->second };
	pid_t pids[2 * INGEST_BACKENDS_MAX];

	s->cpu_collector = s->cpu_backends = 0;
	for (size_t i = 0; i < arg_collectors && i < COLLECTORS_MAX; i++) {
		int n;

		if (fs[i]->collector <= 0)
			continue;
		s->cpu_collector += proc_cpu_ms(fs[i]->collector);
		n = fleet_collector_backends(fs[i], pids, INGEST_BACKENDS_MAX);
		for (int k = 0; k < n; k++)
			s->cpu_backends += proc_cpu_ms(pids[k]);
	}
	s->cpu_self0 = self_cpu_ms() - s->cpu_self0;
}

/* ---- a phase ---- */

/* The phase's reports and counters; the previous phase's are freed. */
static int phase_setup(struct swarm *s, const struct phase *ph)
{
	for (size_t i = 0; s->msgs && i < s->total; i++)
		free(s->msgs[i].buf);
	free(s->msgs);
	free(s->agents);
	free(s->lat_ms);
	free(s->ack_ns);
	free(s->restarts);
	*s = (struct swarm){
		.fleet = s->fleet, .rng = s->rng, .ph = ph, .epfd = -1
	};
	s->ack_ns = calloc(ph->agents * ph->reports, sizeof(*s->ack_ns));
	s->total = ph->agents * ph->reports;
	s->agents = calloc(ph->agents, sizeof(*s->agents));
	s->msgs = calloc(s->total, sizeof(*s->msgs));
	s->lat_ms = calloc(s->total, sizeof(*s->lat_ms));
	s->restarts = calloc(ph->restarts + 1, sizeof(*s->restarts));
	if (!s->agents || !s->msgs || !s->lat_ms || !s->restarts || !s->ack_ns)
		return log_error("out of memory for %zu reports", s->total);
	for (size_t i = 0; i < s->total; i++)
		if (fleet_msg_make(&s->fleet, i / ph->reports, &s->msgs[i]) < 0)
			return -1;
	return 0;
}

/*
 * Acts on what agent a's socket allows now (ZMQ_EVENTS): receives while
 * it waits for an answer, sends while it has something to send, until
 * neither is possible. 0, or -1 (logged).
 */
static int agent_step(struct swarm *s, struct agent *a, int64_t now)
{
	while (a->sock) {
		enum state before = a->state;
		size_t next = a->next;
		int ev = 0, r = 0;
		size_t len = sizeof(ev);

		if (zmq_getsockopt(a->sock, ZMQ_EVENTS, &ev, &len) < 0)
			return log_error("agent %zu: ZMQ_EVENTS: %s", a->index,
					 zmq_strerror(errno));
		if (a->state == WAITING && (ev & ZMQ_POLLIN))
			r = agent_recv(s, a, now);
		else if (a->state == CONNECTING && (ev & ZMQ_POLLOUT))
			r = agent_send(s, a, now);
		else
			return 0;
		if (r < 0)
			return r;
		if (a->state == before && a->next == next && a->sock &&
		    !(ev & ZMQ_POLLIN))
			return 0; /* nothing moved: wait for the socket */
	}
	return 0;
}

/* Watches agent a's socket (its ZMQ_FD says when its events may have
 * changed). 0, or -1 (logged). */
static int agent_watch(int epfd, struct agent *a)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = a->index };
	int fd;
	size_t len = sizeof(fd);

	if (zmq_getsockopt(a->sock, ZMQ_FD, &fd, &len) < 0 ||
	    epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return log_error("agent %zu: cannot watch its socket: %s",
				 a->index, strerror(errno));
	a->fd = fd;
	return 0;
}

/*
 * Every agent started within the spread; returns when all are done. The
 * sockets are watched with epoll, so a loop costs what is ready, not what
 * is connected (a herd has thousands of agents waiting): the simulated
 * agents should take as little of the machine as they can.
 */
static int swarm_run(struct swarm *s)
{
	size_t n = s->ph->agents;
	struct epoll_event evs[256];
	int64_t scan_ns = 0;
	int epfd = epoll_create1(EPOLL_CLOEXEC), r = 0;

	if (epfd < 0)
		return log_error("epoll_create1: %s", strerror(errno));
	s->epfd = epfd;
	s->start_ns = mono_ns();
	s->cpu_self0 = self_cpu_ms();
	for (size_t i = 0; i < n; i++) {
		struct agent *a = &s->agents[i];

		a->index = i;
		a->fd = -1;
		a->msgs = &s->msgs[i * s->ph->reports];
		a->n = s->ph->reports;
		a->ep = arg_collectors > 1 ?
				(size_t)rng_below(&s->rng, arg_collectors) :
				0;
		a->due_ns = s->start_ns +
			    (int64_t)rng_below(&s->rng,
					       s->ph->spread_s * 1000 + 1) *
				    MS;
	}
	while (r == 0 && s->done_agents < n) {
		int64_t now = mono_ns();
		int k;

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
		/* starts and deadlines, every SCAN_MS */
		if (now >= scan_ns) {
			scan_ns = now + SCAN_MS * MS;
			for (size_t i = 0; i < n && r == 0; i++) {
				struct agent *a = &s->agents[i];

				if (a->state == IDLE && now >= a->due_ns) {
					r = agent_connect(s, a, now);
					if (r == 0)
						r = agent_watch(epfd, a);
					if (r == 0)
						r = agent_step(s, a, now);
				} else if ((a->state == CONNECTING ||
					    a->state == WAITING) &&
					   now >= a->deadline_ns) {
					agent_timeout(s, a, now);
				}
			}
			if (r < 0)
				break;
		}
		k = epoll_wait(epfd, evs, (int)ARRAY_SIZE(evs), SCAN_MS);
		if (k < 0 && errno != EINTR) {
			r = log_error("epoll_wait: %s", strerror(errno));
			break;
		}
		now = mono_ns();
		for (int j = 0; j < k && r == 0; j++) {
			struct agent *a = &s->agents[evs[j].data.u64];

			if (a->sock)
				r = agent_step(s, a, now);
		}
	}
	s->end_ns = mono_ns();
	memory_step(s, s->end_ns + 1000 * MS);
	cpu_step(s);
	for (size_t i = 0; i < n; i++)
		agent_close(s, &s->agents[i]);
	close(epfd);
	s->epfd = -1;
	return r < 0 ? -1 : 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs one statement on the fleet's database: 0 or -1 (logged). */
static int db_exec(const struct swarm *s, const char *sql)
{
	PGconn *pg = PQconnectdb(s->fleet.conninfo);
	PGresult *res = NULL;
	int r = -1;

	if (PQstatus(pg) != CONNECTION_OK)
		log_error("cannot connect to PostgreSQL: %s", PQerrorMessage(pg));
	else if (PQresultStatus(res = PQexec(pg, sql)) != PGRES_COMMAND_OK)
		log_error("%s: %s", sql, PQerrorMessage(pg));
	else
		r = 0;
	PQclear(res);
	PQfinish(pg);
	return r;
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

static void result_of(struct swarm *s, size_t stored, struct result *res)
{
	int64_t from = s->first_ns ? s->first_ns : s->start_ns;

	qsort(s->lat_ms, s->acked, sizeof(*s->lat_ms), cmp_double);
	*res = (struct result){
		.total = s->total,
		.acked = s->acked,
		.committed = s->committed,
		.duplicate = s->duplicate,
		.stored = stored,
		.secs = (double)(s->end_ns - from) / 1e9,
		.p50 = percentile(s->lat_ms, s->acked, 0.5),
		.p99 = percentile(s->lat_ms, s->acked, 0.99),
		.max = s->acked ? s->lat_ms[s->acked - 1] : 0,
		.timeouts = s->timeouts,
		.retry_later = s->retry_later,
		.hinted = s->hinted,
		.connects = s->connects,
		.granted = s->granted,
		.stray = s->stray,
		.hint_max_ms = s->hint_max_ms,
		.peak_kb = s->peak_kb,
	};
	if (s->acked) {
		res->cpu_collector = s->cpu_collector / (double)s->acked;
		res->cpu_backends = s->cpu_backends / (double)s->acked;
		res->cpu_agents = s->cpu_self0 / (double)s->acked;
	}
	res->goodput = res->secs > 0 ? (double)s->acked / res->secs : 0;
}

/* Acks in each second from the first send: where the time went. */
static void print_timeline(const struct swarm *s)
{
	int64_t from = s->first_ns ? s->first_ns : s->start_ns;
	size_t secs = (size_t)((s->end_ns - from) / 1000000000) + 1;
	_cleanup_free_ size_t *per = calloc(secs, sizeof(*per));

	if (!per || secs > 3600)
		return;
	for (size_t i = 0; i < s->acked; i++) {
		size_t k = (size_t)((s->ack_ns[i] - from) / 1000000000);

		per[k < secs ? k : secs - 1]++;
	}
	printf("  Acks per second:");
	for (size_t k = 0; k < secs; k++)
		printf(" %zu", per[k]);
	printf("\n");
}

static void print_phase(const struct swarm *s, const struct result *r)
{
	const struct phase *ph = s->ph;

	printf("swarm: %s%s%zu agents x %zu reports (%zu bytes each), started within %lu s, %s agents, collector %s, %lu collector%s, send timeout %lu ms, %lu source addresses; %ld online CPUs\n",
	       arg_herd ? ph->name : "", arg_herd ? ": " : "", ph->agents,
	       ph->reports, s->msgs[0].len, ph->spread_s,
	       ph->new_agents ? "new (hints, full jitter)" :
				"old (no hints, equal jitter)",
	       ph->admission ? "with admission control" :
			       "without admission control",
	       arg_collectors, arg_collectors > 1 ? "s" : "",
	       arg_send_timeout_ms, arg_sources, sysconf(_SC_NPROCESSORS_ONLN));
	printf("  delivered %zu of %zu reports in %.1f s (%.1f reports/s): %zu COMMITTED, %zu DUPLICATE; %zu stored once\n",
	       r->acked, r->total, r->secs, r->goodput, r->committed,
	       r->duplicate, r->stored);
	printf("  Ack latency from the first attempt: p50 %.0f ms, p99 %.0f ms, max %.0f ms\n",
	       r->p50, r->p99, r->max);
	printf("  %zu connections, %zu grants, %zu timeouts (socket dropped, sent again), %zu RETRY_LATER (%zu with a hint waited out, longest %u ms), %zu rejected, %zu stray Acks\n",
	       r->connects, r->granted, r->timeouts, r->retry_later, r->hinted,
	       r->hint_max_ms, s->rejected, r->stray);
	for (size_t i = 0; i < s->n_restarts; i++) {
		const struct restart *rs = &s->restarts[i];

		printf("  restart %zu (%s) at %zu acknowledged, %zu agents offering: down %.1f s, first Ack %.1f s after the start\n",
		       i + 1, rs->sig == SIGTERM ? "SIGTERM" : "SIGKILL",
		       rs->acked, rs->offering,
		       (double)(rs->start_ns - rs->stop_ns) / 1e9,
		       rs->resumed_ns ?
			       (double)(rs->resumed_ns - rs->start_ns) / 1e9 :
			       -1.0);
	}
	printf("  collector peak RSS %.1f MiB (largest of the collectors, sampled each second)\n",
	       (double)r->peak_kb / 1024);
	printf("  CPU per report: collector %.2f ms, its PostgreSQL backends %.2f ms, the simulated agents %.2f ms\n",
	       r->cpu_collector, r->cpu_backends, r->cpu_agents);
	print_timeline(s);
	fflush(stdout);
}

/* One phase: an empty database, the collectors started anew, the agents,
 * the ledger. 0, or -1 (logged). */
static int phase_run(struct swarm *s, const struct phase *ph, char **user,
		     int n_user, struct result *res)
{
	char *serve[64];
	size_t stored = 0;
	int r = -1;

	if (n_user > 60)
		return log_error("too many serve options");
	if (phase_setup(s, ph) < 0)
		return -1;
	serve_options(s, user, n_user, serve);
	if (db_exec(s, "TRUNCATE runs CASCADE") < 0 || collectors_start(s) < 0)
		goto out;
	fprintf(stderr, "swarm: %s%scollector on %s%s%s, PostgreSQL in %s: %zu agents x %zu reports\n",
		arg_herd ? ph->name : "", arg_herd ? ": " : "",
		s->port_endpoint[0], arg_collectors > 1 ? " and " : "",
		arg_collectors > 1 ? s->port_endpoint[1] : "", s->fleet.pg_dir,
		ph->agents, ph->reports);
	if (swarm_run(s) < 0)
		goto out;
	if (s->acked + s->rejected < s->total) {
		log_error("only %zu of %zu reports were acknowledged", s->acked,
			  s->total);
		goto out;
	}
	if (swarm_verify(s, &stored) < 0)
		goto out;
	result_of(s, stored, res);
	print_phase(s, res);
	r = s->rejected ? -1 : 0;
out:
	if (r < 0 && s->fleet.collector > 0)
		fleet_collector_log_tail(&s->fleet);
	collectors_stop(s);
	s->fleet.serve_extra = NULL;
	s->fleet.n_serve_extra = 0;
	return r;
}

/* The herd's verdict on its last phase (--min-goodput and the others):
 * 0 when within them, -1 (logged) when not. */
static int herd_verdict(const struct result *u1, const struct result *u2,
			const struct result *before, const struct result *after)
{
	double unloaded = (u1->goodput + u2->goodput) / 2;
	double ideal = (double)after->total / unloaded;
	double dup = after->acked ? 100.0 * (double)after->duplicate /
					    (double)after->acked :
				    0;
	double done, ratio = after->goodput / unloaded;
	int r = 0;

	if (ideal < (double)arg_spread_s)
		ideal = (double)arg_spread_s;
	done = after->secs / ideal;
	printf("herd: unloaded %.1f reports/s (%.1f before the herds, %.1f after); ideal delivery %.1f s\n",
	       unloaded, u1->goodput, u2->goodput, ideal);
	if (before)
		printf("herd: before: goodput %.1f reports/s = %.2f of unloaded, DUPLICATE %.1f%% of Acks, done in %.1f s = %.2f x ideal, %zu timeouts, collector peak RSS %.1f MiB\n",
		       before->goodput, before->goodput / unloaded,
		       before->acked ? 100.0 * (double)before->duplicate /
					       (double)before->acked :
				       0,
		       before->secs, before->secs / ideal, before->timeouts,
		       (double)before->peak_kb / 1024);
	printf("herd: after: goodput %.1f reports/s = %.2f of unloaded, DUPLICATE %.1f%% of Acks, done in %.1f s = %.2f x ideal, %zu timeouts, %zu hints waited out (longest %u ms), collector peak RSS %.1f MiB\n",
	       after->goodput, ratio, dup, after->secs, done, after->timeouts,
	       after->hinted, after->hint_max_ms,
	       (double)after->peak_kb / 1024);
	if (after->stored != after->total)
		r = log_error("%zu of %zu reports stored", after->stored,
			      after->total);
	if (arg_min_goodput && ratio * 100 < (double)arg_min_goodput)
		r = log_error("goodput %.2f of the unloaded rate, below %lu%%",
			      ratio, arg_min_goodput);
	if (dup > (double)arg_max_duplicate)
		r = log_error("DUPLICATE %.1f%% of Acks, over %lu%%", dup,
			      arg_max_duplicate);
	if (arg_max_done > 0 && done > arg_max_done)
		r = log_error("done in %.2f x the ideal, over %.2f", done,
			      arg_max_done);
	if (arg_max_rss && after->peak_kb > (long)arg_max_rss * 1024)
		r = log_error("collector peak RSS %.1f MiB, over %lu MiB",
			      (double)after->peak_kb / 1024, arg_max_rss);
	return r;
}

/* --herd: unloaded, before (unless --no-before), after, unloaded. */
static int herd_run(struct swarm *s, char **user, int n_user)
{
	size_t per = (arg_agents + arg_unloaded_agents - 1) / arg_unloaded_agents;
	const struct phase unloaded = {
		.name = "unloaded",
		.agents = arg_unloaded_agents,
		.reports = per,
		.new_agents = true,
		.reconnect_each = true,
		.admission = true,
	};
	const struct phase before = {
		.name = "before",
		.agents = arg_agents,
		.reports = 1,
		.spread_s = arg_spread_s,
		.restarts = arg_restarts,
		.collector = arg_before_collector,
	};
	const struct phase after = {
		.name = "after",
		.agents = arg_agents,
		.reports = 1,
		.spread_s = arg_spread_s,
		.new_agents = true,
		.admission = true,
		.restarts = arg_restarts,
	};
	struct result u1, u2, b, a;

	if (phase_run(s, &unloaded, user, n_user, &u1) < 0 ||
	    (!arg_no_before && phase_run(s, &before, user, n_user, &b) < 0) ||
	    phase_run(s, &after, user, n_user, &a) < 0 ||
	    phase_run(s, &unloaded, user, n_user, &u2) < 0)
		return -1;
	return herd_verdict(&u1, &u2, arg_no_before ? NULL : &b, &a);
}

static const struct tool_opt opts[] = {
	TOOL_OPT_ULONG("agents", &arg_agents, 1, 20000),
	TOOL_OPT_ULONG("reports", &arg_reports, 1, 1000),
	TOOL_OPT_ULONG("spread", &arg_spread_s, 0, 3600),
	TOOL_OPT_ULONG("send-timeout", &arg_send_timeout_ms, 10, 3600000),
	TOOL_OPT_ULONG("restarts", &arg_restarts, 0, 100),
	TOOL_OPT_ULONG("down", &arg_down_ms, 0, 600000),
	TOOL_OPT_ULONG("sources", &arg_sources, 1, 60000),
	TOOL_OPT_ULONG("collectors", &arg_collectors, 1, COLLECTORS_MAX),
	TOOL_OPT_STRING("agent-mode", &arg_agent_mode),
	TOOL_OPT_FLAG("herd", &arg_herd),
	TOOL_OPT_FLAG("no-before", &arg_no_before),
	TOOL_OPT_ULONG("unloaded-agents", &arg_unloaded_agents, 1, 1000),
	TOOL_OPT_ULONG("min-goodput", &arg_min_goodput, 0, 100),
	TOOL_OPT_ULONG("max-duplicate", &arg_max_duplicate, 0, 100),
	TOOL_OPT_DOUBLE("max-done", &arg_max_done),
	TOOL_OPT_ULONG("max-rss", &arg_max_rss, 0, 1000000),
	TOOL_OPT_ULONG("timeout", &arg_timeout_s, 1, 86400),
	TOOL_OPT_STRING("collector", &arg_collector),
	TOOL_OPT_STRING("before-collector", &arg_before_collector),
	TOOL_OPT_STRING("agent", &arg_agent),
	TOOL_OPT_FLAG("keep", &arg_keep),
};

static const struct tool tool = TOOL("swarm", opts,
	"usage: swarm [OPTIONS] [-- SERVE-OPTION...]\n"
	"\n"
	"Simulated agents deliver reports to collectors on loopback, one of\n"
	"them restarted meanwhile; then the database must hold each report once.\n"
	"\n"
	"  --agents N        simulated agents (default 500)\n"
	"  --reports N       reports each (default 2; --herd: 1)\n"
	"  --spread S        agents start at random within S seconds (default 10)\n"
	"  --send-timeout MS an attempt's limit, as the agent's (default 5000)\n"
	"  --restarts N      collector restarts, alternately SIGTERM and SIGKILL,\n"
	"                    spread over the delivery (default 2)\n"
	"  --down MS         the collector stays down this long (default 1000)\n"
	"  --sources N       agents connect from N loopback addresses,\n"
	"                    127.0.0.2 and on (default 1: the kernel's choice)\n"
	"  --collectors N    1, or 2 on one database, each agent starting at\n"
	"                    one of them at random (default 1)\n"
	"  --agent-mode M    new: hints and full jitter; old: the agent before\n"
	"                    admission control (default new)\n"
	"  --herd            unloaded rate, then the herd before and after\n"
	"                    admission control, then unloaded again\n"
	"  --no-before       --herd without the before phase\n"
	"  --unloaded-agents N  agents of the unloaded phases (default 32)\n"
	"  --min-goodput PCT the herd's goodput at least PCT%% of unloaded\n"
	"  --max-duplicate PCT  DUPLICATE at most PCT%% of the herd's Acks\n"
	"  --max-done RATIO  the herd done within RATIO x the ideal\n"
	"  --max-rss MIB     the collectors' peak RSS at most MIB\n"
	"  --timeout S       give up after S seconds (default 900)\n"
	"  --collector PATH  fleetbench-collector (default " COLLECTOR_PATH ")\n"
	"  --before-collector PATH  the before phase's collector: an older\n"
	"                    build (its own defaults), not --admit-wait 0\n"
	"  --agent PATH      fleetbench-agent (default " AGENT_PATH ")\n"
	"  --keep            keep the work directory\n",
	.max_args = TOOL_ANY_ARGS);

int main(int argc, char **argv)
{
	struct swarm s = { 0 };
	struct result res;
	uint64_t seed;
	size_t keys;
	int args, ret = 1;

	log_init("swarm");
	args = tool_parse(&tool, argc, argv);
	if (arg_agents * arg_reports > 1000000)
		tool_usage_error(&tool, "--agents times --reports is over 1000000");
	if (strcmp(arg_agent_mode, "new") && strcmp(arg_agent_mode, "old"))
		tool_usage_error(&tool, "--agent-mode: new or old");
	if (arg_no_before && !arg_herd)
		tool_usage_error(&tool, "--no-before goes with --herd");
	keys = arg_agents > arg_unloaded_agents ? arg_agents : arg_unloaded_agents;
	s.fleet = (struct fleet){
		.collector_path = arg_collector,
		.agent_path = arg_agent,
		.keep = arg_keep,
		.deadline_ns = mono_ns() + (int64_t)arg_timeout_s * 1000000000,
	};
	if (fleet_fd_limit(keys) < 0)
		return 1;
	fleet_signals();
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (uint64_t)mono_ns();
	rng_seed(&s.rng, seed);
	if (fleet_init(&s.fleet, "swarm", keys) < 0 ||
	    fleet_pg_start(&s.fleet) < 0)
		goto out;
	if (arg_herd) {
		ret = herd_run(&s, argv + args, argc - args) < 0 ? 1 : 0;
	} else {
		const struct phase one = {
			.name = "swarm",
			.agents = arg_agents,
			.reports = arg_reports,
			.spread_s = arg_spread_s,
			.new_agents = !strcmp(arg_agent_mode, "new"),
			.admission = true,
			.restarts = arg_restarts,
		};

		ret = phase_run(&s, &one, argv + args, argc - args, &res) < 0 ?
			      1 :
			      0;
	}
out:
	fleet_release(&s.fleet);
	for (size_t i = 0; s.msgs && i < s.total; i++)
		free(s.msgs[i].buf);
	free(s.msgs);
	free(s.agents);
	free(s.lat_ms);
	free(s.ack_ns);
	free(s.restarts);
	return ret;
}
