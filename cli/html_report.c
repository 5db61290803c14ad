/* SPDX-License-Identifier: MIT */
/*
 * fleetbench report: one self-contained HTML file (inline CSS and SVG, no
 * script, font or link to fetch) from the views: THP speedup and io_uring
 * gain per instance type and kernel with their 95% intervals and run
 * counts (fleet_kernels_by), the capability matrix with the runs whose
 * variants failed, what changed between kernels, and the open alerts when
 * the database has an alerts table.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "cmd.h"
#include "log.h"

enum {
	OPT_OUT = 0x100,
	OPT_SINCE,
	OPT_TITLE,
};

/* Chart geometry, in CSS pixels. */
#define CHART_W 960
#define LABEL_W 300 /* instance type and kernel names */
#define COUNT_W 90 /* "9 runs" */
#define PLOT_W (CHART_W - LABEL_W - COUNT_W)
#define ROW_H 20
#define AXIS_H 30

/* Colours of a type's kernels, oldest first (Tableau 10). */
static const char *const kernel_colour[] = {
	"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
};

static const char report_usage[] =
	"usage: fleetbench report --out FILE [--since DATE] [--title TEXT]\n"
	"                         [--method KEY | --profile NAME | --all-methods]\n"
	"                         [common options]\n"
	"\n"
	"Writes one self-contained HTML file (no script, font or link to fetch:\n"
	"it opens offline) with SVG charts of the THP speedup and the io_uring\n"
	"gain over pread per instance type, grouped by kernel, each with its 95%\n"
	"interval and run count; the capability matrix (instance type x kernel:\n"
	"io_uring usable, SQPOLL permitted, 1 GiB pages, THP mode); what changed\n"
	"between kernels; and the open alerts when the database has them.\n"
	"--format does not apply.\n"
	"\n"
	"options:\n"
	"      --out FILE           write the report here (replaced atomically)\n"
	"      --since DATE         only runs started at or after DATE\n"
	CMD_METHOD_USAGE
	"      --title TEXT         the page's title (default \"fleetbench report\")\n"
	"\n";

/* The columns of the kernels query, by name. */
static const char kernels_sql[] =
	"SELECT method, provider, instance_type, kernel, runs, few_runs, "
	"thp_speedup, thp_speedup_lo, thp_speedup_hi, thp_huge_fraction, "
	"iouring_vs_pread, iouring_vs_pread_lo, iouring_vs_pread_hi, "
	"iouring_share, sqpoll_share, hugepage_1g_share, thp_mode, changes, "
	"first_run, failed, failures "
	"FROM fleet_kernels_by(NULL, $1::timestamptz, $2)";

/*
 * Open alerts, one row per change on a new kernel of an instance type,
 * from the alerts table's columns as the issue names them (read through
 * to_jsonb, so a column it lacks reads as NULL rather than failing).
 */
static const char alerts_sql[] =
	"SELECT a->>'provider' AS provider, a->>'instance_type' AS instance_type, "
	"a->>'new_kernel' AS new_kernel, a->>'kind' AS kind, "
	"count(*) AS hosts, "
	"string_agg(DISTINCT a->>'old_kernel', ', ') AS old_kernels, "
	"string_agg(DISTINCT a->>'hostname', ', ') AS hostnames, "
	"min(a->>'created_at') AS created, "
	"(array_agg((a->'diff')::text ORDER BY a->>'hostname'))[1] AS diff "
	"FROM (SELECT to_jsonb(x) AS a FROM alerts AS x) AS s "
	/* open: acknowledged_at NULL, or an acknowledged boolean false */
	"WHERE coalesce(a->>'acknowledged_at', a->>'acknowledged', 'false') = 'false' "
	"GROUP BY 1, 2, 3, 4 ORDER BY min(a->>'created_at') DESC, 1, 2, 3, 4 "
	"LIMIT 200";

/* Writes s with &, <, >, " and ' escaped for HTML text and attributes. */
static void esc(FILE *f, const char *s)
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

