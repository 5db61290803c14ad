/* SPDX-License-Identifier: MIT */
/* fleetbench-agent: the command line of the per-host agent. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "bench.h"
#include "cleanup.h"
#include "cli.h"
#include "codec.h"
#include "config.h"
#include "link.h"
#include "log.h"
#include "output.h"
#include "pbjson.h"
#include "probe.h"
#include "report.h"
#include "send.h"
#include "spool.h"

#define DEFAULT_CONFIG "/etc/fleetbench/agent.conf"
#define DEFAULT_KEY_DIR "/etc/fleetbench"
#define MAX_ENDPOINTS 16
/*
 * What the bench part of a report may add to the probe part, for the room
 * check before benchmarking: a whole quick run adds about 13 KiB (17
 * variants), more repeats a little more.
 */
#define BENCH_ALLOWANCE (32 << 10)

/* Exit statuses (--help, docs/agent.md). */
enum {
	ST_OK = 0,
	ST_FAILURE = 1,
	ST_USAGE = 2,
	ST_UNDELIVERED = 3, /* spooled, not delivered yet: `send` later */
	ST_BENCH_FAILED = 4, /* done, but one or more benchmarks failed */
	ST_INTERRUPTED = 130,
};

struct agent_config {
	char *provider;
	char *instance_type;
	char *region;
	char *work_dir;
	long long steal_window_ms;
	char *spool_dir;
	uint64_t spool_limit;
	/* [collector] */
	char *endpoints;
	char *server_public_key;
	char *agent_key;
	long long send_timeout_ms;
	long long retries;
	long long backoff_ms;
	long long backoff_max_ms;
	bool insecure;
	/* [bench]: sizes left 0 are taken from the profile */
	struct bench_params bench;
};

#define A(field) offsetof(struct agent_config, field)
#define B(field) offsetof(struct agent_config, bench.field)
#define GiB (1LL << 30)

static const struct config_key agent_keys[] = {
	{ "agent", "provider", CONFIG_STR, A(provider), NULL, 0, 0,
	  "provider label (else inferred from DMI)" },
	{ "agent", "instance_type", CONFIG_STR, A(instance_type), NULL, 0, 0,
	  "instance type label (else inferred from DMI where it tells)" },
	{ "agent", "region", CONFIG_STR, A(region), NULL, 0, 0,
	  "region label" },
	{ "agent", "work_dir", CONFIG_STR, A(work_dir), "/var/tmp", 0, 0,
	  "work directory: its filesystem is probed, benchmark files go there" },
	{ "agent", "steal_window_ms", CONFIG_INT, A(steal_window_ms), "1000", 0,
	  60000, "CPU steal sampling window of the probe in ms (0 skips it)" },
	{ "agent", "spool_dir", CONFIG_STR, A(spool_dir),
	  "/var/lib/fleetbench/spool", 0, 0,
	  "reports wait here until the collector has stored them" },
	{ "agent", "spool_limit", CONFIG_SIZE, A(spool_limit), "256M", 0, 0,
	  "bytes the spool may hold (0: no limit)" },
	{ "collector", "endpoints", CONFIG_STR, A(endpoints), NULL, 0, 0,
	  "collector endpoints, comma-separated tcp://HOST:PORT, tried in order" },
	{ "collector", "server_public_key", CONFIG_STR, A(server_public_key),
	  NULL, 0, 0, "the collector's public key file (NAME.pub)" },
	{ "collector", "agent_key", CONFIG_STR, A(agent_key),
	  DEFAULT_KEY_DIR "/agent.key", 0, 0,
	  "this agent's secret key file (mode 0600; NAME.pub beside it)" },
	{ "collector", "send_timeout_ms", CONFIG_INT, A(send_timeout_ms), "5000",
	  10, 3600000, "wait this long for an Ack before reconnecting" },
	{ "collector", "retries", CONFIG_INT, A(retries), "3", 0, 100,
	  "reconnects to one endpoint before failing over to the next" },
	{ "collector", "backoff_ms", CONFIG_INT, A(backoff_ms), "500", 0,
	  3600000, "delay before the first reconnect, doubling after" },
	{ "collector", "backoff_max_ms", CONFIG_INT, A(backoff_max_ms), "30000",
	  0, 3600000, "longest delay between reconnects" },
	{ "collector", "insecure", CONFIG_BOOL, A(insecure), "false", 0, 0,
	  "send in plaintext, without CURVE (testing only)" },
	{ "bench", "profile", CONFIG_STR, B(profile), "standard", 0, 0,
	  "quick (<= 30 s), standard (<= 3 min) or full" },
	{ "bench", "repeats", CONFIG_INT, B(repeats), NULL, 1, 1000,
	  "repeats of every variant" },
	{ "bench", "chase_bytes", CONFIG_SIZE, B(chase_bytes), NULL, 1 << 20,
	  256 * GiB, "thp_chase buffer size" },
	{ "bench", "chase_accesses", CONFIG_INT, B(chase_accesses), NULL, 1000,
	  100000000000LL, "thp_chase dependent loads per repeat" },
	{ "bench", "fault_bytes", CONFIG_SIZE, B(fault_bytes), NULL, 4 << 20,
	  256 * GiB, "thp_fault region size" },
	{ "bench", "file_bytes", CONFIG_SIZE, B(file_bytes), NULL, 4 << 20,
	  16384 * GiB, "randread file size (written in full first)" },
	{ "bench", "io_ms", CONFIG_INT, B(io_ms), NULL, 10, 3600000,
	  "randread time per engine per repeat in ms" },
	{ "bench", "iodepth", CONFIG_INT, B(iodepth), NULL, 1, 4096,
	  "io_uring and libaio queue depth" },
	{ "bench", "seq_bytes", CONFIG_SIZE, B(seq_bytes), NULL, 1 << 20,
	  16384 * GiB, "seqwrite bytes per engine per repeat" },
	{ "bench", "seq_block", CONFIG_SIZE, B(seq_block), NULL, 4096,
	  64 << 20, "seqwrite block size" },
	{ "bench", "fs_increments", CONFIG_INT, B(fs_increments), NULL, 1000,
	  100000000000LL, "false_sharing increments per thread" },
	{ "bench", "steal_threshold_pct", CONFIG_INT, B(steal_threshold_pct),
	  "5", 0, 100, "a repeat with more CPU steal is flagged noisy" },
	{ "bench", "seed", CONFIG_INT, B(seed), NULL, 1, INT64_MAX,
	  "PRNG seed (default: from the clock, reported)" },
	{ "bench", "reserve_hugetlb", CONFIG_INT, B(reserve_hugetlb), "0", 0,
	  1 << 24, "2 MiB pages to reserve for the hugetlb variants (root; restored after)" },
	/* the per-profile defaults and why: bench.c's profiles table */
	{ "bench", "timeout_s", CONFIG_INT, B(timeout_s), NULL, 1, 604800,
	  "time limit of one benchmark in s, then it is killed and reported failed" },
	{ "bench", "randread_file", CONFIG_STR, B(randread_file), NULL, 0, 0,
	  "read this existing file instead of writing one (kept)" },
};

