/* SPDX-License-Identifier: MIT */
/* The Alertmanager push thread: LISTEN, read the alerts, POST them. */
#include "am_push.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "alertmanager.h"
#include "clock.h"
#include "complain.h"
#include "log.h"
#include "pg.h"

#define RECONNECT_MIN_MS 100
#define RECONNECT_MAX_MS 10000
/* a NOTIFY brings the next push forward, to no less than this after the
 * last one: a burst of new alerts is one push */
#define NOTIFY_GAP_MS 1000

struct am_pusher {
	char *url;
	int interval_ms;
	int timeout_ms;
	int stop_fd; /* an eventfd: readable once stop is asked */
	pthread_t thread;
	struct pg *pg;
	int64_t reconnect_ms;
	int64_t backoff_ms;
	int64_t next_ms; /* the next push */
	int64_t last_ms; /* the last push tried */
	struct complaint db_down;
	struct complaint am_down;
	/* what the last push sent, logged when it changes */
	long long firing, resolved;
};

/* ---- the connection ---- */

static void db_lost(struct am_pusher *p, const char *why)
{
	complain(&p->db_down,
		 "alertmanager: PostgreSQL is unavailable: %s (retrying)", why);
	pg_disconnect(p->pg);
	p->reconnect_ms = mono_ms() + p->backoff_ms;
	p->backoff_ms = p->backoff_ms * 2 > RECONNECT_MAX_MS ?
				RECONNECT_MAX_MS :
				p->backoff_ms * 2;
}

static void db_connect(struct am_pusher *p)
{
	char err[PG_ERR_LEN];
	PGresult *res = NULL;
	int r;

	if (pg_connect(p->pg, err) < 0) {
		db_lost(p, err);
		return;
	}
	r = pg_query(p->pg, "LISTEN fleetbench_alerts", 0, NULL, &res, err);
	PQclear(res);
	if (r < 0) {
		db_lost(p, err);
		return;
	}
	complain_release(&p->db_down,
			 "alertmanager: connected to PostgreSQL again");
	p->backoff_ms = RECONNECT_MIN_MS;
}

/* ---- the push ---- */

static void push(struct am_pusher *p)
{
	int64_t valid = (int64_t)AM_VALID_INTERVALS * p->interval_ms;
	struct am_alerts a = { 0 };
	char err[AM_ERR_LEN];
	int r;

	p->last_ms = mono_ms();
	p->next_ms = p->last_ms + p->interval_ms;
	r = am_alerts_read(p->pg, valid, valid, &a, err);
	if (r == -EIO) {
		db_lost(p, err);
		return;
	}
	if (r < 0) {
		complain(&p->db_down, "alertmanager: cannot read the alerts: %s",
			 err);
		return;
	}
	/* nothing to say: Alertmanager needs no empty POST */
	if (a.firing + a.resolved == 0)
		r = 0;
	else
		r = am_post(p->url, a.body, p->timeout_ms, err);
	if (r < 0) {
		complain(&p->am_down, "alertmanager: cannot push the alerts: %s",
			 err);
	} else {
		complain_release(&p->am_down,
				 "alertmanager: pushing the alerts again");
		if ((long long)a.firing != p->firing ||
		    (long long)a.resolved != p->resolved)
			log_info("alertmanager: pushed %zu firing and %zu resolved alert(s) to %s",
				 a.firing, a.resolved, p->url);
		p->firing = (long long)a.firing;
		p->resolved = (long long)a.resolved;
	}
	am_alerts_release(&a);
}

/* Reads what the server sent: a notification brings the push forward. */
static void db_read(struct am_pusher *p)
{
	char err[PG_ERR_LEN];
	int64_t soon = p->last_ms + NOTIFY_GAP_MS;

	if (pg_poll(p->pg, err) < 0) {
		db_lost(p, err);
		return;
	}
	if (soon < p->next_ms)
		p->next_ms = soon;
}

static void *pusher_main(void *arg)
{
	struct am_pusher *p = arg;

	for (;;) {
		struct pollfd pfd[2] = { { p->stop_fd, POLLIN, 0 },
					 { -1, POLLIN, 0 } };
		int64_t now = mono_ms(), timeout;

		if (!pg_connected(p->pg) && now >= p->reconnect_ms)
			db_connect(p);
		if (pg_connected(p->pg) && now >= p->next_ms)
			push(p);
		now = mono_ms();
		timeout = pg_connected(p->pg) ? p->next_ms - now :
						p->reconnect_ms - now;
		pfd[1].fd = pg_socket(p->pg);
		if (poll(pfd, 2, timeout < 0 ? 0 : (int)timeout) < 0 &&
		    errno != EINTR) {
			log_error("alertmanager: cannot poll: %s",
				  strerror(errno));
			break;
		}
		if (pfd[0].revents & POLLIN)
			break;
		if (pfd[1].fd >= 0 &&
		    (pfd[1].revents & (POLLIN | POLLERR | POLLHUP)))
			db_read(p);
	}
	pg_disconnect(p->pg);
	return NULL;
}

static void pusher_free(struct am_pusher *p)
{
	if (!p)
		return;
	if (p->stop_fd >= 0)
		close(p->stop_fd);
	pg_free(p->pg);
	free(p->url);
	free(p);
}

struct am_pusher *am_pusher_start(const struct am_push_opts *o)
{
	struct am_pusher *p = calloc(1, sizeof(*p));
	int r;

	if (!p)
		return NULL;
	p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	p->pg = pg_new(o->dsn);
	p->url = strdup(o->url);
	p->interval_ms = o->interval_ms;
	p->timeout_ms = o->timeout_ms;
	p->backoff_ms = RECONNECT_MIN_MS;
	p->firing = p->resolved = -1;
	if (p->stop_fd < 0 || !p->pg || !p->url) {
		r = p->stop_fd < 0 ? errno : ENOMEM;
		pusher_free(p);
		errno = r;
		return NULL;
	}
	r = pthread_create(&p->thread, NULL, pusher_main, p);
	if (r) {
		pusher_free(p);
		errno = r;
		return NULL;
	}
	return p;
}

void am_pusher_stop(struct am_pusher *p)
{
	uint64_t one = 1;

	if (!p)
		return;
	if (write(p->stop_fd, &one, sizeof(one)) != sizeof(one))
		log_error("alertmanager: cannot ask the thread to stop: %s",
			  strerror(errno));
	pthread_join(p->thread, NULL);
	pusher_free(p);
}
