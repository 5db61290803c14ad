/* SPDX-License-Identifier: MIT */
/*
 * Prints a query result as the `fleetbench` commands' --format asks: an
 * aligned table, CSV or JSON. Every command is "run one parameterised
 * query against a view, print the result", so this is the one printer.
 * Nothing here logs: errors come back as -errno.
 */
#ifndef FLEETBENCH_OUT_H
#define FLEETBENCH_OUT_H

#include <libpq-fe.h>
#include <stdio.h>

enum out_format {
	OUT_TABLE,
	OUT_CSV,
	OUT_JSON,
};

/* "table", "csv" or "json" into *ret; -EINVAL for anything else. */
int out_format_parse(const char *name, enum out_format *ret);

/*
 * Prints every row of res (a TUPLES_OK result) to f, leaving out the
 * columns named in hide (a NULL-terminated list, or NULL):
 *
 * - table: the column names, a rule, then one line per row, each column
 *   as wide as its widest value (counted in UTF-8 characters), numbers
 *   right-aligned, NULL empty, and "(N rows)" after the last row. A
 *   column X directly followed by X_lo and X_hi (an estimate and its
 *   confidence interval) is one column X of cells "X [X_lo, X_hi]", or
 *   "X" alone when the interval is NULL;
 * - csv: a header line of column names, then one line per row, LF line
 *   ends; a field holding a comma, a double quote, CR or LF (or that is
 *   "\.") is quoted with its double quotes doubled (RFC 4180); NULL is an
 *   empty field: byte for byte what psql --csv prints;
 * - json: an array of one object per row, members in column order;
 *   numbers (integer, float and numeric columns, by PQftype) are JSON
 *   numbers with the server's digits, NaN and infinities null; booleans
 *   are true/false; json and jsonb columns are embedded as JSON; NULL is
 *   null; anything else is a string.
 *
 * Returns 0, -ENOMEM, -EINVAL (a json column the server sent that does
 * not parse) or -EIO when writing to f failed.
 */
int out_print(FILE *f, const PGresult *res, enum out_format fmt,
	      const char *const *hide);

/* How out_print_narrow() lays a table out. */
struct out_narrow {
	/* the most characters a line may take (a terminal's width) */
	unsigned width;
	/* columns printed on lines of their own under each row, wrapped
	 * within width and indented (a sentence: an alert's summary),
	 * comma-separated (more than one: each line says its name), or
	 * NULL */
	const char *detail;
	/* where the columns left out are named (standard error), or NULL */
	FILE *note;
	/* how the note names the program ("fleetbench") */
	const char *prog;
};

/*
 * The table of out_print() laid out to be read in a terminal of
 * o->width characters (the default of the `fleetbench` commands; --wide
 * gives out_print()'s):
 *
 * - an estimate with its interval is "1.38 ±2%" (three significant
 *   digits, the interval's farther end as a share of the estimate; "1.38"
 *   alone without an interval), every other fractional number three
 *   significant digits; booleans yes and no; times to the minute, their
 *   zone said once under the header ("UTC"); a JSON array of strings as
 *   the strings, comma-separated; text longer than 20 characters cut
 *   with an ellipsis;
 * - a header longer than its column's values is broken in two at an
 *   underscore; under it, a line of units: each headline figure's unit
 *   from its declaration (proto/figures.def), the times' zone;
 * - a column that is empty in every row is left out; a line wider than
 *   o->width has its widest text cut with an ellipsis, a column at a
 *   time, down to 20 characters (or its header); the columns are then
 *   kept from the left while the line fits, and the ones that do not fit
 *   are named on o->note, with how to see them (--wide).
 *
 * CSV and JSON are out_print()'s alone: every column, every digit.
 * Returns 0, -ENOMEM or -EIO.
 */
int out_print_narrow(FILE *f, const PGresult *res, const char *const *hide,
		     const struct out_narrow *o);

/* The characters of UTF-8 text s (what a terminal shows of it). */
size_t out_width(const char *s);

/* An estimate and its interval (the server's text; lo, hi NULL: none) as
 * a narrow table prints it, "1.38 ±2%", into buf. */
void out_estimate(char *buf, size_t n, const char *median, const char *lo,
		  const char *hi);

/* text to f wrapped at blanks within width characters, its first line
 * indented by first blanks, the others by indent. */
void out_wrapped(FILE *f, const char *text, unsigned width, size_t first,
		 size_t indent);

#endif
