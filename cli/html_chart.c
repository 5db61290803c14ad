/* SPDX-License-Identifier: MIT */
/*
 * The report's building blocks (html.h): HTML escaping, reading a row of
 * fleet_kernels_by() by column name, and the SVG chart of one figure per
 * instance type and kernel with its 95% intervals.
 */
#include "html.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

/* Chart geometry, in CSS pixels. */
#define CHART_W 960
#define LABEL_W 300 /* instance type and kernel names */
#define COUNT_W 90 /* "9 runs" */
#define PLOT_W (CHART_W - LABEL_W - COUNT_W)
#define ROW_H 20
#define AXIS_H 30

const char *const html_kernel_colour[HTML_COLOURS] = {
	"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
};

void html_esc(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&#39;", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

const char *html_val(const PGresult *res, int r, const char *col)
{
	int c = PQfnumber(res, col);

	return c < 0 || PQgetisnull(res, r, c) ? NULL : PQgetvalue(res, r, c);
}

double html_num(const PGresult *res, int r, const char *col)
{
	const char *v = html_val(res, r, col);

	return v ? strtod(v, NULL) : NAN;
}

bool html_new_type(const PGresult *res, int r)
{
	const char *tags, *before;

	if (r == 0 ||
	    strcmp(html_val(res, r, "provider"),
		   html_val(res, r - 1, "provider")) ||
	    strcmp(html_val(res, r, "instance_type"),
		   html_val(res, r - 1, "instance_type")))
		return true;
	/* NULL without --by tag.KEY, or without a tags column */
	tags = html_val(res, r, "tags");
	before = html_val(res, r - 1, "tags");
	return (tags || before) && (!tags || !before || strcmp(tags, before));
}

void html_td(FILE *f, const PGresult *res, int r, const char *col,
	     const char *cls)
{
	if (cls)
		fprintf(f, "<td class=\"%s\">", cls);
	else
		fputs("<td>", f);
	html_esc(f, html_val(res, r, col));
	fputs("</td>", f);
}

void html_type_label(FILE *f, const PGresult *res, int r)
{
	const char *tags = html_val(res, r, "tags");

	html_esc(f, html_val(res, r, "provider"));
	fputc(' ', f);
	html_esc(f, html_val(res, r, "instance_type"));
	if (tags) {
		fputs(" &#183; ", f);
		html_esc(f, tags);
	}
}

struct axis {
	double lo, hi, step;
};

/* A scale over every value of metric and its interval, with 1 (no gain)
 * in it for a ratio, 0 for an absolute figure, and a tick step of 1, 2
 * or 5 times a power of ten. */
static struct axis axis_of(const PGresult *res, const char *metric,
			   bool ratio)
{
	char lo_col[64], hi_col[64];
	struct axis a = { ratio ? 1 : 0, ratio ? 1 : 0, 0 };
	double mag;

	snprintf(lo_col, sizeof(lo_col), "%s_lo", metric);
	snprintf(hi_col, sizeof(hi_col), "%s_hi", metric);
	for (int r = 0; r < PQntuples(res); r++) {
		const char *cols[] = { metric, lo_col, hi_col };

		for (size_t i = 0; i < ARRAY_SIZE(cols); i++) {
			double v = html_num(res, r, cols[i]);

			if (!isnan(v)) {
				a.lo = fmin(a.lo, v);
				a.hi = fmax(a.hi, v);
			}
		}
	}
	mag = pow(10, floor(log10((a.hi - a.lo) / 5 > 0 ? (a.hi - a.lo) / 5 :
							  0.1)));
	a.step = mag;
	if ((a.hi - a.lo) / a.step > 10)
		a.step = 2 * mag;
	if ((a.hi - a.lo) / a.step > 10)
		a.step = 5 * mag;
	a.lo = floor(a.lo / a.step) * a.step;
	a.hi = ceil(a.hi / a.step) * a.step;
	if (a.hi <= a.lo)
		a.hi = a.lo + a.step;
	return a;
}

static double xpos(const struct axis *a, double v)
{
	return LABEL_W + (v - a->lo) / (a->hi - a->lo) * PLOT_W;
}

void html_chart(FILE *f, const PGresult *res, const char *metric, bool ratio)
{
	struct axis a = axis_of(res, metric, ratio);
	char lo_col[64], hi_col[64];
	int rows = PQntuples(res), lines = 0, y, k = 0;

	snprintf(lo_col, sizeof(lo_col), "%s_lo", metric);
	snprintf(hi_col, sizeof(hi_col), "%s_hi", metric);
	for (int r = 0; r < rows; r++)
		lines += html_new_type(res, r) ? 2 : 1;
	fprintf(f,
		"<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" "
		"width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
		"data-metric=\"%s\">\n",
		CHART_W, lines * ROW_H + AXIS_H, CHART_W, lines * ROW_H + AXIS_H,
		metric);
	/* grid and ticks */
	for (double t = a.lo; t <= a.hi + a.step / 2; t += a.step) {
		double x = xpos(&a, t);

		fprintf(f,
			"<line class=\"grid\" x1=\"%.1f\" y1=\"0\" x2=\"%.1f\" y2=\"%d\"/>"
			"<text class=\"tick\" x=\"%.1f\" y=\"%d\">%g</text>\n",
			x, x, lines * ROW_H, x, lines * ROW_H + 16, t);
	}
	if (ratio)
		fprintf(f,
			"<line class=\"one\" x1=\"%.1f\" y1=\"0\" x2=\"%.1f\" y2=\"%d\"/>\n",
			xpos(&a, 1), xpos(&a, 1), lines * ROW_H);
	y = 0;
	for (int r = 0; r < rows; r++) {
		const char *median = html_val(res, r, metric);
		double m = html_num(res, r, metric), lo = html_num(res, r, lo_col),
		       hi = html_num(res, r, hi_col);
		double cy;

		if (html_new_type(res, r)) {
			k = 0;
			fprintf(f, "<g class=\"type\" data-instance-type=\"");
			html_esc(f, html_val(res, r, "instance_type"));
			if (html_val(res, r, "tags")) {
				fprintf(f, "\" data-tags=\"");
				html_esc(f, html_val(res, r, "tags"));
			}
			fprintf(f, "\"><text class=\"type\" x=\"4\" y=\"%d\">",
				y + ROW_H - 6);
			html_type_label(f, res, r);
			fprintf(f, "</text></g>\n");
			y += ROW_H;
		}
		cy = y + ROW_H / 2.0;
		fprintf(f, "<g class=\"kernel\" data-instance-type=\"");
		html_esc(f, html_val(res, r, "instance_type"));
		fprintf(f, "\" data-kernel=\"");
		html_esc(f, html_val(res, r, "kernel"));
		fprintf(f, "\" data-method=\"");
		html_esc(f, html_val(res, r, "method"));
		if (html_val(res, r, "tags")) {
			fprintf(f, "\" data-tags=\"");
			html_esc(f, html_val(res, r, "tags"));
		}
		fprintf(f, "\"><title>");
		html_type_label(f, res, r);
		fputc(' ', f);
		html_esc(f, html_val(res, r, "kernel"));
		fprintf(f, ": %s", median ? median : "not measured");
		if (!isnan(lo))
			fprintf(f, " [%s, %s]", html_val(res, r, lo_col),
				html_val(res, r, hi_col));
		fprintf(f, ", %s runs of method ", html_val(res, r, "runs"));
		html_esc(f, html_val(res, r, "method"));
		fprintf(f, "</title>");
		fprintf(f, "<text class=\"kernel\" x=\"20\" y=\"%d\">", y + ROW_H - 6);
		html_esc(f, html_val(res, r, "kernel"));
		fprintf(f, "</text>");
		if (!isnan(lo))
			fprintf(f,
				"<line class=\"ci\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>"
				"<line class=\"ci\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>"
				"<line class=\"ci\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>",
				xpos(&a, lo), cy, xpos(&a, hi), cy,
				html_kernel_colour[k % ARRAY_SIZE(html_kernel_colour)],
				xpos(&a, lo), cy - 4, xpos(&a, lo), cy + 4,
				html_kernel_colour[k % ARRAY_SIZE(html_kernel_colour)],
				xpos(&a, hi), cy - 4, xpos(&a, hi), cy + 4,
				html_kernel_colour[k % ARRAY_SIZE(html_kernel_colour)]);
		if (!isnan(m))
			fprintf(f,
				"<circle class=\"median%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" stroke=\"%s\" fill=\"%s\"/>",
				isnan(lo) ? " few" : "", xpos(&a, m), cy,
				html_kernel_colour[k % ARRAY_SIZE(html_kernel_colour)],
				isnan(lo) ? "#fff" :
					    html_kernel_colour[k % ARRAY_SIZE(html_kernel_colour)]);
		fprintf(f, "<text class=\"runs\" x=\"%d\" y=\"%d\">%s runs%s</text></g>\n",
			LABEL_W + PLOT_W + 8, y + ROW_H - 6, html_val(res, r, "runs"),
			isnan(m) ? ", n/a" : "");
		y += ROW_H;
		k++;
	}
	fprintf(f, "</svg>\n");
}

