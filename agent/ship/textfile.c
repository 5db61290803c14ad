/* SPDX-License-Identifier: MIT */
/* The node_exporter textfile of a report (textfile.h). */
#include "textfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "codec.h"
#include "durable.h"
#include "fault.h"
#include "figures.h"
#include "probe_derive.h"
#include "stats.h"

#define TMP_LEN 64

int textfile_check_dir(const char *dir)
{
	_cleanup_close_ int dfd = -1;
	char tmp[TMP_LEN];
	int fd;

	if (!dir || !*dir)
		return -EINVAL;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	/* access(W_OK) says yes to root on a read-only mount: try it */
	snprintf(tmp, sizeof(tmp), ".fleetbench.prom.%ld.check",
		 (long)getpid());
	fd = openat(dfd, tmp,
		    O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	close(fd);
	return unlinkat(dfd, tmp, 0) < 0 ? -errno : 0;
}

char *textfile_escape(const char *s)
{
	size_t len = s ? strlen(s) : 0;
	/* worst case: every byte a 3-byte U+FFFD */
	char *out = malloc(3 * len + 1), *o = out;
	size_t i = 0;

	if (!out)
		return NULL;
	while (i < len) {
		ssize_t bad = codec_utf8_invalid_at(s + i, len - i);
		size_t good = bad < 0 ? len - i : (size_t)bad;

		for (size_t k = 0; k < good; k++) {
			char c = s[i + k];

			if (c == '\\' || c == '"') {
				*o++ = '\\';
				*o++ = c;
			} else if (c == '\n') {
				*o++ = '\\';
				*o++ = 'n';
			} else {
				*o++ = c;
			}
		}
		i += good;
		if (bad >= 0) {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	*o = '\0';
	return out;
}

/* ---- the text ---- */

/* What every line of one file shares: the stream and the host labels. */
struct out {
	FILE *f;
	char *host; /* provider="...",instance_type="...",kernel="..." */
	bool oom;
	/* the family whose HELP and TYPE go before its first sample */
	const char *name, *type, *help;
	bool started;
};

/*
 * Opens the family name: its HELP and TYPE lines come with its first
 * sample, so that a family without samples leaves no lines.
 */
static void family(struct out *o, const char *name, const char *type,
		   const char *help)
{
	o->name = name;
	o->type = type;
	o->help = help;
	o->started = false;
}

/*
 * Starts a sample of the open family: the name, '{', the host labels, then
 * each (label, value) pair of the NULL-terminated list, escaped, and '}'.
 */
static void sample_start(struct out *o, va_list ap)
{
	const char *label;

	if (!o->started)
		fprintf(o->f, "# HELP %s %s\n# TYPE %s %s\n", o->name, o->help,
			o->name, o->type);
	o->started = true;
	fprintf(o->f, "%s{%s", o->name, o->host);
	while ((label = va_arg(ap, const char *))) {
		_cleanup_free_ char *v =
			textfile_escape(va_arg(ap, const char *));

		if (!v) {
			o->oom = true;
			return;
		}
		fprintf(o->f, ",%s=\"%s\"", label, v);
	}
	fputc('}', o->f);
}

/* A sample of a double: 15 significant digits, 17 where 15 do not read
 * back the same. */
static void sample(struct out *o, double value, ...)
{
	char text[32];
	va_list ap;

	va_start(ap, value);
	sample_start(o, ap);
	va_end(ap);
	if (isnan(value))
		snprintf(text, sizeof(text), "NaN");
	else if (isinf(value))
		snprintf(text, sizeof(text), "%sInf", value > 0 ? "+" : "-");
	else {
		snprintf(text, sizeof(text), "%.15g", value);
		if (strtod(text, NULL) != value)
			snprintf(text, sizeof(text), "%.17g", value);
	}
	fprintf(o->f, " %s\n", text);
}

/* A sample of an integer, exact (a double would round above 2^53). */
static void sample_u64(struct out *o, uint64_t value, ...)
{
	va_list ap;

	va_start(ap, value);
	sample_start(o, ap);
	va_end(ap);
	fprintf(o->f, " %" PRIu64 "\n", value);
}

/* A family of one gauge of 1 per member of a set (label = each name),
 * left out when the set is empty. */
static void members(struct out *o, const char *name, const char *help,
		    const char *label, char *const *names, size_t n)
{
	if (!n)
		return;
	family(o, name, "gauge", help);
	for (size_t i = 0; i < n; i++)
		sample(o, 1, label, names[i], NULL);
}

static void run_part(struct out *o, const Fleetbench__Report *rep)
{
	family(o, "fleetbench_last_run_timestamp_seconds", "gauge",
	       "When the last fleetbench-agent run finished, Unix seconds.");
	sample(o, (double)rep->finished_unix_ms / 1000.0, NULL);
	family(o, "fleetbench_last_run_duration_seconds", "gauge",
	       "How long the last fleetbench-agent run took, probe and "
	       "benchmarks.");
	sample(o,
	       (double)(rep->finished_unix_ms - rep->started_unix_ms) / 1000.0,
	       NULL);
	family(o, "fleetbench_run_info", "gauge",
	       "The last run: agent version, profile and method key; always "
	       "1.");
	sample(o, 1, "agent_version", rep->agent_version, "profile",
	       rep->profile ? rep->profile : "", "method",
	       rep->method ? rep->method->key : "", NULL);
}

static void capabilities_part(struct out *o, const Fleetbench__Capabilities *c)
{
	const struct {
		const char *name, *value;
	} text[] = {
		{"thp_enabled", c->thp_enabled},
		{"thp_defrag", c->thp_defrag},
		{"thp_shmem_enabled", c->thp_shmem_enabled},
		{"vm", c->vm},
		{"container", c->container},
		{"cpu_model", c->cpu_model},
	};

	family(o, "fleetbench_capability", "gauge",
	       "A capability of the host as the probe found it: name and "
	       "value; always 1.");
	for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++)
		if (text[i].value)
			sample(o, 1, "name", text[i].name, "value",
			       text[i].value, NULL);
	if (c->io_uring_setup) {
		family(o, "fleetbench_io_uring_setup", "gauge",
		       "io_uring_setup(2) of a plain ring: ok or the errno's "
		       "name; always 1.");
		sample(o, 1, "result", c->io_uring_setup, NULL);
	}
	if (c->sqpoll) {
		family(o, "fleetbench_io_uring_sqpoll", "gauge",
		       "io_uring_setup(2) of an SQPOLL ring: ok or the errno's "
		       "name; always 1.");
		sample(o, 1, "result", c->sqpoll, NULL);
	}
	if (c->has_io_uring_disabled) {
		family(o, "fleetbench_io_uring_disabled", "gauge",
		       "The sysctl kernel.io_uring_disabled: 0, 1 or 2.");
		sample(o, c->io_uring_disabled, NULL);
	}
	members(o, "fleetbench_io_uring_opcode",
		"An IORING_OP_* the kernel supports, without the prefix; "
		"always 1.",
		"opcode", c->io_uring_opcodes, c->n_io_uring_opcodes);
	members(o, "fleetbench_io_uring_feature",
		"An IORING_FEAT_* of the ring, without the prefix; always 1.",
		"feature", c->io_uring_features, c->n_io_uring_features);
	if (c->has_vcpus) {
		family(o, "fleetbench_vcpus", "gauge", "Online vCPUs.");
		sample_u64(o, c->vcpus, NULL);
	}
	if (c->has_memory_kb) {
		family(o, "fleetbench_memory_bytes", "gauge",
		       "MemTotal of /proc/meminfo in bytes.");
		sample_u64(o, c->memory_kb * 1024, NULL);
	}
	if (c->n_hugepages) {
		family(o, "fleetbench_hugepages", "gauge",
		       "Pages in the hugetlb pool of the size (nr_hugepages).");
		for (size_t i = 0; i < c->n_hugepages; i++) {
			char kb[24];

			if (!c->hugepages[i]->has_nr)
				continue;
			snprintf(kb, sizeof(kb), "%" PRIu64,
				 c->hugepages[i]->size_kb);
			sample_u64(o, c->hugepages[i]->nr, "size_kb", kb, NULL);
		}
		family(o, "fleetbench_hugepages_free", "gauge",
		       "Free pages in the hugetlb pool of the size "
		       "(free_hugepages).");
		for (size_t i = 0; i < c->n_hugepages; i++) {
			char kb[24];

			if (!c->hugepages[i]->has_free)
				continue;
			snprintf(kb, sizeof(kb), "%" PRIu64,
				 c->hugepages[i]->size_kb);
			sample_u64(o, c->hugepages[i]->free, "size_kb", kb,
				   NULL);
		}
	}
}

static void bench_part(struct out *o, const Fleetbench__Report *rep)
{
	family(o, "fleetbench_figure", "gauge",
	       "A benchmark figure of the last run: the median over its "
	       "repeats.");
	for (size_t i = 0; i < rep->n_benchmarks; i++) {
		const Fleetbench__Benchmark *b = rep->benchmarks[i];

		for (size_t k = 0; k < b->n_metrics; k++) {
			const Fleetbench__Metric *m = b->metrics[k];

			if (!m->n_samples)
				continue;
			double median = stats_median(m->samples, m->n_samples);

			/* NAN: no memory for the sorted copy */
			if (isnan(median)) {
				o->oom = true;
				continue;
			}
			sample(o, median, "bench", b->benchmark, "variant",
			       b->variant, "figure", m->metric, "unit", m->unit,
			       NULL);
		}
	}
	family(o, "fleetbench_figure_repeats", "gauge",
	       "The repeats (samples) behind a figure.");
	for (size_t i = 0; i < rep->n_benchmarks; i++) {
		const Fleetbench__Benchmark *b = rep->benchmarks[i];

		for (size_t k = 0; k < b->n_metrics; k++)
			if (b->metrics[k]->n_samples)
				sample_u64(o, b->metrics[k]->n_samples, "bench",
					   b->benchmark, "variant", b->variant,
					   "figure", b->metrics[k]->metric,
					   NULL);
	}
	family(o, "fleetbench_bench_failed", "gauge",
	       "A benchmark variant that failed in the last run, with why; "
	       "always 1.");
	for (size_t i = 0; i < rep->n_benchmarks; i++) {
		const Fleetbench__Benchmark *b = rep->benchmarks[i];

		if (b->failure)
			sample(o, 1, "bench", b->benchmark, "variant",
			       b->variant, "reason", b->failure, NULL);
	}
	family(o, "fleetbench_bench_skipped", "gauge",
	       "A benchmark variant skipped in the last run, with why; always "
	       "1.");
	for (size_t i = 0; i < rep->n_benchmarks; i++) {
		const Fleetbench__Benchmark *b = rep->benchmarks[i];

		if (b->skip_reason && !b->failure)
			sample(o, 1, "bench", b->benchmark, "variant",
			       b->variant, "reason", b->skip_reason, NULL);
	}
}

/* The median of benchmark/variant/metric in rep: NAN when not measured
 * (*oom set when there was no memory for it). */
static double metric_median(const Fleetbench__Report *rep,
			    const struct figure_decl *d, bool *oom)
{
	for (size_t i = 0; i < rep->n_benchmarks; i++) {
		const Fleetbench__Benchmark *b = rep->benchmarks[i];

		if (strcmp(b->benchmark, d->benchmark) ||
		    strcmp(b->variant, d->variant))
			continue;
		for (size_t k = 0; k < b->n_metrics; k++) {
			const Fleetbench__Metric *m = b->metrics[k];
			double median;

			if (strcmp(m->metric, d->metric) || !m->n_samples)
				continue;
			median = stats_median(m->samples, m->n_samples);
			*oom = *oom || isnan(median);
			return median;
		}
	}
	return NAN;
}

/*
 * The headline figures of the last run, as proto/figures.def declares
 * them: a comparison's ratio or a variant's median, labelled with the
 * figure's name, family and unit, the same series for every host whatever
 * its benchmarks named their variants.
 */
static void headline_part(struct out *o, const Fleetbench__Report *rep)
{
	family(o, "fleetbench_headline", "gauge",
	       "A headline figure of the last run (proto/figures.def): its "
	       "comparison's ratio or its variant's median.");
	for (size_t i = 0; i < FIGURES_N; i++) {
		const struct figure_decl *d = &figure_decls[i];
		double v = NAN;

		if (d->kind == FIGURE_RATIO) {
			for (size_t k = 0; k < rep->n_comparisons; k++)
				if (!strcmp(rep->comparisons[k]->name,
					    d->name) &&
				    rep->comparisons[k]->has_ratio)
					v = rep->comparisons[k]->ratio;
		} else {
			v = metric_median(rep, d, &o->oom);
		}
		if (!isnan(v))
			sample(o, v, "figure", d->name, "family", d->family,
			       "unit", d->unit, NULL);
	}
}

static void comparison_part(struct out *o, const Fleetbench__Report *rep)
{
	static const char *const names[] = {"fleetbench_comparison_ratio",
					    "fleetbench_comparison_ratio_low",
					    "fleetbench_comparison_ratio_high"};
	static const char *const helps[] = {
		"A comparison of the last run: median(numerator) / "
		"median(denominator).",
		"The low end of the comparison's confidence interval.",
		"The high end of the comparison's confidence interval.",
	};

	for (size_t n = 0; n < 3; n++) {
		family(o, names[n], "gauge", helps[n]);
		for (size_t i = 0; i < rep->n_comparisons; i++) {
			const Fleetbench__Comparison *c = rep->comparisons[i];
			bool has = n == 0 ? c->has_ratio :
				   n == 1 ? c->has_ratio && c->has_ci_low :
					    c->has_ratio && c->has_ci_high;
			double v = n == 0 ? c->ratio :
				   n == 1 ? c->ci_low :
					    c->ci_high;

			if (has)
				sample(o, v, "name", c->name, "bench",
				       c->benchmark, "figure", c->metric,
				       "numerator", c->numerator, "denominator",
				       c->denominator, NULL);
		}
	}
}

/* The cost families (issue 36), one entry each: every benchmark's sample
 * with label bench, and the run's total with bench="total". */
static const struct {
	const char *name, *help;
	bool bytes; /* an integer (uint64) field, else seconds (double) */
	size_t offset;
	size_t has; /* an optional field: its has_ flag's offset, else 0 */
} cost_families[] = {
	{ "fleetbench_cost_wall_seconds",
	  "What a benchmark of the last run took, wall seconds (bench=\"total\": the run's benchmarks together).",
	  false, offsetof(Fleetbench__Cost, wall_s), 0 },
	{ "fleetbench_cost_cpu_seconds",
	  "The CPU time, user and system, a benchmark of the last run used.",
	  false, offsetof(Fleetbench__Cost, cpu_s), 0 },
	{ "fleetbench_cost_peak_memory_bytes",
	  "The largest resident set a benchmark's process of the last run had.",
	  true, offsetof(Fleetbench__Cost, peak_memory_bytes), 0 },
	{ "fleetbench_cost_written_bytes",
	  "The bytes a benchmark of the last run caused to be written to storage.",
	  true, offsetof(Fleetbench__Cost, written_bytes), 0 },
	{ "fleetbench_cost_allowance_seconds",
	  "The time a benchmark of the last run was allowed, its share of the run's max seconds (bench=\"total\": the run's).",
	  false, offsetof(Fleetbench__Cost, allowance_s),
	  offsetof(Fleetbench__Cost, has_allowance_s) },
};

/* One Cost's sample of the family at cost_families[k]. */
static void cost_sample(struct out *o, size_t k, const Fleetbench__Cost *c)
{
	const char *field = (const char *)c + cost_families[k].offset;

	if (cost_families[k].has &&
	    !*(const protobuf_c_boolean *)((const char *)c +
					   cost_families[k].has))
		return;

	if (cost_families[k].bytes)
		sample_u64(o, *(const uint64_t *)field, "bench", c->benchmark,
			   NULL);
	else
		sample(o, *(const double *)field, "bench", c->benchmark, NULL);
}

static void cost_part(struct out *o, const Fleetbench__Report *rep)
{
	for (size_t k = 0; k < ARRAY_SIZE(cost_families); k++) {
		family(o, cost_families[k].name, "gauge",
		       cost_families[k].help);
		for (size_t i = 0; i < rep->n_costs; i++)
			cost_sample(o, k, rep->costs[i]);
		if (rep->cost_total)
			cost_sample(o, k, rep->cost_total);
	}
}

/* The host labels of every sample, escaped, in o->host. */
static int host_labels(struct out *o, const Fleetbench__Report *rep)
{
	const Fleetbench__Host *h = rep->host;
	_cleanup_free_ char *p = textfile_escape(h ? h->provider : NULL);
	_cleanup_free_ char *t = textfile_escape(h ? h->instance_type : NULL);
	_cleanup_free_ char *k =
		textfile_escape(rep->kernel ? rep->kernel->release : NULL);

	if (!p || !t || !k ||
	    asprintf(&o->host,
		     "provider=\"%s\",instance_type=\"%s\",kernel=\"%s\"", p, t,
		     k) < 0) {
		o->host = NULL;
		return -ENOMEM;
	}
	return 0;
}

int textfile_format(const Fleetbench__Report *rep, char **ret, size_t *ret_len)
{
	struct out o = {0};
	char *buf = NULL;
	size_t len = 0;
	int r = host_labels(&o, rep);

	if (r < 0)
		return r;
	o.f = open_memstream(&buf, &len);
	if (!o.f) {
		free(o.host);
		return -ENOMEM;
	}
	run_part(&o, rep);
	/* from the probe, as the collector takes them (older reports: as
	 * they carry them) */
	if (rep->probe) {
		Fleetbench__Capabilities *c = NULL;

		if (probe_derive_capabilities(rep->probe, &c) < 0)
			o.oom = true;
		else
			capabilities_part(&o, c);
		if (c)
			fleetbench__capabilities__free_unpacked(c, NULL);
	} else if (rep->capabilities) {
		capabilities_part(&o, rep->capabilities);
	}
	bench_part(&o, rep);
	comparison_part(&o, rep);
	headline_part(&o, rep);
	cost_part(&o, rep);
	/* a memstream fails only for memory */
	r = ferror(o.f) || o.oom ? -ENOMEM : 0;
	if (fclose(o.f) != 0)
		r = -ENOMEM;
	free(o.host);
	if (r < 0) {
		free(buf);
		return r;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

int textfile_write(const Fleetbench__Report *rep, const char *dir)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int dfd = -1;
	char tmp[TMP_LEN];
	size_t len;
	int r;

	if (!dir || !*dir)
		return -EINVAL;
	r = textfile_format(rep, &text, &len);
	if (r < 0)
		return r;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	/* hidden and not *.prom: node_exporter never reads it half-written */
	snprintf(tmp, sizeof(tmp), ".fleetbench.prom.%ld.tmp", (long)getpid());
	/* a crash's file of the same pid: ours now */
	if (unlinkat(dfd, tmp, 0) < 0 && errno != ENOENT)
		return -errno;
	r = durable_write_tmp_mode(dfd, tmp, 0644, text, len, "", 0);
	if (r < 0)
		return r;
	r = fault_point("textfile-before-rename");
	if (r >= 0 && renameat(dfd, tmp, dfd, TEXTFILE_NAME) < 0)
		r = -errno;
	if (r < 0) {
		unlinkat(dfd, tmp, 0);
		return r;
	}
	/* the rename persists once the directory is synced */
	return fsync(dfd) < 0 ? -errno : 0;
}
