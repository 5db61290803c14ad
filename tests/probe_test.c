/* SPDX-License-Identifier: MIT */
/* Probe test helpers: fixture runs with fake syscalls, JSON path lookups. */
#include "probe_test.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdio.h"
#include "file.h"

#define FAKE_RING_FD 1000

static const struct fake_sys *fake;

static void die(const char *what, const char *path, int err)
{
	fprintf(stderr, "%s %s: %s\n", what, path, strerror(err));
	exit(1);
}

char *tree_new(void)
{
	const char *tmp = getenv("TMPDIR");
	char *root;

	if (asprintf(&root, "%s/fbtree-XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0)
		die("asprintf", "tree", ENOMEM);
	if (!mkdtemp(root))
		die("mkdtemp", root, errno);
	return root;
}

void tree_put(const char *root, const char *rel, const void *data,
	      ssize_t len)
{
	char path[PATH_MAX];
	_cleanup_close_ int fd = -1;
	int r;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 && errno == ENOENT) {
		/* the directories on the way first */
		for (char *p = path + strlen(root) + 1; (p = strchr(p, '/'));
		     p++) {
			*p = '\0';
			if (mkdir(path, 0755) < 0 && errno != EEXIST)
				die("mkdir", path, errno);
			*p = '/';
		}
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	}
	if (fd < 0)
		die("open", path, errno);
	r = fd_write_all(fd, data, len < 0 ? strlen(data) : (size_t)len);
	if (r < 0)
		die("write", path, -r);
}

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void tree_free(char *root)
{
	if (root)
		nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(root);
}

/* ---- fixture trees with parts written at run time ---- */

/*
 * baremetal-numa's cpufreq: 32 policies of one description, as
 * intel_pstate shows them on its Xeon Gold 6338. policyN holds CPU N
 * alone, and the current frequencies spread over four sampled values.
 */
#define BARE_POLICIES 32

enum policy_text { POLICY_FIXED, POLICY_CPU, POLICY_CUR_KHZ };

static const struct {
	const char *file;
	enum policy_text kind;
	const char *text; /* POLICY_FIXED */
} bare_policy[] = {
	{ "affected_cpus", POLICY_CPU, NULL },
	{ "base_frequency", POLICY_FIXED, "2000000\n" },
	{ "cpuinfo_max_freq", POLICY_FIXED, "3200000\n" },
	{ "cpuinfo_min_freq", POLICY_FIXED, "800000\n" },
	{ "cpuinfo_transition_latency", POLICY_FIXED, "0\n" },
	{ "energy_performance_preference", POLICY_FIXED, "performance\n" },
	{ "related_cpus", POLICY_CPU, NULL },
	{ "scaling_available_governors", POLICY_FIXED,
	  "performance powersave\n" },
	{ "scaling_cur_freq", POLICY_CUR_KHZ, NULL },
	{ "scaling_driver", POLICY_FIXED, "intel_pstate\n" },
	{ "scaling_governor", POLICY_FIXED, "performance\n" },
	{ "scaling_max_freq", POLICY_FIXED, "3200000\n" },
	{ "scaling_min_freq", POLICY_FIXED, "800000\n" },
	{ "scaling_setspeed", POLICY_FIXED, "<unsupported>\n" },
};

static void write_bare_policies(const char *root)
{
	for (int cpu = 0; cpu < BARE_POLICIES; cpu++) {
		for (size_t i = 0; i < ARRAY_SIZE(bare_policy); i++) {
			char rel[128], text[32];

			snprintf(rel, sizeof(rel),
				 "sys/devices/system/cpu/cpufreq/policy%d/%s",
				 cpu, bare_policy[i].file);
			if (bare_policy[i].kind == POLICY_CPU)
				snprintf(text, sizeof(text), "%d\n", cpu);
			else if (bare_policy[i].kind == POLICY_CUR_KHZ)
				snprintf(text, sizeof(text), "%d\n",
					 1995000 + cpu % 4 * 2500);
			else
				snprintf(text, sizeof(text), "%s",
					 bare_policy[i].text);
			tree_put(root, rel, text, -1);
		}
	}
}

static const struct {
	const char *tree;
	void (*write)(const char *root);
} generated[] = {
	{ "baremetal-numa", write_bare_policies },
};

/* The copies made by this process (not by a child it forked), removed at
 * its exit; paths[i] is the tree, below dirs[i]. */
static char *made_dirs[ARRAY_SIZE(generated)];
static char made_paths[ARRAY_SIZE(generated)][PATH_MAX];
static pid_t made_by;

static void remove_made(void)
{
	if (getpid() != made_by)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(generated); i++)
		tree_free(made_dirs[i]);
}

