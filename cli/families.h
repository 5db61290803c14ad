/* SPDX-License-Identifier: MIT */
/*
 * The headline figures as the CLI shows them, from their declarations
 * (proto/figures.def): the families of --figures and the lists in the
 * usage texts.
 */
#ifndef FLEETBENCH_FAMILIES_H
#define FLEETBENCH_FAMILIES_H

#include <stdbool.h>
#include <stddef.h>

#include "out.h"

/* What --figures takes besides the families: every figure. Unless it is
 * given, a table fitting a terminal shows each family's first figure (its
 * headline); a --wide table, CSV and JSON, read by programs that pick
 * columns by name, show every family. */
#define FAMILIES_USAGE                                                        \
	"      --figures FAMILIES   the headline figures shown, comma-separated:\n" \
	"{families:27}, or all; a\n"                                           \
	"                           family's first letters pick each family\n"   \
	"                           they begin (io: iouring, ioscale); default:\n" \
	"                           a table the first figure of each family,\n"  \
	"                           --wide, CSV and JSON all\n"

/* Whether name is an item of the comma-separated list. */
bool in_list(const char *list, const char *name);

/*
 * Appends to hide (NULL-terminated, room entries) the columns (each
 * figure's median, _lo and _hi) of the families that figures (a --figures
 * argument; NULL: the default, each family's first figure in a table
 * that is not wide, else all) leaves out. An item that is no family's
 * name picks the families whose names begin with it. Returns 0, or logs
 * and returns -EINVAL for an item that picks no family, or -ENOSPC.
 */
int families_hide(const char *figures, enum out_format format, bool wide,
		  const char **hide, size_t room);

/*
 * templ with each {LIST:COL} replaced by that list of figure names, its
 * lines wrapped within 79 columns and indented by COL spaces (the first
 * too): LIST is families, figures (every figure), higher and lower (the
 * figures better higher, lower), per_vcpu (those a rank may divide by
 * vCPUs), price (those price/performance ranks by: per_vcpu and higher).
 * The text is made once per template and kept; templ as it is
 * when out of memory.
 */
const char *families_usage(const char *templ);

#endif
