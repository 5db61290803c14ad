/* SPDX-License-Identifier: MIT */
/*
 * The probe's readers, for every probe module: files below the probe root,
 * one-line values, whole text files checked for what the kernel promises,
 * and the small text parsers they share (integers, "key: value" lines).
 */
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "cleanup.h"
#include "file.h"

/*
 * 16 MiB: far beyond any procfs or sysfs text, so a larger file is a
 * runaway. The hand-written loop this replaced stopped two bytes short of
 * it (room for the NUL, and its last read had to see the end); the limit
 * passed on keeps that, so what reads and what is -EFBIG are unchanged.
 */
#define PROBE_FILE_MAX ((16u << 20) - 2)

/* Paths are absolute; below the root they are opened relative to root_fd. */
static const char *probe_rel(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

ssize_t probe_read_file(struct probe_ctx *ctx, const char *path, char **ret)
{
	return read_full_fileat(ctx->root_fd, probe_rel(path), PROBE_FILE_MAX,
				ret);
}

char *probe_trim(char *s)
{
	char *end;

	s += strspn(s, " \t\n");
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' ||
			   end[-1] == '\n'))
		*--end = '\0';
	return s;
}

ssize_t probe_read_line(struct probe_ctx *ctx, const char *path, char *buf,
			size_t size)
{
	_cleanup_free_ char *data = NULL;
	ssize_t n = probe_read_file(ctx, path, &data);
	char *v;
	size_t len;

	if (n < 0)
		return n;
	if (memchr(data, '\0', (size_t)n))
		return -EBADMSG;
	v = probe_trim(data);
	len = strlen(v);
	if (len == 0)
		return -ENODATA;
	if (len >= size)
		return -EBADMSG;
	memcpy(buf, v, len + 1);
	return (ssize_t)len;
}

/* Whether anything but white space follows the first line of s. */
static bool more_lines(const char *s)
{
	const char *nl = strchr(s, '\n');

	return nl && nl[strspn(nl, " \t\n")];
}

int probe_read_text(struct probe_ctx *ctx, const char *path, bool one_line,
		    char **ret, const char **reason)
{
	_cleanup_free_ char *buf = NULL;
	ssize_t n = probe_read_file(ctx, path, &buf);
	const char *s;

	if (n < 0)
		return (int)n;
	s = buf + strspn(buf, " \t\n");
	if (memchr(buf, '\0', (size_t)n))
		*reason = "holds a NUL byte";
	else if (!*s)
		*reason = "is empty";
	else if (buf[n - 1] != '\n')
		*reason = "is truncated";
	else if (one_line && more_lines(s))
		*reason = "has more than one line";
	else
		*reason = NULL;
	if (*reason)
		return -EBADMSG;
	*ret = TAKE_PTR(buf);
	return 0;
}

DIR *probe_opendir(struct probe_ctx *ctx, const char *path)
{
	int fd = openat(ctx->root_fd, probe_rel(path),
			O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d)
		closep(&fd);
	return d;
}

ssize_t probe_readlink(struct probe_ctx *ctx, const char *path, char *buf,
		       size_t size)
{
	ssize_t n = readlinkat(ctx->root_fd, probe_rel(path), buf, size - 1);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return n;
}

bool probe_exists(struct probe_ctx *ctx, const char *path)
{
	return faccessat(ctx->root_fd, probe_rel(path), F_OK, 0) == 0;
}

bool probe_printable(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

int probe_parse_i64(const char *s, int64_t *ret)
{
	char *end;
	long long v;

	while (*s == ' ' || *s == '\t' || *s == '\n')
		s++;
	if (!*s)
		return -EBADMSG;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s)
		return -EBADMSG;
	while (*end == ' ' || *end == '\t' || *end == '\n')
		end++;
	if (*end)
		return -EBADMSG;
	*ret = v;
	return 0;
}

int probe_kv(const char *text, const char *key, char *buf, size_t size)
{
	size_t klen = strlen(key);
	const char *line = text;

	while (line && *line) {
		const char *eol = strchr(line, '\n');
		size_t llen = eol ? (size_t)(eol - line) : strlen(line);

		if (llen > klen && !strncmp(line, key, klen) &&
		    (line[klen] == ':' || line[klen] == ' ' ||
		     line[klen] == '\t')) {
			const char *v = line + klen + (line[klen] == ':');
			const char *vend = line + llen;

			while (v < vend && (*v == ' ' || *v == '\t'))
				v++;
			while (vend > v && (vend[-1] == ' ' || vend[-1] == '\t'))
				vend--;
			if (vend == v || (size_t)(vend - v) >= size)
				return -EBADMSG;
			memcpy(buf, v, (size_t)(vend - v));
			buf[vend - v] = '\0';
			return 0;
		}
		line = eol ? eol + 1 : NULL;
	}
	return -ENOENT;
}

int probe_bracket_parse(const char *text, struct probe_bracket *ret)
{
	struct probe_bracket b = { .text = strdup(text) };
	char *save = NULL;
	int nsel = 0, r = -EBADMSG;

	if (!b.text)
		return -ENOMEM;
	for (char *tok = strtok_r(b.text, " \t\n", &save); tok;
	     tok = strtok_r(NULL, " \t\n", &save)) {
		size_t len = strlen(tok);

		if (tok[0] == '[') {
			if (len < 3 || tok[len - 1] != ']')
				goto bad;
			tok[len - 1] = '\0';
			tok++;
			b.selected = b.n_options;
			nsel++;
		} else if (strpbrk(tok, "[]")) {
			goto bad;
		}
		if (ARRAY_RESERVE(b.options, b.cap, b.n_options + 1) < 0) {
			r = -ENOMEM;
			goto bad;
		}
		b.options[b.n_options++] = tok;
	}
	if (nsel != 1)
		goto bad;
	*ret = b;
	return 0;
bad:
	probe_bracket_release(&b);
	return r;
}

void probe_bracket_release(struct probe_bracket *b)
{
	free(b->options);
	free(b->text);
	*b = (struct probe_bracket){ 0 };
}
