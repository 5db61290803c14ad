/* SPDX-License-Identifier: MIT */
/* The alert hook's thread: LISTEN, claim a due fleet alert, run the hook. */
#include "alert.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "hook.h"
#include "log.h"
#include "pg.h"

#define RECONNECT_MIN_MS 100
#define RECONNECT_MAX_MS 10000
/* a claimed alert is due again after this much more than the timeout:
 * a collector that dies while its hook runs does not lose the alert */
#define LEASE_EXTRA_MS 30000
#define RETRY_MAX_MS 3600000
/* look for due alerts at least this often, and not more often than the
 * floor when one is due but claimed by someone else */
#define RESCAN_MS 60000
#define RESCAN_FLOOR_MS 100

struct alert_hook {
	char *command;
	int timeout_ms;
	int retry_ms;
	int stop_fd; /* an eventfd: readable once stop is asked */
	pthread_t thread;
	struct pg *pg;
	int64_t reconnect_ms;
	int64_t backoff_ms;
	bool down; /* the outage has been logged */
	/* A hook that fails, fails for every alert: after a failure nothing
	 * is tried before hold_ms, the delay doubling with each failure in a
	 * row (failures) until one succeeds. */
	int64_t hold_ms;
	long long failures;
};

static bool stop_asked(const struct alert_hook *h)
{
	struct pollfd pfd = { h->stop_fd, POLLIN, 0 };

	return poll(&pfd, 1, 0) > 0;
}

/* ---- the connection ---- */

static void db_lost(struct alert_hook *h, const char *why)
{
	if (!h->down)
		log_error("alert hook: PostgreSQL is unavailable: %s (retrying)",
			  why);
	h->down = true;
	pg_disconnect(h->pg);
	h->reconnect_ms = mono_ms() + h->backoff_ms;
	h->backoff_ms = h->backoff_ms * 2 > RECONNECT_MAX_MS ?
				RECONNECT_MAX_MS :
				h->backoff_ms * 2;
}

/*
 * Runs one statement with text parameters. Returns its result, or NULL
 * after logging the error (and dropping a broken connection).
 */
static PGresult *db_exec(struct alert_hook *h, const char *sql, int n,
			 const char *const *params)
{
	char err[PG_ERR_LEN];
	PGresult *res = NULL;
	int r = pg_query(h->pg, sql, n, params, &res, err);

	if (r == -EIO)
		db_lost(h, err);
	else if (r < 0)
		log_error("alert hook: %s", err);
	return r < 0 ? NULL : res;
}

static void db_connect(struct alert_hook *h)
{
	char err[PG_ERR_LEN];
	PGresult *res;

	if (pg_connect(h->pg, err) < 0) {
		db_lost(h, err);
		return;
	}
	res = db_exec(h, "LISTEN fleetbench_alerts", 0, NULL);
	if (!res) {
		if (pg_connected(h->pg))
			db_lost(h, "LISTEN failed");
		return;
	}
	PQclear(res);
	if (h->down)
		log_info("alert hook: connected to PostgreSQL again");
	h->down = false;
	h->backoff_ms = RECONNECT_MIN_MS;
}

/* ---- delivery ---- */

/*
 * Claims the oldest due fleet alert: counts the attempt and moves its
 * next attempt past the lease, so that no other collector takes it
 * meanwhile. Returns 1 with its id and attempt number, 0 when none is due,
 * -EIO on a database error.
 */
static int claim(struct alert_hook *h, long long *ret_id, long long *ret_attempt)
{
	char lease[32];
	const char *params[] = { lease };
	PGresult *res;
	int r = 0;

	snprintf(lease, sizeof(lease), "%d", h->timeout_ms + LEASE_EXTRA_MS);
	res = db_exec(h,
		      "UPDATE fleet_alerts "
		      "SET delivery_attempts = delivery_attempts + 1, "
		      "    next_delivery_at = now() + $1 * interval '1 ms' "
		      "WHERE id = (SELECT id FROM fleet_alerts "
		      "            WHERE delivered_at IS NULL "
		      "                  AND acknowledged_at IS NULL "
		      "                  AND next_delivery_at <= now() "
		      "            ORDER BY next_delivery_at, id LIMIT 1 "
		      "            FOR UPDATE SKIP LOCKED) "
		      "RETURNING id, delivery_attempts",
		      1, params);
	if (!res)
		return -EIO;
	if (PQntuples(res) == 1) {
		*ret_id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
		*ret_attempt = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
		r = 1;
	}
	PQclear(res);
	return r;
}

