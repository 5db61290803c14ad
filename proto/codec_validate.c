/* SPDX-License-Identifier: MIT */
/*
 * A Report's own rules (docs/wire.md), past what the generic walk of
 * codec_walk.c checks: ids, times, the host, probe_json, benchmarks and
 * their parameters, metrics and windows, the method and the comparisons.
 * The capabilities' rules are in codec_caps.c.
 */
#include "codec.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "cleanup.h"
#include "codec_internal.h"
#include "probe_derive.h"


static int check_json_value(struct json_object *o, char err[CODEC_ERR_LEN])
{
	switch (json_object_get_type(o)) {
	case json_type_double:
		/* json-c reads NaN and Infinity; JSON and jsonb do not */
		if (!isfinite(json_object_get_double(o)))
			return codec_invalid(err,
					     "probe_json: NaN or Infinity is not JSON");
		return 0;
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(o); i++) {
			int r = check_json_value(
				json_object_array_get_idx(o, i), err);

			if (r < 0)
				return r;
		}
		return 0;
	case json_type_object: {
		struct json_object_iterator it = json_object_iter_begin(o);
		struct json_object_iterator end = json_object_iter_end(o);

		for (; !json_object_iter_equal(&it, &end);
		     json_object_iter_next(&it)) {
			struct json_object *v = json_object_iter_peek_value(&it);
			int r = check_json_value(v, err);

			if (r < 0)
				return r;
		}
		return 0;
	}
	default:
		return 0;
	}
}

/*
 * Whether JSON text holds the escape \u0000, which PostgreSQL's jsonb
 * refuses and json-c would hide in a key. A backslash that is itself
 * escaped ("\\u0000" in the text) starts no escape: the string holds a
 * backslash and "u0000", which is data like any other.
 */
bool codec_json_nul_escape(const char *s, size_t len)
{
	const char *p = s, *end = s + len;

	while ((p = memmem(p, (size_t)(end - p), "\\u0000", 6))) {
		size_t before = 0;

		while (p - before > s && p[-1 - (ptrdiff_t)before] == '\\')
			before++;
		if (before % 2 == 0)
			return true;
		p++;
	}
	return false;
}

static int check_probe_json(const char *s, char err[CODEC_ERR_LEN])
{
	size_t len = strlen(s);
	struct json_tokener *tok;
	struct json_object *o;
	enum json_tokener_error e;
	size_t end;
	int r;

	if (codec_json_nul_escape(s, len))
		return codec_invalid(err, "probe_json: holds the escape \\u0000");
	/* json-c counts the scalar inside the innermost container too */
	tok = json_tokener_new_ex(CODEC_MAX_JSON_DEPTH + 1);
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	/* the terminating NUL ends a top-level number */
	o = json_tokener_parse_ex(tok, s, (int)len + 1);
	e = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!o && e == json_tokener_success)
		return codec_invalid(err, "probe_json: a JSON null, not an object");
	if (!o) {
		if (e == json_tokener_error_depth)
			return codec_invalid(err,
					     "probe_json: nested deeper than %d levels",
					     CODEC_MAX_JSON_DEPTH);
		return codec_invalid(err, "probe_json: not JSON (%s at byte %zu)",
				     json_tokener_error_desc(e), end);
	}
	if (end != len)
		r = codec_invalid(err, "probe_json: trailing data at byte %zu", end);
	else if (!json_object_is_type(o, json_type_object))
		r = codec_invalid(err, "probe_json: a JSON %s, not an object",
				  json_type_to_name(json_object_get_type(o)));
	else
		r = check_json_value(o, err);
	json_object_put(o);
	return r;
}

static int check_time(const char *name, int64_t t, int64_t now_ms,
		      char err[CODEC_ERR_LEN])
{
	int64_t latest = now_ms > INT64_MAX - CODEC_MAX_FUTURE_MS ?
				 INT64_MAX :
				 now_ms + CODEC_MAX_FUTURE_MS;

	if (t < CODEC_MIN_TIME_MS)
		return codec_invalid(err, "%s: %lld is before 2020-01-01", name,
				     (long long)t);
	if (t > latest)
		return codec_invalid(err,
				     "%s: %lld is more than a day in the future",
				     name, (long long)t);
	return 0;
}

