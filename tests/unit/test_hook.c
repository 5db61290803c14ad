/* SPDX-License-Identifier: MIT */
/* hook_run(): real /bin/sh commands, their input, exit status and timeout. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "cleanup.h"
#include "clock.h"
#include "hook.h"

static char dir[] = "/tmp/fleetbench-test-hook-XXXXXX";

static int run(const char *command, const char *input, int timeout_ms,
	       char *err)
{
	*err = '\0';
	return hook_run(command, NULL, input, input ? strlen(input) : 0,
			timeout_ms, err);
}

/* The whole file, or NULL. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0;

	if (!f)
		return NULL;
	if (getdelim(&buf, &len, '\0', f) < 0) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static void test_input_and_environment(void)
{
	char cmd[256], path[128], err[HOOK_ERR_LEN];
	const char *const env[] = { "FLEETBENCH_ALERT_ID=42", "HOME=/hook",
				    NULL };
	const char *input = "{\"id\": 42, \"kind\": \"fingerprint\"}\n";
	_cleanup_free_ char *got = NULL;

	snprintf(path, sizeof(path), "%s/in", dir);
	snprintf(cmd, sizeof(cmd),
		 "cat > %s && test \"$FLEETBENCH_ALERT_ID\" = 42 && test \"$HOME\" = /hook",
		 path);
	CHECK_EQ_INT(hook_run(cmd, env, input, strlen(input), 5000, err), 0);
	got = slurp(path);
	CHECK_EQ_STR(got, input);
}

static void test_exit_status(void)
{
	char err[HOOK_ERR_LEN];

	CHECK_EQ_INT(run("exit 3", "x", 5000, err), -EPROTO);
	CHECK_EQ_STR(err, "exit status 3");
	CHECK_EQ_INT(run("/nonexistent/hook", "x", 5000, err), -EPROTO);
	CHECK_EQ_STR(err, "exit status 127");
	CHECK_EQ_INT(run("kill -KILL $$", "x", 5000, err), -EPROTO);
	CHECK(!strncmp(err, "killed by signal 9", 18));
}

/* A hook that never reads its input still succeeds by its exit status,
 * however much input there is. */
static void test_unread_input(void)
{
	size_t len = 1 << 20;
	_cleanup_free_ char *big = malloc(len + 1);
	char err[HOOK_ERR_LEN];

	memset(big, 'x', len);
	big[len] = '\0';
	CHECK_EQ_INT(run("exit 0", big, 5000, err), 0);
	CHECK_EQ_INT(run("head -c 10 >/dev/null", big, 5000, err), 0);
	CHECK_EQ_INT(run("wc -c | grep -qx 1048576", big, 5000, err), 0);
}

static void test_timeout(void)
{
	char err[HOOK_ERR_LEN];
	int64_t t0 = mono_ms(), took;

	CHECK_EQ_INT(run("sleep 30", "x", 300, err), -ETIMEDOUT);
	took = mono_ms() - t0;
	CHECK_EQ_STR(err, "timed out after 300 ms");
	/* SIGTERM ends sh and sleep at once */
	CHECK_(took >= 300 && took < 300 + HOOK_KILL_GRACE_MS,
	       "took %lld ms", (long long)took);

	/* ignoring SIGTERM buys the grace period, then SIGKILL */
	t0 = mono_ms();
	CHECK_EQ_INT(run("trap '' TERM; sleep 30", "x", 300, err), -ETIMEDOUT);
	took = mono_ms() - t0;
	CHECK_(took >= 300 + HOOK_KILL_GRACE_MS &&
		       took < 300 + HOOK_KILL_GRACE_MS + 2000,
	       "took %lld ms", (long long)took);

	/* a hook stuck without reading a large input is timed out too */
	{
		size_t len = 1 << 20;
		_cleanup_free_ char *big = malloc(len + 1);

		memset(big, 'x', len);
		big[len] = '\0';
		CHECK_EQ_INT(run("sleep 30", big, 300, err), -ETIMEDOUT);
	}
}

/* The hook starts with no blocked signals and SIGPIPE not ignored, in its
 * own process group, whatever the collector blocks and ignores. */
static void test_signals_and_group(void)
{
	char err[HOOK_ERR_LEN];
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	CHECK_EQ_INT(run("grep -Eq '^SigBlk:[[:space:]]+0+$' /proc/self/status",
			 "", 5000, err),
		     0);
	/* SIGPIPE (bit 12) is not ignored (glibc's own two are) */
	CHECK_EQ_INT(run("ign=$(sed -n 's/^SigIgn:[[:space:]]*//p' /proc/$$/status); "
			 "test $((0x$ign & 0x1000)) -eq 0",
			 "", 5000, err),
		     0);
	CHECK_EQ_INT(run("read -r _ _ _ _ pgrp _ </proc/$$/stat; test \"$pgrp\" = $$",
			 "", 5000, err),
		     0);
	sigprocmask(SIG_UNBLOCK, &mask, NULL);
}

int main(void)
{
	char path[128];

	/* as the collector does; hook.h asks for it */
	signal(SIGPIPE, SIG_IGN);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_input_and_environment();
	test_exit_status();
	test_unread_input();
	test_timeout();
	test_signals_and_group();
	snprintf(path, sizeof(path), "%s/in", dir);
	unlink(path);
	rmdir(dir);
	return check_summary();
}
