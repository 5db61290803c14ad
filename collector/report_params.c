/* SPDX-License-Identifier: MIT */
/*
 * A validated Report as the one binary parameter of fleetbench_ingest_run(),
 * a fleetbench_report (schema/029_ingest_contract.sql, its attributes in
 * their order): ingest_report_params().
 */
#include "ingest.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "array.h"
#include "cleanup.h"
#include "codec.h"
#include "log.h"
#include "method.h"
#include "pbjson.h"
#include "probe_derive.h"
#include "stats.h"

/* Encodes one report; r is the first error (-ERANGE: a value does not
 * fit its column, said in err). */
struct enc {
	struct pgparam *p;
	char *err;
	int r;
	/* the typed probe's part as text and its rest (enc_probe) */
	char *part;
	struct json_object *rest;
	/* the shape's names and kinds in one text each (enc_shape), or NULL:
	 * the names and kinds go as arrays */
	char *names, *kinds;
};

/* Out of memory while encoding what: the first failure is the one told. */
static void enc_oom(struct enc *e, const char *what)
{
	if (!e->r) {
		e->r = -ENOMEM;
		snprintf(e->err, PG_ERR_LEN, "out of memory for %s", what);
	}
}

/* An unsigned field in a bigint column, or the report is refused. */
static void enc_u64(struct enc *e, const char *name, uint64_t v)
{
	if (v > INT64_MAX && !e->r) {
		e->r = -ERANGE;
		snprintf(e->err, PG_ERR_LEN,
			 "%s: %" PRIu64 " does not fit a bigint", name, v);
	}
	pgparam_int8(e->p, (int64_t)v);
}

static void enc_int4(struct enc *e, bool has, int32_t v)
{
	if (has)
		pgparam_int4(e->p, v);
	else
		pgparam_null(e->p, PGPARAM_INT4);
}

static void enc_int8(struct enc *e, bool has, int64_t v)
{
	if (has)
		pgparam_int8(e->p, v);
	else
		pgparam_null(e->p, PGPARAM_INT8);
}

static void enc_float8(struct enc *e, bool has, double v)
{
	if (has)
		pgparam_float8(e->p, v);
	else
		pgparam_null(e->p, PGPARAM_FLOAT8);
}

static void enc_bool(struct enc *e, bool has, bool v)
{
	if (has)
		pgparam_bool(e->p, v);
	else
		pgparam_null(e->p, PGPARAM_BOOL);
}

static void enc_texts(struct enc *e, char *const *v, size_t n)
{
	pgparam_array_begin(e->p, PGPARAM_TEXT);
	for (size_t i = 0; i < n; i++)
		pgparam_text(e->p, v[i]);
	pgparam_array_end(e->p);
}

/* the types of thp_enabled .. container, NULL without capabilities */
static const unsigned caps_types[] = {
	PGPARAM_TEXT,	    PGPARAM_TEXT,	PGPARAM_TEXT,
	PGPARAM_INT8_ARRAY, PGPARAM_INT8_ARRAY, PGPARAM_INT8_ARRAY,
	PGPARAM_INT4,	    PGPARAM_TEXT,	PGPARAM_INT4,
	PGPARAM_TEXT,	    PGPARAM_INT4,	PGPARAM_TEXT_ARRAY,
	PGPARAM_TEXT_ARRAY, PGPARAM_INT4,	PGPARAM_INT8,
	PGPARAM_TEXT,	    PGPARAM_TEXT,	PGPARAM_TEXT,
};

/* and of method_key .. randread_file, NULL without a method */
static const unsigned method_types[] = {
	PGPARAM_TEXT,	    PGPARAM_TEXT, PGPARAM_INT8, PGPARAM_INT8,
	PGPARAM_INT8,	    PGPARAM_INT8, PGPARAM_INT8, PGPARAM_INT8,
	PGPARAM_INT8,	    PGPARAM_INT8, PGPARAM_INT8, PGPARAM_INT8,
	PGPARAM_TEXT_ARRAY, PGPARAM_BOOL,
};

/* caps_present .. container: Report.capabilities, or NULLs and
 * caps_present false */
/* A list item of the probe that it could not read ("opcodes: unknown
 * (EINVAL: IORING_REGISTER_PROBE not supported)") is NULL, unknown, not
 * an empty list: no kernel lacks every opcode. */
static void enc_probe_list(struct enc *e, char *const *v, size_t n,
			   const Fleetbench__Probe *probe, const char *path)
{
	bool unknown = false;

	if (!n && probe)
		probe_not_taken(probe, path, &unknown);
	if (unknown)
		pgparam_null(e->p, PGPARAM_TEXT_ARRAY);
	else
		enc_texts(e, v, n);
}

