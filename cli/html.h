/* SPDX-License-Identifier: MIT */
/*
 * What the parts of `fleetbench report` share (html_report.c: the page,
 * the matrix, the changes and alerts; html_chart.c: escaping, rows and
 * charts; html_sections.c: the sections of issue 15's benchmarks). The
 * rows are those of fleet_kernels_by(), an instance type's kernels
 * together, oldest first.
 */
#ifndef FLEETBENCH_HTML_H
#define FLEETBENCH_HTML_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>

/* Colours of a type's kernels, oldest first (Tableau 10). */
#define HTML_COLOURS 10
extern const char *const html_kernel_colour[HTML_COLOURS];

/* Writes s with &, <, >, " and ' escaped for HTML text and attributes
 * (nothing for NULL). */
void html_esc(FILE *f, const char *s);

/* Column col's value in row r, NULL for SQL NULL or no such column. */
const char *html_val(const PGresult *res, int r, const char *col);

/* The same as a number, NAN for NULL. */
double html_num(const PGresult *res, int r, const char *col);

/* Whether row r starts another instance type than row r - 1 (or, with
 * report --by tag.KEY, other tags: a tags column). */
bool html_new_type(const PGresult *res, int r);

/* Row r's instance type as the report names it, in HTML: "provider
 * type", and " &#183; team=storage" (a middle dot) when the row has tags
 * (report --by tag.KEY). */
void html_type_label(FILE *f, const PGresult *res, int r);

/* One cell of column col of row r, escaped, of class cls (NULL: none). */
void html_td(FILE *f, const PGresult *res, int r, const char *col,
	     const char *cls);

/*
 * One SVG chart of metric (with its columns metric_lo and metric_hi):
 * per instance type a heading row, then one row per kernel with a bar
 * from the interval's low to high end, a dot at the median (hollow when
 * there are too few runs for an interval) and the run count. The axis
 * holds 1, marked dashed (no gain), for a ratio, else 0.
 */
void html_chart(FILE *f, const PGresult *res, const char *metric, bool ratio);

/*
 * The headline figures' charts (html_sections.c): the THP and io_uring
 * charts, then the sections of the benchmark families of issue 15
 * (mmap'd-file reads, memory bandwidth, I/O scaling, write-back, the
 * database under THP modes), each with the charts of its figures, or a
 * note that no run measured them.
 */
void html_families(FILE *f, const PGresult *res);

#endif
