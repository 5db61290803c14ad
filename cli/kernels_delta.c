/* SPDX-License-Identifier: MIT */
/*
 * `fleetbench kernels` in a table (issue 40): as Go's benchstat compares
 * two sets of runs, each kernel against the one before it, one line per
 * figure: the old and the new median with its interval, the change with
 * its interval where it is significant (q < 0.05) and `~` where it is
 * not, q and the runs on each side; what changed besides the figures
 * (capability shares, THP mode, alerts) in words above them. The rows are
 * fleet_kernels_delta()'s (schema/functions/43_kernels_delta.sql).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "cmd.h"
#include "log.h"

/* the false discovery rate below which a change is said */
#define KERNELS_Q 0.05

enum {
	D_PROVIDER,
	D_TYPE,
	D_METHOD,
	D_OLD_KERNEL,
	D_NEW_KERNEL,
	D_CAPABILITIES,
	D_FIGURE,
	D_UNIT,
	D_OLD,
	D_OLD_LO,
	D_OLD_HI,
	D_NEW,
	D_NEW_LO,
	D_NEW_HI,
	D_CHANGE,
	D_CHANGE_LO,
	D_CHANGE_HI,
	D_P,
	D_Q,
	D_RUNS_OLD,
	D_RUNS_NEW,
};

/* A column of the figures' lines. */
struct dcol {
	const char *head;
	bool right;
	size_t width;
};

enum { C_FIGURE, C_UNIT, C_OLD, C_NEW, C_CHANGE, C_Q, C_RUNS, C_N };

static const char *get(const PGresult *res, int r, int c)
{
	return PQgetisnull(res, r, c) ? NULL : PQgetvalue(res, r, c);
}

/* a relative change as a percentage: -63%, +1.6% */
static void percent(char *buf, size_t n, double v)
{
	snprintf(buf, n, fabs(v) >= 0.095 ? "%+.0f%%" : "%+.1f%%", v * 100);
}

/* The cells of row r's figure line into cell[C_N] (each at most 64). */
static void cells(const PGresult *res, int r, char cell[C_N][64])
{
	const char *q = get(res, r, D_Q), *lo = get(res, r, D_CHANGE_LO);
	char a[24], b[24], c[24];

	snprintf(cell[C_FIGURE], 64, "%s", PQgetvalue(res, r, D_FIGURE));
	snprintf(cell[C_UNIT], 64, "%s", PQgetvalue(res, r, D_UNIT));
	out_estimate(cell[C_OLD], 64, PQgetvalue(res, r, D_OLD),
		     get(res, r, D_OLD_LO), get(res, r, D_OLD_HI));
	out_estimate(cell[C_NEW], 64, PQgetvalue(res, r, D_NEW),
		     get(res, r, D_NEW_LO), get(res, r, D_NEW_HI));
	/* measured on one kernel only */
	if (!get(res, r, D_OLD) || !get(res, r, D_NEW))
		snprintf(cell[get(res, r, D_OLD) ? C_NEW : C_OLD], 64, "-");
	if (!atoi(PQgetvalue(res, r, D_RUNS_NEW))) {
		snprintf(cell[C_CHANGE], 64, "not measured");
	} else if (!atoi(PQgetvalue(res, r, D_RUNS_OLD))) {
		snprintf(cell[C_CHANGE], 64, "new");
	} else if (!q || atof(q) >= KERNELS_Q) {
		snprintf(cell[C_CHANGE], 64, "~");
	} else if (!lo) {
		/* a value of 0 or below: no ratio, the test alone */
		snprintf(cell[C_CHANGE], 64, "changed");
	} else {
		percent(a, sizeof(a), atof(PQgetvalue(res, r, D_CHANGE)));
		percent(b, sizeof(b), atof(lo));
		percent(c, sizeof(c), atof(PQgetvalue(res, r, D_CHANGE_HI)));
		/* the interval's ends without their % */
		b[strlen(b) - 1] = c[strlen(c) - 1] = '\0';
		snprintf(cell[C_CHANGE], 64, "%s [%s, %s]", a, b, c);
	}
	if (!q)
		snprintf(cell[C_Q], 64, "-");
	else if (atof(q) < 0.001)
		snprintf(cell[C_Q], 64, "<0.001");
	else
		snprintf(cell[C_Q], 64, "%.3f", atof(q));
	snprintf(cell[C_RUNS], 64, "%s+%s", PQgetvalue(res, r, D_RUNS_OLD),
		 PQgetvalue(res, r, D_RUNS_NEW));
}