/* c derived from probe, or from an older agent's field 14 (probe NULL) */
static void enc_caps(struct enc *e, const Fleetbench__Capabilities *c,
		     const Fleetbench__Probe *probe)
{
	struct pgparam *p = e->p;

	pgparam_bool(p, c != NULL);
	if (!c) {
		for (size_t i = 0; i < ARRAY_SIZE(caps_types); i++)
			pgparam_null(p, caps_types[i]);
		return;
	}
	pgparam_text(p, c->thp_enabled);
	pgparam_text(p, c->thp_defrag);
	pgparam_text(p, c->thp_shmem_enabled);
	pgparam_array_begin(p, PGPARAM_INT8);
	for (size_t i = 0; i < c->n_hugepages; i++)
		enc_u64(e, "capabilities.hugepages.size_kb",
			c->hugepages[i]->size_kb);
	pgparam_array_end(p);
	pgparam_array_begin(p, PGPARAM_INT8);
	for (size_t i = 0; i < c->n_hugepages; i++) {
		const Fleetbench__HugepagePool *h = c->hugepages[i];

		if (h->has_nr)
			enc_u64(e, "capabilities.hugepages.nr", h->nr);
		else
			pgparam_null(p, PGPARAM_INT8);
	}
	pgparam_array_end(p);
	pgparam_array_begin(p, PGPARAM_INT8);
	for (size_t i = 0; i < c->n_hugepages; i++) {
		const Fleetbench__HugepagePool *h = c->hugepages[i];

		if (h->has_free)
			enc_u64(e, "capabilities.hugepages.free", h->free);
		else
			pgparam_null(p, PGPARAM_INT8);
	}
	pgparam_array_end(p);
	enc_int4(e, c->has_io_uring_disabled, c->io_uring_disabled);
	pgparam_text(p, c->io_uring_setup);
	enc_int4(e, c->has_io_uring_setup_errno, c->io_uring_setup_errno);
	pgparam_text(p, c->sqpoll);
	enc_int4(e, c->has_sqpoll_errno, c->sqpoll_errno);
	enc_probe_list(e, c->io_uring_opcodes, c->n_io_uring_opcodes, probe,
		       "io_uring.opcodes");
	enc_probe_list(e, c->io_uring_features, c->n_io_uring_features, probe,
		       "io_uring.features");
	if (c->has_vcpus && c->vcpus > INT32_MAX && !e->r) {
		e->r = -ERANGE;
		snprintf(e->err, PG_ERR_LEN,
			 "capabilities.vcpus: %" PRIu32
			 " does not fit an integer",
			 c->vcpus);
	}
	enc_int4(e, c->has_vcpus, (int32_t)c->vcpus);
	if (c->has_memory_kb)
		enc_u64(e, "capabilities.memory_kb", c->memory_kb);
	else
		pgparam_null(p, PGPARAM_INT8);
	pgparam_text(p, c->cpu_model);
	pgparam_text(p, c->vm);
	pgparam_text(p, c->container);
}

/*
 * The typed capabilities of r, from one source: its typed probe (the codec
 * has refused a report whose capabilities, field 14 of an older agent,
 * say otherwise); else, from an agent before the typed probe, its field
 * 14; else none, and the SQL takes them from probe_json. Capabilities the
 * codec refuses (a hugetlb pool read while it changed: free > nr) go as
 * none too, with a warning: the run is not lost for them.
 */
static void enc_report_caps(struct enc *e, const Fleetbench__Report *r)
{
	Fleetbench__Capabilities *c = NULL;
	char why[CODEC_ERR_LEN];

	if (!r->probe) {
		enc_caps(e, r->capabilities, NULL);
		return;
	}
	if (probe_derive_capabilities(r->probe, &c) < 0) {
		enc_oom(e, "the capabilities");
	} else if (codec_validate_capabilities(c, why) < 0) {
		log_warn("report %s: stored without its typed capabilities, "
			 "which its probe gives out of bounds: %s",
			 r->run_id, why);
		fleetbench__capabilities__free_unpacked(c, NULL);
		c = NULL;
	}
	enc_caps(e, c, r->probe);
	if (c)
		fleetbench__capabilities__free_unpacked(c, NULL);
}

/* method_key .. randread_file: Report.method, or NULLs (the run is
 * keyed by its profile) */
static void enc_method(struct enc *e, const Fleetbench__Method *m)
{
	struct pgparam *p = e->p;

	if (!m) {
		for (size_t i = 0; i < ARRAY_SIZE(method_types); i++)
			pgparam_null(p, method_types[i]);
		return;
	}
	/* the key made again from the fields against the profiles this
	 * collector knows (proto/method.h): a run an older agent made with
	 * a profile's earlier parameters is keyed by them; a profile it
	 * does not know keeps the agent's key */
	char *key = NULL;
	int r = method_key(m, &key);

	if (r == -ENOMEM && !e->r) {
		e->r = r;
		snprintf(e->err, PG_ERR_LEN, "method.key: out of memory");
	}
	pgparam_text(p, key ? key : m->key);
	free(key);
	pgparam_text(p, m->profile);
	pgparam_int8(p, m->repeats);
	enc_u64(e, "method.chase_bytes", m->chase_bytes);
	pgparam_int8(p, m->chase_accesses);
	enc_u64(e, "method.fault_bytes", m->fault_bytes);
	enc_u64(e, "method.file_bytes", m->file_bytes);
	pgparam_int8(p, m->io_ms);
	pgparam_int8(p, m->iodepth);
	enc_u64(e, "method.seq_bytes", m->seq_bytes);
	enc_u64(e, "method.seq_block", m->seq_block);
	pgparam_int8(p, m->fs_increments);
	enc_texts(e, m->only, m->n_only);
	pgparam_bool(p, m->randread_file);
}

