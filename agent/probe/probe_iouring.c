/* SPDX-License-Identifier: MIT */
/* io_uring: whether this process may create rings, what the kernel offers. */
#include "probe_iouring.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "probe_modules.h"

#define RING_ENTRIES 8
#define SQPOLL_IDLE_MS 10
#define PROBE_NR_OPS 256
#define CAP_SYS_ADMIN_BIT 21
#define NOT_TESTED "not tested: setup failed"
#define ENOSYS_EXPLANATION \
	"io_uring not built into this kernel (or blocked by seccomp returning ENOSYS)"

/*
 * Opcode numbers are kernel ABI and never change, so names for opcodes
 * newer than the build's <linux/io_uring.h> (Debian 12 ships 6.1's) are
 * listed by number: a newer kernel's opcodes then show by name too.
 */
#define OP(x) [IORING_OP_##x] = #x
static const char *const op_names[] = {
	OP(NOP),	     OP(READV),		  OP(WRITEV),
	OP(FSYNC),	     OP(READ_FIXED),	  OP(WRITE_FIXED),
	OP(POLL_ADD),	     OP(POLL_REMOVE),	  OP(SYNC_FILE_RANGE),
	OP(SENDMSG),	     OP(RECVMSG),	  OP(TIMEOUT),
	OP(TIMEOUT_REMOVE),  OP(ACCEPT),	  OP(ASYNC_CANCEL),
	OP(LINK_TIMEOUT),    OP(CONNECT),	  OP(FALLOCATE),
	OP(OPENAT),	     OP(CLOSE),		  OP(FILES_UPDATE),
	OP(STATX),	     OP(READ),		  OP(WRITE),
	OP(FADVISE),	     OP(MADVISE),	  OP(SEND),
	OP(RECV),	     OP(OPENAT2),	  OP(EPOLL_CTL),
	OP(SPLICE),	     OP(PROVIDE_BUFFERS), OP(REMOVE_BUFFERS),
	OP(TEE),	     OP(SHUTDOWN),	  OP(RENAMEAT),
	OP(UNLINKAT),	     OP(MKDIRAT),	  OP(SYMLINKAT),
	OP(LINKAT),	     OP(MSG_RING),	  OP(FSETXATTR),
	OP(SETXATTR),	     OP(FGETXATTR),	  OP(GETXATTR),
	OP(SOCKET),	     OP(URING_CMD),	  OP(SEND_ZC),
	OP(SENDMSG_ZC),
	[49] = "READ_MULTISHOT", [50] = "WAITID",	   [51] = "FUTEX_WAIT",
	[52] = "FUTEX_WAKE",	 [53] = "FUTEX_WAITV",	   [54] = "FIXED_FD_INSTALL",
	[55] = "FTRUNCATE",	 [56] = "BIND",		   [57] = "LISTEN",
	[58] = "RECV_ZC",	 [59] = "EPOLL_WAIT",	   [60] = "READV_FIXED",
	[61] = "WRITEV_FIXED",	 [62] = "PIPE",
};
#undef OP

/* IORING_FEAT_* flags; bits are ABI, so the newer ones are named by bit. */
#define FEAT(x) { IORING_FEAT_##x, #x }
static const struct {
	uint32_t bit;
	const char *name;
} feat_names[] = {
	FEAT(SINGLE_MMAP),     FEAT(NODROP),	      FEAT(SUBMIT_STABLE),
	FEAT(RW_CUR_POS),      FEAT(CUR_PERSONALITY), FEAT(FAST_POLL),
	FEAT(POLL_32BITS),     FEAT(SQPOLL_NONFIXED), FEAT(EXT_ARG),
	FEAT(NATIVE_WORKERS),  FEAT(RSRC_TAGS),	      FEAT(CQE_SKIP),
	FEAT(LINKED_FILE),
	{ 1u << 13, "REG_REG_RING" },
	{ 1u << 14, "RECVSEND_BUNDLE" },
	{ 1u << 15, "MIN_TIMEOUT" },
	{ 1u << 16, "RW_ATTR" },
	{ 1u << 17, "NO_IOWAIT" },
};
#undef FEAT

const char *iouring_op_name(unsigned int op)
{
	return op < ARRAY_SIZE(op_names) ? op_names[op] : NULL;
}

static const char *errno_name(int err, char *buf, size_t size)
{
	const char *name = strerrorname_np(err);

	if (name)
		return name;
	snprintf(buf, size, "ERRNO_%d", err);
	return buf;
}

/* Seccomp mode from "Seccomp:" in status, or -errno. */
static int status_seccomp(const char *status, int64_t *ret)
{
	char buf[32];
	int r;

	if (!status)
		return -ENOENT;
	r = probe_kv(status, "Seccomp", buf, sizeof(buf));
	if (r < 0)
		return r;
	return probe_parse_i64(buf, ret);
}

