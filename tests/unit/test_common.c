/* SPDX-License-Identifier: MIT */
/*
 * common/'s helpers written once: read_full_file at and around its limit,
 * ARRAY_RESERVE's growth, list_next's items, and run-id UUIDs over libuuid.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "check.h"
#include "cleanup.h"
#include "file.h"
#include "list.h"
#include "probe_test.h"
#include "uuid_str.h"

/* root/f: len bytes of 'x' */
static void write_file(const char *root, size_t len)
{
	char *data = malloc(len + 1);

	CHECK(data != NULL);
	if (!data)
		return;
	memset(data, 'x', len);
	tree_put(root, "f", data, (ssize_t)len);
	free(data);
}

static void test_read_full_file(void)
{
	char *dir = tree_new(), path[PATH_MAX];
	char *buf = NULL;

	snprintf(path, sizeof(path), "%s/f", dir);

	/* empty, one short of the limit, exactly at it, one beyond */
	write_file(dir, 0);
	CHECK_EQ_INT(read_full_file(path, 10, &buf), 0);
	CHECK(buf && buf[0] == '\0');
	free(buf);
	buf = NULL;
	write_file(dir, 9);
	CHECK_EQ_INT(read_full_file(path, 10, &buf), 9);
	CHECK(buf && strlen(buf) == 9);
	free(buf);
	buf = NULL;
	write_file(dir, 10);
	CHECK_EQ_INT(read_full_file(path, 10, &buf), 10);
	free(buf);
	buf = NULL;
	write_file(dir, 11);
	CHECK_EQ_INT(read_full_file(path, 10, &buf), -EFBIG);
	CHECK(!buf); /* written only on success */

	/* beyond the first 4 KiB, through the doubling */
	write_file(dir, 100000);
	CHECK_EQ_INT(read_full_file(path, 1 << 20, &buf), 100000);
	CHECK(buf && buf[99999] == 'x' && buf[100000] == '\0');
	free(buf);
	buf = NULL;

	CHECK_EQ_INT(read_full_file("/nonexistent/fb", 10, &buf), -ENOENT);
	{
		_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		CHECK_EQ_INT(read_full_fileat(dfd, "f", 1 << 20, &buf), 100000);
		free(buf);
	}
	tree_free(dir);
}

static void test_array(void)
{
	int *a = NULL;
	size_t cap = 0;

	CHECK_OK(ARRAY_RESERVE(a, cap, 1));
	CHECK(a && cap >= 1);
	for (int i = 0; i < 1000; i++) {
		CHECK_OK(ARRAY_RESERVE(a, cap, (size_t)i + 1));
		a[i] = i;
	}
	CHECK(cap >= 1000 && cap < 2048);
	CHECK_EQ_INT(a[999], 999);
	/* a reservation that cannot be met leaves the array as it was */
	{
		int *before = a;
		size_t cap_before = cap;

		CHECK_EQ_INT(ARRAY_RESERVE(a, cap, (size_t)-1), -ENOMEM);
		CHECK(a == before && cap == cap_before);
	}
	free(a);
}

static void test_list(void)
{
	const char *cur = "randread,,thp_chase", *item;
	size_t len;

	item = list_next(&cur, ',', &len);
	CHECK(item && len == 8 && !strncmp(item, "randread", len));
	item = list_next(&cur, ',', &len);
	CHECK(item && len == 0);
	item = list_next(&cur, ',', &len);
	CHECK(item && len == 9 && !strncmp(item, "thp_chase", len));
	CHECK(!list_next(&cur, ',', &len));
	CHECK_EQ_INT(list_count("a,b,c", ','), 3);
	CHECK_EQ_INT(list_count("", ','), 1);
	CHECK_EQ_INT(list_count(NULL, ','), 0);
}

static void test_uuid(void)
{
	char u[UUID_TEXT_LEN + 1], v[UUID_TEXT_LEN + 1];

	CHECK(uuid_text_valid("0b3e8c1a-5d2f-4e6a-9b7c-1d2e3f4a5b6c"));
	CHECK(!uuid_text_valid("0B3E8C1A-5D2F-4E6A-9B7C-1D2E3F4A5B6C"));
	CHECK(!uuid_text_valid("0b3e8c1a-5d2f-4e6a-9b7c-1d2e3f4a5b6"));
	CHECK(!uuid_text_valid("0b3e8c1a-5d2f-4e6a-9b7c-1d2e3f4a5b6cd"));
	CHECK(!uuid_text_valid("0b3e8c1a5d2f-4e6a-9b7c-1d2e3f4a5b6c0"));
	CHECK(!uuid_text_valid("0b3e8c1a-5d2f-4e6a-9b7c-1d2e3f4a5b6g"));
	CHECK(!uuid_text_valid(""));
	CHECK(!uuid_text_valid(NULL));
	CHECK(uuid_text_valid_n("0b3e8c1a-5d2f-4e6a-9b7c-1d2e3f4a5b6c.tmp", 36));
	CHECK_OK(uuid_text_new(u));
	CHECK_OK(uuid_text_new(v));
	CHECK(uuid_text_valid(u) && uuid_text_valid(v) && strcmp(u, v));
	CHECK(u[14] == '4'); /* version 4 */
	CHECK(strchr("89ab", u[19]));
}

int main(void)
{
	test_read_full_file();
	test_array();
	test_list();
	test_uuid();
	return check_summary();
}
