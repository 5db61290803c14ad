/* SPDX-License-Identifier: MIT */
/* The profiles of a bench run, and its method key: the profile and what
 * overrides it. */
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "method.h"

int bench_params_profile(struct bench_params *p, const char *profile)
{
	const struct method_profile *q = method_profile(profile);

	if (!q)
		return -EINVAL;
#define X(field, size) p->field = q->field;
	METHOD_FIELDS(X)
	METHOD_OPTIONAL_FIELDS(X)
#undef X
	p->timeout_s = q->timeout_s;
	p->target_pct = q->target_pct;
	p->budget_s = q->budget_s;
	p->max_repeats = q->max_repeats;
	p->max_seconds = q->max_s;
	return 0;
}

/* Sets the method's numbers from p, each field of the same name. */
static void method_numbers(Fleetbench__Method *m, const struct bench_params *p)
{
#define X(field, size) m->field = p->field;
	METHOD_FIELDS(X)
#undef X
#define X(field, size)           \
	m->field = p->field;     \
	m->has_##field = true;
	METHOD_OPTIONAL_FIELDS(X)
#undef X
}

int bench_method_new(const struct bench_params *p, const char *only,
		     Fleetbench__Method **ret)
{
	size_t nran = 0, nprofile = 0;
	Fleetbench__Method *m;

	if (!method_profile(p->profile))
		return -EINVAL;
	m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	fleetbench__method__init(m);
	m->profile = strdup(p->profile);
	m->only = calloc(bench_count(), sizeof(*m->only));
	if (!m->profile || !m->only)
		goto oom;
	method_numbers(m, p);
	for (size_t i = 0; i < bench_count(); i++) {
		const char *name = bench_get(i)->name;

		if (bench_selected(bench_get(i), p->profile, NULL))
			nprofile++;
		if (!bench_selected(bench_get(i), p->profile, only))
			continue;
		m->only[nran] = strdup(name);
		if (!m->only[nran])
			goto oom;
		nran++;
		m->n_only = nran;
	}
	/* A subset is its own method; the profile's own benchmarks are no
	 * subset. A full_only benchmark named in a quick or standard run
	 * makes the list differ too. */
	bool same = nran == nprofile;

	for (size_t i = 0; same && i < bench_count(); i++)
		same = bench_selected(bench_get(i), p->profile, NULL) ==
		       bench_selected(bench_get(i), p->profile, only);
	if (same) {
		for (size_t i = 0; i < nran; i++)
			free(m->only[i]);
		m->n_only = 0;
	}
	m->randread_file = p->randread_file != NULL;
	m->has_adaptive = true;
	m->adaptive = p->adaptive;
	if (p->adaptive) {
		m->has_target_half_width = m->has_budget_s = true;
		m->has_max_repeats = true;
		m->target_half_width = (double)p->target_pct / 100.0;
		m->budget_s = p->budget_s;
		m->max_repeats = p->max_repeats;
	}
	if (method_key(m, &m->key) < 0)
		goto oom;
	*ret = m;
	return 0;
oom:
	fleetbench__method__free_unpacked(m, NULL);
	return -ENOMEM;
}
