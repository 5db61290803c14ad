/* SPDX-License-Identifier: MIT */
/* The io_uring probe over every fixture tree, its helpers, the real host. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check.h"
#include "probe_iouring.h"
#include "probe_test.h"
#include "sys/sys.h"

#define NOT_TESTED "unknown (not tested: setup failed)"
#define PROBE_EINVAL "unknown (EINVAL: IORING_REGISTER_PROBE not supported)"
#define ENOSYS_TEXT \
	"io_uring not built into this kernel (or blocked by seccomp returning ENOSYS)"

/* The 6.1 feature set the fake returns by default. */
static const char *const feats_61[] = {
	"SINGLE_MMAP",	   "NODROP",	     "SUBMIT_STABLE", "RW_CUR_POS",
	"CUR_PERSONALITY", "FAST_POLL",	     "POLL_32BITS",   "SQPOLL_NONFIXED",
	"EXT_ARG",	   "NATIVE_WORKERS", "RSRC_TAGS",     "CQE_SKIP",
	"LINKED_FILE",
};

static void check_strings(struct json_object *r, const char *path,
			  const char *const *want, size_t n)
{
	CHECK_EQ_INT(jlen(r, path), n);
	for (size_t i = 0; i < n; i++)
		CHECK_EQ_STR(jat(r, path, i), want[i]);
}

/* Setup, SQPOLL and every opcode work, with the fake's 6.1 features. */
static void check_working(struct json_object *r)
{
	CHECK_EQ_STR(jstr(r, "io_uring.setup"), "ok");
	CHECK_EQ_INT(jint(r, "io_uring.setup_errno"), 0);
	CHECK(jget(r, "io_uring.setup_explanation") == NULL);
	CHECK_EQ_STR(jstr(r, "io_uring.setup_explanation"), "");
	CHECK_EQ_STR(jstr(r, "io_uring.sqpoll"), "ok");
	CHECK_EQ_INT(jint(r, "io_uring.sqpoll_errno"), 0);
	CHECK_EQ_INT(jint(r, "io_uring.opcode_count"), IORING_OP_LAST);
	CHECK_EQ_INT(jlen(r, "io_uring.opcodes"), IORING_OP_LAST);
	CHECK_EQ_STR(jat(r, "io_uring.opcodes", 0), "NOP");
	CHECK_EQ_STR(jat(r, "io_uring.opcodes", IORING_OP_READ), "READ");
	CHECK_EQ_STR(jat(r, "io_uring.opcodes", IORING_OP_URING_CMD),
		     "URING_CMD");
	for (unsigned int op = 0; op < IORING_OP_LAST; op++)
		CHECK_EQ_STR(jat(r, "io_uring.opcodes", op),
			     iouring_op_name(op));
	check_strings(r, "io_uring.features", feats_61, 13);
	CHECK_EQ_INT(jint(r, "io_uring.features_mask"), 0x1fff);
}

static void check_not_tested(struct json_object *r)
{
	CHECK_EQ_STR(jstr(r, "io_uring.sqpoll"), NOT_TESTED);
	CHECK_EQ_STR(jstr(r, "io_uring.sqpoll_errno"), NOT_TESTED);
	CHECK_EQ_STR(jstr(r, "io_uring.opcodes"), NOT_TESTED);
	CHECK_EQ_STR(jstr(r, "io_uring.opcode_count"), NOT_TESTED);
	CHECK_EQ_STR(jstr(r, "io_uring.features"), NOT_TESTED);
	CHECK_EQ_STR(jstr(r, "io_uring.features_mask"), NOT_TESTED);
}

static void test_kvm_guest(void)
{
	struct json_object *r = probe_fixture("kvm-guest", NULL);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_INT(jint(r, "io_uring.disabled"), 0);
	CHECK_EQ_INT(jint(r, "io_uring.group"), -1);
	CHECK_EQ_INT(jint(r, "io_uring.seccomp_mode"), 0);
	check_working(r);
	CHECK_EQ_INT(jint(r, "io_uring.memlock_limit_bytes"), 8388608);
	json_object_put(r);
}