/* Flags that set config keys, applied after the file so they win. */
static const struct cli_flag flag_keys[] = {
	{ "provider", "agent", "provider", false },
	{ "instance-type", "agent", "instance_type", false },
	{ "region", "agent", "region", false },
	{ "dir", "agent", "work_dir", false },
	{ "steal-window", "agent", "steal_window_ms", false },
	{ "profile", "bench", "profile", false },
	{ "repeats", "bench", "repeats", false },
	{ "chase-bytes", "bench", "chase_bytes", false },
	{ "chase-accesses", "bench", "chase_accesses", false },
	{ "fault-bytes", "bench", "fault_bytes", false },
	{ "file-bytes", "bench", "file_bytes", false },
	{ "io-ms", "bench", "io_ms", false },
	{ "iodepth", "bench", "iodepth", false },
	{ "seq-bytes", "bench", "seq_bytes", false },
	{ "seq-block", "bench", "seq_block", false },
	{ "fs-increments", "bench", "fs_increments", false },
	{ "steal-threshold", "bench", "steal_threshold_pct", false },
	{ "seed", "bench", "seed", false },
	{ "reserve-hugetlb", "bench", "reserve_hugetlb", false },
	{ "bench-timeout", "bench", "timeout_s", false },
	{ "randread-file", "bench", "randread_file", false },
	{ "spool-dir", "agent", "spool_dir", false },
	{ "spool-limit", "agent", "spool_limit", false },
	{ "endpoint", "collector", "endpoints", true }, /* repeats: joined */
	{ "server-key", "collector", "server_public_key", false },
	{ "agent-key", "collector", "agent_key", false },
	{ "send-timeout", "collector", "send_timeout_ms", false },
	{ "retries", "collector", "retries", false },
	{ "backoff", "collector", "backoff_ms", false },
	{ "backoff-max", "collector", "backoff_max_ms", false },
	{ "insecure", "collector", "insecure", false }, /* a switch: sets true */
};

enum {
	OPT_ROOT = 0x100,
	OPT_JSON,
	OPT_ONLY,
	OPT_NAME,
	OPT_NO_SEND,
};

