/* SPDX-License-Identifier: MIT */
/* fleetbench-collector keygen: the collector's CURVE keypair. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "link.h"
#include "log.h"

/* Writes --dir/--name.key and .pub; it reads no config. */
int cmd_keygen(const struct collector_config *cfg)
{
	struct link_keypair kp;
	int r;

	r = link_keygen(arg_dir, arg_name, &kp);
	if (r == -EEXIST) {
		log_error("'%s/%s.key' or '%s/%s.pub' exists: keys are never overwritten",
			  arg_dir, arg_name, arg_dir, arg_name);
		return 1;
	}
	if (r < 0) {
		log_error("cannot write keys '%s/%s.key' and '.pub': %s", arg_dir,
			  arg_name, strerror(-r));
		return 1;
	}
	printf("wrote %s/%s.key (secret, mode 0600) and %s/%s.pub\n"
	       "public key: %s\n",
	       arg_dir, arg_name, arg_dir, arg_name, kp.public_key);
	explicit_bzero(&kp, sizeof(kp));
	return 0;
}

