/* SPDX-License-Identifier: MIT */
/* Rate-limited logging: collectd's c_complain and a burst limit. */
#include "complain.h"

#include <stdarg.h>
#include <stdio.h>

#include "clock.h"
#include "log.h"

/* a repeating failure is logged again after 10 s, 20 s, ... up to hourly */
#define COMPLAIN_MIN_MS 10000
#define COMPLAIN_MAX_MS 3600000
/* per kind of event (a rejected report, a lost Ack): 10 lines a minute */
#define RATE_WINDOW_MS 60000
#define RATE_BURST 10

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

void complain_limited(struct ratelimit *rl, const char *fmt, ...)
{
	int64_t now = mono_ms();
	va_list ap;
	char msg[1024];

	if (now - rl->window_ms >= RATE_WINDOW_MS) {
		if (rl->suppressed)
			log_warn("%lu more %s not logged in the last minute",
				 rl->suppressed, rl->what);
		rl->window_ms = now;
		rl->n = 0;
		rl->suppressed = 0;
	}
	if (rl->n >= RATE_BURST) {
		rl->suppressed++;
		return;
	}
	rl->n++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_warn("%s", msg);
}