static const char *arg_config;
static const char *arg_root = "/";
static const char *arg_only;
static const char *arg_name = "agent";
static bool arg_json;
static bool arg_no_send;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fleetbench-agent COMMAND [OPTIONS]\n"
		"\n"
		"commands:\n"
		"  probe    report what this host's kernel and hypervisor allow (docs/probe.md)\n"
		"  bench    run the benchmark suite (docs/bench.md)\n"
		"  run      probe and bench, in one report; with a collector configured (or\n"
		"           --no-send) the report is spooled, then the spool is sent\n"
		"  send     send the spooled reports to the collector (docs/agent.md)\n"
		"  spool    list the spooled reports and the rejected and quarantined counts\n"
		"  keygen   write this agent's CURVE keypair: DIR/NAME.key (0600), DIR/NAME.pub\n"
		"  show FILE  print a spooled (or rejected, quarantined, bare packed) report\n"
		"           as JSON, every field of the wire Report (docs/wire.md)\n"
		"\n"
		"options:\n"
		"  -c, --config FILE        agent config (default " DEFAULT_CONFIG
		" if present)\n"
		"      --json               print JSON instead of a table\n"
		"      --root DIR           probe: read kernel files below DIR (default /)\n"
		"      --provider NAME      provider label (overrides config and DMI)\n"
		"      --instance-type NAME instance type label\n"
		"      --region NAME        region label\n"
		"      --dir PATH           work directory (default /var/tmp);\n"
		"                           keygen: where the keys go (default " DEFAULT_KEY_DIR ")\n"
		"      --steal-window MS    probe's CPU steal window, 0 skips (default 1000)\n"
		"  bench and run:\n"
		"      --profile NAME       quick (<= 30 s), standard (<= 3 min, default), full\n"
		"      --only NAME[,NAME]   run only these benchmarks: thp_chase, thp_fault,\n"
		"                           randread, seqwrite, false_sharing\n"
		"      --repeats N          repeats of every variant\n"
		"      --chase-bytes SIZE   --chase-accesses N   --fault-bytes SIZE\n"
		"      --file-bytes SIZE    --io-ms MS           --iodepth N\n"
		"      --seq-bytes SIZE     --seq-block SIZE     --fs-increments N\n"
		"      --steal-threshold PCT  flag repeats with more steal as noisy (default 5)\n"
		"      --seed N             PRNG seed (default: from the clock, reported)\n"
		"      --reserve-hugetlb N  reserve N 2 MiB pages for the hugetlb variants\n"
		"                           (root only; the pool is restored afterwards)\n"
		"      --randread-file PATH read this existing file instead of writing one\n"
		"      --bench-timeout S    kill a benchmark running longer, report it failed\n"
		"                           (default by profile: 120, 600, 1800)\n"
		"  run, send and spool:\n"
		"      --no-send            run: spool the report, do not send it\n"
		"      --spool-dir DIR      spool directory (default /var/lib/fleetbench/spool)\n"
		"      --spool-limit SIZE   bytes the spool may hold, 0: no limit (default 256M)\n"
		"      --endpoint URL[,URL] collector tcp://HOST:PORT; repeat or list several\n"
		"                           to fail over between them\n"
		"      --server-key FILE    the collector's public key (NAME.pub)\n"
		"      --agent-key FILE     this agent's secret key (default " DEFAULT_KEY_DIR "/agent.key)\n"
		"      --send-timeout MS    wait for an Ack this long, then reconnect (default 5000)\n"
		"      --retries N          reconnects per endpoint before failing over (default 3)\n"
		"      --backoff MS         first reconnect delay, doubling, with jitter (default 500)\n"
		"      --backoff-max MS     longest reconnect delay (default 30000)\n"
		"      --insecure           plaintext, no CURVE: for tests only\n"
		"  keygen:\n"
		"      --name NAME          key file name (default agent)\n"
		"  -h, --help               show this help\n"
		"  -V, --version            show the version\n"
		"\n"
		"SIZE takes K, M, G suffixes (powers of 1024). The options that set a value\n"
		"(but --config, --root, --only and --name) are also keys of the config file:\n"
		"[agent] provider, instance_type, region, work_dir, steal_window_ms,\n"
		"spool_dir, spool_limit; [collector] endpoints, server_public_key,\n"
		"agent_key, send_timeout_ms, retries, backoff_ms, backoff_max_ms, insecure;\n"
		"[bench] the rest, with '-' written '_' (--bench-timeout: timeout_s).\n"
		"\n"
		"exit status: 0 done (run, send: every report of the pass delivered);\n"
		"1 failure (also: a report was rejected by the collector or found damaged\n"
		"and quarantined); 2 bad usage or config; 3 reports stay spooled because no\n"
		"collector took them (unreachable or RETRY_LATER): `send` delivers them\n"
		"later; 4 bench, run: done (printed, delivered), but a benchmark failed\n"
		"(crashed, timed out, or measured a figure out of bounds: its results\n"
		"say \"failed\"); 130 interrupted.\n");
}

static enum label_source label_source(const char *key, const char *value,
				      const struct cli *cli)
{
	if (!value)
		return LABEL_NONE;
	for (size_t i = 0; i < cli->n_values; i++)
		if (!strcmp(cli->values[i].flag->key, key))
			return LABEL_FLAG;
	return LABEL_CONFIG;
}

static int do_probe(struct agent_config *cfg, const struct cli *cli,
		    struct json_object **ret)
{
	struct probe_opts opts = {
		.root = arg_root,
		.work_dir = cfg->work_dir,
		.provider = { cfg->provider,
			      label_source("provider", cfg->provider, cli) },
		.instance_type = { cfg->instance_type,
				   label_source("instance_type",
						cfg->instance_type, cli) },
		.region = { cfg->region,
			    label_source("region", cfg->region, cli) },
		.steal_window_ms = (unsigned int)cfg->steal_window_ms,
	};
	int r = probe_run(&opts, ret);

	if (r < 0)
		log_error("cannot probe below '%s': %s", arg_root,
			  strerror(-r));
	return r;
}

/* Sizes not set by config or flag come from the profile. */
static int bench_resolve(struct agent_config *cfg)
{
	struct bench_params prof = { 0 };
	struct bench_params *b = &cfg->bench;

	if (bench_params_profile(&prof, b->profile) < 0) {
		log_error("unknown profile '%s' (quick, standard or full)",
			  b->profile);
		return -EINVAL;
	}
#define FILL(f)               \
	if (!b->f)            \
		b->f = prof.f
	FILL(repeats);
	FILL(chase_bytes);
	FILL(chase_accesses);
	FILL(fault_bytes);
	FILL(file_bytes);
	FILL(io_ms);
	FILL(iodepth);
	FILL(seq_bytes);
	FILL(seq_block);
	FILL(fs_increments);
	FILL(timeout_s);
#undef FILL
	if (!b->seed) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		b->seed = (ts.tv_sec * 1000003LL) ^ ts.tv_nsec ^ getpid();
		if (b->seed < 0)
			b->seed = -b->seed;
		b->seed |= 1;
	}
	if (b->seq_block % 4096) {
		log_error("seq_block %llu is not a multiple of 4096 (O_DIRECT)",
			  (unsigned long long)b->seq_block);
		return -EINVAL;
	}
	if (b->reserve_hugetlb && geteuid() != 0) {
		log_error("--reserve-hugetlb changes the hugetlb pool and needs root");
		return -EPERM;
	}
	b->dir = cfg->work_dir;
	return 0;
}

