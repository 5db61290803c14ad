/* SPDX-License-Identifier: MIT */
/* The container layer of the virt probe (probe_container.c). */
#ifndef FLEETBENCH_PROBE_CONTAINER_H
#define FLEETBENCH_PROBE_CONTAINER_H

#include "probe.h"

/*
 * Sets out.container: { name, markers } from /run/systemd/container,
 * /run/.containerenv, /.dockerenv, the cgroup paths of /proc/1/cgroup and a
 * WSL kernel release; the most specific marker names the container ("none"
 * without any). Returns 0 or -ENOMEM.
 */
int container_probe(struct probe_ctx *ctx, struct json_object *out);

#endif
