/* SPDX-License-Identifier: MIT */
/* The durable agent spool: round trip, durability, limit, damage, crashes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "cleanup.h"
#include "spool.h"

#define HDR_LEN 64 /* the documented header size (docs/spool.md) */
#define N_GOOD 1000

static char root[] = "/tmp/fleetbench-test-spool-XXXXXX";

static void uuid_of(unsigned i, char out[37])
{
	snprintf(out, 37, "%08x-0000-4000-8000-%012x", i, i * 7919u);
}

/* A payload whose bytes depend on i, of a length that varies with i. */
static size_t payload_of(unsigned i, uint8_t *buf, size_t cap)
{
	size_t len = 1 + (i * 37u) % (cap - 1);

	for (size_t k = 0; k < len; k++)
		buf[k] = (uint8_t)(i * 31u + k * 13u);
	return len;
}

static char *path_in(const char *dir, const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		abort();
	return p;
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	return stat(path, &st) < 0 ? (mode_t)-1 : st.st_mode & 07777;
}

static int exists(const char *dir, const char *name)
{
	_cleanup_free_ char *p = path_in(dir, name);

	return access(p, F_OK) == 0;
}

static int tmp_count(const char *dir)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)))
		if (strstr(de->d_name, ".tmp"))
			n++;
	return n;
}

/* "name size crc32" of every regular file in dir, sorted by name. */
static char *snapshot(const char *dir)
{
	struct dirent **list = NULL;
	char *out = NULL;
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);
	int n = scandir(dir, &list, NULL, alphasort);

	for (int i = 0; i < n; i++) {
		_cleanup_free_ char *p = path_in(dir, list[i]->d_name);
		_cleanup_fclose_ FILE *in = NULL;
		struct stat st;
		uLong crc = crc32(0L, NULL, 0);
		uint8_t buf[4096];
		size_t got;

		if (lstat(p, &st) == 0 && S_ISREG(st.st_mode)) {
			in = fopen(p, "rbe");
			while (in && (got = fread(buf, 1, sizeof(buf), in)))
				crc = crc32(crc, buf, (uInt)got);
			fprintf(f, "%s %lld %08lx\n", list[i]->d_name,
				(long long)st.st_size, crc);
		}
		free(list[i]);
	}
	free(list);
	fclose(f);
	return out;
}

static void write_file(const char *dir, const char *name, const void *buf,
		       size_t len)
{
	_cleanup_free_ char *p = path_in(dir, name);
	int fd = open(p, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);

	CHECK(fd >= 0 && write(fd, buf, len) == (ssize_t)len);
	close(fd);
}

static size_t read_file(const char *dir, const char *name, uint8_t *buf,
			size_t cap)
{
	_cleanup_free_ char *p = path_in(dir, name);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, cap);

	return n < 0 ? 0 : (size_t)n;
}

static void set_mtime(const char *dir, const char *name, time_t t)
{
	_cleanup_free_ char *p = path_in(dir, name);
	struct timespec ts[2] = { { t, 0 }, { t, 0 } };

	CHECK_OK(utimensat(AT_FDCWD, p, ts, 0));
}

static const struct spool_entry *find(const struct spool_entry *v, int n,
				      const char *run_id)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(v[i].run_id, run_id))
			return &v[i];
	return NULL;
}

static void test_open(const char *dir)
{
	char err[SPOOL_ERR_LEN] = "";
	_cleanup_free_ char *rej = path_in(dir, "rejected");
	_cleanup_free_ char *quar = path_in(dir, "quarantine");
	_cleanup_free_ char *file = path_in(root, "plain");
	struct spool *s;

	/* creates missing parents too, all 0700 */
	s = spool_open(dir, 0, err);
	CHECK(s != NULL);
	CHECK_EQ_INT(mode_of(dir), 0700);
	CHECK_EQ_INT(mode_of(rej), 0700);
	CHECK_EQ_INT(mode_of(quar), 0700);
	spool_close(s);

	/* a file where the directory should be: NULL, errno, a message */
	write_file(root, "plain", "x", 1);
	s = spool_open(file, 0, err);
	CHECK(s == NULL);
	CHECK_EQ_INT(errno, ENOTDIR);
	CHECK(strstr(err, "plain") != NULL);
}

