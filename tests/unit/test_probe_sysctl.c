/* SPDX-License-Identifier: MIT */
/* The sysctl probe over every fixture tree and on the running machine. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cleanup.h"
#include "probe_test.h"

/* The report's sysctl names, in report order; 's' marks a text value. */
static const struct {
	const char *name;
	char type;
} names[] = {
	{ "kernel.sched_min_granularity_ns", 'i' },
	{ "kernel.sched_wakeup_granularity_ns", 'i' },
	{ "kernel.sched_latency_ns", 'i' },
	{ "kernel.sched_migration_cost_ns", 'i' },
	{ "kernel.sched_nr_migrate", 'i' },
	{ "kernel.sched_autogroup_enabled", 'i' },
	{ "kernel.sched_child_runs_first", 'i' },
	{ "kernel.sched_tunable_scaling", 'i' },
	{ "net.ipv4.tcp_congestion_control", 's' },
	{ "net.core.default_qdisc", 's' },
	{ "net.core.rmem_max", 'i' },
	{ "net.core.wmem_max", 'i' },
	{ "net.core.rmem_default", 'i' },
	{ "net.core.wmem_default", 'i' },
	{ "net.ipv4.tcp_rmem", 's' },
	{ "net.ipv4.tcp_wmem", 's' },
	{ "net.core.somaxconn", 'i' },
	{ "net.ipv4.tcp_max_syn_backlog", 'i' },
	{ "net.core.netdev_max_backlog", 'i' },
	{ "net.ipv4.tcp_syncookies", 'i' },
	{ "fs.file-max", 'i' },
	{ "net.ipv4.ip_local_port_range", 's' },
	{ "net.ipv4.tcp_tw_reuse", 'i' },
	{ "net.ipv4.tcp_fin_timeout", 'i' },
	{ "vm.dirty_ratio", 'i' },
	{ "vm.dirty_background_ratio", 'i' },
	{ "vm.dirty_bytes", 'i' },
	{ "vm.dirty_background_bytes", 'i' },
	{ "vm.dirty_expire_centisecs", 'i' },
	{ "vm.dirty_writeback_centisecs", 'i' },
	{ "vm.swappiness", 'i' },
	{ "vm.vfs_cache_pressure", 'i' },
	{ "vm.overcommit_memory", 'i' },
	{ "vm.max_map_count", 'i' },
	{ "vm.min_free_kbytes", 'i' },
	{ "vm.zone_reclaim_mode", 'i' },
};
#define N_SYSCTL ARRAY_SIZE(names)

#define ABSENT "unknown (absent)"

/* The item for a sysctl: its key holds dots, so jget cannot walk to it. */
static struct json_object *item(struct json_object *r, const char *name)
{
	struct json_object *sec = jget(r, "sysctl"), *v;

	if (!sec || !json_object_object_get_ex(sec, name, &v))
		return NULL;
	return v;
}

/* The item as text: the value, "unknown (reason)", or "<missing>". */
static const char *item_text(struct json_object *r, const char *name)
{
	static char buf[512];
	struct json_object *v = item(r, name), *reason;

	if (!v)
		return "<missing>";
	if (item_is_unknown(v) &&
	    json_object_object_get_ex(v, "unknown", &reason)) {
		snprintf(buf, sizeof(buf), "unknown (%s)",
			 json_object_get_string(reason));
		return buf;
	}
	return json_object_get_string(v);
}

/* Every item against want[] (in names[] order), and its JSON type. */
static void check_tree(const char *tree, const struct fake_sys *fs,
		       const char *const want[N_SYSCTL])
{
	struct json_object *r = probe_fixture(tree, fs), *sec;

	CHECK_(r != NULL, "%s: no report", tree);
	if (!r)
		return;
	sec = jget(r, "sysctl");
	CHECK_EQ_INT(json_object_object_length(sec), N_SYSCTL);
	for (size_t i = 0; i < N_SYSCTL; i++) {
		struct json_object *v = item(r, names[i].name);
		const char *got = item_text(r, names[i].name);

		CHECK_(!strcmp(got, want[i]), "%s: %s == \"%s\", expected \"%s\"",
		       tree, names[i].name, got, want[i]);
		if (!strncmp(want[i], "unknown", 7))
			CHECK_(item_is_unknown(v), "%s: %s is not unknown", tree,
			       names[i].name);
		else if (names[i].type == 'i')
			CHECK_(json_object_is_type(v, json_type_int),
			       "%s: %s is not an integer", tree, names[i].name);
		else
			CHECK_(json_object_is_type(v, json_type_string),
			       "%s: %s is not a string", tree, names[i].name);
	}
	json_object_put(r);
}

static const char *const kvm_guest[N_SYSCTL] = {
	ABSENT, ABSENT, ABSENT, ABSENT, ABSENT, "1", "0", ABSENT,
	"cubic", "fq_codel", "212992", "212992", "212992", "212992",
	"4096 131072 6291456", "4096 16384 4194304",
	"4096", "512", "1000", "1", "9223372036854775807", "32768 60999",
	"2", "60",
	"20", "10", "0", "0", "3000", "500", "60", "100", "0", "65530", "45056", "0",
};

