/* SPDX-License-Identifier: MIT */
/* Counter groups around a measured region (pmu.h). */
#include "pmu.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cleanup.h"
#include "kfiles.h"
#include "sys/sys.h"

const struct pmu_event pmu_dtlb_load_misses = {
	.name = "dtlb_load_misses",
	.type = PERF_TYPE_HW_CACHE,
	.config = PERF_COUNT_HW_CACHE_DTLB |
		  (PERF_COUNT_HW_CACHE_OP_READ << 8) |
		  (PERF_COUNT_HW_CACHE_RESULT_MISS << 16),
};

const struct pmu_event pmu_cpu_cycles = {
	.name = "cycles",
	.type = PERF_TYPE_HARDWARE,
	.config = PERF_COUNT_HW_CPU_CYCLES,
};

/*
 * Intel family 6 models whose page-walk-cycles event we know, from Intel's
 * published event lists (perfmon): umask 0x10 of DTLB_LOAD_MISSES counts,
 * each cycle, the page walks a demand load has outstanding. Event 0x08 up
 * to Ice Lake/Tiger Lake, 0x12 on Golden Cove server cores (Sapphire and
 * Emerald Rapids, Granite Rapids). Hybrid client parts are left out: their
 * raw events go to a per-core-type PMU, not PERF_TYPE_RAW.
 */
static const struct {
	uint8_t model;
	uint16_t code; /* umask << 8 | event */
	const char *name;
} intel_walk[] = {
	{ 0x3c, 0x1008, "DTLB_LOAD_MISSES.WALK_DURATION" }, /* Haswell */
	{ 0x3f, 0x1008, "DTLB_LOAD_MISSES.WALK_DURATION" },
	{ 0x45, 0x1008, "DTLB_LOAD_MISSES.WALK_DURATION" },
	{ 0x46, 0x1008, "DTLB_LOAD_MISSES.WALK_DURATION" },
	{ 0x3d, 0x1008, "DTLB_LOAD_MISSES.WALK_DURATION" }, /* Broadwell */
	{ 0x47, 0x1008, "DTLB_LOAD_MISSES.WALK_DURATION" },
	{ 0x4f, 0x1008, "DTLB_LOAD_MISSES.WALK_DURATION" },
	{ 0x56, 0x1008, "DTLB_LOAD_MISSES.WALK_DURATION" },
	{ 0x4e, 0x1008, "DTLB_LOAD_MISSES.WALK_PENDING" }, /* Skylake */
	{ 0x5e, 0x1008, "DTLB_LOAD_MISSES.WALK_PENDING" },
	{ 0x55, 0x1008, "DTLB_LOAD_MISSES.WALK_PENDING" }, /* SKX/CLX/CPX */
	{ 0x8e, 0x1008, "DTLB_LOAD_MISSES.WALK_PENDING" }, /* Kaby/Coffee */
	{ 0x9e, 0x1008, "DTLB_LOAD_MISSES.WALK_PENDING" },
	{ 0xa5, 0x1008, "DTLB_LOAD_MISSES.WALK_PENDING" }, /* Comet Lake */
	{ 0xa6, 0x1008, "DTLB_LOAD_MISSES.WALK_PENDING" },
	{ 0x6a, 0x1008, "DTLB_LOAD_MISSES.WALK_PENDING" }, /* Ice Lake */
	{ 0x6c, 0x1008, "DTLB_LOAD_MISSES.WALK_PENDING" },
	{ 0x7d, 0x1008, "DTLB_LOAD_MISSES.WALK_PENDING" },
	{ 0x7e, 0x1008, "DTLB_LOAD_MISSES.WALK_PENDING" },
	{ 0x8c, 0x1008, "DTLB_LOAD_MISSES.WALK_PENDING" }, /* Tiger Lake */
	{ 0x8d, 0x1008, "DTLB_LOAD_MISSES.WALK_PENDING" },
	{ 0x8f, 0x1012, "DTLB_LOAD_MISSES.WALK_PENDING" }, /* Sapphire R. */
	{ 0xcf, 0x1012, "DTLB_LOAD_MISSES.WALK_PENDING" }, /* Emerald R. */
	{ 0xad, 0x1012, "DTLB_LOAD_MISSES.WALK_PENDING" }, /* Granite R. */
	{ 0xae, 0x1012, "DTLB_LOAD_MISSES.WALK_PENDING" },
};

int pmu_walk_cycles_event(int (*cpuid)(uint32_t leaf, uint32_t subleaf,
				       uint32_t ret[4]),
			  struct pmu_event *ret, char *why, size_t whylen)
{
	uint32_t r0[4], r1[4], family, model;
	char vendor[13];

