/* SPDX-License-Identifier: MIT */
/* vCPU topology: SMT siblings, cores, sockets and who shares each cache. */
#include "probe_topology.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "cleanup.h"
#include "codec.h"
#include "probe_modules.h"

#define CPU_DIR "/sys/devices/system/cpu"
#define MAX_INDEX 64 /* cache/indexN of one vCPU: 4 to 6 on real hosts */
#define TYPE_LEN 32 /* "Data", "Instruction", "Unified" */

/* ---- CPU lists ---- */

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

/* A decimal number at *p up to TOPOLOGY_MAX_CPU; moves *p past it. */
static int parse_cpu(const char **p, long *ret)
{
	const char *s = *p;
	long v = 0;

	if (*s < '0' || *s > '9')
		return -EBADMSG;
	for (; *s >= '0' && *s <= '9'; s++) {
		v = v * 10 + (*s - '0');
		if (v > TOPOLOGY_MAX_CPU)
			return -EBADMSG;
	}
	*p = s;
	*ret = v;
	return 0;
}

int topology_cpulist_parse(const char *text, int **ret, size_t *ret_n)
{
	/* a bitmap: a list naming a CPU twice or in any order costs no more
	 * than the CPUs it names */
	_cleanup_free_ uint64_t *bits = NULL;
	_cleanup_free_ int *cpus = NULL;
	const char *p = text, *end;
	size_t n = 0, words = TOPOLOGY_MAX_CPU / 64 + 1;
	long lo, hi, max = -1;

	while (is_space(*p))
		p++;
	end = p + strlen(p);
	while (end > p && is_space(end[-1]))
		end--;
	if (p == end) {
		*ret = NULL;
		*ret_n = 0;
		return 0;
	}
	bits = calloc(words, sizeof(*bits));
	if (!bits)
		return -ENOMEM;
	for (;;) {
		if (parse_cpu(&p, &lo) < 0)
			return -EBADMSG;
		hi = lo;
		if (p < end && *p == '-') {
			p++;
			if (parse_cpu(&p, &hi) < 0 || hi < lo)
				return -EBADMSG;
		}
		for (long c = lo; c <= hi; c++)
			bits[c / 64] |= UINT64_C(1) << (c % 64);
		if (hi > max)
			max = hi;
		if (p == end)
			break;
		if (*p != ',')
			return -EBADMSG;
		p++;
	}
	for (long c = 0; c <= max; c++)
		n += (bits[c / 64] >> (c % 64)) & 1;
	cpus = malloc(n * sizeof(*cpus));
	if (!cpus)
		return -ENOMEM;
	n = 0;
	for (long c = 0; c <= max; c++)
		if ((bits[c / 64] >> (c % 64)) & 1)
			cpus[n++] = (int)c;
	*ret = TAKE_PTR(cpus);
	*ret_n = n;
	return 0;
}

int topology_cpulist_format(const int *cpus, size_t n, char *buf, size_t size)
{
	size_t len = 0;

	if (!size)
		return -ENOSPC;
	buf[0] = '\0';
	for (size_t i = 0; i < n;) {
		size_t j = i;
		int w;

		while (j + 1 < n && cpus[j + 1] == cpus[j] + 1)
			j++;
		if (j > i)
			w = snprintf(buf + len, size - len, "%s%d-%d",
				     i ? "," : "", cpus[i], cpus[j]);
		else
			w = snprintf(buf + len, size - len, "%s%d",
				     i ? "," : "", cpus[i]);
		if (w < 0 || (size_t)w >= size - len)
			return -ENOSPC;
		len += (size_t)w;
		i = j + 1;
	}
	return (int)len;
}

/* ---- what the vCPUs say ---- */

/* Why an item cannot be told: the first reason found; "" while it can. */
struct why {
	char text[256];
};

