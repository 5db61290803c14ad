/* SPDX-License-Identifier: MIT */
/* fleetbench-agent: the command line of the per-host agent. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cleanup.h"
#include "config.h"
#include "log.h"
#include "output.h"
#include "probe.h"

#define DEFAULT_CONFIG "/etc/fleetbench/agent.conf"

struct agent_config {
	char *provider;
	char *instance_type;
	char *region;
	char *work_dir;
	long long steal_window_ms;
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
	{ "bench", "randread_file", CONFIG_STR, B(randread_file), NULL, 0, 0,
	  "read this existing file instead of writing one (kept)" },
};

/* A flag that sets a config key, applied after the file so it wins. */
struct flag_key {
	const char *flag;
	const char *section;
	const char *key;
};

static const struct flag_key flag_keys[] = {
	{ "provider", "agent", "provider" },
	{ "instance-type", "agent", "instance_type" },
	{ "region", "agent", "region" },
	{ "dir", "agent", "work_dir" },
	{ "steal-window", "agent", "steal_window_ms" },
	{ "profile", "bench", "profile" },
	{ "repeats", "bench", "repeats" },
	{ "chase-bytes", "bench", "chase_bytes" },
	{ "chase-accesses", "bench", "chase_accesses" },
	{ "fault-bytes", "bench", "fault_bytes" },
	{ "file-bytes", "bench", "file_bytes" },
	{ "io-ms", "bench", "io_ms" },
	{ "iodepth", "bench", "iodepth" },
	{ "seq-bytes", "bench", "seq_bytes" },
	{ "seq-block", "bench", "seq_block" },
	{ "fs-increments", "bench", "fs_increments" },
	{ "steal-threshold", "bench", "steal_threshold_pct" },
	{ "seed", "bench", "seed" },
	{ "reserve-hugetlb", "bench", "reserve_hugetlb" },
	{ "randread-file", "bench", "randread_file" },
};

enum {
	OPT_ROOT = 0x100,
	OPT_JSON,
	OPT_ONLY,
	OPT_FLAG_KEY, /* + index into flag_keys */
};

struct flag_value {
	const struct flag_key *fk;
	const char *value;
};

static const char *arg_config;
static const char *arg_root = "/";
static const char *arg_only;
static bool arg_json;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fleetbench-agent COMMAND [OPTIONS]\n"
		"\n"
		"commands:\n"
		"  probe    report what this host's kernel and hypervisor allow (docs/probe.md)\n"
		"  bench    run the benchmark suite (docs/bench.md)\n"
		"  run      probe and bench, in one report\n"
		"\n"
		"options:\n"
		"  -c, --config FILE        agent config (default " DEFAULT_CONFIG
		" if present)\n"
		"      --json               print JSON instead of a table\n"
		"      --root DIR           probe: read kernel files below DIR (default /)\n"
		"      --provider NAME      provider label (overrides config and DMI)\n"
		"      --instance-type NAME instance type label\n"
		"      --region NAME        region label\n"
		"      --dir PATH           work directory (default /var/tmp)\n"
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
		"  -h, --help               show this help\n"
		"  -V, --version            show the version\n"
		"\n"
		"SIZE takes K, M, G suffixes (powers of 1024). Every option is also a key\n"
		"of the config file: [agent] provider, instance_type, region, work_dir,\n"
		"steal_window_ms; [bench] the rest, with '-' written '_'.\n");
}

static enum label_source label_source(const char *key, const char *value,
				      const struct flag_value *flags,
				      size_t nflags)
{
	if (!value)
		return LABEL_NONE;
	for (size_t i = 0; i < nflags; i++)
		if (!strcmp(flags[i].fk->key, key))
			return LABEL_FLAG;
	return LABEL_CONFIG;
}

static int do_probe(struct agent_config *cfg, const struct flag_value *flags,
		    size_t nflags, struct json_object **ret)
{
	struct probe_opts opts = {
		.root = arg_root,
		.work_dir = cfg->work_dir,
		.provider = { cfg->provider,
			      label_source("provider", cfg->provider, flags,
					   nflags) },
		.instance_type = { cfg->instance_type,
				   label_source("instance_type",
						cfg->instance_type, flags,
						nflags) },
		.region = { cfg->region,
			    label_source("region", cfg->region, flags,
					 nflags) },
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

static int do_bench(struct agent_config *cfg, struct json_object **ret)
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
	return r;
}

static int print_report(struct json_object *report, bool bench_only)
{
	if (arg_json)
		printf("%s\n",
		       json_object_to_json_string_ext(
			       report, JSON_C_TO_STRING_PRETTY |
					       JSON_C_TO_STRING_NOSLASHESCAPE));
	else if (bench_only)
		output_bench_table(stdout, report);
	else
		output_table(stdout, report);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		log_error("cannot write the report: %s", strerror(errno));
		return 1;
	}
	return 0;
}