static bool status_has_cap(const char *status, unsigned int cap)
{
	char buf[32], *end;
	unsigned long long mask;

	if (probe_kv(status, "CapEff", buf, sizeof(buf)) < 0)
		return false;
	errno = 0;
	mask = strtoull(buf, &end, 16);
	if (errno || end == buf || *end)
		return false;
	return mask & (1ull << cap);
}

/* Whether a whitespace-separated list of ids in s contains id. */
static bool ids_contain(const char *s, int64_t id, size_t skip)
{
	while (*s) {
		char *end;
		long long v;

		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		errno = 0;
		v = strtoll(s, &end, 10);
		if (errno || end == s)
			return false;
		if (skip)
			skip--;
		else if (v == id)
			return true;
		s = end;
	}
	return false;
}

/*
 * in_group_p() for kernel.io_uring_group: the fs gid (the fourth on the
 * "Gid:" line) or a supplementary group. -1 is "no group".
 */
static bool status_in_group(const char *status, int64_t group)
{
	char buf[16384];

	if (group < 0)
		return false;
	if (probe_kv(status, "Gid", buf, sizeof(buf)) == 0 &&
	    ids_contain(buf, group, 3))
		return true;
	/* An empty "Groups:" line reads as -EBADMSG: no supplementary groups. */
	return probe_kv(status, "Groups", buf, sizeof(buf)) == 0 &&
	       ids_contain(buf, group, 0);
}

const char *iouring_setup_explanation(int err, int64_t disabled, int64_t group,
				      const char *status)
{
	int64_t mode;

	if (err == 0)
		return NULL;
	if (err == -ENOSYS)
		return ENOSYS_EXPLANATION;
	if (err != -EPERM)
		return "unexplained";
	if (disabled == 2)
		return "kernel.io_uring_disabled=2";
	/* Without the status file the sysctl is the likelier explanation. */
	if (disabled == 1 &&
	    (!status || (!status_has_cap(status, CAP_SYS_ADMIN_BIT) &&
			 !status_in_group(status, group))))
		return "kernel.io_uring_disabled=1 and not in io_uring_group";
	if (status_seccomp(status, &mode) == 0 && mode == 2)
		return "seccomp filter";
	return "unexplained";
}

/* item_file_i64_value(); the value, or -1 when unknown. */
static int64_t file_i64(struct probe_ctx *ctx, struct json_object *out,
			const char *key, const char *path)
{
	int64_t v;

	return item_file_i64_value(ctx, out, key, path, &v) < 0 ? -1 : v;
}

static void probe_seccomp(struct json_object *out, const char *status,
			  ssize_t len)
{
	int64_t mode;
	int r;

	if (len < 0) {
		item_unknown_err(out, "seccomp_mode", (int)len);
		return;
	}
	r = status_seccomp(status, &mode);
	/* Every line ends in a newline: without it the file was cut short,
	 * with it the kernel has no CONFIG_SECCOMP. */
	if (r == -ENOENT && (len == 0 || status[len - 1] != '\n'))
		item_unknown(out, "seccomp_mode",
			     "malformed: /proc/self/status truncated");
	else if (r == -ENOENT)
		item_unknown_err(out, "seccomp_mode", r);
	else if (r < 0)
		item_unknown(out, "seccomp_mode",
			     "malformed: Seccomp in /proc/self/status");
	else
		item_i64(out, "seccomp_mode", mode);
}

static void report_features(struct json_object *out, uint32_t features)
{
	struct json_object *arr = item_array(out, "features");
	uint32_t rest = features;
	char name[32];

	for (size_t i = 0; i < ARRAY_SIZE(feat_names); i++) {
		if (!(features & feat_names[i].bit))
			continue;
		json_object_array_add(arr,
				      json_object_new_string(feat_names[i].name));
		rest &= ~feat_names[i].bit;
	}
	for (unsigned int b = 0; b < 32; b++) {
		if (!(rest & (1u << b)))
			continue;
		snprintf(name, sizeof(name), "BIT_%u", b);
		json_object_array_add(arr, json_object_new_string(name));
	}
	item_i64(out, "features_mask", features);
}

static void report_opcodes(struct json_object *out,
			   const struct io_uring_probe *pr, int err)
{
	struct json_object *arr;
	char buf[32];
	int64_t count = 0;

	if (err < 0) {
		item_unknown(out, "opcodes",
			     "%s: IORING_REGISTER_PROBE not supported",
			     errno_name(-err, buf, sizeof(buf)));
		item_unknown(out, "opcode_count",
			     "%s: IORING_REGISTER_PROBE not supported",
			     errno_name(-err, buf, sizeof(buf)));
		return;
	}
	arr = item_array(out, "opcodes");
	/* ops_len is a __u8, so always within the PROBE_NR_OPS we passed. */
	for (unsigned int i = 0; i < pr->ops_len && i < PROBE_NR_OPS; i++) {
		const char *name = iouring_op_name(pr->ops[i].op);

		if (!(pr->ops[i].flags & IO_URING_OP_SUPPORTED))
			continue;
		if (!name) {
			snprintf(buf, sizeof(buf), "OP_%u", pr->ops[i].op);
			name = buf;
		}
		json_object_array_add(arr, json_object_new_string(name));
		count++;
	}
	item_i64(out, "opcode_count", count);
}

