/* SPDX-License-Identifier: MIT */
/*
 * fleetbench report: one self-contained HTML file (inline CSS and SVG, no
 * script, font or link to fetch) from the views: THP speedup and io_uring
 * gain per instance type and kernel with their 95% intervals and run
 * counts (fleet_kernels_by), a section per benchmark family of issue 15
 * (html_sections.c), the capability matrix with the runs whose variants
 * failed, what changed between kernels, the open alerts in words
 * (alert_summary), the method the sections show and the other methods'
 * runs. The charts: html_chart.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
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
#include "figures.h"
#include "html.h"
#include "log.h"
#include "prices.h"

enum {
	OPT_OUT = 0x100,
	OPT_SINCE,
	OPT_TITLE,
	OPT_WHERE,
	OPT_BY,
};

static const char report_usage[] =
	"usage: fleetbench report --out FILE [--since DATE] [--title TEXT]\n"
	"                         [--where KEY=VALUE]... [--by tag.KEY[,tag.KEY...]]\n"
	"                         [--method KEY | --profile NAME | --all-methods]\n"
	"                         [common options]\n"
	"\n"
	"Writes one self-contained HTML file (no script, font or link to fetch:\n"
	"it opens offline) with SVG charts of the THP speedup and the io_uring\n"
	"gain over pread per instance type, grouped by kernel, each with its 95%\n"
	"interval and run count; a section per benchmark family (mmap'd-file\n"
	"reads, memory bandwidth, I/O scaling with its knee, write-back stalls,\n"
	"the database under THP modes); the capability matrix (instance type x kernel:\n"
	"io_uring usable, SQPOLL permitted, 1 GiB pages, THP mode, and the runs\n"
	"flagged noisy or with a figure wider than its target); what changed\n"
	"between kernels; what a run costs its host per instance type (wall\n"
	"time, CPU, peak memory, bytes written; when runs reported it); the\n"
	"open alerts in words (as fleetbench alerts says them); what to set on\n"
	"each instance type (as fleetbench advise says it); which method\n"
	"the sections show, and the other methods' runs in a section of their\n"
	"own.\n"
	"--format does not apply.\n"
	"\n"
	"options:\n"
	"      --out FILE           write the report here (replaced atomically)\n"
	"      --since DATE         only runs started at or after DATE\n"
	"      --where KEY=VALUE    only runs whose KEY is VALUE (repeat it), as\n"
	"                           compare's, e.g. tag.env=prod; the title says so\n"
	"      --by tag.KEY[,...]   split each instance type by these tags, as\n"
	"                           kernels --by: its charts, matrix row and changes\n"
	"                           per value (team=storage; team=(none) for runs\n"
	"                           without the tag), figures of those runs; the\n"
	"                           title says so (the price section is not split)\n"
	CMD_METHOD_USAGE
	"      --title TEXT         the page's title (default \"fleetbench report\")\n"
	"\n";

/* The columns of the kernels query, by name. */
static const char kernels_sql[] =
	"SELECT * "
	"FROM fleet_kernels_by($3::jsonb, $1::timestamptz, $2, "
	"string_to_array($4, ','))";

/*
 * Open alerts as alert_summary says them: the same sentence as `fleetbench
 * alerts`, the hook and Alertmanager (issue 40).
 */
static const char alerts_sql[] =
	"SELECT kind, provider, instance_type, "
	"array_to_string(old_kernels, ', ') AS old_kernels, new_kernel, hosts, "
	"summary, to_char(created_at AT TIME ZONE 'UTC', "
	"'YYYY-MM-DD HH24:MI') AS created "
	"FROM alert_summary WHERE acknowledged_at IS NULL "
	"ORDER BY created_at DESC, id DESC LIMIT 200";

/* What to set on each instance type's newest kernel (fleet_advise()). */
static const char advise_sql[] =
	"SELECT t.provider, t.instance_type, a.* "
	"FROM (SELECT DISTINCT r.provider, r.instance_type "
	"      FROM fleetbench_runs($1::jsonb, $2::timestamptz) AS r) AS t, "
	"     LATERAL fleet_advise(t.provider, t.instance_type, NULL, "
	"                          nullif($3, '*')) AS a "
	"ORDER BY t.provider, t.instance_type";

