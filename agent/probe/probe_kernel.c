/* SPDX-License-Identifier: MIT */
/* The kernel: release, build version, command line and its huge page knobs. */
#include "probe_kernel.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "cleanup.h"
#include "probe_modules.h"

#define CMDLINE "/proc/cmdline"

/* The cmdline_params keys, in report order. */
static const char *const param_keys[] = {
	"transparent_hugepage", "default_hugepagesz", "hugepagesz",
	"hugepages",		"hugepage_pools",
};

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
	       c == '\r';
}

/*
 * Cuts the next parameter off *p in place, as the kernel's next_arg() does:
 * white space outside double quotes ends it, and the quotes around the
 * whole parameter or around its value are dropped. *ret_val is NULL when
 * there is no '='. Returns false at the end of the line.
 */
static bool next_param(char **p, char **ret_name, char **ret_val)
{
	char *s = *p, *val = NULL;
	bool quoted = false, in_quote = false;
	size_t i;

	while (is_space(*s))
		s++;
	if (!*s) {
		*p = s;
		return false;
	}
	if (*s == '"') {
		s++;
		quoted = in_quote = true;
	}
	for (i = 0; s[i]; i++) {
		if (is_space(s[i]) && !in_quote)
			break;
		if (!val && s[i] == '=')
			val = s + i + 1;
		if (s[i] == '"')
			in_quote = !in_quote;
	}
	*p = s[i] ? s + i + 1 : s + i;
	if (val) {
		val[-1] = '\0';
		if (*val == '"' && s + i > val) {
			val++;
			if (s[i - 1] == '"')
				s[i - 1] = '\0';
		}
	}
	if (quoted && i > 0 && s[i - 1] == '"')
		s[i - 1] = '\0';
	s[i] = '\0';
	*ret_name = s;
	*ret_val = val;
	return true;
}

/* Parameter names match with '-' and '_' taken as the same (parameq()). */
static bool param_eq(const char *a, const char *b)
{
	for (; *a && *b; a++, b++) {
		char x = *a == '-' ? '_' : *a, y = *b == '-' ? '_' : *b;

		if (x != y)
			return false;
	}
	return !*a && !*b;
}

static int parse_u64(const char **p, int64_t *ret)
{
	const char *s = *p;
	int64_t v = 0;

	if (*s < '0' || *s > '9')
		return -EBADMSG;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (INT64_MAX - (*s - '0')) / 10)
			return -EBADMSG;
		v = v * 10 + (*s - '0');
	}
	*p = s;
	*ret = v;
	return 0;
}

/* hugepages=N, or per node "node:N,node:N": the total. */
static int parse_pool_count(const char *s, int64_t *ret)
{
	int64_t total = 0, v, node;

	if (!strchr(s, ':')) {
		if (parse_u64(&s, &v) < 0 || *s)
			return -EBADMSG;
		*ret = v;
		return 0;
	}
	for (;;) {
		if (parse_u64(&s, &node) < 0 || *s++ != ':' ||
		    parse_u64(&s, &v) < 0 || v > INT64_MAX - total)
			return -EBADMSG;
		total += v;
		if (!*s)
			break;
		if (*s++ != ',')
			return -EBADMSG;
	}
	*ret = total;
	return 0;
}

int kernel_cmdline_parse(const char *cmdline, struct kernel_cmdline *ret)
{
	struct kernel_cmdline c = { .buf = strdup(cmdline) };
	const char *size = "default";
	char *p, *name, *val;

	if (!c.buf)
		return -ENOMEM;
	p = c.buf;
	while (next_param(&p, &name, &val)) {
		if (!val) {
			/* What follows "--" is init's, not the kernel's. */
			if (!strcmp(name, "--"))
				break;
			continue;
		}
		/* Later values override earlier ones, as the kernel's
		 * handlers run once per occurrence. */
		if (param_eq(name, "transparent_hugepage")) {
			c.thp = val;
		} else if (param_eq(name, "default_hugepagesz")) {
			c.default_size = val;
		} else if (param_eq(name, "psi")) {
			c.psi = val;
		} else if (param_eq(name, "hugepagesz")) {
			if (ARRAY_RESERVE(c.sizes, c.sizes_cap, c.n_sizes + 1) < 0)
				goto nomem;
			c.sizes[c.n_sizes++] = val;
			size = val;
		} else if (param_eq(name, "hugepages")) {
			struct kernel_cmdline_pool *pool;

			if (ARRAY_RESERVE(c.pools, c.pools_cap, c.n_pools + 1) < 0)
				goto nomem;
			pool = &c.pools[c.n_pools++];
			pool->size = size;
			pool->count = val;
			pool->valid = parse_pool_count(val, &pool->pages) == 0;
		}
	}
	*ret = c;
	return 0;
nomem:
	kernel_cmdline_free(&c);
	return -ENOMEM;
}