/* A column's value in row r, NULL for SQL NULL. */
static const char *val(const PGresult *res, int r, const char *col)
{
	int c = PQfnumber(res, col);

	return c < 0 || PQgetisnull(res, r, c) ? NULL : PQgetvalue(res, r, c);
}

static double num(const PGresult *res, int r, const char *col)
{
	const char *v = val(res, r, col);

	return v ? strtod(v, NULL) : NAN;
}

/* Whether row r starts another instance type than row r - 1. */
static bool new_type(const PGresult *res, int r)
{
	return r == 0 ||
	       strcmp(val(res, r, "provider"), val(res, r - 1, "provider")) ||
	       strcmp(val(res, r, "instance_type"),
		      val(res, r - 1, "instance_type"));
}

/* ---- charts ---- */

struct axis {
	double lo, hi, step;
};

/* A scale over every value of metric and its interval, with 1 (no gain)
 * in it, and a tick step of 1, 2 or 5 times a power of ten. */
static struct axis axis_of(const PGresult *res, const char *metric)
{
	char lo_col[64], hi_col[64];
	struct axis a = { 1, 1, 0 };
	double mag;

	snprintf(lo_col, sizeof(lo_col), "%s_lo", metric);
	snprintf(hi_col, sizeof(hi_col), "%s_hi", metric);
	for (int r = 0; r < PQntuples(res); r++) {
		const char *cols[] = { metric, lo_col, hi_col };

		for (size_t i = 0; i < ARRAY_SIZE(cols); i++) {
			double v = num(res, r, cols[i]);

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

/*
 * One chart: per instance type a heading row, then one row per kernel
 * with a bar from the interval's low to high end, a dot at the median
 * (hollow when there are too few runs for an interval) and the run count.
 */
static void chart(FILE *f, const PGresult *res, const char *id,
		  const char *metric, const char *title, const char *unit_note)
{
	struct axis a = axis_of(res, metric);
	char lo_col[64], hi_col[64];
	int rows = PQntuples(res), lines = 0, y, k = 0;

	snprintf(lo_col, sizeof(lo_col), "%s_lo", metric);
	snprintf(hi_col, sizeof(hi_col), "%s_hi", metric);
	for (int r = 0; r < rows; r++)
		lines += new_type(res, r) ? 2 : 1;
	fprintf(f, "<section id=\"%s\">\n<h2>", id);
	esc(f, title);
	fprintf(f, "</h2>\n<p class=\"note\">");
	esc(f, unit_note);
	fprintf(f,
		"</p>\n<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" "
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
	fprintf(f,
		"<line class=\"one\" x1=\"%.1f\" y1=\"0\" x2=\"%.1f\" y2=\"%d\"/>\n",
		xpos(&a, 1), xpos(&a, 1), lines * ROW_H);
	y = 0;
	for (int r = 0; r < rows; r++) {
		const char *median = val(res, r, metric);
		double m = num(res, r, metric), lo = num(res, r, lo_col),
		       hi = num(res, r, hi_col);
		double cy;

		if (new_type(res, r)) {
			k = 0;
			fprintf(f, "<g class=\"type\" data-instance-type=\"");
			esc(f, val(res, r, "instance_type"));
			fprintf(f, "\"><text class=\"type\" x=\"4\" y=\"%d\">",
				y + ROW_H - 6);
			esc(f, val(res, r, "provider"));
			fputc(' ', f);
			esc(f, val(res, r, "instance_type"));
			fprintf(f, "</text></g>\n");
			y += ROW_H;
		}
		cy = y + ROW_H / 2.0;
		fprintf(f, "<g class=\"kernel\" data-instance-type=\"");
		esc(f, val(res, r, "instance_type"));
		fprintf(f, "\" data-kernel=\"");
		esc(f, val(res, r, "kernel"));
		fprintf(f, "\" data-method=\"");
		esc(f, val(res, r, "method"));
		fprintf(f, "\"><title>");
		esc(f, val(res, r, "provider"));
		fputc(' ', f);
		esc(f, val(res, r, "instance_type"));
		fputc(' ', f);
		esc(f, val(res, r, "kernel"));
		fprintf(f, ": %s", median ? median : "not measured");
		if (!isnan(lo))
			fprintf(f, " [%s, %s]", val(res, r, lo_col),
				val(res, r, hi_col));
		fprintf(f, ", %s runs of method ", val(res, r, "runs"));
		esc(f, val(res, r, "method"));
		fprintf(f, "</title>");
		fprintf(f, "<text class=\"kernel\" x=\"20\" y=\"%d\">", y + ROW_H - 6);
		esc(f, val(res, r, "kernel"));
		fprintf(f, "</text>");
		if (!isnan(lo))
			fprintf(f,
				"<line class=\"ci\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>"
				"<line class=\"ci\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>"
				"<line class=\"ci\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>",
				xpos(&a, lo), cy, xpos(&a, hi), cy,
				kernel_colour[k % ARRAY_SIZE(kernel_colour)],
				xpos(&a, lo), cy - 4, xpos(&a, lo), cy + 4,
				kernel_colour[k % ARRAY_SIZE(kernel_colour)],
				xpos(&a, hi), cy - 4, xpos(&a, hi), cy + 4,
				kernel_colour[k % ARRAY_SIZE(kernel_colour)]);
		if (!isnan(m))
			fprintf(f,
				"<circle class=\"median%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" stroke=\"%s\" fill=\"%s\"/>",
				isnan(lo) ? " few" : "", xpos(&a, m), cy,
				kernel_colour[k % ARRAY_SIZE(kernel_colour)],
				isnan(lo) ? "#fff" :
					    kernel_colour[k % ARRAY_SIZE(kernel_colour)]);
		fprintf(f, "<text class=\"runs\" x=\"%d\" y=\"%d\">%s runs%s</text></g>\n",
			LABEL_W + PLOT_W + 8, y + ROW_H - 6, val(res, r, "runs"),
			isnan(m) ? ", n/a" : "");
		y += ROW_H;
		k++;
	}
	fprintf(f, "</svg>\n</section>\n");
}

/* ---- capability matrix ---- */

/* A share of runs as a mark: yes (all), no (none), or the percentage. */
static void share_cell(FILE *f, const char *name, const char *share)
{
	double v = share ? strtod(share, NULL) : NAN;
	const char *cls = isnan(v) ? "unknown" : v >= 1 ? "yes" : v <= 0 ? "no" :
						     "some";

	fprintf(f, "<span class=\"cap %s\" data-cap=\"%s\">%s ", cls, name,
		name);
	if (isnan(v))
		fputs("?", f);
	else if (v >= 1)
		fputs("&#10003;", f);
	else if (v <= 0)
		fputs("&#10007;", f);
	else
		fprintf(f, "%.0f%%", 100 * v);
	fputs("</span>", f);
}

/* Runs with a failed variant, and which failed, when any did. */
static void failed_cell(FILE *f, const PGresult *res, int row)
{
	const char *failed = val(res, row, "failed");

	if (!failed || !strcmp(failed, "0"))
		return;
	fprintf(f, "<span class=\"cap failed\" data-cap=\"failed\" "
		   "data-failed=\"%s\">failed in %s of %s runs: ",
		failed, failed, val(res, row, "runs"));
	esc(f, val(res, row, "failures"));
	fputs("</span>", f);
}

/* The kernels in order of their first run anywhere in the fleet. */
static int kernel_columns(const PGresult *res, const char ***ret)
{
	int rows = PQntuples(res), n = 0;
	const char **k = calloc((size_t)rows + 1, sizeof(*k));
	const char **first = calloc((size_t)rows + 1, sizeof(*first));

	if (!k || !first) {
		free(k);
		free(first);
		return -ENOMEM;
	}
	for (int r = 0; r < rows; r++) {
		const char *name = val(res, r, "kernel");
		const char *when = val(res, r, "first_run");
		int i = 0;

		while (i < n && strcmp(k[i], name))
			i++;
		if (i == n) {
			k[n] = name;
			first[n++] = when;
		} else if (strcmp(when, first[i]) < 0) {
			first[i] = when;
		}
	}
	/* insertion sort by first run, then name: a few dozen at most */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 &&
				(strcmp(first[j], first[j - 1]) < 0 ||
				 (!strcmp(first[j], first[j - 1]) &&
				  strcmp(k[j], k[j - 1]) < 0));
		     j--) {
			const char *t = k[j];

			k[j] = k[j - 1];
			k[j - 1] = t;
			t = first[j];
			first[j] = first[j - 1];
			first[j - 1] = t;
		}
	free(first);
	*ret = k;
	return n;
}

static int matrix(FILE *f, const PGresult *res)
{
	_cleanup_free_ const char **kernels = NULL;
	int n = kernel_columns(res, &kernels), rows = PQntuples(res);

	if (n < 0)
		return n;
	fprintf(f, "<section id=\"capabilities\">\n<h2>Capabilities per instance type and kernel</h2>\n"
		   "<p class=\"note\">The share of runs where io_uring could be set up, "
		   "SQPOLL was permitted and the kernel offered 1 GiB pages "
		   "(&#10003; all, &#10007; none, else the percentage), the most "
		   "common THP mode, and the runs in which a benchmark variant "
		   "failed (crashed, timed out or measured the impossible), with "
		   "each failed variant and its number of runs. Empty: no runs.</p>\n"
		   "<table class=\"matrix\">\n<thead><tr><th>instance type</th>");
	for (int i = 0; i < n; i++) {
		fprintf(f, "<th class=\"kernel\">");
		esc(f, kernels[i]);
		fprintf(f, "</th>");
	}
	fprintf(f, "</tr></thead>\n<tbody>\n");
	for (int r = 0; r < rows;) {
		int end = r + 1;

		while (end < rows && !new_type(res, end))
			end++;
		fprintf(f, "<tr data-instance-type=\"");
		esc(f, val(res, r, "instance_type"));
		fprintf(f, "\"><th>");
		esc(f, val(res, r, "provider"));
		fputc(' ', f);
		esc(f, val(res, r, "instance_type"));
		fprintf(f, "</th>");
		for (int i = 0; i < n; i++) {
			int row = -1;

			for (int j = r; j < end; j++)
				if (!strcmp(val(res, j, "kernel"), kernels[i]))
					row = j;
			if (row < 0) {
				fprintf(f, "<td class=\"none\"></td>");
				continue;
			}
			fprintf(f, "<td data-kernel=\"");
			esc(f, kernels[i]);
			fprintf(f, "\">");
			share_cell(f, "io_uring", val(res, row, "iouring_share"));
			share_cell(f, "SQPOLL", val(res, row, "sqpoll_share"));
			share_cell(f, "1 GiB", val(res, row, "hugepage_1g_share"));
			fprintf(f, "<span class=\"cap thp\" data-cap=\"THP\">THP ");
			esc(f, val(res, row, "thp_mode") ? val(res, row, "thp_mode") :
							    "?");
			fprintf(f, "</span>");
			failed_cell(f, res, row);
			fprintf(f, "</td>");
		}
		fprintf(f, "</tr>\n");
		r = end;
	}
	fprintf(f, "</tbody>\n</table>\n</section>\n");
	return 0;
}

/* ---- what changed, alerts ---- */

static void changes(FILE *f, const PGresult *res)
{
	int shown = 0;

	fprintf(f, "<section id=\"changes\">\n<h2>What changed between kernels</h2>\n"
		   "<p class=\"note\">Each instance type's kernel against the one before "
		   "it: figures whose 95%% intervals moved apart, capability shares "
		   "and THP modes that differ.</p>\n<table>\n<thead><tr>"
		   "<th>instance type</th><th>kernel</th><th>what changed</th>"
		   "</tr></thead>\n<tbody>\n");
	for (int r = 0; r < PQntuples(res); r++) {
		const char *c = val(res, r, "changes");

		if (!c)
			continue;
		fprintf(f, "<tr class=\"%s\"><td>",
			strcmp(c, "nothing beyond noise") ? "changed" : "same");
		esc(f, val(res, r, "provider"));
		fputc(' ', f);
		esc(f, val(res, r, "instance_type"));
		fprintf(f, "</td><td>");
		esc(f, val(res, r, "kernel"));
		fprintf(f, "</td><td>");
		esc(f, c);
		fprintf(f, "</td></tr>\n");
		shown++;
	}
	if (!shown)
		fprintf(f, "<tr><td colspan=\"3\">No instance type has runs on two kernels.</td></tr>\n");
	fprintf(f, "</tbody>\n</table>\n</section>\n");
}

/* The open alerts, or why there are none to show. */
static void alerts(FILE *f, const PGresult *res)
{
	static const char *const cols[] = { "provider", "instance_type",
					    "kind", "old_kernels",
					    "new_kernel", "hosts",
					    "hostnames", "created", "diff" };

	fprintf(f, "<section id=\"alerts\">\n<h2>Open alerts</h2>\n");
	if (!res) {
		fprintf(f, "<p class=\"note\">This database has no alerts table: "
			   "kernel-upgrade alerts are not set up.</p>\n</section>\n");
		return;
	}
	if (!PQntuples(res)) {
		fprintf(f, "<p class=\"note\" data-open-alerts=\"0\">No open alerts.</p>\n</section>\n");
		return;
	}
	fprintf(f, "<table class=\"alerts\" data-open-alerts=\"%d\">\n<thead><tr>",
		PQntuples(res));
	for (size_t i = 0; i < ARRAY_SIZE(cols); i++) {
		fprintf(f, "<th>");
		esc(f, cols[i]);
		fprintf(f, "</th>");
	}
	fprintf(f, "</tr></thead>\n<tbody>\n");
	for (int r = 0; r < PQntuples(res); r++) {
		fprintf(f, "<tr>");
		for (size_t i = 0; i < ARRAY_SIZE(cols); i++) {
			fprintf(f, i + 1 == ARRAY_SIZE(cols) ? "<td><code>" : "<td>");
			esc(f, val(res, r, cols[i]));
			fprintf(f, i + 1 == ARRAY_SIZE(cols) ? "</code></td>" : "</td>");
		}
		fprintf(f, "</tr>\n");
	}
	fprintf(f, "</tbody>\n</table>\n</section>\n");
}

static const char style[] =
	"body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}"
	"h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em}"
	".note{color:#555;font-size:.9em}"
	"table{border-collapse:collapse;font-size:.85em}"
	"th,td{border:1px solid #ccc;padding:.3em .5em;text-align:left;vertical-align:top}"
	"thead th{background:#f3f3f3}"
	"svg.chart{font-size:12px;display:block}"
	"svg .grid{stroke:#e5e5e5}svg .one{stroke:#999;stroke-dasharray:4 3}"
	"svg .tick{text-anchor:middle;fill:#555}svg text.type{font-weight:bold}"
	"svg .ci{stroke-width:2}svg .median{stroke-width:2}svg .runs{fill:#555}"
	".cap{display:block;white-space:nowrap}.cap.yes{color:#2a7d2a}"
	".cap.no{color:#b3261e;font-weight:bold}.cap.some{color:#a15c00}"
	".cap.unknown{color:#777}.cap.failed{color:#b3261e;font-weight:bold;white-space:normal}"
	"td.none{background:#fafafa}"
	"tr.changed td{background:#fff4e5}code{font-size:.9em;word-break:break-all}";

static int write_report(FILE *f, const char *title, const PGresult *k,
			const PGresult *a)
{
	time_t now = time(NULL);
	char when[64];
	long runs = 0;
	int types = 0;

	for (int r = 0; r < PQntuples(k); r++) {
		runs += strtol(val(k, r, "runs"), NULL, 10);
		types += new_type(k, r);
	}
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		   "<title>");
	esc(f, title);
	fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", style);
	esc(f, title);
	fprintf(f, "</h1>\n<p class=\"note\">Generated %s by fleetbench %s from %ld runs "
		   "of %d instance types. Each dot is the median over the runs of one "
		   "instance type on one kernel, its bar the 95%% confidence interval "
		   "of that median (hollow dot: fewer than 6 runs, no interval); the "
		   "dashed line is 1 (no gain). Colours follow each instance type's "
		   "kernels from the oldest: <span style=\"color:%s\">&#9679; first</span>, "
		   "<span style=\"color:%s\">&#9679; second</span>, "
		   "<span style=\"color:%s\">&#9679; third</span>.</p>\n",
		when, FLEETBENCH_VERSION, runs, types, kernel_colour[0],
		kernel_colour[1], kernel_colour[2]);
	if (!PQntuples(k))
		fprintf(f, "<p>No runs yet.</p>\n");
	chart(f, k, "thp-chart", "thp_speedup", "THP speedup per instance type and kernel",
	      "ns per access with 4 KiB pages over ns per access with THP in the pointer chase (thp_speedup): above 1, THP is faster.");
	chart(f, k, "iouring-chart", "iouring_vs_pread",
	      "io_uring gain per instance type and kernel",
	      "Random 4 KiB read IOPS with io_uring at depth 32 over pread at depth 1 (iouring_vs_pread).");
	if (matrix(f, k) < 0)
		return -ENOMEM;
	changes(f, k);
	alerts(f, a);
	fprintf(f, "</body>\n</html>\n");
	return ferror(f) ? -EIO : 0;
}

/* Writes the report to a temporary file beside path, then renames it. */
static int write_file(const char *path, const char *title, const PGresult *k,
		      const PGresult *a)
{
	_cleanup_free_ char *tmp = NULL;
	FILE *f;
	int fd, r;

	if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
		return -ENOMEM;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		r = -errno;
		close(fd);
		unlink(tmp);
		return r;
	}
	r = write_report(f, title, k, a);
	if (fflush(f) == EOF || fsync(fileno(f)) < 0)
		r = r ? r : -errno;
	if (fchmod(fileno(f), 0644) < 0)
		r = r ? r : -errno;
	if (fclose(f) == EOF)
		r = r ? r : -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

int cmd_report(struct cmd_ctx *ctx, int argc, char **argv)
{
	static const struct option options[] = {
		{ "out", required_argument, NULL, OPT_OUT },
		{ "since", required_argument, NULL, OPT_SINCE },
		{ "title", required_argument, NULL, OPT_TITLE },
		CMD_METHOD_OPTIONS,
		{ 0 },
	};
	const char *out = NULL, *since = NULL, *title = "fleetbench report";
	const char *method = NULL;
	PGresult *k = NULL, *a = NULL, *has = NULL;
	int c, r;

	while ((c = cmd_getopt(ctx, argc, argv, NULL, options, report_usage)) !=
	       -1) {
		switch (c) {
		case OPT_OUT:
			out = optarg;
			break;
		case OPT_SINCE:
			since = optarg;
			break;
		case CMD_OPT_METHOD:
		case CMD_OPT_PROFILE:
		case CMD_OPT_ALL_METHODS:
			if (cmd_method_option(c, &method) < 0)
				return CMD_USAGE;
			break;
		case OPT_TITLE:
			title = optarg;
			break;
		default:
			return c == CMD_OPT_HELP ? CMD_OK : CMD_USAGE;
		}
	}
	r = cmd_no_operands(argc, argv);
	if (r != CMD_OK)
		return r;
	if (!out) {
		log_error("report needs --out FILE (see --help)");
		return CMD_USAGE;
	}
	r = cmd_query(ctx, kernels_sql, 2, (const char *[]){ since, method },
		      &k);
	if (r == CMD_OK)
		r = cmd_query(ctx, "SELECT to_regclass('alerts') IS NOT NULL", 0,
			      NULL, &has);
	if (r == CMD_OK && !strcmp(PQgetvalue(has, 0, 0), "t"))
		r = cmd_query(ctx, alerts_sql, 0, NULL, &a);
	if (r == CMD_OK) {
		int w = write_file(out, title, k, a);

		if (w < 0) {
			log_error("cannot write the report '%s': %s", out,
				  strerror(-w));
			r = CMD_FAILED;
		}
	}
	PQclear(k);
	PQclear(a);
	PQclear(has);
	return r;
}