static void test_vps(void)
{
	struct fake_sys fs = { .setup_err = -EPERM };
	struct json_object *r = probe_fixture("vps-thp-always", &fs);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_INT(jint(r, "io_uring.disabled"), 2);
	CHECK_EQ_INT(jint(r, "io_uring.group"), -1);
	CHECK_EQ_INT(jint(r, "io_uring.seccomp_mode"), 2);
	CHECK_EQ_STR(jstr(r, "io_uring.setup"), "EPERM");
	CHECK_EQ_INT(jint(r, "io_uring.setup_errno"), EPERM);
	/* Docker's seccomp filter is there too, but the sysctl decides. */
	CHECK_EQ_STR(jstr(r, "io_uring.setup_explanation"),
		     "kernel.io_uring_disabled=2");
	check_not_tested(r);
	CHECK_EQ_INT(jint(r, "io_uring.memlock_limit_bytes"), 8388608);
	json_object_put(r);
}

static void test_baremetal(void)
{
	struct fake_sys fs = { .hypervisor_bit = -1 };
	struct json_object *r = probe_fixture("baremetal-numa", &fs);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_INT(jint(r, "io_uring.disabled"), 0);
	CHECK_EQ_INT(jint(r, "io_uring.group"), -1);
	CHECK_EQ_INT(jint(r, "io_uring.seccomp_mode"), 0);
	check_working(r);
	CHECK_EQ_STR(jstr(r, "io_uring.memlock_limit_bytes"), "unlimited");
	json_object_put(r);
}

static void test_old_kernel(void)
{
	static const char *const feats_54[] = {
		"SINGLE_MMAP",
		"NODROP",
		"SUBMIT_STABLE",
	};
	struct fake_sys fs = {
		.probe_err = -EINVAL,
		.features = IORING_FEAT_SINGLE_MMAP | IORING_FEAT_NODROP |
			    IORING_FEAT_SUBMIT_STABLE,
	};
	struct json_object *r = probe_fixture("old-kernel", &fs);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_STR(jstr(r, "io_uring.disabled"), "unknown (absent)");
	CHECK_EQ_STR(jstr(r, "io_uring.group"), "unknown (absent)");
	CHECK_EQ_INT(jint(r, "io_uring.seccomp_mode"), 0);
	CHECK_EQ_STR(jstr(r, "io_uring.setup"), "ok");
	CHECK_EQ_INT(jint(r, "io_uring.setup_errno"), 0);
	CHECK_EQ_STR(jstr(r, "io_uring.setup_explanation"), "");
	CHECK_EQ_STR(jstr(r, "io_uring.sqpoll"), "ok");
	CHECK_EQ_INT(jint(r, "io_uring.sqpoll_errno"), 0);
	CHECK_EQ_STR(jstr(r, "io_uring.opcodes"), PROBE_EINVAL);
	CHECK_EQ_STR(jstr(r, "io_uring.opcode_count"), PROBE_EINVAL);
	check_strings(r, "io_uring.features", feats_54, 3);
	CHECK_EQ_INT(jint(r, "io_uring.features_mask"), 7);
	CHECK_EQ_INT(jint(r, "io_uring.memlock_limit_bytes"), 65536);
	json_object_put(r);
}

static void test_malformed(void)
{
	struct json_object *r = probe_fixture("malformed", NULL);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_STR(jstr(r, "io_uring.disabled"),
		     "unknown (malformed: /proc/sys/kernel/io_uring_disabled is not an integer)");
	CHECK_EQ_STR(jstr(r, "io_uring.group"),
		     "unknown (malformed: /proc/sys/kernel/io_uring_group empty)");
	CHECK_EQ_STR(jstr(r, "io_uring.seccomp_mode"),
		     "unknown (malformed: /proc/self/status truncated)");
	check_working(r);
	CHECK_EQ_STR(jstr(r, "io_uring.memlock_limit_bytes"),
		     "unknown (malformed: no \"Max locked memory\" line in /proc/self/limits)");
	json_object_put(r);
}