void kernel_cmdline_free(struct kernel_cmdline *c)
{
	free(c->buf);
	free(c->sizes);
	free(c->pools);
	*c = (struct kernel_cmdline){ 0 };
}

/* Sets c's items on out, as kernel_parse_cmdline() documents. */
static int cmdline_items(const struct kernel_cmdline *c,
			 struct json_object *out)
{
	struct json_object *sizes, *pages, *pools;

	if (c->thp)
		item_str(out, "transparent_hugepage", c->thp);
	else
		item_null(out, "transparent_hugepage");
	if (c->default_size)
		item_str(out, "default_hugepagesz", c->default_size);
	else
		item_null(out, "default_hugepagesz");
	sizes = item_array(out, "hugepagesz");
	pages = item_array(out, "hugepages");
	pools = item_array(out, "hugepage_pools");
	if (!sizes || !pages || !pools)
		return -ENOMEM;
	for (size_t i = 0; i < c->n_sizes; i++)
		if (item_append_str(sizes, c->sizes[i]) < 0)
			return -ENOMEM;
	for (size_t i = 0; i < c->n_pools; i++) {
		const struct kernel_cmdline_pool *cp = &c->pools[i];
		struct json_object *pool = item_append_object(pools);

		if (item_append_str(pages, cp->count) < 0 || !pool)
			return -ENOMEM;
		item_str(pool, "size", cp->size);
		if (cp->valid)
			item_i64(pool, "count", cp->pages);
		else
			item_unknown(pool, "count",
				     "malformed: hugepages=%s is not a page count",
				     cp->count);
	}
	return 0;
}

int kernel_parse_cmdline(const char *cmdline, struct json_object *out)
{
	_cleanup_(kernel_cmdline_free) struct kernel_cmdline c = { 0 };
	int r = kernel_cmdline_parse(cmdline, &c);

	return r < 0 ? r : cmdline_items(&c, out);
}

static int probe_kernel(struct probe_ctx *ctx, struct json_object *out)
{
	_cleanup_free_ char *buf = NULL;
	struct json_object *params;
	const char *why;
	char reason[128] = "";
	int r;

	item_file_line(ctx, out, "release", "/proc/sys/kernel/osrelease");
	item_file_line(ctx, out, "version", "/proc/sys/kernel/version");

	r = probe_read_text(ctx, CMDLINE, true, &buf, &why);
	if (r == -EBADMSG)
		snprintf(reason, sizeof(reason), "malformed: " CMDLINE " %s",
			 why);
	else if (r < 0)
		snprintf(reason, sizeof(reason), "%s", probe_reason(r));

	params = json_object_new_object();
	if (!params)
		return -ENOMEM;
	if (r < 0) {
		/* Without the command line none of its parameters is known,
		 * for the same reason. */
		item_unknown(out, "cmdline", "%s", reason);
		for (size_t i = 0; i < ARRAY_SIZE(param_keys); i++)
			item_unknown(params, param_keys[i], "%s", reason);
	} else {
		char *s = probe_trim(buf);

		item_str(out, "cmdline", s);
		if (kernel_parse_cmdline(s, params) < 0) {
			json_object_put(params);
			return -ENOMEM;
		}
	}
	json_object_object_add(out, "cmdline_params", params);
	return 0;
}

const struct probe_ops probe_kernel_ops = {
	.name = "kernel",
	.run = probe_kernel,
};