static void why_set(struct why *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void why_set(struct why *w, const char *fmt, ...)
{
	va_list ap;

	if (w->text[0])
		return;
	va_start(ap, fmt);
	vsnprintf(w->text, sizeof(w->text), fmt, ap);
	va_end(ap);
}

/* Distinct strings in the order they were first added. */
struct strset {
	char **s;
	size_t n, cap;
};

static int strset_add(struct strset *set, const char *s)
{
	for (size_t i = 0; i < set->n; i++)
		if (!strcmp(set->s[i], s))
			return 0;
	if (ARRAY_RESERVE(set->s, set->cap, set->n + 1) < 0)
		return -ENOMEM;
	set->s[set->n] = strdup(s);
	if (!set->s[set->n])
		return -ENOMEM;
	set->n++;
	return 0;
}

static void strset_release(struct strset *set)
{
	for (size_t i = 0; i < set->n; i++)
		free(set->s[i]);
	free(set->s);
}

/* One level and type of cache over all vCPUs. */
struct cache_group {
	int64_t level;
	char type[TYPE_LEN];
	int64_t size_kb;
	int first_cpu; /* the vCPU whose size_kb it is */
	struct why size_why; /* the vCPUs disagree on the size */
	struct strset lists; /* distinct shared_cpu_list, canonical */
};

struct topo {
	const int *cpus; /* the online vCPUs, ascending */
	size_t n;
	struct strset siblings; /* distinct thread_siblings_list */
	size_t max_threads; /* CPUs in the largest of them */
	int64_t *core, *pkg; /* per online vCPU */
	struct why sib_why, core_why, pkg_why, cache_why;
	struct cache_group *caches;
	size_t n_caches, cap_caches;
	size_t no_cache_dir; /* vCPUs without a cache directory */
	struct why no_cache_why; /* the first of them */
};

/*
 * The one-line text of root/path in *ret (caller frees); on failure its
 * reason goes to w and the -errno is returned (-ENOMEM is the caller's).
 */
static int read_text(struct probe_ctx *ctx, const char *path, char **ret,
		     struct why *w)
{
	const char *reason = NULL;
	int r = probe_read_text(ctx, path, true, ret, &reason);

	if (r == -EBADMSG)
		why_set(w, "malformed: %s %s", path, reason);
	else if (r < 0 && r != -ENOMEM)
		why_set(w, "%s: %s", probe_reason(r), path);
	return r;
}

static int read_i64(struct probe_ctx *ctx, const char *path, int64_t *ret,
		    struct why *w)
{
	_cleanup_free_ char *text = NULL;
	int r = read_text(ctx, path, &text, w);

	if (r < 0)
		return r;
	if (probe_parse_i64(text, ret) < 0) {
		why_set(w, "malformed: %s is not an integer", path);
		return -EBADMSG;
	}
	return 0;
}

/*
 * A CPU list file as the kernel prints it ("0-1"), in *ret (caller frees),
 * with the number of CPUs it names in *ret_count.
 */
static int read_cpulist(struct probe_ctx *ctx, const char *path, char **ret,
			size_t *ret_count, struct why *w)
{
	_cleanup_free_ char *text = NULL, *canon = NULL;
	_cleanup_free_ int *cpus = NULL;
	size_t n, size;
	int r = read_text(ctx, path, &text, w);

	if (r < 0)
		return r;
	r = topology_cpulist_parse(text, &cpus, &n);
	if (r == -ENOMEM)
		return r;
	if (r < 0 || n == 0) {
		why_set(w, "malformed: %s is not a CPU list", path);
		return -EBADMSG;
	}
	/* "65535," is the longest entry */
	size = n * 7 + 1;
	canon = malloc(size);
	if (!canon)
		return -ENOMEM;
	r = topology_cpulist_format(cpus, n, canon, size);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(canon);
	*ret_count = n;
	return 0;
}

/* thread_siblings_list, core_id and the package of one vCPU. */
static int read_cpu_topology(struct probe_ctx *ctx, struct topo *t, size_t i)
{
	_cleanup_free_ char *list = NULL;
	char path[256];
	size_t count;
	int cpu = t->cpus[i], r;

	snprintf(path, sizeof(path), CPU_DIR "/cpu%d/topology/thread_siblings_list",
		 cpu);
	r = read_cpulist(ctx, path, &list, &count, &t->sib_why);
	if (r == -ENOMEM)
		return r;
	if (r == 0) {
		if (strset_add(&t->siblings, list) < 0)
			return -ENOMEM;
		if (count > t->max_threads)
			t->max_threads = count;
	}

	snprintf(path, sizeof(path), CPU_DIR "/cpu%d/topology/core_id", cpu);
	r = read_i64(ctx, path, &t->core[i], &t->core_why);
	if (r == -ENOMEM)
		return r;

	/* physical_package_id; package_id where a kernel names it so */
	snprintf(path, sizeof(path),
		 CPU_DIR "/cpu%d/topology/physical_package_id", cpu);
	if (!probe_exists(ctx, path)) {
		char alt[256];

		snprintf(alt, sizeof(alt), CPU_DIR "/cpu%d/topology/package_id",
			 cpu);
		if (probe_exists(ctx, alt))
			memcpy(path, alt, sizeof(path));
	}
	r = read_i64(ctx, path, &t->pkg[i], &t->pkg_why);
	return r == -ENOMEM ? r : 0;
}

/* "index<N>" gives N; -1 for anything else. */
static long index_number(const char *name)
{
	const char *p = name + strlen("index");
	long v;

	if (strncmp(name, "index", strlen("index")) || !*p)
		return -1;
	if (parse_cpu(&p, &v) < 0 || *p)
		return -1;
	return v;
}

static int long_cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

/* "32K" (what the kernel prints), also "1M", in KiB. */
static int parse_size_kb(const char *s, int64_t *ret)
{
	char *end;
	long long v;

	if (*s < '0' || *s > '9')
		return -EBADMSG;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || v < 0 || v > INT64_MAX / 1024)
		return -EBADMSG;
	if (!strcmp(end, "K"))
		*ret = v;
	else if (!strcmp(end, "M"))
		*ret = v * 1024;
	else
		return -EBADMSG;
	return 0;
}