static void line(FILE *f, struct dcol *col, char cell[C_N][64])
{
	for (int j = 0; j < C_N; j++) {
		size_t gap = col[j].width - out_width(cell[j]);

		fputs(j ? "  " : "", f);
		if (col[j].right)
			fprintf(f, "%*s", (int)gap, "");
		fputs(cell[j], f);
		if (!col[j].right && j + 1 < C_N)
			fprintf(f, "%*s", (int)gap, "");
	}
	fputc('\n', f);
}

/* Whether rows r and s are of the same pair of kernels. */
static bool same_pair(const PGresult *res, int r, int s)
{
	static const int key[] = { D_PROVIDER, D_TYPE, D_OLD_KERNEL,
				   D_NEW_KERNEL };

	for (size_t i = 0; i < sizeof(key) / sizeof(key[0]); i++)
		if (strcmp(PQgetvalue(res, r, key[i]), PQgetvalue(res, s, key[i])))
			return false;
	return true;
}

int kernels_benchstat(struct cmd_ctx *ctx, const char *filter,
		      const char *since, const char *method, bool *none)
{
	const char *params[] = { filter, since, method };
	struct dcol col[C_N] = {
		[C_FIGURE] = { "figure", false, 0 }, [C_UNIT] = { "unit", false, 0 },
		[C_OLD] = { "old", true, 0 },	      [C_NEW] = { "new", true, 0 },
		[C_CHANGE] = { "change", true, 0 },  [C_Q] = { "q", true, 0 },
		[C_RUNS] = { "runs", true, 0 },
	};
	char cell[C_N][64];
	unsigned width = cmd_table_width();
	PGresult *res = NULL;
	int r, rows;

	r = cmd_query(ctx,
		      "SELECT * FROM fleet_kernels_delta($1::jsonb, "
		      "$2::timestamptz, $3)",
		      3, params, &res);
	if (r != CMD_OK)
		return r;
	rows = PQntuples(res);
	*none = rows == 0;
	for (int j = 0; j < C_N; j++)
		col[j].width = out_width(col[j].head);
	for (int i = 0; i < rows; i++) {
		if (!get(res, i, D_FIGURE))
			continue;
		cells(res, i, cell);
		for (int j = 0; j < C_N; j++)
			if (out_width(cell[j]) > col[j].width)
				col[j].width = out_width(cell[j]);
	}
	for (int i = 0; i < rows; i++) {
		const char *caps = get(res, i, D_CAPABILITIES);
		_cleanup_free_ char *head = NULL;

		if (i == 0 || !same_pair(res, i, i - 1)) {
			if (asprintf(&head, "%s %s, method %s: %s -> %s",
				     PQgetvalue(res, i, D_PROVIDER),
				     PQgetvalue(res, i, D_TYPE),
				     PQgetvalue(res, i, D_METHOD),
				     PQgetvalue(res, i, D_OLD_KERNEL),
				     PQgetvalue(res, i, D_NEW_KERNEL)) < 0) {
				PQclear(res);
				log_error("out of memory");
				return CMD_FAILED;
			}
			fputs(i ? "\n" : "", stdout);
			out_wrapped(stdout, head, width, 0, 4);
			out_wrapped(stdout, caps ? caps : "capabilities unchanged",
				    width, 2, 4);
			if (get(res, i, D_FIGURE)) {
				char headc[C_N][64];

				for (int j = 0; j < C_N; j++)
					snprintf(headc[j], 64, "%s", col[j].head);
				line(stdout, col, headc);
			}
		}
		if (!get(res, i, D_FIGURE))
			continue;
		cells(res, i, cell);
		line(stdout, col, cell);
	}
	PQclear(res);
	if (rows) {
		fputc('\n', stdout);
		out_wrapped(stdout,
			    "~: no change at q < 0.05 (Mann-Whitney over the runs, "
			    "Benjamini-Hochberg over the figures of each pair; "
			    "--wide: a row per kernel)",
			    width, 0, 3);
	}
	if (fflush(stdout) != 0) {
		log_error("cannot write the output");
		return CMD_FAILED;
	}
	return CMD_OK;
}
