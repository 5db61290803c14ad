/* SPDX-License-Identifier: MIT */
/* Pressure stall information: which /proc/pressure files the kernel keeps. */
#include "probe_psi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "probe_kernel.h"
#include "probe_modules.h"

#define CMDLINE "/proc/cmdline"

static const char *const resources[PSI_NRES] = { "cpu", "io", "memory" };

const char *probe_psi_resource(enum probe_psi_res res)
{
	return (unsigned int)res < PSI_NRES ? resources[res] : NULL;
}

/* "key=" then a decimal number (avg: "1.25"; total: an integer), *p past
 * it. */
static int parse_field(const char **p, const char *key, bool integer,
		       uint64_t *ret)
{
	size_t klen = strlen(key);
	const char *s = *p;
	uint64_t v = 0;
	bool dot = false;

	if (strncmp(s, key, klen) || s[klen] != '=')
		return -EBADMSG;
	s += klen + 1;
	if (*s < '0' || *s > '9')
		return -EBADMSG;
	for (; (*s >= '0' && *s <= '9') || (*s == '.' && !integer && !dot);
	     s++) {
		if (*s == '.') {
			dot = true;
			continue;
		}
		uint64_t d = (uint64_t)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -EBADMSG;
		v = v * 10 + d;
	}
	if (s[-1] == '.')
		return -EBADMSG;
	*p = s;
	*ret = v;
	return 0;
}

/* One "<kind> avg10=.. avg60=.. avg300=.. total=N\n" line at *p. */
static int parse_line(const char **p, const char *kind, uint64_t *ret)
{
	static const char *const avgs[] = { "avg10", "avg60", "avg300" };
	size_t klen = strlen(kind);
	const char *s = *p;
	uint64_t v;

	if (strncmp(s, kind, klen) || s[klen] != ' ')
		return -EBADMSG;
	s += klen + 1;
	for (size_t i = 0; i < ARRAY_SIZE(avgs); i++) {
		if (parse_field(&s, avgs[i], false, &v) < 0 || *s++ != ' ')
			return -EBADMSG;
	}
	if (parse_field(&s, "total", true, &v) < 0 || *s++ != '\n')
		return -EBADMSG;
	*p = s;
	*ret = v;
	return 0;
}

int probe_psi_parse(const char *text, struct probe_psi_totals *ret)
{
	struct probe_psi_totals t = { 0 };
	const char *p = text;

	if (parse_line(&p, "some", &t.some_us) < 0)
		return -EBADMSG;
	if (*p) {
		if (parse_line(&p, "full", &t.full_us) < 0 || *p)
			return -EBADMSG;
		t.has_full = true;
	}
	*ret = t;
	return 0;
}

int probe_psi_percent(uint64_t a_us, uint64_t b_us, double wall_s,
		      double *ret)
{
	double pct;

	if (b_us < a_us)
		return -ERANGE;
	if (!(wall_s > 0))
		return -EINVAL;
	pct = (double)(b_us - a_us) / (wall_s * 1e6) * 100.0;
	pct = (double)(int64_t)(pct * 100.0 + 0.5) / 100.0;
	*ret = pct > 100.0 ? 100.0 : pct;
	return 0;
}

/*
 * Reads one resource's file: 1 when it reads and parses (*ret its totals),
 * 0 when the kernel keeps none (no file: no CONFIG_PSI, or psi=0;
 * EOPNOTSUPP: disabled), else the -errno; why says what failed.
 */
static int resource_read(struct probe_ctx *ctx, enum probe_psi_res res,
			 struct probe_psi_totals *ret, char *why, size_t whylen)
{
	_cleanup_free_ char *text = NULL;
	const char *reason;
	char path[64];
	int r;

	snprintf(path, sizeof(path), PROBE_PSI_DIR "/%s",
		 probe_psi_resource(res));
	r = probe_read_text(ctx, path, false, &text, &reason);
	if (r == 0 && probe_psi_parse(text, ret) < 0) {
		r = -EBADMSG;
		reason = "is not in the pressure format";
	}
	if (r == 0)
		return 1;
	if (r == -EBADMSG)
		snprintf(why, whylen, "malformed: %s %s", path, reason);
	else
		snprintf(why, whylen, "%s %s", path, probe_reason(r));
	return r == -ENOENT || r == -ENOTDIR || r == -EOPNOTSUPP ? 0 : r;
}

/* cmdline_psi: the last psi= of the kernel's part of the command line,
 * null when there is none. */
static int cmdline_item(struct probe_ctx *ctx, struct json_object *out)
{
	_cleanup_(kernel_cmdline_free) struct kernel_cmdline c = { 0 };
	_cleanup_free_ char *buf = NULL;
	const char *why;
	int r = probe_read_text(ctx, CMDLINE, true, &buf, &why);

	if (r == -EBADMSG) {
		item_unknown(out, "cmdline_psi", "malformed: " CMDLINE " %s",
			     why);
		return 0;
	}
	if (r < 0) {
		item_unknown_err(out, "cmdline_psi", r);
		return 0;
	}
	r = kernel_cmdline_parse(probe_trim(buf), &c);
	if (r < 0)
		return r;
	if (c.psi)
		item_str(out, "cmdline_psi", c.psi);
	else
		item_null(out, "cmdline_psi");
	return 0;
}

static int probe_psi(struct probe_ctx *ctx, struct json_object *out)
{
	struct probe_psi_totals t[PSI_NRES];
	char why[PSI_NRES][160];
	int ok[PSI_NRES];
	bool all = true;
	int r;

	for (int i = 0; i < PSI_NRES; i++) {
		ok[i] = resource_read(ctx, (enum probe_psi_res)i, &t[i],
				      why[i], sizeof(why[i]));
		all &= ok[i] == 1;
	}
	/* in .proto order */
	item_bool(out, "available", all);
	r = cmdline_item(ctx, out);
	if (r < 0)
		return r;
	/* a resource without its file is false; one whose file is there
	 * but cannot be read or parsed is unknown, with the reason */
	for (int i = 0; i < PSI_NRES; i++) {
		const char *name = probe_psi_resource((enum probe_psi_res)i);

		if (ok[i] >= 0)
			item_bool(out, name, ok[i] == 1);
		else
			item_unknown(out, name, "%s", why[i]);
	}
	if (ok[PSI_CPU] == 1)
		item_bool(out, "cpu_full", t[PSI_CPU].has_full);
	else
		item_unknown(out, "cpu_full", "%s", why[PSI_CPU]);
	return 0;
}

const struct probe_ops probe_psi_ops = {
	.name = "psi",
	.run = probe_psi,
};