static int check_host(const Fleetbench__Host *h, char err[CODEC_ERR_LEN])
{
	static const char *const sources[] = { "flag", "config", "dmi",
					       "none" };
	const struct {
		const char *name, *value;
	} src[] = {
		{ "host.provider_source", h->provider_source },
		{ "host.instance_type_source", h->instance_type_source },
		{ "host.region_source", h->region_source },
	};
	const struct {
		const char *name, *value;
	} labels[] = {
		{ "host.provider", h->provider },
		{ "host.instance_type", h->instance_type },
		{ "host.region", h->region },
		{ "host.hostname", h->hostname },
	};
	const char *id = h->machine_id;

	if (strlen(id) != 32 || strspn(id, "0123456789abcdef") != 32)
		return codec_invalid(err,
				     "host.machine_id: not 32 lowercase hex digits");
	/* what tables print: no byte that acts on a terminal (one rule
	 * with the tags') */
	for (size_t i = 0; i < ARRAY_SIZE(labels); i++) {
		ssize_t at = labels[i].value ?
				     codec_control_at(labels[i].value,
						      strlen(labels[i].value)) :
				     -1;

		if (at >= 0)
			return codec_invalid(err,
					     "%s: holds a control character (byte %zd)",
					     labels[i].name, at);
	}
	for (size_t i = 0; i < ARRAY_SIZE(src); i++) {
		bool ok = !src[i].value || !*src[i].value;

		for (size_t j = 0; !ok && j < ARRAY_SIZE(sources); j++)
			ok = !strcmp(src[i].value, sources[j]);
		if (!ok)
			return codec_invalid(err,
					     "%s: not one of flag, config, dmi, none",
					     src[i].name);
	}
	return 0;
}

/*
 * An int parameter that names a size, a duration or a count cannot be
 * negative; others (counter deltas such as fill_*) can.
 */
static bool param_nonnegative(const char *key)
{
	static const char *const names[] = { "bytes", "threads", "iodepth",
					     "repeats" };
	static const char *const suffixes[] = { "_bytes", "_ms", "_count" };
	size_t len = strlen(key);

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcmp(key, names[i]))
			return true;
	for (size_t i = 0; i < ARRAY_SIZE(suffixes); i++) {
		size_t n = strlen(suffixes[i]);

		if (len > n && !strcmp(key + len - n, suffixes[i]))
			return true;
	}
	return false;
}

_Static_assert(CODEC_MAX_PARAMS <= CODEC_NAMES_HASHED &&
		       CODEC_MAX_METRICS <= CODEC_NAMES_HASHED,
	       "a benchmark's names fit param_repeated()'s array");

/* The index of b's first parameter (names: its metric) named as one
 * before it, with that one's in *earlier; -1 when none is. */
static ssize_t param_repeated(const Fleetbench__Benchmark *b, bool metrics,
			      size_t *earlier)
{
	const char *names[CODEC_NAMES_HASHED];
	size_t n = metrics ? b->n_metrics : b->n_parameters;

	if (n > CODEC_NAMES_HASHED) /* the walk refused it before */
		return -1;
	for (size_t i = 0; i < n; i++)
		names[i] = metrics ? b->metrics[i]->metric :
				     b->parameters[i]->key;
	return codec_name_repeated(names, n, earlier);
}

static int check_params(const Fleetbench__Benchmark *b, size_t bi,
			char err[CODEC_ERR_LEN])
{
	size_t earlier = 0;
	ssize_t again = param_repeated(b, false, &earlier);

	for (size_t i = 0; i < b->n_parameters; i++) {
		const Fleetbench__Param *p = b->parameters[i];

		if (p->value_case == FLEETBENCH__PARAM__VALUE__NOT_SET)
			return codec_invalid(err,
					     "benchmarks[%zu].parameters[%zu]: no value",
					     bi, i);
		if ((ssize_t)i == again)
			return codec_invalid(err,
					     "benchmarks[%zu].parameters[%zu].key: same as parameters[%zu]",
					     bi, i, earlier);
		if (p->value_case == FLEETBENCH__PARAM__VALUE_INT_VALUE &&
		    p->int_value < 0 && param_nonnegative(p->key))
			return codec_invalid(err,
					     "benchmarks[%zu].parameters[%zu].int_value: %lld is negative (a size, duration or count)",
					     bi, i, (long long)p->int_value);
	}
	return 0;
}

/*
 * Every metric's samples within proto/bounds.h, sample k against the wall
 * time of window k (the repeat it was measured in), so that a figure that
 * cannot be true is refused with the benchmark, variant and metric named.
 */
