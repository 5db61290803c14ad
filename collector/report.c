/* SPDX-License-Identifier: MIT */
/* fleetbench report: a self-contained HTML file with SVG charts. */
#include <stdio.h>

#include "cmd.h"
#include "log.h"

int cmd_report(struct cmd_ctx *ctx, int argc, char **argv)
{
	log_error("'%s' is not implemented yet", argv[0]);
	return CMD_FAILED;
}
