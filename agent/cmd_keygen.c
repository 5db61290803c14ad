/* SPDX-License-Identifier: MIT */
/* fleetbench-agent keygen: this agent's CURVE keypair. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "link.h"
#include "log.h"

/* The keys go to --dir, not to the work directory [agent] work_dir names. */
int cmd_keygen(struct agent_config *cfg, const struct cli *cli)
{
	const char *dir = cli_value(cli, "dir");
	struct link_keypair kp;
	int r;

	if (!dir)
		dir = DEFAULT_KEY_DIR;
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