/*
 * The alert's JSON for the hook (fleetbench_alert_json(), with the
 * attempt added), as a new string; NULL when the alert is gone or on an
 * error, logged.
 */
static char *alert_json(struct alert_hook *h, const char *id,
			long long attempt)
{
	const char *params[] = { id };
	struct json_object *o = NULL, *a;
	char *text = NULL;
	PGresult *res;

	res = db_exec(h, "SELECT fleetbench_alert_json($1)", 1, params);
	if (!res)
		return NULL;
	if (PQntuples(res) == 1 && !PQgetisnull(res, 0, 0))
		o = json_tokener_parse(PQgetvalue(res, 0, 0));
	PQclear(res);
	if (!o || !json_object_is_type(o, json_type_object)) {
		log_error("alert hook: alert %s has no JSON to deliver", id);
		json_object_put(o);
		return NULL;
	}
	a = json_object_new_int64(attempt);
	if (a && json_object_object_add(o, "attempt", a) == 0)
		text = strdup(json_object_to_json_string_ext(
			o, JSON_C_TO_STRING_PLAIN |
				   JSON_C_TO_STRING_NOSLASHESCAPE));
	else
		json_object_put(a);
	json_object_put(o);
	if (!text)
		log_error("alert hook: out of memory");
	return text;
}

/* The delay after the nth failure in a row: retry_ms, doubled for each
 * failure before, at most an hour (or retry_ms if longer). */
static int64_t retry_delay(const struct alert_hook *h, long long n)
{
	int64_t max = h->retry_ms > RETRY_MAX_MS ? h->retry_ms : RETRY_MAX_MS;
	int64_t d = h->retry_ms;

	for (long long i = 1; i < n && d < max; i++)
		d *= 2;
	return d < max ? d : max;
}

static void record(struct alert_hook *h, const char *id, const char *error,
		   int64_t delay_ms)
{
	char delay[32];
	const char *params[] = { id, error, delay };
	PGresult *res;

	snprintf(delay, sizeof(delay), "%" PRId64, delay_ms);
	if (!error)
		res = db_exec(h,
			      "UPDATE fleet_alerts SET delivered_at = now(), "
			      "delivery_error = NULL WHERE id = $1",
			      1, params);
	else
		res = db_exec(h,
			      "UPDATE fleet_alerts SET delivery_error = $2, "
			      "next_delivery_at = now() + $3 * interval '1 ms' "
			      "WHERE id = $1",
			      3, params);
	PQclear(res);
}

/* Delivers the due alerts one by one; a failure holds off all of them. */
static void deliver_due(struct alert_hook *h)
{
	while (pg_connected(h->pg) && !stop_asked(h)) {
		char id[32], env_id[64], err[HOOK_ERR_LEN];
		const char *const env[] = { env_id, NULL };
		_cleanup_free_ char *json = NULL;
		long long alert, attempt;
		int64_t delay;
		int r;

		if (claim(h, &alert, &attempt) <= 0)
			return;
		snprintf(id, sizeof(id), "%lld", alert);
		snprintf(env_id, sizeof(env_id), "FLEETBENCH_ALERT_ID=%lld",
			 alert);
		json = alert_json(h, id, attempt);
		if (!json)
			return; /* due again when the lease ends */
		r = hook_run(h->command, env, json, strlen(json), h->timeout_ms,
			     err);
		if (r == 0) {
			log_info("alert hook: delivered alert %s (attempt %lld)",
				 id, attempt);
			record(h, id, NULL, 0);
			h->failures = 0;
			continue;
		}
		delay = retry_delay(h, ++h->failures);
		log_warn("alert hook: '%s' failed for alert %s (attempt %lld): %s; next attempt in %" PRId64 " ms",
			 h->command, id, attempt, err, delay);
		record(h, id, err, delay);
		h->hold_ms = mono_ms() + delay;
		return;
	}
}

