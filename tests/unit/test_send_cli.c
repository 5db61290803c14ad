/* SPDX-License-Identifier: MIT */
/*
 * The agent's run, send, spool and keygen commands against a scripted
 * collector (tests/send_test.h), and their exit statuses; what a delivery
 * leaves in the state directory.
 */
#include <sys/utsname.h>
#include <unistd.h>

#include <json-c/json.h>

#include "clock.h"
#include "run.h"
#include "send_test.h"
#include "state.h"

/* The test's state directory (made by the first delivery). */
static char state_dir[600];

/* The options every command below shares: no system config, the test's
 * spool, state directory, keys and endpoint. */
#define CLI_OPTS(spool, endpoint)                                           \
	"--config", path_of("empty.conf"), "--spool-dir", (spool),         \
		"--state-dir", state_dir, "--endpoint", (endpoint),        \
		"--server-key", path_of("server.pub"), "--agent-key",      \
		path_of("allow/agent.key"), "--send-timeout", "300",       \
		"--retries", "0", "--backoff", "10"

/* The run id in the state directory ("" when there is no state). */
static const char *state_run_id(void)
{
	static char id[64];
	char err[STATE_ERR_LEN] = "";
	struct state st;

	id[0] = '\0';
	if (state_read(state_dir, &st, err) == 0) {
		snprintf(id, sizeof(id), "%s", st.run_id);
		state_release(&st);
	}
	return id;
}

#define QUICK_RUN                                                           \
	"--profile", "quick", "--only", "false_sharing", "--fs-increments",  \
		"1000", "--repeats", "2", "--steal-window", "0", "--dir", root

/* The state the one report in s would give (its kernel and run id). */
static void spooled_kernel(struct spool *s, struct state *ret)
{
	_cleanup_free_ struct spool_entry *e = NULL;
	_cleanup_free_ uint8_t *buf = NULL;
	char err[SPOOL_ERR_LEN] = "";
	size_t len;

	CHECK_EQ_INT(spool_list(s, &e), 1);
	if (!e)
		return;
	CHECK_OK(spool_read(s, &e[0], &buf, &len, err));
	if (buf)
		CHECK_OK(state_from_report(buf, len, 0, ret, err));
}

