/* SPDX-License-Identifier: MIT */
/* fleetbench-agent: the command line of the per-host agent. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
};

static const struct config_key agent_keys[] = {
	{ "agent", "provider", CONFIG_STR,
	  offsetof(struct agent_config, provider), NULL, 0, 0,
	  "provider label (else inferred from DMI)" },
	{ "agent", "instance_type", CONFIG_STR,
	  offsetof(struct agent_config, instance_type), NULL, 0, 0,
	  "instance type label (else inferred from DMI where it tells)" },
	{ "agent", "region", CONFIG_STR, offsetof(struct agent_config, region),
	  NULL, 0, 0, "region label" },
	{ "agent", "work_dir", CONFIG_STR,
	  offsetof(struct agent_config, work_dir), "/var/tmp", 0, 0,
	  "work directory (its filesystem is probed; benchmarks write there)" },
	{ "agent", "steal_window_ms", CONFIG_INT,
	  offsetof(struct agent_config, steal_window_ms), "1000", 0, 60000,
	  "CPU steal sampling window in ms (0 skips it)" },
};

static const char *arg_config;
static const char *arg_root = "/";
static bool arg_json;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fleetbench-agent COMMAND [OPTIONS]\n"
		"\n"
		"commands:\n"
		"  probe            report what this host's kernel and hypervisor allow\n"
		"\n"
		"options:\n"
		"  -c, --config FILE        agent config (default " DEFAULT_CONFIG
		" if present)\n"
		"      --root DIR           read kernel files below DIR (default /)\n"
		"      --json               print JSON (keys in docs/probe.md)\n"
		"      --provider NAME      provider label (overrides config and DMI)\n"
		"      --instance-type NAME instance type label\n"
		"      --region NAME        region label\n"
		"      --dir PATH           work directory (default /var/tmp)\n"
		"      --steal-window MS    CPU steal sampling window, 0 to skip (default 1000)\n"
		"  -h, --help               show this help\n"
		"  -V, --version            show the version\n");
}

enum {
	OPT_ROOT = 0x100,
	OPT_JSON,
	OPT_PROVIDER,
	OPT_INSTANCE_TYPE,
	OPT_REGION,
	OPT_DIR,
	OPT_STEAL_WINDOW,
};

/* Flags that set a config key, applied after the file so they win. */
struct flag_key {
	int opt;
	const char *key;
};

static const struct flag_key flag_keys[] = {
	{ OPT_PROVIDER, "provider" },
	{ OPT_INSTANCE_TYPE, "instance_type" },
	{ OPT_REGION, "region" },
	{ OPT_DIR, "work_dir" },
	{ OPT_STEAL_WINDOW, "steal_window_ms" },
};

struct flag_value {
	const char *key;
	const char *value;
};

static enum label_source label_source(const char *key, const char *value,
				      const struct flag_value *flags,
				      size_t nflags)
{
	if (!value)
		return LABEL_NONE;
	for (size_t i = 0; i < nflags; i++)
		if (!strcmp(flags[i].key, key))
			return LABEL_FLAG;
	return LABEL_CONFIG;
}

static int cmd_probe(struct agent_config *cfg, const struct flag_value *flags,
		     size_t nflags)
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
	struct json_object *report = NULL;
	int r;

	r = probe_run(&opts, &report);
	if (r < 0) {
		log_error("cannot probe below '%s': %s", arg_root,
			  strerror(-r));
		return 1;
	}
	if (arg_json)
		printf("%s\n",
		       json_object_to_json_string_ext(
			       report, JSON_C_TO_STRING_PRETTY |
					       JSON_C_TO_STRING_NOSLASHESCAPE));
	else
		output_table(stdout, report);
	json_object_put(report);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		log_error("cannot write the report: %s", strerror(errno));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "root", required_argument, NULL, OPT_ROOT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "provider", required_argument, NULL, OPT_PROVIDER },
		{ "instance-type", required_argument, NULL, OPT_INSTANCE_TYPE },
		{ "region", required_argument, NULL, OPT_REGION },
		{ "dir", required_argument, NULL, OPT_DIR },
		{ "steal-window", required_argument, NULL, OPT_STEAL_WINDOW },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct agent_config cfg = { 0 };
	struct flag_value flags[ARRAY_SIZE(flag_keys)];
	size_t nflags = 0;
	char err[CONFIG_ERR_LEN];
	const char *command;
	int c, r, ret = 2;

	log_init("fleetbench-agent");
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
	if (strcmp(command, "probe")) {
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
		default:
			for (size_t i = 0; i < ARRAY_SIZE(flag_keys); i++)
				if (flag_keys[i].opt == c) {
					/* a repeated flag: the last one wins */
					size_t j = 0;

					while (j < nflags &&
					       strcmp(flags[j].key,
						      flag_keys[i].key))
						j++;
					flags[j] = (struct flag_value){
						flag_keys[i].key, optarg
					};
					if (j == nflags)
						nflags++;
				}
			break;
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
		if (config_set(agent_keys, ARRAY_SIZE(agent_keys), &cfg, "agent",
			       flags[i].key, flags[i].value, err) < 0) {
			log_error("bad option value: %s", err);
			goto out;
		}
	}

	ret = cmd_probe(&cfg, flags, nflags);
out:
	config_release(agent_keys, ARRAY_SIZE(agent_keys), &cfg);
	return ret;
}
