/* SPDX-License-Identifier: MIT */
/*
 * The function file that loads the headline figures' declarations
 * (proto/figures.def) into the table `figures` (schema/027_figures.sql):
 * made here, recorded and checked by migrate as the files of
 * schema/functions are, so that a collector whose declarations differ
 * from the database's is told to migrate.
 */
#include "figures_sql.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "figures.h"

/* A declaration's text as an SQL literal, each quote doubled
 * (figures_check() allows no backslash or control byte); "" is NULL. */
static void literal(FILE *f, const char *s)
{
	if (!*s) {
		fputs("NULL", f);
		return;
	}
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

int figures_function_file(struct pg_function_file **f, size_t n,
			  char err[PG_ERR_LEN])
{
	char *script = NULL;
	size_t len = 0;
	FILE *out;

	if (figures_check(err, PG_ERR_LEN) < 0)
		return -EINVAL;
	out = open_memstream(&script, &len);
	if (!out) {
		snprintf(err, PG_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	fputs("-- Made by fleetbench-collector from proto/figures.def: the\n"
	      "-- headline figures' declarations (docs/architecture.md).\n"
	      "CREATE TEMP TABLE figures_declared ON COMMIT DROP AS\n"
	      "SELECT * FROM (VALUES\n",
	      out);
	for (size_t i = 0; i < FIGURES_N; i++) {
		const struct figure_decl *d = &figure_decls[i];

		fprintf(out, "\t('%s', %d, %zu, '%s', '%s', ", d->name, d->id,
			i + 1, d->family,
			d->kind == FIGURE_RATIO ? "ratio" : "value");
		literal(out, d->benchmark);
		fputs(", ", out);
		literal(out, d->variant);
		fputs(", ", out);
		literal(out, d->base);
		fputs(", ", out);
		literal(out, d->metric);
		fputs(", ", out);
		literal(out, d->unit);
		fprintf(out, ", %s, %s, ",
			d->higher_is_better ? "true" : "false",
			d->per_vcpu ? "true" : "false");
		if (d->alert_min_change > 0)
			fprintf(out, "%.17g", d->alert_min_change);
		else
			fputs("NULL::double precision", out);
		fputs(", ", out);
		literal(out, d->label);
		fputs(", ", out);
		literal(out, d->note);
		fprintf(out, ")%s\n", i + 1 < FIGURES_N ? "," : "");
	}
	fputs(") AS d(name, id, position, family, kind, benchmark, variant,\n"
	      "\tbase, metric, unit, higher_is_better, per_vcpu,\n"
	      "\talert_min_change, label, note);\n"
	      "-- stored runs keep a figure by its id: neither changes\n"
	      "DO $$\n"
	      "DECLARE\n"
	      "\tbad record;\n"
	      "BEGIN\n"
	      "\tSELECT f.name, f.id, d.name AS d_name, d.id AS d_id INTO bad\n"
	      "\tFROM figures AS f\n"
	      "\tJOIN figures_declared AS d ON d.name = f.name OR d.id = f.id\n"
	      "\tWHERE d.name <> f.name OR d.id <> f.id\n"
	      "\tORDER BY f.id LIMIT 1;\n"
	      "\tIF FOUND THEN\n"
	      "\t\tRAISE EXCEPTION 'figure % is stored with id %, but proto/figures.def declares % with id %: a figure''s name and id never change',\n"
	      "\t\t\tbad.name, bad.id, bad.d_name, bad.d_id;\n"
	      "\tEND IF;\n"
	      "END\n"
	      "$$;\n"
	      "INSERT INTO figures (name, id, position, family, kind, benchmark,\n"
	      "\tvariant, base, metric, unit, higher_is_better, per_vcpu,\n"
	      "\talert_min_change, label, note)\n"
	      "SELECT * FROM figures_declared\n"
	      "ON CONFLICT (name) DO UPDATE SET position = EXCLUDED.position,\n"
	      "\tfamily = EXCLUDED.family, kind = EXCLUDED.kind,\n"
	      "\tbenchmark = EXCLUDED.benchmark, variant = EXCLUDED.variant,\n"
	      "\tbase = EXCLUDED.base, metric = EXCLUDED.metric,\n"
	      "\tunit = EXCLUDED.unit,\n"
	      "\thigher_is_better = EXCLUDED.higher_is_better,\n"
	      "\tper_vcpu = EXCLUDED.per_vcpu,\n"
	      "\talert_min_change = EXCLUDED.alert_min_change,\n"
	      "\tlabel = EXCLUDED.label, note = EXCLUDED.note;\n"
	      "DELETE FROM figures AS f WHERE NOT EXISTS\n"
	      "\t(SELECT 1 FROM figures_declared AS d WHERE d.name = f.name);\n"
	      "DROP TABLE figures_declared;\n",
	      out);
	if (fclose(out) != 0) {
		free(script);
		snprintf(err, PG_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	return pg_functions_add(f, n, FIGURES_FUNCTION_FILE,
				"proto/figures.def", script, err);
}
