/* SPDX-License-Identifier: MIT */
/*
 * The topology probe: its CPU list parser, the three fixture placements
 * (SMT siblings, separate cores, two sockets) field by field and as the
 * typed Probe, the unknown items of damaged trees, and the running
 * machine.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cleanup.h"
#include "fleetbench.pb-c.h"
#include "pbjson.h"
#include "probe_test.h"
#include "probe_topology.h"

#define CPU "sys/devices/system/cpu"

/* ---- the CPU list parser ---- */

static void check_list(const char *text, const char *want)
{
	_cleanup_free_ int *cpus = NULL;
	char buf[256];
	size_t n = 99;
	int r = topology_cpulist_parse(text, &cpus, &n);

	CHECK_(r == 0, "parse \"%s\": %d", text, r);
	if (r < 0)
		return;
	CHECK_EQ_INT(topology_cpulist_format(cpus, n, buf, sizeof(buf)),
		     (int)strlen(want));
	CHECK_(!strcmp(buf, want), "\"%s\" prints as \"%s\", expected \"%s\"",
	       text, buf, want);
}

static void check_bad_list(const char *text)
{
	int *cpus = (int *)&cpus;
	size_t n = 99;

	CHECK_(topology_cpulist_parse(text, &cpus, &n) == -EBADMSG,
	       "\"%s\" is not a CPU list", text);
	CHECK_(n == 99 && cpus == (int *)&cpus,
	       "\"%s\": the results are written only on success", text);
}

static void test_cpulist(void)
{
	static const char *const bad[] = {
		"x",	 "0-",	  "-1",	   "1-0",     "0,,1",  "0,",
		",0",	 "0 1",	  "0-1-2", "0:2",     "+1",    "0x1",
		"65536", "0-65536", "99999999999999999999", "1,a",
	};
	int cpus[] = { 0, 1, 2, 3, 5, 7, 8 };
	size_t n = 1;
	int *none = (int *)&n;
	char buf[64];

	check_list("0", "0");
	check_list("0-1\n", "0-1");
	check_list(" 0-3,8,10-11 ", "0-3,8,10-11");
	/* the kernel never prints "0,1", but the set is what counts */
	check_list("0,1", "0-1");
	check_list("3,0-1,1,2", "0-3");
	check_list("0-0", "0");
	check_list("65535", "65535");
	check_list("0,2,4", "0,2,4");
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		check_bad_list(bad[i]);

	/* no CPU: an empty list, nothing allocated */
	CHECK_OK(topology_cpulist_parse(" \n", &none, &n));
	CHECK(none == NULL && n == 0);

	CHECK_EQ_INT(topology_cpulist_format(cpus, ARRAY_SIZE(cpus), buf,
					     sizeof(buf)),
		     9);
	CHECK_EQ_STR(buf, "0-3,5,7-8");
	CHECK_EQ_INT(topology_cpulist_format(cpus, 0, buf, sizeof(buf)), 0);
	CHECK_EQ_STR(buf, "");
	/* "0-3,5,7-8" needs 10 bytes with its NUL */
	CHECK_EQ_INT(topology_cpulist_format(cpus, ARRAY_SIZE(cpus), buf, 9),
		     -ENOSPC);
	CHECK_EQ_INT(topology_cpulist_format(cpus, ARRAY_SIZE(cpus), buf, 10),
		     9);
	CHECK_EQ_INT(topology_cpulist_format(cpus, 0, buf, 0), -ENOSPC);
}

/* ---- the fixture trees ---- */

struct want_cache {
	int64_t level;
	const char *type;
	int64_t size_kb;
	const char *lists; /* shared_cpu_lists joined by spaces */
};

struct want {
	const char *tree;
	int64_t vcpus, threads, cores, sockets;
	const char *siblings; /* joined by spaces */
	struct want_cache caches[4];
	const char *placement;
};