static const char *copy_from, *copy_to;

/* Copies one entry of the tree below copy_from to the same place below
 * copy_to: directories, files and symbolic links, as git holds them. */
static int copy_entry(const char *path, const struct stat *st, int flag,
		      struct FTW *ftw)
{
	const char *rel = path + strlen(copy_from);
	char dst[PATH_MAX], target[PATH_MAX];
	_cleanup_free_ char *data = NULL;
	ssize_t n;

	(void)ftw;
	snprintf(dst, sizeof(dst), "%s%s", copy_to, rel);
	switch (flag) {
	case FTW_D:
		if (mkdir(dst, st->st_mode & 07777) < 0)
			die("mkdir", dst, errno);
		return 0;
	case FTW_SL:
		n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			die("readlink", path, errno);
		target[n] = '\0';
		if (symlink(target, dst) < 0)
			die("symlink", dst, errno);
		return 0;
	case FTW_F:
		n = read_full_file(path, 1 << 20, &data);
		if (n < 0)
			die("read", path, (int)-n);
		/* rel starts with '/': tree_put() takes it below copy_to */
		tree_put(copy_to, rel + 1, data, n);
		return 0;
	default:
		die("copy", path, EINVAL);
		return -1;
	}
}

/* Copies tests/fixtures/<generated[i].tree> below a new directory and
 * writes its generated parts there. */
static const char *materialise(size_t i)
{
	char src[PATH_MAX];

	if (made_dirs[i])
		return made_paths[i];
	if (!made_by) {
		made_by = getpid();
		atexit(remove_made);
	}
	made_dirs[i] = tree_new();
	snprintf(src, sizeof(src), "%s/%s", FIXTURE_DIR, generated[i].tree);
	snprintf(made_paths[i], sizeof(made_paths[i]), "%s/%s", made_dirs[i],
		 generated[i].tree);
	copy_from = src;
	copy_to = made_paths[i];
	if (nftw(src, copy_entry, 16, FTW_PHYS) < 0)
		die("nftw", src, errno);
	generated[i].write(made_paths[i]);
	return made_paths[i];
}

const char *fixture_path(const char *name)
{
	static char buf[4096];

	for (size_t i = 0; i < ARRAY_SIZE(generated); i++)
		if (!strcmp(name, generated[i].tree))
			return materialise(i);
	snprintf(buf, sizeof(buf), "%s/%s", FIXTURE_DIR, name);
	return buf;
}

static int fake_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t ret[4])
{
	const char *sig = fake->hv_signature ? fake->hv_signature :
					       "KVMKVMKVM\0\0\0";

	(void)subleaf;
	if (fake->cpuid_err)
		return fake->cpuid_err;
	memset(ret, 0, 4 * sizeof(ret[0]));
	if (leaf == 0 && fake->cpu_vendor) {
		memcpy(&ret[1], fake->cpu_vendor, 4); /* ebx edx ecx */
		memcpy(&ret[3], fake->cpu_vendor + 4, 4);
		memcpy(&ret[2], fake->cpu_vendor + 8, 4);
		return 0;
	}
	if (leaf == 1) {
		ret[0] = fake->cpu_eax1;
		if (fake->hypervisor_bit >= 0)
			ret[2] = 1u << 31;
		return 0;
	}
	if (leaf == 0x40000000u) {
		ret[0] = 0x40000001u;
		memcpy(&ret[1], sig, 4);
		memcpy(&ret[2], sig + 4, 4);
		memcpy(&ret[3], sig + 8, 4);
		return 0;
	}
	return 0;
}

static int fake_uname(struct utsname *ret)
{
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->machine, sizeof(ret->machine), "%s",
		 fake->machine ? fake->machine : "x86_64");
	return 0;
}

