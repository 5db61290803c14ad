/* SPDX-License-Identifier: MIT */
/*
 * The report's sections of issue 15's benchmark families (html.h): per
 * family a heading, what it measures, and a chart of each headline
 * figure per instance type and kernel (fleet_kernels_by()), as the THP
 * and io_uring charts have; a family no run measured says so, and why
 * that may be (a profile or flag that leaves it out).
 */
#include "html.h"

#include <math.h>
#include <stddef.h>

#include "cleanup.h"

struct figure {
	const char *metric, *title, *note;
	bool ratio;
};

struct family {
	const char *id, *title, *note, *absent;
	struct figure fig[3];
};

static const struct family families[] = {
	{ "mmap-section", "mmap'd-file random reads",
	  "Random 4 KiB reads from a file mapped with 4 KiB pages, and with "
	  "huge pages for file memory where the kernel grants them "
	  "(shmem_enabled).",
	  "No run measured mmap'd-file reads (benchmark mmap_read).",
	  { { "mmap_thp_speedup", "mmap THP speedup",
	      "ns per access with 4 KiB pages over with THP "
	      "(mmap_thp_speedup): above 1, THP is faster; 1 where the "
	      "kernel gave the file no huge pages.",
	      true },
	    { "mmap_hugetlb_speedup", "mmap hugetlb speedup",
	      "ns per access with 4 KiB pages over from a hugetlb memfd "
	      "(mmap_hugetlb_speedup): above 1, hugetlb pages are faster; "
	      "measured only where a 2 MiB pool was free.",
	      true } } },
	{ "membw-section", "Memory bandwidth",
	  "STREAM-style copy, scale, add and triad over buffers far beyond "
	  "the last-level cache, 4 KiB pages against THP, one thread and "
	  "all vCPUs (benchmark membw).",
	  "No run measured the memory bandwidth (benchmark membw).",
	  { { "membw_triad_gbps", "Triad bandwidth, all vCPUs, 4 KiB pages",
	      "GB/s of the triad kernel with every vCPU (membw_triad_gbps).",
	      false },
	    { "membw_thp_gain", "THP gain on the triad bandwidth",
	      "Triad GB/s with THP over with 4 KiB pages, all vCPUs "
	      "(membw_thp_gain): above 1, THP moves more.",
	      true },
	    { "membw_thread_scaling", "Triad bandwidth, all vCPUs over one",
	      "Triad GB/s with every vCPU over with one thread, 4 KiB pages "
	      "(membw_thread_scaling): how far the memory bandwidth scales "
	      "with the vCPUs.",
	      true } } },
	{ "ioscale-section", "I/O scaling and its knee",
	  "io_uring random reads with 1 to all vCPUs' jobs at queue depths "
	  "1 to 64; the knee is the smallest depth within 5% of the best "
	  "IOPS, a queue depth to size from (benchmark io_scaling, the full "
	  "profile).",
	  "No run measured the I/O scaling (benchmark io_scaling: the full "
	  "profile only).",
	  { { "iouring_knee_depth", "The knee: queue depth",
	      "The smallest queue depth within 5% of the best IOPS "
	      "(iouring_knee_depth): deeper queues buy nothing past it.",
	      false },
	    { "iouring_best_iops", "Best IOPS of the sweep",
	      "Random 4 KiB read IOPS at the best point of the sweep "
	      "(iouring_best_iops).",
	      false },
	    { "iouring_qd32_vs_qd1", "Queue depth 32 over 1",
	      "IOPS at depth 32 over depth 1 (iouring_qd32_vs_qd1).", true } } },
	{ "writeback-section", "Buffered write-back stalls",
	  "Buffered sequential writes with periodic fsync under the host's "
	  "own vm.dirty_* settings (benchmark writeback): write() latency "
	  "and the writes that stalled over 100 ms.",
	  "No run measured write-back (benchmark writeback).",
	  { { "writeback_p99_us", "p99 write() latency",
	      "µs, under the host's own settings (writeback_p99_us): lower "
	      "is better.",
	      false },
	    { "writeback_stalls", "Stalls over 100 ms",
	      "write() calls that took over 100 ms, per repeat "
	      "(writeback_stalls): lower is better.",
	      false },
	    { "writeback_tuned_vs_host", "p99 write(), tuned over host",
	      "p99 write() latency under the asked vm.dirty_bytes over under "
	      "the host's own settings (writeback_tuned_vs_host, run with "
	      "--writeback-dirty-bytes): below 1, the tuning shortens the "
	      "slow writes.",
	      true } } },
	{ "db-section", "Database tail latency under THP modes",
	  "pgbench at a fixed rate against a throwaway PostgreSQL under THP "
	  "never, madvise and always (benchmark database).",
	  "No run measured the database (benchmark database: the full "
	  "profile with --with-database, as root).",
	  { { "db_p99_always_vs_never", "p99 latency, THP always over never",
	      "p99 transaction latency under THP always over under never "
	      "(db_p99_always_vs_never): above 1, always is worse.",
	      true } } },
};

/* Whether some row has a median of metric. */
static bool measured(const PGresult *res, const char *metric)
{
	for (int r = 0; r < PQntuples(res); r++)
		if (!isnan(html_num(res, r, metric)))
			return true;
	return false;
}

static void family(FILE *f, const PGresult *res, const struct family *fam)
{
	bool any = false;

	for (size_t i = 0; i < ARRAY_SIZE(fam->fig) && fam->fig[i].metric; i++)
		any = any || measured(res, fam->fig[i].metric);
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
	for (size_t i = 0; i < ARRAY_SIZE(fam->fig) && fam->fig[i].metric; i++) {
		const struct figure *g = &fam->fig[i];

		fprintf(f, "<h3>");
		html_esc(f, g->title);
		fprintf(f, "</h3>\n<p class=\"note\">");
		html_esc(f, g->note);
		fprintf(f, "</p>\n");
		if (measured(res, g->metric))
			html_chart(f, res, g->metric, g->ratio);
		else /* e.g. hugetlb without a pool, a flag not given */
			fprintf(f, "<p class=\"note absent\" data-metric=\"%s\">No run measured it.</p>\n",
				g->metric);
	}
	fprintf(f, "</section>\n");
}

void html_families(FILE *f, const PGresult *res)
{
	for (size_t i = 0; i < ARRAY_SIZE(families); i++)
		family(f, res, &families[i]);
}
