/* SPDX-License-Identifier: MIT */
/*
 * fleetbench-agent's command line, run as a real process: output formats,
 * exit statuses and the messages for bad flags and bad config, label
 * sources, and that the probe needs no root.
 */
#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "check.h"
#include "cleanup.h"
#include "file.h"
#include "fleetbench.pb-c.h"
#include "probe.h"
#include "probe_test.h"
#include "run.h"
#include "state.h"

/* the run id of the state files test_if_kernel_changed() writes */
#define STATE_RUN_ID "5d1c0f3e-8b2a-4c6d-9e7f-0a1b2c3d4e5f"

static const char *agent;

static char conf_path[] = "/tmp/fleetbench-test-agent-conf-XXXXXX";

static void write_conf(const char *text)
{
	FILE *f = fopen(conf_path, "we");

	fputs(text, f);
	fclose(f);
	chmod(conf_path, 0644);
}

/*
 * show: a report spooled by `run --no-send` prints as the wire Report in
 * JSON (its run id, capabilities from the probe, the benchmark); the same
 * bytes without the spool header print the same; a damaged spool file, a
 * missing one and a missing FILE are refused by name; a report a collector
 * would refuse is printed with the reason on stderr and exit 1.
 */
static void test_show(void)
{
	char dir[] = "/tmp/fleetbench-test-show-XXXXXX";
	char spool[64], path[160], bare[160], cmd[512];
	struct json_object *j = NULL, *k;
	struct run_result r;
	const char *run_id;
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(spool, sizeof(spool), "%s/spool", dir);
	RUN_AGENT(&r, -1, "run", "--no-send", "--spool-dir", spool, "--config",
	    conf_path, "--steal-window", "0", "--profile", "quick", "--only",
	    "false_sharing", "--repeats", "2", "--fs-increments", "1000");
	CHECK_EQ_INT(r.status, 0);
	run_result_release(&r);
	/* the one spooled file's path */
	snprintf(cmd, sizeof(cmd), "ls %s/*.fbr", spool);
	f = popen(cmd, "re");
	CHECK(f && fgets(path, sizeof(path), f));
	if (f)
		pclose(f);
	path[strcspn(path, "\n")] = '\0';

	RUN_AGENT(&r, -1, "show", path);
	CHECK_EQ_INT(r.status, 0);
	CHECK_EQ_STR(r.err, "");
	j = json_tokener_parse(r.out);
	CHECK(j != NULL);
	run_id = jstr(j, "run_id");
	CHECK(strlen(run_id) == 36 && strstr(path, run_id) != NULL);
	CHECK_EQ_INT(jint(j, "schema_version"), 1);
	CHECK_EQ_STR(jstr(j, "benchmarks[0].benchmark"), "false_sharing");
	CHECK_EQ_INT(jlen(j, "benchmarks[0].metrics[0].samples"), 2);
	CHECK_EQ_STR(jstr(j, "method.profile"), "quick");
	/* the probe travels typed, the capabilities' one source (issue 37:
	 * the collector takes them from it), and shows as its own JSON */
	CHECK(!json_object_object_get_ex(j, "probe_json", NULL));
	CHECK(!json_object_object_get_ex(j, "capabilities", NULL));
	CHECK(json_object_object_get_ex(j, "probe", &k));
	CHECK(json_object_is_type(k, json_type_object));
	k = json_object_get(k);
	CHECK(jint(k, "host.vcpus_online") >= 1);
	json_object_put(k);
	run_result_release(&r);

	/* a bare packed report: the file without its 64-byte header */
	snprintf(bare, sizeof(bare), "%s/bare.pb", dir);
	snprintf(cmd, sizeof(cmd), "tail -c +65 %s > %s", path, bare);
	CHECK_EQ_INT(system(cmd), 0);
	RUN_AGENT(&r, -1, "show", bare);
	CHECK_EQ_INT(r.status, 0);
	k = json_tokener_parse(r.out);
	CHECK(k && j && json_object_equal(j, k));
	json_object_put(k);
	run_result_release(&r);
	json_object_put(j);

	/* one payload byte changed: damaged, named, and left where it is */
	snprintf(cmd, sizeof(cmd),
		 "printf '\\377' | dd of=%s bs=1 seek=100 conv=notrunc status=none",
		 path);
	CHECK_EQ_INT(system(cmd), 0);
	RUN_AGENT(&r, -1, "show", path);
	CHECK_EQ_INT(r.status, 1);
	CHECK_EQ_STR(r.out, "");
	CHECK(strstr(r.err, "damaged spool file") && strstr(r.err, path) &&
	      strstr(r.err, "checksum mismatch"));
	CHECK(access(path, F_OK) == 0);
	run_result_release(&r);

	/* a Report the collector would refuse: printed, and why */
	{
		Fleetbench__Host host = FLEETBENCH__HOST__INIT;
		Fleetbench__Kernel kernel = FLEETBENCH__KERNEL__INIT;
		Fleetbench__Report rep = FLEETBENCH__REPORT__INIT;
		uint8_t packed[512];
		size_t n;

		host.hostname = "h";
		host.machine_id = "0123456789abcdef0123456789abcdef";
		kernel.release = "6.1.0";
		rep.schema_version = 1;
		rep.run_id = "not-a-uuid";
		rep.agent_version = "0.1.0";
		rep.host = &host;
		rep.kernel = &kernel;
		rep.started_unix_ms = rep.finished_unix_ms = 1700000000000LL;
		rep.probe_json = "{}";
		n = protobuf_c_message_pack(&rep.base, packed);
		f = fopen(bare, "we");
		CHECK(f && fwrite(packed, 1, n, f) == n);
		if (f)
			fclose(f);
	}
	RUN_AGENT(&r, -1, "show", bare);
	CHECK_EQ_INT(r.status, 1);
	j = json_tokener_parse(r.out);
	CHECK_EQ_STR(jstr(j, "run_id"), "not-a-uuid");
	json_object_put(j);
	CHECK(strstr(r.err, "would be rejected: run_id: not a canonical lowercase UUID") != NULL);
	run_result_release(&r);

	/* not a report at all */
	f = fopen(bare, "we");
	CHECK(f && fputs("hello", f) >= 0);
	if (f)
		fclose(f);
	RUN_AGENT(&r, -1, "show", bare);
	CHECK_EQ_INT(r.status, 1);
	CHECK(strstr(r.err, "cannot read the report in") &&
	      strstr(r.err, "not a Report"));
	run_result_release(&r);

	RUN_AGENT(&r, -1, "show", "/nonexistent/report.fbr");
	CHECK_EQ_INT(r.status, 1);
	CHECK(strstr(r.err, "cannot read '/nonexistent/report.fbr'") != NULL);
	run_result_release(&r);
	RUN_AGENT(&r, -1, "show");
	CHECK_EQ_INT(r.status, 2);
	CHECK(strstr(r.err, "usage: fleetbench-agent show FILE") != NULL);
	run_result_release(&r);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_EQ_INT(system(cmd), 0);
}

