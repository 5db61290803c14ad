/* SPDX-License-Identifier: MIT */
/* Kernel tunables that shape benchmark results, read from /proc/sys. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "probe_modules.h"

enum sysctl_type {
	SYSCTL_INT, /* one integer, parsed strictly (int64: fs.file-max) */
	SYSCTL_STR, /* text, white space runs collapsed to one space */
};

struct sysctl_def {
	const char *name; /* dotted sysctl name, also the report key */
	enum sysctl_type type;
};

/*
 * The kernel.sched_*_ns, sched_nr_migrate and sched_tunable_scaling knobs
 * moved to debugfs in 5.13; they are reported "absent" there, since debugfs
 * needs root and is not a stable interface.
 */
static const struct sysctl_def sysctls[] = {
	{ "kernel.sched_min_granularity_ns", SYSCTL_INT },
	{ "kernel.sched_wakeup_granularity_ns", SYSCTL_INT },
	{ "kernel.sched_latency_ns", SYSCTL_INT },
	{ "kernel.sched_migration_cost_ns", SYSCTL_INT },
	{ "kernel.sched_nr_migrate", SYSCTL_INT },
	{ "kernel.sched_autogroup_enabled", SYSCTL_INT },
	{ "kernel.sched_child_runs_first", SYSCTL_INT },
	{ "kernel.sched_tunable_scaling", SYSCTL_INT },
	{ "net.ipv4.tcp_congestion_control", SYSCTL_STR },
	{ "net.core.default_qdisc", SYSCTL_STR },
	{ "net.core.rmem_max", SYSCTL_INT },
	{ "net.core.wmem_max", SYSCTL_INT },
	{ "net.core.rmem_default", SYSCTL_INT },
	{ "net.core.wmem_default", SYSCTL_INT },
	{ "net.ipv4.tcp_rmem", SYSCTL_STR },
	{ "net.ipv4.tcp_wmem", SYSCTL_STR },
	{ "net.core.somaxconn", SYSCTL_INT },
	{ "net.ipv4.tcp_max_syn_backlog", SYSCTL_INT },
	{ "net.core.netdev_max_backlog", SYSCTL_INT },
	{ "net.ipv4.tcp_syncookies", SYSCTL_INT },
	{ "fs.file-max", SYSCTL_INT },
	{ "net.ipv4.ip_local_port_range", SYSCTL_STR },
	{ "net.ipv4.tcp_tw_reuse", SYSCTL_INT },
	{ "net.ipv4.tcp_fin_timeout", SYSCTL_INT },
	{ "vm.dirty_ratio", SYSCTL_INT },
	{ "vm.dirty_background_ratio", SYSCTL_INT },
	{ "vm.dirty_bytes", SYSCTL_INT },
	{ "vm.dirty_background_bytes", SYSCTL_INT },
	{ "vm.dirty_expire_centisecs", SYSCTL_INT },
	{ "vm.dirty_writeback_centisecs", SYSCTL_INT },
	{ "vm.swappiness", SYSCTL_INT },
	{ "vm.vfs_cache_pressure", SYSCTL_INT },
	{ "vm.overcommit_memory", SYSCTL_INT },
	{ "vm.max_map_count", SYSCTL_INT },
	{ "vm.min_free_kbytes", SYSCTL_INT },
	{ "vm.zone_reclaim_mode", SYSCTL_INT },
};

/*
 * Collapses runs of white space into one space in place ("4096\t131072"
 * becomes "4096 131072"). Returns -EBADMSG when the text holds other control
 * characters or non-ASCII bytes: no sysctl in the table prints those.
 */
static int normalize_text(char *s)
{
	char *out = s;
	bool space = false;

	for (const char *in = s; *in; in++) {
		unsigned char c = (unsigned char)*in;

		if (c == ' ' || c == '\t' || c == '\n') {
			space = true;
			continue;
		}
		if (c < 0x20 || c >= 0x7f)
			return -EBADMSG;
		if (space && out != s)
			*out++ = ' ';
		space = false;
		*out++ = (char)c;
	}
	*out = '\0';
	return 0;
}

static void sysctl_str(struct probe_ctx *ctx, struct json_object *out,
		       const char *key, const char *path)
{
	char buf[1024];
	ssize_t n = item_read_line(ctx, out, key, path, buf, sizeof(buf));

	if (n < 0)
		return;
	if (normalize_text(buf) < 0) {
		item_unknown(out, key, "malformed: %s is not text", path);
		return;
	}
	item_str(out, key, buf);
}

static int probe_sysctl(struct probe_ctx *ctx, struct json_object *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(sysctls); i++) {
		const struct sysctl_def *d = &sysctls[i];
		char path[256];
		int len;

		len = snprintf(path, sizeof(path), "/proc/sys/%s", d->name);
		if (len < 0 || (size_t)len >= sizeof(path))
			return -ENAMETOOLONG;
		/* The dotted name's dots are the path's slashes. */
		for (char *p = path + strlen("/proc/sys/"); *p; p++)
			if (*p == '.')
				*p = '/';
		if (d->type == SYSCTL_INT)
			item_file_i64(ctx, out, d->name, path);
		else
			sysctl_str(ctx, out, d->name, path);
	}
	return 0;
}

const struct probe_ops probe_sysctl_ops = {
	.name = "sysctl",
	.run = probe_sysctl,
};