static struct cache_group *cache_group(struct topo *t, int64_t level,
				       const char *type)
{
	struct cache_group *g;

	for (size_t i = 0; i < t->n_caches; i++)
		if (t->caches[i].level == level &&
		    !strcmp(t->caches[i].type, type))
			return &t->caches[i];
	if (ARRAY_RESERVE(t->caches, t->cap_caches, t->n_caches + 1) < 0)
		return NULL;
	g = &t->caches[t->n_caches++];
	*g = (struct cache_group){ .level = level, .size_kb = -1 };
	snprintf(g->type, sizeof(g->type), "%s", type);
	return g;
}

/* One cache/indexN of one vCPU into its group. */
static int read_cache_index(struct probe_ctx *ctx, struct topo *t, int cpu,
			    long idx)
{
	_cleanup_free_ char *type = NULL, *size = NULL, *list = NULL;
	struct cache_group *g;
	char dir[128], path[256];
	const char *ty;
	int64_t level, kb;
	size_t count;
	int r;

	snprintf(dir, sizeof(dir), CPU_DIR "/cpu%d/cache/index%ld", cpu, idx);
	snprintf(path, sizeof(path), "%s/level", dir);
	r = read_i64(ctx, path, &level, &t->cache_why);
	if (r < 0)
		return r == -ENOMEM ? r : 0;
	snprintf(path, sizeof(path), "%s/type", dir);
	r = read_text(ctx, path, &type, &t->cache_why);
	if (r < 0)
		return r == -ENOMEM ? r : 0;
	ty = probe_trim(type);
	if (strlen(ty) >= TYPE_LEN || !probe_printable(ty, strlen(ty))) {
		why_set(&t->cache_why, "malformed: %s is not a cache type",
			path);
		return 0;
	}
	snprintf(path, sizeof(path), "%s/size", dir);
	r = read_text(ctx, path, &size, &t->cache_why);
	if (r < 0)
		return r == -ENOMEM ? r : 0;
	if (parse_size_kb(probe_trim(size), &kb) < 0) {
		why_set(&t->cache_why, "malformed: %s is not a size", path);
		return 0;
	}
	snprintf(path, sizeof(path), "%s/shared_cpu_list", dir);
	r = read_cpulist(ctx, path, &list, &count, &t->cache_why);
	if (r < 0)
		return r == -ENOMEM ? r : 0;

	g = cache_group(t, level, ty);
	if (!g)
		return -ENOMEM;
	if (g->size_kb < 0) {
		g->size_kb = kb;
		g->first_cpu = cpu;
	} else if (g->size_kb != kb) {
		why_set(&g->size_why,
			"varies between vCPUs: %" PRId64 " KiB on cpu%d, %" PRId64
			" KiB on cpu%d",
			g->size_kb, g->first_cpu, kb, cpu);
	}
	return strset_add(&g->lists, list);
}

/* Every cache/indexN of one vCPU, in index order. */
static int read_cpu_caches(struct probe_ctx *ctx, struct topo *t, int cpu)
{
	_cleanup_closedir_ DIR *d = NULL;
	long idx[MAX_INDEX];
	struct dirent *de;
	char path[128];
	size_t n = 0;

	snprintf(path, sizeof(path), CPU_DIR "/cpu%d/cache", cpu);
	d = probe_opendir(ctx, path);
	if (!d && (errno == ENOENT || errno == ENOTDIR)) {
		t->no_cache_dir++;
		why_set(&t->no_cache_why, "absent: %s", path);
		return 0;
	}
	if (!d) {
		why_set(&t->cache_why, "%s: %s", probe_reason(-errno), path);
		return 0;
	}
	while ((de = readdir(d))) {
		long v = index_number(de->d_name);

		if (v < 0)
			continue;
		if (n == MAX_INDEX) {
			why_set(&t->cache_why, "more than %d caches in %s",
				MAX_INDEX, path);
			return 0;
		}
		idx[n++] = v;
	}
	qsort(idx, n, sizeof(idx[0]), long_cmp);
	for (size_t i = 0; i < n; i++) {
		int r = read_cache_index(ctx, t, cpu, idx[i]);

		if (r < 0)
			return r;
	}
	return 0;
}