static void test_round_trip(const char *dir)
{
	char err[SPOOL_ERR_LEN] = "", id[3][37], name[64];
	static const char *const data[3] = { "first report", "", "third" };
	struct spool_entry *v = NULL;
	struct spool *s = spool_open(dir, 0, err);
	unsigned rej = 9, quar = 9;
	uint64_t want = 0;
	int n;

	CHECK(s != NULL);
	for (unsigned i = 0; i < 3; i++) {
		uuid_of(100 + i, id[i]);
		CHECK_OK(spool_put(s, id[i], data[i], strlen(data[i]), err));
		want += HDR_LEN + strlen(data[i]);

		/* durability structure: in place, 0600, no temporary left */
		snprintf(name, sizeof(name), "%s.fbr", id[i]);
		_cleanup_free_ char *p = path_in(dir, name);
		CHECK_EQ_INT(mode_of(p), 0600);
		CHECK_EQ_INT(tmp_count(dir), 0);
	}
	CHECK_EQ_INT(spool_bytes(s), want);

	/* oldest first by mtime, then by name on a tie */
	snprintf(name, sizeof(name), "%s.fbr", id[0]);
	set_mtime(dir, name, 2000);
	snprintf(name, sizeof(name), "%s.fbr", id[1]);
	set_mtime(dir, name, 1000);
	snprintf(name, sizeof(name), "%s.fbr", id[2]);
	set_mtime(dir, name, 2000);
	n = spool_list(s, &v);
	CHECK_EQ_INT(n, 3);
	if (n == 3) {
		CHECK_EQ_STR(v[0].run_id, id[1]);
		CHECK_EQ_STR(v[1].run_id, id[0]);
		CHECK_EQ_STR(v[2].run_id, id[2]);
		CHECK_EQ_INT(v[1].mtime, 2000);
		CHECK_EQ_INT(v[1].size, HDR_LEN + strlen(data[0]));
		for (int i = 0; i < 3; i++) {
			const struct spool_entry *e = find(v, n, id[i]);
			_cleanup_free_ uint8_t *buf = NULL;
			size_t len = 99;

			CHECK(e != NULL);
			if (!e)
				continue;
			CHECK_OK(spool_read(s, e, &buf, &len, err));
			CHECK_EQ_INT(len, strlen(data[i]));
			CHECK(buf && !memcmp(buf, data[i], len));
		}
		/* acked: gone from the directory and the list */
		CHECK_OK(spool_ack(s, &v[0]));
		CHECK(!exists(dir, v[0].name));
		/* a second ack (another sender got there first) is fine */
		CHECK_OK(spool_ack(s, &v[0]));
	}
	free(v);
	v = NULL;
	CHECK_EQ_INT(spool_list(s, &v), 2);
	free(v);

	/* bad run ids are refused with a message naming them */
	CHECK_EQ_INT(spool_put(s, "not-a-uuid", "x", 1, err), -EINVAL);
	CHECK(strstr(err, "not-a-uuid") != NULL);
	CHECK_EQ_INT(spool_put(s, "0000000A-0000-4000-8000-000000000000",
			       "x", 1, err),
		     -EINVAL);

	/* duplicate: -EEXIST and the stored copy is unchanged */
	{
		_cleanup_free_ char *before = snapshot(dir);
		_cleanup_free_ char *after = NULL;

		CHECK_EQ_INT(spool_put(s, id[0], "other", 5, err), -EEXIST);
		CHECK(strstr(err, id[0]) != NULL);
		after = snapshot(dir);
		CHECK_EQ_STR(after, before);
	}
	CHECK_OK(spool_counts(s, &rej, &quar));
	CHECK_EQ_INT(rej, 0);
	CHECK_EQ_INT(quar, 0);
	spool_close(s);
}

