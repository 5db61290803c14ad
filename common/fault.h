/* SPDX-License-Identifier: MIT */
/*
 * Fault injection for the reliability tests (docs/reliability.md): a named
 * point in the code where the process kills itself with SIGKILL when the
 * environment asks for it, so a test can crash a program exactly between
 * two steps that matter (a spool write and its rename, an Ack and the spool
 * delete) instead of hoping a random kill lands there.
 *
 *   FLEETBENCH_FAULT=NAME      the first time the point NAME is reached
 *   FLEETBENCH_FAULT=NAME@N    the N-th time (N >= 1)
 *
 * Unset, empty, or naming another point: fault_point() returns at once. It
 * is compiled into every build: a point costs one getenv() and is never
 * taken by accident, because no production environment sets the variable.
 * The points in use are listed in docs/reliability.md.
 */
#ifndef FLEETBENCH_FAULT_H
#define FLEETBENCH_FAULT_H

#define FAULT_ENV "FLEETBENCH_FAULT"

/*
 * Kills the calling process with SIGKILL when FLEETBENCH_FAULT names this
 * point (and this is its N-th hit). Before dying it writes one line to
 * stderr, "fault point 'NAME' reached: SIGKILL", so that a test log says
 * why the program vanished; the write and the kill are async-signal-safe.
 * A malformed N never fires. Safe to call from any thread.
 */
void fault_point(const char *name);

#endif