/* Every method's groups, for the methods the charts do not show. */
static const char methods_sql[] =
	"SELECT * FROM fleet_compare_by(NULL, $1::jsonb, $2::timestamptz, '*') "
	"ORDER BY method, provider, instance_type, first_run";

/* What a run costs its host (issue 36): per instance type and method, the
 * total of the runs that reported it. */
static const char costs_sql[] =
	"SELECT method, provider, instance_type, runs, wall_s, wall_s_lo, "
	"wall_s_hi, wall_s_max, cpu_s, peak_memory_mib, written_mib "
	"FROM fleet_cost_by('{provider,instance_type}', $1::jsonb, "
	"$2::timestamptz, $3) WHERE benchmark = 'total'";

static void cost_cell(FILE *f, const PGresult *res, int r, const char *col)
{
	fprintf(f, "<td class=\"num\">");
	html_esc(f, html_val(res, r, col));
	fprintf(f, "</td>");
}

static void costs(FILE *f, const PGresult *res)
{
	static const char *const cols[] = { "wall_s_max", "cpu_s",
					    "peak_memory_mib", "written_mib" };

	if (!res || !PQntuples(res))
		return; /* no run reported its cost (agents before issue 36) */
	fprintf(f, "<section id=\"costs\">\n<h2>What a run costs its host</h2>\n"
		   "<p class=\"note\">Per instance type and method, over the runs "
		   "that reported it: the median wall time of the run's benchmarks "
		   "with its 95%% interval and the most one run took, the median CPU "
		   "seconds, peak memory and bytes written.</p>\n<table>\n<thead><tr>"
		   "<th>instance type</th><th>method</th><th>runs</th>"
		   "<th>wall s</th><th>most s</th><th>CPU s</th><th>peak MiB</th>"
		   "<th>written MiB</th></tr></thead>\n<tbody>\n");
	for (int r = 0; r < PQntuples(res); r++) {
		const char *lo = html_val(res, r, "wall_s_lo");

		fprintf(f, "<tr><td>");
		html_type_label(f, res, r);
		fprintf(f, "</td><td><code>");
		html_esc(f, html_val(res, r, "method"));
		fprintf(f, "</code></td>");
		cost_cell(f, res, r, "runs");
		fprintf(f, "<td class=\"num\">");
		html_esc(f, html_val(res, r, "wall_s"));
		if (lo) {
			fprintf(f, " [");
			html_esc(f, lo);
			fprintf(f, ", ");
			html_esc(f, html_val(res, r, "wall_s_hi"));
			fprintf(f, "]");
		}
		fprintf(f, "</td>");
		for (size_t c = 0; c < ARRAY_SIZE(cols); c++)
			cost_cell(f, res, r, cols[c]);
		fprintf(f, "</tr>\n");
	}
	fprintf(f, "</tbody>\n</table>\n</section>\n");
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
	const char *failed = html_val(res, row, "failed");

	if (!failed || !strcmp(failed, "0"))
		return;
	fprintf(f, "<span class=\"cap failed\" data-cap=\"failed\" "
		   "data-failed=\"%s\">failed in %s of %s runs: ",
		failed, failed, html_val(res, row, "runs"));
	html_esc(f, html_val(res, row, "failures"));
	fputs("</span>", f);
}

/* How far to trust the cell's figures (issue 19): the share of runs with
 * a repeat flagged noisy (steal_share) and with a figure whose
 * interval did not reach its target (wide_share); nothing when none. */