static int check_metrics(const Fleetbench__Benchmark *b, size_t bi,
			 char err[CODEC_ERR_LEN])
{
	_cleanup_free_ double *wall = NULL;
	char why[CODEC_ERR_LEN];
	size_t earlier = 0;
	ssize_t again = param_repeated(b, true, &earlier);

	if (again >= 0)
		return codec_invalid(err,
				     "benchmarks[%zu].metrics[%zd].metric: same as metrics[%zu]",
				     bi, again, earlier);
	if (b->n_metrics && b->n_windows) {
		wall = malloc(b->n_windows * sizeof(*wall));
		if (!wall)
			return -ENOMEM;
		/* NaN: a window without wall_s bounds nothing */
		for (size_t k = 0; k < b->n_windows; k++)
			wall[k] = b->windows[k]->has_wall_s ?
					  b->windows[k]->wall_s :
					  NAN;
	}
	for (size_t i = 0; i < b->n_metrics; i++) {
		const Fleetbench__Metric *m = b->metrics[i];

		if (bounds_check_metric(m->metric, m->unit, m->samples,
					m->n_samples, wall,
					wall ? b->n_windows : 0, why,
					sizeof(why)) < 0)
			return codec_invalid(err, "benchmarks[%zu] %s/%s: %s", bi,
					     b->benchmark, b->variant, why);
	}
	return 0;
}

/*
 * A variant is ok, skipped (skip_reason) or failed (failure), never both
 * of the last; a failed one measured nothing, so it carries no metrics
 * and no windows. A skipped one may (agents before the failure field
 * could skip a variant after its first repeats).
 */
static int check_status(const Fleetbench__Benchmark *b, size_t bi,
			char err[CODEC_ERR_LEN])
{
	if (!b->failure)
		return 0;
	if (!*b->failure)
		return codec_invalid(err,
				     "benchmarks[%zu].failure: empty (a failure says what failed)",
				     bi);
	if (b->skip_reason)
		return codec_invalid(err,
				     "benchmarks[%zu] %s/%s: both failure and skip_reason (a variant fails or is skipped)",
				     bi, b->benchmark, b->variant);
	if (b->n_metrics || b->n_windows)
		return codec_invalid(err,
				     "benchmarks[%zu] %s/%s: failed, yet carries %zu metrics and %zu windows (a failed variant carries none)",
				     bi, b->benchmark, b->variant, b->n_metrics,
				     b->n_windows);
	return 0;
}

/* Bytes of Window.noisy_reason: the agent's longest, every threshold
 * passed, is under 150 */
#define WINDOW_MAX_REASON 256

/* A pressure share of a window, in percent: the agent's interval holds
 * the kernel's, so it is never above 100 (docs/bench.md). */
static const char *psi_out_of_range(const Fleetbench__Window *w, double *x)
{
	const struct {
		protobuf_c_boolean has;
		double v;
		const char *name;
	} psi[] = {
		{ w->has_psi_cpu_some_pct, w->psi_cpu_some_pct, "psi_cpu_some_pct" },
		{ w->has_psi_cpu_full_pct, w->psi_cpu_full_pct, "psi_cpu_full_pct" },
		{ w->has_psi_io_some_pct, w->psi_io_some_pct, "psi_io_some_pct" },
		{ w->has_psi_io_full_pct, w->psi_io_full_pct, "psi_io_full_pct" },
		{ w->has_psi_memory_some_pct, w->psi_memory_some_pct,
		  "psi_memory_some_pct" },
		{ w->has_psi_memory_full_pct, w->psi_memory_full_pct,
		  "psi_memory_full_pct" },
	};

	for (size_t i = 0; i < sizeof(psi) / sizeof(psi[0]); i++)
		if (psi[i].has && !(psi[i].v >= 0 && psi[i].v <= 100)) {
			*x = psi[i].v;
			return psi[i].name;
		}
	return NULL;
}

/* Window.noisy_reason only on a noisy window, 1 to WINDOW_MAX_REASON
 * bytes; Window.cpus "N" or "N,M,..." */