static int i64_pair_cmp(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;

	if (x[0] != y[0])
		return (x[0] > y[0]) - (x[0] < y[0]);
	return (x[1] > y[1]) - (x[1] < y[1]);
}

/* Distinct (a[i], b[i]) pairs; b NULL: distinct a[i]. -ENOMEM. */
static int64_t count_distinct(const int64_t *a, const int64_t *b, size_t n)
{
	_cleanup_free_ int64_t *pairs = malloc(2 * n * sizeof(int64_t));
	int64_t distinct = 0;

	if (!pairs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		pairs[2 * i] = a[i];
		pairs[2 * i + 1] = b ? b[i] : 0;
	}
	qsort(pairs, n, 2 * sizeof(int64_t), i64_pair_cmp);
	for (size_t i = 0; i < n; i++)
		if (!i || i64_pair_cmp(&pairs[2 * i], &pairs[2 * (i - 1)]))
			distinct++;
	return distinct;
}

static int group_cmp(const void *a, const void *b)
{
	const struct cache_group *x = a, *y = b;

	if (x->level != y->level)
		return (x->level > y->level) - (x->level < y->level);
	return strcmp(x->type, y->type); /* Data, Instruction, Unified */
}

/* "L1d", "L1i", "L2" (Unified); another type by its name: "L1-Other". */
static void cache_name(const struct cache_group *g, char *buf, size_t size)
{
	if (!strcmp(g->type, "Data"))
		snprintf(buf, size, "L%" PRId64 "d", g->level);
	else if (!strcmp(g->type, "Instruction"))
		snprintf(buf, size, "L%" PRId64 "i", g->level);
	else if (!strcmp(g->type, "Unified"))
		snprintf(buf, size, "L%" PRId64, g->level);
	else
		snprintf(buf, size, "L%" PRId64 "-%s", g->level, g->type);
}

/* Appends " key=" and the strings of set joined by '/' to f. */
static void put_lists(FILE *f, const char *key, const struct strset *set)
{
	fprintf(f, " %s=", key);
	for (size_t i = 0; i < set->n; i++)
		fprintf(f, "%s%s", i ? "/" : "", set->s[i]);
}

/*
 * The canonical line: "threads=2 cores=1 sockets=1 smt=0-1 L1d=0-1 L1i=0-1
 * L2=0-1 L3=0-1". Every part is derived from what the kernel says in an
 * order that does not depend on the order it was read in (vCPUs and
 * caches ascending), so two runs give the same line exactly when they see
 * the same placement.
 */
