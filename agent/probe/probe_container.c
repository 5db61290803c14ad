/* SPDX-License-Identifier: MIT */
/*
 * The container layer of the virt probe: the files and cgroup paths that
 * container managers leave, and the verdict they add up to.
 */
#include "probe_container.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"

/* Container kinds, most specific first: a lower rank wins the verdict. */
enum container_rank {
	RANK_SYSTEMD, /* /run/systemd/container, written by the manager */
	RANK_KUBEPODS,
	RANK_CONTAINERENV,
	RANK_LIBPOD,
	RANK_DOCKERENV,
	RANK_DOCKER_CGROUP,
	RANK_LXC_CGROUP,
	RANK_WSL,
	RANK_NONE,
};

/* /proc/1/cgroup path substrings that give a container away. */
static const struct {
	const char *needle;
	const char *marker;
	const char *name;
	enum container_rank rank;
} cgroup_markers[] = {
	{ "kubepods", "/proc/1/cgroup: kubepods", "kubernetes", RANK_KUBEPODS },
	{ "libpod", "/proc/1/cgroup: libpod", "podman", RANK_LIBPOD },
	{ "docker", "/proc/1/cgroup: docker", "docker", RANK_DOCKER_CGROUP },
	{ "/lxc", "/proc/1/cgroup: lxc", "lxc", RANK_LXC_CGROUP },
};

/* Values systemd and container managers write to /run/systemd/container. */
static const struct {
	const char *value;
	const char *name;
} systemd_containers[] = {
	{ "docker", "docker" },
	{ "podman", "podman" },
	{ "lxc", "lxc" },
	{ "lxc-libvirt", "lxc" },
	{ "systemd-nspawn", "systemd-nspawn" },
	{ "wsl", "wsl" },
};

/*
 * Scans /proc/1/cgroup ("hierarchy:controllers:path" lines) and returns a
 * bit per cgroup_markers[] entry found in a path, or -EBADMSG when the text
 * is not in that format.
 */
static int cgroup_scan(const char *text, size_t len)
{
	const char *line = text, *end = text + len;
	int found = 0, lines = 0;

	if (memchr(text, '\0', len))
		return -EBADMSG;
	while (line < end) {
		const char *eol = memchr(line, '\n', (size_t)(end - line));
		const char *lend = eol ? eol : end;
		const char *p = line, *path;

		if (lend == line) {
			line = lend + 1;
			continue;
		}
		while (p < lend && *p >= '0' && *p <= '9')
			p++;
		if (p == line || p == lend || *p != ':')
			return -EBADMSG;
		p = memchr(p + 1, ':', (size_t)(lend - p - 1));
		if (!p || p + 1 >= lend || p[1] != '/')
			return -EBADMSG;
		path = p + 1;
		for (size_t i = 0; i < ARRAY_SIZE(cgroup_markers); i++)
			if (memmem(path, (size_t)(lend - path),
				   cgroup_markers[i].needle,
				   strlen(cgroup_markers[i].needle)))
				found |= 1 << i;
		lines++;
		line = lend + 1;
	}
	return lines ? found : -EBADMSG;
}

struct container_verdict {
	const char *name;
	enum container_rank rank;
};

static int add_marker(struct json_object *markers, struct container_verdict *v,
		      const char *marker, const char *name,
		      enum container_rank rank)
{
	struct json_object *s = json_object_new_string(marker);

	if (!s)
		return -ENOMEM;
	json_object_array_add(markers, s);
	if (rank < v->rank) {
		v->rank = rank;
		v->name = name;
	}
	return 0;
}

int container_probe(struct probe_ctx *ctx, struct json_object *out)
{
	struct container_verdict v = { .name = "none", .rank = RANK_NONE };
	struct json_object *c = item_object(out, "container");
	struct json_object *markers = json_object_new_array();
	_cleanup_free_ char *cgroup = NULL;
	char buf[256], marker[300];
	ssize_t n;
	int r = 0, cgroup_err = 0;

	if (!c || !markers) {
		json_object_put(markers);
		return -ENOMEM;
	}

	n = probe_read_line(ctx, "/run/systemd/container", buf, sizeof(buf));
	if (n >= 0 || n == -EBADMSG || n == -ENODATA) {
		const char *name = "other";

		if (n >= 0 && probe_printable(buf, (size_t)n)) {
			for (size_t i = 0; i < ARRAY_SIZE(systemd_containers);
			     i++)
				if (!strcmp(buf, systemd_containers[i].value))
					name = systemd_containers[i].name;
			snprintf(marker, sizeof(marker),
				 "/run/systemd/container: %s", buf);
		} else {
			snprintf(marker, sizeof(marker),
				 "/run/systemd/container: (malformed)");
		}
		r = add_marker(markers, &v, marker, name, RANK_SYSTEMD);
	}
	if (r >= 0 && probe_exists(ctx, "/run/.containerenv"))
		r = add_marker(markers, &v, "/run/.containerenv", "podman",
			       RANK_CONTAINERENV);
	if (r >= 0 && probe_exists(ctx, "/.dockerenv"))
		r = add_marker(markers, &v, "/.dockerenv", "docker",
			       RANK_DOCKERENV);

	n = probe_read_file(ctx, "/proc/1/cgroup", &cgroup);
	if (n >= 0)
		cgroup_err = cgroup_scan(cgroup, (size_t)n);
	else
		cgroup_err = (int)n;
	for (size_t i = 0; r >= 0 && cgroup_err > 0 &&
			   i < ARRAY_SIZE(cgroup_markers);
	     i++)
		if (cgroup_err & (1 << i))
			r = add_marker(markers, &v, cgroup_markers[i].marker,
				       cgroup_markers[i].name,
				       cgroup_markers[i].rank);

	n = probe_read_line(ctx, "/proc/sys/kernel/osrelease", buf,
			    sizeof(buf));
	if (r >= 0 && n > 0 && strcasestr(buf, "microsoft"))
		r = add_marker(markers, &v,
			       "/proc/sys/kernel/osrelease: microsoft", "wsl",
			       RANK_WSL);
	if (r < 0) {
		json_object_put(markers);
		return r;
	}

	if (v.rank != RANK_NONE || cgroup_err >= 0 || cgroup_err == -ENOENT)
		item_str(c, "name", v.name);
	else if (cgroup_err == -EBADMSG)
		item_unknown(c, "name",
			     "malformed: /proc/1/cgroup is not hierarchy:controllers:path lines");
	else
		item_unknown_err(c, "name", cgroup_err);
	json_object_object_add(c, "markers", markers);
	return 0;
}
