/* SPDX-License-Identifier: MIT */
/*
 * The agent's run, send, spool and keygen commands against a scripted
 * collector (tests/send_test.h), and their exit statuses.
 */
#include <unistd.h>

#include <json-c/json.h>

#include "run.h"
#include "send_test.h"

/* The options every command below shares: no system config, the test's
 * spool, keys and endpoint. */
#define CLI_OPTS(spool, endpoint)                                           \
	"--config", path_of("empty.conf"), "--spool-dir", (spool),         \
		"--endpoint", (endpoint), "--server-key",                  \
		path_of("server.pub"), "--agent-key",                      \
		path_of("allow/agent.key"), "--send-timeout", "300",       \
		"--retries", "0", "--backoff", "10"

#define QUICK_RUN                                                           \
	"--profile", "quick", "--only", "false_sharing", "--fs-increments",  \
		"1000", "--repeats", "2", "--steal-window", "0", "--dir", root

static void test_cli(void)
{
	char spool_dir[600], cli_dir[600], unreachable[128];
	struct run_result r;
	struct json_object *j;
	struct scene sc;
	struct stat st;
	FILE *f;

	CHECK(getenv("AGENT") != NULL);
	if (!getenv("AGENT"))
		return;
	f = fopen(path_of("empty.conf"), "we");
	if (f)
		fclose(f);
	snprintf(cli_dir, sizeof(cli_dir), "%s", path_of("cli-keys"));
	CHECK_EQ_INT(mkdir(cli_dir, 0700), 0);

	/* keygen: 0600 secret, public beside it, never overwritten */
	RUN_AGENT(&r, -1, "keygen", "--dir", cli_dir, "--name", "a1");
	CHECK_EQ_INT(r.status, 0);
	CHECK(strstr(r.out, "a1.pub") != NULL);
	CHECK(stat(path_of("cli-keys/a1.key"), &st) == 0 &&
	      (st.st_mode & 0777) == 0600);
	CHECK(access(path_of("cli-keys/a1.pub"), R_OK) == 0);
	run_result_release(&r);
	RUN_AGENT(&r, -1, "keygen", "--dir", cli_dir, "--name", "a1");
	CHECK_EQ_INT(r.status, 1);
	CHECK(strstr(r.err, "already exists") != NULL);
	run_result_release(&r);

	scene_start(&sc, "cli", true, ACT_COMMIT, 0, NULL, 0);
	snprintf(spool_dir, sizeof(spool_dir), "%s", path_of("cli"));

	/* run --no-send: spooled, not sent */
	RUN_AGENT(&r, -1, "run", CLI_OPTS(spool_dir, sc.srv.endpoint), QUICK_RUN,
		  "--no-send");
	CHECK_EQ_INT(r.status, 0);
	CHECK(strstr(r.err, "spooled in") != NULL);
	CHECK(strstr(r.out, "false_sharing") != NULL);
	run_result_release(&r);
	CHECK_EQ_INT(spooled(sc.s), 1);
	CHECK_EQ_INT(server_received(&sc.srv), 0);

	/* without a collector and without --no-send: a local run only */
	RUN_AGENT(&r, -1, "run", "--config", path_of("empty.conf"), "--spool-dir",
		  spool_dir, QUICK_RUN);
	CHECK_EQ_INT(r.status, 0);
	run_result_release(&r);
	CHECK_EQ_INT(spooled(sc.s), 1);

	/* spool lists it */
	RUN_AGENT(&r, -1, "spool", "--spool-dir", spool_dir, "--json");
	CHECK_EQ_INT(r.status, 0);
	j = json_tokener_parse(r.out);
	CHECK(j && json_object_array_length(
			   json_object_object_get(j, "reports")) == 1);
	json_object_put(j);
	run_result_release(&r);

	/* no room: refused before benchmarking, the spool untouched */
	RUN_AGENT(&r, -1, "run", CLI_OPTS(spool_dir, sc.srv.endpoint), QUICK_RUN,
		  "--spool-limit", "20K");
	CHECK_EQ_INT(r.status, 1);
	CHECK(strstr(r.err, "has no room for this run") != NULL);
	CHECK(strstr(r.out, "false_sharing") == NULL); /* never benchmarked */
	run_result_release(&r);
	CHECK_EQ_INT(spooled(sc.s), 1);
	CHECK_EQ_INT(server_received(&sc.srv), 0);

	/* send delivers: exit 0 */
	RUN_AGENT(&r, -1, "send", CLI_OPTS(spool_dir, sc.srv.endpoint));
	CHECK_EQ_INT(r.status, 0);
	CHECK(strstr(r.out, "committed 1") && strstr(r.out, "remaining 0"));
	run_result_release(&r);
	CHECK_EQ_INT(spooled(sc.s), 0);
	CHECK_EQ_INT(server_received(&sc.srv), 1);

	/* run: spooled, then sent at once */
	RUN_AGENT(&r, -1, "run", CLI_OPTS(spool_dir, sc.srv.endpoint), QUICK_RUN);
	CHECK_EQ_INT(r.status, 0);
	CHECK(strstr(r.err, "committed 1") != NULL);
	run_result_release(&r);
	CHECK_EQ_INT(spooled(sc.s), 0);
	CHECK_EQ_INT(server_received(&sc.srv), 2);

	/* the collector down: spooled but not delivered, exit 3 */
	snprintf(unreachable, sizeof(unreachable), "%s", sc.srv.endpoint);
	server_stop(&sc.srv);
	RUN_AGENT(&r, -1, "run", CLI_OPTS(spool_dir, unreachable), QUICK_RUN);
	CHECK_EQ_INT(r.status, 3);
	CHECK(strstr(r.err, "no collector answered") != NULL);
	run_result_release(&r);
	CHECK_EQ_INT(spooled(sc.s), 1);
	RUN_AGENT(&r, -1, "send", CLI_OPTS(spool_dir, unreachable));
	CHECK_EQ_INT(r.status, 3);
	CHECK(strstr(r.out, "remaining 1") != NULL);
	run_result_release(&r);
	scene_stop(&sc);

	/* a collector that rejects it: exit 1, the report in rejected/ */
	scene_start(&sc, "cli", true, ACT_REJECT, 0, NULL, 0);
	RUN_AGENT(&r, -1, "send", CLI_OPTS(spool_dir, sc.srv.endpoint));
	CHECK_EQ_INT(r.status, 1);
	CHECK(strstr(r.out, "rejected 1") != NULL);
	CHECK(strstr(r.err, "bad") != NULL);
	run_result_release(&r);
	CHECK_EQ_INT(spooled(sc.s), 0);

	/* what sending needs is checked first */
	RUN_AGENT(&r, -1, "send", "--config", path_of("empty.conf"), "--spool-dir",
		  spool_dir);
	CHECK_EQ_INT(r.status, 2);
	CHECK(strstr(r.err, "no collector configured") != NULL);
	run_result_release(&r);
	RUN_AGENT(&r, -1, "send", CLI_OPTS(spool_dir, "udp://127.0.0.1:1"));
	CHECK_EQ_INT(r.status, 2);
	CHECK(strstr(r.err, "bad collector endpoint") != NULL);
	run_result_release(&r);
	chmod(path_of("allow/agent.key"), 0640);
	RUN_AGENT(&r, -1, "send", CLI_OPTS(spool_dir, sc.srv.endpoint));
	CHECK_EQ_INT(r.status, 1);
	CHECK(strstr(r.err, "readable by group or others") != NULL);
	run_result_release(&r);
	chmod(path_of("allow/agent.key"), 0600);
	scene_stop(&sc);
}

int main(void)
{
	send_test_setup();
	test_cli();
	send_test_teardown();
	return check_summary();
}