static int fake_uring_setup(uint32_t entries, struct io_uring_params *p)
{
	(void)entries;
	if (fake->setup_err)
		return fake->setup_err;
	if ((p->flags & IORING_SETUP_SQPOLL) && fake->sqpoll_err)
		return fake->sqpoll_err;
	p->features = fake->features ? fake->features :
		      IORING_FEAT_SINGLE_MMAP | IORING_FEAT_NODROP |
				      IORING_FEAT_SUBMIT_STABLE |
				      IORING_FEAT_RW_CUR_POS |
				      IORING_FEAT_CUR_PERSONALITY |
				      IORING_FEAT_FAST_POLL |
				      IORING_FEAT_POLL_32BITS |
				      IORING_FEAT_SQPOLL_NONFIXED |
				      IORING_FEAT_EXT_ARG |
				      IORING_FEAT_NATIVE_WORKERS |
				      IORING_FEAT_RSRC_TAGS |
				      IORING_FEAT_CQE_SKIP |
				      IORING_FEAT_LINKED_FILE;
	return FAKE_RING_FD;
}

static int fake_uring_register(int fd, unsigned int opcode, void *arg,
			       unsigned int nr_args)
{
	struct io_uring_probe *pr = arg;
	unsigned int n = fake->nr_ops ? (unsigned int)fake->nr_ops :
					IORING_OP_LAST;

	if (fd != FAKE_RING_FD)
		return -EBADF;
	if (opcode != IORING_REGISTER_PROBE)
		return -EINVAL;
	if (fake->probe_err)
		return fake->probe_err;
	if (n > nr_args)
		n = nr_args;
	pr->last_op = (uint8_t)(n - 1);
	pr->ops_len = (uint8_t)n;
	for (unsigned int i = 0; i < n; i++) {
		pr->ops[i].op = (uint8_t)i;
		pr->ops[i].flags = IO_URING_OP_SUPPORTED;
	}
	return 0;
}

static void fake_uring_close(int fd)
{
	(void)fd;
}

#define FAKE_PERF_FD 1001

static int fake_perf_open(struct perf_event_attr *attr, pid_t pid, int cpu,
			  int group_fd, unsigned long flags)
{
	(void)attr;
	(void)pid;
	(void)cpu;
	(void)group_fd;
	(void)flags;
	return fake->perf_err ? fake->perf_err : FAKE_PERF_FD;
}

static void fake_perf_close(int fd)
{
	(void)fd;
}

static const struct probe_sys fake_ops = {
	.cpuid = fake_cpuid,
	.uname = fake_uname,
	.uring_setup = fake_uring_setup,
	.uring_register = fake_uring_register,
	.uring_close = fake_uring_close,
	.perf_open = fake_perf_open,
	.perf_close = fake_perf_close,
};

struct json_object *probe_fixture(const char *name, const struct fake_sys *fs)
{
	static const struct fake_sys defaults;
	struct probe_opts opts = {
		.root = fixture_path(name),
		.work_dir = "/var/lib/fleetbench",
		.steal_window_ms = 0,
		.sys = &fake_ops,
	};
	struct json_object *report = NULL;
	int r;

	fake = fs ? fs : &defaults;
	r = probe_run(&opts, &report);
	if (r < 0) {
		fprintf(stderr, "probe_run(%s): %s\n", name, strerror(-r));
		return NULL;
	}
	return report;
}

struct json_object *probe_fixture_opts(const char *name,
				       const struct fake_sys *fs,
				       struct probe_opts *opts)
{
	static const struct fake_sys defaults;
	struct json_object *report = NULL;
	int r;

	if (name)
		opts->root = fixture_path(name);
	if (!opts->work_dir)
		opts->work_dir = "/var/lib/fleetbench";
	opts->sys = &fake_ops;
	fake = fs ? fs : &defaults;
	r = probe_run(opts, &report);
	if (r < 0) {
		fprintf(stderr, "probe_run(%s): %s\n", opts->root, strerror(-r));
		return NULL;
	}
	return report;
}

const char *const dmi_keys[NDMI] = {
	"sys_vendor",	"product_name",	 "product_version",   "board_vendor",
	"board_name",	"bios_vendor",	 "bios_version",      "chassis_vendor",
	"chassis_type", "chassis_type_name", "chassis_asset_tag",
};

bool jnull(struct json_object *root, const char *path)
{
	return !jget(root, path) && !strcmp(jstr(root, path), "");
}