/* Writes dir/last-delivered.json as the agent does, for kernel release
 * and version, or text as it is when release is NULL. */
static void write_state(const char *dir, const char *release,
			const char *version, const char *text)
{
	char path[256];
	struct json_object *o = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "%s/" STATE_FILE, dir);
	if (release) {
		o = json_object_new_object();
		json_object_object_add(o, "kernel_release",
				       json_object_new_string(release));
		json_object_object_add(o, "kernel_version",
				       json_object_new_string(version));
		json_object_object_add(o, "run_id",
				       json_object_new_string(STATE_RUN_ID));
		json_object_object_add(o, "delivered_unix_ms",
				       json_object_new_int64(1767225600000LL));
		text = json_object_to_json_string(o);
	}
	f = fopen(path, "we");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	json_object_put(o);
}

/* How many reports wait in the spool dir (0: none, or no spool at all). */
static int spooled_in(const char *dir)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)))
		n += strstr(de->d_name, ".fbr") &&
		     !strstr(de->d_name, ".fbr.tmp");
	return n;
}

/*
 * run --if-kernel-changed: with the running kernel in the state file it
 * logs why and exits 0 at once, having probed, benchmarked and spooled
 * nothing (the spool is not even made); another release, another build of
 * the same release, no state file or a damaged one: it runs as usual and
 * spools its report. --no-send delivers nothing, so the state file stays
 * as it was.
 */
