/* SPDX-License-Identifier: MIT */
/*
 * Prints the function file that fleetbench-collector migrate makes from
 * proto/figures.def (00_figures.sql, collector/figures_sql.c), for the
 * tests that apply the schema's files with psql as migrate does
 * (test_schema.sh): the generated functions and views read the table
 * figures that it fills.
 *
 * usage: figures_sql
 */
#include <stdio.h>
#include <stdlib.h>

#include "figures_sql.h"

int main(void)
{
	struct pg_function_file *f = NULL;
	char err[PG_ERR_LEN];
	int n = figures_function_file(&f, 0, err);

	if (n != 1) {
		fprintf(stderr, "figures_sql: %s\n", n < 0 ? err : "no file");
		return 1;
	}
	fputs(f[0].script, stdout);
	pg_functions_free(f, (size_t)n);
	return ferror(stdout) || fflush(stdout) ? 1 : 0;
}