static void trust_cell(FILE *f, const PGresult *res, int row)
{
	static const char *const col[] = { "steal_share", "wide_share" };
	static const char *const name[] = { "noisy", "wide" };

	for (size_t i = 0; i < ARRAY_SIZE(col); i++) {
		const char *share = html_val(res, row, col[i]);
		double v = share ? strtod(share, NULL) : 0;

		if (!(v > 0))
			continue;
		fprintf(f, "<span class=\"cap trust\" data-trust=\"%s\" "
			   "data-share=\"%s\">%s in %.0f%% of runs</span>",
			name[i], share, name[i], 100 * v);
	}
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
		const char *name = html_val(res, r, "kernel");
		const char *when = html_val(res, r, "first_run");
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
		   "each failed variant and its number of runs; noisy: runs with a "
		   "repeat flagged noisy (CPU steal, CPU pressure, or I/O pressure "
		   "in an I/O benchmark above the agent's thresholds), wide: runs "
		   "with a figure whose interval did not reach the agent's target "
		   "(measure more). Empty: no runs.</p>\n"
		   "<table class=\"matrix\">\n<thead><tr><th>instance type</th>");
	for (int i = 0; i < n; i++) {
		fprintf(f, "<th class=\"kernel\">");
		html_esc(f, kernels[i]);
		fprintf(f, "</th>");
	}
	fprintf(f, "</tr></thead>\n<tbody>\n");
	for (int r = 0; r < rows;) {
		int end = r + 1;

		while (end < rows && !html_new_type(res, end))
			end++;
		fprintf(f, "<tr data-instance-type=\"");
		html_esc(f, html_val(res, r, "instance_type"));
		if (html_val(res, r, "tags")) {
			fprintf(f, "\" data-tags=\"");
			html_esc(f, html_val(res, r, "tags"));
		}
		fprintf(f, "\"><th>");
		html_type_label(f, res, r);
		fprintf(f, "</th>");
		for (int i = 0; i < n; i++) {
			int row = -1;

			for (int j = r; j < end; j++)
				if (!strcmp(html_val(res, j, "kernel"), kernels[i]))
					row = j;
			if (row < 0) {
				fprintf(f, "<td class=\"none\"></td>");
				continue;
			}
			fprintf(f, "<td data-kernel=\"");
			html_esc(f, kernels[i]);
			fprintf(f, "\">");
			share_cell(f, "io_uring", html_val(res, row, "iouring_share"));
			share_cell(f, "SQPOLL", html_val(res, row, "sqpoll_share"));
			share_cell(f, "1 GiB", html_val(res, row, "hugepage_1g_share"));
			fprintf(f, "<span class=\"cap thp\" data-cap=\"THP\">THP ");
			html_esc(f, html_val(res, row, "thp_mode") ? html_val(res, row, "thp_mode") :
							    "?");
			fprintf(f, "</span>");
			failed_cell(f, res, row);
			trust_cell(f, res, row);
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
		const char *c = html_val(res, r, "changes");

		if (!c)
			continue;
		fprintf(f, "<tr class=\"%s\"><td>",
			strcmp(c, "nothing beyond noise") ? "changed" : "same");
		html_type_label(f, res, r);
		fprintf(f, "</td><td>");
		html_esc(f, html_val(res, r, "kernel"));
		fprintf(f, "</td><td>");
		html_esc(f, c);
		fprintf(f, "</td></tr>\n");
		shown++;
	}
	if (!shown)
		fprintf(f, "<tr><td colspan=\"3\">No instance type has runs on two kernels.</td></tr>\n");
	fprintf(f, "</tbody>\n</table>\n</section>\n");
}

/* The open alerts in words, or why there are none to show. */
static void alerts(FILE *f, const PGresult *res)
{
	fprintf(f, "<section id=\"alerts\">\n<h2>Open alerts</h2>\n");
	if (!res) {
		fprintf(f, "<p class=\"note\">This database has no alerts: "
			   "kernel-upgrade alerts are not set up.</p>\n</section>\n");
		return;
	}
	if (!PQntuples(res)) {
		fprintf(f, "<p class=\"note\" data-open-alerts=\"0\">No open alerts.</p>\n</section>\n");
		return;
	}
	fprintf(f, "<p class=\"note\">As <code>fleetbench alerts</code>, the hook "
		   "and Alertmanager say them; times in UTC.</p>\n"
		   "<table class=\"alerts\" data-open-alerts=\"%d\">\n<thead><tr>"
		   "<th>instance type</th><th>kernel</th><th>hosts</th>"
		   "<th>what changed</th><th>kind</th><th>raised</th>"
		   "</tr></thead>\n<tbody>\n",
		PQntuples(res));
	for (int r = 0; r < PQntuples(res); r++) {
		const char *old = html_val(res, r, "old_kernels");

		fprintf(f, "<tr><td>");
		html_type_label(f, res, r);
		fprintf(f, "</td><td>");
		if (old && *old) {
			html_esc(f, old);
			fprintf(f, " &rarr; ");
		}
		html_esc(f, html_val(res, r, "new_kernel"));
		fprintf(f, "</td>");
		html_td(f, res, r, "hosts", "num");
		html_td(f, res, r, "summary", "summary");
		html_td(f, res, r, "kind", NULL);
		html_td(f, res, r, "created", NULL);
		fprintf(f, "</tr>\n");
	}
	fprintf(f, "</tbody>\n</table>\n</section>\n");
}

