/* SPDX-License-Identifier: MIT */
/* The probe driver: the module table, the run, and the item setters. */
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "probe_modules.h"
#include "probe_virt.h"
#include "sys/sys.h"

/* Report order. "labels" follows "virt" because it infers from DMI;
 * "pmu" follows "steal" (.proto order), which takes a few microseconds
 * after the steal window has closed. */
static const struct probe_ops *const probe_table[] = {
	&probe_host_ops,    &probe_kernel_ops,  &probe_virt_ops,
	&probe_labels_ops,  &probe_thp_ops,     &probe_hugetlb_ops,
	&probe_iouring_ops, &probe_cpufreq_ops, &probe_block_ops,
	&probe_sysctl_ops,  &probe_vmstat_ops,  &probe_steal_ops,
	&probe_pmu_ops,     &probe_psi_ops,     &probe_topology_ops,
};

size_t probe_section_count(void)
{
	return ARRAY_SIZE(probe_table);
}

const char *probe_section_name(size_t i)
{
	return i < ARRAY_SIZE(probe_table) ? probe_table[i]->name : NULL;
}

static int real_uname(struct utsname *ret)
{
	return uname(ret) < 0 ? -errno : 0;
}

static void real_uring_close(int fd)
{
	close(fd);
}

static void real_perf_close(int fd)
{
	close(fd);
}

const struct probe_sys probe_sys_real = {
	.cpuid = sys_cpuid,
	.uname = real_uname,
	.uring_setup = sys_io_uring_setup,
	.uring_register = sys_io_uring_register,
	.uring_close = real_uring_close,
	.perf_open = sys_perf_event_open,
	.perf_close = real_perf_close,
};

const char *probe_reason(int err)
{
	switch (-err) {
	case ENOENT:
	case ENOTDIR:
		return "absent";
	case EACCES:
		return "EACCES";
	case EPERM:
		return "not permitted";
	case EBADMSG:
		return "malformed";
	case ENODATA:
		return "malformed: empty";
	case EFBIG:
		return "too large";
	case ENOTSUP:
		return "not supported";
	default: {
		const char *name = strerrorname_np(-err);

		return name ? name : "error";
	}
	}
}

static void item_put(struct json_object *o, const char *key,
		     struct json_object *v)
{
	if (o)
		json_object_object_add(o, key, v);
	else
		json_object_put(v);
}

void item_str(struct json_object *o, const char *key, const char *v)
{
	item_put(o, key, json_object_new_string(v));
}

void item_i64(struct json_object *o, const char *key, int64_t v)
{
	item_put(o, key, json_object_new_int64(v));
}

void item_double(struct json_object *o, const char *key, double v)
{
	item_put(o, key, json_object_new_double(v));
}

void item_bool(struct json_object *o, const char *key, bool v)
{
	item_put(o, key, json_object_new_boolean(v));
}

void item_null(struct json_object *o, const char *key)
{
	item_put(o, key, NULL);
}

