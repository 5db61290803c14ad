/* SPDX-License-Identifier: MIT */
/* Block devices and their queues, and the mount holding the work directory. */
#include "probe_block.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "cleanup.h"
#include "list.h"
#include "probe_modules.h"

static bool has_prefix(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* True when a '/'-separated component of path starts with prefix. */
static bool has_component(const char *path, const char *prefix)
{
	size_t plen = strlen(prefix);

	for (const char *c = path; c && *c;) {
		while (*c == '/')
			c++;
		if (!strncmp(c, prefix, plen))
			return true;
		c = strchr(c, '/');
	}
	return false;
}

const char *block_transport(const char *name, const char *link)
{
	/* Bus components of the device path, most specific first: a USB
	 * stick is also a SCSI disk, a virtio-scsi disk also has targets. */
	static const struct {
		const char *component, *transport;
	} by_path[] = {
		{ "usb", "usb" },     { "virtio", "virtio" }, { "vbd-", "xen" },
		{ "xen", "xen" },     { "nvme", "nvme" },     { "mmc", "mmc" },
		{ "ata", "sata" },    { "target", "scsi" },
	};
	/* Virtual devices, and hosts whose /sys/block has no links. */
	static const struct {
		const char *prefix, *transport;
	} by_name[] = {
		{ "loop", "loop" }, { "zram", "zram" }, { "dm-", "dm" },
		{ "md", "md" },     { "nvme", "nvme" }, { "vd", "virtio" },
		{ "xvd", "xen" },   { "mmcblk", "mmc" }, { "sd", "scsi" },
	};

	if (link && !has_component(link, "virtual")) {
		for (size_t i = 0; i < ARRAY_SIZE(by_path); i++)
			if (has_component(link, by_path[i].component))
				return by_path[i].transport;
	}
	for (size_t i = 0; i < ARRAY_SIZE(by_name); i++)
		if (has_prefix(name, by_name[i].prefix))
			return by_name[i].transport;
	return "other";
}

int block_parse_scheduler(const char *text, struct probe_bracket *ret)
{
	struct probe_bracket b = { 0 };
	char *tok, *save = NULL;

	if (strchr(text, '['))
		return probe_bracket_parse(text, ret);
	b.text = strdup(text);
	if (!b.text)
		return -ENOMEM;
	tok = strtok_r(b.text, " \t\n", &save);
	if (!tok || strchr(tok, ']') || strtok_r(NULL, " \t\n", &save)) {
		probe_bracket_release(&b);
		return -EBADMSG;
	}
	if (ARRAY_RESERVE(b.options, b.cap, 1) < 0) {
		probe_bracket_release(&b);
		return -ENOMEM;
	}
	b.options[b.n_options++] = tok;
	*ret = b;
	return 0;
}

/* Undoes the kernel's mangle(): "\040" is a space, "\134" a backslash. */
static int unescape(char *s)
{
	char *w = s;

	for (const char *r = s; *r; r++) {
		if (*r != '\\') {
			*w++ = *r;
			continue;
		}
		if (r[1] < '0' || r[1] > '3' || r[2] < '0' || r[2] > '7' ||
		    r[3] < '0' || r[3] > '7')
			return -EBADMSG;
		*w++ = (char)((r[1] - '0') << 6 | (r[2] - '0') << 3 |
			      (r[3] - '0'));
		r += 3;
	}
	*w = '\0';
	return 0;
}

static bool is_uint(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* "MAJ:MIN", both decimal. */
static int parse_devnum(const char *s, unsigned int *ret_major,
			unsigned int *ret_minor)
{
	const char *colon = strchr(s, ':');
	char major[16];
	unsigned long ma, mi;

	if (!colon || (size_t)(colon - s) >= sizeof(major))
		return -EBADMSG;
	memcpy(major, s, (size_t)(colon - s));
	major[colon - s] = '\0';
	if (!is_uint(major) || !is_uint(colon + 1) || strlen(major) > 9 ||
	    strlen(colon + 1) > 9)
		return -EBADMSG;
	ma = strtoul(major, NULL, 10);
	mi = strtoul(colon + 1, NULL, 10);
	*ret_major = (unsigned int)ma;
	*ret_minor = (unsigned int)mi;
	return 0;
}

/*
 * "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=c"
 * (proc(5)): six fields, optional fields up to "-", then exactly three.
 */
static int parse_mount_line(char *line, struct block_mount *m)
{
	char *f[64];
	size_t n = 0, sep = 0;
	char *save = line;

	/* Split on single spaces: an empty source shows as two spaces. */
	for (;;) {
		char *sp = strchr(save, ' ');

		if (n == ARRAY_SIZE(f))
			return -EBADMSG;
		f[n++] = save;
		if (!sp)
			break;
		*sp = '\0';
		save = sp + 1;
	}
	for (size_t i = 6; i < n; i++) {
		if (!strcmp(f[i], "-")) {
			sep = i;
			break;
		}
	}
	if (n < 10 || sep == 0 || n != sep + 4)
		return -EBADMSG;
	if (!is_uint(f[0]) || !is_uint(f[1]) || !*f[3] || !*f[5] ||
	    !*f[sep + 1] || !*f[sep + 3])
		return -EBADMSG;
	for (size_t i = 6; i < sep; i++)
		if (!*f[i])
			return -EBADMSG;
	if (parse_devnum(f[2], &m->major, &m->minor) < 0)
		return -EBADMSG;
	if (unescape(f[4]) < 0 || f[4][0] != '/' || unescape(f[sep + 1]) < 0 ||
	    unescape(f[sep + 2]) < 0 || unescape(f[sep + 3]) < 0 ||
	    unescape(f[5]) < 0)
		return -EBADMSG;
	m->mount_point = f[4];
	m->mount_options = f[5];
	m->fstype = f[sep + 1];
	m->source = f[sep + 2];
	m->super_options = f[sep + 3];
	return 0;
}

/* Length of mount point mp when it is path or a parent of it, else -1. */
static long covers(const char *mp, const char *path)
{
	size_t len = strlen(mp);

	if (!strcmp(mp, "/"))
		return path[0] == '/' ? 1 : -1;
	if (strncmp(path, mp, len) || (path[len] != '\0' && path[len] != '/'))
		return -1;
	return (long)len;
}

int block_mountinfo_find(char *text, const char *path, struct block_mount *ret,
			 unsigned int *ret_line)
{
	struct block_mount best = { 0 };
	long best_len = -1;
	unsigned int lineno = 0;
	char *line = text;

	if (!*text) {
		*ret_line = 0;
		return -EBADMSG;
	}
	while (*line) {
		char *eol = strchr(line, '\n');
		struct block_mount m;
		long l;

		lineno++;
		/* A last line without its newline was cut short. */
		if (!eol) {
			*ret_line = lineno;
			return -EBADMSG;
		}
		*eol = '\0';
		if (parse_mount_line(line, &m) < 0) {
			*ret_line = lineno;
			return -EBADMSG;
		}
		l = covers(m.mount_point, path);
		if (l >= 0 && l >= best_len) {
			best = m;
			best_len = l;
		}
		line = eol + 1;
	}
	if (best_len < 0)
		return -ENOENT;
	*ret = best;
	return 0;
}

/* Lexical normalisation: "/a//b/./c/../d/" is "/a/b/d". */
static void normalize_path(const char *in, char *out, size_t size)
{
	size_t len = 0;

	out[0] = '\0';
	for (const char *c = in; *c;) {
		const char *end = strchrnul(c, '/');
		size_t clen = (size_t)(end - c);

		if (clen == 0 || (clen == 1 && c[0] == '.')) {
			/* skip */
		} else if (clen == 2 && c[0] == '.' && c[1] == '.') {
			while (len > 0 && out[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
			out[len] = '\0';
		} else if (len + 1 + clen < size) {
			out[len++] = '/';
			memcpy(out + len, c, clen);
			len += clen;
			out[len] = '\0';
		}
		c = *end ? end + 1 : end;
	}
	if (len == 0)
		snprintf(out, size, "/");
}

/*
 * On the real host the work directory is resolved through symlinks; when it
 * does not exist yet, its nearest existing parent decides the mount.
 */
static void resolve_work_dir(const char *dir, char *out, size_t size)
{
	char cur[PATH_MAX];

	snprintf(cur, sizeof(cur), "%s", dir);
	for (;;) {
		_cleanup_free_ char *real = realpath(cur, NULL);
		char *slash;

		if (real) {
			normalize_path(real, out, size);
			return;
		}
		slash = strrchr(cur, '/');
		if (!slash) {
			if (!strcmp(cur, "."))
				break;
			snprintf(cur, sizeof(cur), ".");
			continue;
		}
		if (slash == cur) {
			if (!cur[1]) /* even "/" failed */
				break;
			cur[1] = '\0';
		} else {
			*slash = '\0';
		}
	}
	normalize_path(dir, out, size);
}

static bool has_option(const char *options, const char *opt)
{
	size_t olen = strlen(opt), len;
	const char *cur = options, *item;

	while ((item = list_next(&cur, ',', &len)))
		if (len == olen && !strncmp(item, opt, olen))
			return true;
	return false;
}

/* DEVNAME= of a "KEY=value" uevent file into buf. */
static int uevent_devname(struct probe_ctx *ctx, const char *path, char *buf,
			  size_t size)
{
	_cleanup_free_ char *text = NULL;
	ssize_t n = probe_read_file(ctx, path, &text);

	if (n < 0)
		return (int)n;
	for (char *line = text; line && *line;) {
		char *eol = strchr(line, '\n');
		size_t llen = eol ? (size_t)(eol - line) : strlen(line);

		if (has_prefix(line, "DEVNAME=")) {
			size_t vlen = llen - strlen("DEVNAME=");

			if (vlen == 0 || vlen >= size)
				return -EBADMSG;
			memcpy(buf, line + strlen("DEVNAME="), vlen);
			buf[vlen] = '\0';
			return 0;
		}
		line = eol ? eol + 1 : NULL;
	}
	return -EBADMSG;
}

/* workdir.device and workdir.disk from the mount's MAJ:MIN. */
static void probe_mount_device(struct probe_ctx *ctx, struct json_object *out,
			       const struct block_mount *m)
{
	char sys[64], path[128], dev[256], link[PATH_MAX], part[64];
	const char *slash, *parent;
	ssize_t n;
	int r;

	if (m->major == 0) {
		/* tmpfs, overlay, btrfs and NFS use anonymous devices. */
		item_unknown(out, "device", "no block device (%s)", m->fstype);
		item_unknown(out, "disk", "no block device (%s)", m->fstype);
		return;
	}
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", m->major, m->minor);
	snprintf(path, sizeof(path), "%s/uevent", sys);
	r = uevent_devname(ctx, path, dev, sizeof(dev));
	if (r < 0) {
		if (r == -EBADMSG) {
			item_unknown(out, "device", "malformed: %s has no DEVNAME",
				     path);
			item_unknown(out, "disk", "malformed: %s has no DEVNAME",
				     path);
		} else {
			item_unknown_err(out, "device", r);
			item_unknown_err(out, "disk", r);
		}
		return;
	}
	item_str(out, "device", dev);

	snprintf(path, sizeof(path), "%s/partition", sys);
	n = probe_read_line(ctx, path, part, sizeof(part));
	if (n == -ENOENT) {
		item_str(out, "disk", dev);
		return;
	}
	if (n < 0) {
		item_unknown_err(out, "disk", (int)n);
		return;
	}
	/* A partition's directory sits inside its disk's directory. */
	n = probe_readlink(ctx, sys, link, sizeof(link));
	if (n < 0) {
		item_unknown_err(out, "disk", (int)n);
		return;
	}
	slash = strrchr(link, '/');
	if (!slash || slash == link) {
		item_unknown(out, "disk", "malformed: %s -> %s", sys, link);
		return;
	}
	link[slash - link] = '\0';
	slash = strrchr(link, '/');
	parent = slash ? slash + 1 : link;
	if (!*parent || !strcmp(parent, "..") || !strcmp(parent, ".")) {
		item_unknown(out, "disk", "malformed: %s has no parent disk",
			     sys);
		return;
	}
	item_str(out, "disk", parent);
}

static void probe_workdir(struct probe_ctx *ctx, struct json_object *out)
{
	static const char *const keys[] = {
		"mount_point", "fstype", "source", "mount_options",
		"super_options", "noatime", "relatime", "device", "disk",
	};
	const char *root = ctx->opts->root;
	const char *work_dir = ctx->opts->work_dir;
	_cleanup_free_ char *text = NULL;
	char path[PATH_MAX];
	struct block_mount m;
	unsigned int line = 0;
	ssize_t n;
	int r;

	if (!work_dir) {
		item_null(out, "path");
		for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
			item_unknown(out, keys[i], "no work directory");
		return;
	}
	item_str(out, "path", work_dir);
	if (!root || !strcmp(root, "/"))
		resolve_work_dir(work_dir, path, sizeof(path));
	else
		normalize_path(work_dir, path, sizeof(path));

	n = probe_read_file(ctx, "/proc/self/mountinfo", &text);
	if (n < 0) {
		for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
			item_unknown_err(out, keys[i], (int)n);
		return;
	}
	if (memchr(text, '\0', (size_t)n))
		r = -EBADMSG;
	else
		r = block_mountinfo_find(text, path, &m, &line);
	if (r < 0) {
		for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
			if (r == -ENOENT)
				item_unknown(out, keys[i], "no mount covers %s",
					     path);
			else if (line == 0)
				item_unknown(out, keys[i],
					     "malformed: /proc/self/mountinfo empty");
			else
				item_unknown(out, keys[i],
					     "malformed: /proc/self/mountinfo line %u",
					     line);
		}
		return;
	}
	item_str(out, "mount_point", m.mount_point);
	item_str(out, "fstype", m.fstype);
	item_str(out, "source", m.source);
	item_str(out, "mount_options", m.mount_options);
	item_str(out, "super_options", m.super_options);
	item_bool(out, "noatime", has_option(m.mount_options, "noatime"));
	item_bool(out, "relatime", has_option(m.mount_options, "relatime"));
	probe_mount_device(ctx, out, &m);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* The names in /sys/block, sorted. Count or -errno. */
static int list_block(struct probe_ctx *ctx, char ***ret)
{
	_cleanup_closedir_ DIR *d = probe_opendir(ctx, "/sys/block");
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	if (!d)
		return -errno;
	errno = 0;
	while ((de = readdir(d))) {
		char *name;

		if (de->d_name[0] == '.')
			continue;
		if (ARRAY_RESERVE(names, cap, n + 1) < 0)
			goto nomem;
		name = strdup(de->d_name);
		if (!name)
			goto nomem;
		names[n++] = name;
		errno = 0;
	}
	if (errno) {
		int err = -errno;

		free_names(names, n);
		return err;
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), str_cmp);
	*ret = names;
	return (int)n;
nomem:
	free_names(names, n);
	return -ENOMEM;
}

static void item_file_bool(struct probe_ctx *ctx, struct json_object *o,
			   const char *key, const char *path)
{
	char buf[32];
	ssize_t n = item_read_line(ctx, o, key, path, buf, sizeof(buf));

	if (n < 0)
		return;
	if (strcmp(buf, "0") && strcmp(buf, "1")) {
		item_unknown(o, key, "malformed: %s is not 0 or 1", path);
		return;
	}
	item_bool(o, key, buf[0] == '1');
}

static void item_file_scheduler(struct probe_ctx *ctx, struct json_object *o,
				const char *key, const char *path)
{
	char buf[1024];
	ssize_t n = item_read_line(ctx, o, key, path, buf, sizeof(buf));
	struct probe_bracket b;
	struct json_object *v;
	int r;

	if (n < 0)
		return;
	r = block_parse_scheduler(buf, &b);
	if (r == -ENOMEM)
		return;
	if (r < 0) {
		item_unknown(o, key,
			     "malformed: %s has no single [selected] value",
			     path);
		return;
	}
	v = probe_bracket_json(&b);
	probe_bracket_release(&b);
	if (v)
		json_object_object_add(o, key, v);
}

/* The size file counts 512-byte sectors whatever the logical block size. */
static int device_size(struct probe_ctx *ctx, const char *name,
		       int64_t *ret_sectors)
{
	char path[PATH_MAX], buf[64];
	int64_t v;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/block/%s/size", name);
	n = probe_read_line(ctx, path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	if (probe_parse_i64(buf, &v) < 0 || v < 0 || v > INT64_MAX / 512)
		return -EDOM;
	*ret_sectors = v;
	return 0;
}

static void probe_device(struct probe_ctx *ctx, struct json_object *arr,
			 const char *name)
{
	static const char *const ints[] = { "nr_requests", "rq_affinity" };
	char path[PATH_MAX], link[PATH_MAX];
	struct json_object *d;
	int64_t sectors = 0;
	int size_err;

	size_err = device_size(ctx, name, &sectors);
	/* Unused loop and RAM disk slots: not devices anyone can use. */
	if (size_err == 0 && sectors == 0 &&
	    (has_prefix(name, "loop") || has_prefix(name, "ram")))
		return;

	d = json_object_new_object();
	if (!d)
		return;
	item_str(d, "name", name);
	snprintf(path, sizeof(path), "/sys/block/%s", name);
	item_str(d, "transport",
		 block_transport(name, probe_readlink(ctx, path, link,
						      sizeof(link)) > 0 ?
					       link :
					       NULL));
	snprintf(path, sizeof(path), "/sys/block/%s/queue/rotational", name);
	item_file_bool(ctx, d, "rotational", path);
	snprintf(path, sizeof(path), "/sys/block/%s/queue/scheduler", name);
	item_file_scheduler(ctx, d, "scheduler", path);
	for (size_t i = 0; i < ARRAY_SIZE(ints); i++) {
		snprintf(path, sizeof(path), "/sys/block/%s/queue/%s", name,
			 ints[i]);
		item_file_i64(ctx, d, ints[i], path);
	}
	snprintf(path, sizeof(path), "/sys/block/%s/device/model", name);
	item_file_str(ctx, d, "model", path);
	if (size_err == 0)
		item_i64(d, "size_bytes", sectors * 512);
	else if (size_err == -ENODATA || size_err == -EBADMSG ||
		 size_err == -EDOM)
		item_unknown(d, "size_bytes",
			     "malformed: /sys/block/%s/size %s", name,
			     size_err == -EDOM ? "is not a sector count" :
						 "empty");
	else
		item_unknown_err(d, "size_bytes", size_err);
	snprintf(path, sizeof(path), "/sys/block/%s/queue/logical_block_size",
		 name);
	item_file_i64(ctx, d, "logical_block_size", path);
	json_object_array_add(arr, d);
}

static int probe_block(struct probe_ctx *ctx, struct json_object *out)
{
	char **names = NULL;
	struct json_object *arr;
	int n = list_block(ctx, &names);

	if (n == -ENOMEM)
		return n;
	if (n < 0) {
		item_unknown_err(out, "devices", n);
	} else {
		arr = item_array(out, "devices");
		for (int i = 0; i < n; i++)
			probe_device(ctx, arr, names[i]);
		free_names(names, (size_t)n);
	}
	probe_workdir(ctx, item_object(out, "workdir"));
	return 0;
}

const struct probe_ops probe_block_ops = {
	.name = "block",
	.run = probe_block,
};
