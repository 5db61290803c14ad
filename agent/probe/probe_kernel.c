/* SPDX-License-Identifier: MIT */
/* The kernel: release, build version, command line and its huge page knobs. */
#include "probe_kernel.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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

/* Appends v to arr, taking it; json-c would store a NULL v as null. */
static int array_take(struct json_object *arr, struct json_object *v)
{
	if (!v)
		return -ENOMEM;
	if (json_object_array_add(arr, v) < 0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

static struct json_object *new_pool(const char *size, const char *count)
{
	struct json_object *pool = json_object_new_object();
	int64_t n;

	if (!pool)
		return NULL;
	item_str(pool, "size", size);
	if (parse_pool_count(count, &n) < 0)
		item_unknown(pool, "count",
			     "malformed: hugepages=%s is not a page count",
			     count);
	else
		item_i64(pool, "count", n);
	return pool;
}

int kernel_parse_cmdline(const char *cmdline, struct json_object *out)
{
	_cleanup_free_ char *copy = strdup(cmdline);
	struct json_object *sizes, *pages, *pools;
	const char *thp = NULL, *default_size = NULL, *size = "default";
	char *p, *name, *val;

	if (!copy)
		return -ENOMEM;
	sizes = json_object_new_array();
	pages = json_object_new_array();
	pools = json_object_new_array();
	if (!sizes || !pages || !pools)
		goto nomem;
	p = copy;
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
			thp = val;
		} else if (param_eq(name, "default_hugepagesz")) {
			default_size = val;
		} else if (param_eq(name, "hugepagesz")) {
			if (array_take(sizes, json_object_new_string(val)) < 0)
				goto nomem;
			size = val;
		} else if (param_eq(name, "hugepages")) {
			if (array_take(pages, json_object_new_string(val)) < 0 ||
			    array_take(pools, new_pool(size, val)) < 0)
				goto nomem;
		}
	}
	if (thp)
		item_str(out, "transparent_hugepage", thp);
	else
		item_null(out, "transparent_hugepage");
	if (default_size)
		item_str(out, "default_hugepagesz", default_size);
	else
		item_null(out, "default_hugepagesz");
	json_object_object_add(out, "hugepagesz", sizes);
	json_object_object_add(out, "hugepages", pages);
	json_object_object_add(out, "hugepage_pools", pools);
	return 0;
nomem:
	json_object_put(sizes);
	json_object_put(pages);
	json_object_put(pools);
	return -ENOMEM;
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
