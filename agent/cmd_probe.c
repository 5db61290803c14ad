/* SPDX-License-Identifier: MIT */
/* fleetbench-agent probe: what this host's kernel and hypervisor allow. */
#include <string.h>

#include "cmd.h"
#include "log.h"
#include "probe.h"

/* Where a label came from: a flag, the config file, or nowhere. */
static enum label_source label_source(const char *key, const char *value,
				      const struct cli *cli)
{
	if (!value)
		return LABEL_NONE;
	return cli_sets_key(cli, key) ? LABEL_FLAG : LABEL_CONFIG;
}

int agent_probe(const struct agent_config *cfg, const struct cli *cli,
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
	int r;

	agent_recover(cfg);
	r = probe_run(&opts, ret);
	if (r < 0)
		log_error("cannot probe below '%s': %s", arg_root,
			  strerror(-r));
	return r;
}

int cmd_probe(struct agent_config *cfg, const struct cli *cli)
{
	struct json_object *report = NULL;
	int ret = ST_FAILURE;

	if (agent_probe(cfg, cli, &report) == 0)
		ret = agent_print_report(report, NULL, &cfg->bench);
	json_object_put(report);
	return ret;
}