/* An optional unsigned Method field: NULL when absent. */
static void enc_opt_u64(struct enc *e, const char *name, bool has, uint64_t v)
{
	if (has)
		enc_u64(e, name, v);
	else
		pgparam_null(e->p, PGPARAM_INT8);
}

/* mmap_bytes .. writeback_dirty_bytes: the optional Method fields
 * (issue 15's benchmarks), each NULL
 * when absent, all NULL without a method */
static void enc_method_more(struct enc *e, const Fleetbench__Method *m)
{
	static const Fleetbench__Method none = FLEETBENCH__METHOD__INIT;

	if (!m)
		m = &none;
	enc_opt_u64(e, "method.mmap_bytes", m->has_mmap_bytes, m->mmap_bytes);
	enc_int8(e, m->has_mmap_accesses, m->mmap_accesses);
	enc_opt_u64(e, "method.bw_bytes", m->has_bw_bytes, m->bw_bytes);
	enc_int8(e, m->has_scaling_ms, m->scaling_ms);
	enc_opt_u64(e, "method.wb_bytes", m->has_wb_bytes, m->wb_bytes);
	enc_opt_u64(e, "method.wb_fsync_bytes", m->has_wb_fsync_bytes,
		    m->wb_fsync_bytes);
	if (m->has_with_database)
		pgparam_bool(e->p, m->with_database);
	else
		pgparam_null(e->p, PGPARAM_BOOL);
	enc_int8(e, m->has_db_scale, m->db_scale);
	enc_int8(e, m->has_db_rate, m->db_rate);
	enc_int8(e, m->has_db_seconds, m->db_seconds);
	enc_opt_u64(e, "method.writeback_dirty_bytes",
		    m->has_writeback_dirty_bytes, m->writeback_dirty_bytes);
}

/* Comparison text field k (0-6: name, benchmark, metric, numerator,
 * denominator, method, reason). */
static const char *comparison_text(const Fleetbench__Comparison *c, int k)
{
	const char *const v[] = {c->name,      c->benchmark,   c->metric,
				 c->numerator, c->denominator, c->method,
				 c->reason};

	return v[k];
}

static void enc_comparison_texts(struct enc *e, const Fleetbench__Report *r,
				 int k)
{
	pgparam_array_begin(e->p, PGPARAM_TEXT);
	for (size_t i = 0; i < r->n_comparisons; i++)
		pgparam_text(e->p, comparison_text(r->comparisons[i], k));
	pgparam_array_end(e->p);
}

/* c_name .. c_reason: one element per comparison */
static void enc_comparisons(struct enc *e, const Fleetbench__Report *r)
{
	struct pgparam *p = e->p;

	for (int k = 0; k < 5; k++)
		enc_comparison_texts(e, r, k);
	for (int k = 0; k < 4; k++) {
		pgparam_array_begin(p, PGPARAM_FLOAT8);
		for (size_t i = 0; i < r->n_comparisons; i++) {
			const Fleetbench__Comparison *c = r->comparisons[i];

			if (k == 0)
				enc_float8(e, c->has_ratio, c->ratio);
			else if (k == 1)
				enc_float8(e, c->has_ci_low, c->ci_low);
			else if (k == 2)
				enc_float8(e, c->has_ci_high, c->ci_high);
			else
				enc_float8(e, c->has_level, c->level);
		}
		pgparam_array_end(p);
	}
	enc_comparison_texts(e, r, 5);
	enc_comparison_texts(e, r, 6);
}

/* A parameter's kind as fleetbench_report holds it: i, s, d or b (NULL for
 * none: the codec refuses a parameter without a value). */
static const char *param_kind(const Fleetbench__Param *pa)
{
	switch (pa->value_case) {
	case FLEETBENCH__PARAM__VALUE_INT_VALUE:
		return "i";
	case FLEETBENCH__PARAM__VALUE_STRING_VALUE:
		return "s";
	case FLEETBENCH__PARAM__VALUE_DOUBLE_VALUE:
		return "d";
	case FLEETBENCH__PARAM__VALUE_BOOL_VALUE:
		return "b";
	default:
		return NULL;
	}
}

/* The value of a parameter of a kind but i as fleetbench_report's p_value
 * holds it: v holds the text of a double ("%.17g", which reads back as the
 * same double). An integer's goes in p_int (enc_param_values): NULL. */