static void test_if_kernel_changed(void)
{
	char dir[] = "/tmp/fleetbench-test-kernel-XXXXXX";
	char spool[64], state[64], path[128], cmd[128], want[256];
	struct utsname u;
	struct run_result r;
	char *text = NULL;
	int n = 0;

#define KERNEL_RUN(...)                                                       \
	RUN_AGENT(&r, -1, "run", "--if-kernel-changed", "--no-send",         \
		  "--spool-dir", spool, "--state-dir", state, "--config",      \
		  conf_path, "--steal-window", "0", "--profile", "quick",      \
		  "--only", "false_sharing", "--repeats", "2",                 \
		  "--fs-increments", "1000", ##__VA_ARGS__)

	CHECK(mkdtemp(dir) != NULL);
	CHECK_EQ_INT(uname(&u), 0);
	snprintf(spool, sizeof(spool), "%s/spool", dir);
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(path, sizeof(path), "%s/" STATE_FILE, state);
	CHECK_EQ_INT(mkdir(state, 0700), 0);

	/* the running kernel delivered already: nothing to do */
	write_state(state, u.release, u.version, NULL);
	KERNEL_RUN();
	CHECK_EQ_INT(r.status, 0);
	CHECK_EQ_STR(r.out, "");
	snprintf(want, sizeof(want),
		 "kernel %s unchanged since the last delivered report %s: nothing to do",
		 u.release, STATE_RUN_ID);
	CHECK(strstr(r.err, want) != NULL);
	CHECK(strstr(r.err, "warning") == NULL);
	run_result_release(&r);
	CHECK(access(spool, F_OK) < 0 && errno == ENOENT);

	/* another release: a run as usual, spooled */
	write_state(state, "5.10.0-28-cloud-amd64", u.version, NULL);
	KERNEL_RUN();
	CHECK_EQ_INT(r.status, 0);
	CHECK(strstr(r.out, "false_sharing") != NULL);
	CHECK(strstr(r.err, "is not that of the last delivered report") &&
	      strstr(r.err, "5.10.0-28-cloud-amd64"));
	CHECK(strstr(r.err, "spooled in") != NULL);
	run_result_release(&r);
	CHECK_EQ_INT(spooled_in(spool), ++n);
	/* nothing was delivered: the state is as it was */
	CHECK(read_full_file(path, 4096, &text) > 0 &&
	      strstr(text, "5.10.0-28-cloud-amd64"));
	free(text);
	text = NULL;

	/* the same release built again (another uname -v): runs */
	write_state(state, u.release, "#1 SMP an older build", NULL);
	KERNEL_RUN();
	CHECK_EQ_INT(r.status, 0);
	CHECK(strstr(r.err, "is not that of the last delivered report") != NULL);
	run_result_release(&r);
	CHECK_EQ_INT(spooled_in(spool), ++n);

	/* a damaged state file: named in a warning, then a run */
	write_state(state, NULL, NULL, "{\"kernel_release\": \"6.1");
	KERNEL_RUN();
	CHECK_EQ_INT(r.status, 0);
	CHECK(strstr(r.err, "warning") && strstr(r.err, path) &&
	      strstr(r.err, "damaged") && strstr(r.err, ": running"));
	CHECK(strstr(r.out, "false_sharing") != NULL);
	run_result_release(&r);
	CHECK_EQ_INT(spooled_in(spool), ++n);

	/* the first run of a host: no state file */
	CHECK_EQ_INT(unlink(path), 0);
	KERNEL_RUN();
	CHECK_EQ_INT(r.status, 0);
	CHECK(strstr(r.err, "no delivered report recorded") != NULL);
	CHECK(strstr(r.err, "warning") == NULL);
	run_result_release(&r);
	CHECK_EQ_INT(spooled_in(spool), ++n);
	/* and no state was made up for it */
	CHECK(access(path, F_OK) < 0 && errno == ENOENT);

	/* without the flag the same state changes nothing: a run */
	write_state(state, u.release, u.version, NULL);
	RUN_AGENT(&r, -1, "run", "--no-send", "--spool-dir", spool,
		  "--state-dir", state, "--config", conf_path, "--steal-window",
		  "0", "--profile", "quick", "--only", "false_sharing",
		  "--repeats", "2", "--fs-increments", "1000");
	CHECK_EQ_INT(r.status, 0);
	CHECK(strstr(r.err, "unchanged") == NULL);
	run_result_release(&r);
	CHECK_EQ_INT(spooled_in(spool), ++n);
#undef KERNEL_RUN

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_EQ_INT(system(cmd), 0);
}

/* The JSON report parses and holds every section of the probe table. */
static void check_report(const char *text, const char *who)
{
	struct json_object *j = json_tokener_parse(text);

	CHECK_(j != NULL, "%s: --json output does not parse", who);
	if (!j)
		return;
	for (size_t i = 0; i < probe_section_count(); i++)
		CHECK_(json_object_object_get_ex(j, probe_section_name(i), NULL),
		       "%s: section '%s' missing", who, probe_section_name(i));
	CHECK_EQ_STR(jstr(j, "meta.agent_version"), FLEETBENCH_VERSION);
	json_object_put(j);
}

int main(void)
{
	struct run_result r;
	struct json_object *j;
	int fd;

	agent = getenv("AGENT");
	if (!agent) {
		fprintf(stderr, "AGENT is not set (run under ctest)\n");
		return 1;
	}
	fd = mkstemp(conf_path);
	CHECK(fd >= 0);
	close(fd);
	write_conf("");

	/* --json: a parseable report with every section */
	RUN_AGENT(&r, -1, "probe", "--json", "--steal-window", "0", "--config",
	    conf_path);
	CHECK_EQ_INT(r.status, 0);
	CHECK_EQ_STR(r.err, "");
	check_report(r.out, "probe --json");
	run_result_release(&r);

	/* the table names every section */
	RUN_AGENT(&r, -1, "probe", "--steal-window", "0", "--config", conf_path);
	CHECK_EQ_INT(r.status, 0);
	for (size_t i = 0; i < probe_section_count(); i++) {
		char line[64];

		snprintf(line, sizeof(line), "\n%s\n", probe_section_name(i));
		CHECK_(strstr(r.out, line) || !strncmp(r.out, line + 1,
						       strlen(line + 1)),
		       "table lacks section '%s'", probe_section_name(i));
	}
	run_result_release(&r);

	/* needs no root: as nobody it still reports every section */
	if (geteuid() == 0) {
		RUN_AGENT(&r, 65534, "probe", "--json", "--steal-window", "0",
		    "--config", conf_path);
		CHECK_EQ_INT(r.status, 0);
		check_report(r.out, "probe --json as nobody");
		run_result_release(&r);
	}

	/* usage errors: exit 2 and a message naming the problem */
	RUN_AGENT(&r, -1, "probe", "--bogus");
	CHECK_EQ_INT(r.status, 2);
	CHECK(strstr(r.err, "unknown option '--bogus'") != NULL);
	run_result_release(&r);
	RUN_AGENT(&r, -1, "frobnicate");
	CHECK_EQ_INT(r.status, 2);
	CHECK(strstr(r.err, "unknown command 'frobnicate'") != NULL);
	run_result_release(&r);
	RUN_AGENT(&r, -1, "probe", "--root");
	CHECK_EQ_INT(r.status, 2);
	CHECK(strstr(r.err, "option '--root' needs a value") != NULL);
	run_result_release(&r);
	RUN_AGENT(&r, -1, "probe", "--steal-window", "soon", "--config", conf_path);
	CHECK_EQ_INT(r.status, 2);
	CHECK(strstr(r.err, "steal_window_ms: 'soon' is not an integer") != NULL);
	run_result_release(&r);
	RUN_AGENT(&r, -1, "probe", "--steal-window", "600000", "--config", conf_path);
	CHECK_EQ_INT(r.status, 2);
	CHECK(strstr(r.err, "out of range") != NULL);
	run_result_release(&r);

	/* config errors name the file, the line and the key */
	RUN_AGENT(&r, -1, "probe", "--config", "/nonexistent/agent.conf");
	CHECK(r.status != 0);
	CHECK(strstr(r.err, "cannot read config '/nonexistent/agent.conf'") != NULL);
	run_result_release(&r);
	/* what is not a config file is refused at once, named (issue 38:
	 * -c /dev/zero read for ever, -c DIR was an empty config) */
	RUN_AGENT(&r, -1, "probe", "-c", "/dev/zero");
	CHECK_EQ_INT(r.status, 2);
	CHECK(strstr(r.err, "/dev/zero: not a regular file but a character device") != NULL);
	run_result_release(&r);
	RUN_AGENT(&r, -1, "probe", "-c", "/tmp");
	CHECK_EQ_INT(r.status, 2);
	CHECK(strstr(r.err, "/tmp: not a regular file but a directory") != NULL);
	run_result_release(&r);
	write_conf("[agent]\nprovider = aws\nprovider = gcp\n");
	RUN_AGENT(&r, -1, "probe", "--config", conf_path);
	CHECK_EQ_INT(r.status, 2);
	CHECK(strstr(r.err, ":3: ") != NULL && strstr(r.err, "provider") != NULL);
	run_result_release(&r);
	write_conf("[agent]\nprovider = aws\n\nsteal_windw_ms = 5\n");
	RUN_AGENT(&r, -1, "probe", "--config", conf_path);
	CHECK(r.status != 0);
	CHECK(strstr(r.err, ":4: unknown key 'steal_windw_ms' in section [agent]") != NULL);
	CHECK(strstr(r.err, conf_path) != NULL);
	CHECK_EQ_STR(r.out, "");
	run_result_release(&r);
	write_conf("[agent]\nsteal_window_ms = -5\n");
	RUN_AGENT(&r, -1, "probe", "--config", conf_path);
	CHECK(r.status != 0);
	CHECK(strstr(r.err, ":2: agent.steal_window_ms: -5 is out of range") != NULL);
	run_result_release(&r);

	/* a root that does not exist is a real failure */
	write_conf("");
	RUN_AGENT(&r, -1, "probe", "--root", "/nonexistent-root", "--config",
	    conf_path);
	CHECK_EQ_INT(r.status, 1);
	CHECK(strstr(r.err, "cannot probe below '/nonexistent-root'") != NULL);
	run_result_release(&r);

	/* labels: a flag beats the config, the config beats DMI */
	write_conf("[agent]\nprovider = from-config\ninstance_type = c6.xlarge\n"
		   "steal_window_ms = 0\n");
	RUN_AGENT(&r, -1, "probe", "--json", "--config", conf_path, "--provider",
	    "from-flag", "--region", "eu-1");
	CHECK_EQ_INT(r.status, 0);
	j = json_tokener_parse(r.out);
	CHECK(j != NULL);
	CHECK_EQ_STR(jstr(j, "labels.provider.value"), "from-flag");
	CHECK_EQ_STR(jstr(j, "labels.provider.source"), "flag");
	CHECK_EQ_STR(jstr(j, "labels.instance_type.value"), "c6.xlarge");
	CHECK_EQ_STR(jstr(j, "labels.instance_type.source"), "config");
	CHECK_EQ_STR(jstr(j, "labels.region.value"), "eu-1");
	CHECK_EQ_STR(jstr(j, "labels.region.source"), "flag");
	json_object_put(j);
	run_result_release(&r);

	/* --root reads a fixture tree */
	RUN_AGENT(&r, -1, "probe", "--json", "--config", conf_path, "--root",
	    (char *)fixture_path("kvm-guest"));
	CHECK_EQ_INT(r.status, 0);
	j = json_tokener_parse(r.out);
	CHECK_EQ_STR(jstr(j, "thp.enabled.selected"), "madvise");
	CHECK_EQ_STR(jstr(j, "kernel.release"), "6.1.0-18-amd64");
	CHECK_EQ_STR(jstr(j, "meta.root"), fixture_path("kvm-guest"));
	json_object_put(j);
	run_result_release(&r);

	/* --help and --version succeed on stdout */
	RUN_AGENT(&r, -1, "--help");
	CHECK_EQ_INT(r.status, 0);
	CHECK(strstr(r.out, "usage: fleetbench-agent") != NULL);
	run_result_release(&r);
	RUN_AGENT(&r, -1, "--version");
	CHECK_EQ_INT(r.status, 0);
	CHECK(strstr(r.out, FLEETBENCH_VERSION) != NULL);
	run_result_release(&r);

	write_conf("");
	test_show();
	test_if_kernel_changed();

	unlink(conf_path);
	return check_summary();
}