/* What to set per instance type (fleetbench advise), or nothing without
 * runs. */
static void advise(FILE *f, const PGresult *res)
{
	if (!res || !PQntuples(res))
		return;
	fprintf(f, "<section id=\"advise\">\n<h2>What to set</h2>\n"
		   "<p class=\"note\">From each instance type's figures on its "
		   "newest kernel, as <code>fleetbench advise</code> says it: each "
		   "point with how sure it is and its evidence.</p>\n<table>\n"
		   "<thead><tr><th>instance type</th><th>kernel</th><th>topic</th>"
		   "<th>advice</th><th>how sure</th></tr></thead>\n<tbody>\n");
	for (int r = 0; r < PQntuples(res); r++) {
		fprintf(f, "<tr data-instance-type=\"");
		html_esc(f, html_val(res, r, "instance_type"));
		fprintf(f, "\" data-topic=\"");
		html_esc(f, html_val(res, r, "topic"));
		fprintf(f, "\"><td>");
		html_type_label(f, res, r);
		fprintf(f, "</td>");
		html_td(f, res, r, "kernel", NULL);
		html_td(f, res, r, "topic", NULL);
		fprintf(f, "<td class=\"summary\">");
		html_esc(f, html_val(res, r, "advice"));
		fprintf(f, "<br><span class=\"note\">");
		html_esc(f, html_val(res, r, "evidence"));
		fprintf(f, "</span></td>");
		html_td(f, res, r, "sure", NULL);
		fprintf(f, "</tr>\n");
	}
	fprintf(f, "</tbody>\n</table>\n</section>\n");
}

/* Whether method is among the methods of k's rows. */
static bool shown_method(const PGresult *k, const char *method)
{
	for (int r = 0; r < PQntuples(k); r++)
		if (!strcmp(html_val(k, r, "method"), method))
			return true;
	return false;
}

/* Whether m (every method's groups) has a method k's rows do not show. */
static bool other_methods(const PGresult *k, const PGresult *m)
{
	for (int r = 0; m && r < PQntuples(m); r++)
		if (!shown_method(k, html_val(m, r, "method")))
			return true;
	return false;
}

/* Which method the sections show: each kernel's default (standard, else
 * its method most run), and where the others are. */
static void methods_note(FILE *f, const PGresult *k, const PGresult *m)
{
	fprintf(f, "<p class=\"note\" id=\"methods\">The sections show each "
		   "kernel's default method (standard, else its method most "
		   "run):");
	for (int r = 0, n = 0; r < PQntuples(k); r++) {
		bool seen = false;

		for (int s = 0; s < r && !seen; s++)
			seen = !strcmp(html_val(k, s, "method"),
				       html_val(k, r, "method"));
		if (seen)
			continue;
		fprintf(f, "%s <code>", n++ ? "," : "");
		html_esc(f, html_val(k, r, "method"));
		fprintf(f, "</code>");
	}
	fprintf(f, ".%s</p>\n", other_methods(k, m) ?
		" The other methods' runs: <a href=\"#other-methods\">Other methods</a>." :
		"");
}

/* The runs of every method the sections do not show, a table each: per
 * instance type and kernel, each family's first figure with its interval
 * (m: every method's groups). */
