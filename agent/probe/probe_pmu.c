/* SPDX-License-Identifier: MIT */
/* Whether hardware counters (dTLB misses, page-walk cycles) can be used. */
#include <errno.h>
#include <linux/perf_event.h>

#include "pmu.h"
#include "probe_modules.h"

/*
 * "ok" when perf_event_open(2) of ev opens with the attributes the
 * benchmarks use (pmu_attr(): this process, any CPU, user space only),
 * else the errno's name. The counter is closed at once.
 */
static void pmu_item(struct probe_ctx *ctx, struct json_object *out,
		     const char *key, const struct pmu_event *ev)
{
	struct perf_event_attr attr;
	int fd;

	pmu_attr(ev, true, &attr);
	fd = ctx->sys->perf_open(&attr, 0, -1, -1, 0);
	if (fd >= 0)
		ctx->sys->perf_close(fd);
	item_str(out, key, pmu_errname(fd < 0 ? fd : 0));
}

static int probe_pmu(struct probe_ctx *ctx, struct json_object *out)
{
	struct pmu_event walk;
	char why[160];

	pmu_item(ctx, out, "dtlb_load_misses", &pmu_dtlb_load_misses);
	if (pmu_walk_cycles_event(ctx->sys->cpuid, &walk, why, sizeof(why)) <
	    0) {
		item_unknown(out, "page_walk_cycles", "%s", why);
		item_unknown(out, "page_walk_event", "%s", why);
	} else {
		pmu_item(ctx, out, "page_walk_cycles", &walk);
		item_str(out, "page_walk_event", walk.name);
	}
	pmu_item(ctx, out, "cycles", &pmu_cpu_cycles);
	item_file_i64(ctx, out, "perf_event_paranoid",
		      "/proc/sys/kernel/perf_event_paranoid");
	return 0;
}

const struct probe_ops probe_pmu_ops = {
	.name = "pmu",
	.run = probe_pmu,
};
