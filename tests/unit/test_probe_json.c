/* SPDX-License-Identifier: MIT */
/*
 * docs/probe.md and the probe's JSON agree, in both directions: on the real
 * machine and on every fixture tree, every key the probe emits is
 * documented, and every documented key is present (as a value, or inside an
 * item reported unknown, or under an array that is empty on that host).
 * Across all runs each documented key is seen at least once outside an
 * empty array, so the docs list nothing the probe never emits.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cleanup.h"
#include "probe.h"
#include "probe_test.h"

#define MAX_KEYS 2048

static char *doc_keys[MAX_KEYS];
static size_t n_doc_keys;
static int doc_seen[MAX_KEYS];

static int load_doc_keys(const char *path)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char line[4096];

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *start, *end;

		if (strncmp(line, "| `", 3))
			continue;
		start = line + 3;
		end = strchr(start, '`');
		if (!end || n_doc_keys == MAX_KEYS)
			continue;
		*end = '\0';
		doc_keys[n_doc_keys++] = strdup(start);
	}
	return 0;
}

/* A documented key with a <name> segment matches any one key there. */
static int doc_match(const char *doc, const char *path)
{
	const char *w = strstr(doc, "<name>");
	size_t plen, slen, len = strlen(path);
	const char *suffix;

	if (!w)
		return !strcmp(doc, path);
	plen = (size_t)(w - doc);
	suffix = w + strlen("<name>");
	slen = strlen(suffix);
	if (len <= plen + slen || strncmp(doc, path, plen) ||
	    strcmp(path + len - slen, suffix))
		return 0;
	for (size_t i = plen; i < len - slen; i++)
		if (path[i] == '.')
			return 0;
	return 1;
}

/*
 * path -> "leaf", "unknown" (an {"unknown": reason} item) or "empty" (an
 * empty array, whose element keys cannot be seen). Elements of a non-empty
 * array of objects flatten under "path[]".
 */
static void flatten(struct json_object *v, const char *path,
		    struct json_object *map)
{
	char sub[1024];
	const char *k = "leaf";

	if (v && item_is_unknown(v)) {
		k = "unknown";
	} else if (json_object_is_type(v, json_type_object)) {
		json_object_object_foreach(v, key, child)
		{
			snprintf(sub, sizeof(sub), "%s%s%s", path,
				 *path ? "." : "", key);
			flatten(child, sub, map);
		}
		return;
	} else if (json_object_is_type(v, json_type_array) &&
		   json_object_array_length(v) == 0) {
		k = "empty";
	} else if (json_object_is_type(v, json_type_array) &&
		   json_object_is_type(json_object_array_get_idx(v, 0),
				       json_type_object)) {
		snprintf(sub, sizeof(sub), "%s[]", path);
		for (size_t i = 0; i < json_object_array_length(v); i++)
			flatten(json_object_array_get_idx(v, i), sub, map);
		return;
	}
	json_object_object_add(map, path, json_object_new_string(k));
}

static const char *kind(struct json_object *map, const char *path)
{
	struct json_object *k;

	return json_object_object_get_ex(map, path, &k) ?
		       json_object_get_string(k) :
		       NULL;
}

/* Does map hold a key that starts with prefix? */
static int has_prefix(struct json_object *map, const char *prefix)
{
	size_t len = strlen(prefix);

	json_object_object_foreach(map, path, kv)
	{
		(void)kv;
		if (!strncmp(path, prefix, len))
			return 1;
	}
	return 0;
}

/*
 * Present, or covered: by an unknown item or an empty array above it, or,
 * for an array of objects documented by its own name, by its elements.
 */
static int doc_present(struct json_object *map, const char *doc)
{
	char prefix[1024];
	size_t len = strlen(doc);
	const char *k;

	if (kind(map, doc))
		return 1;
	snprintf(prefix, sizeof(prefix), "%s[]", doc);
	if (has_prefix(map, prefix))
		return 1;
	for (size_t i = 1; i < len; i++) {
		if (doc[i] != '.' && strncmp(doc + i, "[]", 2))
			continue;
		memcpy(prefix, doc, i);
		prefix[i] = '\0';
		k = kind(map, prefix);
		if (k && (!strcmp(k, "unknown") || !strcmp(k, "empty")))
			return 1;
	}
	return 0;
}

/* An unknown item or empty array at path stands for the keys below it. */
static int doc_covers(const char *doc, const char *path)
{
	size_t len = strlen(path);

	return !strncmp(doc, path, len) &&
	       (doc[len] == '.' || !strncmp(doc + len, "[]", 2));
}

static void check_run(const char *who, struct json_object *report)
{
	struct json_object *map = json_object_new_object();

	CHECK_(report != NULL, "%s: no report", who);
	if (!report)
		return;
	flatten(report, "", map);
	json_object_object_foreach(map, path, kv)
	{
		const char *k = json_object_get_string(kv);
		size_t i;

		for (i = 0; i < n_doc_keys; i++)
			if (doc_match(doc_keys[i], path) ||
			    (strcmp(k, "leaf") && doc_covers(doc_keys[i], path)))
				break;
		CHECK_(i < n_doc_keys, "%s: key '%s' is not in docs/probe.md",
		       who, path);
		for (i = 0; i < n_doc_keys; i++)
			if (doc_match(doc_keys[i], path) ||
			    (!strncmp(path, doc_keys[i], strlen(doc_keys[i])) &&
			     !strncmp(path + strlen(doc_keys[i]), "[]", 2)))
				doc_seen[i] = 1;
	}
	for (size_t i = 0; i < n_doc_keys; i++) {
		if (strstr(doc_keys[i], "<name>"))
			continue;
		CHECK_(doc_present(map, doc_keys[i]),
		       "%s: documented key '%s' is missing", who, doc_keys[i]);
	}
	json_object_put(map);
}

int main(void)
{
	static const char *const trees[] = {
		"kvm-guest", "vps-thp-always", "baremetal-numa", "old-kernel",
		"malformed", "topology-smt", "topology-cores", "topology-sockets",
	};
	const char *src = getenv("SOURCE_DIR");
	struct probe_opts opts = {
		.root = "/",
		.work_dir = "/var/tmp",
		.steal_window_ms = 20,
	};
	struct json_object *report = NULL;
	char path[4096];

	snprintf(path, sizeof(path), "%s/docs/probe.md", src ? src : ".");
	CHECK_OK(load_doc_keys(path));
	CHECK_(n_doc_keys > 100, "docs/probe.md documents %zu keys", n_doc_keys);

	/* every section of the report is documented */
	for (size_t s = 0; s < probe_section_count(); s++) {
		size_t i, len = strlen(probe_section_name(s));

		for (i = 0; i < n_doc_keys; i++)
			if (!strncmp(doc_keys[i], probe_section_name(s), len) &&
			    doc_keys[i][len] == '.')
				break;
		CHECK_(i < n_doc_keys, "section '%s' has no documented key",
		       probe_section_name(s));
	}

	CHECK_OK(probe_run(&opts, &report));
	check_run("real machine", report);
	json_object_put(report);

	for (size_t t = 0; t < sizeof(trees) / sizeof(trees[0]); t++) {
		report = probe_fixture(trees[t], NULL);
		check_run(trees[t], report);
		json_object_put(report);
	}

	for (size_t i = 0; i < n_doc_keys; i++) {
		CHECK_(doc_seen[i],
		       "documented key '%s' appears in no run", doc_keys[i]);
		free(doc_keys[i]);
	}
	return check_summary();
}
