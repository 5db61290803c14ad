/* SPDX-License-Identifier: MIT */
/*
 * The headline figures' declarations (proto/figures.def) and what each
 * layer makes of them: they pass their own check; the function file
 * migrate loads them with names each figure once, in order, quoted; the
 * CLI's usage lists every figure under its direction and its families;
 * --figures hides the columns of the families left out, and only those.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cleanup.h"
#include "families.h"
#include "figures.h"
#include "figures_sql.h"

static void test_declarations(void)
{
	char err[256] = "";

	CHECK_(figures_check(err, sizeof(err)) == 0, "%s", err);
	CHECK(FIGURES_N >= 21);
	for (size_t i = 0; i < FIGURES_N; i++) {
		CHECK(figure_find(figure_decls[i].name) == &figure_decls[i]);
		/* ids as they were first given: never changed */
		CHECK(figure_decls[i].id >= 1 &&
		      figure_decls[i].id <= FIGURES_ID_MAX);
	}
	CHECK_EQ_INT(figure_find("thp_speedup")->id, 1);
	CHECK_EQ_INT(figure_find("db_p99_always_vs_never")->id, 21);
	CHECK(figure_find("no_such_figure") == NULL);
	/* the two every report has shown since issue 1 */
	CHECK(figure_find("thp_speedup") &&
	      figure_find("thp_speedup")->kind == FIGURE_RATIO);
	CHECK(figure_find("iouring_vs_pread") &&
	      figure_find("iouring_vs_pread")->alert_min_change > 0);
}

static void test_function_file(void)
{
	struct pg_function_file *f = NULL;
	char err[PG_ERR_LEN] = "";
	const char *at;
	int n = figures_function_file(&f, 0, err);

	CHECK_(n == 1, "%s", err);
	if (n != 1)
		return;
	CHECK(!strcmp(f[0].name, FIGURES_FUNCTION_FILE) && f[0].made);
	CHECK(strlen(f[0].sha256) == 64);
	at = f[0].script;
	for (size_t i = 0; i < FIGURES_N; i++) {
		char row[80];

		/* each figure's row, at its position, in order */
		snprintf(row, sizeof(row), "('%s', %d, %zu, ",
			 figure_decls[i].name, figure_decls[i].id, i + 1);
		at = at ? strstr(at, row) : NULL;
		CHECK_(at != NULL, "no row %s in order", row);
	}
	/* a quote in a note, doubled in its literal */
	CHECK(strstr(f[0].script, "chase''s THP buffer") != NULL);
	CHECK(strstr(f[0].script, "ON CONFLICT (name) DO UPDATE") != NULL);
	CHECK(strstr(f[0].script, "a figure''s name and id never change") !=
	      NULL);
	pg_functions_free(f, (size_t)n);
}

static void test_usage(void)
{
	const char *text = families_usage("h:\n{higher:4}\nl:\n{lower:4}\n"
					  "f: {families:0}\n");
	const char *lower = strstr(text, "\nl:\n");

	CHECK(lower != NULL);
	for (size_t i = 0; lower && i < FIGURES_N; i++) {
		const struct figure_decl *d = &figure_decls[i];
		const char *at = strstr(text, d->name);

		CHECK_(at && (at > lower) == !d->higher_is_better,
		       "%s not listed under its direction", d->name);
	}
	CHECK(strstr(text, "f: thp, thp_fault, iouring,") != NULL);
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		CHECK_(len <= 79, "a usage line of %zu columns", len);
		line = end ? end + 1 : NULL;
	}
}

static void test_hide(void)
{
	const char *hide[3 * FIGURES_N + 2] = { NULL };
	size_t n = 0;

	CHECK_OK(families_hide("db", OUT_TABLE, false, hide, ARRAY_SIZE(hide)));
	while (hide[n])
		n++;
	/* every figure's three columns but db's */
	CHECK_EQ_INT((int)n, 3 * (FIGURES_N - 1));
	for (size_t i = 0; i < n; i++)
		CHECK_(strncmp(hide[i], "db_", 3), "db's column %s hidden",
		       hide[i]);
	hide[0] = NULL;
	CHECK_OK(families_hide("all", OUT_TABLE, false, hide, ARRAY_SIZE(hide)));
	CHECK(hide[0] == NULL);
	CHECK_OK(families_hide(NULL, OUT_CSV, false, hide, ARRAY_SIZE(hide)));
	CHECK(hide[0] == NULL);
	CHECK_OK(families_hide(NULL, OUT_TABLE, true, hide, ARRAY_SIZE(hide)));
	CHECK(hide[0] == NULL);
	CHECK(families_hide("thp,nope", OUT_TABLE, false, hide, ARRAY_SIZE(hide)) < 0);
	/* a table that fits: each family's first figure, the rest hidden */
	CHECK_OK(families_hide(NULL, OUT_TABLE, false, hide, ARRAY_SIZE(hide)));
	for (n = 0; hide[n]; n++) {
		CHECK_(strcmp(hide[n], "thp_speedup") &&
			       strcmp(hide[n], "iouring_vs_pread"),
		       "a family's first figure %s hidden", hide[n]);
	}
	CHECK(n > 0);
	/* io: the families that begin with it; thp: thp alone */
	hide[0] = NULL;
	CHECK_OK(families_hide("io", OUT_TABLE, false, hide, ARRAY_SIZE(hide)));
	for (n = 0; hide[n]; n++)
		CHECK_(strncmp(hide[n], "iouring", 7) && strcmp(hide[n], "pread_iops") &&
			       strcmp(hide[n], "sqpoll_vs_iouring"),
		       "io hides %s", hide[n]);
	hide[0] = NULL;
	CHECK_OK(families_hide("thp", OUT_TABLE, false, hide, ARRAY_SIZE(hide)));
	for (n = 0; hide[n]; n++)
		CHECK_(strncmp(hide[n], "thp_fault", 9) == 0 || strncmp(hide[n], "thp", 3),
		       "thp hides %s", hide[n]);
	hide[0] = NULL;
	CHECK(families_hide("zz", OUT_TABLE, false, hide, ARRAY_SIZE(hide)) < 0);
}

int main(void)
{
	test_declarations();
	test_function_file();
	test_usage();
	test_hide();
	return check_summary();
}
