/* SPDX-License-Identifier: MIT */
/*
 * The agent's state directory (agent/ship/state.h): the kernel of the last
 * delivered report, taken from a packed Report, written atomically, read
 * back, refused when damaged or missing, and compared with a running
 * kernel given as uname(2) would give it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cleanup.h"
#include "codec_test.h"
#include "state.h"

#define RELEASE "6.1.0-18-cloud-amd64"
#define VERSION "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1"

static char root[] = "/tmp/fleetbench-test-state-XXXXXX";

static char *path_of(const char *rel)
{
	static char buf[4][512];
	static int next;
	char *p = buf[next++ % 4];

	snprintf(p, sizeof(buf[0]), "%s/%s", root, rel);
	return p;
}

static void write_text(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "we");

	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_EQ_INT(fwrite(text, 1, len, f), len);
	fclose(f);
}

/* The names in dir, sorted, joined by spaces ("" when empty). */
static char *names_in(const char *dir)
{
	static char out[1024];
	struct dirent **list;
	int n = scandir(dir, &list, NULL, alphasort);

	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (strcmp(list[i]->d_name, ".") &&
		    strcmp(list[i]->d_name, "..")) {
			if (out[0])
				strcat(out, " ");
			strcat(out, list[i]->d_name);
		}
		free(list[i]);
	}
	if (n >= 0)
		free(list);
	return out;
}

/* Equal release and version: unchanged; either differing: changed. */
static void test_compare(void)
{
	struct state st = {
		.kernel_release = RELEASE,
		.kernel_version = VERSION,
		.run_id = RUN_ID,
	};
	struct state none = { 0 };

	CHECK(state_kernel_unchanged(&st, RELEASE, VERSION));
	CHECK(!state_kernel_unchanged(&st, "6.1.0-21-cloud-amd64", VERSION));
	/* a rebuilt kernel of the same release is another kernel */
	CHECK(!state_kernel_unchanged(
		&st, RELEASE, "#1 SMP PREEMPT_DYNAMIC Debian 6.1.90-1"));
	CHECK(!state_kernel_unchanged(&st, RELEASE, ""));
	CHECK(!state_kernel_unchanged(&st, NULL, VERSION));
	CHECK(!state_kernel_unchanged(&none, RELEASE, VERSION));
}

/* A packed Report gives its kernel and run id; a broken one -EBADMSG. */
static void test_from_report(void)
{
	char err[STATE_ERR_LEN] = "";
	struct fixture f;
	struct state st = { 0 };
	uint8_t *buf = NULL, junk[64];
	size_t len;

	fixture_init(&f);
	CHECK_OK(codec_pack_report(&f.r, &buf, &len));
	CHECK_OK(state_from_report(buf, len, 1700000000123LL, &st, err));
	CHECK_EQ_STR(st.kernel_release, RELEASE);
	CHECK_EQ_STR(st.kernel_version, VERSION);
	CHECK_EQ_STR(st.run_id, RUN_ID);
	CHECK_EQ_INT(st.delivered_unix_ms, 1700000000123LL);
	state_release(&st);
	free(buf);

	/* no version: recorded as "" */
	f.kernel.version = NULL;
	CHECK_OK(codec_pack_report(&f.r, &buf, &len));
	CHECK_OK(state_from_report(buf, len, 1, &st, err));
	CHECK_EQ_STR(st.kernel_version, "");
	state_release(&st);
	free(buf);

	/* one today's rules refuse (started in the future): the collector
	 * stored it, its kernel counts */
	fixture_init(&f);
	f.r.started_unix_ms = f.r.finished_unix_ms + 10 * DAY_MS;
	f.r.finished_unix_ms = f.r.started_unix_ms;
	CHECK_OK(codec_pack_report(&f.r, &buf, &len));
	CHECK_OK(state_from_report(buf, len, 1, &st, err));
	CHECK_EQ_STR(st.kernel_release, RELEASE);
	state_release(&st);
	free(buf);

	memset(junk, 0xff, sizeof(junk));
	CHECK_EQ_INT(state_from_report(junk, sizeof(junk), 1, &st, err),
		     -EBADMSG);
	CHECK(strstr(err, "does not decode") != NULL);
	CHECK(st.kernel_release == NULL);
}

/*
 * Written into a missing directory (made 0700), read back equal, replaced
 * whole by a second write, nothing else left in the directory; a stale
 * temporary file of a crash is replaced; a directory whose parent is
 * missing is not made, and nothing is.
 */