static const char *param_value(const Fleetbench__Param *pa, char v[32])
{
	switch (pa->value_case) {
	case FLEETBENCH__PARAM__VALUE_STRING_VALUE:
		return pa->string_value;
	case FLEETBENCH__PARAM__VALUE_DOUBLE_VALUE:
		snprintf(v, 32, "%.17g", pa->double_value);
		return v;
	case FLEETBENCH__PARAM__VALUE_BOOL_VALUE:
		return pa->bool_value ? "true" : "false";
	default:
		return NULL;
	}
}

/*
 * The parameters' values in their order: with ints, p_int (043), those of
 * kind i as integers (none: an empty array, so that p_value is read as
 * holding the other kinds' alone); without, p_value, the other kinds' as
 * text.
 */
static void enc_param_values(struct enc *e, const Fleetbench__Report *r,
			     bool ints)
{
	pgparam_array_begin(e->p, ints ? PGPARAM_INT8 : PGPARAM_TEXT);
	for (size_t i = 0; i < r->n_benchmarks; i++)
		for (size_t j = 0; j < r->benchmarks[i]->n_parameters; j++) {
			const Fleetbench__Param *pa =
				r->benchmarks[i]->parameters[j];
			char v[32];

			if ((pa->value_case ==
			     FLEETBENCH__PARAM__VALUE_INT_VALUE) != ints)
				continue;
			if (ints)
				pgparam_int8(e->p, pa->int_value);
			else
				pgparam_text(e->p, param_value(pa, v));
		}
	pgparam_array_end(e->p);
}

static size_t params_of(const Fleetbench__Benchmark *b)
{
	return b->n_parameters;
}

static size_t windows_of(const Fleetbench__Benchmark *b)
{
	return b->n_windows;
}

static size_t metrics_of(const Fleetbench__Benchmark *b)
{
	return b->n_metrics;
}

static size_t samples_of(const Fleetbench__Benchmark *b)
{
	size_t n = 0;

	for (size_t j = 0; j < b->n_metrics; j++)
		n += b->metrics[j]->n_samples;
	return n;
}

/* An int4[] of cumulative ends: variant i owns elements end[i-1]+1 ..
 * end[i] of the arrays that follow. (The codec's message size limit
 * keeps every count far below 2^31.) */
static void enc_ends(struct enc *e, const Fleetbench__Report *r,
		     size_t (*count)(const Fleetbench__Benchmark *))
{
	int32_t end = 0;

	pgparam_array_begin(e->p, PGPARAM_INT4);
	for (size_t i = 0; i < r->n_benchmarks; i++) {
		end += (int32_t)count(r->benchmarks[i]);
		pgparam_int4(e->p, end);
	}
	pgparam_array_end(e->p);
}

/* The separator of the names in shape_names (044); a report with a name
 * holding it sends the arrays. */
#define SHAPE_SEP '\x1f'

/* Name j of variant i in list `list` of r's shape, the lists in
 * shape_names' order (fleetbench_shape_names(): the variants' benchmarks,
 * their names, parameter keys, metrics, units). */
static const char *shape_name(const Fleetbench__Report *r, size_t list,
			      size_t i, size_t j)
{
	const Fleetbench__Benchmark *b = r->benchmarks[i];

	switch (list) {
	case 0:
		return b->benchmark;
	case 1:
		return b->variant;
	case 2:
		return b->parameters[j]->key;
	case 3:
		return b->metrics[j]->metric;
	default:
		return b->metrics[j]->unit;
	}
}

/* How many names list has in variant i (1 for its benchmark and name). */
static size_t shape_count(const Fleetbench__Benchmark *b, size_t list)
{
	return list < 2 ? 1 : list == 2 ? b->n_parameters : b->n_metrics;
}

/*
 * shape_names and shape_kinds (044): the shape's names joined by
 * U+001F and its parameters' kinds, one letter each, which PostgreSQL
 * receives as two values instead of about 940 and finds a stored shape
 * by. None (the names and kinds go as arrays) for a report without
 * variants, or one with a name holding the separator.
 */
