/* SPDX-License-Identifier: MIT */
/*
 * Fault injection for the reliability tests (docs/reliability.md): a named
 * point in the code where the process kills itself with SIGKILL when the
 * environment asks for it, so a test can crash a program exactly between
 * two steps that matter (a spool write and its rename, an Ack and the spool
 * delete) instead of hoping a random kill lands there.
 *
 *   FLEETBENCH_FAULT=NAME          the first time the point NAME is reached
 *   FLEETBENCH_FAULT=NAME@N        the N-th time (N >= 1)
 *   FLEETBENCH_FAULT=NAME[@N]:HOW  and what happens there (default SIGKILL):
 *     SIGKILL  the process kills itself with SIGKILL
 *     SIGSEGV  it dies of SIGSEGV (the default action, whatever handler a
 *              sanitizer installed), as a stray pointer would make it
 *     SIGABRT  abort()
 *     hang     it sleeps forever with every signal blocked: only
 *              SIGKILL ends it (as a benchmark stuck in the kernel)
 *     ENOMEM   fault_point() returns -ENOMEM: the caller fails as if an
 *              allocation had failed (only where the caller says so)
 *
 * Unset, empty, or naming another point: fault_point() returns 0 at once.
 * It is compiled into every build: a point costs one getenv() and is never
 * taken by accident, because no production environment sets the variable.
 * An unknown HOW or a malformed N never fires. The points in use are
 * listed in docs/reliability.md.
 */
#ifndef FLEETBENCH_FAULT_H
#define FLEETBENCH_FAULT_H

#define FAULT_ENV "FLEETBENCH_FAULT"

/*
 * Acts as FLEETBENCH_FAULT says when it names this point (and this is its
 * N-th hit). Before dying it writes one line to stderr, "fault point 'NAME'
 * reached: HOW", so that a test log says why the program vanished; the
 * write and the signal are async-signal-safe. Returns 0, or -ENOMEM for
 * HOW ENOMEM. Safe to call from any thread.
 */
int fault_point(const char *name);

#endif
