/* SPDX-License-Identifier: MIT */
/*
 * The report's figures (html.h): the THP and io_uring charts, then per
 * benchmark family of issue 15 a heading, what it measures, and a chart
 * of each headline figure per instance type and kernel
 * (fleet_kernels_by()); a family no run measured says so, and why that
 * may be (a profile or flag that leaves it out).
 */
#include "html.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "cleanup.h"
#include "figures.h"

/*
 * The report's families, in this order: a headline family shows its first
 * figure as a chart of its own (id), then its other figures; the others a
 * section (id) with a chart per figure, or absent when no run measured
 * one. The figures, their
 * titles, notes and whether each is a ratio come from their declarations
 * (proto/figures.def).
 */
struct family {
	const char *family, *id;
	bool headline;
	const char *title, *note, *absent;
};

static const struct family families[] = {
	{ "thp", "thp-chart", true, NULL, NULL, NULL },
	{ "iouring", "iouring-chart", true, NULL, NULL, NULL },
	{ "mmap", "mmap-section", false, "mmap'd-file random reads",
	  "Random 4 KiB reads from a file mapped with 4 KiB pages, and with "
	  "huge pages for file memory where the kernel grants them "
	  "(shmem_enabled).",
	  "No run measured mmap'd-file reads (benchmark mmap_read)." },
	{ "membw", "membw-section", false, "Memory bandwidth",
	  "STREAM-style copy, scale, add and triad over buffers far beyond "
	  "the last-level cache, 4 KiB pages against THP, one thread and "
	  "all vCPUs (benchmark membw).",
	  "No run measured the memory bandwidth (benchmark membw)." },
	{ "ioscale", "ioscale-section", false, "I/O scaling and its knee",
	  "io_uring random reads with 1 to all vCPUs' jobs at queue depths "
	  "1 to 64; the knee is the smallest depth within 5% of the best "
	  "IOPS, a queue depth to size from (benchmark io_scaling, the full "
	  "profile).",
	  "No run measured the I/O scaling (benchmark io_scaling: the full "
	  "profile only)." },
	{ "writeback", "writeback-section", false, "Buffered write-back stalls",
	  "Buffered sequential writes with periodic fsync under the host's "
	  "own vm.dirty_* settings (benchmark writeback): write() latency "
	  "and the writes that stalled over 100 ms.",
	  "No run measured write-back (benchmark writeback)." },
	{ "db", "db-section", false, "Database tail latency under THP modes",
	  "pgbench at a fixed rate against a throwaway PostgreSQL under THP "
	  "never, madvise and always (benchmark database).",
	  "No run measured the database (benchmark database: the full "
	  "profile with --with-database, as root)." },
};

/* A figure's title: its label with a capital. */
static void title_write(FILE *f, const char *label, const char *more)
{
	char first[2] = { label[0], 0 };

	if (first[0] >= 'a' && first[0] <= 'z')
		first[0] = (char)(first[0] - 'a' + 'A');
	html_esc(f, first);
	html_esc(f, label + 1);
	if (more)
		html_esc(f, more);
}

/* A figure's note, naming the figure. */
static void note_write(FILE *f, const struct figure_decl *d)
{
	html_esc(f, d->note);
	fprintf(f, " (");
	html_esc(f, d->name);
	fprintf(f, ").");
}

/* Whether some row has a median of metric. */
static bool measured(const PGresult *res, const char *metric)
{
	for (int r = 0; r < PQntuples(res); r++)
		if (!isnan(html_num(res, r, metric)))
			return true;
	return false;
}

/* Figure d of a family's section: its title, note and chart, or a line
 * saying that no run measured it. */
static void figure_part(FILE *f, const PGresult *res,
			const struct figure_decl *d)
{
	fprintf(f, "<h3>");
	title_write(f, d->label, NULL);
	fprintf(f, "</h3>\n<p class=\"note\">");
	note_write(f, d);
	fprintf(f, "</p>\n");
	if (measured(res, d->name))
		html_chart(f, res, d->name, d->kind == FIGURE_RATIO);
	else /* e.g. hugetlb without a pool, a flag not given */
		fprintf(f, "<p class=\"note absent\" data-metric=\"%s\">No run measured it.</p>\n",
			d->name);
}

/* The headline chart of family fam, its first figure's, then the
 * family's other figures. */
static void headline(FILE *f, const PGresult *res, const struct family *fam)
{
	bool first = true;

	for (size_t i = 0; i < FIGURES_N; i++) {
		const struct figure_decl *d = &figure_decls[i];

		if (strcmp(d->family, fam->family))
			continue;
		if (!first) {
			figure_part(f, res, d);
			continue;
		}
		fprintf(f, "<section id=\"%s\">\n<h2>", fam->id);
		title_write(f, d->label, " per instance type and kernel");
		fprintf(f, "</h2>\n<p class=\"note\">");
		note_write(f, d);
		fprintf(f, "</p>\n");
		html_chart(f, res, d->name, true);
		first = false;
	}
	if (!first)
		fprintf(f, "</section>\n");
}

static void family(FILE *f, const PGresult *res, const struct family *fam)
{
	bool any = false;

	for (size_t i = 0; i < FIGURES_N; i++)
		any = any || (!strcmp(figure_decls[i].family, fam->family) &&
			      measured(res, figure_decls[i].name));
	fprintf(f, "<section id=\"%s\" class=\"family\">\n<h2>", fam->id);
	html_esc(f, fam->title);
	fprintf(f, "</h2>\n<p class=\"note\">");
	html_esc(f, fam->note);
	fprintf(f, "</p>\n");
	if (!any) {
		fprintf(f, "<p class=\"note absent\">");
		html_esc(f, fam->absent);
		fprintf(f, "</p>\n</section>\n");
		return;
	}
	for (size_t i = 0; i < FIGURES_N; i++) {
		const struct figure_decl *d = &figure_decls[i];

		if (!strcmp(d->family, fam->family))
			figure_part(f, res, d);
	}
	fprintf(f, "</section>\n");
}

void html_families(FILE *f, const PGresult *res)
{
	for (size_t i = 0; i < ARRAY_SIZE(families); i++)
		if (families[i].headline)
			headline(f, res, &families[i]);
		else
			family(f, res, &families[i]);
}
