/* SPDX-License-Identifier: MIT */
/* What the load programs measure of processes, and their order statistics
 * (measure.h). */
#include "measure.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cleanup.h"
#include "fleet.h"

int proc_mem(pid_t pid, long *ret_hwm_kb, long *ret_rss_kb)
{
	char path[64], line[256];
	long hwm = -1, rss = -1;
	_cleanup_fclose_ FILE *f = NULL;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "VmHWM: %ld kB", &hwm);
		sscanf(line, "VmRSS: %ld kB", &rss);
	}
	if (hwm < 0 || rss < 0)
		return -ENODATA;
	*ret_hwm_kb = hwm;
	*ret_rss_kb = rss;
	return 0;
}

int proc_reset_hwm(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/clear_refs", (int)pid);
	return fleet_write_file(path, "5", 1, 0);
}

double proc_cpu_ms(pid_t pid)
{
	char path[64], line[1024];
	unsigned long long ut, st;
	_cleanup_fclose_ FILE *f = NULL;
	char *p;

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f || !fgets(line, sizeof(line), f))
		return -1;
	/* after "(comm)", which may hold spaces: fields 14 and 15 */
	p = strrchr(line, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return -1;
	return (double)(ut + st) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

double self_cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000.0 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000.0;
}

int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double percentile(const double *sorted, size_t n, double p)
{
	size_t rank = (size_t)(p * (double)n);

	if ((double)rank < p * (double)n)
		rank++;
	return n ? sorted[rank ? rank - 1 : 0] : 0;
}
