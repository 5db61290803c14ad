/* SPDX-License-Identifier: MIT */
/* The host: name, machine id, architecture, CPU, vCPU counts, memory, NUMA. */
#include "probe_host.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "probe_modules.h"

#define CPU_DIR "/sys/devices/system/cpu"
#define NODE_DIR "/sys/devices/system/node"
#define CPUINFO "/proc/cpuinfo"
#define MEMINFO "/proc/meminfo"

/*
 * No kernel has ids anywhere near this (NR_CPUS is at most 8192 on distro
 * kernels); a larger number is garbage, and the bound keeps the count far
 * from overflow.
 */
#define CPULIST_ID_MAX 4194304

static int parse_id(const char **p, int64_t *ret)
{
	const char *s = *p;
	int64_t v = 0;

	if (*s < '0' || *s > '9')
		return -EBADMSG;
	for (; *s >= '0' && *s <= '9'; s++) {
		v = v * 10 + (*s - '0');
		if (v > CPULIST_ID_MAX)
			return -EBADMSG;
	}
	*p = s;
	*ret = v;
	return 0;
}

int host_parse_cpulist(const char *s, int64_t *ret)
{
	int64_t count = 0, prev = -1;

	for (;;) {
		int64_t lo, hi;

		if (parse_id(&s, &lo) < 0)
			return -EBADMSG;
		hi = lo;
		if (*s == '-') {
			s++;
			if (parse_id(&s, &hi) < 0 || hi < lo)
				return -EBADMSG;
		}
		/* The kernel prints a bitmap: ascending, never overlapping. */
		if (lo <= prev)
			return -EBADMSG;
		count += hi - lo + 1;
		prev = hi;
		if (!*s)
			break;
		if (*s++ != ',')
			return -EBADMSG;
	}
	*ret = count;
	return 0;
}

int host_cpuinfo_field(const char *text, const char *key, char *buf,
		       size_t size)
{
	size_t klen = strlen(key);
	const char *line = text;

	while (*line && *line != '\n') {
		const char *eol = strchr(line, '\n');
		const char *end = eol ? eol : line + strlen(line);
		const char *v = line + klen;

		if ((size_t)(end - line) > klen && !strncmp(line, key, klen)) {
			while (v < end && (*v == ' ' || *v == '\t'))
				v++;
			if (v < end && *v == ':') {
				/* A line without its newline was cut off. */
				if (!eol)
					return -EBADMSG;
				v++;
				while (v < end && (*v == ' ' || *v == '\t'))
					v++;
				while (end > v &&
				       (end[-1] == ' ' || end[-1] == '\t'))
					end--;
				if (end == v || (size_t)(end - v) >= size)
					return -EBADMSG;
				memcpy(buf, v, (size_t)(end - v));
				buf[end - v] = '\0';
				return 0;
			}
		}
		if (!eol)
			break;
		line = eol + 1;
	}
	return -ENOENT;
}

static void probe_machine_id(struct probe_ctx *ctx, struct json_object *out)
{
	/* systemd's file first; dbus keeps its own copy where systemd is not
	 * used (containers, older distributions). */
	const char *path = "/etc/machine-id";
	char buf[64];
	ssize_t n = probe_read_line(ctx, path, buf, sizeof(buf));

	if (n == -ENOENT) {
		path = "/var/lib/dbus/machine-id";
		n = probe_read_line(ctx, path, buf, sizeof(buf));
	}
	if (n < 0 && n != -EBADMSG && n != -ENODATA) {
		item_unknown_err(out, "machine_id", (int)n);
		return;
	}
	if (n != 32 || strspn(buf, "0123456789abcdef") != 32) {
		item_unknown(out, "machine_id",
			     "malformed: %s is not 32 lowercase hex digits",
			     path);
		return;
	}
	item_str(out, "machine_id", buf);
}

static void probe_architecture(struct probe_ctx *ctx, struct json_object *out)
{
	struct utsname u;
	int r = ctx->sys->uname(&u);

	if (r < 0) {
		item_unknown_err(out, "architecture", r);
		return;
	}
	u.machine[sizeof(u.machine) - 1] = '\0';
	if (!u.machine[0]) {
		item_unknown(out, "architecture",
			     "malformed: uname machine is empty");
		return;
	}
	item_str(out, "architecture", u.machine);
}

/*
 * Sets key from the first of keys[] present in cpuinfo's first block.
 * Returns 0, or -EBADMSG after setting it unknown; -ENOENT, with key left
 * unset, when none is present.
 */
static int item_cpuinfo(struct json_object *out, const char *key,
			const char *text, const char *const *keys, size_t n)
{
	char buf[256];

	for (size_t i = 0; i < n; i++) {
		int r = host_cpuinfo_field(text, keys[i], buf, sizeof(buf));

		if (r == 0) {
			item_str(out, key, buf);
			return 0;
		}
		if (r == -EBADMSG) {
			item_unknown(out, key,
				     "malformed: bad '%s' line in " CPUINFO,
				     keys[i]);
			return r;
		}
	}
	return -ENOENT;
}

