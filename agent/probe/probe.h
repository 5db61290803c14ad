/* SPDX-License-Identifier: MIT */
/*
 * The capability probe: what a host's kernel and hypervisor let fleetbench
 * use, as one JSON document (docs/probe.md lists every key).
 *
 * Every item is either its value or an "unknown" object that says why:
 *     "defrag": { "unknown": "absent" }
 * so no item is ever silently dropped. Every file is read below opts->root,
 * so tests can point the probe at a fixture tree; what cannot come from files
 * (CPUID, uname, the io_uring syscalls, perf_event_open) goes through struct probe_sys, which
 * tests substitute.
 */
#ifndef FLEETBENCH_PROBE_H
#define FLEETBENCH_PROBE_H

#include <dirent.h>
#include <json-c/json.h>
#include <linux/io_uring.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <time.h>

struct perf_event_attr;

/* The probe's window on what files cannot tell. All return -errno. */
struct probe_sys {
	/* CPUID leaf/subleaf into {eax, ebx, ecx, edx}; -ENOTSUP off x86. */
	int (*cpuid)(uint32_t leaf, uint32_t subleaf, uint32_t ret[4]);
	int (*uname)(struct utsname *ret);
	/* io_uring_setup(2): fd or -errno. */
	int (*uring_setup)(uint32_t entries, struct io_uring_params *p);
	/* io_uring_register(2): >= 0 or -errno. */
	int (*uring_register)(int fd, unsigned int opcode, void *arg,
			      unsigned int nr_args);
	/* Closes what uring_setup returned. */
	void (*uring_close)(int fd);
	/* perf_event_open(2): a counter fd or -errno. */
	int (*perf_open)(struct perf_event_attr *attr, pid_t pid, int cpu,
			 int group_fd, unsigned long flags);
	/* Closes what perf_open returned. */
	void (*perf_close)(int fd);
};

/* The running machine's CPU and kernel. */
extern const struct probe_sys probe_sys_real;

/* Where a label (provider, instance type, region) came from. */
enum label_source {
	LABEL_NONE = 0,
	LABEL_FLAG,
	LABEL_CONFIG,
	LABEL_DMI,
};

struct probe_label {
	const char *value; /* NULL when not given */
	enum label_source source; /* LABEL_FLAG or LABEL_CONFIG when given */
};

struct probe_opts {
	const char *root; /* prefix for every file read; "/" on a real host */
	const char *work_dir; /* the agent's work directory (filesystem probe) */
	struct probe_label provider, instance_type, region;
	unsigned int steal_window_ms; /* 0: skip the steal sample */
	const struct probe_sys *sys; /* NULL: probe_sys_real */
};

/*
 * Runs every probe and returns the report in *ret (caller json_object_put()s
 * it). Returns 0, or -errno when the root cannot be opened or memory runs out;
 * an item that cannot be read is reported as unknown, not as a failure.
 */
int probe_run(const struct probe_opts *opts, struct json_object **ret);

/* The top-level sections, in report order (for docs and tests). */
size_t probe_section_count(void);
const char *probe_section_name(size_t i);

/* -------- for probe_*.c modules -------- */

struct virt_dmi;

struct probe_ctx {
	const struct probe_opts *opts;
	const struct probe_sys *sys;
	int root_fd; /* O_PATH directory of opts->root */
	struct timespec t_start; /* CLOCK_MONOTONIC when the probe began */
	char *stat_start; /* /proc/stat read when the probe began, or NULL */
	int stat_start_err; /* -errno when stat_start is NULL */
	struct virt_dmi *dmi; /* the virt probe's DMI, for labels; or NULL */
};

struct probe_ops {
	const char *name; /* top-level key */
	int (*run)(struct probe_ctx *ctx, struct json_object *section);
};

/*
 * Reads root/path (path is absolute, e.g. "/proc/meminfo") into a new
 * NUL-terminated buffer. Returns its length, or -errno (-ENOENT when absent,
 * -EISDIR, -EFBIG over 16 MiB). A file that is not valid text (contains NUL)
 * is returned as is; callers check what they parse.
 */
ssize_t probe_read_file(struct probe_ctx *ctx, const char *path, char **ret);

/*
 * Reads a one-line sysfs/procfs value into buf with the trailing newline and
 * surrounding white space removed. Returns its length or -errno: -ENODATA
 * for an empty file, -EBADMSG for one holding NUL bytes or not fitting buf.
 */
ssize_t probe_read_line(struct probe_ctx *ctx, const char *path, char *buf,
			size_t size);

/*
 * Reads a whole procfs/sysfs text file below the probe root into *ret
 * (caller frees). The kernel ends every such file with a newline, so one
 * missing means it was cut short. Returns 0 or -errno; -EBADMSG when the
 * file is empty, holds a NUL byte, is truncated or (one_line) has more than
 * one line, with *reason saying which ("is empty", "is truncated", ...).
 */
int probe_read_text(struct probe_ctx *ctx, const char *path, bool one_line,
		    char **ret, const char **reason);