static int cmd_run(const char *command, struct agent_config *cfg,
		   const struct flag_value *flags, size_t nflags)
{
	struct json_object *report = NULL, *bench = NULL;
	int r, ret;

	if (!strcmp(command, "bench")) {
		r = do_bench(cfg, &bench);
		if (r < 0)
			return r == -EINTR ? 130 : r == -EINVAL ? 2 : 1;
		ret = print_report(bench, true);
		json_object_put(bench);
		return ret;
	}
	r = do_probe(cfg, flags, nflags, &report);
	if (r < 0)
		return 1;
	if (!strcmp(command, "run")) {
		r = do_bench(cfg, &bench);
		if (r < 0) {
			json_object_put(report);
			return r == -EINTR ? 130 : r == -EINVAL ? 2 : 1;
		}
		json_object_object_add(report, "bench", bench);
	}
	ret = print_report(report, false);
	json_object_put(report);
	return ret;
}

int main(int argc, char **argv)
{
	struct option long_opts[ARRAY_SIZE(flag_keys) + 8] = {
		{ "config", required_argument, NULL, 'c' },
		{ "root", required_argument, NULL, OPT_ROOT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "only", required_argument, NULL, OPT_ONLY },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
	};
	struct agent_config cfg = { 0 };
	struct flag_value flags[ARRAY_SIZE(flag_keys)];
	size_t nflags = 0, nopts = 6;
	char err[CONFIG_ERR_LEN];
	const char *command;
	int c, r, ret = 2;

	log_init("fleetbench-agent");
	for (size_t i = 0; i < ARRAY_SIZE(flag_keys); i++)
		long_opts[nopts++] = (struct option){
			flag_keys[i].flag, required_argument, NULL,
			OPT_FLAG_KEY + (int)i
		};
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("fleetbench-agent %s\n", FLEETBENCH_VERSION);
		return 0;
	}
	command = argv[1];
	if (strcmp(command, "probe") && strcmp(command, "bench") &&
	    strcmp(command, "run")) {
		log_error("unknown command '%s' (see --help)", command);
		return 2;
	}

	optind = 2;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:hV", long_opts, NULL)) != -1) {
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
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("fleetbench-agent %s\n", FLEETBENCH_VERSION);
			return 0;
		case ':':
			log_error("option '%s' needs a value", argv[optind - 1]);
			return 2;
		case '?':
			log_error("unknown option '%s' (see --help)",
				  argv[optind - 1]);
			return 2;
		default: {
			const struct flag_key *fk = &flag_keys[c - OPT_FLAG_KEY];
			size_t j = 0;

			/* a repeated flag: the last one wins */
			while (j < nflags && flags[j].fk != fk)
				j++;
			flags[j] = (struct flag_value){ fk, optarg };
			if (j == nflags)
				nflags++;
			break;
		}
		}
	}
	if (optind < argc) {
		log_error("unexpected argument '%s' (see --help)", argv[optind]);
		return 2;
	}

	if (config_defaults(agent_keys, ARRAY_SIZE(agent_keys), &cfg, err) < 0) {
		log_error("bad built-in default: %s", err);
		goto out;
	}
	r = config_load(arg_config ? arg_config : DEFAULT_CONFIG, agent_keys,
			ARRAY_SIZE(agent_keys), &cfg, err);
	if (r == -EINVAL) {
		log_error("%s", err);
		goto out;
	}
	if (r < 0 && (arg_config || r != -ENOENT)) {
		log_error("cannot read config '%s': %s",
			  arg_config ? arg_config : DEFAULT_CONFIG,
			  strerror(-r));
		goto out;
	}
	for (size_t i = 0; i < nflags; i++) {
		if (config_set(agent_keys, ARRAY_SIZE(agent_keys), &cfg,
			       flags[i].fk->section, flags[i].fk->key,
			       flags[i].value, err) < 0) {
			log_error("bad value for --%s: %s", flags[i].fk->flag,
				  err);
			goto out;
		}
	}

	ret = cmd_run(command, &cfg, flags, nflags);
out:
	config_release(agent_keys, ARRAY_SIZE(agent_keys), &cfg);
	return ret;
}