	if (cpuid(0, 0, r0) < 0 || cpuid(1, 0, r1) < 0) {
		snprintf(why, whylen, "no CPUID: no raw event known");
		return -ENOENT;
	}
	memcpy(vendor, &r0[1], 4); /* ebx edx ecx */
	memcpy(vendor + 4, &r0[3], 4);
	memcpy(vendor + 8, &r0[2], 4);
	vendor[12] = '\0';
	family = (r1[0] >> 8) & 0xf;
	model = (r1[0] >> 4) & 0xf;
	if (family == 0xf)
		family += (r1[0] >> 20) & 0xff;
	if (family == 0x6 || family >= 0xf)
		model |= ((r1[0] >> 16) & 0xf) << 4;
	if (!strcmp(vendor, "GenuineIntel") && family == 6)
		for (size_t i = 0; i < ARRAY_SIZE(intel_walk); i++) {
			if (intel_walk[i].model != model)
				continue;
			*ret = (struct pmu_event){
				.name = intel_walk[i].name,
				.type = PERF_TYPE_RAW,
				.config = intel_walk[i].code,
			};
			return 0;
		}
	snprintf(why, whylen,
		 "no page-walk-cycles event known for CPU '%s' family %u model %u%s",
		 vendor, family, model,
		 !strcmp(vendor, "AuthenticAMD") ?
			 " (AMD Zen counts table walks, not their cycles)" :
			 "");
	return -ENOENT;
}

void pmu_attr(const struct pmu_event *ev, bool leader,
	      struct perf_event_attr *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->size = sizeof(*ret);
	ret->type = ev->type;
	ret->config = ev->config;
	/* the leader starts the group: members follow it */
	ret->disabled = leader;
	ret->exclude_kernel = 1;
	ret->exclude_hv = 1;
	ret->read_format = PERF_FORMAT_GROUP |
			   PERF_FORMAT_TOTAL_TIME_ENABLED |
			   PERF_FORMAT_TOTAL_TIME_RUNNING;
}

int pmu_open(struct pmu_group *g, const struct pmu_event *ev, size_t n)
{
	struct perf_event_attr attr;

	memset(g, 0, sizeof(*g));
	for (size_t i = 0; i < PMU_MAX_EVENTS; i++)
		g->fd[i] = -1;
	if (n == 0 || n > PMU_MAX_EVENTS)
		return -EINVAL;
	g->n = n;
	g->ev = ev;
	for (size_t i = 0; i < n; i++) {
		int fd;

		pmu_attr(&ev[i], i == 0, &attr);
		fd = sys_perf_event_open(&attr, 0, -1, i ? g->fd[0] : -1, 0);
		if (fd < 0) {
			g->err[i] = fd;
			if (i == 0)
				return fd;
			continue;
		}
		g->fd[i] = fd;
	}
	return 0;
}

int pmu_start(struct pmu_group *g)
{
	if (g->fd[0] < 0)
		return -EBADF;
	if (ioctl(g->fd[0], PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP) < 0 ||
	    ioctl(g->fd[0], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP) < 0)
		return -errno;
	return 0;
}

int pmu_counts_parse(const struct pmu_group *g, const uint64_t *buf,
		     size_t nbuf, struct pmu_counts *ret)
{
	struct pmu_counts c = { .n = g->n };
	size_t open = 0, k = 0;
	double scale;

	for (size_t i = 0; i < g->n; i++)
		open += g->fd[i] >= 0;
	if (nbuf < 3 || buf[0] != open || nbuf < 3 + open)
		return -EBADMSG;
	c.time_enabled = buf[1];
	c.time_running = buf[2];
	c.multiplexed = c.time_running < c.time_enabled;
	scale = c.time_running ?
			(double)c.time_enabled / (double)c.time_running :
			NAN;
	/* the kernel lists the group's members in the order they joined */
	for (size_t i = 0; i < g->n; i++) {
		c.value[i] = NAN;
		if (g->fd[i] < 0)
			continue;
		c.raw[i] = buf[3 + k++];
		c.value[i] = (double)c.raw[i] * scale;
	}
	*ret = c;
	return 0;
}

int pmu_stop(struct pmu_group *g, struct pmu_counts *ret)
{
	uint64_t buf[3 + PMU_MAX_EVENTS];
	ssize_t n;

	if (g->fd[0] < 0)
		return -EBADF;
	if (ioctl(g->fd[0], PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP) < 0)
		return -errno;
	n = read(g->fd[0], buf, sizeof(buf));
	if (n < 0)
		return -errno;
	return pmu_counts_parse(g, buf, (size_t)n / sizeof(buf[0]), ret);
}

void pmu_close(struct pmu_group *g)
{
	/* members first, the leader last; a zeroed g has n 0 */
	for (size_t i = g->n; i-- > 0;)
		if (g->fd[i] >= 0) {
			close(g->fd[i]);
			g->fd[i] = -1;
		}
}

double pmu_per_access(const struct pmu_counts *c, size_t i,
		      uint64_t accesses)
{
	if (i >= c->n || accesses == 0 || isnan(c->value[i]))
		return NAN;
	return c->value[i] / (double)accesses;
}

const char *pmu_errname(int err)
{
	return err ? kfile_errname(err) : "ok";
}
