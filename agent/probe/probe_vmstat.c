/* SPDX-License-Identifier: MIT */
/* THP and compaction event counters from /proc/vmstat. */
#include <errno.h>
#include <string.h>

#include "cleanup.h"
#include "probe_modules.h"

#define VMSTAT_PATH "/proc/vmstat"
#define VMSTAT_NAME_MAX 64

/* The counters the benchmarks read: always reported, "absent" if missing. */
static const char *const vmstat_required[] = {
	"thp_fault_alloc",
	"thp_fault_fallback",
	"thp_split_page",
	"compact_stall",
};

/* A thp_* or compact_* counter name made of [a-z0-9_]. */
static bool vmstat_wanted(const char *name, size_t len)
{
	if (len >= VMSTAT_NAME_MAX)
		return false;
	if (!(len > 4 && !strncmp(name, "thp_", 4)) &&
	    !(len > 8 && !strncmp(name, "compact_", 8)))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') ||
		      (name[i] >= '0' && name[i] <= '9') || name[i] == '_'))
			return false;
	return true;
}

/*
 * One "name value" line into name and *ret: 1 for a wanted counter with a
 * non-negative integer value, -EBADMSG for a wanted counter without one
 * (name is set), 0 for a line the probe does not report.
 */
static int vmstat_parse_line(const char *line, size_t len,
			     char name[VMSTAT_NAME_MAX], int64_t *ret)
{
	const char *sp = memchr(line, ' ', len);
	size_t namelen = sp ? (size_t)(sp - line) : len;
	size_t vlen = sp ? len - namelen - 1 : 0;
	char val[32];

	if (!vmstat_wanted(line, namelen))
		return 0;
	memcpy(name, line, namelen);
	name[namelen] = '\0';
	if (vlen == 0 || vlen >= sizeof(val))
		return -EBADMSG;
	memcpy(val, sp + 1, vlen);
	val[vlen] = '\0';
	if (probe_parse_i64(val, ret) < 0 || *ret < 0)
		return -EBADMSG;
	return 1;
}

/* The item of one line, when the probe reports its counter. */
static void vmstat_line(struct json_object *counters, const char *line,
			size_t len)
{
	char name[VMSTAT_NAME_MAX];
	int64_t v;
	int r = vmstat_parse_line(line, len, name, &v);

	if (r > 0)
		item_i64(counters, name, v);
	else if (r < 0)
		item_unknown(counters, name, "malformed: %s %s is not a count",
			     VMSTAT_PATH, name);
}

static int probe_vmstat(struct probe_ctx *ctx, struct json_object *out)
{
	_cleanup_free_ char *text = NULL;
	struct json_object *counters = item_object(out, "counters");
	bool truncated = false;
	ssize_t n;

	if (!counters)
		return -ENOMEM;
	n = probe_read_file(ctx, VMSTAT_PATH, &text);
	if (n < 0) {
		for (size_t i = 0; i < ARRAY_SIZE(vmstat_required); i++)
			item_unknown_err(counters, vmstat_required[i], (int)n);
		return 0;
	}
	if (n == 0) {
		for (size_t i = 0; i < ARRAY_SIZE(vmstat_required); i++)
			item_unknown(counters, vmstat_required[i],
				     "malformed: %s empty", VMSTAT_PATH);
		return 0;
	}
	/*
	 * Stops at an embedded NUL: what follows it is not vmstat text. A last
	 * line without its newline was cut short, in its name or its value, so
	 * it is not trusted, and a counter missing after it may have been cut.
	 */
	for (const char *line = text; *line;) {
		const char *eol = strchr(line, '\n');

		if (!eol) {
			truncated = true;
			break;
		}
		vmstat_line(counters, line, (size_t)(eol - line));
		line = eol + 1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(vmstat_required); i++) {
		if (json_object_object_get_ex(counters, vmstat_required[i],
					      NULL))
			continue;
		if (truncated)
			item_unknown(counters, vmstat_required[i],
				     "malformed: %s truncated", VMSTAT_PATH);
		else
			item_unknown(counters, vmstat_required[i], "absent");
	}
	return 0;
}

const struct probe_ops probe_vmstat_ops = {
	.name = "vmstat",
	.run = probe_vmstat,
};
