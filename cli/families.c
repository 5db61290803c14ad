/* SPDX-License-Identifier: MIT */
/* The headline figures as the CLI shows them (families.h). */
#include "families.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "figures.h"
#include "list.h"
#include "log.h"

#define USAGE_WIDTH 79

bool in_list(const char *list, const char *name)
{
	size_t n = strlen(name), len;
	const char *cur = list, *item;

	while ((item = list_next(&cur, ',', &len)))
		if (len == n && !strncmp(item, name, n))
			return true;
	return false;
}

/* Whether item (len bytes) picks family: its name, or when no family
 * has that name, the first letters of it. */
static bool picks(const char *item, size_t len, const char *family)
{
	bool named = false;

	for (size_t i = 0; i < FIGURES_N && !named; i++)
		named = strlen(figure_decls[i].family) == len &&
			!strncmp(figure_decls[i].family, item, len);
	return named ? strlen(family) == len && !strncmp(family, item, len) :
		       !strncmp(family, item, len);
}

/* Whether the --figures list picks family. */
static bool list_picks(const char *list, const char *family)
{
	const char *cur = list, *item;
	size_t len;

	while ((item = list_next(&cur, ',', &len)))
		if (picks(item, len, family))
			return true;
	return false;
}

/* The columns of figure i: the median, then its interval's ends. */
static const char *column(size_t i, int which)
{
	static char names[FIGURES_N][3][64];
	static const char *const suffix[3] = { "", "_lo", "_hi" };

	if (!names[i][which][0])
		snprintf(names[i][which], sizeof(names[i][which]), "%s%s",
			 figure_decls[i].name, suffix[which]);
	return names[i][which];
}

/* Whether figure i is its family's first (the declaration's order). */
static bool family_lead(size_t i)
{
	return i == 0 || strcmp(figure_decls[i - 1].family,
				figure_decls[i].family);
}

int families_hide(const char *figures, enum out_format format, bool wide,
		  const char **hide, size_t room)
{
	const char *cur, *item;
	size_t n = 0, len;
	bool all, leads = false;

	if (!figures) {
		leads = format == OUT_TABLE && !wide;
		figures = "all";
	}
	all = in_list(figures, "all") && !leads;
	cur = figures;
	while ((item = list_next(&cur, ',', &len))) {
		bool known = len == 3 && !strncmp(item, "all", 3);

		for (size_t i = 0; i < FIGURES_N && !known && len; i++)
			known = picks(item, len, figure_decls[i].family);
		if (!known) {
			log_error("--figures: unknown figure family '%.*s', one of %s",
				  (int)len, item,
				  families_usage("{families:0}, all"));
			return -EINVAL;
		}
	}
	while (hide[n])
		n++;
	for (size_t i = 0; !all && i < FIGURES_N; i++) {
		if (leads ? family_lead(i) :
			    list_picks(figures, figure_decls[i].family))
			continue;
		for (int c = 0; c < 3; c++) {
			if (n + 2 > room) {
				log_error("--figures: too many columns to hide");
				return -ENOSPC;
			}
			hide[n++] = column(i, c);
			hide[n] = NULL;
		}
	}
	return 0;
}

/* Whether figure i belongs in list (a {LIST} name), and the name it
 * shows there (its family for families, once each). */
static const char *list_item(const char *list, size_t len, size_t i)
{
	const struct figure_decl *d = &figure_decls[i];

#define IS(s) (len == strlen(s) && !strncmp(list, s, len))
	if (IS("families"))
		return i == 0 || strcmp(figure_decls[i - 1].family, d->family) ?
			       d->family :
			       NULL;
	if (IS("figures"))
		return d->name;
	if (IS("higher"))
		return d->higher_is_better ? d->name : NULL;
	if (IS("lower"))
		return d->higher_is_better ? NULL : d->name;
	if (IS("per_vcpu"))
		return d->per_vcpu ? d->name : NULL;
	if (IS("price")) /* fleetbench_price_metrics() */
		return d->per_vcpu && d->higher_is_better ? d->name : NULL;
#undef IS
	return NULL;
}

/* Writes list's names to out, comma-separated, wrapped at USAGE_WIDTH and
 * indented by col. */
static void write_list(FILE *out, const char *list, size_t len, int col)
{
	int at = 0;
	bool first = true;

	for (size_t i = 0; i < FIGURES_N; i++) {
		const char *name = list_item(list, len, i);
		int w;

		if (!name)
			continue;
		w = (int)strlen(name) + 1; /* and its comma */
		if (first) {
			at = fprintf(out, "%*s%s", col, "", name);
		} else if (at + 2 + w > USAGE_WIDTH) {
			at = fprintf(out, ",\n%*s%s", col, "", name) - 2;
		} else {
			at += fprintf(out, ", %s", name);
		}
		first = false;
	}
}

static char *usage_make(const char *templ)
{
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);

	if (!out)
		return NULL;
	for (const char *p = templ; *p;) {
		const char *open = strchr(p, '{'), *colon, *close;

		if (!open || !(close = strchr(open, '}')) ||
		    !(colon = memchr(open, ':', (size_t)(close - open)))) {
			fputs(p, out);
			break;
		}
		fwrite(p, 1, (size_t)(open - p), out);
		write_list(out, open + 1, (size_t)(colon - open - 1),
			   atoi(colon + 1));
		p = close + 1;
	}
	if (fclose(out) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

const char *families_usage(const char *templ)
{
	static struct {
		const char *templ;
		char *text;
	} made[8];

	for (size_t i = 0; i < ARRAY_SIZE(made); i++) {
		if (made[i].templ == templ)
			return made[i].text;
		if (!made[i].templ) {
			made[i].text = usage_make(templ);
			if (!made[i].text)
				return templ; /* out of memory: as it is */
			made[i].templ = templ;
			return made[i].text;
		}
	}
	return templ; /* made[] holds every template of the CLI */
}
