/* SPDX-License-Identifier: MIT */
/* fleetgen: the probe's JSON of a run (fleetgen.h). */
#include "fleetgen.h"

#include <errno.h>
#include <stdio.h>

#include "cleanup.h"

static const char *const opcodes[] = {
	"NOP", "READV", "WRITEV", "FSYNC", "READ_FIXED", "WRITE_FIXED",
	"POLL_ADD", "POLL_REMOVE", "SYNC_FILE_RANGE", "SENDMSG", "RECVMSG",
	"TIMEOUT", "TIMEOUT_REMOVE", "ACCEPT", "ASYNC_CANCEL", "LINK_TIMEOUT",
	"CONNECT", "FALLOCATE", "OPENAT", "CLOSE", "FILES_UPDATE", "STATX",
	"READ", "WRITE", "FADVISE", "MADVISE", "SEND", "RECV", "OPENAT2",
	"EPOLL_CTL", "SPLICE", "PROVIDE_BUFFERS", "REMOVE_BUFFERS", "TEE",
	"SHUTDOWN", "RENAMEAT", "UNLINKAT", "MKDIRAT", "SYMLINKAT", "LINKAT",
};

static const char *const features[] = {
	"SINGLE_MMAP", "NODROP", "SUBMIT_STABLE", "RW_CUR_POS",
	"CUR_PERSONALITY", "FAST_POLL", "POLL_32BITS", "SQPOLL_NONFIXED",
	"EXT_ARG", "NATIVE_WORKERS", "RSRC_TAGS",
};

/* ---- JSON helpers ---- */

static void put(struct json_object *o, const char *key, struct json_object *v)
{
	json_object_object_add(o, key, v);
}

static struct json_object *str(const char *s)
{
	return json_object_new_string(s);
}

static struct json_object *strings(const char *const *v, size_t n)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; i < n; i++)
		json_object_array_add(a, str(v[i]));
	return a;
}

/* {"selected": mode, "options": [...]}, as the probe reports a mode */
static struct json_object *mode(const char *selected, const char *const *opts,
				size_t n)
{
	struct json_object *o = json_object_new_object();

	put(o, "selected", str(selected));
	put(o, "options", strings(opts, n));
	return o;
}

static struct json_object *label(const char *value)
{
	struct json_object *o = json_object_new_object();

	put(o, "value", str(value));
	put(o, "source", str("flag"));
	return o;
}

struct json_object *fleetgen_probe_json(const struct run *run)
{
	static const char *const thp_opts[] = { "always", "madvise", "never" };
	static const char *const defrag_opts[] = { "always", "defer",
						   "defer+madvise", "madvise",
						   "never" };
	const struct fleet_type *t = run->t;
	bool denied = t->sqpoll_denied_new && run->kernel == 1;
	struct json_object *p = json_object_new_object(), *o, *sizes, *s;
	char version[128], cmdline[256];

	o = json_object_new_object();
	put(o, "agent_version", str("0.1.0"));
	put(o, "root", str("/"));
	put(p, "meta", o);

	o = json_object_new_object();
	put(o, "hostname", str(run->hostname));
	put(o, "machine_id", str(run->machine_id));
	put(o, "architecture", str("x86_64"));
	put(o, "vcpus_online", json_object_new_int(t->vcpus));
	put(o, "memory_total_kb", json_object_new_int64(t->memory_kb));
	put(p, "host", o);

	snprintf(version, sizeof(version), "#1 SMP PREEMPT_DYNAMIC %s",
		 t->kernel[run->kernel]);
	snprintf(cmdline, sizeof(cmdline),
		 "BOOT_IMAGE=/boot/vmlinuz-%s root=/dev/vda1 ro console=ttyS0",
		 t->kernel[run->kernel]);
	o = json_object_new_object();
	put(o, "release", str(t->kernel[run->kernel]));
	put(o, "version", str(version));
	put(o, "cmdline", str(cmdline));
	put(p, "kernel", o);

	o = json_object_new_object();
	s = json_object_new_object();
	put(s, "name", str("kvm"));
	put(s, "source", str("cpuid"));
	put(o, "vm", s);
	s = json_object_new_object();
	put(s, "name", str("none"));
	put(o, "container", s);
	put(p, "virt", o);

	o = json_object_new_object();
	put(o, "provider", label(t->provider));
	put(o, "instance_type", label(t->instance_type));
	put(o, "region", label(t->region));
	put(p, "labels", o);

	o = json_object_new_object();
	put(o, "enabled", mode(t->thp_mode, thp_opts, ARRAY_SIZE(thp_opts)));
	put(o, "defrag",
	    mode("madvise", defrag_opts, ARRAY_SIZE(defrag_opts)));
	put(o, "hpage_pmd_size", json_object_new_int(2097152));
	put(p, "thp", o);

	o = json_object_new_object();
	sizes = json_object_new_array();
	for (int i = 0; i < (t->has_1g ? 2 : 1); i++) {
		bool pool = i ? t->hugetlb_1g_speedup > 0 :
				t->hugetlb_2m_speedup > 0;

		s = json_object_new_object();
		put(s, "name", str(i ? "hugepages-1048576kB" : "hugepages-2048kB"));
		put(s, "size_kb", json_object_new_int(i ? 1048576 : 2048));
		put(s, "nr", json_object_new_int(pool ? (i ? 1 : 600) : 0));
		put(s, "free", json_object_new_int(pool ? (i ? 1 : 600) : 0));
		json_object_array_add(sizes, s);
	}
	put(o, "default_size_kb", json_object_new_int(2048));
	put(o, "size_2m_present", json_object_new_boolean(true));
	put(o, "size_1g_present", json_object_new_boolean(t->has_1g));
	put(o, "sizes", sizes);
	put(p, "hugetlb", o);

	o = json_object_new_object();
	put(o, "disabled", json_object_new_int(0));
	put(o, "setup", str("ok"));
	put(o, "setup_errno", json_object_new_int(0));
	put(o, "sqpoll", str(denied ? "EPERM" : "ok"));
	put(o, "sqpoll_errno", json_object_new_int(denied ? EPERM : 0));
	put(o, "opcodes", strings(opcodes, ARRAY_SIZE(opcodes)));
	put(o, "opcode_count", json_object_new_int((int)ARRAY_SIZE(opcodes)));
	put(o, "features", strings(features, ARRAY_SIZE(features)));
	put(p, "io_uring", o);
	return p;
}