static void enc_shape(struct enc *e, const Fleetbench__Report *r)
{
	size_t len = 0, cap = 0, np = 0;
	char *names = NULL, *kinds;

	if (!r->n_benchmarks)
		return;
	/* one pass: each name's end found with the separator (strchrnul) */
	for (size_t list = 0; list < 5; list++)
		for (size_t i = 0; i < r->n_benchmarks; i++)
			for (size_t j = 0;
			     j < shape_count(r->benchmarks[i], list); j++) {
				const char *n = shape_name(r, list, i, j);
				const char *end = strchrnul(n, SHAPE_SEP);
				size_t l = (size_t)(end - n);

				if (*end) {
					free(names);
					return;
				}
				/* 8 KiB at first: the bench's report needs 6 */
				if (len + l + 1 > cap &&
				    ARRAY_RESERVE(names, cap,
						  len + l + 1 < 8192 ?
							  8192 :
							  len + l + 1) < 0) {
					free(names);
					enc_oom(e, "the shape's names");
					return;
				}
				memcpy(names + len, n, l);
				names[len + l] = SHAPE_SEP;
				len += l + 1;
			}
	for (size_t i = 0; i < r->n_benchmarks; i++)
		np += r->benchmarks[i]->n_parameters;
	kinds = malloc(np + 1);
	if (!kinds) {
		free(names);
		enc_oom(e, "the shape's kinds");
		return;
	}
	names[len - 1] = '\0';
	np = 0;
	for (size_t i = 0; i < r->n_benchmarks; i++)
		for (size_t j = 0; j < r->benchmarks[i]->n_parameters; j++)
			kinds[np++] =
				param_kind(r->benchmarks[i]->parameters[j])[0];
	kinds[np] = '\0';
	e->names = names;
	e->kinds = kinds;
}

/* An array of the shape's list of names (shape_name()), or NULL when
 * they go in shape_names. */
static void enc_names(struct enc *e, const Fleetbench__Report *r,
		      size_t list)
{
	if (e->names) {
		pgparam_null(e->p, PGPARAM_TEXT_ARRAY);
		return;
	}
	pgparam_array_begin(e->p, PGPARAM_TEXT);
	for (size_t i = 0; i < r->n_benchmarks; i++)
		for (size_t j = 0; j < shape_count(r->benchmarks[i], list); j++)
			pgparam_text(e->p, shape_name(r, list, i, j));
	pgparam_array_end(e->p);
}

/* v_benchmark .. samples: the variants, and their parameters, windows,
 * metrics, samples */
static void enc_variants(struct enc *e, const Fleetbench__Report *r)
{
	struct pgparam *p = e->p;

	enc_names(e, r, 0);
	enc_names(e, r, 1);
	/* the codec refuses a variant both failed and skipped */
	pgparam_array_begin(p, PGPARAM_TEXT);
	for (size_t i = 0; i < r->n_benchmarks; i++)
		pgparam_text(p, r->benchmarks[i]->failure     ? "failed" :
				r->benchmarks[i]->skip_reason ? "skipped" :
								"ok");
	pgparam_array_end(p);
	pgparam_array_begin(p, PGPARAM_TEXT);
	for (size_t i = 0; i < r->n_benchmarks; i++)
		pgparam_text(p, r->benchmarks[i]->failure ?
					r->benchmarks[i]->failure :
					r->benchmarks[i]->skip_reason);
	pgparam_array_end(p);

	enc_ends(e, r, params_of);
	enc_names(e, r, 2);
	if (e->kinds) {
		pgparam_null(p, PGPARAM_TEXT_ARRAY);
	} else {
		pgparam_array_begin(p, PGPARAM_TEXT);
		for (size_t i = 0; i < r->n_benchmarks; i++)
			for (size_t j = 0; j < r->benchmarks[i]->n_parameters;
			     j++)
				pgparam_text(p, param_kind(
					r->benchmarks[i]->parameters[j]));
		pgparam_array_end(p);
	}
	enc_param_values(e, r, false);

	enc_ends(e, r, windows_of);
	for (int k = 0; k < 4; k++) {
		pgparam_array_begin(p, k == 3 ? PGPARAM_BOOL : PGPARAM_FLOAT8);
		for (size_t i = 0; i < r->n_benchmarks; i++)
			for (size_t j = 0; j < r->benchmarks[i]->n_windows;
			     j++) {
				const Fleetbench__Window *w =
					r->benchmarks[i]->windows[j];

				if (k == 0)
					enc_float8(e, w->has_steal_pct,
						   w->steal_pct);
				else if (k == 1)
					enc_float8(e, w->has_loadavg1,
						   w->loadavg1);
				else if (k == 2)
					enc_float8(e, w->has_wall_s, w->wall_s);
				else
					enc_bool(e, w->has_noisy, w->noisy);
			}
		pgparam_array_end(p);
	}

	enc_ends(e, r, metrics_of);
	enc_names(e, r, 3);
	enc_names(e, r, 4);
	/* the median as the agent computes it (common/stats.c) */
	pgparam_array_begin(p, PGPARAM_FLOAT8);
	for (size_t i = 0; i < r->n_benchmarks; i++)
		for (size_t j = 0; j < r->benchmarks[i]->n_metrics; j++) {
			const Fleetbench__Metric *m =
				r->benchmarks[i]->metrics[j];
			double median;

			if (!m->n_samples) {
				pgparam_null(p, PGPARAM_FLOAT8);
				continue;
			}
			/* NAN only without memory: the samples are finite */
			median = stats_median(m->samples, m->n_samples);
			if (isnan(median) && !e->r)
				e->r = -ENOMEM;
			pgparam_float8(p, median);
		}
	pgparam_array_end(p);
	/* sample ends relative to the variant */
	pgparam_array_begin(p, PGPARAM_INT4);
	for (size_t i = 0; i < r->n_benchmarks; i++) {
		int32_t end = 0;

		for (size_t j = 0; j < r->benchmarks[i]->n_metrics; j++) {
			end += (int32_t)r->benchmarks[i]->metrics[j]->n_samples;
			pgparam_int4(p, end);
		}
	}
	pgparam_array_end(p);
	enc_ends(e, r, samples_of);
	pgparam_array_begin(p, PGPARAM_FLOAT8);
	for (size_t i = 0; i < r->n_benchmarks; i++)
		for (size_t j = 0; j < r->benchmarks[i]->n_metrics; j++) {
			const Fleetbench__Metric *m =
				r->benchmarks[i]->metrics[j];

			for (size_t k = 0; k < m->n_samples; k++)
				pgparam_float8(p, m->samples[k]);
		}
	pgparam_array_end(p);
}