/* kvm-guest with other syscall results. */
static void test_fakes(void)
{
	struct fake_sys enosys = { .setup_err = -ENOSYS };
	struct fake_sys eperm = { .setup_err = -EPERM };
	struct fake_sys enomem = { .setup_err = -ENOMEM };
	struct fake_sys sqpoll = { .sqpoll_err = -EPERM };
	struct fake_sys short_ops = { .nr_ops = 5 };
	struct fake_sys many_ops = { .nr_ops = 250 };
	struct fake_sys odd_feats = {
		.features = IORING_FEAT_SINGLE_MMAP | (1u << 31),
	};
	static const char *const first5[] = {
		"NOP", "READV", "WRITEV", "FSYNC", "READ_FIXED",
	};
	static const char *const odd[] = { "SINGLE_MMAP", "BIT_31" };
	struct json_object *r;
	char name[32];

	r = probe_fixture("kvm-guest", &enosys);
	CHECK(r != NULL);
	CHECK_EQ_STR(jstr(r, "io_uring.setup"), "ENOSYS");
	CHECK_EQ_INT(jint(r, "io_uring.setup_errno"), ENOSYS);
	CHECK_EQ_STR(jstr(r, "io_uring.setup_explanation"),
		     ENOSYS_TEXT);
	check_not_tested(r);
	json_object_put(r);

	/* Neither the sysctl nor seccomp forbids it here. */
	r = probe_fixture("kvm-guest", &eperm);
	CHECK(r != NULL);
	CHECK_EQ_STR(jstr(r, "io_uring.setup"), "EPERM");
	CHECK_EQ_STR(jstr(r, "io_uring.setup_explanation"), "unexplained");
	json_object_put(r);

	r = probe_fixture("kvm-guest", &enomem);
	CHECK(r != NULL);
	CHECK_EQ_STR(jstr(r, "io_uring.setup"), "ENOMEM");
	CHECK_EQ_INT(jint(r, "io_uring.setup_errno"), ENOMEM);
	CHECK_EQ_STR(jstr(r, "io_uring.setup_explanation"), "unexplained");
	json_object_put(r);

	r = probe_fixture("kvm-guest", &sqpoll);
	CHECK(r != NULL);
	CHECK_EQ_STR(jstr(r, "io_uring.setup"), "ok");
	CHECK_EQ_INT(jint(r, "io_uring.setup_errno"), 0);
	CHECK_EQ_STR(jstr(r, "io_uring.sqpoll"), "EPERM");
	CHECK_EQ_INT(jint(r, "io_uring.sqpoll_errno"), EPERM);
	CHECK_EQ_INT(jint(r, "io_uring.opcode_count"), IORING_OP_LAST);
	json_object_put(r);

	r = probe_fixture("kvm-guest", &short_ops);
	CHECK(r != NULL);
	check_strings(r, "io_uring.opcodes", first5, 5);
	CHECK_EQ_INT(jint(r, "io_uring.opcode_count"), 5);
	json_object_put(r);

	/* Opcodes newer than <linux/io_uring.h> are named by number. */
	r = probe_fixture("kvm-guest", &many_ops);
	CHECK(r != NULL);
	CHECK_EQ_INT(jint(r, "io_uring.opcode_count"), 250);
	CHECK_EQ_INT(jlen(r, "io_uring.opcodes"), 250);
	CHECK_EQ_STR(jat(r, "io_uring.opcodes", IORING_OP_LAST - 1),
		     iouring_op_name(IORING_OP_LAST - 1));
	/* named by ABI number beyond the build's headers */
	CHECK_EQ_STR(jat(r, "io_uring.opcodes", 62), "PIPE");
	snprintf(name, sizeof(name), "OP_%d", 63);
	CHECK_EQ_STR(jat(r, "io_uring.opcodes", 63), name);
	CHECK_EQ_STR(jat(r, "io_uring.opcodes", 249), "OP_249");
	json_object_put(r);

	r = probe_fixture("kvm-guest", &odd_feats);
	CHECK(r != NULL);
	check_strings(r, "io_uring.features", odd, 2);
	CHECK_EQ_INT(jint(r, "io_uring.features_mask"), 0x80000001u);
	json_object_put(r);
}

