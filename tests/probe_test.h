/* SPDX-License-Identifier: MIT */
/*
 * Helpers for probe tests: run the probe against a fixture tree with
 * substituted syscalls, and look items up by dotted path.
 */
#ifndef FLEETBENCH_PROBE_TEST_H
#define FLEETBENCH_PROBE_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "probe.h"

/*
 * Absolute path of the fixture tree <name>: tests/fixtures/<name> (from
 * FIXTURE_DIR set by CMake), or, for a tree with parts written at run time
 * (baremetal-numa's cpufreq policies, tests/fixtures/README.md), a copy of
 * it below $TMPDIR with those parts added, made on the first call and
 * removed when the test exits. Exits the test when the copy cannot be made.
 */
const char *fixture_path(const char *name);

/*
 * Trees built by a test. tree_new() makes an empty directory below $TMPDIR
 * (or /tmp) and returns its path, for tree_free(); tree_put() writes len
 * bytes of data (len -1: strlen(data)) to root/rel, making the directories
 * on the way; tree_free() removes the tree and frees the path (NULL is
 * fine). tree_new() and tree_put() exit the test on failure: a test cannot
 * go on without its tree.
 */
char *tree_new(void);
void tree_put(const char *root, const char *rel, const void *data,
	      ssize_t len);
void tree_free(char *root);

/*
 * Fake syscall results for a fixture. Every field left zero gives a plausible
 * KVM guest: hypervisor bit set, signature "KVMKVMKVM", io_uring working with
 * all opcodes up to IORING_OP_LAST - 1, SQPOLL permitted, every
 * perf_event_open opening (a CPU of no known vendor, so no page-walk
 * event).
 */
struct fake_sys {
	int cpuid_err; /* -ENOTSUP: no CPUID (non-x86) */
	int hypervisor_bit; /* -1: clear, 0/1: set */
	const char *hv_signature; /* 12 bytes; NULL: "KVMKVMKVM\0\0\0" */
	const char *machine; /* uname machine; NULL: "x86_64" */
	int setup_err; /* -errno returned by every io_uring_setup */
	int sqpoll_err; /* -errno for setup with IORING_SETUP_SQPOLL */
	int probe_err; /* -errno for IORING_REGISTER_PROBE */
	int nr_ops; /* opcodes supported: 0..nr_ops-1; 0: IORING_OP_LAST */
	uint32_t features; /* IORING_FEAT_* returned; 0: a 6.1 set */
	int perf_err; /* -errno of every perf_event_open; 0: it opens */
	const char *cpu_vendor; /* CPUID leaf 0, 12 bytes; NULL: zeros */
	uint32_t cpu_eax1; /* CPUID leaf 1 eax (family, model, stepping) */
};

/* Runs the probe on fixture `name` with fake syscalls; NULL on failure. */
struct json_object *probe_fixture(const char *name, const struct fake_sys *fs);

/*
 * As probe_fixture(), with the caller's opts (labels, work_dir): opts->root
 * becomes the fixture's path unless name is NULL, which keeps opts->root (a
 * tree the test built); opts->sys becomes the fake syscalls.
 */
struct json_object *probe_fixture_opts(const char *name,
				       const struct fake_sys *fs,
				       struct probe_opts *opts);

/* The virt.dmi.* items in report order, chassis_type_name after
 * chassis_type. */
#define NDMI 11
extern const char *const dmi_keys[NDMI];

/* True when the key at path is there and holds JSON null (jis() of
 * json_type_null also takes a missing key). */
bool jnull(struct json_object *root, const char *path);

/* The value at a dotted path ("thp.enabled.selected"); arrays take "[N]"
 * ("hugetlb.sizes[1].free"). NULL when the path does not exist. */
struct json_object *jget(struct json_object *root, const char *path);

/* String value at path ("" for null, "<missing>" when absent); for an
 * unknown item "unknown (reason)". Valid for the next 15 calls of jstr(),
 * jat() and jjoin(). */
const char *jstr(struct json_object *root, const char *path);

/* Integer value at path; INT64_MIN when absent or not a number. */
int64_t jint(struct json_object *root, const char *path);

/* True when the value at path has json-c type t. A missing path counts as
 * json_type_null, as json_object_is_type(NULL, json_type_null) does. */
bool jis(struct json_object *root, const char *path, json_type t);

/* Length of the array at path; (size_t)-1 when absent or not an array, so
 * that a missing array never passes for an empty one. */
size_t jlen(struct json_object *root, const char *path);

/* Number of keys of the object at path; (size_t)-1 when absent or not an
 * object. */
size_t jkeys(struct json_object *root, const char *path);

/* jstr() of element i of the array at path ("<missing>" past its end). Valid
 * as long as jstr()'s. */
const char *jat(struct json_object *root, const char *path, size_t i);

/* The elements of the array at path joined by single spaces ("" when empty);
 * "<none>" when absent or not an array, so a scalar string that happens to
 * read like the list never matches. Valid for the next 15 such calls. */
const char *jjoin(struct json_object *root, const char *path);

/* Stores the double at path in *ret and returns true; returns false and
 * leaves *ret alone when absent or not a JSON double (an integer is not). */
bool jdouble(struct json_object *root, const char *path, double *ret);

#endif