static void test_limit(const char *dir)
{
	char err[SPOOL_ERR_LEN] = "", id[37];
	uint8_t buf[1000] = { 0 };
	/* room for exactly two 1000-byte reports */
	struct spool *s = spool_open(dir, 2 * (HDR_LEN + 1000), err);
	_cleanup_free_ char *before = NULL, *after = NULL;

	CHECK(s != NULL);
	uuid_of(200, id);
	CHECK_OK(spool_put(s, id, buf, sizeof(buf), err));
	uuid_of(201, id);
	CHECK_OK(spool_put(s, id, buf, sizeof(buf), err));

	before = snapshot(dir);
	uuid_of(202, id);
	CHECK_EQ_INT(spool_put(s, id, buf, 1, err), -ENOSPC);
	/* the message says the sizes */
	CHECK(strstr(err, "spool full") != NULL);
	CHECK(strstr(err, "holds 2128 bytes") != NULL);
	CHECK(strstr(err, "needs 65,") != NULL);
	CHECK(strstr(err, "limit is 2128 bytes") != NULL);
	after = snapshot(dir);
	CHECK_EQ_STR(after, before);
	CHECK_EQ_INT(tmp_count(dir), 0);
	CHECK_EQ_INT(spool_bytes(s), 2 * (HDR_LEN + 1000));

	/* room again after an ack */
	{
		struct spool_entry *v = NULL;

		CHECK_EQ_INT(spool_list(s, &v), 2);
		CHECK_OK(spool_ack(s, &v[0]));
		free(v);
		CHECK_OK(spool_put(s, id, buf, 1000, err));
	}
	spool_close(s);
}

/*
 * spool_replace: the new payload under the same name, read back whole; the
 * limit counts the new size in place of the old; a run that is not spooled
 * is -ENOENT; a refused replace leaves the old report as it was.
 */
static void test_replace(const char *dir)
{
	char err[SPOOL_ERR_LEN] = "", id[37], other[37], name[64];
	/* room for one report of 1000 bytes and one of 100 */
	struct spool *s = spool_open(dir, 2 * HDR_LEN + 1100, err);
	struct spool_entry *v = NULL;
	uint8_t big[1000] = {1};
	_cleanup_free_ char *before = NULL, *after = NULL;
	int n;

	CHECK(s != NULL);
	uuid_of(300, id);
	uuid_of(301, other);
	CHECK_OK(spool_put(s, id, "old", 3, err));
	CHECK_OK(spool_put(s, other, big, 100, err));
	/* 67 + 164 held: 1000 bytes fit only in place of the 3 */
	CHECK_OK(spool_replace(s, id, big, sizeof(big), err));
	CHECK_EQ_INT(spool_bytes(s), 2 * HDR_LEN + 1100);
	CHECK_EQ_INT(tmp_count(dir), 0);
	snprintf(name, sizeof(name), "%s.fbr", id);
	{
		_cleanup_free_ char *p = path_in(dir, name);

		CHECK_EQ_INT(mode_of(p), 0600);
	}
	n = spool_list(s, &v);
	CHECK_EQ_INT(n, 2);
	{
		const struct spool_entry *e = find(v, n, id);
		_cleanup_free_ uint8_t *buf = NULL;
		size_t len = 0;

		CHECK(e != NULL);
		if (e) {
			CHECK_OK(spool_read(s, e, &buf, &len, err));
			CHECK_EQ_INT(len, sizeof(big));
			CHECK(buf && !memcmp(buf, big, len));
		}
	}
	free(v);

	/* one byte more than the limit: refused, nothing touched */
	before = snapshot(dir);
	CHECK_EQ_INT(spool_replace(s, other, big, 101, err), -ENOSPC);
	CHECK(strstr(err, "spool full") != NULL);
	after = snapshot(dir);
	CHECK_EQ_STR(after, before);
	free(after);

	/* nothing to replace: -ENOENT naming the run, and no file made */
	uuid_of(302, other);
	CHECK_EQ_INT(spool_replace(s, other, "x", 1, err), -ENOENT);
	CHECK(strstr(err, other) != NULL);
	CHECK(strstr(err, "not spooled") != NULL);
	after = snapshot(dir);
	CHECK_EQ_STR(after, before);
	CHECK_EQ_INT(spool_replace(s, "not-a-uuid", "x", 1, err), -EINVAL);
	spool_close(s);
}

/* Puts run i as a good report; returns its file name in name. */
static void put_good(struct spool *s, unsigned i, char name[64])
{
	char err[SPOOL_ERR_LEN] = "", id[37];
	uint8_t buf[600];
	size_t len = payload_of(i, buf, sizeof(buf));

	uuid_of(i, id);
	CHECK_OK(spool_put(s, id, buf, len, err));
	snprintf(name, 64, "%s.fbr", id);
}