static void test_helpers(void)
{
	static const char user[] = "Name:\tx\nUid:\t1000\t1000\t1000\t1000\n"
				   "Gid:\t1000\t1000\t1000\t1000\n"
				   "Groups:\t4 24 1000 \n"
				   "CapEff:\t0000000000000000\n"
				   "Seccomp:\t0\n";
	static const char admin[] = "Gid:\t0\t0\t0\t0\nGroups:\t \n"
				    "CapEff:\t0000000000200000\n"
				    "Seccomp:\t2\n";
	static const char fsgid[] = "Gid:\t1\t1\t1\t77\nGroups:\t \n"
				    "CapEff:\t0000000000000000\nSeccomp:\t0\n";
	static const char *const sysctl1 =
		"kernel.io_uring_disabled=1 and not in io_uring_group";

	CHECK(iouring_setup_explanation(0, 2, -1, user) == NULL);
	CHECK_EQ_STR(iouring_setup_explanation(-EPERM, 2, -1, admin),
		     "kernel.io_uring_disabled=2");
	/* disabled=1: CAP_SYS_ADMIN or membership of the group lets through. */
	CHECK_EQ_STR(iouring_setup_explanation(-EPERM, 1, -1, user), sysctl1);
	CHECK_EQ_STR(iouring_setup_explanation(-EPERM, 1, 5, user), sysctl1);
	CHECK_EQ_STR(iouring_setup_explanation(-EPERM, 1, 24, user),
		     "unexplained");
	CHECK_EQ_STR(iouring_setup_explanation(-EPERM, 1, 1000, user),
		     "unexplained");
	CHECK_EQ_STR(iouring_setup_explanation(-EPERM, 1, -1, admin),
		     "seccomp filter");
	CHECK_EQ_STR(iouring_setup_explanation(-EPERM, 1, 77, fsgid),
		     "unexplained");
	/* Only the fs gid counts, not the real one. */
	CHECK_EQ_STR(iouring_setup_explanation(-EPERM, 1, 1, fsgid), sysctl1);
	CHECK_EQ_STR(iouring_setup_explanation(-EPERM, 1, -1, NULL), sysctl1);
	CHECK_EQ_STR(iouring_setup_explanation(-EPERM, 0, -1, admin),
		     "seccomp filter");
	CHECK_EQ_STR(iouring_setup_explanation(-EPERM, -1, -1, admin),
		     "seccomp filter");
	CHECK_EQ_STR(iouring_setup_explanation(-EPERM, 0, -1, user),
		     "unexplained");
	CHECK_EQ_STR(iouring_setup_explanation(-EPERM, 0, -1, NULL),
		     "unexplained");
	CHECK_EQ_STR(iouring_setup_explanation(-EINVAL, 2, -1, admin),
		     "unexplained");
	CHECK_EQ_STR(iouring_setup_explanation(-ENOSYS, 0, -1, user),
		     ENOSYS_TEXT);

	CHECK_EQ_STR(iouring_op_name(IORING_OP_NOP), "NOP");
	CHECK_EQ_STR(iouring_op_name(IORING_OP_SYNC_FILE_RANGE),
		     "SYNC_FILE_RANGE");
	CHECK_EQ_STR(iouring_op_name(49), "READ_MULTISHOT");
	CHECK(iouring_op_name(63) == NULL);
	CHECK(iouring_op_name(255) == NULL);
	for (unsigned int op = 0; op < IORING_OP_LAST; op++)
		CHECK(iouring_op_name(op) != NULL);
}

