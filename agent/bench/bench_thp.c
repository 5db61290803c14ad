/* SPDX-License-Identifier: MIT */
/* thp_chase and thp_fault: huge pages in a pointer chase and at first touch */
#include "bench_thp.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench_modules.h"
#include "cleanup.h"
#include "clock.h"
#include "probe.h"
#include "rand.h"
#include "stats.h"
#include "sys/sys.h"

#define SLOT_BYTES 64 /* one cache line per chase slot */
#define PAGE_BYTES 4096ULL
#define PMD_BYTES (2ULL << 20)
#define GIB (1ULL << 30)
#define CHASE_CHUNK (1ULL << 20) /* loads between bench_interrupted() */
#define TOUCH_CHUNK 65536 /* first touches between bench_interrupted() */
#define CYCLE_AHEAD 32 /* Sattolo draws made ahead, to prefetch */
#define CLOCK_PAIRS 10001 /* back-to-back clock reads for the overhead */

#define THP_DIR "/sys/kernel/mm/transparent_hugepage"
#define HUGETLB_DIR "/sys/kernel/mm/hugepages"

/* ---- pure helpers (bench_thp.h) ---- */

int thp_cycle_build(uint32_t *next, size_t n, uint64_t seed)
{
	uint32_t ahead[CYCLE_AHEAD];
	size_t nahead;
	struct rng r;

	if (n == 0 || (uint64_t)n - 1 > UINT32_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		next[i] = (uint32_t)i;
	rng_seed(&r, seed);
	/*
	 * Sattolo: for i = n-1 down to 1, swap next[i] with next[j], j
	 * uniform in [0, i). The draws do not depend on the array, so they are
	 * made CYCLE_AHEAD iterations early, in the same order, and next[j]
	 * is prefetched: the random misses overlap instead of stalling one
	 * after another (a 1 GiB chase has 16 M slots).
	 */
	nahead = n - 1 < CYCLE_AHEAD ? n - 1 : CYCLE_AHEAD;
	for (size_t k = 0; k < nahead; k++) {
		ahead[k] = (uint32_t)rng_below(&r, n - 1 - k);
		__builtin_prefetch(&next[ahead[k]], 1);
	}
	for (size_t i = n - 1, k = 0; i >= 1; i--, k++) {
		size_t slot = k % CYCLE_AHEAD;
		uint32_t j = ahead[slot], t;

		if (i > CYCLE_AHEAD) {
			ahead[slot] = (uint32_t)rng_below(&r, i - CYCLE_AHEAD);
			__builtin_prefetch(&next[ahead[slot]], 1);
		}
		t = next[i];
		next[i] = next[j];
		next[j] = t;
	}
	return 0;
}

/* Strict hex number (no 0x, no sign): at most 16 digits. */
static int parse_hex(const char **s, uintptr_t *ret)
{
	const char *p = *s;
	uint64_t v = 0;
	int nd = 0;

	for (;; p++) {
		int d;

		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			d = *p - 'A' + 10;
		else
			break;
		if (++nd > 16)
			return -EBADMSG;
		v = v << 4 | (uint64_t)d;
	}
	if (!nd)
		return -EBADMSG;
	*s = p;
	*ret = (uintptr_t)v;
	return 0;
}

/* A VMA header: "start-end perms offset dev inode [path]". */
static bool smaps_header(const char *line, const char *eol, uintptr_t *start,
			 uintptr_t *end)
{
	const char *p = line;

	if (parse_hex(&p, start) < 0 || *p != '-')
		return false;
	p++;
	return parse_hex(&p, end) == 0 && p < eol && *p == ' ';
}

/* "   1234 kB" up to eol. */
static int smaps_kb(const char *v, const char *eol, uint64_t *ret)
{
	uint64_t n = 0;
	int nd = 0;

	while (v < eol && *v == ' ')
		v++;
	for (; v < eol && *v >= '0' && *v <= '9'; v++, nd++) {
		if (n > (UINT64_MAX - 9) / 10)
			return -EBADMSG;
		n = n * 10 + (uint64_t)(*v - '0');
	}
	if (!nd)
		return -EBADMSG;
	while (v < eol && *v == ' ')
		v++;
	if (eol - v < 2 || strncmp(v, "kB", 2))
		return -EBADMSG;
	for (v += 2; v < eol; v++)
		if (*v != ' ')
			return -EBADMSG;
	*ret = n;
	return 0;
}

static bool key_is(const char *line, size_t klen, const char *key)
{
	return strlen(key) == klen && !strncmp(line, key, klen);
}

int thp_smaps_find(const char *text, uintptr_t addr,
		   struct thp_smaps_vma *ret)
{
	struct thp_smaps_vma cur = { 0 };
	bool in_vma = false, match = false;

	if (!text)
		return -EINVAL;
	for (const char *line = text; *line;) {
		const char *eol = strchrnul(line, '\n');
		uintptr_t s, e;

		if (smaps_header(line, eol, &s, &e)) {
			if (match)
				break;
			if (s >= e)
				return -EBADMSG;
			memset(&cur, 0, sizeof(cur));
			cur.start = s;
			cur.end = e;
			in_vma = true;
			match = addr >= s && addr < e;
		} else {
			const char *p = line;
			uint64_t *field = NULL;
			size_t klen;

			while (p < eol && (*p == '_' || (*p >= 'a' && *p <= 'z') ||
					   (*p >= 'A' && *p <= 'Z') ||
					   (*p >= '0' && *p <= '9')))
				p++;
			klen = (size_t)(p - line);
			if (!in_vma || !klen || p == eol || *p != ':')
				return -EBADMSG;
			if (match) {
				if (key_is(line, klen, "Rss"))
					field = &cur.rss_kb;
				else if (key_is(line, klen, "KernelPageSize"))
					field = &cur.kernel_page_kb;
				else if (key_is(line, klen, "AnonHugePages"))
					field = &cur.anon_huge_kb;
				else if (key_is(line, klen, "Private_Hugetlb"))
					field = &cur.private_hugetlb_kb;
				else if (key_is(line, klen, "Shared_Hugetlb"))
					field = &cur.shared_hugetlb_kb;
			}
			if (field && smaps_kb(p + 1, eol, field) < 0)
				return -EBADMSG;
			if (field == &cur.anon_huge_kb)
				cur.has_anon_huge = true;
		}
		line = *eol ? eol + 1 : eol;
	}
	if (!match)
		return -ENOENT;
	*ret = cur;
	return 0;
}

int thp_smaps_huge_bytes(const char *text, uintptr_t start, uintptr_t end,
			 uint64_t *ret)
{
	uint64_t total = 0;

	if (start >= end)
		return -EINVAL;
	for (uintptr_t a = start; a < end;) {
		struct thp_smaps_vma v;
		uintptr_t lo, hi;
		uint64_t huge;
		int r = thp_smaps_find(text, a, &v);

		if (r < 0)
			return r;
		lo = v.start > start ? v.start : start;
		hi = v.end < end ? v.end : end;
		huge = (v.anon_huge_kb + v.private_hugetlb_kb +
			v.shared_hugetlb_kb)
		       << 10;
		total += huge < hi - lo ? huge : hi - lo;
		a = v.end;
	}
	*ret = total;
	return 0;
}

/* ---- shared by both benchmarks ---- */

static const char *errname(int err)
{
	const char *name = strerrorname_np(err < 0 ? -err : err);

	return name ? name : "error";
}

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/*
 * len bytes of anonymous memory (no page touched) starting on a 2 MiB
 * boundary, so that every 2 MiB of it can be one huge page: over-mapped by
 * 2 MiB and trimmed. munmap(*ret, len) frees it.
 */
static int map_aligned(size_t len, char **ret)
{
	size_t over = len + PMD_BYTES, head, tail;
	uintptr_t a;
	void *p;
	int r;

	r = sys_mmap_anon(over, 0, &p);
	if (r < 0)
		return r;
	a = ((uintptr_t)p + PMD_BYTES - 1) & ~(uintptr_t)(PMD_BYTES - 1);
	head = a - (uintptr_t)p;
	tail = over - head - len;
	if ((head && munmap(p, head) < 0) ||
	    (tail && munmap((char *)a + len, tail) < 0)) {
		r = -errno;
		munmap(p, over);
		return r;
	}
	*ret = (char *)a;
	return 0;
}

static int read_i64(struct bench_run *run, const char *path, int64_t *ret)
{
	_cleanup_free_ char *text = NULL;
	ssize_t n = bench_read_file(run, path, &text);

	if (n < 0)
		return (int)n;
	return probe_parse_i64(text, ret);
}

/* The selected value of a "a [b] c" file, or why there is none. */
static void read_bracket(struct bench_run *run, const char *path, char *buf,
			 size_t size)
{
	_cleanup_free_ char *text = NULL;
	ssize_t n = bench_read_file(run, path, &text);
	const char *a, *b;

	if (n < 0) {
		snprintf(buf, size, "%s", probe_reason((int)n));
		return;
	}
	a = strchr(text, '[');
	b = a ? strchr(a, ']') : NULL;
	if (!b)
		snprintf(buf, size, "malformed");
	else
		snprintf(buf, size, "%.*s", (int)(b - a - 1), a + 1);
}

/* The THP mode the host runs with, as parameters of a result. */
struct thp_mode {
	char enabled[32], defrag[32];
};

static void thp_mode_read(struct bench_run *run, struct thp_mode *m)
{
	read_bracket(run, THP_DIR "/enabled", m->enabled, sizeof(m->enabled));
	read_bracket(run, THP_DIR "/defrag", m->defrag, sizeof(m->defrag));
}

static void thp_mode_param(struct bench_result *res, const struct thp_mode *m)
{
	bench_param_str(res, "thp_enabled", m->enabled);
	bench_param_str(res, "thp_defrag", m->defrag);
}

/* System-wide /proc/vmstat counters sampled as deltas. */
enum {
	VM_THP_FAULT_ALLOC,
	VM_THP_FAULT_FALLBACK,
	VM_THP_SPLIT_PAGE,
	VM_COMPACT_STALL,
	VM_N,
};

static const char *const vm_keys[VM_N] = {
	[VM_THP_FAULT_ALLOC] = "thp_fault_alloc",
	[VM_THP_FAULT_FALLBACK] = "thp_fault_fallback",
	[VM_THP_SPLIT_PAGE] = "thp_split_page",
	[VM_COMPACT_STALL] = "compact_stall",
};

struct vmstat {
	int64_t v[VM_N];
	bool ok[VM_N];
};

/* Absent counters (a kernel without THP) are marked, not an error. */
static void vmstat_read(struct bench_run *run, struct vmstat *ret)
{
	_cleanup_free_ char *text = NULL;
	char val[32];

	memset(ret, 0, sizeof(*ret));
	if (bench_read_file(run, "/proc/vmstat", &text) < 0)
		return;
	for (int i = 0; i < VM_N; i++)
		ret->ok[i] = probe_kv(text, vm_keys[i], val, sizeof(val)) == 0 &&
			     probe_parse_i64(val, &ret->v[i]) == 0;
}

static void vmstat_sample(struct bench_result *res, const struct vmstat *a,
			  const struct vmstat *b)
{
	for (int i = 0; i < VM_N; i++)
		if (a->ok[i] && b->ok[i])
			bench_sample(res, vm_keys[i], "count",
				     (double)(b->v[i] - a->v[i]));
}

/*
 * Names the counters this kernel does not have (no THP, an old kernel) as
 * the parameter vmstat_missing, so an absent metric is explained.
 */
static void vmstat_param_missing(struct bench_result *res,
				 const struct vmstat *vs)
{
	char names[128] = "";

	for (int i = 0; i < VM_N; i++)
		if (!vs->ok[i])
			snprintf(names + strlen(names),
				 sizeof(names) - strlen(names), "%s%s",
				 names[0] ? " " : "", vm_keys[i]);
	if (names[0])
		bench_param_str(res, "vmstat_missing", names);
}

/* The counters a variant's first touch moved, as parameters fill_<name>. */
static void vmstat_param(struct bench_result *res, const struct vmstat *a,
			 const struct vmstat *b)
{
	char key[64];

	for (int i = 0; i < VM_N; i++) {
		if (!a->ok[i] || !b->ok[i])
			continue;
		snprintf(key, sizeof(key), "fill_%s", vm_keys[i]);
		bench_param_i64(res, key, b->v[i] - a->v[i]);
	}
}

static int read_self_smaps(char **ret)
{
	_cleanup_close_ int fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
	_cleanup_free_ char *buf = NULL;
	size_t cap = 0, len = 0;

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n;

		if (cap - len < 4096) {
			char *nb = realloc(buf, cap ? cap * 2 : 65536);

			if (!nb)
				return -ENOMEM;
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*ret = TAKE_PTR(buf);
	return 0;
}

/*
 * Samples huge_fraction: the bytes of [buf, buf + len) that this process's
 * own smaps shows backed by huge pages (AnonHugePages for THP,
 * Private_Hugetlb + Shared_Hugetlb for hugetlb), over len. When smaps
 * cannot tell, the reason is a parameter instead.
 */
static void sample_huge_fraction(struct bench_result *res, const char *buf,
				 size_t len)
{
	_cleanup_free_ char *text = NULL;
	uint64_t bytes = 0;
	int r;

	r = read_self_smaps(&text);
	if (r == 0)
		r = thp_smaps_huge_bytes(text, (uintptr_t)buf,
					 (uintptr_t)buf + len, &bytes);
	if (r < 0) {
		bench_param_str(res, "huge_fraction_unavailable", errname(r));
		return;
	}
	bench_sample(res, "huge_fraction", "fraction",
		     (double)bytes / (double)len);
}

/* ---- thp_chase ---- */

enum chase_mode {
	MODE_4K,
	MODE_THP,
	MODE_HUGETLB,
};

static const struct chase_kind {
	const char *name;
	enum chase_mode mode;
	uint64_t page; /* hugetlb page size */
	const char *pool; /* hugetlb pool directory */
	const char *label;
} chase_kinds[] = {
	{ "4k", MODE_4K, 0, NULL, "4 KiB pages (MADV_NOHUGEPAGE)" },
	{ "thp", MODE_THP, 0, NULL, "THP (MADV_HUGEPAGE)" },
	{ "hugetlb_2m", MODE_HUGETLB, 2ULL << 20,
	  HUGETLB_DIR "/hugepages-2048kB", "2 MiB" },
	{ "hugetlb_1g", MODE_HUGETLB, 1ULL << 30,
	  HUGETLB_DIR "/hugepages-1048576kB", "1 GiB" },
};

#define CHASE_N ARRAY_SIZE(chase_kinds)

struct chase_variant {
	const struct chase_kind *kind;
	struct bench_result *res;
	char *buf; /* the mapping, NULL when none */
	size_t len;
};

struct chase_state {
	struct chase_variant v[CHASE_N];
	uint64_t slots, accesses;
	/* --reserve-hugetlb: the 2 MiB pool size to restore, -1: untouched */
	int64_t pool_restore;
};

/* Keeps the chase's final pointer alive: the loop cannot be dropped. */
static void *volatile chase_sink;

/* n dependent loads: each slot's first word points to the next slot. */
static __attribute__((noinline)) void *chase(void *p, uint64_t n)
{
	void **q = p;

	for (; n >= 8; n -= 8) {
		q = *q;
		q = *q;
		q = *q;
		q = *q;
		q = *q;
		q = *q;
		q = *q;
		q = *q;
	}
	while (n--)
		q = *q;
	return q;
}

static void chase_skip_all(struct chase_state *st, const char *why)
{
	for (size_t i = 0; i < CHASE_N; i++)
		if (!bench_result_skipped(st->v[i].res))
			bench_result_skip(st->v[i].res, "%s", why);
}

#define POOL_2M HUGETLB_DIR "/hugepages-2048kB"

/*
 * --reserve-hugetlb N (root, checked by main): grows the 2 MiB pool so N
 * pages are free for the benchmark (it never shrinks a pool), remembering
 * the old size for teardown, and for the driver should this process die
 * before (bench_restore_arm). What was asked and granted are parameters of
 * the hugetlb_2m result.
 */
static void chase_reserve(struct bench_run *run, struct chase_state *st,
			  int64_t want, struct bench_result *res)
{
	int64_t nr, nfree, resv = 0, target, after;
	char val[32];
	int r;

	bench_param_i64(res, "reserve_hugetlb_requested", want);
	r = read_i64(run, POOL_2M "/nr_hugepages", &nr);
	if (r == 0)
		r = read_i64(run, POOL_2M "/free_hugepages", &nfree);
	if (r == 0 && read_i64(run, POOL_2M "/resv_hugepages", &resv) < 0)
		resv = 0;
	if (r < 0) {
		bench_param_str(res, "reserve_hugetlb_result",
				r == -ENOENT ? "no 2 MiB pool" : errname(r));
		return;
	}
	bench_param_i64(res, "reserve_hugetlb_pool_before", nr);
	if (nfree - resv >= want) {
		bench_param_str(res, "reserve_hugetlb_result", "already free");
		return;
	}
	target = nr + want - (nfree - resv);
	snprintf(val, sizeof(val), "%lld", (long long)nr);
	r = bench_restore_arm(run, POOL_2M "/nr_hugepages", val);
	if (r < 0) {
		bench_param_str(res, "reserve_hugetlb_result", errname(r));
		return;
	}
	st->pool_restore = nr;
	snprintf(val, sizeof(val), "%lld", (long long)target);
	r = bench_write_file(run, POOL_2M "/nr_hugepages", val);
	if (r < 0) {
		bench_param_str(res, "reserve_hugetlb_result", errname(r));
		return;
	}
	if (read_i64(run, POOL_2M "/nr_hugepages", &after) < 0) {
		bench_param_str(res, "reserve_hugetlb_result", "unreadable");
		return;
	}
	bench_param_i64(res, "reserve_hugetlb_pool_after", after);
	bench_param_str(res, "reserve_hugetlb_result",
			after >= target ? "ok" : "partial");
}

/* Skips a hugetlb variant unless its pool already has the free pages. */
static void chase_hugetlb_decide(struct bench_run *run,
				 struct chase_variant *v, uint64_t bytes)
{
	const struct chase_kind *k = v->kind;
	uint64_t need = round_up(bytes, k->page) / k->page;
	int64_t nfree, resv = 0, avail;
	char path[256];
	int r;

	snprintf(path, sizeof(path), "%s/free_hugepages", k->pool);
	r = read_i64(run, path, &nfree);
	if (r == -ENOENT) {
		bench_result_skip(v->res, "%s hugetlb pages: absent (no %s)",
				  k->label, k->pool);
		return;
	}
	if (r < 0) {
		bench_result_skip(v->res, "%s hugetlb pool: %s unreadable: %s",
				  k->label, path, errname(r));
		return;
	}
	snprintf(path, sizeof(path), "%s/resv_hugepages", k->pool);
	if (read_i64(run, path, &resv) < 0)
		resv = 0;
	avail = nfree - resv;
	bench_param_i64(v->res, "hugetlb_pool_free", nfree);
	bench_param_i64(v->res, "hugetlb_pool_resv", resv);
	bench_param_i64(v->res, "hugetlb_pages_needed", (int64_t)need);
	if (avail < 0 || (uint64_t)avail < need) {
		if (resv > 0)
			bench_result_skip(
				v->res,
				"%s hugetlb pool has %lld free pages (%lld more reserved by other mappings), needs %llu",
				k->label, (long long)avail, (long long)resv,
				(unsigned long long)need);
		else
			bench_result_skip(
				v->res,
				"%s hugetlb pool has %lld free pages, needs %llu",
				k->label, (long long)avail,
				(unsigned long long)need);
	}
}

/*
 * Maps, advises and fills one variant's buffer (the first touch decides its
 * page size), then writes the cycle in it as pointers. What the host
 * refuses skips the variant; -errno only for the agent's own failures.
 */
static int chase_build(struct bench_run *run, struct chase_state *st,
		       struct chase_variant *v, const uint32_t *next)
{
	const struct chase_kind *k = v->kind;
	uint64_t bytes = st->slots * SLOT_BYTES;
	struct vmstat a, b;
	int64_t t0, t1;
	void *p = NULL;
	int r;

	if (k->mode == MODE_HUGETLB) {
		v->len = round_up(bytes, k->page);
		r = sys_mmap_anon(v->len, k->page, &p);
		if (r < 0) {
			bench_result_skip(v->res,
					  "mmap(MAP_HUGETLB) of %llu MiB in %s pages: %s",
					  (unsigned long long)(v->len >> 20),
					  k->label, errname(r));
			return 0;
		}
		v->buf = p;
	} else {
		v->len = round_up(bytes, PMD_BYTES);
		r = map_aligned(v->len, &v->buf);
		if (r < 0) {
			bench_result_skip(v->res, "mmap of %llu MiB: %s",
					  (unsigned long long)(v->len >> 20),
					  errname(r));
			return 0;
		}
		/* before the first touch, which decides the page size */
		r = sys_madvise_thp(v->buf, v->len, k->mode == MODE_THP);
		if (r < 0 && k->mode == MODE_THP) {
			bench_result_skip(v->res, "madvise(MADV_HUGEPAGE): %s%s",
					  errname(r),
					  r == -EINVAL ? " (no THP in this kernel)" : "");
			munmap(v->buf, v->len);
			v->buf = NULL;
			return 0;
		}
		if (r < 0)
			/* without THP every page is 4 KiB anyway */
			bench_param_str(v->res, "madvise", errname(r));
	}
	bench_param_i64(v->res, "buffer_bytes", (int64_t)v->len);

	vmstat_read(run, &a);
	t0 = mono_ns();
	memset(v->buf, 0, v->len);
	t1 = mono_ns();
	vmstat_read(run, &b);
	bench_param_i64(v->res, "fill_us", (t1 - t0) / 1000);
	vmstat_param(v->res, &a, &b);
	if (bench_interrupted())
		return -EINTR;

	for (uint64_t i = 0; i < st->slots; i++)
		*(void **)(v->buf + i * SLOT_BYTES) =
			v->buf + (uint64_t)next[i] * SLOT_BYTES;
	return bench_interrupted() ? -EINTR : 0;
}

static int chase_setup(struct bench_run *run, const struct bench_params *p,
		       void **state)
{
	struct chase_state *st = calloc(1, sizeof(*st));
	uint64_t anon_len, next_len, need;
	struct thp_mode mode;
	struct vmstat vs;
	uint32_t *next = NULL;
	char why[512], *mem;
	int r = 0;

	if (!st)
		return -ENOMEM;
	*state = st;
	st->pool_restore = -1;
	st->slots = p->chase_bytes / SLOT_BYTES;
	st->accesses = p->chase_accesses > 0 ? (uint64_t)p->chase_accesses : 0;
	thp_mode_read(run, &mode);
	vmstat_read(run, &vs);
	for (size_t i = 0; i < CHASE_N; i++) {
		struct chase_variant *v = &st->v[i];

		v->kind = &chase_kinds[i];
		v->res = bench_result_new(run, "thp_chase", v->kind->name);
		if (!v->res)
			return -ENOMEM;
		bench_param_str(v->res, "page_mode",
				v->kind->mode == MODE_HUGETLB ?
					(v->kind->page == GIB ?
						 "hugetlb 1 GiB (MAP_HUGETLB)" :
						 "hugetlb 2 MiB (MAP_HUGETLB)") :
					v->kind->label);
		bench_param_i64(v->res, "chase_bytes", (int64_t)p->chase_bytes);
		bench_param_i64(v->res, "slots", (int64_t)st->slots);
		bench_param_i64(v->res, "slot_bytes", SLOT_BYTES);
		bench_param_i64(v->res, "accesses", (int64_t)st->accesses);
		bench_param_i64(v->res, "seed", p->seed);
		bench_param_str(v->res, "chase",
				"one Sattolo cycle, a pointer per 64-byte slot");
		vmstat_param_missing(v->res, &vs);
		bench_param_str(v->res, "huge_fraction_from",
				v->kind->mode == MODE_HUGETLB ?
					"smaps Private_Hugetlb+Shared_Hugetlb" :
					"smaps AnonHugePages");
		thp_mode_param(v->res, &mode);
	}

	if (st->slots < 2 || st->slots - 1 > UINT32_MAX || !st->accesses) {
		snprintf(why, sizeof(why),
			 "chase_bytes %llu and chase_accesses %lld: needs 2 to 2^32 slots of 64 bytes and at least one access",
			 (unsigned long long)p->chase_bytes,
			 (long long)p->chase_accesses);
		chase_skip_all(st, why);
		return 0;
	}

	/* the 4k and thp buffers, the cycle, and what a reservation takes */
	anon_len = round_up(st->slots * SLOT_BYTES, PMD_BYTES);
	next_len = round_up(st->slots * sizeof(uint32_t), PMD_BYTES);
	need = 2 * anon_len + next_len;
	if (p->reserve_hugetlb > 0)
		need += (uint64_t)p->reserve_hugetlb * (2ULL << 20);
	if (bench_check_memory(run, need, why, sizeof(why)) < 0) {
		chase_skip_all(st, why);
		return 0;
	}
	if (p->reserve_hugetlb > 0)
		chase_reserve(run, st, p->reserve_hugetlb, st->v[2].res);
	for (size_t i = 0; i < CHASE_N; i++)
		if (st->v[i].kind->mode == MODE_HUGETLB)
			chase_hugetlb_decide(run, &st->v[i],
					     st->slots * SLOT_BYTES);

	/* the cycle once, in a compact array: every variant chases it */
	r = map_aligned(next_len, &mem);
	if (r < 0)
		return r;
	next = (uint32_t *)mem;
	(void)sys_madvise_thp(next, next_len, true); /* only faster */
	r = thp_cycle_build(next, st->slots, (uint64_t)p->seed);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < CHASE_N; i++) {
		struct chase_variant *v = &st->v[i];

		if (bench_result_skipped(v->res))
			continue;
		r = chase_build(run, st, v, next);
		if (r < 0)
			goto out;
	}
out:
	munmap(next, next_len);
	return r;
}

static int chase_measure(struct bench_run *run, struct chase_state *st,
			 struct chase_variant *v)
{
	uint64_t left = st->accesses;
	void *p = v->buf; /* slot 0: every variant walks the same order */
	struct vmstat a, b;
	int64_t t0, t1;

	bench_window_begin(v->res);
	vmstat_read(run, &a);
	t0 = mono_ns();
	while (left) {
		uint64_t n = left < CHASE_CHUNK ? left : CHASE_CHUNK;

		p = chase(p, n);
		left -= n;
		if (bench_interrupted())
			break;
	}
	t1 = mono_ns();
	vmstat_read(run, &b);
	bench_window_end(v->res);
	chase_sink = p;
	if (left)
		return -EINTR;

	bench_sample(v->res, "ns_per_access", "ns",
		     (double)(t1 - t0) / (double)st->accesses);
	sample_huge_fraction(v->res, v->buf, v->len);
	vmstat_sample(v->res, &a, &b);
	return 0;
}

static int chase_run(struct bench_run *run, void *state, unsigned int repeat)
{
	struct chase_state *st = state;

	/* A B ... on even repeats, ... B A on odd ones: drift cancels */
	for (size_t k = 0; k < CHASE_N; k++) {
		struct chase_variant *v =
			&st->v[repeat & 1 ? CHASE_N - 1 - k : k];
		int r;

		if (!v->buf || bench_result_skipped(v->res))
			continue;
		r = chase_measure(run, st, v);
		if (r < 0)
			return r;
	}
	return 0;
}

static void chase_compare(struct bench_run *run, void *state)
{
	struct chase_state *st = state;

	/* 4k / x on ns_per_access: above 1 means x is faster */
	bench_compare(run, "thp_speedup", st->v[0].res, st->v[1].res,
		      "ns_per_access");
	bench_compare(run, "hugetlb_2m_speedup", st->v[0].res, st->v[2].res,
		      "ns_per_access");
	bench_compare(run, "hugetlb_1g_speedup", st->v[0].res, st->v[3].res,
		      "ns_per_access");
}

static void chase_teardown(struct bench_run *run, void *state)
{
	struct chase_state *st = state;

	if (!st)
		return;
	for (size_t i = 0; i < CHASE_N; i++)
		if (st->v[i].buf)
			munmap(st->v[i].buf, st->v[i].len);
	if (st->pool_restore >= 0) {
		char val[32];
		int r;

		snprintf(val, sizeof(val), "%lld", (long long)st->pool_restore);
		r = bench_write_file(run, POOL_2M "/nr_hugepages", val);
		if (r == 0)
			bench_restore_done(run, POOL_2M "/nr_hugepages");
		if (st->v[2].res)
			bench_param_str(st->v[2].res, "reserve_hugetlb_restored",
					r < 0 ? errname(r) : "ok");
	}
	free(st);
}

const struct bench_ops bench_thp_chase_ops = {
	.name = "thp_chase",
	.summary = "dependent pointer chase: 4 KiB pages vs THP vs hugetlb",
	.setup = chase_setup,
	.run = chase_run,
	.teardown = chase_teardown,
	.compare = chase_compare,
};

/* ---- thp_fault ---- */

struct fault_variant {
	const char *name;
	bool huge;
	struct bench_result *res;
};

struct fault_state {
	struct fault_variant v[2];
	uint64_t len; /* region, a multiple of 2 MiB */
	size_t touches;
	double *lat; /* ns of each touch of one repeat, prefaulted */
	size_t lat_len;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median cost of reading the clock twice back to back, in ns. */
static double clock_overhead_ns(void)
{
	double d[CLOCK_PAIRS];

	for (size_t i = 0; i < CLOCK_PAIRS; i++) {
		int64_t t0 = mono_ns();

		d[i] = (double)(mono_ns() - t0);
	}
	qsort(d, CLOCK_PAIRS, sizeof(d[0]), cmp_double);
	return d[CLOCK_PAIRS / 2];
}

static int fault_setup(struct bench_run *run, const struct bench_params *p,
		       void **state)
{
	struct fault_state *st = calloc(1, sizeof(*st));
	static const char *const names[] = { "nohuge", "thp" };
	struct thp_mode mode;
	struct vmstat vs;
	double clock_ns;
	char why[512], *probe;
	void *lat;
	int r;

	if (!st)
		return -ENOMEM;
	*state = st;
	st->len = round_up(p->fault_bytes, PMD_BYTES);
	st->touches = st->len / PAGE_BYTES;
	st->lat_len = round_up(st->touches * sizeof(double), PAGE_BYTES);
	thp_mode_read(run, &mode);
	vmstat_read(run, &vs);
	clock_ns = clock_overhead_ns();
	for (size_t i = 0; i < 2; i++) {
		struct fault_variant *v = &st->v[i];

		v->name = names[i];
		v->huge = i == 1;
		v->res = bench_result_new(run, "thp_fault", v->name);
		if (!v->res)
			return -ENOMEM;
		bench_param_str(v->res, "page_mode",
				v->huge ? "THP (MADV_HUGEPAGE)" :
					  "4 KiB pages (MADV_NOHUGEPAGE)");
		bench_param_i64(v->res, "fault_bytes", (int64_t)p->fault_bytes);
		bench_param_i64(v->res, "region_bytes", (int64_t)st->len);
		bench_param_i64(v->res, "touches", (int64_t)st->touches);
		bench_param_i64(v->res, "touch_stride", PAGE_BYTES);
		bench_param_str(v->res, "clock",
				"CLOCK_MONOTONIC read before and after each touch");
		bench_param_i64(v->res, "clock_overhead_ns",
				(int64_t)(clock_ns + 0.5));
		vmstat_param_missing(v->res, &vs);
		thp_mode_param(v->res, &mode);
	}
	if (!st->touches) {
		bench_result_skip(st->v[0].res, "fault_bytes is 0");
		bench_result_skip(st->v[1].res, "fault_bytes is 0");
		return 0;
	}
	if (bench_check_memory(run, st->len + st->lat_len, why, sizeof(why)) <
	    0) {
		bench_result_skip(st->v[0].res, "%s", why);
		bench_result_skip(st->v[1].res, "%s", why);
		return 0;
	}

	/* Can this kernel do THP at all? Asked on a region never touched. */
	r = map_aligned(PMD_BYTES, &probe);
	if (r < 0)
		return r;
	r = sys_madvise_thp(probe, PMD_BYTES, true);
	munmap(probe, PMD_BYTES);
	if (r < 0)
		bench_result_skip(st->v[1].res, "madvise(MADV_HUGEPAGE): %s%s",
				  errname(r),
				  r == -EINVAL ? " (no THP in this kernel)" : "");

	/* prefaulted, so recording a latency never faults */
	r = sys_mmap_anon(st->lat_len, 0, &lat);
	if (r < 0)
		return r;
	st->lat = lat;
	memset(st->lat, 0, st->lat_len);
	return 0;
}

static int fault_measure(struct bench_run *run, struct fault_state *st,
			 struct fault_variant *v)
{
	double *lat = st->lat, q50, q99, q999, max;
	size_t n = st->touches, done;
	struct vmstat a, b;
	int64_t t_start, t_end;
	char *buf;
	int r;

	r = map_aligned(st->len, &buf);
	if (r < 0)
		return r;
	r = sys_madvise_thp(buf, st->len, v->huge);
	if (r < 0 && (v->huge || r != -EINVAL)) {
		munmap(buf, st->len);
		return r;
	}

	bench_window_begin(v->res);
	vmstat_read(run, &a);
	t_start = mono_ns();
	for (done = 0; done < n; done++) {
		int64_t t0 = mono_ns();

		((volatile char *)buf)[done * PAGE_BYTES] = 1;
		lat[done] = (double)(mono_ns() - t0);
		if (done % TOUCH_CHUNK == TOUCH_CHUNK - 1 &&
		    bench_interrupted()) {
			done++;
			break;
		}
	}
	t_end = mono_ns();
	vmstat_read(run, &b);
	bench_window_end(v->res);
	sample_huge_fraction(v->res, buf, st->len);
	if (munmap(buf, st->len) < 0)
		return -errno;
	if (done < n || bench_interrupted())
		return -EINTR;

	qsort(lat, n, sizeof(lat[0]), cmp_double);
	q50 = stats_quantile_sorted(lat, n, 0.50);
	q99 = stats_quantile_sorted(lat, n, 0.99);
	q999 = stats_quantile_sorted(lat, n, 0.999);
	max = lat[n - 1];
	bench_sample(v->res, "fault_p50_us", "us", q50 / 1000);
	bench_sample(v->res, "fault_p99_us", "us", q99 / 1000);
	bench_sample(v->res, "fault_p999_us", "us", q999 / 1000);
	bench_sample(v->res, "fault_max_us", "us", max / 1000);
	bench_sample(v->res, "total_ms", "ms", (double)(t_end - t_start) / 1e6);
	vmstat_sample(v->res, &a, &b);
	return 0;
}

static int fault_run(struct bench_run *run, void *state, unsigned int repeat)
{
	struct fault_state *st = state;

	for (size_t k = 0; k < 2; k++) {
		struct fault_variant *v = &st->v[repeat & 1 ? 1 - k : k];
		int r;

		if (bench_result_skipped(v->res))
			continue;
		r = fault_measure(run, st, v);
		if (r < 0)
			return r;
	}
	return 0;
}

static void fault_compare(struct bench_run *run, void *state)
{
	struct fault_state *st = state;

	/* above 1: THP populates the region faster */
	bench_compare(run, "thp_fault_total_speedup", st->v[0].res,
		      st->v[1].res, "total_ms");
	/*
	 * above 1: THP's p99.9 touch is slower. The tail the tuning guides
	 * warn about: 1 touch in 512 faults a 2 MiB page, more than 1 in 1000,
	 * so p99.9 is a huge fault; the max of 4 KiB faults is mostly noise.
	 */
	bench_compare(run, "thp_fault_p999_ratio", st->v[1].res, st->v[0].res,
		      "fault_p999_us");
}

static void fault_teardown(struct bench_run *run, void *state)
{
	struct fault_state *st = state;

	(void)run;
	if (!st)
		return;
	if (st->lat)
		munmap(st->lat, st->lat_len);
	free(st);
}

const struct bench_ops bench_thp_fault_ops = {
	.name = "thp_fault",
	.summary = "first-touch fault latency with and without MADV_HUGEPAGE",
	.setup = fault_setup,
	.run = fault_run,
	.teardown = fault_teardown,
	.compare = fault_compare,
};
