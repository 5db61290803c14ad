/* SPDX-License-Identifier: MIT */
/* The kernel files the benchmarks share: THP mode, vmstat, smaps, hugetlb. */
#include "kfiles.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench_internal.h"
#include "cleanup.h"
#include "file.h"
#include "probe.h"
#include "sys/sys.h"

/* Far above any process's smaps (some hundred bytes per VMA), so only a
 * runaway read stops there. */
#define SMAPS_MAX (256u << 20)

#define POOL_2M KFILE_HUGETLB_DIR "/hugepages-2048kB"

/* ---- below the root (bench.h) ---- */

ssize_t bench_read_file(struct bench_run *run, const char *path, char **ret)
{
	return probe_read_file(&run->pctx, path, ret);
}

int bench_write_file(struct bench_run *run, const char *path,
		     const char *value)
{
	_cleanup_close_ int fd = -1;
	size_t len = strlen(value);
	ssize_t n;

	/* relative to the root's fd, as probe_read_file() reads */
	while (*path == '/')
		path++;
	fd = openat(run->pctx.root_fd, path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, value, len);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

const char *kfile_errname(int err)
{
	const char *name = strerrorname_np(err < 0 ? -err : err);

	return name ? name : "error";
}

int kfile_map_aligned(size_t len, char **ret)
{
	size_t over = len + KFILE_PMD_BYTES, head, tail;
	uintptr_t a;
	void *p;
	int r;

	r = sys_mmap_anon(over, 0, &p);
	if (r < 0)
		return r;
	a = ((uintptr_t)p + KFILE_PMD_BYTES - 1) &
	    ~(uintptr_t)(KFILE_PMD_BYTES - 1);
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

int kfile_read_i64(struct bench_run *run, const char *path, int64_t *ret)
{
	_cleanup_free_ char *text = NULL;
	ssize_t n = bench_read_file(run, path, &text);

	if (n < 0)
		return (int)n;
	return probe_parse_i64(text, ret);
}

/* ---- THP mode ---- */

/* The selected value of a "a [b] c" file (probe_parse_bracket()), or why
 * there is none. */
static void read_bracket(struct bench_run *run, const char *path, char *buf,
			 size_t size)
{
	_cleanup_free_ char *text = NULL;
	ssize_t n = bench_read_file(run, path, &text);
	struct json_object *v, *sel;

	if (n < 0) {
		snprintf(buf, size, "%s", probe_reason((int)n));
		return;
	}
	if (probe_parse_bracket(text, &v) < 0) {
		snprintf(buf, size, "malformed");
		return;
	}
	if (json_object_object_get_ex(v, "selected", &sel))
		snprintf(buf, size, "%s", json_object_get_string(sel));
	else
		snprintf(buf, size, "malformed");
	json_object_put(v);
}

void thp_mode_read(struct bench_run *run, struct thp_mode *m)
{
	read_bracket(run, KFILE_THP_DIR "/enabled", m->enabled,
		     sizeof(m->enabled));
	read_bracket(run, KFILE_THP_DIR "/defrag", m->defrag,
		     sizeof(m->defrag));
}

void thp_shmem_read(struct bench_run *run, char *buf, size_t size)
{
	read_bracket(run, KFILE_THP_DIR "/shmem_enabled", buf, size);
}

void thp_mode_param(struct bench_result *res, const struct thp_mode *m)
{
	bench_param_str(res, "thp_enabled", m->enabled);
	bench_param_str(res, "thp_defrag", m->defrag);
}

/* ---- /proc/vmstat ---- */

static const char *const vm_keys[VM_N] = {
	[VM_THP_FAULT_ALLOC] = "thp_fault_alloc",
	[VM_THP_FAULT_FALLBACK] = "thp_fault_fallback",
	[VM_THP_SPLIT_PAGE] = "thp_split_page",
	[VM_COMPACT_STALL] = "compact_stall",
};

void vmstat_read(struct bench_run *run, struct vmstat *ret)
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

void vmstat_sample(struct bench_result *res, const struct vmstat *a,
		   const struct vmstat *b)
{
	for (int i = 0; i < VM_N; i++)
		if (a->ok[i] && b->ok[i])
			bench_sample(res, vm_keys[i], "count",
				     (double)(b->v[i] - a->v[i]));
}

void vmstat_param_missing(struct bench_result *res, const struct vmstat *vs)
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

void vmstat_param(struct bench_result *res, const struct vmstat *a,
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

/* ---- /proc/self/smaps ---- */

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
				else if (key_is(line, klen, "ShmemPmdMapped"))
					field = &cur.shmem_pmd_kb;
				else if (key_is(line, klen, "FilePmdMapped"))
					field = &cur.file_pmd_kb;
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
		huge = (v.anon_huge_kb + v.shmem_pmd_kb + v.file_pmd_kb +
			v.private_hugetlb_kb + v.shared_hugetlb_kb)
		       << 10;
		total += huge < hi - lo ? huge : hi - lo;
		a = v.end;
	}
	*ret = total;
	return 0;
}

void smaps_sample_huge_fraction(struct bench_result *res, const char *buf,
				size_t len)
{
	_cleanup_free_ char *text = NULL;
	uint64_t bytes = 0;
	ssize_t n;
	int r;

	n = read_full_file("/proc/self/smaps", SMAPS_MAX, &text);
	r = n < 0 ? (int)n :
		    thp_smaps_huge_bytes(text, (uintptr_t)buf,
					 (uintptr_t)buf + len, &bytes);
	if (r < 0) {
		bench_param_str(res, "huge_fraction_unavailable",
				kfile_errname(r));
		return;
	}
	bench_sample(res, "huge_fraction", "fraction",
		     (double)bytes / (double)len);
}

/* ---- hugetlb pools ---- */

void hugetlb_pool_check(struct bench_run *run, struct bench_result *res,
			const char *pool, uint64_t page, const char *label,
			uint64_t bytes)
{
	uint64_t need = kfile_round_up(bytes, page) / page;
	int64_t nfree, resv = 0, avail;
	char path[256];
	int r;

	snprintf(path, sizeof(path), "%s/free_hugepages", pool);
	r = kfile_read_i64(run, path, &nfree);
	if (r == -ENOENT) {
		bench_result_skip(res, "%s hugetlb pages: absent (no %s)", label,
				  pool);
		return;
	}
	if (r < 0) {
		bench_result_skip(res, "%s hugetlb pool: %s unreadable: %s",
				  label, path, kfile_errname(r));
		return;
	}
	snprintf(path, sizeof(path), "%s/resv_hugepages", pool);
	if (kfile_read_i64(run, path, &resv) < 0)
		resv = 0;
	avail = nfree - resv;
	bench_param_i64(res, "hugetlb_pool_free", nfree);
	bench_param_i64(res, "hugetlb_pool_resv", resv);
	bench_param_i64(res, "hugetlb_pages_needed", (int64_t)need);
	if (avail < 0 || (uint64_t)avail < need) {
		if (resv > 0)
			bench_result_skip(
				res,
				"%s hugetlb pool has %lld free pages (%lld more reserved by other mappings), needs %llu",
				label, (long long)avail, (long long)resv,
				(unsigned long long)need);
		else
			bench_result_skip(
				res,
				"%s hugetlb pool has %lld free pages, needs %llu",
				label, (long long)avail,
				(unsigned long long)need);
	}
}

int64_t hugetlb_reserve_2m(struct bench_run *run, int64_t want,
			   struct bench_result *res)
{
	int64_t nr, nfree, resv = 0, target, after;
	char val[32];
	int r;

	bench_param_i64(res, "reserve_hugetlb_requested", want);
	r = kfile_read_i64(run, POOL_2M "/nr_hugepages", &nr);
	if (r == 0)
		r = kfile_read_i64(run, POOL_2M "/free_hugepages", &nfree);
	if (r == 0 && kfile_read_i64(run, POOL_2M "/resv_hugepages", &resv) < 0)
		resv = 0;
	if (r < 0) {
		bench_param_str(res, "reserve_hugetlb_result",
				r == -ENOENT ? "no 2 MiB pool" :
					       kfile_errname(r));
		return -1;
	}
	bench_param_i64(res, "reserve_hugetlb_pool_before", nr);
	if (nfree - resv >= want) {
		bench_param_str(res, "reserve_hugetlb_result", "already free");
		return -1;
	}
	target = nr + want - (nfree - resv);
	snprintf(val, sizeof(val), "%lld", (long long)nr);
	r = bench_restore_arm(run, POOL_2M "/nr_hugepages", val);
	if (r < 0) {
		bench_param_str(res, "reserve_hugetlb_result", kfile_errname(r));
		return -1;
	}
	/* from here on the old size is written back, whatever happens */
	snprintf(val, sizeof(val), "%lld", (long long)target);
	r = bench_write_file(run, POOL_2M "/nr_hugepages", val);
	if (r < 0) {
		bench_param_str(res, "reserve_hugetlb_result", kfile_errname(r));
		return nr;
	}
	if (kfile_read_i64(run, POOL_2M "/nr_hugepages", &after) < 0) {
		bench_param_str(res, "reserve_hugetlb_result", "unreadable");
		return nr;
	}
	bench_param_i64(res, "reserve_hugetlb_pool_after", after);
	bench_param_str(res, "reserve_hugetlb_result",
			after >= target ? "ok" : "partial");
	return nr;
}

void hugetlb_restore_2m(struct bench_run *run, int64_t nr,
			struct bench_result *res)
{
	char val[32];
	int r;

	snprintf(val, sizeof(val), "%lld", (long long)nr);
	r = bench_write_file(run, POOL_2M "/nr_hugepages", val);
	if (r == 0)
		bench_restore_done(run, POOL_2M "/nr_hugepages");
	if (res)
		bench_param_str(res, "reserve_hugetlb_restored",
				r < 0 ? kfile_errname(r) : "ok");
}