static const struct want wants[] = {
	/* 2 vCPUs, the two hyperthreads of one core */
	{ "topology-smt", 2, 2, 1, 1, "0-1",
	  { { 1, "Data", 48, "0-1" },
	    { 1, "Instruction", 32, "0-1" },
	    { 2, "Unified", 2048, "0-1" },
	    { 3, "Unified", 107520, "0-1" } },
	  "threads=2 cores=1 sockets=1 smt=0-1 L1d=0-1 L1i=0-1 L2=0-1 L3=0-1" },
	/* 2 vCPUs on two cores that share the L3; cpu2 and cpu3 offline */
	{ "topology-cores", 2, 1, 2, 1, "0 1",
	  { { 1, "Data", 32, "0 1" },
	    { 1, "Instruction", 32, "0 1" },
	    { 2, "Unified", 512, "0 1" },
	    { 3, "Unified", 32768, "0-1" } },
	  "threads=1 cores=2 sockets=1 smt=0/1 L1d=0/1 L1i=0/1 L2=0/1 L3=0-1" },
	/* 4 vCPUs, 2 sockets of 2 cores (core_id 0 and 1 in each), an L3
	 * per socket */
	{ "topology-sockets", 4, 1, 4, 2, "0 1 2 3",
	  { { 1, "Data", 32, "0 1 2 3" },
	    { 1, "Instruction", 32, "0 1 2 3" },
	    { 2, "Unified", 1024, "0 1 2 3" },
	    { 3, "Unified", 16384, "0-1 2-3" } },
	  "threads=1 cores=4 sockets=2 smt=0/1/2/3 L1d=0/1/2/3 L1i=0/1/2/3 L2=0/1/2/3 L3=0-1/2-3" },
};

/* "a b c" of a repeated string field, as jjoin() joins a JSON array. */
static const char *join(char **s, size_t n)
{
	static char buf[512];
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && len < sizeof(buf); i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s",
					i ? " " : "", s[i]);
	return buf;
}

/* The report as the typed Probe (what the agent sends): every field as in
 * the JSON, nothing unknown, and it walks back to the same JSON. */
static void check_typed(struct json_object *r, const struct want *w)
{
	ProtobufCMessage *m = NULL;
	Fleetbench__ProbeTopology *t;
	struct json_object *back, *sec, *sec_back;
	char why[PBJSON_ERR_LEN] = "";

	CHECK_(pbjson_to_message(&fleetbench__probe__descriptor, r, &m, why) ==
		       0,
	       "%s: %s", w->tree, why);
	if (!m)
		return;
	t = ((Fleetbench__Probe *)m)->topology;
	CHECK(t != NULL);
	if (t) {
		CHECK(t->has_vcpus && t->vcpus == w->vcpus);
		CHECK(t->has_threads_per_core &&
		      t->threads_per_core == w->threads);
		CHECK(t->has_cores && t->cores == w->cores);
		CHECK(t->has_sockets && t->sockets == w->sockets);
		CHECK_EQ_STR(join(t->thread_siblings, t->n_thread_siblings),
			     w->siblings);
		CHECK_EQ_INT(t->n_caches, 4);
		for (size_t i = 0; i < t->n_caches && i < 4; i++) {
			const Fleetbench__ProbeCacheLevel *c = t->caches[i];

			CHECK(c->has_level && c->level == w->caches[i].level);
			CHECK_EQ_STR(c->type, w->caches[i].type);
			CHECK(c->has_size_kb &&
			      c->size_kb == w->caches[i].size_kb);
			CHECK_EQ_STR(join(c->shared_cpu_lists,
					  c->n_shared_cpu_lists),
				     w->caches[i].lists);
			CHECK_EQ_INT(c->n_unknown, 0);
		}
		CHECK_EQ_STR(t->placement, w->placement);
		CHECK_EQ_INT(t->n_unknown, 0);
	}
	back = pbjson_from_message(m);
	CHECK(back && json_object_object_get_ex(back, "topology", &sec_back) &&
	      json_object_object_get_ex(r, "topology", &sec) &&
	      json_object_equal(sec, sec_back));
	json_object_put(back);
	protobuf_c_message_free_unpacked(m, NULL);
}

