/* SPDX-License-Identifier: MIT */
/*
 * The report's price/performance section (cli/prices.h): per currency of
 * the prices in effect, a chart of each absolute figure per unit of price
 * per hour of the priced instance types, per region, with the same SVG
 * chart as the other figures (html_chart(): the region where those show
 * the kernel), and the unpriced types named. No price, no section.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "html.h"
#include "log.h"
#include "prices.h"

struct prices_currency {
	PGresult *rows; /* every row of fleet_rank_per_price() */
	PGresult **charts; /* one per figure with priced rows */
	size_t ncharts;
};

struct prices_report {
	PGresult *currencies;
	struct prices_currency *cur; /* one per row of currencies */
};

/* Rows in the order the charts want them: an instance type's together. */
static const char rows_sql[] =
	"SELECT r.metric, r.unit, r.per_price_unit, r.method, r.provider, "
	"r.instance_type, r.region AS kernel, r.runs, r.per_price, "
	"r.per_price_lo, r.per_price_hi, r.price_per_hour, r.price_region, "
	"r.note "
	"FROM fleet_rank_per_price(NULL, $1, NULL, 1, $4::jsonb, $2::timestamptz, $3) AS r "
	"JOIN fleetbench_price_metrics() AS m USING (metric) "
	"ORDER BY m.pos, r.provider, r.instance_type, r.region, r.method";

static bool priced(const PGresult *res, int r)
{
	return html_val(res, r, "per_price") != NULL;
}

/*
 * The priced rows of the figure of row first (which is priced), a new
 * result of rows' columns: what html_chart() draws. NULL on ENOMEM.
 */
static PGresult *chart_rows(const PGresult *rows, int first)
{
	const char *metric = html_val(rows, first, "metric");
	PGresult *sub = PQcopyResult(rows, PG_COPYRES_ATTRS);
	int n = 0;

	if (!sub)
		return NULL;
	for (int r = first; r < PQntuples(rows); r++) {
		if (strcmp(html_val(rows, r, "metric"), metric) ||
		    !priced(rows, r))
			continue;
		for (int c = 0; c < PQnfields(rows); c++) {
			bool null = PQgetisnull(rows, r, c);

			if (!PQsetvalue(sub, n, c,
					null ? NULL : PQgetvalue(rows, r, c),
					null ? -1 : PQgetlength(rows, r, c))) {
				PQclear(sub);
				return NULL;
			}
		}
		n++;
	}
	return sub;
}

/* Splits cur->rows into a chart per figure with a priced row. */
static int split(struct prices_currency *cur)
{
	const PGresult *rows = cur->rows;

	for (int r = 0; r < PQntuples(rows); r++) {
		PGresult **more;
		bool seen = false;

		if (!priced(rows, r))
			continue;
		for (size_t i = 0; i < cur->ncharts && !seen; i++)
			seen = !strcmp(html_val(cur->charts[i], 0, "metric"),
				       html_val(rows, r, "metric"));
		if (seen)
			continue;
		more = realloc(cur->charts, (cur->ncharts + 1) * sizeof(*more));
		if (!more)
			return -1;
		cur->charts = more;
		cur->charts[cur->ncharts] = chart_rows(rows, r);
		if (!cur->charts[cur->ncharts])
			return -1;
		cur->ncharts++;
	}
	return 0;
}

void prices_report_free(struct prices_report *p)
{
	if (!p)
		return;
	for (int i = 0; p->cur && i < PQntuples(p->currencies); i++) {
		for (size_t j = 0; j < p->cur[i].ncharts; j++)
			PQclear(p->cur[i].charts[j]);
		free(p->cur[i].charts);
		PQclear(p->cur[i].rows);
	}
	free(p->cur);
	PQclear(p->currencies);
	free(p);
}

int prices_report_query(struct cmd_ctx *ctx, const char *since,
			const char *method, const char *filter,
			struct prices_report **ret)
{
	struct prices_report *p;
	PGresult *has = NULL;
	int r;

