/* SPDX-License-Identifier: MIT */
/* fleetbench compare, rank and kernels: one query against a view each. */
#include <stdio.h>

#include "cmd.h"
#include "log.h"

/* The skeleton's placeholders: the views and options land next. */
static int not_yet(const char *name)
{
	log_error("'%s' is not implemented yet", name);
	return CMD_FAILED;
}

int cmd_compare(struct cmd_ctx *ctx, int argc, char **argv)
{
	return not_yet(argv[0]);
}

int cmd_rank(struct cmd_ctx *ctx, int argc, char **argv)
{
	return not_yet(argv[0]);
}

int cmd_kernels(struct cmd_ctx *ctx, int argc, char **argv)
{
	return not_yet(argv[0]);
}
