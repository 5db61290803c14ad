/* SPDX-License-Identifier: MIT */
/*
 * The allowlist of agent keys: read from a directory of *.pub files or a
 * file of one key per line, held in a czmq certificate store (in memory).
 * The files are read here, not by zcertstore's disk loader: that one reads
 * ZPL certificates only (zcert_load), not today's one-line key files, and
 * reloads by itself whenever the directory changes, where the collector
 * swaps in a whole new list on SIGHUP only.
 */
#include "link_private.h"

#include <czmq.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zmq.h>

#include "cleanup.h"

#define LINK_LINE_MAX 4096 /* longest line accepted in an allowlist file */

struct link_allowlist {
	zcertstore_t *store; /* public keys only: the secrets are zeroes */
	size_t n;
};

/* A key listed twice counts once (and zcertstore_insert asserts on a key
 * it holds already). czmq aborts on out of memory. */
static void allowlist_add(struct link_allowlist *a, const char *key)
{
	static const uint8_t no_secret[LINK_KEY_BYTES];
	uint8_t bin[LINK_KEY_BYTES];
	zcert_t *cert;

	if (zcertstore_lookup(a->store, key))
		return;
	zmq_z85_decode(bin, key);
	cert = zcert_new_from(bin, no_secret);
	zcertstore_insert(a->store, &cert);
	a->n++;
}

/* Checks one line's key: 0, 1 for a line without one, or -EINVAL with
 * err set. */
static int allowlist_line(char *line, const char *path, unsigned lineno,
			  char **ret_key, char *err)
{
	char *key = line + strspn(line, " \t\r\n"), *rest;
	size_t klen;

	if (!*key || *key == '#')
		return 1;
	klen = strcspn(key, " \t\r\n");
	rest = key + klen;
	rest += strspn(rest, " \t\r\n");
	key[klen] = '\0';
	if (*rest && *rest != '#') {
		link_err_set(err, "%s:%u: unexpected text after the key", path,
			     lineno);
		return -EINVAL;
	}
	if (klen != LINK_KEY_LEN) {
		link_err_set(err,
			     "%s:%u: malformed key: %zu characters, not %d",
			     path, lineno, klen, LINK_KEY_LEN);
		return -EINVAL;
	}
	if (!link_key_valid(key)) {
		link_err_set(err, "%s:%u: malformed key: not valid Z85", path,
			     lineno);
		return -EINVAL;
	}
	*ret_key = key;
	return 0;
}

/*
 * One key per line; blank lines and lines starting with '#' are skipped,
 * and a key may be followed by white space and a '#' comment.
 */
static int allowlist_read_file(struct link_allowlist *a, const char *path,
			       char *err)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	size_t size = 0;
	unsigned lineno = 0;
	ssize_t len;

	f = fopen(path, "re");
	if (!f) {
		int r = -errno;

		link_err_set(err, "cannot open allowlist '%s': %s", path,
			     strerror(-r));
		return r;
	}
	while (errno = 0, (len = getline(&line, &size, f)) >= 0) {
		char *key;
		int r;

		lineno++;
		if (len > LINK_LINE_MAX) {
			link_err_set(err, "%s:%u: line too long", path, lineno);
			return -EINVAL;
		}
		if (memchr(line, '\0', (size_t)len)) {
			link_err_set(err, "%s:%u: NUL byte in line", path,
				     lineno);
			return -EINVAL;
		}
		r = allowlist_line(line, path, lineno, &key, err);
		if (r < 0)
			return r;
		if (r == 0)
			allowlist_add(a, key);
	}
	if (ferror(f)) {
		int r = errno ? -errno : -EIO;

		link_err_set(err, "cannot read allowlist '%s': %s", path,
			     strerror(-r));
		return r;
	}
	return 0;
}

static int pub_filter(const struct dirent *d)
{
	size_t len = strlen(d->d_name);

	return d->d_name[0] != '.' && len > 4 &&
	       !strcmp(d->d_name + len - 4, ".pub");
}

/* Every *.pub file in dir, in name order so errors are reproducible. */
static int allowlist_read_dir(struct link_allowlist *a, const char *dir,
			      char *err)
{
	struct dirent **names = NULL;
	int n, r = 0;

	n = scandir(dir, &names, pub_filter, alphasort);
	if (n < 0) {
		r = -errno;
		link_err_set(err, "cannot read allowlist directory '%s': %s",
			     dir, strerror(-r));
		return r;
	}
	for (int i = 0; i < n; i++) {
		_cleanup_free_ char *path = NULL;
		struct stat st;

		if (r == 0 &&
		    asprintf(&path, "%s/%s", dir, names[i]->d_name) < 0) {
			link_err_set(err, "%s: out of memory", dir);
			r = -ENOMEM;
		}
		/* a .pub directory or dangling link is not a key */
		if (r == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode))
			r = allowlist_read_file(a, path, err);
		free(names[i]);
	}
	free(names);
	return r;
}

struct link_allowlist *link_allowlist_load(const char *path,
					   char err[LINK_ERR_LEN])
{
	struct link_allowlist *a;
	struct stat st;
	int r;

	if (!path) {
		link_err_set(err, "no allowlist given");
		errno = EINVAL;
		return NULL;
	}
	if (stat(path, &st) < 0) {
		r = -errno;
		link_err_set(err, "cannot open allowlist '%s': %s", path,
			     strerror(-r));
		errno = -r;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		link_err_set(err, "out of memory");
		return NULL;
	}
	a->store = zcertstore_new(NULL);
	r = S_ISDIR(st.st_mode) ? allowlist_read_dir(a, path, err) :
				  allowlist_read_file(a, path, err);
	if (r < 0) {
		link_allowlist_free(a);
		errno = -r;
		return NULL;
	}
	return a;
}

void link_allowlist_free(struct link_allowlist *a)
{
	if (!a)
		return;
	zcertstore_destroy(&a->store);
	free(a);
}

size_t link_allowlist_count(const struct link_allowlist *a)
{
	return a ? a->n : 0;
}

bool link_allowlist_has(const struct link_allowlist *a, const char *z85)
{
	if (!a || !a->n || !z85 || strlen(z85) != LINK_KEY_LEN)
		return false;
	return zcertstore_lookup(a->store, z85) != NULL;
}