void item_unknown(struct json_object *o, const char *key, const char *fmt, ...)
{
	struct json_object *u = json_object_new_object();
	char reason[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	if (u)
		json_object_object_add(u, "unknown",
				       json_object_new_string(reason));
	item_put(o, key, u);
}

void item_unknown_err(struct json_object *o, const char *key, int err)
{
	item_unknown(o, key, "%s", probe_reason(err));
}

struct json_object *item_object(struct json_object *o, const char *key)
{
	struct json_object *v = json_object_new_object();

	item_put(o, key, v);
	return o ? v : NULL;
}

struct json_object *item_array(struct json_object *o, const char *key)
{
	struct json_object *v = json_object_new_array();

	item_put(o, key, v);
	return o ? v : NULL;
}

int item_append_str(struct json_object *arr, const char *v)
{
	struct json_object *s = json_object_new_string(v);

	if (!s || json_object_array_add(arr, s) < 0) {
		json_object_put(s);
		return -ENOMEM;
	}
	return 0;
}

struct json_object *item_append_object(struct json_object *arr)
{
	struct json_object *o = json_object_new_object();

	if (!o || json_object_array_add(arr, o) < 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

bool item_is_unknown(struct json_object *v)
{
	return json_object_is_type(v, json_type_object) &&
	       json_object_object_length(v) == 1 &&
	       json_object_object_get_ex(v, "unknown", NULL);
}

ssize_t item_read_line(struct probe_ctx *ctx, struct json_object *o,
		       const char *key, const char *path, char *buf,
		       size_t size)
{
	ssize_t n = probe_read_line(ctx, path, buf, size);

	if (n == -ENODATA)
		item_unknown(o, key, "malformed: %s empty", path);
	else if (n == -EBADMSG)
		item_unknown(o, key, "malformed: %s is not one line of text",
			     path);
	else if (n < 0)
		item_unknown_err(o, key, (int)n);
	return n;
}

void item_file_line(struct probe_ctx *ctx, struct json_object *o,
		    const char *key, const char *path)
{
	_cleanup_free_ char *buf = NULL;
	const char *reason;
	int r = probe_read_text(ctx, path, true, &buf, &reason);

	if (r == -EBADMSG)
		item_unknown(o, key, "malformed: %s %s", path, reason);
	else if (r < 0)
		item_unknown_err(o, key, r);
	else
		item_str(o, key, probe_trim(buf));
}

int item_file_str(struct probe_ctx *ctx, struct json_object *o,
		  const char *key, const char *path)
{
	char buf[4096];
	ssize_t n = item_read_line(ctx, o, key, path, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	item_str(o, key, buf);
	return 0;
}

int item_file_i64_value(struct probe_ctx *ctx, struct json_object *o,
			const char *key, const char *path, int64_t *ret)
{
	char buf[256];
	ssize_t n = item_read_line(ctx, o, key, path, buf, sizeof(buf));
	int64_t v;

	if (n < 0)
		return (int)n;
	if (probe_parse_i64(buf, &v) < 0) {
		item_unknown(o, key, "malformed: %s is not an integer", path);
		return -EBADMSG;
	}
	item_i64(o, key, v);
	if (ret)
		*ret = v;
	return 0;
}

int item_file_i64(struct probe_ctx *ctx, struct json_object *o,
		  const char *key, const char *path)
{
	return item_file_i64_value(ctx, o, key, path, NULL);
}

struct json_object *probe_bracket_json(const struct probe_bracket *b)
{
	struct json_object *obj = json_object_new_object();
	struct json_object *opts = json_object_new_array();

	if (!obj || !opts) {
		json_object_put(obj);
		json_object_put(opts);
		return NULL;
	}
	for (size_t i = 0; i < b->n_options; i++)
		json_object_array_add(opts,
				      json_object_new_string(b->options[i]));
	json_object_object_add(obj, "selected",
			       json_object_new_string(b->options[b->selected]));
	json_object_object_add(obj, "options", opts);
	return obj;
}

int probe_parse_bracket(const char *text, struct json_object **ret)
{
	struct probe_bracket b;
	struct json_object *v;
	int r = probe_bracket_parse(text, &b);

	if (r < 0)
		return r;
	v = probe_bracket_json(&b);
	probe_bracket_release(&b);
	if (!v)
		return -ENOMEM;
	*ret = v;
	return 0;
}

int item_file_bracket(struct probe_ctx *ctx, struct json_object *o,
		      const char *key, const char *path)
{
	char buf[4096];
	ssize_t n = item_read_line(ctx, o, key, path, buf, sizeof(buf));
	struct json_object *v;
	int r;

	if (n < 0)
		return (int)n;
	r = probe_parse_bracket(buf, &v);
	if (r < 0) {
		item_unknown(o, key,
			     "malformed: %s has no single [selected] value",
			     path);
		return r;
	}
	item_put(o, key, v);
	return 0;
}

static int64_t ms_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)(now.tv_sec - t0->tv_sec) * 1000 +
	       (now.tv_nsec - t0->tv_nsec) / 1000000;
}

int probe_run(const struct probe_opts *opts, struct json_object **ret)
{
	struct probe_ctx ctx = {
		.opts = opts,
		.sys = opts->sys ? opts->sys : &probe_sys_real,
		.root_fd = -1,
	};
	struct json_object *report, *meta;
	struct virt_dmi dmi = { .probed = false };
	struct timespec wall;
	char stamp[64];
	ssize_t n;
	int r = 0;

	ctx.root_fd = open(opts->root ? opts->root : "/",
			   O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (ctx.root_fd < 0)
		return -errno;
	clock_gettime(CLOCK_MONOTONIC, &ctx.t_start);
	clock_gettime(CLOCK_REALTIME, &wall);
	/* The steal window starts now and is read last, so it overlaps the
	 * rest of the probe instead of adding to it. */
	n = probe_read_file(&ctx, "/proc/stat", &ctx.stat_start);
	ctx.stat_start_err = n < 0 ? (int)n : 0;

	report = json_object_new_object();
	if (!report) {
		r = -ENOMEM;
		goto out;
	}
	ctx.dmi = &dmi;
	meta = item_object(report, "meta");
	item_str(meta, "agent_version", FLEETBENCH_VERSION);
	item_str(meta, "root", opts->root ? opts->root : "/");
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ",
		 gmtime(&wall.tv_sec));
	item_str(meta, "started", stamp);

	for (size_t i = 0; i < ARRAY_SIZE(probe_table); i++) {
		struct json_object *section =
			item_object(report, probe_table[i]->name);

		if (!section) {
			r = -ENOMEM;
			goto out;
		}
		r = probe_table[i]->run(&ctx, section);
		if (r < 0)
			goto out;
	}
	item_i64(meta, "elapsed_ms", ms_since(&ctx.t_start));
	*ret = TAKE_PTR(report);
	r = 0;
out:
	json_object_put(report);
	free(ctx.stat_start);
	close(ctx.root_fd);
	return r;
}