enum damage {
	TRUNCATED,
	SHORTER_THAN_HEADER,
	PAYLOAD_FLIP,
	HEADER_FLIP,
	ZERO_LENGTH,
	WRONG_MAGIC,
	NAME_MISMATCH,
	EXTRA_BYTE,
	N_DAMAGE,
};

static const char *const damage_why[N_DAMAGE] = {
	[TRUNCATED] = "payload length",	  [SHORTER_THAN_HEADER] = "truncated",
	[PAYLOAD_FLIP] = "checksum",
	[HEADER_FLIP] = "format version", [ZERO_LENGTH] = "empty",
	[WRONG_MAGIC] = "magic",	  [NAME_MISMATCH] = "file name",
	[EXTRA_BYTE] = "payload length",
};

static void damage_file(const char *dir, const char *name, enum damage how)
{
	uint8_t buf[HDR_LEN + 600];
	size_t len = read_file(dir, name, buf, sizeof(buf));
	char other[64];

	CHECK(len > HDR_LEN);
	switch (how) {
	case TRUNCATED:
		write_file(dir, name, buf, len - 1);
		break;
	case SHORTER_THAN_HEADER:
		write_file(dir, name, buf, HDR_LEN / 2);
		break;
	case PAYLOAD_FLIP:
		buf[HDR_LEN] ^= 0x01;
		write_file(dir, name, buf, len);
		break;
	case HEADER_FLIP:
		buf[8] ^= 0x40; /* the format version */
		write_file(dir, name, buf, len);
		break;
	case ZERO_LENGTH:
		write_file(dir, name, buf, 0);
		break;
	case WRONG_MAGIC:
		memcpy(buf, "NOTSPOOL", 8);
		write_file(dir, name, buf, len);
		break;
	case NAME_MISMATCH:
		/* a good file under another run's name */
		uuid_of(999999, other);
		strcat(other, ".fbr");
		write_file(dir, other, buf, len);
		break;
	case EXTRA_BYTE:
		buf[len] = 0;
		write_file(dir, name, buf, len + 1);
		break;
	default:
		break;
	}
}

static void test_damage(const char *dir)
{
	char err[SPOOL_ERR_LEN] = "", name[64];
	struct spool *s = spool_open(dir, 0, err);
	struct spool_entry *v = NULL;
	unsigned rej = 9, quar = 9, good = 0, bad = 0;
	int n;

	CHECK(s != NULL);
	for (unsigned i = 0; i < N_GOOD + N_DAMAGE; i++) {
		put_good(s, i, name);
		if (i >= N_GOOD)
			damage_file(dir, name, (enum damage)(i - N_GOOD));
	}
	/* NAME_MISMATCH added a file; its source stays good */
	n = spool_list(s, &v);
	CHECK_EQ_INT(n, N_GOOD + N_DAMAGE + 1);
	for (int k = 0; k < n; k++) {
		_cleanup_free_ uint8_t *buf = NULL;
		unsigned i = (unsigned)strtoul(v[k].run_id, NULL, 16);
		size_t len = 0;
		int r = spool_read(s, &v[k], &buf, &len, err);

		if (r == 0) {
			uint8_t want[600];
			size_t wlen = payload_of(i, want, sizeof(want));

			good++;
			CHECK(len == wlen && !memcmp(buf, want, len));
			continue;
		}
		CHECK_EQ_INT(r, -EBADMSG);
		bad++;
		CHECK(strstr(err, "quarantine") != NULL);
		CHECK(strstr(err, v[k].name) != NULL);
		if (i >= N_GOOD && i < N_GOOD + N_DAMAGE &&
		    !strstr(err, damage_why[i - N_GOOD]))
			CHECK_(0, "damage %u: '%s' lacks '%s'", i - N_GOOD, err,
			       damage_why[i - N_GOOD]);
		if (i == 999999)
			CHECK(strstr(err, "file name") != NULL);
		CHECK(!exists(dir, v[k].name));
	}
	free(v);
	/* every good file (and the name mismatch's intact source) reads */
	CHECK_EQ_INT(good, N_GOOD + 1);
	CHECK_EQ_INT(bad, N_DAMAGE);
	CHECK_OK(spool_counts(s, &rej, &quar));
	CHECK_EQ_INT(rej, 0);
	CHECK_EQ_INT(quar, N_DAMAGE);
	v = NULL;
	CHECK_EQ_INT(spool_list(s, &v), N_GOOD + 1);
	free(v);
	spool_close(s);
}

