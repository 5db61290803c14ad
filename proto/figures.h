/* SPDX-License-Identifier: MIT */
/*
 * The headline figures as C values: the rows of proto/figures.def, in its
 * order (docs/architecture.md, "The figures").
 */
#ifndef FLEETBENCH_FIGURES_H
#define FLEETBENCH_FIGURES_H

#include <stdbool.h>
#include <stddef.h>

enum figure_kind {
	FIGURE_RATIO, /* the report's comparison of the figure's name */
	FIGURE_VALUE, /* the median of benchmark/variant/metric */
};

struct figure_decl {
	int id; /* where it is kept: 1 and up, never changed */
	const char *name, *family;
	enum figure_kind kind;
	/* variant over base ("" both where the run names them itself) for
	 * a ratio; base "" for a value */
	const char *benchmark, *variant, *base, *metric;
	const char *unit;
	bool higher_is_better;
	bool per_vcpu;
	double alert_min_change; /* 0: the figure does not alert */
	const char *label, *note;
};

/* Each figure's index in figure_decls[] (its order, not its id):
 * FIGURE_ID_thp_speedup, ... */
enum figure_id {
#define FIGURE(id, name, ...) FIGURE_ID_##name,
#include "figures.def"
#undef FIGURE
	FIGURES_N
};

/* the largest id a figure may have: the length of a run's figures */
#define FIGURES_ID_MAX 1000

extern const struct figure_decl figure_decls[FIGURES_N];

/* The declaration named name, or NULL. */
const struct figure_decl *figure_find(const char *name);

/*
 * Checks the declarations (ids 1 to FIGURES_ID_MAX, unique; names
 * [a-z][a-z0-9_]{0,39}, unique; a family
 * once, its figures together; texts without a backslash or a control
 * byte; an alert change in (0, 10], ratios only): 0, or -1 with err naming
 * the first bad one.
 */
int figures_check(char *err, size_t err_len);

#endif