static int check_window_text(const Fleetbench__Window *w, size_t bi, size_t i,
			     char err[CODEC_ERR_LEN])
{
	if (w->noisy_reason) {
		size_t len = strlen(w->noisy_reason);

		if (!w->has_noisy || !w->noisy)
			return codec_invalid(err,
					     "benchmarks[%zu].windows[%zu].noisy_reason: set on a window that is not noisy",
					     bi, i);
		if (!len || len > WINDOW_MAX_REASON)
			return codec_invalid(err,
					     "benchmarks[%zu].windows[%zu].noisy_reason: %zu bytes, limit 1 to %d",
					     bi, i, len, WINDOW_MAX_REASON);
	}
	if (w->cpus) {
		const char *c = w->cpus;
		bool ok = *c >= '0' && *c <= '9';

		for (; *c && ok; c++)
			ok = (*c >= '0' && *c <= '9') ||
			     (*c == ',' && c[1] >= '0' && c[1] <= '9');
		if (!ok)
			return codec_invalid(err,
					     "benchmarks[%zu].windows[%zu].cpus: not a list of vCPU numbers",
					     bi, i);
	}
	return 0;
}

static int check_windows(const Fleetbench__Benchmark *b, size_t bi,
			 char err[CODEC_ERR_LEN])
{
	for (size_t i = 0; i < b->n_windows; i++) {
		const Fleetbench__Window *w = b->windows[i];
		const char *bad = NULL;
		double x = 0;
		int r;

		if (w->has_steal_pct &&
		    (w->steal_pct < 0 || w->steal_pct > 100))
			bad = "steal_pct", x = w->steal_pct;
		else if (w->has_loadavg1 && w->loadavg1 < 0)
			bad = "loadavg1", x = w->loadavg1;
		else if (w->has_wall_s && w->wall_s < 0)
			bad = "wall_s", x = w->wall_s;
		else
			bad = psi_out_of_range(w, &x);
		if (bad)
			return codec_invalid(err,
					     "benchmarks[%zu].windows[%zu].%s: %g is out of range",
					     bi, i, bad, x);
		r = check_window_text(w, bi, i, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int check_benchmarks(const Fleetbench__Report *r,
			    char err[CODEC_ERR_LEN])
{
	for (size_t i = 0; i < r->n_benchmarks; i++) {
		const Fleetbench__Benchmark *b = r->benchmarks[i];
		int ret;

		for (size_t j = 0; j < i; j++) {
			const Fleetbench__Benchmark *o = r->benchmarks[j];

			if (!strcmp(b->benchmark, o->benchmark) &&
			    !strcmp(b->variant, o->variant))
				return codec_invalid(err,
						     "benchmarks[%zu]: same benchmark and variant as benchmarks[%zu]",
						     i, j);
		}
		ret = check_status(b, i, err);
		if (ret < 0)
			return ret;
		ret = check_params(b, i, err);
		if (ret < 0)
			return ret;
		/* windows first: a negative wall_s is named as such */
		ret = check_windows(b, i, err);
		if (ret < 0)
			return ret;
		ret = check_metrics(b, i, err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* The bytes of a method key: [a-z0-9_+=,.-] and the size suffixes. */
static bool method_key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       strchr("_+=,.-KMGT", c);
}

static int check_method(const Fleetbench__Method *m, char err[CODEC_ERR_LEN])
{
	const struct {
		const char *name;
		int64_t value;
	} counts[] = {
		{ "repeats", m->repeats },
		{ "chase_accesses", m->chase_accesses },
		{ "io_ms", m->io_ms },
		{ "iodepth", m->iodepth },
		{ "fs_increments", m->fs_increments },
		/* optional (issue 15): absent from older agents, positive
		 * when present (1 stands for absent) */
#define OPT(f) { #f, m->has_##f ? m->f : 1 }
		OPT(mmap_accesses), OPT(scaling_ms), OPT(db_scale),
		OPT(db_rate), OPT(db_seconds),
		/* adaptive repeats (issue 19) */
		OPT(budget_s), OPT(max_repeats),
	};
	const struct {
		const char *name;
		uint64_t value;
	} sizes[] = {
		{ "chase_bytes", m->chase_bytes },
		{ "fault_bytes", m->fault_bytes },
		{ "file_bytes", m->file_bytes },
		{ "seq_bytes", m->seq_bytes },
		{ "seq_block", m->seq_block },
		OPT(mmap_bytes), OPT(bw_bytes), OPT(wb_bytes),
		OPT(wb_fsync_bytes),
#undef OPT
	};
	size_t klen = strlen(m->key), plen = strlen(m->profile);

	if (plen > CODEC_MAX_METHOD_PROFILE)
		return codec_invalid(err, "method.profile: %zu bytes, limit %d", plen,
				     CODEC_MAX_METHOD_PROFILE);
	if (klen > CODEC_MAX_METHOD_KEY)
		return codec_invalid(err, "method.key: %zu bytes, limit %d", klen,
				     CODEC_MAX_METHOD_KEY);
	for (size_t i = 0; i < klen; i++)
		if (!method_key_char(m->key[i]))
			return codec_invalid(err,
					     "method.key: byte %zu (0x%02x) is not one of [a-z0-9_+=,.-KMGT]",
					     i, (unsigned char)m->key[i]);
	/* the profile is the key's first part, so a key names its profile */
	if (strncmp(m->key, m->profile, plen) ||
	    (m->key[plen] != '\0' && m->key[plen] != '+'))
		return codec_invalid(err,
				     "method.key: does not start with the profile '%s' followed by its end or '+'",
				     m->profile);
	for (size_t i = 0; i < ARRAY_SIZE(counts); i++)
		if (counts[i].value <= 0)
			return codec_invalid(err, "method.%s: %lld is not positive",
					     counts[i].name,
					     (long long)counts[i].value);
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++)
		if (sizes[i].value == 0)
			return codec_invalid(err, "method.%s: 0 is not positive",
					     sizes[i].name);
	if (m->has_target_half_width &&
	    !(m->target_half_width > 0 && m->target_half_width <= 1))
		return codec_invalid(err,
				     "method.target_half_width: %g is outside (0, 1]",
				     m->target_half_width);
	for (size_t i = 0; i < m->n_only; i++) {
		size_t len = strlen(m->only[i]);

		if (!len || len > CODEC_MAX_METHOD_NAME)
			return codec_invalid(err,
					     "method.only[%zu]: %zu bytes, expected 1 to %d",
					     i, len, CODEC_MAX_METHOD_NAME);
		if (strspn(m->only[i], "abcdefghijklmnopqrstuvwxyz0123456789_") !=
		    len)
			return codec_invalid(err,
					     "method.only[%zu]: not a benchmark name ([a-z0-9_])",
					     i);
	}
	return 0;
}

static int check_comparisons(const Fleetbench__Report *r,
			     char err[CODEC_ERR_LEN])
{
	for (size_t i = 0; i < r->n_comparisons; i++) {
		const Fleetbench__Comparison *c = r->comparisons[i];

		if (c->has_level && !(c->level > 0 && c->level < 1))
			return codec_invalid(err,
					     "comparisons[%zu].level: %g is outside (0, 1)",
					     i, c->level);
		if (c->has_ci_low && c->has_ci_high && c->ci_low > c->ci_high)
			return codec_invalid(err,
					     "comparisons[%zu].ci_low: above ci_high", i);
		/* adaptive repeats (issue 19) */
		if (c->has_target_half_width &&
		    !(c->target_half_width > 0 && c->target_half_width <= 1))
			return codec_invalid(err,
					     "comparisons[%zu].target_half_width: %g is outside (0, 1]",
					     i, c->target_half_width);
		if (c->has_rounds &&
		    (c->rounds < 1 || c->rounds > CODEC_MAX_WINDOWS))
			return codec_invalid(err,
					     "comparisons[%zu].rounds: %lld is outside [1, %d]",
					     i, (long long)c->rounds,
					     CODEC_MAX_WINDOWS);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(c->name, r->comparisons[j]->name))
				return codec_invalid(err,
						     "comparisons[%zu].name: same as comparisons[%zu]",
						     i, j);
	}
	return 0;
}
/* One Cost: its figures within their bounds (what shows as "costs[i]"). */
static int check_cost(const Fleetbench__Cost *c, const char *what,
		      char err[CODEC_ERR_LEN])
{
	if (!(c->wall_s >= 0 && c->wall_s <= CODEC_MAX_COST_SECONDS))
		return codec_invalid(err, "%s.wall_s: %g is outside [0, %g]",
				     what, c->wall_s, CODEC_MAX_COST_SECONDS);
	if (!(c->cpu_s >= 0 && c->cpu_s <= CODEC_MAX_COST_SECONDS))
		return codec_invalid(err, "%s.cpu_s: %g is outside [0, %g]",
				     what, c->cpu_s, CODEC_MAX_COST_SECONDS);
	if (c->has_allowance_s &&
	    !(c->allowance_s >= 0 && c->allowance_s <= CODEC_MAX_COST_SECONDS))
		return codec_invalid(err,
				     "%s.allowance_s: %g is outside [0, %g]",
				     what, c->allowance_s,
				     CODEC_MAX_COST_SECONDS);
	if (c->has_rounds && (c->rounds < 0 || c->rounds > CODEC_MAX_WINDOWS))
		return codec_invalid(err, "%s.rounds: %lld is outside [0, %d]",
				     what, (long long)c->rounds,
				     CODEC_MAX_WINDOWS);
	if (c->peak_memory_bytes > (uint64_t)INT64_MAX ||
	    c->written_bytes > (uint64_t)INT64_MAX)
		return codec_invalid(err, "%s: a byte count above %lld", what,
				     (long long)INT64_MAX);
	return 0;
}

/* The run's costs (issue 36): each within bounds, one per benchmark. */
static int check_costs(const Fleetbench__Report *r, char err[CODEC_ERR_LEN])
{
	char what[32];
	int ret;

	for (size_t i = 0; i < r->n_costs; i++) {
		snprintf(what, sizeof(what), "costs[%zu]", i);
		ret = check_cost(r->costs[i], what, err);
		if (ret < 0)
			return ret;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(r->costs[i]->benchmark,
				    r->costs[j]->benchmark))
				return codec_invalid(err,
						     "costs[%zu].benchmark: '%s' again (costs[%zu])",
						     i, r->costs[i]->benchmark, j);
	}
	if (r->cost_total)
		return check_cost(r->cost_total, "cost_total", err);
	return 0;
}

int codec_check_report(const Fleetbench__Report *r, int64_t now_ms, bool wire,
		       char err[CODEC_ERR_LEN])
{
	int ret;

	err[0] = '\0';
	if (!r)
		return codec_invalid(err, "report: missing");
	/* first, so a newer schema is named as such, not by a symptom */
	if (r->schema_version != FLEETBENCH__SCHEMA_VERSION__CURRENT)
		return codec_invalid(err,
				     "schema_version: %u is not supported (expected %d)",
				     r->schema_version,
				     FLEETBENCH__SCHEMA_VERSION__CURRENT);
	if (!r->run_id || !*r->run_id)
		return codec_invalid(err, "run_id: missing");
	if (!codec_uuid_valid(r->run_id))
		return codec_invalid(err, "run_id: not a canonical lowercase UUID");
	ret = codec_walk(&r->base, wire, true, err);
	if (ret < 0)
		return ret;
	ret = check_host(r->host, err);
	if (ret < 0)
		return ret;
	ret = check_time("started_unix_ms", r->started_unix_ms, now_ms, err);
	if (ret < 0)
		return ret;
	ret = check_time("finished_unix_ms", r->finished_unix_ms, now_ms, err);
	if (ret < 0)
		return ret;
	if (r->finished_unix_ms < r->started_unix_ms)
		return codec_invalid(err,
				     "finished_unix_ms: before started_unix_ms");
	/* the probe, typed (field 15) or, from older agents, as JSON text */
	if (r->probe && r->probe_json)
		return codec_invalid(err, "probe_json: set beside probe; a report holds one of them");
	if (!r->probe && !r->probe_json)
		return codec_invalid(err, "probe: missing (and no probe_json)");
	if (r->probe_json && !*r->probe_json)
		return codec_invalid(err, "probe_json: empty");
	if (r->probe_json) {
		ret = check_probe_json(r->probe_json, err);
		if (ret < 0)
			return ret;
	}
	if (r->method) {
		ret = check_method(r->method, err);
		if (ret < 0)
			return ret;
	}
	if (r->capabilities) {
		ret = codec_check_capabilities(r->capabilities, err);
		if (ret < 0)
			return ret;
	}
	/* one source per fact: an older agent's capabilities (field 14)
	 * must be what its typed probe says */
	if (r->capabilities && r->probe) {
		ret = probe_caps_check(r->capabilities, r->probe, err,
				       CODEC_ERR_LEN);
		if (ret < 0) /* -EINVAL, err naming the field, or -ENOMEM */
			return ret;
	}
	ret = codec_check_tags(r, err);
	if (ret < 0)
		return ret;
	ret = check_benchmarks(r, err);
	if (ret < 0)
		return ret;
	ret = check_costs(r, err);
	if (ret < 0)
		return ret;
	return check_comparisons(r, err);
}
