/* SPDX-License-Identifier: MIT */
/* The serve loop: receive, validate, group-commit, then acknowledge. */
#include "ingest.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "admit.h"
#include "cleanup.h"
#include "clock.h"
#include "codec.h"
#include "fault.h"
#include "log.h"
#include "migrate.h"
#include "pg_batch.h"
#include "pbjson.h"
#include "stats.h"

/* Encoded parameter bytes one batch may hold (one batch more than there
 * are database connections is in memory, and libpq buffers a copy of each
 * one in flight): about 100 realistic reports, a few hundred small ones,
 * at least one of the largest (whose parameters take about as many bytes
 * as its 4 MiB message). */
#define BATCH_MAX_BYTES (4u << 20)
#define RECONNECT_MIN_MS 100
/* at most this long between attempts, so that storing resumes within a
 * few seconds of the database's return (docs/reliability.md, item 5) */
#define RECONNECT_MAX_MS 2000
/* a repeating failure is logged again after 10 s, 20 s, ... up to hourly */
#define COMPLAIN_MIN_MS 10000
#define COMPLAIN_MAX_MS 3600000
/* per kind of event (a rejected report, a lost Ack): 10 lines a minute */
#define RATE_WINDOW_MS 60000
#define RATE_BURST 10
#define IDENTITY_MAX 255 /* a ZeroMQ routing id */
#define WHO_LEN (LINK_KEY_LEN + 64)
#define RETRY_REASON "the database is unavailable: send again later"
#define RETRY_REFUSED \
	"not stored: the database refused another report of its batch; send again"

/* collectd's c_complain: a condition that persists is logged when it
 * starts, then at growing intervals, and once when it ends. */
struct complaint {
	int64_t next_ms;
	int64_t interval_ms;
	unsigned long suppressed;
	bool active;
};

/* A burst of distinct events (systemd's ratelimit). */
struct ratelimit {
	const char *what;
	int64_t window_ms;
	unsigned n;
	unsigned long suppressed;
};

/* After a batch at least this large, freed memory goes back to the
 * kernel once the collector has been idle TRIM_IDLE_MS (trim_if_idle). */
#define TRIM_AFTER 16
#define TRIM_IDLE_MS 500

struct item {
	uint8_t id[IDENTITY_MAX];
	size_t id_len;
	char run_id[37];
	char who[WHO_LEN]; /* the agent's key, or its address */
	/* fleetbench_ingest_run()'s parameters; empty once libpq has taken
	 * them (batch_handed) or the report is answered */
	struct pgparam params;
	bool db; /* valid: its answer depends on the database */
	Fleetbench__Ack__Status status; /* UNSPECIFIED: not decided */
	char reason[PG_ERR_LEN];
	bool ack; /* whether to answer at all */
	/* its bytes, let in until handed to libpq or answered (admit.h) */
	size_t charge;
};

struct stats {
	unsigned long received, committed, duplicate, rejected, retry_later,
		unacked, dropped, ack_lost;
};

/*
 * Reports received together. They take turns: one is stored by
 * PostgreSQL on each connection (in flight) while another fills up with
 * what arrives meanwhile, so that the collector's work overlaps the
 * database's.
 */
struct batch {
	struct item *items;
	struct pg_item *pg; /* the same reports, as pg_batch_send() takes */
	int n;
	/* items from the first whose parameters libpq has taken: freed,
	 * their bytes no longer let in (batch_handed) */
	int handed;
	size_t bytes; /* of encoded parameters */
	int64_t first_ms; /* when its first report came */
};

/* A connection to PostgreSQL and the batch it stores. */
struct conn {
	struct pg *pg;
	bool own; /* made here, freed here (the first is the caller's) */
	struct batch *flight; /* in PostgreSQL, or NULL */
	/* down since, next connection attempt */
	int64_t reconnect_ms;
	int64_t backoff_ms;
	struct complaint db_down;
};

struct ingest {
	const struct ingest_opts *o;
	void *sock;
	struct batch batches[INGEST_CONNECTIONS_MAX + 1];
	int n_batches;
	struct batch *filling;
	struct conn conns[INGEST_CONNECTIONS_MAX];
	int n_conns;
	struct stats stats;
	struct admit *admit;
	bool stop;
	bool trim_due; /* a large batch freed memory that is not trimmed yet */
	int64_t active_ms; /* when a report last came or a batch ended */
	struct ratelimit rl_reject, rl_ack, rl_drop, rl_retry, rl_batch,
		rl_offer;
};

static void complain(struct complaint *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void complain(struct complaint *c, const char *fmt, ...)
{
	int64_t now = mono_ms();
	char msg[1024];
	va_list ap;

	if (c->active && now < c->next_ms) {
		c->suppressed++;
		return;
	}
	c->interval_ms = !c->active ? COMPLAIN_MIN_MS :
		c->interval_ms * 2 > COMPLAIN_MAX_MS ? COMPLAIN_MAX_MS :
						       c->interval_ms * 2;
	c->next_ms = now + c->interval_ms;
	c->active = true;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->suppressed)
		log_error("%s (%lu similar messages suppressed)", msg,
			  c->suppressed);
	else
		log_error("%s", msg);
	c->suppressed = 0;
}

static void complain_release(struct complaint *c, const char *msg)
{
	if (!c->active)
		return;
	*c = (struct complaint){ 0 };
	log_info("%s", msg);
}

