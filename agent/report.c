/* SPDX-License-Identifier: MIT */
/* The probe and bench JSON reports as one wire Report (report.h). */
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
#include "pbjson.h"

#define PATH_LEN 64

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

/* o[key], or NULL when o is not an object, key is absent or its value is
 * null (json-c holds a JSON null as NULL). */
static struct json_object *member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

static int dup_str(char **dst, const char *s, char err[REPORT_ERR_LEN])
{
	*dst = strdup(s);
	return *dst ? 0 : oom(err);
}

/* Arrays are allocated one element larger so that n == 0 still gets a
 * pointer to check; protobuf-c only reads the first n. */
static void *alloc_array(size_t n, size_t size)
{
	return calloc(n + 1, size);
}

/* ---- the probe ---- */

/*
 * Copies the probe's string item section.key into *dst. An item that is
 * unknown ({"unknown": reason}), absent or empty is left unset, or refused
 * with -ENODATA when required.
 */
static int probe_item(struct json_object *probe, const char *section,
		      const char *key, bool required, char **dst,
		      char err[REPORT_ERR_LEN])
{
	struct json_object *v = member(member(probe, section), key);
	struct json_object *why = member(v, "unknown");

	if (json_object_is_type(v, json_type_string) &&
	    json_object_get_string_len(v) > 0)
		return dup_str(dst, json_object_get_string(v), err);
	if (!required)
		return 0;
	if (json_object_is_type(why, json_type_string))
		return fail(err, -ENODATA, "probe item %s.%s is unknown (%s)",
			    section, key, json_object_get_string(why));
	return fail(err, -ENODATA, "probe item %s.%s is %s", section, key,
		    v ? "not a non-empty string" : "missing");
}

/* One label of the probe's labels section: its value when it is a string,
 * and its source. */
static int probe_label(struct json_object *probe, const char *name,
		       char **value, char **source, char err[REPORT_ERR_LEN])
{
	struct json_object *l = member(member(probe, "labels"), name);
	struct json_object *v = member(l, "value"), *s = member(l, "source");
	int r = 0;

	if (json_object_is_type(v, json_type_string) &&
	    json_object_get_string_len(v) > 0)
		r = dup_str(value, json_object_get_string(v), err);
	if (r == 0 && json_object_is_type(s, json_type_string))
		r = dup_str(source, json_object_get_string(s), err);
	return r;
}

static int convert_host(struct json_object *probe, Fleetbench__Host *h,
			char err[REPORT_ERR_LEN])
{
	struct json_object *id = member(member(probe, "host"), "machine_id");
	struct json_object *why = member(id, "unknown");
	int r;

	if (!json_object_is_type(id, json_type_string) ||
	    !json_object_get_string_len(id))
		return fail(err, -ENODATA,
			    "the probe found no machine id (host.machine_id: %s): the collector keys hosts by it; create /etc/machine-id (systemd-machine-id-setup)",
			    json_object_is_type(why, json_type_string) ?
				    json_object_get_string(why) :
			    id ? "not a non-empty string" :
				 "missing");
	r = dup_str(&h->machine_id, json_object_get_string(id), err);
	if (r == 0)
		r = probe_item(probe, "host", "hostname", true, &h->hostname,
			       err);
	if (r == 0)
		r = probe_label(probe, "provider", &h->provider,
				&h->provider_source, err);
	if (r == 0)
		r = probe_label(probe, "instance_type", &h->instance_type,
				&h->instance_type_source, err);
	if (r == 0)
		r = probe_label(probe, "region", &h->region, &h->region_source,
				err);
	return r;
}

static int convert_kernel(struct json_object *probe, Fleetbench__Kernel *k,
			  char err[REPORT_ERR_LEN])
{
	int r = probe_item(probe, "kernel", "release", true, &k->release, err);

	if (r == 0)
		r = probe_item(probe, "kernel", "version", false, &k->version,
			       err);
	if (r == 0)
		r = probe_item(probe, "kernel", "cmdline", false, &k->cmdline,
			       err);
	return r;
}

