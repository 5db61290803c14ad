/* SPDX-License-Identifier: MIT */
/*
 * Turns the probe's JSON report and the bench run's messages into the
 * wire's Fleetbench__Report (proto/fleetbench.proto, docs/wire.md), ready
 * for the codec to validate and pack. Nothing here logs: errors come back as -errno
 * with the reason in err.
 */
#ifndef FLEETBENCH_REPORT_H
#define FLEETBENCH_REPORT_H

#include <stdint.h>

#include <json-c/json.h>

#include "fleetbench.pb-c.h"

#define REPORT_ERR_LEN 256

/*
 * Builds a Report from probe (the object probe_run() returned, without a
 * "bench" member) and bench (what bench_suite_run() returned, or NULL for a
 * probe-only report; copied, the caller keeps it), with a new random
 * run_id, schema version CURRENT and this agent's version.
 *
 * - host: hostname and machine_id from the probe's host section; provider,
 *   instance_type and region from its labels section (a label whose value
 *   is unknown is left unset), each with its source;
 * - kernel: release, version and cmdline from the kernel section (version
 *   and cmdline are left unset when unknown);
 * - probe: the whole probe object as its typed message (report_probe());
 * - capabilities: always set, its fields from the probe items the collector
 *   stores in typed columns (thp.{enabled,defrag,shmem_enabled}.selected,
 *   hugetlb.sizes[].{size_kb,nr,free}, io_uring.{disabled,setup,
 *   setup_errno,sqpoll,sqpoll_errno,opcodes,features},
 *   host.{vcpus_online,memory_total_kb,cpu_model}, virt.vm.name,
 *   virt.container.name); an item that is unknown, absent, empty or not of
 *   the field's type and range is left unset (an array keeps the entries
 *   that fit; a hugetlb size without size_kb is left out);
 * - benchmarks, comparisons, profile, seed and method: bench's, as they
 *   are.
 *
 * The collector keys hosts by machine_id: a probe whose machine_id is
 * unknown (no /etc/machine-id) is refused with -ENODATA, as is one without
 * a hostname or kernel release. Returns 0 and *ret (free with
 * report_free()), or -errno with err set.
 *
 * It does not validate: codec_validate_report() tells what a collector
 * would say.
 */
int report_build(struct json_object *probe, const Fleetbench__BenchRun *bench,
		 int64_t started_unix_ms, int64_t finished_unix_ms,
		 Fleetbench__Report **ret, char err[REPORT_ERR_LEN]);

/*
 * Adds bench's part (variants, comparisons, profile, seed, method, costs;
 * copied) to rep, a report of report_build() without one, which the run
 * finished at finished_unix_ms: the one report of a run grows, from the
 * room check before the benchmarks to the spool and the textfile after
 * them. 0, or -ENOMEM with err set (rep then as it was, but for parts).
 */
int report_add_bench(Fleetbench__Report *rep, const Fleetbench__BenchRun *bench,
		     int64_t finished_unix_ms, char err[REPORT_ERR_LEN]);

/*
 * The probe object as its typed message in *ret (free with
 * fleetbench__probe__free_unpacked(*ret, NULL)), read by pbjson against
 * the .proto: -EINVAL naming the item when the probe made an item the
 * .proto does not hold, or of another type; -ENOMEM.
 */
int report_probe(struct json_object *probe, Fleetbench__Probe **ret,
		 char err[REPORT_ERR_LEN]);

/* Frees what report_build() returned; NULL is fine. */
void report_free(Fleetbench__Report *r);

#endif
