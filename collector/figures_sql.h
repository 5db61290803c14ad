/* SPDX-License-Identifier: MIT */
#ifndef FLEETBENCH_FIGURES_SQL_H
#define FLEETBENCH_FIGURES_SQL_H

#include <stddef.h>

#include "migrate.h"

/* its name in schema_functions: before every file of schema/functions */
#define FIGURES_FUNCTION_FILE "00_figures.sql"

/*
 * Adds the function file that loads proto/figures.def into the table
 * `figures` to the n files of *f (pg_functions_add()). Returns the new
 * count, or -errno with err set (-EINVAL: a declaration is bad).
 */
int figures_function_file(struct pg_function_file **f, size_t n,
			  char err[PG_ERR_LEN]);

#endif