static void test_fixture(const struct want *w)
{
	struct json_object *r = probe_fixture(w->tree, NULL);
	char path[64];

	CHECK_(r != NULL, "%s: probe_run failed", w->tree);
	if (!r)
		return;
	printf("%s: %s\n", w->tree, jstr(r, "topology.placement"));
	CHECK_EQ_INT(jkeys(r, "topology"), 7);
	CHECK_EQ_INT(jint(r, "topology.vcpus"), w->vcpus);
	CHECK_EQ_INT(jint(r, "topology.threads_per_core"), w->threads);
	CHECK_EQ_INT(jint(r, "topology.cores"), w->cores);
	CHECK_EQ_INT(jint(r, "topology.sockets"), w->sockets);
	CHECK_EQ_STR(jjoin(r, "topology.thread_siblings"), w->siblings);
	CHECK_EQ_INT(jlen(r, "topology.caches"), 4);
	for (int i = 0; i < 4; i++) {
#define AT(key) (snprintf(path, sizeof(path), "topology.caches[%d]%s", i, key), path)
		CHECK_EQ_INT(jkeys(r, AT("")), 4);
		CHECK_EQ_INT(jint(r, AT(".level")), w->caches[i].level);
		CHECK_EQ_STR(jstr(r, AT(".type")), w->caches[i].type);
		CHECK_EQ_INT(jint(r, AT(".size_kb")), w->caches[i].size_kb);
		CHECK_EQ_STR(jjoin(r, AT(".shared_cpu_lists")),
			     w->caches[i].lists);
#undef AT
	}
	CHECK_EQ_STR(jstr(r, "topology.placement"), w->placement);
	check_typed(r, w);
	json_object_put(r);
}

/* ---- trees built here: what cannot be read is unknown ---- */

/* One vCPU's topology files. */
static void put_cpu(const char *root, int cpu, const char *siblings,
		    const char *core, const char *pkg)
{
	char rel[128];

	snprintf(rel, sizeof(rel), CPU "/cpu%d/topology/thread_siblings_list",
		 cpu);
	if (siblings)
		tree_put(root, rel, siblings, -1);
	snprintf(rel, sizeof(rel), CPU "/cpu%d/topology/core_id", cpu);
	if (core)
		tree_put(root, rel, core, -1);
	snprintf(rel, sizeof(rel), CPU "/cpu%d/topology/physical_package_id",
		 cpu);
	if (pkg)
		tree_put(root, rel, pkg, -1);
}

/* cache/index<idx> of one vCPU. */
static void put_cache(const char *root, int cpu, int idx, const char *level,
		      const char *type, const char *size, const char *shared)
{
	const char *files[] = { "level", "type", "size", "shared_cpu_list" };
	const char *text[] = { level, type, size, shared };
	char rel[128];

	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		if (!text[i])
			continue;
		snprintf(rel, sizeof(rel), CPU "/cpu%d/cache/index%d/%s", cpu,
			 idx, files[i]);
		tree_put(root, rel, text[i], -1);
	}
}

static struct json_object *probe_tree(const char *root)
{
	struct probe_opts opts = { .root = root };

	return probe_fixture_opts(NULL, NULL, &opts);
}

/* Two cores, each with an L1d of its own and a shared L2, in reading
 * order index0 = L2, index1 = L1d (the report sorts by level and type). */
static void put_two_cores(const char *root, const char *size1)
{
	tree_put(root, CPU "/online", "0-1\n", -1);
	put_cpu(root, 0, "0\n", "0\n", "0\n");
	put_cpu(root, 1, "1\n", "1\n", "0\n");
	put_cache(root, 0, 0, "2\n", "Unified\n", "1024K\n", "0-1\n");
	put_cache(root, 0, 1, "1\n", "Data\n", "32K\n", "0\n");
	put_cache(root, 1, 0, "2\n", "Unified\n", "1024K\n", "0-1\n");
	put_cache(root, 1, 1, "1\n", "Data\n", size1, "1\n");
}