static void test_cli(void)
{
	char spool_dir[600], cli_dir[600], unreachable[128], first_id[64];
	char err[STATE_ERR_LEN] = "";
	struct state spooled_st = { 0 }, got = { 0 };
	int64_t before_ms = wall_ms();
	struct run_result r;
	struct json_object *j;
	struct scene sc;
	struct stat st;
	struct utsname u;
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
	snprintf(state_dir, sizeof(state_dir), "%s", path_of("state"));

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

	/* nothing delivered yet: no state, not even its directory */
	CHECK(access(state_dir, F_OK) < 0 && errno == ENOENT);
	spooled_kernel(sc.s, &spooled_st);

	/* send delivers: exit 0, and the state directory (made 0700) holds
	 * the kernel of the report delivered, the running one */
	RUN_AGENT(&r, -1, "send", CLI_OPTS(spool_dir, sc.srv.endpoint));
	CHECK_EQ_INT(r.status, 0);
	CHECK(strstr(r.out, "committed 1") && strstr(r.out, "remaining 0"));
	CHECK(strstr(r.err, "warning") == NULL);
	run_result_release(&r);
	CHECK_EQ_INT(spooled(sc.s), 0);
	CHECK_EQ_INT(server_received(&sc.srv), 1);
	CHECK(stat(state_dir, &st) == 0 && (st.st_mode & 0777) == 0700);
	CHECK_OK(state_read(state_dir, &got, err));
	CHECK_EQ_STR(got.run_id, spooled_st.run_id);
	CHECK_EQ_STR(got.kernel_release, spooled_st.kernel_release);
	CHECK_EQ_STR(got.kernel_version, spooled_st.kernel_version);
	CHECK(uname(&u) == 0 &&
	      state_kernel_unchanged(&got, u.release, u.version));
	CHECK(got.delivered_unix_ms >= before_ms &&
	      got.delivered_unix_ms <= wall_ms());
	state_release(&got);
	state_release(&spooled_st);
	snprintf(first_id, sizeof(first_id), "%s", state_run_id());

	/* run: spooled, then sent at once; the state follows */
	RUN_AGENT(&r, -1, "run", CLI_OPTS(spool_dir, sc.srv.endpoint), QUICK_RUN);
	CHECK_EQ_INT(r.status, 0);
	CHECK(strstr(r.err, "committed 1") != NULL);
	run_result_release(&r);
	CHECK_EQ_INT(spooled(sc.s), 0);
	CHECK_EQ_INT(server_received(&sc.srv), 2);
	CHECK(strcmp(state_run_id(), first_id) != 0);
	CHECK(server_saw(&sc.srv, state_run_id()));
	snprintf(first_id, sizeof(first_id), "%s", state_run_id());

	/* and with it, run --if-kernel-changed has nothing to do */
	RUN_AGENT(&r, -1, "run", CLI_OPTS(spool_dir, sc.srv.endpoint), QUICK_RUN,
		  "--if-kernel-changed");
	CHECK_EQ_INT(r.status, 0);
	CHECK(strstr(r.err, "nothing to do") && strstr(r.err, first_id));
	CHECK_EQ_STR(r.out, "");
	run_result_release(&r);
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
	/* undelivered: the state stays the last delivered report's */
	CHECK_EQ_STR(state_run_id(), first_id);
	scene_stop(&sc);

	/* a collector that rejects it: exit 1, the report in rejected/ */
	scene_start(&sc, "cli", true, ACT_REJECT, 0, NULL, 0);
	RUN_AGENT(&r, -1, "send", CLI_OPTS(spool_dir, sc.srv.endpoint));
	CHECK_EQ_INT(r.status, 1);
	CHECK(strstr(r.out, "rejected 1") != NULL);
	CHECK(strstr(r.err, "bad") != NULL);
	run_result_release(&r);
	CHECK_EQ_INT(spooled(sc.s), 0);
	CHECK_EQ_STR(state_run_id(), first_id);
	scene_stop(&sc);

	/* DUPLICATE is delivered too: of two, the newest is recorded, with
	 * the kernel its report names (send_test.h's, no version) */
	scene_start(&sc, "cli", true, ACT_DUPLICATE, 0, NULL, 2);
	RUN_AGENT(&r, -1, "send", CLI_OPTS(spool_dir, sc.srv.endpoint));
	CHECK_EQ_INT(r.status, 0);
	CHECK(strstr(r.out, "duplicate 2") != NULL);
	run_result_release(&r);
	CHECK_OK(state_read(state_dir, &got, err));
	CHECK_EQ_STR(got.run_id, sc.ids[1]);
	CHECK_EQ_STR(got.kernel_release, "6.1.0-test");
	CHECK_EQ_STR(got.kernel_version, "");
	state_release(&got);
	snprintf(first_id, sizeof(first_id), "%s", sc.ids[1]);
	scene_stop(&sc);

	/* a state that cannot be written is a warning: the report is
	 * stored and leaves the spool, exit 0, and no directory is made */
	scene_start(&sc, "cli", true, ACT_COMMIT, 0, NULL, 1);
	RUN_AGENT(&r, -1, "send", CLI_OPTS(spool_dir, sc.srv.endpoint),
		  "--state-dir", path_of("absent/state"));
	CHECK_EQ_INT(r.status, 0);
	CHECK(strstr(r.out, "committed 1") != NULL);
	CHECK(strstr(r.err, "warning: cannot record kernel 6.1.0-test of delivered report") &&
	      strstr(r.err, sc.ids[0]) && strstr(r.err, "absent/state"));
	run_result_release(&r);
	CHECK_EQ_INT(spooled(sc.s), 0);
	CHECK(access(path_of("absent"), F_OK) < 0 && errno == ENOENT);
	CHECK_EQ_STR(state_run_id(), first_id); /* the old state stays */
	scene_stop(&sc);

	scene_start(&sc, "cli", true, ACT_REJECT, 0, NULL, 0);

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
