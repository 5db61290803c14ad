/* SPDX-License-Identifier: MIT */
/*
 * CURVE key files: NAME.pub and NAME.key, each one Z85 line. Written by
 * hand, not with czmq's zcert: zcert_save writes ZPL certificates ("public"
 * and "_secret" files) that overwrite what is there, set the secret's mode
 * through the process umask and do not fsync, and zcert_load reads only
 * that format, not the key files agents and collectors hold today.
 */
#include "link_private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "cleanup.h"
#include "fdio.h"
#include "file.h"

/* Bytes read from a .pub or .key file: a key and some white space. */
#define LINK_KEY_FILE_MAX 254

/* A valid key never starts with '#' (Z85 digit 84 in the leading place
 * overflows 32 bits), which is what lets allowlist files use '#' for
 * comments. */
bool link_key_valid(const char *z85)
{
	uint8_t bin[LINK_KEY_BYTES];

	if (!z85 || strlen(z85) != LINK_KEY_LEN)
		return false;
	return zmq_z85_decode(bin, z85) != NULL;
}

/* Writes "KEY\n" to a new file (O_EXCL) with exactly this mode. */
static int key_file_write(int dfd, const char *name, const char *key,
			  mode_t mode)
{
	_cleanup_close_ int fd = -1;
	char line[LINK_KEY_LEN + 2];
	int r;

	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	snprintf(line, sizeof(line), "%s\n", key);
	/* the umask may have taken bits away: the modes are part of the
	 * contract (a readable .pub, a private .key) */
	if (fchmod(fd, mode) < 0)
		r = -errno;
	else if ((r = fd_write_all(fd, line, strlen(line))) == 0 &&
		 fsync(fd) < 0)
		r = -errno;
	explicit_bzero(line, sizeof(line));
	return r;
}

int link_keygen(const char *dir, const char *name, struct link_keypair *ret)
{
	_cleanup_free_ char *pub_name = NULL, *key_name = NULL;
	_cleanup_close_ int dfd = -1;
	struct link_keypair kp;
	int r;

	if (!dir || !name || !*name || strchr(name, '/') ||
	    !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	if (asprintf(&pub_name, "%s.pub", name) < 0 ||
	    asprintf(&key_name, "%s.key", name) < 0)
		return -ENOMEM;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (zmq_curve_keypair(kp.public_key, kp.secret_key) < 0)
		return -errno;

	/* Never overwrite: refuse before creating anything when either
	 * file is there, and O_EXCL closes the race that leaves. */
	if (faccessat(dfd, pub_name, F_OK, AT_SYMLINK_NOFOLLOW) == 0 ||
	    faccessat(dfd, key_name, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		r = -EEXIST;
		goto out;
	}
	r = key_file_write(dfd, key_name, kp.secret_key, 0600);
	if (r < 0) {
		if (r != -EEXIST) /* ours, half written */
			unlinkat(dfd, key_name, 0);
		goto out;
	}
	r = key_file_write(dfd, pub_name, kp.public_key, 0644);
	if (r < 0) {
		unlinkat(dfd, key_name, 0);
		if (r != -EEXIST)
			unlinkat(dfd, pub_name, 0);
		goto out;
	}
	if (fsync(dfd) < 0) {
		r = -errno;
		goto out;
	}
	if (ret)
		*ret = kp;
out:
	explicit_bzero(&kp, sizeof(kp));
	return r;
}

/* Reads a key file whole (one far longer than a key is -EINVAL) and
 * accepts the key with surrounding white space (the trailing newline).
 * The buffer is wiped: it may hold a secret. */
static int key_file_parse(int fd, char out[LINK_KEY_LEN + 1])
{
	_cleanup_free_ char *buf = NULL;
	ssize_t len = read_full_fd(fd, LINK_KEY_FILE_MAX, &buf);
	char *text, *end;
	int r = -EINVAL;

	if (len < 0)
		return len == -EFBIG ? -EINVAL : (int)len;
	text = buf + strspn(buf, " \t\r\n");
	end = text + strlen(text);
	while (end > text && strchr(" \t\r\n", end[-1]))
		end--;
	*end = '\0';
	if (link_key_valid(text)) {
		memcpy(out, text, LINK_KEY_LEN + 1);
		r = 0;
	}
	explicit_bzero(buf, (size_t)len);
	return r;
}

int link_read_public(const char *path, char out[LINK_KEY_LEN + 1])
{
	_cleanup_close_ int fd = -1;

	if (!path || !out)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return key_file_parse(fd, out);
}

int link_read_secret(const char *path, struct link_keypair *ret)
{
	_cleanup_close_ int fd = -1;
	struct link_keypair kp;
	struct stat st;
	int r;

	if (!path || !ret)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (st.st_mode & (S_IRWXG | S_IRWXO))
		return -EPERM;
	r = key_file_parse(fd, kp.secret_key);
	if (r == 0 && zmq_curve_public(kp.public_key, kp.secret_key) < 0)
		r = -errno;
	if (r == 0)
		*ret = kp;
	explicit_bzero(&kp, sizeof(kp));
	return r;
}