static int placement(const struct topo *t, int64_t cores, int64_t sockets,
		     bool with_caches, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
	fprintf(f, "threads=%zu cores=%" PRId64 " sockets=%" PRId64,
		t->max_threads, cores, sockets);
	put_lists(f, "smt", &t->siblings);
	for (size_t i = 0; with_caches && i < t->n_caches; i++) {
		char name[TYPE_LEN + 32];

		cache_name(&t->caches[i], name, sizeof(name));
		put_lists(f, name, &t->caches[i].lists);
	}
	if (fclose(f) != 0 || !buf)
		return -ENOMEM;
	*ret = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

static int emit_caches(struct topo *t, struct json_object *out)
{
	struct json_object *arr = item_array(out, "caches");

	if (!arr)
		return -ENOMEM;
	for (size_t i = 0; i < t->n_caches; i++) {
		const struct cache_group *g = &t->caches[i];
		struct json_object *o = item_append_object(arr), *lists;

		if (!o)
			return -ENOMEM;
		item_i64(o, "level", g->level);
		item_str(o, "type", g->type);
		if (g->size_why.text[0])
			item_unknown(o, "size_kb", "%s", g->size_why.text);
		else
			item_i64(o, "size_kb", g->size_kb);
		lists = item_array(o, "shared_cpu_lists");
		if (!lists)
			return -ENOMEM;
		for (size_t k = 0; k < g->lists.n; k++)
			if (item_append_str(lists, g->lists.s[k]) < 0)
				return -ENOMEM;
	}
	return 0;
}

static int emit(struct topo *t, struct json_object *out)
{
	const char *cache_why = t->cache_why.text[0] ? t->cache_why.text :
				t->no_cache_dir == t->n ? "absent" :
				t->no_cache_dir ? t->no_cache_why.text :
						  NULL;
	/* without any cache directory the kernel tells nothing of caches
	 * (a guest whose hypervisor passes no cache leaves): the placement
	 * is that of the threads, cores and sockets */
	bool with_caches = !t->cache_why.text[0] && !t->no_cache_dir;
	const char *cores_why = t->core_why.text[0] ? t->core_why.text :
							t->pkg_why.text;
	const char *place_why = t->sib_why.text[0] ? t->sib_why.text :
				cores_why[0]	   ? cores_why :
				with_caches || t->no_cache_dir == t->n ?
							 NULL :
							 cache_why;
	int64_t cores = 0, sockets = 0;
	struct json_object *arr;

	if (!t->sib_why.text[0])
		item_i64(out, "threads_per_core", (int64_t)t->max_threads);
	else
		item_unknown(out, "threads_per_core", "%s", t->sib_why.text);
	if (!cores_why[0]) {
		cores = count_distinct(t->pkg, t->core, t->n);
		if (cores < 0)
			return (int)cores;
		item_i64(out, "cores", cores);
	} else {
		item_unknown(out, "cores", "%s", cores_why);
	}
	if (!t->pkg_why.text[0]) {
		sockets = count_distinct(t->pkg, NULL, t->n);
		if (sockets < 0)
			return (int)sockets;
		item_i64(out, "sockets", sockets);
	} else {
		item_unknown(out, "sockets", "%s", t->pkg_why.text);
	}
	if (!t->sib_why.text[0]) {
		arr = item_array(out, "thread_siblings");
		if (!arr)
			return -ENOMEM;
		for (size_t i = 0; i < t->siblings.n; i++)
			if (item_append_str(arr, t->siblings.s[i]) < 0)
				return -ENOMEM;
	} else {
		item_unknown(out, "thread_siblings", "%s", t->sib_why.text);
	}
	if (t->n_caches)
		qsort(t->caches, t->n_caches, sizeof(*t->caches), group_cmp);
	if (cache_why)
		item_unknown(out, "caches", "%s", cache_why);
	else if (emit_caches(t, out) < 0)
		return -ENOMEM;

	if (place_why) {
		item_unknown(out, "placement", "%s", place_why);
	} else {
		_cleanup_free_ char *line = NULL;
		size_t len;
		int r = placement(t, cores, sockets, with_caches, &line, &len);

		if (r < 0)
			return r;
		/* what the codec takes of a probe string */
		if (len > CODEC_MAX_PROBE_STRING)
			item_unknown(out, "placement",
				     "too long: %zu bytes over %zu vCPUs", len,
				     t->n);
		else
			item_str(out, "placement", line);
	}
	return 0;
}

static void all_unknown(struct json_object *out, const char *why)
{
	/* the .proto's order, which the typed Probe walks back in */
	static const char *const keys[] = {
		"threads_per_core", "cores",	 "sockets", "thread_siblings",
		"caches",	    "placement", "vcpus",
	};

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		item_unknown(out, keys[i], "%s", why);
}

static void topo_release(struct topo *t)
{
	strset_release(&t->siblings);
	for (size_t i = 0; i < t->n_caches; i++)
		strset_release(&t->caches[i].lists);
	free(t->caches);
	free(t->core);
	free(t->pkg);
}

static int probe_topology(struct probe_ctx *ctx, struct json_object *out)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_free_ int *cpus = NULL;
	struct topo t = { 0 };
	struct why w = { "" };
	size_t n;
	int r;

	r = read_text(ctx, CPU_DIR "/online", &text, &w);
	if (r == -ENOMEM)
		return r;
	if (r == 0) {
		r = topology_cpulist_parse(text, &cpus, &n);
		if (r == -ENOMEM)
			return r;
		if (r < 0 || n == 0)
			why_set(&w, "malformed: %s is not a CPU list",
				CPU_DIR "/online");
	}
	if (w.text[0]) {
		all_unknown(out, w.text);
		return 0;
	}
	t.cpus = cpus;
	t.n = n;
	t.core = calloc(n, sizeof(*t.core));
	t.pkg = calloc(n, sizeof(*t.pkg));
	if (!t.core || !t.pkg) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		r = read_cpu_topology(ctx, &t, i);
		if (r < 0)
			goto out;
		r = read_cpu_caches(ctx, &t, cpus[i]);
		if (r < 0)
			goto out;
	}
	r = emit(&t, out);
	/* last, as in the .proto */
	item_i64(out, "vcpus", (int64_t)n);
out:
	topo_release(&t);
	return r;
}

const struct probe_ops probe_topology_ops = {
	.name = "topology",
	.run = probe_topology,
};