/* Milliseconds until the next alert is due (at most RESCAN_MS). */
static int64_t next_due_ms(struct alert_hook *h)
{
	PGresult *res;
	int64_t ms = RESCAN_MS;

	res = db_exec(h,
		      "SELECT ceil(extract(epoch FROM min(next_delivery_at) "
		      "                               - now()) * 1000) "
		      "FROM fleet_alerts "
		      "WHERE delivered_at IS NULL AND acknowledged_at IS NULL",
		      0, NULL);
	if (!res)
		return RECONNECT_MIN_MS;
	if (!PQgetisnull(res, 0, 0)) {
		double v = strtod(PQgetvalue(res, 0, 0), NULL);

		ms = v < RESCAN_FLOOR_MS ? RESCAN_FLOOR_MS :
		     v > RESCAN_MS	 ? RESCAN_MS :
					   (int64_t)v;
	}
	PQclear(res);
	return ms;
}

/* Reads what the server sent: the notifications only wake us up. */
static void db_read(struct alert_hook *h)
{
	char err[PG_ERR_LEN];

	if (pg_poll(h->pg, err) < 0)
		db_lost(h, err);
}

static void *hook_main(void *arg)
{
	struct alert_hook *h = arg;

	for (;;) {
		struct pollfd pfd[2] = { { h->stop_fd, POLLIN, 0 },
					 { -1, POLLIN, 0 } };
		int64_t now = mono_ms(), timeout;

		if (!pg_connected(h->pg) && now >= h->reconnect_ms)
			db_connect(h);
		if (pg_connected(h->pg) && now >= h->hold_ms)
			deliver_due(h);
		now = mono_ms();
		if (!pg_connected(h->pg)) {
			timeout = h->reconnect_ms - now;
		} else {
			timeout = next_due_ms(h);
			if (h->hold_ms - now > timeout)
				timeout = h->hold_ms - now;
		}
		pfd[1].fd = pg_socket(h->pg);
		if (poll(pfd, 2, timeout < 0 ? 0 : (int)timeout) < 0 &&
		    errno != EINTR) {
			log_error("alert hook: cannot poll: %s", strerror(errno));
			break;
		}
		if (pfd[0].revents & POLLIN)
			break;
		if (pfd[1].fd >= 0 &&
		    (pfd[1].revents & (POLLIN | POLLERR | POLLHUP)))
			db_read(h);
	}
	pg_disconnect(h->pg);
	return NULL;
}

static void hook_free(struct alert_hook *h)
{
	if (!h)
		return;
	if (h->stop_fd >= 0)
		close(h->stop_fd);
	pg_free(h->pg);
	free(h->command);
	free(h);
}

struct alert_hook *alert_hook_start(const struct alert_hook_opts *o)
{
	struct alert_hook *h = calloc(1, sizeof(*h));
	int r;

	if (!h)
		return NULL;
	h->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	h->pg = pg_new(o->dsn);
	h->command = strdup(o->command);
	h->timeout_ms = o->timeout_ms;
	h->retry_ms = o->retry_ms;
	h->backoff_ms = RECONNECT_MIN_MS;
	if (h->stop_fd < 0 || !h->pg || !h->command) {
		r = h->stop_fd < 0 ? errno : ENOMEM;
		hook_free(h);
		errno = r;
		return NULL;
	}
	r = pthread_create(&h->thread, NULL, hook_main, h);
	if (r) {
		hook_free(h);
		errno = r;
		return NULL;
	}
	return h;
}

void alert_hook_stop(struct alert_hook *h)
{
	uint64_t one = 1;

	if (!h)
		return;
	if (write(h->stop_fd, &one, sizeof(one)) != sizeof(one))
		log_error("alert hook: cannot ask the thread to stop: %s",
			  strerror(errno));
	pthread_join(h->thread, NULL);
	hook_free(h);
}
