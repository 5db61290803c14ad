/* SPDX-License-Identifier: MIT */
/* Rate-limited logging: collectd's c_complain and a burst limit. */
#include "complain.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "log.h"

/* a repeating failure is logged again after 10 s, 20 s, ... up to hourly */
#define COMPLAIN_MIN_MS 10000
#define COMPLAIN_MAX_MS 3600000
/* per kind of event (a rejected report, a lost Ack): 10 lines a minute */
#define RATE_WINDOW_MS 60000
#define RATE_BURST 10
/* lines of distinct keys a minute (complain_keyed) */
#define RATE_BURST_KEYED 100

void complain(struct complaint *c, const char *fmt, ...)
{
	int64_t now = mono_ms();
	char msg[1024];
	va_list ap;

	if (c->active && now < c->next_ms) {
		c->suppressed++;
		return;
	}
	c->interval_ms = !c->active ? COMPLAIN_MIN_MS :
		c->interval_ms * 2 > COMPLAIN_MAX_MS ? COMPLAIN_MAX_MS :
						       c->interval_ms * 2;
	c->next_ms = now + c->interval_ms;
	c->active = true;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->suppressed)
		log_error("%s (%lu similar messages suppressed)", msg,
			  c->suppressed);
	else
		log_error("%s", msg);
	c->suppressed = 0;
}

void complain_release(struct complaint *c, const char *msg)
{
	if (!c->active)
		return;
	*c = (struct complaint){ 0 };
	log_info("%s", msg);
}

/* a line at information or warning level */
static void __attribute__((format(printf, 2, 3)))
say(bool info, const char *fmt, ...)
{
	char msg[1200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (info)
		log_info("%s", msg);
	else
		log_warn("%s", msg);
}

/* rl's window at now: false when its burst is spent (counted) */
static bool ratelimit_take(struct ratelimit *rl, int64_t now, unsigned burst)
{
	if (now - rl->window_ms >= RATE_WINDOW_MS) {
		if (rl->suppressed)
			say(rl->info, "%lu more %s not logged in the last minute",
			    rl->suppressed, rl->what);
		rl->window_ms = now;
		rl->n = 0;
		rl->suppressed = 0;
	}
	if (rl->n >= burst) {
		rl->suppressed++;
		return false;
	}
	rl->n++;
	return true;
}

static void put_line(bool info, const char *fmt, va_list ap,
		     unsigned long again)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (again)
		say(info, "%s (and %lu times more in the last minute)", msg,
		    again);
	else
		say(info, "%s", msg);
}

void complain_limited(struct ratelimit *rl, const char *fmt, ...)
{
	va_list ap;

	if (!ratelimit_take(rl, mono_ms(), RATE_BURST))
		return;
	va_start(ap, fmt);
	put_line(rl->info, fmt, ap, 0);
	va_end(ap);
}

void complain_keyed(struct ratelimit_keyed *rk, const char *key,
		    const char *fmt, ...)
{
	int64_t now = mono_ms();
	struct ratelimit_key *e = NULL, *oldest = &rk->keys[0];
	unsigned long again = 0;
	va_list ap;

	for (size_t i = 0; i < RATELIMIT_KEYS; i++) {
		struct ratelimit_key *k = &rk->keys[i];

		if (k->used && !strcmp(k->key, key)) {
			e = k;
			break;
		}
		if (oldest->used && (!k->used || k->stamp < oldest->stamp))
			oldest = k;
	}
	if (e && now - e->logged_ms < RATE_WINDOW_MS) {
		e->suppressed++;
		return;
	}
	if (e) {
		again = e->suppressed;
	} else {
		e = oldest;
		if (e->used && e->suppressed)
			rk->all.suppressed += e->suppressed;
		snprintf(e->key, sizeof(e->key), "%s", key);
		e->used = true;
	}
	e->logged_ms = now;
	e->stamp = ++rk->stamp;
	e->suppressed = 0;
	if (!ratelimit_take(&rk->all, now, RATE_BURST_KEYED))
		return;
	va_start(ap, fmt);
	put_line(rk->all.info, fmt, ap, again);
	va_end(ap);
}