static void test_unknown(void)
{
	static const char *const all[] = {
		"vcpus",	   "threads_per_core", "cores",	    "sockets",
		"thread_siblings", "caches",	       "placement",
	};
	struct json_object *r;
	char *root, key[64];

	/* no online list: nothing can be told */
	root = tree_new();
	tree_put(root, CPU "/possible", "0-1\n", -1);
	r = probe_tree(root);
	CHECK(r != NULL);
	for (size_t i = 0; r && i < ARRAY_SIZE(all); i++) {
		snprintf(key, sizeof(key), "topology.%s", all[i]);
		CHECK_EQ_STR(jstr(r, key),
			     "unknown (absent: /sys/devices/system/cpu/online)");
	}
	json_object_put(r);
	tree_put(root, CPU "/online", "0-\n", -1);
	r = probe_tree(root);
	for (size_t i = 0; r && i < ARRAY_SIZE(all); i++) {
		snprintf(key, sizeof(key), "topology.%s", all[i]);
		CHECK_EQ_STR(jstr(r, key),
			     "unknown (malformed: /sys/devices/system/cpu/online is not a CPU list)");
	}
	json_object_put(r);
	tree_free(root);

	/* the caches in sysfs order L2, L1d: reported L1d, L2 */
	root = tree_new();
	put_two_cores(root, "32K\n");
	r = probe_tree(root);
	CHECK_EQ_INT(jint(r, "topology.caches[0].level"), 1);
	CHECK_EQ_STR(jstr(r, "topology.caches[0].type"), "Data");
	CHECK_EQ_INT(jint(r, "topology.caches[1].level"), 2);
	CHECK_EQ_STR(jstr(r, "topology.placement"),
		     "threads=1 cores=2 sockets=1 smt=0/1 L1d=0/1 L2=0-1");
	json_object_put(r);

	/* the vCPUs disagree on a size: that size is unknown, the placement
	 * (which has no sizes) is not */
	put_cache(root, 1, 1, NULL, NULL, "48K\n", NULL);
	r = probe_tree(root);
	CHECK_EQ_STR(jstr(r, "topology.caches[0].size_kb"),
		     "unknown (varies between vCPUs: 32 KiB on cpu0, 48 KiB on cpu1)");
	CHECK_EQ_INT(jint(r, "topology.caches[1].size_kb"), 1024);
	CHECK_EQ_STR(jstr(r, "topology.placement"),
		     "threads=1 cores=2 sockets=1 smt=0/1 L1d=0/1 L2=0-1");
	json_object_put(r);

	/* a size that is no size, a type that is empty */
	put_cache(root, 1, 1, NULL, NULL, "32 KB\n", NULL);
	r = probe_tree(root);
	CHECK_EQ_STR(jstr(r, "topology.caches"),
		     "unknown (malformed: /sys/devices/system/cpu/cpu1/cache/index1/size is not a size)");
	CHECK_EQ_STR(jstr(r, "topology.placement"),
		     "unknown (malformed: /sys/devices/system/cpu/cpu1/cache/index1/size is not a size)");
	CHECK_EQ_STR(jjoin(r, "topology.thread_siblings"), "0 1");
	json_object_put(r);
	put_cache(root, 1, 1, NULL, "\n", "32K\n", NULL);
	r = probe_tree(root);
	CHECK_EQ_STR(jstr(r, "topology.caches"),
		     "unknown (malformed: /sys/devices/system/cpu/cpu1/cache/index1/type is empty)");
	json_object_put(r);
	tree_free(root);

	/* a core_id that is no number: cores unknown, sockets not */
	root = tree_new();
	put_two_cores(root, "32K\n");
	put_cpu(root, 1, NULL, "one\n", NULL);
	r = probe_tree(root);
	CHECK_EQ_INT(jint(r, "topology.vcpus"), 2);
	CHECK_EQ_INT(jint(r, "topology.threads_per_core"), 1);
	CHECK_EQ_STR(jstr(r, "topology.cores"),
		     "unknown (malformed: /sys/devices/system/cpu/cpu1/topology/core_id is not an integer)");
	CHECK_EQ_INT(jint(r, "topology.sockets"), 1);
	CHECK_EQ_INT(jlen(r, "topology.caches"), 2);
	CHECK_EQ_STR(jstr(r, "topology.placement"),
		     "unknown (malformed: /sys/devices/system/cpu/cpu1/topology/core_id is not an integer)");
	json_object_put(r);
	tree_free(root);

	/* a sibling list that is none, a package that is absent */
	root = tree_new();
	put_two_cores(root, "32K\n");
	put_cpu(root, 1, "1-0\n", NULL, NULL);
	{
		char path[PATH_MAX];

		snprintf(path, sizeof(path),
			 "%s/" CPU "/cpu0/topology/physical_package_id", root);
		CHECK_OK(unlink(path) < 0 ? -errno : 0);
	}
	r = probe_tree(root);
	CHECK_EQ_STR(jstr(r, "topology.thread_siblings"),
		     "unknown (malformed: /sys/devices/system/cpu/cpu1/topology/thread_siblings_list is not a CPU list)");
	CHECK_EQ_STR(jstr(r, "topology.threads_per_core"),
		     "unknown (malformed: /sys/devices/system/cpu/cpu1/topology/thread_siblings_list is not a CPU list)");
	CHECK_EQ_STR(jstr(r, "topology.sockets"),
		     "unknown (absent: /sys/devices/system/cpu/cpu0/topology/physical_package_id)");
	CHECK_EQ_STR(jstr(r, "topology.cores"),
		     "unknown (absent: /sys/devices/system/cpu/cpu0/topology/physical_package_id)");
	CHECK_EQ_STR(jstr(r, "topology.placement"),
		     "unknown (malformed: /sys/devices/system/cpu/cpu1/topology/thread_siblings_list is not a CPU list)");
	json_object_put(r);
	/* package_id stands in for physical_package_id */
	tree_put(root, CPU "/cpu0/topology/package_id", "0\n", -1);
	put_cpu(root, 1, "1\n", NULL, NULL);
	r = probe_tree(root);
	CHECK_EQ_INT(jint(r, "topology.sockets"), 1);
	CHECK_EQ_STR(jstr(r, "topology.placement"),
		     "threads=1 cores=2 sockets=1 smt=0/1 L1d=0/1 L2=0-1");
	json_object_put(r);
	tree_free(root);

	/* no cache directory anywhere (a guest told nothing of its caches,
	 * as Firecracker's): caches absent, the placement without them */
	root = tree_new();
	tree_put(root, CPU "/online", "0-1\n", -1);
	put_cpu(root, 0, "0-1\n", "0\n", "0\n");
	put_cpu(root, 1, "0-1\n", "0\n", "0\n");
	r = probe_tree(root);
	CHECK_EQ_STR(jstr(r, "topology.caches"), "unknown (absent)");
	CHECK_EQ_STR(jstr(r, "topology.placement"),
		     "threads=2 cores=1 sockets=1 smt=0-1");
	json_object_put(r);
	/* a cache directory on cpu0 only: which is missing is said */
	put_cache(root, 0, 0, "1\n", "Data\n", "32K\n", "0-1\n");
	r = probe_tree(root);
	CHECK_EQ_STR(jstr(r, "topology.caches"),
		     "unknown (absent: /sys/devices/system/cpu/cpu1/cache)");
	CHECK_EQ_STR(jstr(r, "topology.placement"),
		     "unknown (absent: /sys/devices/system/cpu/cpu1/cache)");
	CHECK_EQ_INT(jint(r, "topology.threads_per_core"), 2);
	json_object_put(r);
	tree_free(root);
}

