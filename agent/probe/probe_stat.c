/* SPDX-License-Identifier: MIT */
/* CPU steal from /proc/stat over the probe's window (probe_stat.h). */
#include "probe_stat.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "probe_modules.h"

#define STAT_PATH "/proc/stat"

int probe_stat_parse(const char *text, struct probe_cpu_times *ret)
{
	const char *line = text, *p, *eol;
	uint64_t f[8];

	while (line && strncmp(line, "cpu ", 4)) {
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	if (!line)
		return -EBADMSG;
	/* A line cut short (no newline) may end in a cut number. */
	eol = strchr(line, '\n');
	if (!eol)
		return -EBADMSG;
	p = line + 4;
	for (size_t i = 0; i < ARRAY_SIZE(f); i++) {
		char *end;

		while (p < eol && *p == ' ')
			p++;
		if (p >= eol || *p < '0' || *p > '9')
			return -EBADMSG;
		errno = 0;
		f[i] = strtoull(p, &end, 10);
		if (errno || (*end != ' ' && end != eol))
			return -EBADMSG;
		p = end;
	}
	/* guest, guest_nice and any later fields: numbers only. */
	for (; p < eol; p++)
		if (*p != ' ' && (*p < '0' || *p > '9'))
			return -EBADMSG;
	*ret = (struct probe_cpu_times){
		.user = f[0], .nice = f[1], .system = f[2], .idle = f[3],
		.iowait = f[4], .irq = f[5], .softirq = f[6], .steal = f[7],
	};
	return 0;
}

int probe_steal_percent(const struct probe_cpu_times *a,
			const struct probe_cpu_times *b, double *ret)
{
	const uint64_t av[] = { a->user, a->nice, a->system, a->idle,
				a->iowait, a->irq, a->softirq, a->steal };
	const uint64_t bv[] = { b->user, b->nice, b->system, b->idle,
				b->iowait, b->irq, b->softirq, b->steal };
	uint64_t total = 0;
	double pct;

	for (size_t i = 0; i < ARRAY_SIZE(av); i++) {
		if (bv[i] < av[i])
			return -ERANGE;
		total += bv[i] - av[i];
	}
	if (total == 0)
		return -ENODATA;
	pct = 100.0 * (double)(b->steal - a->steal) / (double)total;
	*ret = (double)(int64_t)(pct * 100.0 + 0.5) / 100.0;
	return 0;
}

/* A percentage serialised with two decimals ("0.10", not
 * 0.10000000000000001); it stays a JSON number. */
static void item_percent(struct json_object *o, const char *key, double v)
{
	char text[32];

	snprintf(text, sizeof(text), "%.2f", v);
	json_object_object_add(o, key, json_object_new_double_s(v, text));
}

/* key = steal share between the /proc/stat texts a and b (a NULL: boot). */
static void steal_item(struct json_object *o, const char *key,
		       const char *a, const char *b)
{
	struct probe_cpu_times ta = { 0 }, tb;
	double pct;
	int r;

	if ((a && probe_stat_parse(a, &ta) < 0) ||
	    probe_stat_parse(b, &tb) < 0) {
		item_unknown(o, key,
			     "malformed: no complete \"cpu \" line in %s",
			     STAT_PATH);
		return;
	}
	r = probe_steal_percent(&ta, &tb, &pct);
	if (r == -ENODATA)
		item_unknown(o, key, "no CPU time elapsed");
	else if (r == -ERANGE)
		item_unknown(o, key, "%s counters went backwards", STAT_PATH);
	else
		item_percent(o, key, pct);
}

/* Sleeps until t0 + ms on CLOCK_MONOTONIC: the part of the window the rest
 * of the probe has not already used. */
static void steal_wait(const struct timespec *t0, unsigned int ms)
{
	struct timespec end = *t0;

	end.tv_sec += ms / 1000;
	end.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &end, NULL) ==
	       EINTR)
		;
}

static int probe_steal(struct probe_ctx *ctx, struct json_object *out)
{
	unsigned int window = ctx->opts->steal_window_ms;
	int start_err = ctx->stat_start_err ? ctx->stat_start_err : -EIO;
	_cleanup_free_ char *now = NULL;
	ssize_t n;

	item_i64(out, "window_ms", window);
	if (window == 0) {
		item_unknown(out, "percent", "skipped (window 0)");
		if (ctx->stat_start)
			steal_item(out, "since_boot_percent", NULL,
				   ctx->stat_start);
		else
			item_unknown_err(out, "since_boot_percent", start_err);
		return 0;
	}

	steal_wait(&ctx->t_start, window);
	n = probe_read_file(ctx, STAT_PATH, &now);
	if (!ctx->stat_start)
		item_unknown_err(out, "percent", start_err);
	else if (n < 0)
		item_unknown_err(out, "percent", (int)n);
	else
		steal_item(out, "percent", ctx->stat_start, now);

	if (n >= 0)
		steal_item(out, "since_boot_percent", NULL, now);
	else if (ctx->stat_start)
		steal_item(out, "since_boot_percent", NULL, ctx->stat_start);
	else
		item_unknown_err(out, "since_boot_percent", (int)n);
	return 0;
}

const struct probe_ops probe_steal_ops = {
	.name = "steal",
	.run = probe_steal,
};
