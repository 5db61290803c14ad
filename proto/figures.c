/* SPDX-License-Identifier: MIT */
/* The headline figures' declarations as C values (figures.h). */
#include "figures.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define HIGHER true
#define LOWER false
#define RATIO FIGURE_RATIO
#define VALUE FIGURE_VALUE

const struct figure_decl figure_decls[FIGURES_N] = {
#define FIGURE(id_, name_, family_, kind_, benchmark_, variant_, base_,  \
	       metric_, unit_, better_, per_vcpu_, alert_, label_, note_)   \
	[FIGURE_ID_##name_] = {                                             \
		.id = id_,                                                  \
		.name = #name_,                                             \
		.family = #family_,                                         \
		.kind = kind_,                                              \
		.benchmark = benchmark_,                                    \
		.variant = variant_,                                        \
		.base = base_,                                              \
		.metric = metric_,                                          \
		.unit = unit_,                                              \
		.higher_is_better = better_,                                \
		.per_vcpu = per_vcpu_,                                      \
		.alert_min_change = alert_,                                 \
		.label = label_,                                            \
		.note = note_,                                              \
	},
#include "figures.def"
#undef FIGURE
};

const struct figure_decl *figure_find(const char *name)
{
	for (size_t i = 0; i < FIGURES_N; i++)
		if (!strcmp(figure_decls[i].name, name))
			return &figure_decls[i];
	return NULL;
}

static int bad(char *err, size_t err_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int bad(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, err_len, fmt, ap);
	va_end(ap);
	return -1;
}

static bool name_ok(const char *s)
{
	size_t len = strlen(s);

	return len >= 1 && len <= 40 && s[0] >= 'a' && s[0] <= 'z' &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_") == len;
}

/* Text for tables and SQL literals (a quote is doubled there; a
 * backslash would mean something else without standard_conforming_strings). */
static bool text_ok(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f || *s == '\\')
			return false;
	return true;
}

int figures_check(char *err, size_t err_len)
{
	for (size_t i = 0; i < FIGURES_N; i++) {
		const struct figure_decl *f = &figure_decls[i];
		const char *texts[] = { f->benchmark, f->variant, f->base,
					f->metric, f->unit, f->label,
					f->note };

		if (f->id < 1 || f->id > FIGURES_ID_MAX)
			return bad(err, err_len, "figure %s: id %d is not 1 to %d",
				   f->name, f->id, FIGURES_ID_MAX);
		if (!name_ok(f->name) || !name_ok(f->family))
			return bad(err, err_len,
				   "figure %zu: name '%s' or family '%s' is not [a-z][a-z0-9_]{0,39}",
				   i, f->name, f->family);
		for (size_t t = 0; t < sizeof(texts) / sizeof(texts[0]); t++)
			if (!text_ok(texts[t]))
				return bad(err, err_len,
					   "figure %s: '%s' holds a backslash or a control byte",
					   f->name, texts[t]);
		if (!*f->benchmark || !*f->metric || !*f->unit || !*f->label ||
		    !*f->note)
			return bad(err, err_len,
				   "figure %s: benchmark, metric, unit, label and note must not be empty",
				   f->name);
		if (f->kind == FIGURE_VALUE && (!*f->variant || *f->base))
			return bad(err, err_len,
				   "figure %s: a value has a variant and no base",
				   f->name);
		if (f->kind == FIGURE_RATIO && !*f->variant != !*f->base)
			return bad(err, err_len,
				   "figure %s: a ratio has both its variant and its base, or neither",
				   f->name);
		if (f->alert_min_change < 0 || f->alert_min_change > 10 ||
		    (f->alert_min_change > 0 && f->kind != FIGURE_RATIO))
			return bad(err, err_len,
				   "figure %s: alert %g: a ratio's least change in (0, 10], or 0",
				   f->name, f->alert_min_change);
		for (size_t j = 0; j < i; j++) {
			if (!strcmp(figure_decls[j].name, f->name))
				return bad(err, err_len,
					   "figure %s: declared twice",
					   f->name);
			if (figure_decls[j].id == f->id)
				return bad(err, err_len,
					   "figure %s: id %d is %s's",
					   f->name, f->id, figure_decls[j].name);
			/* a family's figures stand together */
			if (!strcmp(figure_decls[j].family, f->family) &&
			    strcmp(figure_decls[i - 1].family, f->family))
				return bad(err, err_len,
					   "figure %s: family %s is split",
					   f->name, f->family);
		}
	}
	return 0;
}