/* Two placements, and the same one twice: the line tells them apart. */
static void test_placement_equal(void)
{
	struct json_object *a = probe_fixture("topology-smt", NULL);
	struct json_object *b = probe_fixture("topology-smt", NULL);
	struct json_object *c = probe_fixture("topology-cores", NULL);
	char pa[256];

	CHECK(a && b && c);
	if (a && b && c) {
		snprintf(pa, sizeof(pa), "%s", jstr(a, "topology.placement"));
		CHECK_EQ_STR(jstr(b, "topology.placement"), pa);
		CHECK(strcmp(jstr(c, "topology.placement"), pa) != 0);
	}
	json_object_put(a);
	json_object_put(b);
	json_object_put(c);
}

/* ---- the running machine ---- */

static void test_real(void)
{
	struct probe_opts opts = { .root = "/", .work_dir = "/var/tmp" };
	struct json_object *r = NULL, *r2 = NULL;
	_cleanup_free_ char *online = NULL;
	_cleanup_free_ int *cpus = NULL;
	long onln = sysconf(_SC_NPROCESSORS_ONLN);
	size_t n = 0, covered = 0, nsib, ncache;
	char head[128];
	FILE *f;

	f = fopen("/sys/devices/system/cpu/online", "re");
	CHECK(f != NULL);
	if (f) {
		size_t cap = 0;

		CHECK(getline(&online, &cap, f) > 0);
		fclose(f);
	}
	CHECK_OK(online ? topology_cpulist_parse(online, &cpus, &n) : -EIO);
	CHECK_OK(probe_run(&opts, &r));
	CHECK_OK(probe_run(&opts, &r2));
	if (!r || !r2)
		goto out;
	printf("real machine: %zu vCPUs online, placement %s, caches %s\n", n,
	       jstr(r, "topology.placement"),
	       jis(r, "topology.caches", json_type_array) ? "listed" :
							    jstr(r, "topology.caches"));
	CHECK_EQ_INT(jint(r, "topology.vcpus"), (int64_t)n);
	CHECK_EQ_INT(jint(r, "topology.vcpus"), onln);
	/* every sibling list names online vCPUs, and together they name
	 * each once */
	nsib = jis(r, "topology.thread_siblings", json_type_array) ?
		       jlen(r, "topology.thread_siblings") :
		       0;
	ncache = jis(r, "topology.caches", json_type_array) ?
			 jlen(r, "topology.caches") :
			 0;
	for (size_t i = 0; i < nsib; i++) {
		_cleanup_free_ int *sib = NULL;
		size_t k = 0;

		CHECK_OK(topology_cpulist_parse(
			jat(r, "topology.thread_siblings", i), &sib, &k));
		CHECK(k >= 1 &&
		      (int64_t)k <= jint(r, "topology.threads_per_core"));
		covered += k;
	}
	if (jis(r, "topology.thread_siblings", json_type_array))
		CHECK_EQ_INT(covered, n);
	if (jis(r, "topology.cores", json_type_int)) {
		int64_t cores = jint(r, "topology.cores");
		int64_t threads = jint(r, "topology.threads_per_core");
		int64_t sockets = jint(r, "topology.sockets");

		CHECK(cores >= 1 && sockets >= 1 && sockets <= cores);
		CHECK(cores * threads >= (int64_t)n && cores <= (int64_t)n);
		snprintf(head, sizeof(head),
			 "threads=%" PRId64 " cores=%" PRId64
			 " sockets=%" PRId64 " smt=",
			 threads, cores, sockets);
		CHECK_(!strncmp(jstr(r, "topology.placement"), head,
				strlen(head)),
		       "placement \"%s\" starts with \"%s\"",
		       jstr(r, "topology.placement"), head);
	}
	for (size_t i = 0; i < ncache; i++) {
		char key[64];

		snprintf(key, sizeof(key), "topology.caches[%zu].level", i);
		CHECK(jint(r, key) >= 1);
	}
	/* the same machine twice: the same placement */
	CHECK_EQ_STR(jstr(r2, "topology.placement"),
		     jstr(r, "topology.placement"));
out:
	json_object_put(r);
	json_object_put(r2);
}

int main(void)
{
	test_cpulist();
	for (size_t i = 0; i < ARRAY_SIZE(wants); i++)
		test_fixture(&wants[i]);
	test_unknown();
	test_placement_equal();
	test_real();
	return check_summary();
}