/*
 * The probe's sections that change from one run of a host to the next:
 * fleetbench_probe_rest_keys() (schema/functions/20_ingest.sql), which
 * fleetbench_ingest_run() checks every split against.
 */
static const char *const probe_rest_keys[] = { "meta", "host", "steal",
					       "psi", "vmstat" };

#define N_REST (sizeof(probe_rest_keys) / sizeof(*probe_rest_keys))

static const int probe_json_flags = JSON_C_TO_STRING_PLAIN |
				    JSON_C_TO_STRING_NOSLASHESCAPE;

/*
 * The probe parts seen last (issue 37, the ingest rate). A part's text is
 * a function of the probe without its rest, and a fleet's probes share a
 * few parts (those of a kernel on an instance type), so a probe whose
 * packing without the rest equals one of these is given that part's text
 * instead of being walked and written again. Shared by the threads that
 * encode; a part packed larger than PART_SEEN_MAX is not kept, so the
 * cache holds at most PART_SEEN x (that + its text).
 */
#define PART_SEEN 8
#define PART_SEEN_MAX (32 * 1024)
static struct part_seen {
	uint8_t *packed;
	size_t len;
	char *text;
} parts_seen[PART_SEEN];
static size_t parts_next;
static pthread_mutex_t parts_lock = PTHREAD_MUTEX_INITIALIZER;

/* probe without its rest's sections, packed into a new buffer (*len) */
static uint8_t *pack_part(const Fleetbench__Probe *probe, size_t *len)
{
	Fleetbench__Probe bare = *probe;
	uint8_t *buf;

	for (size_t i = 0; i < N_REST; i++) {
		const ProtobufCFieldDescriptor *f =
			protobuf_c_message_descriptor_get_field_by_name(
				probe->base.descriptor, probe_rest_keys[i]);

		/* each a message (fleetbench.proto): unset is NULL */
		if (f && f->type == PROTOBUF_C_TYPE_MESSAGE)
			*(void **)((char *)&bare + f->offset) = NULL;
	}
	*len = protobuf_c_message_get_packed_size(&bare.base);
	buf = malloc(*len ? *len : 1);
	if (buf)
		protobuf_c_message_pack(&bare.base, buf);
	return buf;
}

/* The text of probe's part (free() it), from parts_seen or written anew;
 * NULL when out of memory. */
static char *part_text(const Fleetbench__Probe *probe)
{
	size_t len;
	_cleanup_free_ uint8_t *packed = pack_part(probe, &len);
	struct json_object *o;
	struct part_seen *s;
	char *text = NULL;

	if (!packed)
		return NULL;
	pthread_mutex_lock(&parts_lock);
	for (size_t i = 0; i < PART_SEEN && !text; i++) {
		s = &parts_seen[i];
		if (s->text && s->len == len && !memcmp(s->packed, packed, len))
			text = strdup(s->text);
	}
	pthread_mutex_unlock(&parts_lock);
	if (text)
		return text;
	o = pbjson_from_fields(&probe->base, probe_rest_keys, N_REST, false);
	if (!o)
		return NULL;
	text = strdup(json_object_to_json_string_ext(o, probe_json_flags));
	json_object_put(o);
	if (!text || len > PART_SEEN_MAX)
		return text;
	pthread_mutex_lock(&parts_lock);
	s = &parts_seen[parts_next++ % PART_SEEN];
	free(s->packed);
	free(s->text);
	s->text = strdup(text);
	s->packed = s->text ? packed : NULL;
	s->len = len;
	if (s->text)
		packed = NULL; /* kept */
	pthread_mutex_unlock(&parts_lock);
	return text;
}

/*
 * The probe (attribute probe): from an older agent the text the codec
 * validated (a JSON object within the depth limit), which PostgreSQL
 * parses and splits; for a typed probe NULL, and the probe is written
 * by pbjson (docs/probe.md's shape) in two, e->part and e->rest, which
 * enc_probe_in_two() writes as probe_part and probe_rest (035), so that
 * PostgreSQL parses only the small rest and finds the part by the digest
 * of its text.
 */
