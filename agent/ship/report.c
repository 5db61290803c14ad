/* SPDX-License-Identifier: MIT */
/* The probe JSON report and the bench messages as one wire Report
 * (report.h): the probe read into its typed message, the typed columns
 * taken from that message by a table of item paths. */
#include "report.h"

#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "codec.h"
#include "log.h"
#include "pbjson.h"
#include "probe_derive.h"


static int fail(char err[REPORT_ERR_LEN], int r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char err[REPORT_ERR_LEN], int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, REPORT_ERR_LEN, fmt, ap);
	va_end(ap);
	return r;
}

static int oom(char err[REPORT_ERR_LEN])
{
	return fail(err, -ENOMEM, "out of memory building the report");
}

static int dup_str(char **dst, const char *s, char err[REPORT_ERR_LEN])
{
	*dst = strdup(s);
	return *dst ? 0 : oom(err);
}

/* ---- the typed columns, from the typed probe (proto/probe_derive.c) ---- */

/* -ENODATA naming the item when m's required string field is unset. */
static int required(const ProtobufCMessage *m, const char *field,
		    const Fleetbench__Probe *probe, const char *path,
		    char err[REPORT_ERR_LEN])
{
	const ProtobufCFieldDescriptor *f =
		protobuf_c_message_descriptor_get_field_by_name(m->descriptor,
								field);
	bool unknown;
	const char *why;

	if (*(char *const *)((const char *)m + f->offset))
		return 0;
	why = probe_not_taken(probe, path, &unknown);
	if (unknown)
		return fail(err, -ENODATA, "probe item %s is unknown (%s)",
			    path, why);
	return fail(err, -ENODATA, "probe item %s is %s", path, why);
}

/* Host and Kernel of rep from its typed probe; the capabilities are the
 * collector's to take from it (proto/probe_derive.c). */
static int derive_all(Fleetbench__Report *rep, char err[REPORT_ERR_LEN])
{
	const Fleetbench__Probe *p = rep->probe;
	bool unknown;
	int r;

	r = probe_derive_host(p, &rep->host);
	if (r == 0)
		r = probe_derive_kernel(p, &rep->kernel);
	if (r < 0)
		return oom(err);
	if (!rep->host->machine_id)
		return fail(err, -ENODATA,
			    "the probe found no machine id (host.machine_id: %s): the collector keys hosts by it; create /etc/machine-id (systemd-machine-id-setup)",
			    probe_not_taken(p, "host.machine_id", &unknown));
	r = required(&rep->host->base, "hostname", p, "host.hostname", err);
	if (r == 0)
		r = required(&rep->kernel->base, "release", p, "kernel.release",
			     err);
	return r;
}

/* ---- the bench part ---- */

/*
 * A copy of bench's fields moved into rep: the copy is bench packed and
 * unpacked (every part from malloc, as report_free() wants), so rep owns
 * its parts and the caller keeps bench.
 */
static int copy_bench(const Fleetbench__BenchRun *bench,
		      Fleetbench__Report *rep, char err[REPORT_ERR_LEN])
{
	size_t len = fleetbench__bench_run__get_packed_size(bench);
	_cleanup_free_ uint8_t *buf = malloc(len + 1);
	Fleetbench__BenchRun *b;

	if (!buf)
		return oom(err);
	fleetbench__bench_run__pack(bench, buf);
	b = fleetbench__bench_run__unpack(NULL, len, buf);
	if (!b)
		return oom(err); /* what was just packed unpacks, memory aside */
	rep->benchmarks = TAKE_PTR(b->benchmarks);
	rep->n_benchmarks = b->n_benchmarks;
	rep->comparisons = TAKE_PTR(b->comparisons);
	rep->n_comparisons = b->n_comparisons;
	rep->profile = TAKE_PTR(b->profile);
	rep->has_seed = b->has_seed;
	rep->seed = b->seed;
	rep->method = TAKE_PTR(b->method);
	rep->costs = TAKE_PTR(b->costs);
	rep->n_costs = b->n_costs;
	rep->cost_total = TAKE_PTR(b->cost_total);
	b->n_benchmarks = b->n_comparisons = b->n_costs = 0;
	fleetbench__bench_run__free_unpacked(b, NULL);
	return 0;
}

/* ---- the API ---- */

int report_probe(struct json_object *probe, Fleetbench__Probe **ret,
		 char err[REPORT_ERR_LEN])
{
	char why[PBJSON_ERR_LEN];
	ProtobufCMessage *m;
	int r = pbjson_to_message(&fleetbench__probe__descriptor, probe, &m,
				  why);

	if (r == -ENOMEM)
		return oom(err);
	if (r < 0)
		return fail(err, r, "the probe report does not fit the .proto: %s",
			    why);
	*ret = (Fleetbench__Probe *)m;
	return 0;
}

int report_build(struct json_object *probe, const Fleetbench__BenchRun *bench,
		 int64_t started_unix_ms, int64_t finished_unix_ms,
		 Fleetbench__Report **ret, char err[REPORT_ERR_LEN])
{
	Fleetbench__Report *rep;
	char run_id[37];
	int r;

	err[0] = '\0';
	if (!json_object_is_type(probe, json_type_object))
		return fail(err, -EINVAL, "the probe report is not an object");
	r = codec_uuid_new(run_id);
	if (r < 0)
		return fail(err, r, "cannot make a run id: %s", strerror(-r));

	rep = malloc(sizeof(*rep));
	if (!rep)
		return oom(err);
	fleetbench__report__init(rep);
	rep->schema_version = FLEETBENCH__SCHEMA_VERSION__CURRENT;
	rep->started_unix_ms = started_unix_ms;
	rep->finished_unix_ms = finished_unix_ms;
	r = dup_str(&rep->run_id, run_id, err);
	if (r == 0)
		r = dup_str(&rep->agent_version, FLEETBENCH_VERSION, err);
	if (r == 0)
		r = report_probe(probe, &rep->probe, err);
	if (r == 0)
		r = derive_all(rep, err);
	if (r == 0 && bench)
		r = copy_bench(bench, rep, err);
	if (r < 0) {
		report_free(rep);
		return r;
	}
	*ret = rep;
	return 0;
}

int report_add_bench(Fleetbench__Report *rep, const Fleetbench__BenchRun *bench,
		     int64_t finished_unix_ms, char err[REPORT_ERR_LEN])
{
	err[0] = '\0';
	if (rep->n_benchmarks || rep->method)
		return fail(err, -EEXIST, "the report has its bench part already");
	rep->finished_unix_ms = finished_unix_ms;
	return copy_bench(bench, rep, err);
}

/*
 * Every string, array and sub-message above comes from malloc, so
 * protobuf-c's own walk frees the tree with the default allocator (free),
 * skipping the oneof members not in use.
 */
void report_free(Fleetbench__Report *r)
{
	if (r)
		fleetbench__report__free_unpacked(r, NULL);
}
