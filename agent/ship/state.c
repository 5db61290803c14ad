/* SPDX-License-Identifier: MIT */
/* The kernel of the last delivered report, kept in the state directory. */
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "codec.h"
#include "durable.h"
#include "file.h"
#include "uuid_str.h"

#define STATE_TMP STATE_FILE ".tmp"

static void errf(char err[STATE_ERR_LEN], const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void errf(char err[STATE_ERR_LEN], const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(err, STATE_ERR_LEN, fmt, ap);
	va_end(ap);
}

void state_release(struct state *st)
{
	if (!st)
		return;
	free(st->kernel_release);
	free(st->kernel_version);
	free(st->run_id);
	memset(st, 0, sizeof(*st));
}

/* A state of copies of the strings given, or -ENOMEM. */
static int state_set(struct state *ret, const char *release,
		     const char *version, const char *run_id,
		     int64_t delivered_unix_ms)
{
	struct state st = {
		.kernel_release = strdup(release),
		.kernel_version = strdup(version),
		.run_id = strdup(run_id),
		.delivered_unix_ms = delivered_unix_ms,
	};

	if (!st.kernel_release || !st.kernel_version || !st.run_id) {
		state_release(&st);
		return -ENOMEM;
	}
	*ret = st;
	return 0;
}

int state_from_report(const void *report, size_t len, int64_t delivered_unix_ms,
		      struct state *ret, char err[STATE_ERR_LEN])
{
	char cerr[CODEC_ERR_LEN] = "";
	Fleetbench__Report *rep = NULL;
	int r = codec_unpack_report(report, len, &rep, cerr);

	/* -EINVAL with a report: it decoded, and the collector stored it */
	if (r < 0 && !(r == -EINVAL && rep)) {
		errf(err, "the report does not decode: %s",
		     cerr[0] ? cerr : strerror(-r));
		return r == -ENOMEM ? r : -EBADMSG;
	}
	if (!rep->kernel || !rep->kernel->release || !*rep->kernel->release) {
		errf(err, "report %s names no kernel release",
		     rep->run_id ? rep->run_id : "(no run id)");
		codec_free_report(rep);
		return -EBADMSG;
	}
	r = state_set(ret, rep->kernel->release,
		      rep->kernel->version ? rep->kernel->version : "",
		      rep->run_id ? rep->run_id : "", delivered_unix_ms);
	if (r < 0)
		errf(err, "out of memory");
	codec_free_report(rep);
	return r;
}

/* Opens dir, making it (0700, not its parents) when missing: fd or -errno. */
static int state_dir_open(const char *dir, char err[STATE_ERR_LEN])
{
	int fd, r;

	if (mkdir(dir, 0700) == 0) {
		r = durable_fsync_parent(dir);
		if (r < 0) {
			errf(err, "cannot sync the directory above '%s': %s",
			     dir, strerror(-r));
			return r;
		}
	} else if (errno != EEXIST) {
		r = -errno;
		errf(err, "cannot create the state directory '%s': %s", dir,
		     strerror(-r));
		return r;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		errf(err, "cannot open the state directory '%s': %s", dir,
		     strerror(-r));
		return r;
	}
	return fd;
}

/* st as the text of STATE_FILE, in a new buffer (*ret): 0 or -ENOMEM. */
static int state_format(const struct state *st, char **ret)
{
	struct json_object *o = json_object_new_object();
	const char *text;
	int r = -ENOMEM;

	if (!o)
		return -ENOMEM;
	if (json_object_object_add(
		    o, "kernel_release",
		    json_object_new_string(st->kernel_release)) ||
	    json_object_object_add(
		    o, "kernel_version",
		    json_object_new_string(st->kernel_version)) ||
	    json_object_object_add(o, "run_id",
				   json_object_new_string(st->run_id)) ||
	    json_object_object_add(
		    o, "delivered_unix_ms",
		    json_object_new_int64(st->delivered_unix_ms)))
		goto out;
	text = json_object_to_json_string_ext(
		o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
			   JSON_C_TO_STRING_NOSLASHESCAPE);
	if (text && asprintf(ret, "%s\n", text) >= 0)
		r = 0;
out:
	json_object_put(o);
	return r;
}

int state_write(const char *dir, const struct state *st,
		char err[STATE_ERR_LEN])
{
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int dfd = -1;
	int r;

	if (!dir || !*dir) {
		errf(err, "no state directory given");
		return -EINVAL;
	}
	if (!st->kernel_release || !*st->kernel_release ||
	    !st->kernel_version || !st->run_id) {
		errf(err, "no kernel release to record");
		return -EINVAL;
	}
	r = state_format(st, &text);
	if (r < 0) {
		errf(err, "out of memory");
		return r;
	}
	dfd = state_dir_open(dir, err);
	if (dfd < 0)
		return dfd;
	/* writers take turns on the one temporary name */
	if (flock(dfd, LOCK_EX) < 0) {
		r = -errno;
		errf(err, "cannot lock '%s': %s", dir, strerror(-r));
		return r;
	}
	/* under the lock, a temporary file here is a crash's */
	if (unlinkat(dfd, STATE_TMP, 0) < 0 && errno != ENOENT) {
		r = -errno;
		errf(err, "cannot remove stale '%s/%s': %s", dir, STATE_TMP,
		     strerror(-r));
		goto out;
	}
	r = durable_write_tmp(dfd, STATE_TMP, text, strlen(text), "", 0);
	if (r < 0) {
		errf(err, "cannot write '%s/%s': %s", dir, STATE_TMP,
		     strerror(-r));
		goto out;
	}
	if (renameat(dfd, STATE_TMP, dfd, STATE_FILE) < 0) {
		r = -errno;
		errf(err, "cannot rename '%s/%s': %s", dir, STATE_TMP,
		     strerror(-r));
		goto unlink;
	}
	/* the rename is durable only once the directory is */
	if (fsync(dfd) < 0) {
		r = -errno;
		errf(err, "cannot sync the state directory '%s': %s", dir,
		     strerror(-r));
	}
	goto out;
unlink:
	unlinkat(dfd, STATE_TMP, 0);
out:
	flock(dfd, LOCK_UN);
	return r;
}

/* The string member key of o, or NULL when it is missing or no string. */
static const char *member_string(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* Parses text[0..len) into *ret: 0, or -EBADMSG with err saying why. */
static int state_parse(const char *path, const char *text, size_t len,
		       struct state *ret, char err[STATE_ERR_LEN])
{
	struct json_tokener *tok;
	struct json_object *o, *v;
	const char *release, *version, *run_id;
	size_t end;
	int64_t when;
	int r = -EBADMSG;

	if (strlen(text) != len) {
		errf(err, "'%s' is damaged: it holds a NUL byte", path);
		return -EBADMSG;
	}
	tok = json_tokener_new();
	if (!tok) {
		errf(err, "out of memory");
		return -ENOMEM;
	}
	/* the NUL too: a number at the very end is complete */
	o = json_tokener_parse_ex(tok, text, (int)len + 1);
	if (!o) {
		errf(err, "'%s' is damaged: not JSON (%s)", path,
		     json_tokener_error_desc(json_tokener_get_error(tok)));
		json_tokener_free(tok);
		return -EBADMSG;
	}
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	end = end > len ? len : end;
	if (text[end + strspn(text + end, " \t\r\n")] != '\0') {
		errf(err, "'%s' is damaged: more after the JSON object", path);
		goto out;
	}
	if (!json_object_is_type(o, json_type_object)) {
		errf(err, "'%s' is damaged: not a JSON object", path);
		goto out;
	}
	release = member_string(o, "kernel_release");
	version = member_string(o, "kernel_version");
	run_id = member_string(o, "run_id");
	if (!release || !*release) {
		errf(err, "'%s' is damaged: kernel_release: %s", path,
		     release ? "empty" : "missing or not a string");
		goto out;
	}
	if (!version) {
		errf(err, "'%s' is damaged: kernel_version: missing or not a string",
		     path);
		goto out;
	}
	if (!run_id || !uuid_text_valid(run_id)) {
		errf(err, "'%s' is damaged: run_id: %s", path,
		     run_id ? "not a UUID" : "missing or not a string");
		goto out;
	}
	if (!json_object_object_get_ex(o, "delivered_unix_ms", &v) ||
	    !json_object_is_type(v, json_type_int) ||
	    (when = json_object_get_int64(v)) < 0) {
		errf(err, "'%s' is damaged: delivered_unix_ms: missing or not a time",
		     path);
		goto out;
	}
	r = state_set(ret, release, version, run_id, when);
	if (r < 0)
		errf(err, "out of memory");
out:
	json_object_put(o);
	return r;
}

int state_read(const char *dir, struct state *ret, char err[STATE_ERR_LEN])
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	ssize_t n;

	if (!dir || !*dir) {
		errf(err, "no state directory given");
		return -EINVAL;
	}
	if (asprintf(&path, "%s/%s", dir, STATE_FILE) < 0) {
		path = NULL;
		errf(err, "out of memory");
		return -ENOMEM;
	}
	n = read_full_file(path, STATE_MAX_BYTES, &text);
	if (n == -EFBIG) {
		errf(err, "'%s' is damaged: over %u bytes", path,
		     STATE_MAX_BYTES);
		return -EBADMSG;
	}
	if (n < 0) {
		errf(err, "cannot read '%s': %s", path, strerror((int)-n));
		return (int)n;
	}
	return state_parse(path, text, (size_t)n, ret, err);
}

bool state_kernel_unchanged(const struct state *st, const char *release,
			    const char *version)
{
	return st->kernel_release && st->kernel_version && release && version &&
	       !strcmp(st->kernel_release, release) &&
	       !strcmp(st->kernel_version, version);
}