static void enc_probe(struct enc *e, const Fleetbench__Report *r)
{
	if (!r->probe) {
		pgparam_text(e->p, r->probe_json);
		return;
	}
	pgparam_text(e->p, NULL);
	e->rest = pbjson_from_fields(&r->probe->base, probe_rest_keys, N_REST,
				     true);
	e->part = e->rest ? part_text(r->probe) : NULL;
	if (!e->part)
		enc_oom(e, "the probe");
}

/* probe_part, probe_rest (035): the typed probe's two pieces, or NULL */
static void enc_probe_in_two(struct enc *e)
{
	if (!e->part || !e->rest) {
		pgparam_text(e->p, NULL);
		pgparam_text(e->p, NULL);
		return;
	}
	pgparam_text(e->p, e->part);
	pgparam_text(e->p, json_object_to_json_string_ext(e->rest,
							  probe_json_flags));
}

/* tag_keys, tag_values (021), NULL without tags, which the
 * function stores as jsonb_object(keys, values) */
static void enc_tags(struct enc *e, const Fleetbench__Report *r)
{
	if (!r->n_tags) {
		pgparam_null(e->p, PGPARAM_TEXT_ARRAY);
		pgparam_null(e->p, PGPARAM_TEXT_ARRAY);
		return;
	}
	pgparam_array_begin(e->p, PGPARAM_TEXT);
	for (size_t i = 0; i < r->n_tags; i++)
		pgparam_text(e->p, r->tags[i]->key);
	pgparam_array_end(e->p);
	pgparam_array_begin(e->p, PGPARAM_TEXT);
	for (size_t i = 0; i < r->n_tags; i++)
		pgparam_text(e->p, r->tags[i]->value);
	pgparam_array_end(e->p);
}

/* An array of n elements of type oid, element i written by write_expr
 * (which sees i). */
#define ENC_ARRAY(e, oid, n, write_expr)          \
	do {                                      \
		pgparam_array_begin((e)->p, oid); \
		for (size_t i = 0; i < (n); i++)  \
			write_expr;               \
		pgparam_array_end((e)->p);        \
	} while (0)

/* An array of one optional field per element (NULL where has_expr is
 * false), or NULL when no element has it. */