/* s without the white space (" \t\n") around it, cut in place. */
char *probe_trim(char *s);

/* Opens root/path as a directory stream. NULL with errno set. */
DIR *probe_opendir(struct probe_ctx *ctx, const char *path);

/* readlink(2) of root/path into buf, NUL-terminated. Length or -errno. */
ssize_t probe_readlink(struct probe_ctx *ctx, const char *path, char *buf,
		       size_t size);

/* Whether root/path exists (faccessat F_OK, following symlinks). */
bool probe_exists(struct probe_ctx *ctx, const char *path);

/* Whether s[0..len) is all printable ASCII (0x20 to 0x7e). */
bool probe_printable(const char *s, size_t len);

/* Strict integer parsing of a whole string (after trimming white space). */
int probe_parse_i64(const char *s, int64_t *ret);

/*
 * Finds "key<sep>value" in a "key: value" or "key value" text (meminfo,
 * vmstat, /proc/self/status) and copies the value, trimmed, into buf.
 * Returns 0, -ENOENT, or -EBADMSG.
 */
int probe_kv(const char *text, const char *key, char *buf, size_t size);

/* The reason text for an -errno: "absent", "EACCES", "not permitted", ... */
const char *probe_reason(int err);

/* Item setters. A NULL value from json-c allocation failure is ignored. */
void item_str(struct json_object *o, const char *key, const char *v);
void item_i64(struct json_object *o, const char *key, int64_t v);
void item_double(struct json_object *o, const char *key, double v);
void item_bool(struct json_object *o, const char *key, bool v);
void item_null(struct json_object *o, const char *key); /* "not set" */
void item_unknown(struct json_object *o, const char *key, const char *fmt,
		  ...) __attribute__((format(printf, 3, 4)));
/* An unknown item from an -errno (see probe_reason()). */
void item_unknown_err(struct json_object *o, const char *key, int err);
/* A new object / array at key, returned for filling (NULL on ENOMEM). */
struct json_object *item_object(struct json_object *o, const char *key);
struct json_object *item_array(struct json_object *o, const char *key);
/* Appends v / a new object (returned for filling) to an item_array();
 * -ENOMEM / NULL when json-c cannot allocate. */
int item_append_str(struct json_object *arr, const char *v);
struct json_object *item_append_object(struct json_object *arr);
/* True when v is an { "unknown": reason } item. */
bool item_is_unknown(struct json_object *v);

/*
 * Reads a one-line file for item key into buf (see probe_read_line()). On
 * failure sets the item unknown ("absent", "EACCES", "malformed: PATH
 * empty", ...) and returns the -errno; else the length.
 */
ssize_t item_read_line(struct probe_ctx *ctx, struct json_object *o,
		       const char *key, const char *path, char *buf,
		       size_t size);

/*
 * Sets key to the trimmed content of a one-line file read with
 * probe_read_text(), or to unknown with the reason ("absent",
 * "malformed: <path> is empty", "malformed: <path> is truncated", ...).
 */
void item_file_line(struct probe_ctx *ctx, struct json_object *o,
		    const char *key, const char *path);

/*
 * File-backed items: read root/path and set key to the trimmed string, the
 * integer, or the selected value of a bracketed list ("always [madvise]
 * never" gives { "selected": "madvise", "options": [ ... ] }); on failure the
 * item is unknown with the reason ("absent", "malformed: ...").
 * Return 0 or the -errno that made the item unknown.
 */
int item_file_str(struct probe_ctx *ctx, struct json_object *o,
		  const char *key, const char *path);
int item_file_i64(struct probe_ctx *ctx, struct json_object *o,
		  const char *key, const char *path);
int item_file_bracket(struct probe_ctx *ctx, struct json_object *o,
		      const char *key, const char *path);
/* item_file_i64() that also sets *ret (when not NULL) to the value it
 * reported, when it returns 0. */
int item_file_i64_value(struct probe_ctx *ctx, struct json_object *o,
			const char *key, const char *path, int64_t *ret);

/*
 * A bracketed sysfs list, "always [madvise] never": the options in order
 * and which of them is selected. The strings point into text, which the
 * value owns; probe_bracket_release() frees both.
 */
struct probe_bracket {
	char *text;
	const char **options;
	size_t n_options, cap;
	size_t selected; /* index into options */
};

/*
 * Parses "a [b] c" (white space separated, exactly one option in brackets,
 * no other brackets) into *ret. 0, -EBADMSG or -ENOMEM; *ret is written
 * only on success.
 */
int probe_bracket_parse(const char *text, struct probe_bracket *ret);
void probe_bracket_release(struct probe_bracket *b);

/* The item { selected, options } of b; NULL when memory runs out. */
struct json_object *probe_bracket_json(const struct probe_bracket *b);

/* probe_bracket_parse() into { selected, options }. 0, -EBADMSG or
 * -ENOMEM. */
int probe_parse_bracket(const char *text, struct json_object **ret);

#endif