static void test_write_read(void)
{
	char err[STATE_ERR_LEN] = "";
	const char *dir = path_of("state");
	struct state st = {
		.kernel_release = RELEASE,
		.kernel_version = "#1 SMP \"quoted\" / slashed\n",
		.run_id = RUN_ID,
		.delivered_unix_ms = 1767225600000LL,
	};
	struct state got = { 0 };
	struct stat sb;

	CHECK_OK(state_write(dir, &st, err));
	CHECK(stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) &&
	      (sb.st_mode & 0777) == 0700);
	CHECK(stat(path_of("state/" STATE_FILE), &sb) == 0 &&
	      (sb.st_mode & 0777) == 0600);
	CHECK_EQ_STR(names_in(dir), STATE_FILE);
	CHECK_OK(state_read(dir, &got, err));
	CHECK_EQ_STR(got.kernel_release, st.kernel_release);
	CHECK_EQ_STR(got.kernel_version, st.kernel_version);
	CHECK_EQ_STR(got.run_id, st.run_id);
	CHECK_EQ_INT(got.delivered_unix_ms, st.delivered_unix_ms);
	CHECK(state_kernel_unchanged(&got, RELEASE, st.kernel_version));
	state_release(&got);

	/* a later delivery replaces it; a crash's temporary file goes */
	write_text(path_of("state/" STATE_FILE ".tmp"), "{", 1);
	st.kernel_release = "6.12.0-1-cloud-amd64";
	st.kernel_version = "";
	st.run_id = "00000000-0000-4000-8000-000000000001";
	CHECK_OK(state_write(dir, &st, err));
	CHECK_EQ_STR(names_in(dir), STATE_FILE);
	CHECK_OK(state_read(dir, &got, err));
	CHECK_EQ_STR(got.kernel_release, "6.12.0-1-cloud-amd64");
	CHECK_EQ_STR(got.kernel_version, "");
	CHECK_EQ_STR(got.run_id, "00000000-0000-4000-8000-000000000001");
	state_release(&got);

	/* the parents are not the agent's to make */
	CHECK_EQ_INT(state_write(path_of("absent/state"), &st, err), -ENOENT);
	CHECK(strstr(err, "cannot create the state directory") != NULL);
	CHECK(access(path_of("absent"), F_OK) < 0 && errno == ENOENT);

	/* nothing to record */
	st.kernel_release = "";
	CHECK_EQ_INT(state_write(dir, &st, err), -EINVAL);
	CHECK_EQ_INT(state_write("", &st, err), -EINVAL);
}

/* No file: -ENOENT; each kind of damage: -EBADMSG, named. */
static void test_missing_damaged(void)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "", "not JSON" },
		{ "{\"kernel_release\": \"6.1.0\", \"kernel_vers", "not JSON" },
		{ "[1, 2]", "not a JSON object" },
		{ "\"6.1.0\"", "not a JSON object" },
		{ "{} trailing", "more after the JSON object" },
		{ "{\"kernel_version\": \"v\", \"run_id\": \"" RUN_ID
		  "\", \"delivered_unix_ms\": 1}",
		  "kernel_release: missing or not a string" },
		{ "{\"kernel_release\": 6, \"kernel_version\": \"v\", "
		  "\"run_id\": \"" RUN_ID "\", \"delivered_unix_ms\": 1}",
		  "kernel_release: missing or not a string" },
		{ "{\"kernel_release\": \"\", \"kernel_version\": \"v\", "
		  "\"run_id\": \"" RUN_ID "\", \"delivered_unix_ms\": 1}",
		  "kernel_release: empty" },
		{ "{\"kernel_release\": \"r\", \"run_id\": \"" RUN_ID
		  "\", \"delivered_unix_ms\": 1}",
		  "kernel_version: missing or not a string" },
		{ "{\"kernel_release\": \"r\", \"kernel_version\": \"v\", "
		  "\"run_id\": \"not-a-uuid\", \"delivered_unix_ms\": 1}",
		  "run_id: not a UUID" },
		{ "{\"kernel_release\": \"r\", \"kernel_version\": \"v\", "
		  "\"delivered_unix_ms\": 1}",
		  "run_id: missing or not a string" },
		{ "{\"kernel_release\": \"r\", \"kernel_version\": \"v\", "
		  "\"run_id\": \"" RUN_ID "\", \"delivered_unix_ms\": \"1\"}",
		  "delivered_unix_ms: missing or not a time" },
		{ "{\"kernel_release\": \"r\", \"kernel_version\": \"v\", "
		  "\"run_id\": \"" RUN_ID "\", \"delivered_unix_ms\": -5}",
		  "delivered_unix_ms: missing or not a time" },
	};
	char err[STATE_ERR_LEN] = "";
	const char *dir = path_of("damaged");
	const char *file = path_of("damaged/" STATE_FILE);
	struct state got = { 0 };
	char *big;

	CHECK_EQ_INT(mkdir(dir, 0700), 0);
	CHECK_EQ_INT(state_read(dir, &got, err), -ENOENT);
	CHECK_EQ_INT(state_read(path_of("nowhere"), &got, err), -ENOENT);

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		write_text(file, cases[i].text, strlen(cases[i].text));
		err[0] = '\0';
		CHECK_EQ_INT(state_read(dir, &got, err), -EBADMSG);
		CHECK_(strstr(err, cases[i].want) && strstr(err, file) &&
			       strstr(err, "damaged"),
		       "case %zu: \"%s\", expected \"%s\"", i, err,
		       cases[i].want);
		CHECK(got.kernel_release == NULL);
	}

	/* a NUL inside */
	write_text(file, "{\"a\":\0\"b\"}", 10);
	CHECK_EQ_INT(state_read(dir, &got, err), -EBADMSG);
	CHECK(strstr(err, "NUL byte") != NULL);

	/* runaway: refused by size, never read whole */
	big = repeat_char(' ', STATE_MAX_BYTES + 1);
	CHECK(big != NULL);
	if (big) {
		write_text(file, big, STATE_MAX_BYTES + 1);
		CHECK_EQ_INT(state_read(dir, &got, err), -EBADMSG);
		CHECK(strstr(err, "over") != NULL);
		free(big);
	}

	/* a well-formed one with more keys than ours still reads */
	{
		static const char ok[] =
			"{\"kernel_release\": \"r\", \"kernel_version\": "
			"\"v\", "
			"\"run_id\": \"" RUN_ID "\", \"delivered_unix_ms\": 7, "
			"\"later\": true}\n";

		write_text(file, ok, strlen(ok));
		CHECK_OK(state_read(dir, &got, err));
		CHECK_EQ_STR(got.kernel_release, "r");
		CHECK_EQ_INT(got.delivered_unix_ms, 7);
		state_release(&got);
	}
}

int main(void)
{
	char cmd[600];

	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	test_compare();
	test_from_report();
	test_write_read();
	test_missing_damaged();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", root);
	return check_summary();
}
