/* SPDX-License-Identifier: MIT */
/*
 * bench/ingest's load generator (ingest.h): simulated agents, all in this
 * process on one epoll over their ZMQ_FDs, each with its own CURVE keys,
 * sending their reports one at a time as the agent does, and what a phase
 * measured of them and of the collector.
 */
#include "ingest.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "clock.h"
#include "codec.h"
#include "link.h"
#include "log.h"
#include "measure.h"

#define RETRY_DELAY_NS 100000000LL /* after RETRY_LATER */
#define WARM_NS 1000000000LL /* see struct phase's warm_p99_ms */

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
	struct ingest_load *load;
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

static int sim_send(struct sim *s)
{
	/* agents that queue their offers: no retry-after hints */
	int r = fleet_send(s->sock, &s->msgs[s->next],
			   s->load->no_offers || s->granted, 0);

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
static int64_t pause_ns(struct ingest_load *l)
{
	double mean = (double)l->pause_ms * 1e6;
	double u;

	if (l->pause_fixed)
		return (int64_t)mean;
	/* uniform in (0, 1]: 53 random bits */
	u = (double)((rng_next(&l->rng) >> 11) + 1) * 0x1p-53;
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
	    !fleet_ack_expected(ack, s->load->no_offers || s->granted)) {
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
	if (++s->next < s->n && !s->load->pause_ms)
		return sim_send(s);
	s->unsent = s->next < s->n;
	s->due_ns = now + pause_ns(s->load);
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

int ingest_phase_run(struct fleet *b, struct ingest_load *l, size_t n,
		     size_t per_agent, int idle_s, struct phase *ph)
{
	/* a Poisson stream keeps its rate while the phase's reports last:
	 * each agent holds more than its share, and they send until the
	 * phase's total has been sent */
	size_t slots = per_agent * (l->pause_ms && !l->pause_fixed ? 3 : 1);
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
		sims[i].load = l;
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
		sims[i].unsent = l->pause_ms > 0;
		sims[i].due_ns = start + (l->pause_fixed ?
				 (int64_t)(l->pause_ms * 1000000 / n * i) :
				 pause_ns(l));
		if (!l->pause_ms)
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

void ingest_phase_release(struct phase *ph)
{
	free(ph->committed_ids);
	ph->committed_ids = NULL;
}