static void methods_other(FILE *f, const PGresult *k, const PGresult *m)
{
	if (!other_methods(k, m))
		return;
	fprintf(f, "<section id=\"other-methods\">\n<h2>Other methods</h2>\n"
		   "<p class=\"note\">Runs measured another way than the sections "
		   "above show: each family's first figure, the median with its "
		   "95%% interval (<code>fleetbench report --method KEY</code> "
		   "draws the whole report of one).</p>\n");
	for (int r = 0; r < PQntuples(m); r++) {
		const char *method = html_val(m, r, "method");
		char cell[96];

		if (shown_method(k, method))
			continue;
		if (r == 0 || strcmp(method, html_val(m, r - 1, "method"))) {
			fprintf(f, "<details class=\"method\" data-method=\"");
			html_esc(f, method);
			fprintf(f, "\"><summary>method <code>");
			html_esc(f, method);
			fprintf(f, "</code></summary>\n<table>\n<thead><tr>"
				   "<th>instance type</th><th>kernel</th><th>runs</th>");
			for (size_t i = 0; i < FIGURES_N; i++)
				if (i == 0 || strcmp(figure_decls[i].family,
						     figure_decls[i - 1].family))
					fprintf(f, "<th>%s</th>", figure_decls[i].name);
			fprintf(f, "</tr></thead>\n<tbody>\n");
		}
		fprintf(f, "<tr><td>");
		html_type_label(f, m, r);
		fprintf(f, "</td><td>");
		html_esc(f, html_val(m, r, "kernel"));
		fprintf(f, "</td><td class=\"num\">");
		html_esc(f, html_val(m, r, "runs"));
		fprintf(f, "</td>");
		for (size_t i = 0; i < FIGURES_N; i++) {
			char lo[64], hi[64];
			const char *v;

			if (i && !strcmp(figure_decls[i].family,
					 figure_decls[i - 1].family))
				continue;
			snprintf(lo, sizeof(lo), "%s_lo", figure_decls[i].name);
			snprintf(hi, sizeof(hi), "%s_hi", figure_decls[i].name);
			v = html_val(m, r, figure_decls[i].name);
			cell[0] = '\0';
			if (v)
				out_estimate(cell, sizeof(cell), v,
					     html_val(m, r, lo), html_val(m, r, hi));
			fprintf(f, "<td class=\"num\">");
			html_esc(f, cell);
			fprintf(f, "</td>");
		}
		fprintf(f, "</tr>\n");
		if (r + 1 == PQntuples(m) ||
		    strcmp(method, html_val(m, r + 1, "method")))
			fprintf(f, "</tbody>\n</table>\n</details>\n");
	}
	fprintf(f, "</section>\n");
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
	"h3{font-size:1.05em;margin-bottom:.2em}"
	".cap{display:block;white-space:nowrap}.cap.yes{color:#2a7d2a}"
	".cap.no{color:#b3261e;font-weight:bold}.cap.some{color:#a15c00}"
	".cap.unknown{color:#777}.cap.failed{color:#b3261e;font-weight:bold;white-space:normal}"
	".cap.trust{color:#a15c00}"
	/* a phone: the page scrolls down, a wide table scrolls on its own */
	"section{overflow-x:auto}td.summary{min-width:16em}"
	"@media (max-width:600px){body{margin:.6em}table{font-size:.75em}}"
	"td.none{background:#fafafa}"
	"tr.changed td{background:#fff4e5}code{font-size:.9em;word-break:break-all}";

/* What the report shows besides the kernels' rows. */
struct report_parts {
	const PGresult *alerts, *costs, *methods, *advise;
	const struct prices_report *prices;
};

static int write_report(FILE *f, const char *title, const PGresult *k,
			const struct report_parts *x)
{
	time_t now = time(NULL);
	char when[64];
	long runs = 0;
	int types = 0;

	for (int r = 0; r < PQntuples(k); r++) {
		runs += strtol(html_val(k, r, "runs"), NULL, 10);
		/* an instance type's tags groups (--by) follow each other */
		types += r == 0 ||
			 strcmp(html_val(k, r, "provider"),
				html_val(k, r - 1, "provider")) ||
			 strcmp(html_val(k, r, "instance_type"),
				html_val(k, r - 1, "instance_type"));
	}
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		   "<title>");
	html_esc(f, title);
	fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", style);
	html_esc(f, title);
	fprintf(f, "</h1>\n<p class=\"note\">Generated %s by fleetbench %s from %ld runs "
		   "of %d instance types. Each dot is the median over the runs of one "
		   "instance type on one kernel, its bar the 95%% confidence interval "
		   "of that median (hollow dot: fewer than 6 runs, no interval); the "
		   "dashed line is 1 (no gain). Colours follow each instance type's "
		   "kernels from the oldest: <span style=\"color:%s\">&#9679; first</span>, "
		   "<span style=\"color:%s\">&#9679; second</span>, "
		   "<span style=\"color:%s\">&#9679; third</span>.</p>\n",
		when, FLEETBENCH_VERSION, runs, types, html_kernel_colour[0],
		html_kernel_colour[1], html_kernel_colour[2]);
	if (!PQntuples(k))
		fprintf(f, "<p>No runs yet.</p>\n");
	else
		methods_note(f, k, x->methods);
	html_families(f, k);
	advise(f, x->advise);
	prices_report_write(f, x->prices); /* nothing without prices */
	if (matrix(f, k) < 0)
		return -ENOMEM;
	changes(f, k);
	costs(f, x->costs);
	alerts(f, x->alerts);
	if (PQntuples(k))
		methods_other(f, k, x->methods);
	fprintf(f, "</body>\n</html>\n");
	return ferror(f) ? -EIO : 0;
}