/* Every single header byte flipped is caught. */
static void test_header_bytes(const char *dir)
{
	char err[SPOOL_ERR_LEN] = "", name[64];
	struct spool *s = spool_open(dir, 0, err);
	unsigned quar = 0, missed = 0;

	CHECK(s != NULL);
	for (unsigned b = 0; b < HDR_LEN; b++) {
		uint8_t file[HDR_LEN + 600], *buf = NULL;
		struct spool_entry *v = NULL;
		size_t len;

		put_good(s, 5000 + b, name);
		len = read_file(dir, name, file, sizeof(file));
		file[b] ^= 0x20;
		write_file(dir, name, file, len);
		CHECK_EQ_INT(spool_list(s, &v), 1);
		if (spool_read(s, &v[0], &buf, &len, err) != -EBADMSG) {
			missed++;
			fprintf(stderr, "header byte %u flip not detected\n", b);
		}
		free(buf);
		free(v);
	}
	CHECK_EQ_INT(missed, 0);
	CHECK_OK(spool_counts(s, NULL, &quar));
	CHECK_EQ_INT(quar, HDR_LEN);
	spool_close(s);
}

static void test_reject(const char *dir)
{
	char err[SPOOL_ERR_LEN] = "", name[64], reason_name[80];
	struct spool *s = spool_open(dir, 0, err);
	_cleanup_free_ char *rej_dir = path_in(dir, "rejected");
	struct spool_entry *v = NULL;
	unsigned rej = 9, quar = 9;
	char text[200] = "";
	uint8_t orig[HDR_LEN + 600], moved[HDR_LEN + 600];
	size_t olen;

	CHECK(s != NULL);
	put_good(s, 300, name);
	olen = read_file(dir, name, orig, sizeof(orig));
	CHECK_EQ_INT(spool_list(s, &v), 1);
	CHECK_OK(spool_reject(s, &v[0], "benchmarks[0].unit: too long"));
	free(v);
	v = NULL;

	CHECK(!exists(dir, name));
	CHECK(exists(rej_dir, name));
	CHECK_EQ_INT(read_file(rej_dir, name, moved, sizeof(moved)), olen);
	CHECK(!memcmp(orig, moved, olen));
	snprintf(reason_name, sizeof(reason_name), "%s.reason", name);
	read_file(rej_dir, reason_name, (uint8_t *)text, sizeof(text) - 1);
	CHECK_EQ_STR(text, "benchmarks[0].unit: too long\n");
	CHECK_EQ_INT(tmp_count(rej_dir), 0);
	CHECK_EQ_INT(spool_list(s, &v), 0);
	free(v);
	CHECK_OK(spool_counts(s, &rej, &quar));
	CHECK_EQ_INT(rej, 1);
	CHECK_EQ_INT(quar, 0);
	spool_close(s);
}