#define ENC_OPT_ARRAY(e, oid, n, has_expr, write_expr)                 \
	do {                                                           \
		bool any_ = false;                                     \
		for (size_t i = 0; i < (n); i++)                       \
			any_ |= (has_expr);                            \
		if (!any_)                                             \
			pgparam_null((e)->p, oid##_ARRAY);             \
		else                                                   \
			ENC_ARRAY(e, oid, n, if (has_expr) write_expr; \
				  else pgparam_null((e)->p, oid));     \
	} while (0)

/*
 * The targets (024): per comparison its target half-width, whether it
 * was reached and the rounds, each array NULL when no comparison has the
 * field (fixed repeats, an older agent).
 */
static void enc_targets(struct enc *e, const Fleetbench__Report *r)
{
	Fleetbench__Comparison *const *c = r->comparisons;
	size_t n = r->n_comparisons;

	ENC_OPT_ARRAY(e, PGPARAM_FLOAT8, n, c[i]->has_target_half_width,
		      pgparam_float8(e->p, c[i]->target_half_width));
	ENC_OPT_ARRAY(e, PGPARAM_BOOL, n, c[i]->has_target_reached,
		      pgparam_bool(e->p, c[i]->target_reached));
	ENC_OPT_ARRAY(e, PGPARAM_INT4, n, c[i]->has_rounds,
		      pgparam_int4(e->p, (int32_t)c[i]->rounds));
}

/* Window text field k of w (0: noisy_reason, 1: cpus). */
static const char *window_text(const Fleetbench__Window *w, int k)
{
	return k ? w->cpus : w->noisy_reason;
}

/* Per window, in run order as the w_ arrays, its text field k (024); NULL
 * when no window has it. */
static void enc_window_texts(struct enc *e, const Fleetbench__Report *r,
			     int k)
{
	bool any = false;

	for (size_t i = 0; i < r->n_benchmarks; i++)
		for (size_t j = 0; j < r->benchmarks[i]->n_windows; j++)
			any |= window_text(r->benchmarks[i]->windows[j], k) !=
			       NULL;
	if (!any) {
		pgparam_null(e->p, PGPARAM_TEXT_ARRAY);
		return;
	}
	pgparam_array_begin(e->p, PGPARAM_TEXT);
	for (size_t i = 0; i < r->n_benchmarks; i++)
		for (size_t j = 0; j < r->benchmarks[i]->n_windows; j++)
			pgparam_text(e->p, window_text(r->benchmarks[i]->windows[j],
						       k));
	pgparam_array_end(e->p);
}

/* Cost i of the report's costs and then its total. */
static const Fleetbench__Cost *cost_at(const Fleetbench__Report *r, size_t i)
{
	return i < r->n_costs ? r->costs[i] : r->cost_total;
}

/*
 * What the run cost its host (025, 026): one array per run_costs column,
 * element i for each benchmark's Cost and the total's last; all NULL
 * without costs (an older agent, a probe-only run).
 */
static void enc_costs(struct enc *e, const Fleetbench__Report *r)
{
	size_t n = r->n_costs + (r->cost_total != NULL);
	struct pgparam *p = e->p;

	if (!n) {
		static const unsigned types[] = {
			PGPARAM_TEXT_ARRAY,   PGPARAM_FLOAT8_ARRAY,
			PGPARAM_FLOAT8_ARRAY, PGPARAM_INT8_ARRAY,
			PGPARAM_INT8_ARRAY,   PGPARAM_FLOAT8_ARRAY,
			PGPARAM_INT8_ARRAY,
		};

		for (size_t i = 0; i < ARRAY_SIZE(types); i++)
			pgparam_null(p, types[i]);
		return;
	}
	ENC_ARRAY(e, PGPARAM_TEXT, n,
		  pgparam_text(p, cost_at(r, i)->benchmark));
	ENC_ARRAY(e, PGPARAM_FLOAT8, n,
		  pgparam_float8(p, cost_at(r, i)->wall_s));
	ENC_ARRAY(e, PGPARAM_FLOAT8, n,
		  pgparam_float8(p, cost_at(r, i)->cpu_s));
	ENC_ARRAY(e, PGPARAM_INT8, n,
		  enc_u64(e, "cost.peak_memory_bytes",
			  cost_at(r, i)->peak_memory_bytes));
	ENC_ARRAY(
		e, PGPARAM_INT8, n,
		enc_u64(e, "cost.written_bytes", cost_at(r, i)->written_bytes));
	ENC_ARRAY(e, PGPARAM_FLOAT8, n,
		  enc_float8(e, cost_at(r, i)->has_allowance_s,
			     cost_at(r, i)->allowance_s));
	ENC_ARRAY(
		e, PGPARAM_INT8, n,
		enc_int8(e, cost_at(r, i)->has_rounds, cost_at(r, i)->rounds));
}

int ingest_report_params(const Fleetbench__Report *r, struct pgparam *p,
			 char err[PG_ERR_LEN])
{
	struct enc e = {.p = p, .err = err};
	const Fleetbench__Host *h = r->host;
	const Fleetbench__Kernel *k = r->kernel;
	int ret, attrs;

	pgparam_reset(p);
	pgparam_record_begin(p);
	pgparam_uuid(p, r->run_id);
	pgparam_int4(p, (int32_t)r->schema_version);
	pgparam_text(p, r->agent_version);
	pgparam_int8(p, r->started_unix_ms);
	pgparam_int8(p, r->finished_unix_ms);
	pgparam_text(p, h->provider);
	pgparam_text(p, h->instance_type);
	pgparam_text(p, h->region);
	pgparam_text(p, h->provider_source);
	pgparam_text(p, h->instance_type_source);
	pgparam_text(p, h->region_source);
	pgparam_text(p, h->hostname);
	pgparam_text(p, h->machine_id);
	pgparam_text(p, k->release);
	pgparam_text(p, k->version);
	pgparam_text(p, k->cmdline);
	/* "" is how an old or probe-only agent leaves the profile out */
	pgparam_text(p, r->profile && *r->profile ? r->profile : NULL);
	enc_int8(&e, r->has_seed, r->seed);
	enc_shape(&e, r);
	enc_probe(&e, r);
	enc_report_caps(&e, r);
	enc_method(&e, r->method);
	enc_comparisons(&e, r);
	enc_variants(&e, r);
	enc_method_more(&e, r->method);
	enc_tags(&e, r);
	enc_targets(&e, r);
	enc_window_texts(&e, r, 0);
	enc_window_texts(&e, r, 1);
	enc_costs(&e, r);
	enc_probe_in_two(&e);
	enc_param_values(&e, r, true);
	pgparam_text(p, e.names);
	pgparam_text(p, e.kinds);
	free(e.names);
	free(e.kinds);
	free(e.part);
	json_object_put(e.rest);
	attrs = p->record_n;
	pgparam_record_end(p);
	ret = pgparam_finish(p);
	if (e.r < 0)
		return e.r;
	if (ret == -EINVAL) /* the only writer that can refuse: a run_id */
		snprintf(err, PG_ERR_LEN, "run_id: not a UUID");
	else if (ret == -E2BIG)
		snprintf(err, PG_ERR_LEN, "a value over 1 GiB");
	else if (ret < 0)
		snprintf(err, PG_ERR_LEN, "%s", strerror(-ret));
	if (ret == 0 && attrs != INGEST_ATTRS) {
		snprintf(err, PG_ERR_LEN, "%d attributes, expected %d", attrs,
			 INGEST_ATTRS);
		ret = -EPROTO;
	}
	return ret;
}