/* The running machine: the section agrees with the kernel itself. */
static void test_real(void)
{
	struct probe_opts opts = { .root = "/", .work_dir = "/tmp" };
	struct io_uring_params p = { 0 };
	struct json_object *r = NULL;
	const char *setup;
	struct rlimit rl;
	long long disabled = -1;
	int seccomp, fd;
	FILE *f;

	CHECK_OK(probe_run(&opts, &r));
	if (!r)
		return;

	f = fopen("/proc/sys/kernel/io_uring_disabled", "re");
	if (f) {
		CHECK(fscanf(f, "%lld", &disabled) == 1);
		fclose(f);
		CHECK_EQ_INT(jint(r, "io_uring.disabled"), disabled);
	} else {
		CHECK_EQ_STR(jstr(r, "io_uring.disabled"), "unknown (absent)");
	}

	/* The calling thread's mode, as "Seccomp:" reports it. */
	seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
	if (seccomp >= 0)
		CHECK_EQ_INT(jint(r, "io_uring.seccomp_mode"), seccomp);

	/* The same syscall made here must give the same answer. */
	fd = sys_io_uring_setup(8, &p);
	setup = jstr(r, "io_uring.setup");
	CHECK_EQ_STR(setup, fd >= 0 ? "ok" : strerrorname_np(-fd));
	CHECK_EQ_INT(jint(r, "io_uring.setup_errno"), fd >= 0 ? 0 : -fd);
	if (fd >= 0) {
		CHECK_EQ_INT(jint(r, "io_uring.features_mask"), p.features);
		close(fd);
	}
	if (disabled == 0 && seccomp == 0)
		CHECK_EQ_STR(jstr(r, "io_uring.setup"), "ok");
	/* Without the sysctl the kernel may predate io_uring (or lack it). */
	if (disabled == -1 && seccomp == 0)
		CHECK(!strcmp(jstr(r, "io_uring.setup"), "ok") ||
		      !strcmp(jstr(r, "io_uring.setup"), "ENOSYS"));
	if (disabled == 2) {
		CHECK_EQ_STR(jstr(r, "io_uring.setup"), "EPERM");
		CHECK_EQ_STR(jstr(r, "io_uring.setup_explanation"),
			     "kernel.io_uring_disabled=2");
	}
	if (!strcmp(jstr(r, "io_uring.setup"), "ok")) {
		CHECK(jget(r, "io_uring.setup_explanation") == NULL);
		if (jint(r, "io_uring.opcode_count") != INT64_MIN)
			CHECK(jint(r, "io_uring.opcode_count") >= 1);
		else
			CHECK_EQ_STR(jstr(r, "io_uring.opcode_count"),
				     PROBE_EINVAL);
		CHECK(jint(r, "io_uring.sqpoll_errno") >= 0);
	} else {
		CHECK_EQ_STR(jstr(r, "io_uring.opcodes"), NOT_TESTED);
	}

	CHECK_OK(getrlimit(RLIMIT_MEMLOCK, &rl));
	if (rl.rlim_cur == RLIM_INFINITY)
		CHECK_EQ_STR(jstr(r, "io_uring.memlock_limit_bytes"),
			     "unlimited");
	else
		CHECK_EQ_INT(jint(r, "io_uring.memlock_limit_bytes"),
			     (long long)rl.rlim_cur);
	json_object_put(r);
}

int main(void)
{
	test_kvm_guest();
	test_vps();
	test_baremetal();
	test_old_kernel();
	test_malformed();
	test_fakes();
	test_helpers();
	test_real();
	return check_summary();
}