static void test_crash_leftovers(const char *dir)
{
	char err[SPOOL_ERR_LEN] = "", name[64], id[37], tmp[80];
	struct spool *s = spool_open(dir, 0, err);
	struct spool_entry *v = NULL;
	_cleanup_free_ char *sub = path_in(dir, "sub.fbr");
	uint8_t scratch[600];
	size_t good_len = payload_of(400, scratch, sizeof(scratch));
	int lock_fd;

	CHECK(s != NULL);
	put_good(s, 400, name);
	/* a crash between write and rename leaves NAME.fbr.tmp */
	uuid_of(401, id);
	snprintf(tmp, sizeof(tmp), "%s.fbr.tmp", id);
	write_file(dir, tmp, "partial", 7);
	/* subdirectories and unrelated files are ignored */
	CHECK_OK(mkdir(sub, 0700));
	write_file(dir, "notes.txt", "hello", 5);

	/* while a put holds the spool lock its temporary file is live */
	lock_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK_OK(flock(lock_fd, LOCK_EX));
	CHECK_EQ_INT(spool_list(s, &v), 1);
	free(v);
	v = NULL;
	CHECK(exists(dir, tmp));
	close(lock_fd);

	CHECK_EQ_INT(spool_list(s, &v), 1);
	if (v)
		CHECK_EQ_STR(v[0].name, name);
	free(v);
	CHECK(!exists(dir, tmp));
	CHECK(exists(dir, "notes.txt"));
	CHECK(exists(dir, "sub.fbr"));

	/* the run whose put was interrupted can be spooled afresh */
	CHECK_OK(spool_put(s, id, "whole", 5, err));
	CHECK_EQ_INT(spool_bytes(s), 2 * HDR_LEN + 5 + good_len);

	/* a put replaces a crashed put's temporary file of the same run */
	uuid_of(402, id);
	snprintf(tmp, sizeof(tmp), "%s.fbr.tmp", id);
	write_file(dir, tmp, "partial", 7);
	CHECK_OK(spool_put(s, id, "again", 5, err));
	CHECK_EQ_INT(tmp_count(dir), 0);
	v = NULL;
	CHECK_EQ_INT(spool_list(s, &v), 3);
	if (v) {
		const struct spool_entry *e = find(v, 3, id);
		_cleanup_free_ uint8_t *buf = NULL;
		size_t len = 0;

		CHECK(e && spool_read(s, e, &buf, &len, err) == 0 &&
		      len == 5 && !memcmp(buf, "again", 5));
	}
	free(v);
	spool_close(s);
}

/*
 * A full disk, simulated with RLIMIT_FSIZE (mounting a small filesystem
 * needs privileges): the write fails with EFBIG, the put fails cleanly and
 * nothing spooled before changes.
 */
static void test_disk_full(const char *dir)
{
	char err[SPOOL_ERR_LEN] = "", name[64], id[37];
	struct spool *s = spool_open(dir, 0, err);
	static uint8_t big[64 << 10];
	_cleanup_free_ char *before = NULL, *after = NULL;
	struct rlimit old, small;
	struct spool_entry *v = NULL;

	CHECK(s != NULL);
	for (unsigned i = 0; i < 5; i++)
		put_good(s, 500 + i, name);
	before = snapshot(dir);

	CHECK_OK(getrlimit(RLIMIT_FSIZE, &old));
	small = old;
	small.rlim_cur = 4096;
	signal(SIGXFSZ, SIG_IGN);
	CHECK_OK(setrlimit(RLIMIT_FSIZE, &small));
	uuid_of(600, id);
	CHECK_EQ_INT(spool_put(s, id, big, sizeof(big), err), -EFBIG);
	CHECK_OK(setrlimit(RLIMIT_FSIZE, &old));
	signal(SIGXFSZ, SIG_DFL);

	CHECK(strstr(err, "cannot write") != NULL);
	CHECK_EQ_INT(tmp_count(dir), 0);
	after = snapshot(dir);
	CHECK_EQ_STR(after, before);
	CHECK_EQ_INT(spool_list(s, &v), 5);
	for (int k = 0; v && k < 5; k++) {
		_cleanup_free_ uint8_t *buf = NULL;
		size_t len;

		CHECK_OK(spool_read(s, &v[k], &buf, &len, err));
	}
	free(v);

	/* with room again the same run spools */
	CHECK_OK(spool_put(s, id, big, sizeof(big), err));
	spool_close(s);
}

int main(void)
{
	static const char *const sub[] = {"a/b/spool", "trip", "limit",
					  "damage",    "hdr",  "reject",
					  "crash",     "full", "replace"};
	char *dirs[ARRAY_SIZE(sub)];

	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(sub); i++)
		dirs[i] = path_in(root, sub[i]);

	test_open(dirs[0]);
	test_round_trip(dirs[1]);
	test_limit(dirs[2]);
	test_damage(dirs[3]);
	test_header_bytes(dirs[4]);
	test_reject(dirs[5]);
	test_crash_leftovers(dirs[6]);
	test_disk_full(dirs[7]);
	test_replace(dirs[8]);

	for (size_t i = 0; i < ARRAY_SIZE(sub); i++)
		free(dirs[i]);
	{
		_cleanup_free_ char *cmd = NULL;

		if (asprintf(&cmd, "rm -rf '%s'", root) >= 0 && system(cmd))
			fprintf(stderr, "cannot remove %s\n", root);
	}
	return check_summary();
}