/* ---- the capabilities ---- */

/*
 * The probe items that the collector stores in typed columns
 * (docs/probe.md), each to the Capabilities field of the same meaning. The
 * field's descriptor says how to read the item; a message's fields are
 * read from the members of the same name (hugetlb.sizes[].size_kb, nr and
 * free into HugepagePool).
 */
static const struct {
	const char *path; /* in the probe object, '.' between members */
	const char *field;
} caps_map[] = {
	{ "thp.enabled.selected", "thp_enabled" },
	{ "thp.defrag.selected", "thp_defrag" },
	{ "thp.shmem_enabled.selected", "thp_shmem_enabled" },
	{ "hugetlb.sizes", "hugepages" },
	{ "io_uring.disabled", "io_uring_disabled" },
	{ "io_uring.setup", "io_uring_setup" },
	{ "io_uring.setup_errno", "io_uring_setup_errno" },
	{ "io_uring.sqpoll", "sqpoll" },
	{ "io_uring.sqpoll_errno", "sqpoll_errno" },
	{ "io_uring.opcodes", "io_uring_opcodes" },
	{ "io_uring.features", "io_uring_features" },
	{ "host.vcpus_online", "vcpus" },
	{ "host.memory_total_kb", "memory_kb" },
	{ "host.cpu_model", "cpu_model" },
	{ "virt.vm.name", "vm" },
	{ "virt.container.name", "container" },
};

static struct json_object *at_path(struct json_object *o, const char *path)
{
	char key[PATH_LEN];

	while (o && *path) {
		size_t n = strcspn(path, ".");

		snprintf(key, sizeof(key), "%.*s", (int)n, path);
		o = member(o, key);
		path += n + (path[n] == '.');
	}
	return o;
}

static int fill_message(ProtobufCMessage *m, struct json_object *o);

/*
 * One value of field f from v into dst. Returns 1 when set, 0 when v is not
 * a value of the field's type and range (an {"unknown": ...} item, null,
 * absent: the field stays unset), or -ENOMEM.
 */
static int caps_value(const ProtobufCFieldDescriptor *f, void *dst,
		      struct json_object *v)
{
	const ProtobufCMessageDescriptor *d = f->descriptor;
	ProtobufCMessage *sub;
	int64_t x = json_object_get_int64(v);
	int r;

	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING:
		if (!json_object_is_type(v, json_type_string) ||
		    !json_object_get_string_len(v))
			return 0;
		*(char **)dst = strdup(json_object_get_string(v));
		return *(char **)dst ? 1 : -ENOMEM;
	case PROTOBUF_C_TYPE_INT32:
		if (!json_object_is_type(v, json_type_int) || x < INT32_MIN ||
		    x > INT32_MAX)
			return 0;
		*(int32_t *)dst = (int32_t)x;
		return 1;
	case PROTOBUF_C_TYPE_UINT32:
		if (!json_object_is_type(v, json_type_int) || x < 0 ||
		    x > UINT32_MAX)
			return 0;
		*(uint32_t *)dst = (uint32_t)x;
		return 1;
	case PROTOBUF_C_TYPE_UINT64:
		if (!json_object_is_type(v, json_type_int) || x < 0)
			return 0;
		*(uint64_t *)dst = (uint64_t)x;
		return 1;
	case PROTOBUF_C_TYPE_MESSAGE:
		if (!json_object_is_type(v, json_type_object))
			return 0;
		sub = malloc(d->sizeof_message);
		if (!sub)
			return -ENOMEM;
		protobuf_c_message_init(d, sub);
		r = fill_message(sub, v);
		if (r <= 0) {
			protobuf_c_message_free_unpacked(sub, NULL);
			return r;
		}
		*(ProtobufCMessage **)dst = sub;
		return 1;
	default:
		return 0; /* no capability has another type */
	}
}