	*ret = NULL;
	/* a database older than the prices (020) has none */
	r = cmd_query(ctx, "SELECT to_regclass('instance_prices') IS NOT NULL",
		      0, NULL, &has);
	if (r != CMD_OK)
		return r;
	if (strcmp(PQgetvalue(has, 0, 0), "t")) {
		PQclear(has);
		return CMD_OK;
	}
	PQclear(has);
	p = calloc(1, sizeof(*p));
	if (!p) {
		log_error("out of memory");
		return CMD_FAILED;
	}
	r = cmd_query(ctx,
		      "SELECT DISTINCT currency FROM instance_prices_current "
		      "ORDER BY 1",
		      0, NULL, &p->currencies);
	if (r != CMD_OK || PQntuples(p->currencies) == 0) {
		prices_report_free(p);
		return r;
	}
	p->cur = calloc((size_t)PQntuples(p->currencies), sizeof(*p->cur));
	if (!p->cur) {
		prices_report_free(p);
		log_error("out of memory");
		return CMD_FAILED;
	}
	for (int i = 0; i < PQntuples(p->currencies); i++) {
		const char *params[] = { PQgetvalue(p->currencies, i, 0), since,
					 method, filter };

		r = cmd_query(ctx, rows_sql, 4, params, &p->cur[i].rows);
		if (r != CMD_OK) {
			prices_report_free(p);
			return r;
		}
		if (split(&p->cur[i]) < 0) {
			prices_report_free(p);
			log_error("out of memory");
			return CMD_FAILED;
		}
	}
	*ret = p;
	return CMD_OK;
}

/* The unpriced instance types (each provider, type and region once). */
static void unpriced(FILE *f, const PGresult *rows, const char *currency)
{
	int n = 0;

	for (int r = 0; r < PQntuples(rows); r++) {
		bool seen = false;

		if (priced(rows, r))
			continue;
		/* rows of one figure come first: a type shows again per figure */
		for (int o = 0; o < r && !seen; o++)
			seen = !priced(rows, o) &&
			       !strcmp(html_val(rows, o, "provider"),
				       html_val(rows, r, "provider")) &&
			       !strcmp(html_val(rows, o, "instance_type"),
				       html_val(rows, r, "instance_type")) &&
			       !strcmp(html_val(rows, o, "kernel"),
				       html_val(rows, r, "kernel"));
		if (seen)
			continue;
		if (!n++) {
			fprintf(f, "<p class=\"note unpriced\">Unpriced in ");
			html_esc(f, currency);
			fprintf(f, " (no price of theirs in effect, so not charted): ");
		} else {
			fputs(", ", f);
		}
		fprintf(f, "<span class=\"unpriced\" data-instance-type=\"");
		html_esc(f, html_val(rows, r, "instance_type"));
		fprintf(f, "\">");
		html_esc(f, html_val(rows, r, "provider"));
		fputc(' ', f);
		html_esc(f, html_val(rows, r, "instance_type"));
		fputs(" (", f);
		html_esc(f, html_val(rows, r, "kernel"));
		fputs(")</span>", f);
	}
	if (n)
		fputs(".</p>\n", f);
}

void prices_report_write(FILE *f, const struct prices_report *p)
{
	if (!p)
		return;
	fprintf(f, "<section id=\"price-performance\">\n<h2>Price/performance</h2>\n"
		   "<p class=\"note\">Each absolute figure of an instance type "
		   "in a region divided by its price per hour in effect today "
		   "(fleetbench prices import): the median over its runs and the "
		   "95%% interval, higher is better. The runs' region selects the "
		   "price; runs without a region take the lowest price of any "
		   "region. Rows are regions where the charts above show "
		   "kernels.</p>\n");
	for (int i = 0; i < PQntuples(p->currencies); i++) {
		const struct prices_currency *cur = &p->cur[i];
		const char *currency = PQgetvalue(p->currencies, i, 0);

		if (!cur->ncharts) {
			fprintf(f, "<p class=\"note absent\">No priced instance type in ");
			html_esc(f, currency);
			fprintf(f, " measured an absolute figure.</p>\n");
		}
		for (size_t j = 0; j < cur->ncharts; j++) {
			const PGresult *c = cur->charts[j];

			fprintf(f, "<h3>");
			html_esc(f, html_val(c, 0, "per_price_unit"));
			fprintf(f, ": ");
			html_esc(f, html_val(c, 0, "metric"));
			fprintf(f, "</h3>\n<div class=\"per-price\" data-per-price=\"");
			html_esc(f, html_val(c, 0, "metric"));
			fprintf(f, "\" data-currency=\"");
			html_esc(f, currency);
			fprintf(f, "\">\n");
			html_chart(f, c, "per_price", false);
			fprintf(f, "</div>\n");
		}
		unpriced(f, cur->rows, currency);
	}
	fprintf(f, "</section>\n");
}