static void limited(struct ratelimit *rl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void limited(struct ratelimit *rl, const char *fmt, ...)
{
	int64_t now = mono_ms();
	va_list ap;
	char msg[1024];

	if (now - rl->window_ms >= RATE_WINDOW_MS) {
		if (rl->suppressed)
			log_warn("%lu more %s not logged in the last minute",
				 rl->suppressed, rl->what);
		rl->window_ms = now;
		rl->n = 0;
		rl->suppressed = 0;
	}
	if (rl->n >= RATE_BURST) {
		rl->suppressed++;
		return;
	}
	rl->n++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_warn("%s", msg);
}

/* ---- the parameters of fleetbench_ingest_run() ---- */

/* Encodes one report; r is the first error (-ERANGE: a value does not
 * fit its column, said in err). */
struct enc {
	struct pgparam *p;
	char *err;
	int r;
};

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

/* the types of parameters 21-38, NULL without capabilities */
static const unsigned caps_types[] = {
	PGPARAM_TEXT,	    PGPARAM_TEXT,	PGPARAM_TEXT,
	PGPARAM_INT8_ARRAY, PGPARAM_INT8_ARRAY, PGPARAM_INT8_ARRAY,
	PGPARAM_INT4,	    PGPARAM_TEXT,	PGPARAM_INT4,
	PGPARAM_TEXT,	    PGPARAM_INT4,	PGPARAM_TEXT_ARRAY,
	PGPARAM_TEXT_ARRAY, PGPARAM_INT4,	PGPARAM_INT8,
	PGPARAM_TEXT,	    PGPARAM_TEXT,	PGPARAM_TEXT,
};

/* and of 39-52, NULL without a method */
static const unsigned method_types[] = {
	PGPARAM_TEXT, PGPARAM_TEXT, PGPARAM_INT8, PGPARAM_INT8,
	PGPARAM_INT8, PGPARAM_INT8, PGPARAM_INT8, PGPARAM_INT8,
	PGPARAM_INT8, PGPARAM_INT8, PGPARAM_INT8, PGPARAM_INT8,
	PGPARAM_TEXT_ARRAY, PGPARAM_BOOL,
};

/* 20-38: Report.capabilities, or NULLs and caps_present false */
static void enc_caps(struct enc *e, const Fleetbench__Capabilities *c)
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
	enc_texts(e, c->io_uring_opcodes, c->n_io_uring_opcodes);
	enc_texts(e, c->io_uring_features, c->n_io_uring_features);
	if (c->has_vcpus && c->vcpus > INT32_MAX && !e->r) {
		e->r = -ERANGE;
		snprintf(e->err, PG_ERR_LEN,
			 "capabilities.vcpus: %" PRIu32 " does not fit an integer",
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

/* 39-52: Report.method, or NULLs (the run is keyed by its profile) */
static void enc_method(struct enc *e, const Fleetbench__Method *m)
{
	struct pgparam *p = e->p;

	if (!m) {
		for (size_t i = 0; i < ARRAY_SIZE(method_types); i++)
			pgparam_null(p, method_types[i]);
		return;
	}
	pgparam_text(p, m->key);
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

/* Comparison text field k (0-6: name, benchmark, metric, numerator,
 * denominator, method, reason). */
static const char *comparison_text(const Fleetbench__Comparison *c, int k)
{
	const char *const v[] = { c->name,	  c->benchmark, c->metric,
				  c->numerator,	  c->denominator, c->method,
				  c->reason };

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

/* 53-63: one element per comparison */
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

/* A parameter's kind and value as fleetbench_ingest_run() takes them:
 * v holds the text of a number (int: decimal, double: "%.17g", which
 * reads back as the same double). */
static const char *param_value(const Fleetbench__Param *pa, char kind[2],
			       char v[32])
{
	switch (pa->value_case) {
	case FLEETBENCH__PARAM__VALUE_INT_VALUE:
		kind[0] = 'i';
		snprintf(v, 32, "%" PRId64, pa->int_value);
		return v;
	case FLEETBENCH__PARAM__VALUE_STRING_VALUE:
		kind[0] = 's';
		return pa->string_value;
	case FLEETBENCH__PARAM__VALUE_DOUBLE_VALUE:
		kind[0] = 'd';
		snprintf(v, 32, "%.17g", pa->double_value);
		return v;
	case FLEETBENCH__PARAM__VALUE_BOOL_VALUE:
		kind[0] = 'b';
		return pa->bool_value ? "true" : "false";
	default: /* the codec refuses a parameter without a value */
		kind[0] = '\0';
		return NULL;
	}
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

/* 64-83: the variants, and their parameters, windows, metrics, samples */
static void enc_variants(struct enc *e, const Fleetbench__Report *r)
{
	struct pgparam *p = e->p;

	pgparam_array_begin(p, PGPARAM_TEXT);
	for (size_t i = 0; i < r->n_benchmarks; i++)
		pgparam_text(p, r->benchmarks[i]->benchmark);
	pgparam_array_end(p);
	pgparam_array_begin(p, PGPARAM_TEXT);
	for (size_t i = 0; i < r->n_benchmarks; i++)
		pgparam_text(p, r->benchmarks[i]->variant);
	pgparam_array_end(p);
	/* the codec refuses a variant both failed and skipped */
	pgparam_array_begin(p, PGPARAM_TEXT);
	for (size_t i = 0; i < r->n_benchmarks; i++)
		pgparam_text(p, r->benchmarks[i]->failure      ? "failed" :
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
	pgparam_array_begin(p, PGPARAM_TEXT);
	for (size_t i = 0; i < r->n_benchmarks; i++)
		for (size_t j = 0; j < r->benchmarks[i]->n_parameters; j++)
			pgparam_text(p, r->benchmarks[i]->parameters[j]->key);
	pgparam_array_end(p);
	for (int k = 0; k < 2; k++) {
		pgparam_array_begin(p, PGPARAM_TEXT);
		for (size_t i = 0; i < r->n_benchmarks; i++)
			for (size_t j = 0; j < r->benchmarks[i]->n_parameters;
			     j++) {
				char kind[2] = "", v[32];
				const char *value = param_value(
					r->benchmarks[i]->parameters[j], kind,
					v);

				pgparam_text(p, k == 0 ? (*kind ? kind : NULL) :
							 value);
			}
		pgparam_array_end(p);
	}

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
	pgparam_array_begin(p, PGPARAM_TEXT);
	for (size_t i = 0; i < r->n_benchmarks; i++)
		for (size_t j = 0; j < r->benchmarks[i]->n_metrics; j++)
			pgparam_text(p, r->benchmarks[i]->metrics[j]->metric);
	pgparam_array_end(p);
	pgparam_array_begin(p, PGPARAM_TEXT);
	for (size_t i = 0; i < r->n_benchmarks; i++)
		for (size_t j = 0; j < r->benchmarks[i]->n_metrics; j++)
			pgparam_text(p, r->benchmarks[i]->metrics[j]->unit);
	pgparam_array_end(p);
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
 * The probe as the JSON text PostgreSQL parses once into runs.probe: the
 * typed probe walked by pbjson (docs/probe.md's shape), or from an older
 * agent the text the codec validated (a JSON object within the depth
 * limit).
 */
static void enc_probe(struct enc *e, const Fleetbench__Report *r)
{
	struct json_object *o;

	if (!r->probe) {
		pgparam_text(e->p, r->probe_json);
		return;
	}
	o = pbjson_from_message(&r->probe->base);
	if (!o) {
		if (!e->r) {
			e->r = -ENOMEM;
			snprintf(e->err, PG_ERR_LEN, "out of memory for the probe");
		}
		pgparam_text(e->p, NULL);
		return;
	}
	pgparam_text(e->p, json_object_to_json_string_ext(
				   o, JSON_C_TO_STRING_PLAIN |
					      JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

int ingest_report_params(const Fleetbench__Report *r, struct pgparam *p,
			 char err[PG_ERR_LEN])
{
	struct enc e = { .p = p, .err = err };
	const Fleetbench__Host *h = r->host;
	const Fleetbench__Kernel *k = r->kernel;
	int ret;

	pgparam_reset(p);
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
	enc_probe(&e, r);
	enc_caps(&e, r->capabilities);
	enc_method(&e, r->method);
	enc_comparisons(&e, r);
	enc_variants(&e, r);
	/* 84, validated: the codec has checked what the SQL would check
	 * again (unique names, finite numbers), and the ends above are
	 * counted from the message */
	pgparam_bool(p, true);
	ret = pgparam_finish(p);
	if (e.r < 0)
		return e.r;
	if (ret == -EINVAL) /* the only writer that can refuse: a run_id */
		snprintf(err, PG_ERR_LEN, "run_id: not a UUID");
	else if (ret == -E2BIG)
		snprintf(err, PG_ERR_LEN, "a value over 1 GiB");
	else if (ret < 0)
		snprintf(err, PG_ERR_LEN, "%s", strerror(-ret));
	if (ret == 0 && p->n != INGEST_PARAMS) {
		snprintf(err, PG_ERR_LEN, "%d parameters, expected %d", p->n,
			 INGEST_PARAMS);
		ret = -EPROTO;
	}
	return ret;
}

/* ---- receiving ---- */

static void item_decide(struct item *it, Fleetbench__Ack__Status status,
			const char *reason)
{
	pgparam_release(&it->params);
	it->status = status;
	it->ack = true;
	snprintf(it->reason, sizeof(it->reason), "%s", reason ? reason : "");
}

static void item_who(struct item *it, zmq_msg_t *m)
{
	const char *key = zmq_msg_gets(m, "User-Id");
	const char *addr = zmq_msg_gets(m, "Peer-Address");

	snprintf(it->who, sizeof(it->who), "%s%s%s%s",
		 key && *key ? "key " : "", key && *key ? key : "",
		 key && *key ? " at " : "", addr ? addr : "unknown address");
}

/* Validates one payload frame and encodes fleetbench_ingest_run()'s
 * parameters, or decides the answer. */
static void item_parse(struct item *it, zmq_msg_t *m)
{
	Fleetbench__Report *rep = NULL;
	char err[CODEC_ERR_LEN > PG_ERR_LEN ? CODEC_ERR_LEN : PG_ERR_LEN];
	int r;

	r = codec_unpack_report(zmq_msg_data(m), zmq_msg_size(m), &rep, err);
	if (rep)
		snprintf(it->run_id, sizeof(it->run_id), "%s",
			 codec_uuid_valid(rep->run_id) ? rep->run_id : "");
	if (r == 0) {
		pgparam_init(&it->params);
		r = ingest_report_params(rep, &it->params, err);
	}
	codec_free_report(rep);
	if (r == -ENOMEM) /* the report may be fine: not refused for it */
		item_decide(it, FLEETBENCH__ACK__STATUS__RETRY_LATER,
			    "the collector is out of memory: send again later");
	else if (r < 0) /* invalid, or a value that does not fit its column */
		item_decide(it, FLEETBENCH__ACK__STATUS__REJECTED, err);
	else
		it->ack = it->db = true;
}

/* Sends an Ack to the peer of routing id id: 0 or -errno. */
static int ack_send(struct ingest *g, const uint8_t *id, size_t id_len,
		    const char *run_id, Fleetbench__Ack__Status status,
		    const char *reason)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;
	int r;

	r = codec_pack_ack(run_id, status, reason, &buf, &len);
	if (r == 0 && zmq_send(g->sock, id, id_len,
			       ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
		r = -errno;
	/* ROUTER sends the parts of one message all or nothing */
	if (r == 0 && zmq_send(g->sock, buf, len, ZMQ_DONTWAIT) < 0)
		r = -errno;
	return r;
}

/* ---- offers (admit.h) ---- */

/* An Offer: queued for a grant, or answered at once when it is malformed
 * or the queue is full. */
static void offer_receive(struct ingest *g, const struct item *it,
			  zmq_msg_t *m)
{
	struct admit_offer o = { .id_len = (uint8_t)it->id_len };
	char err[CODEC_ERR_LEN];
	int r;

	memcpy(o.id, it->id, it->id_len);
	r = codec_unpack_offer(zmq_msg_data(m), zmq_msg_size(m), o.run_id,
			       &o.bytes, err);
	if (r == 0)
		r = admit_offer(g->admit, &o);
	if (r == 0)
		return;
	if (r == -EBADMSG) {
		limited(&g->rl_offer, "rejected an offer from %s: %s", it->who,
			err);
		r = ack_send(g, it->id, it->id_len, "",
			     FLEETBENCH__ACK__STATUS__REJECTED, err);
	} else {
		snprintf(err, sizeof(err),
			 r == -ENOBUFS ?
				 "%zu offers wait already: send again later" :
				 "the collector is out of memory: send again later",
			 admit_waiting(g->admit));
		r = ack_send(g, it->id, it->id_len, o.run_id,
			     FLEETBENCH__ACK__STATUS__RETRY_LATER, err);
	}
	if (r < 0)
		g->stats.ack_lost++;
}

/* Grants waiting offers while there is room, lapsing old grants first. */
static void offers_grant(struct ingest *g)
{
	struct admit_offer o;
	int64_t now = mono_ms();

	admit_expire(g->admit, now);
	while (!g->stop && admit_next(g->admit, now, &o))
		/* EHOSTUNREACH: the agent has gone (it timed out and
		 * reconnected: its offer comes again) */
		if (ack_send(g, o.id, o.id_len, o.run_id,
			     FLEETBENCH__ACK__STATUS__GRANTED, NULL) < 0)
			admit_cancel(g->admit, &o);
}

/*
 * Receives one message if one is waiting. Returns 1 with *it filled, 2
 * for an offer (answered or queued here), 0 when none is, or -errno when
 * the socket failed.
 */
static int item_receive(struct ingest *g, struct item *it)
{
	zmq_msg_t id, payload, extra;
	size_t frames = 0;
	int more, r = 0;
	bool offer;

	*it = (struct item){ 0 };
	zmq_msg_init(&id);
	if (zmq_msg_recv(&id, g->sock, ZMQ_DONTWAIT) < 0) {
		r = errno == EAGAIN ? 0 : -errno;
		zmq_msg_close(&id);
		return r;
	}
	it->id_len = zmq_msg_size(&id);
	if (it->id_len > sizeof(it->id))
		it->id_len = sizeof(it->id);
	memcpy(it->id, zmq_msg_data(&id), it->id_len);
	more = zmq_msg_more(&id);
	zmq_msg_close(&id);

	/* the rest of a message is there as soon as its first frame is */
	zmq_msg_init(&payload);
	while (more) {
		zmq_msg_t *m = frames == 0 ? &payload : &extra;

		if (m == &extra)
			zmq_msg_init(&extra);
		if (zmq_msg_recv(m, g->sock, 0) < 0) {
			r = -errno;
			if (m == &extra)
				zmq_msg_close(&extra);
			goto out;
		}
		more = zmq_msg_more(m);
		if (m == &extra)
			zmq_msg_close(&extra);
		frames++;
	}
	item_who(it, &payload);
	offer = frames == 1 && codec_is_offer(zmq_msg_data(&payload),
					      zmq_msg_size(&payload));
	if (frames && !link_server_peer_allowed(g->o->server,
					   zmq_msg_gets(&payload, "User-Id"))) {
		/* its key left the allowlist since it connected: no answer
		 * (a REJECTED would make the agent throw the report away) */
		g->stats.received++;
		g->stats.dropped++;
		limited(&g->rl_drop,
			"dropped a message from %s: the key is no longer in the allowlist",
			it->who);
		r = offer ? 2 : 1;
		goto out;
	}
	if (offer) { /* counted as an offer, not as a message received */
		offer_receive(g, it, &payload);
		r = 2;
		goto out;
	}
	g->stats.received++;
	if (frames != 1) {
		char why[64];

		snprintf(why, sizeof(why),
			 "malformed framing: %zu frames, expected one", frames);
		item_decide(it, FLEETBENCH__ACK__STATUS__REJECTED, why);
	} else if (zmq_msg_size(&payload) == 0) {
		item_decide(it, FLEETBENCH__ACK__STATUS__REJECTED,
			    "malformed framing: empty message");
	} else {
		item_parse(it, &payload);
	}
	it->charge = zmq_msg_size(&payload);
	admit_received(g->admit, it->run_id, it->charge);
	r = 1;
out:
	zmq_msg_close(&payload);
	return r;
}

/*
 * Takes what is waiting into the filling batch, up to batch_max reports
 * or BATCH_MAX_BYTES of parameters, without waiting. Returns the number taken,
 * or -errno when the socket failed.
 */
static int batch_fill(struct ingest *g)
{
	const struct ingest_opts *o = g->o;
	struct batch *b = g->filling;
	int taken = 0;

	while (b->n < o->batch_max && b->bytes < BATCH_MAX_BYTES) {
		struct item *it = &b->items[b->n];
		int r = item_receive(g, it);

		if (r < 0)
			return taken ? taken : r;
		if (r == 0)
			break;
		if (r == 2) /* an offer: nothing to store */
			continue;
		/* a crash here loses received reports: their agents time
		 * out and send again */
		fault_point("collector-after-receive");
		b->bytes += pgparam_bytes(&it->params);
		if (!b->n)
			b->first_ms = mono_ms();
		b->n++;
		taken++;
	}
	return taken;
}

static bool batch_full(const struct ingest *g, const struct batch *b)
{
	return b->n >= g->o->batch_max || b->bytes >= BATCH_MAX_BYTES;
}

/* ---- the database ---- */

static void db_lost(struct conn *c, const char *err)
{
	pg_disconnect(c->pg);
	complain(&c->db_down, "PostgreSQL is unavailable: %s", err);
	/* the first attempt right away: a restarted server is back at once */
	c->backoff_ms = RECONNECT_MIN_MS;
	c->reconnect_ms = mono_ms();
}

/* Connects and checks the schema; on failure, schedules the next try. */
static bool db_connect(struct ingest *g, struct conn *c)
{
	const struct ingest_opts *o = g->o;
	char err[PG_ERR_LEN];
	int r;

	r = pg_connect(c->pg, err);
	if (r == 0) {
		r = pg_migrations_check(c->pg, o->migrations, o->n_migrations,
					err);
		if (r > 0)
			snprintf(err, sizeof(err),
				 "the database lacks %d migration(s) this collector needs: run 'fleetbench-collector migrate'",
				 r);
		if (r != 0)
			pg_disconnect(c->pg);
	}
	if (r == 0) {
		complain_release(&c->db_down,
				 "connected to PostgreSQL again: storing reports");
		c->backoff_ms = RECONNECT_MIN_MS;
		return true;
	}
	complain(&c->db_down,
		 "PostgreSQL is unavailable: %s (answering RETRY_LATER, next attempt in %lld ms)",
		 err, (long long)c->backoff_ms);
	c->reconnect_ms = mono_ms() + c->backoff_ms;
	c->backoff_ms = c->backoff_ms * 2 > RECONNECT_MAX_MS ?
				RECONNECT_MAX_MS :
				c->backoff_ms * 2;
	return false;
}

/* Nothing of the batch was stored: send again later, for why. */
static void batch_retry_all(struct batch *b, const char *why)
{
	for (int i = 0; i < b->n; i++) {
		struct item *it = &b->items[i];

		if (it->db && !it->status)
			item_decide(it, FLEETBENCH__ACK__STATUS__RETRY_LATER,
				    why);
	}
}

/*
 * Frees the parameters of b's reports that libpq has taken and lets their
 * bytes out of the admission budget: they are in libpq's output buffer or
 * sent. So a report costs the collector memory from its grant until it is
 * handed over, not until the commit, and the next grants need not wait
 * for the database (docs/performance.md). The price: a batch that
 * PostgreSQL rolls back cannot be sent again from here; its reports are
 * answered RETRY_LATER (batch_done).
 */
static void batch_handed(struct ingest *g, struct conn *c, struct batch *b)
{
	int handed = (int)pg_batch_handed(c->pg);

	for (; b->handed < handed && b->handed < b->n; b->handed++) {
		struct item *it = &b->items[b->handed];

		pgparam_release(&it->params);
		admit_release(g->admit, it->charge);
		it->charge = 0;
	}
}

/* Hands the batch's undecided reports to PostgreSQL; those it cannot
 * take are decided at once. Returns whether the batch is in flight. */
static bool batch_send(struct ingest *g, struct conn *c, struct batch *b)
{
	struct pg *pg = c->pg;
	char err[PG_ERR_LEN];
	int r;

	for (int i = 0; i < b->n; i++) {
		struct item *it = &b->items[i];

		/* undecided and valid: a dropped message has neither status
		 * nor parameters */
		b->pg[i] = (struct pg_item){
			.params = it->db && !it->status ? &it->params : NULL,
		};
	}
	if (!pg_connected(pg) &&
	    (mono_ms() < c->reconnect_ms || !db_connect(g, c))) {
		batch_retry_all(b, RETRY_REASON);
		return false;
	}
	r = pg_batch_send(pg, b->pg, (size_t)b->n, err);
	if (r == -ENODATA)
		return false;
	if (r == -EAGAIN)
		limited(&g->rl_batch, "cannot store a batch of %d reports: %s",
			b->n, err);
	else if (r < 0)
		db_lost(c, err);
	if (r < 0) {
		batch_retry_all(b, RETRY_REASON);
		return false;
	}
	batch_handed(g, c, b);
	/* a crash here leaves the server a batch whose Sync may or may not
	 * have arrived: committed or not, nobody is answered */
	fault_point("collector-after-sync");
	return true;
}

/*
 * The batch in flight has ended with r (pg_batch_step()). Decides its
 * reports: only a commit that returned makes COMMITTED and DUPLICATE
 * answers true; one whose outcome is unknown leaves them unanswered (the
 * agents send again and get DUPLICATE). A report at fault is rejected and
 * the rest answered RETRY_LATER (batch_handed).
 */
static void batch_done(struct ingest *g, struct conn *c, struct batch *b,
		       int r, const char *err)
{
	int pending = 0;

	for (int i = 0; i < b->n; i++)
		pending += b->pg[i].params != NULL;
	if (r == 1) {
		for (int i = 0; i < b->n; i++) {
			struct item *it = &b->items[i];

			if (!b->pg[i].params)
				continue;
			it->status = b->pg[i].result == PG_ITEM_STORED ?
					     FLEETBENCH__ACK__STATUS__COMMITTED :
					     FLEETBENCH__ACK__STATUS__DUPLICATE;
		}
		/* a crash here leaves stored reports unanswered: sent again,
		 * DUPLICATE (tests/reliability/test_commit_ack.sh) */
		fault_point("collector-after-commit");
		return;
	}
	if (r == -EINVAL) {
		/* nothing committed: reject the culprit; the rest were handed
		 * over and freed, so their agents send them again */
		for (int i = 0; i < b->n; i++)
			if (b->pg[i].params &&
			    b->pg[i].result == PG_ITEM_INVALID)
				item_decide(&b->items[i],
					    FLEETBENCH__ACK__STATUS__REJECTED,
					    b->pg[i].err);
		batch_retry_all(b, RETRY_REFUSED);
		return;
	}
	if (r == -EAGAIN) {
		for (int i = 0; i < b->n; i++)
			if (b->pg[i].params &&
			    b->pg[i].result == PG_ITEM_FAILED)
				limited(&g->rl_retry,
					"report %s from %s not stored, answering RETRY_LATER: %s",
					b->items[i].run_id, b->items[i].who,
					b->pg[i].err);
		limited(&g->rl_batch, "a batch of %d reports was rolled back: %s",
			pending, err);
		batch_retry_all(b, RETRY_REASON);
		return;
	}
	if (!pg_batch_unknown(c->pg)) {
		db_lost(c, err);
		batch_retry_all(b, RETRY_REASON);
		return;
	}
	/* no Ack for what it may have stored */
	for (int i = 0; i < b->n; i++) {
		struct item *it = &b->items[i];

		if (b->pg[i].params) {
			pgparam_release(&it->params);
			it->ack = false;
		}
	}
	g->stats.unacked += (unsigned long)pending;
	log_error("%s: %d reports left unacknowledged (their agents will send them again)",
		  err, pending);
	db_lost(c, err);
}

/* ---- answering ---- */

static void item_answer(struct ingest *g, struct item *it)
{
	int r;

	switch (it->status) {
	case FLEETBENCH__ACK__STATUS__COMMITTED:
		g->stats.committed++;
		break;
	case FLEETBENCH__ACK__STATUS__DUPLICATE:
		g->stats.duplicate++;
		break;
	case FLEETBENCH__ACK__STATUS__REJECTED:
		g->stats.rejected++;
		limited(&g->rl_reject, "rejected report %s from %s: %s",
			*it->run_id ? it->run_id : "(no run id)", it->who,
			it->reason);
		break;
	default:
		g->stats.retry_later++;
		break;
	}
	r = ack_send(g, it->id, it->id_len, it->run_id, it->status,
		     *it->reason ? it->reason : NULL);
	if (r < 0) {
		g->stats.ack_lost++;
		limited(&g->rl_ack, "cannot answer report %s to %s: %s",
			*it->run_id ? it->run_id : "(no run id)", it->who,
			r == -EHOSTUNREACH ? "the agent has gone" :
					     zmq_strerror(-r));
	}
}

static void batch_answer(struct ingest *g, struct batch *b)
{
	int n = b->n;

	for (int i = 0; i < n; i++) {
		struct item *it = &b->items[i];

		if (it->ack)
			item_answer(g, it);
		pgparam_release(&it->params);
		admit_release(g->admit, it->charge);
		it->charge = 0;
	}
	b->n = 0;
	b->handed = 0;
	b->bytes = 0;
	g->active_ms = mono_ms();
	if (n >= TRIM_AFTER)
		g->trim_due = true;
}

/* ---- signals ---- */

static void reload_allowlist(struct ingest *g)
{
	const struct ingest_opts *o = g->o;
	char err[LINK_ERR_LEN];
	struct link_allowlist *a;

	if (!o->allowlist) {
		log_info("SIGHUP: no allowlist to reload in plaintext mode");
		return;
	}
	a = link_allowlist_load(o->allowlist, err);
	if (!a) {
		log_error("cannot reload the allowlist, keeping the current one: %s",
			  err);
		return;
	}
	log_info("reloaded the allowlist '%s': %zu agent keys", o->allowlist,
		 link_allowlist_count(a));
	link_server_set_allowlist(o->server, a);
}

static void log_stats(const struct ingest *g)
{
	const struct stats *s = &g->stats;
	const struct admit_stats *a = admit_stats(g->admit);

	log_info("messages received %lu: committed %lu, duplicate %lu, rejected %lu, retry later %lu, unacknowledged (commit unknown) %lu, dropped %lu, answers lost %lu; peers refused %lu; offers %lu: granted %lu, lapsed %lu, refused (queue full) %lu, most waiting %zu, most KiB let in %zu",
		 s->received, s->committed, s->duplicate, s->rejected,
		 s->retry_later, s->unacked, s->dropped, s->ack_lost,
		 link_server_refused(g->o->server), a->offers, a->granted,
		 a->lapsed, a->queue_full, a->queue_peak, a->held_peak >> 10);
}

static void signals_read(struct ingest *g)
{
	struct signalfd_siginfo si;

	while (read(g->o->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			reload_allowlist(g);
			log_stats(g);
		} else {
			log_info("%s: stopping", strsignal((int)si.ssi_signo));
			g->stop = true;
		}
	}
}

/* ---- the loop ---- */

/* A connected connection without a batch in flight; while none is
 * connected, one that is not (sending on it answers RETRY_LATER, or
 * reconnects); NULL while every connected one has a batch. */
static struct conn *conn_free(struct ingest *g)
{
	struct conn *down = NULL;
	bool up = false;

	for (int i = 0; i < g->n_conns; i++) {
		struct conn *c = &g->conns[i];

		if (pg_connected(c->pg)) {
			up = true;
			if (!c->flight)
				return c;
		} else if (!c->flight && !down) {
			down = c;
		}
	}
	return up ? NULL : down;
}

static bool in_flight(const struct ingest *g, const struct batch *b)
{
	for (int i = 0; i < g->n_conns; i++)
		if (g->conns[i].flight == b)
			return true;
	return false;
}

static bool any_flight(const struct ingest *g)
{
	for (int i = 0; i < g->n_conns; i++)
		if (g->conns[i].flight)
			return true;
	return false;
}

static bool idle(const struct ingest *g)
{
	return !any_flight(g) && !g->filling->n;
}

/*
 * A burst of large reports leaves freed heap that glibc keeps; it goes
 * back to the kernel once the collector has been idle TRIM_IDLE_MS, so an
 * idle collector's RSS returns to its baseline. Not after every batch:
 * under load malloc_trim()'s madvise (a TLB shootdown on every CPU) and
 * the page faults that follow were a quarter of the collector's CPU
 * (docs/performance.md).
 */
static void trim_if_idle(struct ingest *g)
{
	if (g->trim_due && idle(g) &&
	    mono_ms() - g->active_ms >= TRIM_IDLE_MS) {
		malloc_trim(0);
		g->trim_due = false;
	}
}

/* Sends the filling batch if it is time: a connection is free and the
 * batch is full, has waited batch_wait_ms, or now is true. */
static void batch_start(struct ingest *g, bool now)
{
	struct batch *b = g->filling;
	struct conn *c;

	if (!b->n)
		return;
	c = conn_free(g);
	if (!c)
		return;
	if (!now && !batch_full(g, b) &&
	    mono_ms() - b->first_ms < g->o->batch_wait_ms)
		return;
	/* a batch neither filling nor in flight: there is one more batch
	 * than connections */
	for (int i = 0; i < g->n_batches; i++) {
		struct batch *n = &g->batches[i];

		if (n != b && !in_flight(g, n)) {
			g->filling = n;
			break;
		}
	}
	if (batch_send(g, c, b))
		c->flight = b;
	else
		batch_answer(g, b);
}

/* Moves the batch in flight on c; answers it once it has ended. */
static void batch_step(struct ingest *g, struct conn *c)
{
	struct batch *b = c->flight;
	char err[PG_ERR_LEN];
	int r = pg_batch_step(c->pg, err);

	if (r == 0) {
		batch_handed(g, c, b);
		return;
	}
	batch_done(g, c, b, r, err);
	c->flight = NULL;
	batch_answer(g, b);
}

static int batches_init(struct ingest *g)
{
	const struct ingest_opts *o = g->o;

	g->n_conns = o->connections < 1 ? 1 : o->connections;
	if (g->n_conns > INGEST_CONNECTIONS_MAX)
		return -EINVAL;
	g->n_batches = g->n_conns + 1;
	for (int i = 0; i < g->n_conns; i++) {
		struct conn *c = &g->conns[i];

		c->backoff_ms = RECONNECT_MIN_MS;
		if (i == 0) {
			c->pg = o->pg;
			continue;
		}
		/* connected by the loop, checked as after an outage */
		c->pg = pg_new(o->dsn);
		if (!c->pg)
			return -ENOMEM;
		c->own = true;
	}
	for (int i = 0; i < g->n_batches; i++) {
		struct batch *b = &g->batches[i];

		b->items = calloc((size_t)o->batch_max, sizeof(*b->items));
		b->pg = calloc((size_t)o->batch_max, sizeof(*b->pg));
		if (!b->items || !b->pg)
			return -ENOMEM;
	}
	g->filling = &g->batches[0];
	return 0;
}

static void batches_release(struct ingest *g)
{
	for (int i = 0; i < g->n_batches; i++) {
		free(g->batches[i].items);
		free(g->batches[i].pg);
	}
	for (int i = 0; i < g->n_conns; i++)
		if (g->conns[i].own)
			pg_free(g->conns[i].pg);
}

/* Lowers *t (ms, -1: no deadline yet) to the wait until deadline_ms, 0 if
 * it has passed. */
static void sooner(int64_t *t, int64_t deadline_ms, int64_t now)
{
	int64_t left = deadline_ms > now ? deadline_ms - now : 0;

	if (*t < 0 || left < *t)
		*t = left;
}

/* The poll timeout in ms (-1: none): the filling batch's wait for more
 * while a connection is free, the next reconnection attempt, or the trim
 * of an idle collector. */
static long poll_timeout(struct ingest *g)
{
	const struct ingest_opts *o = g->o;
	int64_t now = mono_ms(), t = -1;

	if (g->stop)
		return any_flight(g) ? 100 : 0;
	if (g->filling->n && conn_free(g))
		sooner(&t, g->filling->first_ms + o->batch_wait_ms, now);
	for (int i = 0; i < g->n_conns; i++)
		if (!pg_connected(g->conns[i].pg))
			sooner(&t, g->conns[i].reconnect_ms, now);
	if (g->trim_due && idle(g))
		sooner(&t, g->active_ms + TRIM_IDLE_MS, now);
	if (admit_waiting(g->admit)) {
		int64_t lapse = admit_lapse_next(g->admit);

		if (lapse >= 0)
			sooner(&t, lapse, now);
	}
	return (long)t;
}

int ingest_run(const struct ingest_opts *o)
{
	struct ingest g = {
		.o = o,
		.sock = link_server_socket(o->server),
		.rl_reject = { .what = "rejected reports" },
		.rl_ack = { .what = "lost answers" },
		.rl_drop = { .what = "dropped messages" },
		.rl_retry = { .what = "reports answered RETRY_LATER" },
		.rl_batch = { .what = "failed batches" },
		.rl_offer = { .what = "rejected offers" },
	};
	int ret = 0, r;

	g.admit = admit_new(o->admit_bytes);
	r = g.admit ? batches_init(&g) : -ENOMEM;
	if (r < 0) {
		batches_release(&g);
		admit_free(g.admit);
		return r;
	}
	/* After SIGTERM: receive nothing more, store and answer what is in
	 * hand, then stop. */
	while (!g.stop || !idle(&g)) {
		zmq_pollitem_t pi[2 + INGEST_CONNECTIONS_MAX] = {
			{ NULL, o->sigfd, ZMQ_POLLIN, 0 },
			{ g.sock, 0,
			  !g.stop && !batch_full(&g, g.filling) ? ZMQ_POLLIN : 0,
			  0 },
		};
		int at[INGEST_CONNECTIONS_MAX]; /* each one's item, or -1 */
		int np = 2;

		for (int i = 0; i < g.n_conns; i++) {
			struct conn *c = &g.conns[i];
			int dbfd = pg_socket(c->pg);

			at[i] = -1;
			if (dbfd < 0)
				continue;
			at[i] = np;
			pi[np] = (zmq_pollitem_t){ NULL, dbfd, ZMQ_POLLIN, 0 };
			if (c->flight && (pg_batch_events(c->pg) & POLLOUT))
				pi[np].events |= ZMQ_POLLOUT;
			np++;
		}
		if (zmq_poll(pi, np, poll_timeout(&g)) < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			log_error("cannot poll the socket: %s", zmq_strerror(errno));
			break;
		}
		if (pi[0].revents & ZMQ_POLLIN)
			signals_read(&g);
		for (int i = 0; i < g.n_conns; i++) {
			struct conn *c = &g.conns[i];
			short revents = at[i] < 0 ? 0 : pi[at[i]].revents;

			if (c->flight) {
				if (pg_socket(c->pg) < 0 || revents || g.stop)
					batch_step(&g, c);
			} else if (revents) {
				char err[PG_ERR_LEN];

				if (pg_poll(c->pg, err) < 0)
					db_lost(c, err);
			}
			if (!pg_connected(c->pg) && mono_ms() >= c->reconnect_ms)
				db_connect(&g, c);
		}
		if (pi[1].revents & ZMQ_POLLIN) {
			int n = batch_fill(&g);

			if (n < 0 && n != -EINTR && n != -EAGAIN) {
				ret = n;
				log_error("cannot receive: %s", zmq_strerror(-n));
				break;
			}
			if (n > 0)
				g.active_ms = mono_ms();
		}
		batch_start(&g, g.stop);
		offers_grant(&g);
		trim_if_idle(&g);
	}
	log_stats(&g);
	batches_release(&g);
	admit_free(g.admit);
	return ret;
}