/* Field f of m from v: a value, or an array's values that fit, in order. */
static int caps_field(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
		      struct json_object *v)
{
	char *base = (char *)m;
	size_t size = pbjson_value_size(f->type), *n;
	char **arr;
	int r;

	if (f->label != PROTOBUF_C_LABEL_REPEATED) {
		/* a string or message is set by its pointer, others by has_ */
		bool flag = f->label == PROTOBUF_C_LABEL_OPTIONAL &&
			    f->type != PROTOBUF_C_TYPE_STRING &&
			    f->type != PROTOBUF_C_TYPE_MESSAGE;
		protobuf_c_boolean *has =
			(protobuf_c_boolean *)(base + f->quantifier_offset);

		r = caps_value(f, base + f->offset, v);
		if (r > 0 && flag)
			*has = 1;
		return r;
	}
	if (!json_object_is_type(v, json_type_array))
		return 0;
	n = (size_t *)(base + f->quantifier_offset);
	arr = (char **)(base + f->offset);
	*arr = alloc_array(json_object_array_length(v), size);
	if (!*arr)
		return -ENOMEM;
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		r = caps_value(f, *arr + *n * size,
			       json_object_array_get_idx(v, i));
		if (r < 0)
			return r;
		*n += (size_t)r;
	}
	return 1;
}

/* Every field of m from o's member of its name. Returns 1, or 0 when a
 * required field is not there (m is then of no use), or -ENOMEM. */
static int fill_message(ProtobufCMessage *m, struct json_object *o)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;

	for (unsigned i = 0; i < d->n_fields; i++) {
		int r = caps_field(m, &d->fields[i],
				   member(o, d->fields[i].name));

		if (r < 0 || (r == 0 &&
			      d->fields[i].label == PROTOBUF_C_LABEL_REQUIRED))
			return r;
	}
	return 1;
}

static int convert_capabilities(struct json_object *probe,
				Fleetbench__Report *rep,
				char err[REPORT_ERR_LEN])
{
	const ProtobufCMessageDescriptor *d =
		&fleetbench__capabilities__descriptor;

	rep->capabilities = malloc(sizeof(*rep->capabilities));
	if (!rep->capabilities)
		return oom(err);
	fleetbench__capabilities__init(rep->capabilities);
	for (size_t i = 0; i < ARRAY_SIZE(caps_map); i++) {
		const ProtobufCFieldDescriptor *f =
			protobuf_c_message_descriptor_get_field_by_name(
				d, caps_map[i].field);

		if (caps_field(&rep->capabilities->base, f,
			       at_path(probe, caps_map[i].path)) < 0)
			return oom(err);
	}
	return 0;
}

/* ---- the bench report (docs/bench.md) ---- */

static int bad(char err[REPORT_ERR_LEN], const char *path, const char *key,
	       const char *what)
{
	return fail(err, -EINVAL, "bench report: %s%s%s is %s", path,
		    *path ? "." : "", key, what);
}

/* A JSON integer or double as a double. */
static bool number_of(struct json_object *v, double *ret)
{
	if (!json_object_is_type(v, json_type_double) &&
	    !json_object_is_type(v, json_type_int))
		return false;
	*ret = json_object_get_double(v);
	return true;
}

static int copy_string(struct json_object *o, const char *key, bool required,
		       char **dst, const char *path, char err[REPORT_ERR_LEN])
{
	struct json_object *v = member(o, key);

	if (json_object_is_type(v, json_type_string))
		return dup_str(dst, json_object_get_string(v), err);
	if (!v && !required)
		return 0;
	return bad(err, path, key, v ? "not a string" : "missing");
}

/* An optional number: null or absent leaves it unset. */
static int copy_double(struct json_object *o, const char *key,
		       protobuf_c_boolean *has, double *dst, const char *path,
		       char err[REPORT_ERR_LEN])
{
	struct json_object *v = member(o, key);

	if (!v)
		return 0;
	if (!number_of(v, dst))
		return bad(err, path, key, "not a number");
	*has = 1;
	return 0;
}