static void probe_cpu(struct probe_ctx *ctx, struct json_object *out)
{
	/* x86 "vendor_id"; arm64 has only the implementer code. */
	static const char *const vendor_keys[] = {
		"vendor_id",
		"CPU implementer",
	};
	/* x86 and arm32 "model name", MIPS "cpu model", POWER "cpu", old
	 * arm "Processor". */
	static const char *const model_keys[] = {
		"model name",
		"cpu model",
		"cpu",
		"Processor",
	};
	_cleanup_free_ char *text = NULL;
	const char *reason;
	char impl[64], part[64], model[160];
	int r;

	r = probe_read_text(ctx, CPUINFO, false, &text, &reason);
	if (r < 0) {
		if (r == -EBADMSG) {
			item_unknown(out, "cpu_vendor",
				     "malformed: " CPUINFO " %s", reason);
			item_unknown(out, "cpu_model",
				     "malformed: " CPUINFO " %s", reason);
		} else {
			item_unknown_err(out, "cpu_vendor", r);
			item_unknown_err(out, "cpu_model", r);
		}
		return;
	}
	if (item_cpuinfo(out, "cpu_vendor", text, vendor_keys,
			 ARRAY_SIZE(vendor_keys)) == -ENOENT)
		item_unknown_err(out, "cpu_vendor", -ENOENT);

	if (item_cpuinfo(out, "cpu_model", text, model_keys,
			 ARRAY_SIZE(model_keys)) != -ENOENT)
		return;
	/* arm64 names no model: its implementer and part codes identify the
	 * core (implementer 0x41 part 0xd0c is an Arm Neoverse N1). */
	if (host_cpuinfo_field(text, "CPU implementer", impl, sizeof(impl)) ||
	    host_cpuinfo_field(text, "CPU part", part, sizeof(part))) {
		item_unknown_err(out, "cpu_model", -ENOENT);
		return;
	}
	snprintf(model, sizeof(model), "implementer %s part %s", impl, part);
	item_str(out, "cpu_model", model);
}

/*
 * A CPU or node list file: the number of entries at count_key and, when
 * list_key is given, the list itself.
 */
static void item_cpulist(struct probe_ctx *ctx, struct json_object *out,
			 const char *count_key, const char *list_key,
			 const char *path)
{
	_cleanup_free_ char *buf = NULL;
	const char *reason;
	char *text = NULL;
	int64_t count;
	int r;

	r = probe_read_text(ctx, path, true, &buf, &reason);
	if (r == 0)
		text = probe_trim(buf);
	if (r == 0 && host_parse_cpulist(text, &count) < 0) {
		r = -EBADMSG;
		reason = "is not a list of ids and ranges";
	}
	if (r < 0) {
		if (r == -EBADMSG) {
			item_unknown(out, count_key, "malformed: %s %s", path,
				     reason);
			if (list_key)
				item_unknown(out, list_key, "malformed: %s %s",
					     path, reason);
		} else {
			item_unknown_err(out, count_key, r);
			if (list_key)
				item_unknown_err(out, list_key, r);
		}
		return;
	}
	item_i64(out, count_key, count);
	if (list_key)
		item_str(out, list_key, text);
}

/* A "Key:   1234 kB" line of /proc/meminfo. */
static void item_meminfo_kb(struct json_object *out, const char *key,
			    const char *text, const char *field)
{
	size_t len = strlen(text);
	char buf[64];
	int64_t v;
	int r = probe_kv(text, field, buf, sizeof(buf));
	size_t blen;

	if (r == -ENOENT) {
		/* Every line ends in a newline: without one the file was
		 * cut short, and the field may be in the part we miss. */
		if (len && text[len - 1] != '\n')
			item_unknown(out, key, "malformed: " MEMINFO
				     " is truncated");
		else
			item_unknown_err(out, key, r);
		return;
	}
	blen = r == 0 ? strlen(buf) : 0;
	if (r < 0 || blen < 4 || strcmp(buf + blen - 3, " kB")) {
		item_unknown(out, key, "malformed: %s in " MEMINFO
			     " is not a kB value", field);
		return;
	}
	buf[blen - 3] = '\0';
	if (probe_parse_i64(buf, &v) < 0 || v < 0) {
		item_unknown(out, key, "malformed: %s in " MEMINFO
			     " is not a kB value", field);
		return;
	}
	item_i64(out, key, v);
}

static void probe_memory(struct probe_ctx *ctx, struct json_object *out)
{
	_cleanup_free_ char *text = NULL;
	ssize_t n = probe_read_file(ctx, MEMINFO, &text);
	const char *reason = NULL;

	if (n < 0) {
		item_unknown_err(out, "memory_total_kb", (int)n);
		item_unknown_err(out, "memory_available_kb", (int)n);
		return;
	}
	if (n == 0)
		reason = "is empty";
	else if (memchr(text, '\0', (size_t)n))
		reason = "holds a NUL byte";
	if (reason) {
		item_unknown(out, "memory_total_kb", "malformed: " MEMINFO " %s",
			     reason);
		item_unknown(out, "memory_available_kb",
			     "malformed: " MEMINFO " %s", reason);
		return;
	}
	item_meminfo_kb(out, "memory_total_kb", text, "MemTotal");
	item_meminfo_kb(out, "memory_available_kb", text, "MemAvailable");
}

static int probe_host(struct probe_ctx *ctx, struct json_object *out)
{
	item_file_line(ctx, out, "hostname", "/proc/sys/kernel/hostname");
	probe_machine_id(ctx, out);
	probe_architecture(ctx, out);
	probe_cpu(ctx, out);
	item_cpulist(ctx, out, "vcpus_online", NULL, CPU_DIR "/online");
	item_cpulist(ctx, out, "vcpus_possible", NULL, CPU_DIR "/possible");
	probe_memory(ctx, out);
	/* Absent when the kernel is built without NUMA. */
	item_cpulist(ctx, out, "numa_nodes", "numa_node_list",
		     NODE_DIR "/online");
	return 0;
}

const struct probe_ops probe_host_ops = {
	.name = "host",
	.run = probe_host,
};