/* RLIMIT_MEMLOCK soft limit: "Max locked memory  <soft> <hard> bytes". */
static void probe_memlock(struct probe_ctx *ctx, struct json_object *out)
{
	static const char key[] = "memlock_limit_bytes";
	_cleanup_free_ char *limits = NULL;
	ssize_t n = probe_read_file(ctx, "/proc/self/limits", &limits);
	char buf[256], *save = NULL, *soft, *hard, *units;
	int64_t v;
	int r;

	if (n < 0) {
		item_unknown_err(out, key, (int)n);
		return;
	}
	r = probe_kv(limits, "Max locked memory", buf, sizeof(buf));
	if (r == -ENOENT) {
		item_unknown(out, key,
			     "malformed: no \"Max locked memory\" line in /proc/self/limits");
		return;
	}
	soft = r < 0 ? NULL : strtok_r(buf, " \t", &save);
	hard = soft ? strtok_r(NULL, " \t", &save) : NULL;
	units = hard ? strtok_r(NULL, " \t", &save) : NULL;
	if (!units || strcmp(units, "bytes") || strtok_r(NULL, " \t", &save)) {
		item_unknown(out, key,
			     "malformed: \"Max locked memory\" in /proc/self/limits");
		return;
	}
	if (!strcmp(soft, "unlimited")) {
		item_str(out, key, "unlimited");
		return;
	}
	if (probe_parse_i64(soft, &v) < 0 || v < 0) {
		item_unknown(out, key,
			     "malformed: \"Max locked memory\" in /proc/self/limits");
		return;
	}
	item_i64(out, key, v);
}

static int probe_iouring(struct probe_ctx *ctx, struct json_object *out)
{
	_cleanup_free_ struct io_uring_probe *pr = NULL;
	_cleanup_free_ char *status = NULL;
	struct io_uring_params p = { 0 };
	struct io_uring_params sp = {
		.flags = IORING_SETUP_SQPOLL,
		.sq_thread_idle = SQPOLL_IDLE_MS,
	};
	int64_t disabled, group;
	int fd, probe_err = 0, sqpoll_fd = 0;
	ssize_t n;
	char buf[32];

	disabled = file_i64(ctx, out, "disabled",
			    "/proc/sys/kernel/io_uring_disabled");
	group = file_i64(ctx, out, "group", "/proc/sys/kernel/io_uring_group");
	n = probe_read_file(ctx, "/proc/self/status", &status);
	probe_seccomp(out, status, n);

	pr = calloc(1, sizeof(*pr) + PROBE_NR_OPS * sizeof(pr->ops[0]));
	if (!pr)
		return -ENOMEM;

	fd = ctx->sys->uring_setup(RING_ENTRIES, &p);
	if (fd < 0) {
		item_str(out, "setup", errno_name(-fd, buf, sizeof(buf)));
		item_i64(out, "setup_errno", -fd);
		item_str(out, "setup_explanation",
			 iouring_setup_explanation(fd, disabled, group,
						   status));
		item_unknown(out, "sqpoll", NOT_TESTED);
		item_unknown(out, "sqpoll_errno", NOT_TESTED);
		item_unknown(out, "opcodes", NOT_TESTED);
		item_unknown(out, "opcode_count", NOT_TESTED);
		item_unknown(out, "features", NOT_TESTED);
		item_unknown(out, "features_mask", NOT_TESTED);
		goto memlock;
	}
	probe_err = ctx->sys->uring_register(fd, IORING_REGISTER_PROBE, pr,
					     PROBE_NR_OPS);
	ctx->sys->uring_close(fd);

	/* A kernel without SQPOLL support or permission refuses the flag;
	 * the ring is only created to see that, so it is closed at once. */
	sqpoll_fd = ctx->sys->uring_setup(RING_ENTRIES, &sp);
	if (sqpoll_fd >= 0)
		ctx->sys->uring_close(sqpoll_fd);

	item_str(out, "setup", "ok");
	item_i64(out, "setup_errno", 0);
	item_null(out, "setup_explanation");
	if (sqpoll_fd >= 0) {
		item_str(out, "sqpoll", "ok");
		item_i64(out, "sqpoll_errno", 0);
	} else {
		item_str(out, "sqpoll",
			 errno_name(-sqpoll_fd, buf, sizeof(buf)));
		item_i64(out, "sqpoll_errno", -sqpoll_fd);
	}
	report_opcodes(out, pr, probe_err < 0 ? probe_err : 0);
	report_features(out, p.features);
memlock:
	probe_memlock(ctx, out);
	return 0;
}

const struct probe_ops probe_iouring_ops = {
	.name = "io_uring",
	.run = probe_iouring,
};