/* Writes the report to a temporary file beside path, then renames it. */
static int write_file(const char *path, const char *title, const PGresult *k,
		      const struct report_parts *x)
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
	r = write_report(f, title, k, x);
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

static void json_put(struct json_object **o)
{
	json_object_put(*o);
}

int cmd_report(struct cmd_ctx *ctx, int argc, char **argv)
{
	static const struct option options[] = {
		{ "out", required_argument, NULL, OPT_OUT },
		{ "since", required_argument, NULL, OPT_SINCE },
		{ "title", required_argument, NULL, OPT_TITLE },
		{ "where", required_argument, NULL, OPT_WHERE },
		{ "by", required_argument, NULL, OPT_BY },
		CMD_METHOD_OPTIONS,
		{ 0 },
	};
	const char *out = NULL, *since = NULL, *title = "fleetbench report";
	const char *method = NULL, *by = NULL;
	_cleanup_(json_put) struct json_object *filter = NULL;
	_cleanup_free_ char *where = NULL, *titled = NULL;
	PGresult *k = NULL, *a = NULL, *has = NULL, *co = NULL, *m = NULL;
	PGresult *adv = NULL;
	struct prices_report *p = NULL;
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
		case OPT_BY:
			by = optarg;
			break;
		case OPT_WHERE: {
			/* the title names the runs shown: "... (where k=v, ...)" */
			char *w;

			if (cmd_where(&filter, optarg) < 0)
				return CMD_USAGE;
			if (asprintf(&w, "%s%s%s", where ? where : "",
				     where ? ", " : "", optarg) < 0) {
				log_error("out of memory");
				return CMD_FAILED;
			}
			free(where);
			where = w;
			break;
		}
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
	/* "title (where k=v, ...; by tag.KEY)" */
	if ((where || by) &&
	    asprintf(&titled, "%s (%s%s%s%s%s)", title, where ? "where " : "",
		     where ? where : "", where && by ? "; " : "",
		     by ? "by " : "", by ? by : "") < 0) {
		log_error("out of memory");
		return CMD_FAILED;
	}
	if (titled)
		title = titled;
	r = cmd_query(ctx, kernels_sql, 4,
		      (const char *[]){ since, method, cmd_filter_param(filter),
					by },
		      &k);
	if (r == CMD_OK)
		r = cmd_query(ctx, "SELECT to_regclass('alert_summary') IS NOT NULL", 0,
			      NULL, &has);
	if (r == CMD_OK && !strcmp(PQgetvalue(has, 0, 0), "t"))
		r = cmd_query(ctx, alerts_sql, 0, NULL, &a);
	if (r == CMD_OK)
		r = prices_report_query(ctx, since, method,
					 cmd_filter_param(filter), &p);
	if (r == CMD_OK)
		r = cmd_query(ctx, costs_sql, 3,
			      (const char *[]){ cmd_filter_param(filter), since,
						method },
			      &co);
	if (r == CMD_OK)
		r = cmd_query(ctx, methods_sql, 2,
			      (const char *[]){ cmd_filter_param(filter), since },
			      &m);
	if (r == CMD_OK)
		r = cmd_query(ctx, advise_sql, 3,
			      (const char *[]){ cmd_filter_param(filter), since,
						method },
			      &adv);
	if (r == CMD_OK) {
		const struct report_parts x = { a, co, m, adv, p };
		int w = write_file(out, title, k, &x);

		if (w < 0) {
			log_error("cannot write the report '%s': %s", out,
				  strerror(-w));
			r = CMD_FAILED;
		} else if (!PQntuples(k)) {
			/* a page without runs: why, as compare says it */
			const struct cmd_why why = {
				.what = "report", .filter = cmd_filter_param(filter),
				.since = since, .method = method
			};

			ctx->why = &why;
			cmd_say_why_empty(ctx);
		}
	}
	PQclear(k);
	PQclear(a);
	PQclear(has);
	PQclear(co);
	PQclear(m);
	PQclear(adv);
	prices_report_free(p);
	return r;
}