static int copy_bool(struct json_object *o, const char *key,
		     protobuf_c_boolean *has, protobuf_c_boolean *dst,
		     const char *path, char err[REPORT_ERR_LEN])
{
	struct json_object *v = member(o, key);

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_boolean))
		return bad(err, path, key, "not a boolean");
	*dst = json_object_get_boolean(v);
	*has = 1;
	return 0;
}

/* o[key] as an array (*ret, *ret_n); absent or null is an empty one. */
static int array_of(struct json_object *o, const char *key,
		    struct json_object **ret, size_t *ret_n, const char *path,
		    char err[REPORT_ERR_LEN])
{
	struct json_object *v = member(o, key);

	*ret = v;
	*ret_n = 0;
	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_array))
		return bad(err, path, key, "not an array");
	*ret_n = json_object_array_length(v);
	return 0;
}

static int convert_param(const char *key, struct json_object *v,
			 Fleetbench__Param *p, const char *path,
			 char err[REPORT_ERR_LEN])
{
	int r = dup_str(&p->key, key, err);

	if (r < 0)
		return r;
	switch (json_object_get_type(v)) {
	case json_type_int:
		p->value_case = FLEETBENCH__PARAM__VALUE_INT_VALUE;
		p->int_value = json_object_get_int64(v);
		return 0;
	case json_type_double:
		p->value_case = FLEETBENCH__PARAM__VALUE_DOUBLE_VALUE;
		p->double_value = json_object_get_double(v);
		return 0;
	case json_type_boolean:
		p->value_case = FLEETBENCH__PARAM__VALUE_BOOL_VALUE;
		p->bool_value = json_object_get_boolean(v);
		return 0;
	case json_type_string:
		r = dup_str(&p->string_value, json_object_get_string(v), err);
		break;
	case json_type_array:
	case json_type_object:
		r = dup_str(&p->string_value,
			    json_object_to_json_string_ext(
				    v, JSON_C_TO_STRING_PLAIN |
					       JSON_C_TO_STRING_NOSLASHESCAPE),
			    err);
		break;
	default:
		return bad(err, path, key, "of no known JSON type");
	}
	if (r == 0)
		p->value_case = FLEETBENCH__PARAM__VALUE_STRING_VALUE;
	return r;
}