struct json_object *jget(struct json_object *root, const char *path)
{
	char buf[512], *save = NULL;
	struct json_object *cur = root;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *tok = strtok_r(buf, ".", &save); tok && cur;
	     tok = strtok_r(NULL, ".", &save)) {
		char *br = strchr(tok, '[');

		if (br)
			*br = '\0';
		if (*tok && !json_object_object_get_ex(cur, tok, &cur))
			return NULL;
		while (br && cur) {
			char *end;
			long idx = strtol(br + 1, &end, 10);

			if (*end != ']' ||
			    !json_object_is_type(cur, json_type_array) ||
			    idx < 0 ||
			    (size_t)idx >= json_object_array_length(cur))
				return NULL;
			cur = json_object_array_get_idx(cur, (size_t)idx);
			br = strchr(end, '[');
		}
	}
	return cur;
}

/*
 * Keeps s in the next of JKEEP slots, freeing what was kept there JKEEP
 * calls ago: the values jstr() and jjoin() return are never cut short,
 * whatever their length (a kernel command line may pass 4 KiB), and a test
 * may hold a few of them at once, as it could when they were static.
 */
#define JKEEP 16

static const char *keep(char *s)
{
	static char *slots[JKEEP];
	static size_t next;

	free(slots[next]);
	slots[next] = s;
	next = (next + 1) % JKEEP;
	return s ? s : "<out of memory>";
}

const char *jstr(struct json_object *root, const char *path)
{
	struct json_object *v, *reason;
	char *s;

	v = jget(root, path);
	if (!v) {
		/* json-c returns NULL for both JSON null and a missing key. */
		struct json_object *parent;
		char ppath[512], *dot;

		snprintf(ppath, sizeof(ppath), "%s", path);
		dot = strrchr(ppath, '.');
		if (!dot)
			return json_object_object_get_ex(root, path, NULL) ?
				       "" :
				       "<missing>";
		*dot = '\0';
		parent = jget(root, ppath);
		return parent && json_object_object_get_ex(parent, dot + 1,
							    NULL) ?
			       "" :
			       "<missing>";
	}
	if (item_is_unknown(v) &&
	    json_object_object_get_ex(v, "unknown", &reason)) {
		if (asprintf(&s, "unknown (%s)",
			     json_object_get_string(reason)) < 0)
			s = NULL;
		return keep(s);
	}
	return keep(strdup(json_object_get_string(v)));
}

int64_t jint(struct json_object *root, const char *path)
{
	struct json_object *v = jget(root, path);

	if (!v || !json_object_is_type(v, json_type_int))
		return INT64_MIN;
	return json_object_get_int64(v);
}

bool jis(struct json_object *root, const char *path, json_type t)
{
	return json_object_is_type(jget(root, path), t);
}

size_t jlen(struct json_object *root, const char *path)
{
	struct json_object *v = jget(root, path);

	return json_object_is_type(v, json_type_array) ?
		       json_object_array_length(v) :
		       (size_t)-1;
}

size_t jkeys(struct json_object *root, const char *path)
{
	struct json_object *v = jget(root, path);

	return json_object_is_type(v, json_type_object) ?
		       (size_t)json_object_object_length(v) :
		       (size_t)-1;
}

const char *jat(struct json_object *root, const char *path, size_t i)
{
	char elem[512];

	snprintf(elem, sizeof(elem), "%s[%zu]", path, i);
	return jstr(root, elem);
}

const char *jjoin(struct json_object *root, const char *path)
{
	struct json_object *v = jget(root, path);
	char *s = NULL;
	size_t len = 0;
	FILE *f;

	if (!json_object_is_type(v, json_type_array))
		return "<none>";
	f = open_memstream(&s, &len);
	if (!f)
		return keep(NULL);
	for (size_t i = 0; i < json_object_array_length(v); i++)
		fprintf(f, "%s%s", i ? " " : "",
			json_object_get_string(json_object_array_get_idx(v, i)));
	fclose(f);
	return keep(s);
}

bool jdouble(struct json_object *root, const char *path, double *ret)
{
	struct json_object *v = jget(root, path);

	if (!json_object_is_type(v, json_type_double))
		return false;
	*ret = json_object_get_double(v);
	return true;
}