/* One line per failed benchmark variant: the journal of a timer's run. */
static void log_failures(const Fleetbench__BenchRun *bench)
{
	for (size_t i = 0; i < bench->n_benchmarks; i++) {
		const Fleetbench__Benchmark *b = bench->benchmarks[i];

		if (b->failure)
			log_error("benchmark %s/%s failed: %s", b->benchmark,
				  b->variant, b->failure);
	}
}

static int do_bench(struct agent_config *cfg, Fleetbench__BenchRun **ret)
{
	char err[512] = "";
	int r;

	r = bench_resolve(cfg);
	if (r < 0)
		return r;
	bench_install_signals();
	r = bench_suite_run(&cfg->bench, arg_only, ret, err, sizeof(err));
	if (r == -EINTR)
		log_error("interrupted: the benchmarks stopped and their files are removed");
	else if (r < 0)
		log_error("%s", err[0] ? err : strerror(-r));
	else
		log_failures(*ret);
	return r;
}

/*
 * Prints the probe report (NULL: none) and the bench run (NULL: none): as
 * one JSON object with --json, the bench run under "bench" (by pbjson, or
 * alone when there is no probe), else as tables. Exit status.
 */
static int print_report(struct json_object *probe,
			const Fleetbench__BenchRun *bench,
			const struct bench_params *params)
{
	struct json_object *o = NULL, *b = NULL;

	if (arg_json && bench) {
		b = pbjson_from_message(&bench->base);
		if (!b) {
			log_error("cannot print the report: %s",
				  strerror(errno));
			return ST_FAILURE;
		}
	}
	if (arg_json && probe) {
		/* the probe as the collector stores it: its typed message,
		 * walked by pbjson */
		char err[REPORT_ERR_LEN];
		Fleetbench__Probe *typed;
		int r = report_probe(probe, &typed, err);

		if (r < 0) {
			log_error("cannot print the probe report: %s", err);
			json_object_put(b);
			return ST_FAILURE;
		}
		o = pbjson_from_message(&typed->base);
		fleetbench__probe__free_unpacked(typed, NULL);
		if (!o) {
			log_error("cannot print the probe report: %s",
				  strerror(errno));
			json_object_put(b);
			return ST_FAILURE;
		}
	}
	if (arg_json) {
		if (!o)
			o = TAKE_PTR(b);
		if (b)
			json_object_object_add(o, "bench", TAKE_PTR(b));
		printf("%s\n",
		       json_object_to_json_string_ext(
			       o, JSON_C_TO_STRING_PRETTY |
					  JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else {
		if (probe)
			output_table(stdout, probe);
		if (bench)
			output_bench_table(stdout, bench, params);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		log_error("cannot write the report: %s", strerror(errno));
		return 1;
	}
	return 0;
}

static int64_t realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the collector: endpoints and keys ---- */

struct collector {
	char *list; /* the endpoints text, split in place */
	const char *endpoints[MAX_ENDPOINTS];
	size_t n_endpoints;
	char server_public[LINK_KEY_LEN + 1];
	struct link_keypair keys;
};

static void collector_release(struct collector *c)
{
	free(c->list);
	explicit_bzero(&c->keys, sizeof(c->keys));
}

/* Splits "tcp://a:1, tcp://b:2" into c->endpoints. Exit status. */
static int collector_endpoints(const char *text, struct collector *c)
{
	char *save = NULL;

	c->list = strdup(text);
	if (!c->list) {
		log_error("out of memory");
		return ST_FAILURE;
	}
	for (char *t = strtok_r(c->list, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		char *end;

		t += strspn(t, " \t");
		end = t + strlen(t);
		while (end > t && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		if (!*t)
			continue;
		if (strncmp(t, "tcp://", 6) || !t[6]) {
			log_error("bad collector endpoint '%s': expected tcp://HOST:PORT",
				  t);
			return ST_USAGE;
		}
		if (c->n_endpoints == MAX_ENDPOINTS) {
			log_error("more than %d collector endpoints",
				  MAX_ENDPOINTS);
			return ST_USAGE;
		}
		c->endpoints[c->n_endpoints++] = t;
	}
	if (!c->n_endpoints) {
		log_error("no collector endpoint in '%s'", text);
		return ST_USAGE;
	}
	return ST_OK;
}

/* Reads what sending needs, before any work is done. Exit status. */
static int collector_setup(const struct agent_config *cfg, struct collector *c)
{
	int r;

	memset(c, 0, sizeof(*c));
	if (!cfg->endpoints || !*cfg->endpoints) {
		log_error("no collector configured: set [collector] endpoints or --endpoint");
		return ST_USAGE;
	}
	r = collector_endpoints(cfg->endpoints, c);
	if (r != ST_OK)
		return r;
	if (cfg->backoff_max_ms < cfg->backoff_ms) {
		log_error("backoff_max_ms %lld is below backoff_ms %lld",
			  cfg->backoff_max_ms, cfg->backoff_ms);
		return ST_USAGE;
	}
	if (cfg->insecure) {
		log_warn("insecure: sending in plaintext, unauthenticated and unencrypted");
		return ST_OK;
	}
	if (!cfg->server_public_key || !*cfg->server_public_key) {
		log_error("no collector key: set [collector] server_public_key or --server-key (or --insecure for plaintext)");
		return ST_USAGE;
	}
	r = link_read_public(cfg->server_public_key, c->server_public);
	if (r < 0) {
		log_error("cannot read the collector's public key '%s': %s",
			  cfg->server_public_key, strerror(-r));
		return ST_FAILURE;
	}
	r = link_read_secret(cfg->agent_key, &c->keys);
	if (r == -EPERM) {
		log_error("agent key '%s' is readable by group or others: chmod 600 it",
			  cfg->agent_key);
		return ST_FAILURE;
	}
	if (r < 0) {
		log_error("cannot read the agent key '%s': %s%s", cfg->agent_key,
			  strerror(-r),
			  r == -ENOENT ? " (make one with fleetbench-agent keygen)" :
					 "");
		return ST_FAILURE;
	}
	return ST_OK;
}

static struct spool *spool_open_logged(const struct agent_config *cfg)
{
	char err[SPOOL_ERR_LEN] = "";
	struct spool *s = spool_open(cfg->spool_dir, cfg->spool_limit, err);

	if (!s)
		log_error("cannot open spool '%s': %s", cfg->spool_dir,
			  err[0] ? err : strerror(errno));
	return s;
}

/* ---- send ---- */

static void send_event_log(void *data, const struct send_event_info *ev)
{
	const struct agent_config *cfg = data;

	switch (ev->event) {
	case SEND_COMMITTED:
		log_info("report %s stored by %s", ev->run_id, ev->endpoint);
		break;
	case SEND_DUPLICATE:
		log_info("report %s was already stored (duplicate)", ev->run_id);
		break;
	case SEND_REJECTED:
		log_error("report %s rejected by %s: %s; moved to %s/rejected/",
			  ev->run_id, ev->endpoint, ev->detail, cfg->spool_dir);
		break;
	case SEND_RETRY_LATER:
		log_warn("%s asks to retry later%s%s: report %s stays in the spool",
			 ev->endpoint, ev->detail ? ": " : "",
			 ev->detail ? ev->detail : "", ev->run_id);
		break;
	case SEND_QUARANTINED:
		log_error("%s", ev->detail);
		break;
	case SEND_TIMEOUT:
		log_warn("no answer from %s within %lld ms (attempt %u)",
			 ev->endpoint, cfg->send_timeout_ms, ev->attempt);
		break;
	case SEND_BACKOFF:
		log_info("reconnecting to %s in %ld ms", ev->endpoint,
			 ev->delay_ms);
		break;
	case SEND_FAILOVER:
		log_warn("failing over to %s", ev->endpoint);
		break;
	case SEND_UNREACHABLE:
		log_error("no collector answered: report %s and the ones after it stay in the spool",
			  ev->run_id);
		break;
	case SEND_ACK_IGNORED:
		log_warn("ignored a reply from %s: %s", ev->endpoint,
			 ev->detail);
		break;
	case SEND_NO_OFFERS:
		log_info("%s takes no offers (a collector older than this agent%s%s): sending reports to it directly",
			 ev->endpoint, ev->detail ? ": " : "",
			 ev->detail ? ev->detail : "");
		break;
	}
}

/* The exit status a send pass earns (--help). */
static int send_status(const struct send_summary *sum)
{
	if (sum->rejected || sum->quarantined)
		return ST_FAILURE;
	if (sum->remaining)
		return ST_UNDELIVERED;
	return ST_OK;
}

static void print_summary(FILE *f, const struct send_summary *sum)
{
	const struct {
		const char *name;
		unsigned n;
	} counts[] = {
		{ "sent", sum->sent },
		{ "committed", sum->committed },
		{ "duplicate", sum->duplicate },
		{ "rejected", sum->rejected },
		{ "quarantined", sum->quarantined },
		{ "remaining", sum->remaining },
	};

	if (arg_json && f == stdout) {
		struct json_object *o = json_object_new_object();

		for (size_t i = 0; i < ARRAY_SIZE(counts); i++)
			json_object_object_add(o, counts[i].name,
					       json_object_new_int64(counts[i].n));
		json_object_object_add(o, "retry_later",
				       json_object_new_boolean(sum->retry_later));
		json_object_object_add(o, "unreachable",
				       json_object_new_boolean(sum->unreachable));
		fprintf(f, "%s\n",
			json_object_to_json_string_ext(o,
						       JSON_C_TO_STRING_PRETTY));
		json_object_put(o);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(counts); i++)
		fprintf(f, "%s%s %u", i ? ", " : "", counts[i].name,
			counts[i].n);
	fprintf(f, "%s\n",
		sum->retry_later ? " (collector asked to retry later)" :
		sum->unreachable ? " (collector unreachable)" :
				   "");
}

/* Flushes the spool; the summary goes to out. Exit status. */
static int flush_spool(const struct agent_config *cfg, struct spool *s,
		       const struct collector *c, FILE *out)
{
	const struct send_opts o = {
		.endpoints = c->endpoints,
		.n_endpoints = c->n_endpoints,
		.server_public = cfg->insecure ? NULL : c->server_public,
		.keys = cfg->insecure ? NULL : &c->keys,
		.timeout_ms = (int)cfg->send_timeout_ms,
		.retries = (int)cfg->retries,
		.backoff_ms = (int)cfg->backoff_ms,
		.backoff_max_ms = (int)cfg->backoff_max_ms,
		.interrupted = bench_interrupted,
		.event = send_event_log,
		.event_data = (void *)cfg,
	};
	struct send_summary sum;
	char err[SEND_ERR_LEN] = "";
	void *zctx = zmq_ctx_new();
	int r;

	if (!zctx) {
		log_error("cannot create a ZeroMQ context: %s", strerror(errno));
		return ST_FAILURE;
	}
	r = send_flush(zctx, s, &o, &sum, err);
	zmq_ctx_term(zctx);
	if (r == -EINTR) {
		log_error("interrupted: unsent reports stay in the spool");
		print_summary(out, &sum);
		return ST_INTERRUPTED;
	}
	if (r < 0) {
		log_error("cannot send the spool '%s': %s", cfg->spool_dir,
			  err[0] ? err : strerror(-r));
		print_summary(out, &sum);
		return ST_FAILURE;
	}
	print_summary(out, &sum);
	return send_status(&sum);
}

static int cmd_send(const struct agent_config *cfg)
{
	struct collector c;
	struct spool *s;
	int ret = collector_setup(cfg, &c);

	if (ret != ST_OK)
		goto out;
	s = spool_open_logged(cfg);
	if (!s) {
		ret = ST_FAILURE;
		goto out;
	}
	bench_install_signals();
	ret = flush_spool(cfg, s, &c, stdout);
	spool_close(s);
out:
	collector_release(&c);
	return ret;
}

/* ---- spool ---- */

static void format_age(int64_t s, char *buf, size_t size)
{
	if (s < 0)
		s = 0;
	if (s < 60)
		snprintf(buf, size, "%llds", (long long)s);
	else if (s < 3600)
		snprintf(buf, size, "%lldm %llds", (long long)s / 60,
			 (long long)s % 60);
	else if (s < 86400)
		snprintf(buf, size, "%lldh %lldm", (long long)s / 3600,
			 (long long)s % 3600 / 60);
	else
		snprintf(buf, size, "%lldd %lldh", (long long)s / 86400,
			 (long long)s % 86400 / 3600);
}

static int cmd_spool(const struct agent_config *cfg)
{
	_cleanup_free_ struct spool_entry *e = NULL;
	unsigned rejected = 0, quarantined = 0;
	struct json_object *o, *list;
	struct spool *s = spool_open_logged(cfg);
	int64_t now = realtime_ms() / 1000;
	int n, r;

	if (!s)
		return ST_FAILURE;
	n = spool_list(s, &e);
	r = n < 0 ? n : spool_counts(s, &rejected, &quarantined);
	if (r < 0) {
		log_error("cannot list spool '%s': %s", cfg->spool_dir,
			  strerror(-r));
		spool_close(s);
		return ST_FAILURE;
	}
	if (!arg_json) {
		printf("spool %s: %d report%s, %" PRIu64 " bytes", cfg->spool_dir,
		       n, n == 1 ? "" : "s", spool_bytes(s));
		if (cfg->spool_limit)
			printf(" of %" PRIu64, cfg->spool_limit);
		printf("\n");
		if (n)
			printf("%-36s %10s  %s\n", "RUN ID", "BYTES", "AGE");
		for (int i = 0; i < n; i++) {
			char age[32];

			format_age(now - e[i].mtime, age, sizeof(age));
			printf("%-36s %10" PRIu64 "  %s\n", e[i].run_id,
			       e[i].size, age);
		}
		printf("rejected/: %u, quarantine/: %u\n", rejected,
		       quarantined);
	} else {
		o = json_object_new_object();
		list = json_object_new_array();
		json_object_object_add(o, "spool_dir",
				       json_object_new_string(cfg->spool_dir));
		json_object_object_add(o, "bytes",
				       json_object_new_int64(
					       (int64_t)spool_bytes(s)));
		json_object_object_add(o, "limit",
				       json_object_new_int64(
					       (int64_t)cfg->spool_limit));
		for (int i = 0; i < n; i++) {
			struct json_object *x = json_object_new_object();

			json_object_object_add(
				x, "run_id", json_object_new_string(e[i].run_id));
			json_object_object_add(
				x, "bytes",
				json_object_new_int64((int64_t)e[i].size));
			json_object_object_add(
				x, "age_s", json_object_new_int64(now - e[i].mtime));
			json_object_array_add(list, x);
		}
		json_object_object_add(o, "reports", list);
		json_object_object_add(o, "rejected",
				       json_object_new_int(rejected));
		json_object_object_add(o, "quarantined",
				       json_object_new_int(quarantined));
		printf("%s\n", json_object_to_json_string_ext(
				       o, JSON_C_TO_STRING_PRETTY |
						  JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	}
	spool_close(s);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		log_error("cannot write the listing: %s", strerror(errno));
		return ST_FAILURE;
	}
	return ST_OK;
}

/* ---- show ---- */

/*
 * Prints the report in path (a spool file of any spool directory, or a bare
 * packed report) as JSON, every field by pbjson. A report the collector
 * would refuse is printed too, for that is when one looks: the reason goes
 * to stderr and the exit status is 1.
 */
static int cmd_show(const char *path)
{
	_cleanup_free_ uint8_t *buf = NULL;
	Fleetbench__Report *rep = NULL;
	char err[SPOOL_ERR_LEN > CODEC_ERR_LEN ? SPOOL_ERR_LEN : CODEC_ERR_LEN];
	struct json_object *o;
	size_t len = 0;
	int r = spool_read_file(path, &buf, &len, err);
	int ret = ST_OK;

	if (r < 0) {
		log_error("%s", err);
		return ST_FAILURE;
	}
	r = codec_unpack_report(buf, len, &rep, err);
	if (r < 0 && !rep) {
		log_error("cannot read the report in '%s': %s", path, err);
		return ST_FAILURE;
	}
	if (r < 0) {
		log_error("the report in '%s' would be rejected: %s", path, err);
		ret = ST_FAILURE;
	}
	o = pbjson_from_message(&rep->base);
	codec_free_report(rep);
	if (!o) {
		log_error("out of memory");
		return ST_FAILURE;
	}
	printf("%s\n", json_object_to_json_string_ext(
				o, JSON_C_TO_STRING_PRETTY |
					   JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		log_error("cannot write the report: %s", strerror(errno));
		return ST_FAILURE;
	}
	return ret;
}

/* ---- keygen ---- */

static int cmd_keygen(const char *dir)
{
	struct link_keypair kp;
	int r;

	if (!*arg_name || strchr(arg_name, '/')) {
		log_error("bad key name '%s': a file name without '/'",
			  arg_name);
		return ST_USAGE;
	}
	r = link_keygen(dir, arg_name, &kp);
	explicit_bzero(kp.secret_key, sizeof(kp.secret_key));
	if (r == -EEXIST) {
		log_error("a key '%s' already exists in '%s': not overwritten",
			  arg_name, dir);
		return ST_FAILURE;
	}
	if (r < 0) {
		log_error("cannot write a keypair in '%s': %s", dir,
			  strerror(-r));
		return ST_FAILURE;
	}
	printf("%s/%s.key  secret key (mode 0600): set [collector] agent_key to it\n"
	       "%s/%s.pub  public key %s: add it to the collector's allowlist\n",
	       dir, arg_name, dir, arg_name, kp.public_key);
	return ST_OK;
}

/* ---- probe, bench and run ---- */

/*
 * Builds, checks and packs the report; a report the collector would refuse
 * is refused here, before it takes spool space. Exit status.
 */
static int pack_report(struct json_object *probe,
		       const Fleetbench__BenchRun *bench,
		       int64_t started, int64_t finished, char run_id[37],
		       uint8_t **ret, size_t *ret_len)
{
	char err[REPORT_ERR_LEN > CODEC_ERR_LEN ? REPORT_ERR_LEN :
						  CODEC_ERR_LEN];
	Fleetbench__Report *rep = NULL;
	int r;

	r = report_build(probe, bench, started, finished, &rep, err);
	if (r < 0) {
		log_error("cannot make the report: %s", err);
		return ST_FAILURE;
	}
	r = codec_validate_report(rep, realtime_ms(), err);
	if (r < 0) {
		log_error("the report would be rejected: %s", err);
		report_free(rep);
		return ST_FAILURE;
	}
	r = codec_pack_report(rep, ret, ret_len);
	if (r < 0)
		log_error("cannot pack the report: %s",
			  r == -E2BIG ? "over the message size limit" :
					strerror(-r));
	else
		snprintf(run_id, 37, "%s", rep->run_id);
	report_free(rep);
	return r < 0 ? ST_FAILURE : ST_OK;
}

/*
 * Before benchmarking: the report's probe part must make a valid report, and
 * it and an allowance for the bench part must fit in the spool. Exit status.
 */
static int check_room(const struct agent_config *cfg, struct spool *s,
		      struct json_object *probe, int64_t started)
{
	_cleanup_free_ uint8_t *buf = NULL;
	char run_id[37];
	size_t len;
	uint64_t need, held = spool_bytes(s);
	int r = pack_report(probe, NULL, started, realtime_ms(), run_id, &buf,
			    &len);

	if (r != ST_OK)
		return r;
	need = 64 + len + BENCH_ALLOWANCE; /* docs/spool.md: 64-byte header */
	if (cfg->spool_limit && held + need > cfg->spool_limit) {
		log_error("spool '%s' has no room for this run: it holds %" PRIu64
			  " bytes, the report needs about %" PRIu64
			  ", the limit is %" PRIu64
			  " bytes; send the spool (fleetbench-agent send) or raise spool_limit",
			  cfg->spool_dir, held, need, cfg->spool_limit);
		return ST_FAILURE;
	}
	return ST_OK;
}

/* Writes the report into the spool: durably, before any send. */
static int spool_report(const struct agent_config *cfg, struct spool *s,
			struct json_object *probe,
			const Fleetbench__BenchRun *bench, int64_t started,
			int64_t finished)
{
	_cleanup_free_ uint8_t *buf = NULL;
	char err[SPOOL_ERR_LEN] = "", run_id[37];
	size_t len;
	int r = pack_report(probe, bench, started, finished, run_id, &buf,
			    &len);

	if (r != ST_OK)
		return r;
	r = spool_put(s, run_id, buf, len, err);
	if (r < 0) {
		log_error("cannot spool report %s in '%s': %s", run_id,
			  cfg->spool_dir, err[0] ? err : strerror(-r));
		return ST_FAILURE;
	}
	log_info("report %s spooled in %s (%zu bytes)", run_id,
		 cfg->spool_dir, len);
	return ST_OK;
}

static int bench_status(int r)
{
	return r == -EINTR ? ST_INTERRUPTED :
	       r == -EINVAL ? ST_USAGE :
			      ST_FAILURE;
}

static int cmd_run(const char *command, struct agent_config *cfg,
		   const struct cli *cli)
{
	struct json_object *report = NULL;
	Fleetbench__BenchRun *bench = NULL;
	/* a run spools when it has a collector to send to, or is told to */
	bool spooling = !strcmp(command, "run") &&
			(arg_no_send || (cfg->endpoints && *cfg->endpoints));
	struct collector c = { 0 };
	struct spool *s = NULL;
	int64_t started = realtime_ms();
	size_t failed = 0;
	int r, ret;

	if (!strcmp(command, "bench")) {
		r = do_bench(cfg, &bench);
		if (r < 0)
			return bench_status(r);
		ret = print_report(NULL, bench, &cfg->bench);
		if (ret == ST_OK && bench_report_failed(bench))
			ret = ST_BENCH_FAILED;
		bench_run_free(bench);
		return ret;
	}
	if (spooling && !arg_no_send) {
		ret = collector_setup(cfg, &c);
		if (ret != ST_OK)
			goto out;
	}
	if (spooling) {
		s = spool_open_logged(cfg);
		if (!s) {
			ret = ST_FAILURE;
			goto out;
		}
	}
	ret = ST_FAILURE;
	r = do_probe(cfg, cli, &report);
	if (r < 0)
		goto out;
	if (!strcmp(command, "run")) {
		if (spooling) {
			ret = check_room(cfg, s, report, started);
			if (ret != ST_OK)
				goto out;
		}
		r = do_bench(cfg, &bench);
		if (r < 0) {
			ret = bench_status(r);
			goto out;
		}
	}
	ret = ST_OK;
	failed = bench ? bench_report_failed(bench) : 0;
	if (spooling)
		ret = spool_report(cfg, s, report, bench, started,
				   realtime_ms());
	/* printed even when spooling failed: the results are not lost */
	r = print_report(report, bench, &cfg->bench);
	if (ret == ST_OK)
		ret = r;
	if (ret == ST_OK && spooling && !arg_no_send)
		ret = flush_spool(cfg, s, &c, stderr);
	/* 1 and 3 say more than a failed benchmark: they win */
	if (ret == ST_OK && failed)
		ret = ST_BENCH_FAILED;
out:
	bench_run_free(bench);
	json_object_put(report);
	spool_close(s);
	collector_release(&c);
	return ret;
}

static bool known_command(const char *command)
{
	static const char *const commands[] = { "probe", "bench", "run",
						"send",  "spool", "keygen" };

	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(command, commands[i]))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	static const struct option own_opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "root", required_argument, NULL, OPT_ROOT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "only", required_argument, NULL, OPT_ONLY },
		{ "name", required_argument, NULL, OPT_NAME },
		{ "no-send", no_argument, NULL, OPT_NO_SEND },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
	};
	struct agent_config cfg = { 0 };
	struct cli cli;
	const char *command;
	int c, ret = ST_USAGE;

	log_init("fleetbench-agent");
	if (argc < 2) {
		usage(stderr);
		return ST_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return ST_OK;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("fleetbench-agent %s\n", FLEETBENCH_VERSION);
		return ST_OK;
	}
	command = argv[1];
	if (!strcmp(command, "show")) {
		if (argc != 3 || argv[2][0] == '-') {
			log_error("usage: fleetbench-agent show FILE");
			return ST_USAGE;
		}
		return cmd_show(argv[2]);
	}
	if (!known_command(command)) {
		log_error("unknown command '%s' (see --help)", command);
		return ST_USAGE;
	}

	if (cli_init(&cli, own_opts, ARRAY_SIZE(own_opts), flag_keys,
		     ARRAY_SIZE(flag_keys), agent_keys,
		     ARRAY_SIZE(agent_keys)) < 0) {
		log_error("out of memory");
		ret = ST_FAILURE;
		goto out;
	}
	optind = 2;
	while ((c = cli_getopt(&cli, argc, argv, ":c:hV")) != -1) {
		switch (c) {
		case 'c':
			arg_config = optarg;
			break;
		case OPT_ROOT:
			arg_root = optarg;
			break;
		case OPT_JSON:
			arg_json = true;
			break;
		case OPT_ONLY:
			arg_only = optarg;
			break;
		case OPT_NAME:
			arg_name = optarg;
			break;
		case OPT_NO_SEND:
			arg_no_send = true;
			break;
		case 'h':
			usage(stdout);
			ret = ST_OK;
			goto out;
		case 'V':
			printf("fleetbench-agent %s\n", FLEETBENCH_VERSION);
			ret = ST_OK;
			goto out;
		case -ENOMEM:
			ret = ST_FAILURE;
			goto out;
		default: /* -EINVAL, logged */
			goto out;
		}
	}
	if (cli_load_config(&cli, arg_config, DEFAULT_CONFIG, &cfg) < 0)
		goto out;

	if (!strcmp(command, "send")) {
		ret = cmd_send(&cfg);
	} else if (!strcmp(command, "spool")) {
		ret = cmd_spool(&cfg);
	} else if (!strcmp(command, "keygen")) {
		const char *dir = cli_value(&cli, "dir");

		ret = cmd_keygen(dir ? dir : DEFAULT_KEY_DIR);
	} else {
		ret = cmd_run(command, &cfg, &cli);
	}
out:
	config_release(agent_keys, ARRAY_SIZE(agent_keys), &cfg);
	cli_release(&cli);
	return ret;
}