static int convert_params(struct json_object *res, Fleetbench__Benchmark *b,
			  const char *path, char err[REPORT_ERR_LEN])
{
	struct json_object *params = member(res, "parameters");
	char ppath[PATH_LEN + 16];
	int r;

	if (!params)
		return 0;
	if (!json_object_is_type(params, json_type_object))
		return bad(err, path, "parameters", "not an object");
	b->parameters = alloc_array(json_object_object_length(params),
				    sizeof(*b->parameters));
	if (!b->parameters)
		return oom(err);
	snprintf(ppath, sizeof(ppath), "%s.parameters", path);
	json_object_object_foreach(params, key, v)
	{
		Fleetbench__Param *p;

		if (!v)
			continue; /* null: not measured, nothing to say */
		p = malloc(sizeof(*p));
		if (!p)
			return oom(err);
		fleetbench__param__init(p);
		b->parameters[b->n_parameters++] = p;
		r = convert_param(key, v, p, ppath, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int convert_metric(struct json_object *m, Fleetbench__Metric *out,
			  const char *path, char err[REPORT_ERR_LEN])
{
	struct json_object *samples;
	size_t n;
	int r;

	if (!json_object_is_type(m, json_type_object))
		return fail(err, -EINVAL, "bench report: %s is not an object",
			    path);
	r = copy_string(m, "metric", true, &out->metric, path, err);
	if (r == 0)
		r = copy_string(m, "unit", true, &out->unit, path, err);
	if (r == 0)
		r = array_of(m, "samples", &samples, &n, path, err);
	if (r < 0)
		return r;
	out->samples = alloc_array(n, sizeof(*out->samples));
	if (!out->samples)
		return oom(err);
	for (size_t i = 0; i < n; i++) {
		if (!number_of(json_object_array_get_idx(samples, i),
			       &out->samples[i]))
			return fail(err, -EINVAL,
				    "bench report: %s.samples[%zu] is not a number",
				    path, i);
		out->n_samples++;
	}
	return 0;
}

static int convert_metrics(struct json_object *res, Fleetbench__Benchmark *b,
			   const char *path, char err[REPORT_ERR_LEN])
{
	struct json_object *metrics;
	char mpath[PATH_LEN + 32];
	size_t n;
	int r = array_of(res, "metrics", &metrics, &n, path, err);

	if (r < 0)
		return r;
	b->metrics = alloc_array(n, sizeof(*b->metrics));
	if (!b->metrics)
		return oom(err);
	for (size_t i = 0; i < n; i++) {
		Fleetbench__Metric *m = malloc(sizeof(*m));

		if (!m)
			return oom(err);
		fleetbench__metric__init(m);
		b->metrics[b->n_metrics++] = m;
		snprintf(mpath, sizeof(mpath), "%s.metrics[%zu]", path, i);
		r = convert_metric(json_object_array_get_idx(metrics, i), m,
				   mpath, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int convert_windows(struct json_object *res, Fleetbench__Benchmark *b,
			   const char *path, char err[REPORT_ERR_LEN])
{
	struct json_object *repeats;
	char wpath[PATH_LEN + 32];
	size_t n;
	int r = array_of(res, "repeats", &repeats, &n, path, err);

	if (r < 0)
		return r;
	b->windows = alloc_array(n, sizeof(*b->windows));
	if (!b->windows)
		return oom(err);
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(repeats, i);
		Fleetbench__Window *w = malloc(sizeof(*w));

		if (!w)
			return oom(err);
		fleetbench__window__init(w);
		b->windows[b->n_windows++] = w;
		snprintf(wpath, sizeof(wpath), "%s.repeats[%zu]", path, i);
		if (!json_object_is_type(o, json_type_object))
			return fail(err, -EINVAL,
				    "bench report: %s is not an object",
				    wpath);
		r = copy_double(o, "steal_pct", &w->has_steal_pct,
				&w->steal_pct, wpath, err);
		if (r == 0)
			r = copy_double(o, "loadavg1", &w->has_loadavg1,
					&w->loadavg1, wpath, err);
		if (r == 0)
			r = copy_double(o, "wall_s", &w->has_wall_s, &w->wall_s,
					wpath, err);
		if (r == 0)
			r = copy_bool(o, "noisy", &w->has_noisy, &w->noisy,
				      wpath, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int convert_result(struct json_object *res, Fleetbench__Benchmark *b,
			  const char *path, char err[REPORT_ERR_LEN])
{
	struct json_object *status = member(res, "status");
	bool skipped, failed;
	int r;

	if (!json_object_is_type(res, json_type_object))
		return fail(err, -EINVAL, "bench report: %s is not an object",
			    path);
	if (!json_object_is_type(status, json_type_string))
		return bad(err, path, "status", "missing");
	skipped = !strcmp(json_object_get_string(status), "skipped");
	failed = !strcmp(json_object_get_string(status), "failed");
	if (!skipped && !failed && strcmp(json_object_get_string(status), "ok"))
		return bad(err, path, "status",
			   "none of \"ok\", \"skipped\" and \"failed\"");
	r = copy_string(res, "benchmark", true, &b->benchmark, path, err);
	if (r == 0)
		r = copy_string(res, "variant", true, &b->variant, path, err);
	if (r == 0 && skipped)
		r = copy_string(res, "skip_reason", true, &b->skip_reason,
				path, err);
	if (r == 0 && failed)
		r = copy_string(res, "failure", true, &b->failure, path, err);
	if (r == 0)
		r = convert_params(res, b, path, err);
	if (r == 0)
		r = convert_metrics(res, b, path, err);
	if (r == 0)
		r = convert_windows(res, b, path, err);
	return r;
}

static int convert_comparison(struct json_object *o, Fleetbench__Comparison *c,
			      const char *path, char err[REPORT_ERR_LEN])
{
	static const char *const required[] = { "name", "benchmark", "metric",
						"numerator", "denominator" };
	char **dst[] = { &c->name, &c->benchmark, &c->metric, &c->numerator,
			 &c->denominator };
	int r = 0;

	if (!json_object_is_type(o, json_type_object))
		return fail(err, -EINVAL, "bench report: %s is not an object",
			    path);
	for (size_t i = 0; r == 0 && i < sizeof(dst) / sizeof(dst[0]); i++)
		r = copy_string(o, required[i], true, dst[i], path, err);
	if (r == 0)
		r = copy_double(o, "ratio", &c->has_ratio, &c->ratio, path,
				err);
	if (r == 0)
		r = copy_double(o, "ci_low", &c->has_ci_low, &c->ci_low, path,
				err);
	if (r == 0)
		r = copy_double(o, "ci_high", &c->has_ci_high, &c->ci_high,
				path, err);
	if (r == 0)
		r = copy_double(o, "level", &c->has_level, &c->level, path,
				err);
	if (r == 0)
		r = copy_string(o, "method", false, &c->method, path, err);
	if (r == 0)
		r = copy_string(o, "reason", false, &c->reason, path, err);
	return r;
}

/* The method's whole numbers, as fields of Fleetbench__Method. */
static const struct {
	const char *key;
	size_t offset;
	bool is_unsigned; /* uint64_t, else int64_t */
} method_numbers[] = {
#define N(f, u) { #f, offsetof(Fleetbench__Method, f), u }
	N(repeats, false),     N(chase_bytes, true), N(chase_accesses, false),
	N(fault_bytes, true),  N(file_bytes, true),  N(io_ms, false),
	N(iodepth, false),     N(seq_bytes, true),   N(seq_block, true),
	N(fs_increments, false),
#undef N
};

/* The bench report's "method" (bench_method_json()) into rep->method. */
static int convert_method(struct json_object *o, Fleetbench__Report *rep,
			  char err[REPORT_ERR_LEN])
{
	Fleetbench__Method *m;
	struct json_object *only, *rf = member(o, "randread_file");
	size_t n;
	int r;

	if (!json_object_is_type(o, json_type_object))
		return bad(err, "", "method", "not an object");
	m = malloc(sizeof(*m));
	if (!m)
		return oom(err);
	fleetbench__method__init(m);
	rep->method = m;
	r = copy_string(o, "key", true, &m->key, "method", err);
	if (r == 0)
		r = copy_string(o, "profile", true, &m->profile, "method", err);
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(method_numbers); i++) {
		struct json_object *v = member(o, method_numbers[i].key);
		char *field = (char *)m + method_numbers[i].offset;
		int64_t x;

		if (!json_object_is_type(v, json_type_int))
			return bad(err, "method", method_numbers[i].key,
				   v ? "not an integer" : "missing");
		x = json_object_get_int64(v);
		if (method_numbers[i].is_unsigned && x < 0)
			return bad(err, "method", method_numbers[i].key,
				   "negative");
		if (method_numbers[i].is_unsigned)
			*(uint64_t *)field = (uint64_t)x;
		else
			*(int64_t *)field = x;
	}
	if (r < 0)
		return r;
	if (!json_object_is_type(rf, json_type_boolean))
		return bad(err, "method", "randread_file",
			   rf ? "not a boolean" : "missing");
	m->randread_file = json_object_get_boolean(rf);
	r = array_of(o, "only", &only, &n, "method", err);
	if (r < 0)
		return r;
	m->only = alloc_array(n, sizeof(*m->only));
	if (!m->only)
		return oom(err);
	for (size_t i = 0; i < n; i++) {
		struct json_object *v = json_object_array_get_idx(only, i);

		if (!json_object_is_type(v, json_type_string))
			return bad(err, "method", "only", "not strings");
		r = dup_str(&m->only[m->n_only], json_object_get_string(v),
			    err);
		if (r < 0)
			return r;
		m->n_only++;
	}
	return 0;
}

static int convert_bench(struct json_object *bench, Fleetbench__Report *rep,
			 char err[REPORT_ERR_LEN])
{
	struct json_object *results, *comparisons, *seed;
	char path[PATH_LEN];
	size_t n;
	int r;

	if (!json_object_is_type(bench, json_type_object))
		return fail(err, -EINVAL, "bench report: not a JSON object");
	r = copy_string(bench, "profile", false, &rep->profile, "", err);
	if (r < 0)
		return r;
	seed = member(bench, "seed");
	if (seed && !json_object_is_type(seed, json_type_int))
		return bad(err, "", "seed", "not an integer");
	if (seed) {
		rep->has_seed = 1;
		rep->seed = json_object_get_int64(seed);
	}
	if (member(bench, "method")) {
		r = convert_method(member(bench, "method"), rep, err);
		if (r < 0)
			return r;
	}

	r = array_of(bench, "results", &results, &n, "", err);
	if (r < 0)
		return r;
	rep->benchmarks = alloc_array(n, sizeof(*rep->benchmarks));
	if (!rep->benchmarks)
		return oom(err);
	for (size_t i = 0; i < n; i++) {
		Fleetbench__Benchmark *b = malloc(sizeof(*b));

		if (!b)
			return oom(err);
		fleetbench__benchmark__init(b);
		rep->benchmarks[rep->n_benchmarks++] = b;
		snprintf(path, sizeof(path), "results[%zu]", i);
		r = convert_result(json_object_array_get_idx(results, i), b,
				   path, err);
		if (r < 0)
			return r;
	}

	r = array_of(bench, "comparisons", &comparisons, &n, "", err);
	if (r < 0)
		return r;
	rep->comparisons = alloc_array(n, sizeof(*rep->comparisons));
	if (!rep->comparisons)
		return oom(err);
	for (size_t i = 0; i < n; i++) {
		Fleetbench__Comparison *c = malloc(sizeof(*c));

		if (!c)
			return oom(err);
		fleetbench__comparison__init(c);
		rep->comparisons[rep->n_comparisons++] = c;
		snprintf(path, sizeof(path), "comparisons[%zu]", i);
		r = convert_comparison(json_object_array_get_idx(comparisons,
								 i),
				       c, path, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- the API ---- */

int report_build(struct json_object *probe, struct json_object *bench,
		 int64_t started_unix_ms, int64_t finished_unix_ms,
		 Fleetbench__Report **ret, char err[REPORT_ERR_LEN])
{
	Fleetbench__Report *rep;
	const char *text;
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
	rep->host = malloc(sizeof(*rep->host));
	if (rep->host)
		fleetbench__host__init(rep->host);
	rep->kernel = malloc(sizeof(*rep->kernel));
	if (rep->kernel)
		fleetbench__kernel__init(rep->kernel);
	if (!rep->host || !rep->kernel) {
		r = oom(err);
		goto out;
	}

	r = dup_str(&rep->run_id, run_id, err);
	if (r == 0)
		r = dup_str(&rep->agent_version, FLEETBENCH_VERSION, err);
	if (r == 0)
		r = convert_host(probe, rep->host, err);
	if (r == 0)
		r = convert_kernel(probe, rep->kernel, err);
	if (r == 0)
		r = convert_capabilities(probe, rep, err);
	if (r < 0)
		goto out;
	text = json_object_to_json_string_ext(
		probe, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!text) {
		r = oom(err);
		goto out;
	}
	r = dup_str(&rep->probe_json, text, err);
	if (r == 0 && bench)
		r = convert_bench(bench, rep, err);
out:
	if (r < 0) {
		report_free(rep);
		return r;
	}
	*ret = rep;
	return 0;
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