static const char *const vps[N_SYSCTL] = {
	ABSENT, ABSENT, ABSENT, ABSENT, ABSENT, "1", "0", ABSENT,
	"bbr", "fq", "16777216", "16777216", "212992", "212992",
	"4096 87380 16777216", "4096 65536 16777216",
	"4096", "1024", "1000", "1", "9223372036854775807", "32768 60999",
	"2", "60",
	"20", "10", "0", "0", "3000", "500", "60", "100", "0", "1048576", "67584", "0",
};

static const char *const baremetal[N_SYSCTL] = {
	ABSENT, ABSENT, ABSENT, ABSENT, ABSENT, "0", "0", ABSENT,
	"cubic", "fq_codel", "134217728", "134217728", "262144", "262144",
	"4096 87380 134217728", "4096 65536 134217728",
	"65535", "65535", "250000", "1", "26214400", "1024 65535",
	"1", "15",
	"10", "3", "0", "0", "1500", "100", "10", "50", "0", "262144", "1048576", "0",
};

/* 5.4 still has the scheduler knobs in /proc/sys. */
static const char *const old_kernel[N_SYSCTL] = {
	"1500000", "2000000", "12000000", "500000", "32", "1", "0", "1",
	"cubic", "fq_codel", "212992", "212992", "212992", "212992",
	"4096 131072 6291456", "4096 16384 4194304",
	"4096", "1024", "1000", "1", "9223372036854775807", "32768 60999",
	"2", "60",
	"20", "10", "0", "0", "3000", "500", "60", "100", "0", "65530", "67584", "0",
};

#define BAD_INT(p) "unknown (malformed: /proc/sys/" p " is not an integer)"
static const char *const malformed[N_SYSCTL] = {
	ABSENT, ABSENT, ABSENT, ABSENT, ABSENT, "1", "0", ABSENT,
	"unknown (malformed: /proc/sys/net/ipv4/tcp_congestion_control "
	"empty)",
	"unknown (malformed: /proc/sys/net/core/default_qdisc is not text)",
	"212992", "212992", "212992", "212992",
	"4096 131", /* cut short, but still text */
	"4096 16384 4194304",
	BAD_INT("net/core/somaxconn"), "512", "1000", "1",
	BAD_INT("fs/file-max"), /* does not fit 64 bits */
	"32768 60999", "2", "60",
	BAD_INT("vm/dirty_ratio"), "10", "0", "0", "3000", "500",
	"unknown (malformed: /proc/sys/vm/swappiness empty)", "100",
	BAD_INT("vm/overcommit_memory"), "65530", "45056", "0",
};

/* ---- the running machine, read independently with stdio ---- */

static void check_real(void)
{
	struct probe_opts opts = {
		.root = "/",
		.work_dir = "/var/tmp",
		.steal_window_ms = 0,
		.sys = &probe_sys_real,
	};
	struct json_object *r = NULL;

	CHECK_OK(probe_run(&opts, &r));
	if (!r)
		return;
	CHECK_EQ_INT(json_object_object_length(jget(r, "sysctl")), N_SYSCTL);
	for (size_t i = 0; i < N_SYSCTL; i++) {
		const char *name = names[i].name;
		char path[256], line[1024], want[1024] = "";
		_cleanup_fclose_ FILE *f = NULL;
		char *save = NULL;

		snprintf(path, sizeof(path), "/proc/sys/%s", name);
		for (char *p = path + 10; *p; p++)
			if (*p == '.')
				*p = '/';
		f = fopen(path, "re");
		if (!f) {
			int err = errno;

			CHECK_(err == ENOENT || err == EACCES || err == EPERM,
			       "%s: %s", path, strerror(err));
			CHECK_EQ_STR(item_text(r, name),
				     err == ENOENT ? ABSENT :
				     err == EACCES ? "unknown (EACCES)" :
						     "unknown (not permitted)");
			continue;
		}
		if (names[i].type == 'i') {
			long long v;

			CHECK_(fscanf(f, "%lld", &v) == 1, "%s: not a number",
			       path);
			CHECK_(json_object_is_type(item(r, name), json_type_int),
			       "%s is not an integer", name);
			CHECK_EQ_INT(json_object_get_int64(item(r, name)), v);
			continue;
		}
		/* text: the words of the first line, one space apart */
		CHECK(fgets(line, sizeof(line), f) != NULL);
		for (char *w = strtok_r(line, " \t\n", &save); w;
		     w = strtok_r(NULL, " \t\n", &save))
			snprintf(want + strlen(want), sizeof(want) - strlen(want),
				 "%s%s", *want ? " " : "", w);
		CHECK_EQ_STR(item_text(r, name), want);
	}
	json_object_put(r);
}

int main(void)
{
	const struct fake_sys vps_fs = { .setup_err = -EPERM };
	const struct fake_sys bare_fs = { .hypervisor_bit = -1 };
	const struct fake_sys old_fs = {
		.probe_err = -EINVAL,
		.features = IORING_FEAT_SINGLE_MMAP | IORING_FEAT_NODROP,
	};

	check_tree("kvm-guest", NULL, kvm_guest);
	check_tree("vps-thp-always", &vps_fs, vps);
	check_tree("baremetal-numa", &bare_fs, baremetal);
	check_tree("old-kernel", &old_fs, old_kernel);
	check_tree("malformed", NULL, malformed);
	check_real();
	return check_summary();
}
