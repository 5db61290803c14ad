/* SPDX-License-Identifier: MIT */
/*
 * The benchmark driver: the table of benchmarks and the suite, each
 * benchmark run in its own process (bench_child.c) and its results merged.
 * bench_internal.h lists the driver's other files.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench_internal.h"
#include "bench_modules.h"
#include "cleanup.h"
#include "clock.h"
#include "list.h"

static const struct bench_ops *const bench_table[] = {
	&bench_thp_chase_ops, &bench_thp_fault_ops, &bench_randread_ops,
	&bench_seqwrite_ops,  &bench_false_sharing_ops,
	&bench_core_latency_ops,
	&bench_writeback_ops,
	&bench_mmap_read_ops,
	&bench_membw_ops,
	&bench_io_scaling_ops,
	&bench_database_ops,
};

size_t bench_count(void)
{
	return ARRAY_SIZE(bench_table);
}

const struct bench_ops *bench_get(size_t i)
{
	return i < ARRAY_SIZE(bench_table) ? bench_table[i] : NULL;
}

const struct bench_ops *bench_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(bench_table); i++)
		if (!strcmp(bench_table[i]->name, name))
			return bench_table[i];
	return NULL;
}

const struct bench_params *bench_params_of(struct bench_run *run)
{
	return run->params;
}

const char *bench_root(struct bench_run *run)
{
	return run->popts.root;
}

double bench_now(void)
{
	return mono_s();
}

int bench_affinity(cpu_set_t **ret, size_t *ret_size)
{
	/* the kernel refuses a mask smaller than its own: grow until not */
	for (int ncpu = 1024; ncpu <= (1 << 20); ncpu *= 2) {
		size_t size = CPU_ALLOC_SIZE(ncpu);
		cpu_set_t *set = CPU_ALLOC(ncpu);

		if (!set)
			return -ENOMEM;
		if (sched_getaffinity(0, size, set) == 0) {
			*ret = set;
			*ret_size = size;
			return 0;
		}
		CPU_FREE(set);
		if (errno != EINVAL)
			return -errno;
	}
	return -EINVAL;
}

/* ---- the benchmarks to run ---- */

int bench_only_has(const char *only, const char *name)
{
	const char *cur = only && *only ? only : NULL, *item;
	size_t len = strlen(name), n;

	while ((item = list_next(&cur, ',', &n)))
		if (n == len && !strncmp(item, name, n))
			return 1;
	return 0;
}

bool bench_selected(const struct bench_ops *ops, const char *profile,
		    const char *only)
{
	if (only)
		return bench_only_has(only, ops->name);
	return !ops->full_only || (profile && !strcmp(profile, "full"));
}

/* Every name in only is a benchmark: else -EINVAL naming it. */
static int only_check(const char *only, char *err, size_t errlen)
{
	const char *cur = only && *only ? only : NULL, *item;
	size_t n;

	while ((item = list_next(&cur, ',', &n))) {
		size_t i;

		if (!n && !cur)
			break; /* "a,": a trailing comma ends the list */
		for (i = 0; i < ARRAY_SIZE(bench_table); i++)
			if (strlen(bench_table[i]->name) == n &&
			    !strncmp(item, bench_table[i]->name, n))
				break;
		if (i == ARRAY_SIZE(bench_table)) {
			snprintf(err, errlen, "unknown benchmark '%.*s'",
				 (int)n, item);
			return -EINVAL;
		}
	}
	return 0;
}

/* A new, empty BenchRun; NULL on ENOMEM. */
static Fleetbench__BenchRun *bench_run_new(void)
{
	Fleetbench__BenchRun *b = malloc(sizeof(*b));

	if (b)
		fleetbench__bench_run__init(b);
	return b;
}

/* b->cost_total from b->costs: the sums, the largest peak, and the run's
 * max_seconds as its allowance. */
static int cost_total(Fleetbench__BenchRun *b, long long max_seconds)
{
	Fleetbench__Cost *t;

	if (!b->n_costs)
		return 0;
	t = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	fleetbench__cost__init(t);
	t->benchmark = strdup("total");
	if (!t->benchmark) {
		free(t);
		return -ENOMEM;
	}
	t->has_allowance_s = max_seconds > 0;
	t->allowance_s = (double)max_seconds;
	for (size_t i = 0; i < b->n_costs; i++) {
		const Fleetbench__Cost *c = b->costs[i];

		t->wall_s += c->wall_s;
		t->cpu_s += c->cpu_s;
		t->written_bytes += c->written_bytes;
		if (c->peak_memory_bytes > t->peak_memory_bytes)
			t->peak_memory_bytes = c->peak_memory_bytes;
	}
	b->cost_total = t;
	return 0;
}

/*
 * The time of the benchmark `at` of the run (docs/bench.md, "Time
 * allowances"): what is left of the run's max_seconds, less a reserve for
 * what follows the benchmarks (the report, the spool: 5% of the run),
 * shared among it and the benchmarks still to run by weight. A benchmark
 * that ends early leaves its rest to the ones after it. 0: no allowance
 * (no max_seconds).
 */
static double allowance_of(const struct bench_params *p, const char *only,
			   size_t at, double started)
{
	double left = started + (double)p->max_seconds * 0.95 - bench_now();
	int k = method_profile_index(p->profile);
	unsigned int weights = 0;

	if (p->max_seconds <= 0 || k < 0)
		return 0; /* no allowance */
	for (size_t i = at; i < ARRAY_SIZE(bench_table); i++)
		if (bench_selected(bench_table[i], p->profile, only))
			weights += bench_table[i]->weight[k];
	/* nothing left: an allowance already spent, not none at all */
	if (left <= 0)
		return 1e-3;
	return left * bench_table[at]->weight[k] / weights;
}

int bench_suite_run(const struct bench_params *p, const char *only,
		    Fleetbench__BenchRun **ret, char *err, size_t errlen)
{
	struct bench_run run = {
		.params = p,
		.popts = { .root = p->root ? p->root : "/" },
	};
	struct bench_out suite = { 0 };
	void *page = MAP_FAILED;
	double started = p->run_started > 0 ? p->run_started : bench_now();
	int r = 0;

	if (only_check(only, err, errlen) < 0)
		return -EINVAL;
	run.pctx.opts = &run.popts;
	run.pctx.root_fd = open(run.popts.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (run.pctx.root_fd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot open root '%s': %s",
			 run.popts.root, strerror(-r));
		goto out;
	}
	/* run.out stays empty here: each child fills its own copy */
	run.out.msg = bench_run_new();
	suite.msg = bench_run_new();
	page = mmap(NULL, sizeof(struct bench_where), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!run.out.msg || !suite.msg || page == MAP_FAILED) {
		r = -ENOMEM;
		goto out;
	}
	run.where = page;

	for (size_t i = 0; i < ARRAY_SIZE(bench_table) && r == 0; i++) {
		const struct bench_ops *ops = bench_table[i];

		if (!bench_selected(ops, p->profile, only))
			continue;
		if (bench_interrupted()) {
			r = -EINTR;
			break;
		}
		run.allowance_s = allowance_of(p, only, i, started);
		run.deadline = bench_now() + run.allowance_s;
		r = bench_run_isolated(&run, ops, &suite);
		if (r < 0 && r != -EINTR)
			snprintf(err, errlen, "benchmark %s: %s", ops->name,
				 strerror(-r));
	}
	if (r == 0 && bench_interrupted())
		r = -EINTR;
	if (r < 0)
		goto out;

	if (p->profile) {
		suite.msg->profile = strdup(p->profile);
		if (!suite.msg->profile) {
			r = -ENOMEM;
			goto out;
		}
	}
	r = cost_total(suite.msg, p->max_seconds);
	if (r < 0)
		goto out;
	suite.msg->has_seed = 1;
	suite.msg->seed = p->seed;
	/* only an unknown profile has no method: none then, as before */
	r = p->profile ? bench_method_new(p, only, &suite.msg->method) : -EINVAL;
	if (r == -ENOMEM)
		goto out;
	r = 0;
	*ret = TAKE_PTR(suite.msg);
out:
	if (r == -ENOMEM && !err[0])
		snprintf(err, errlen, "out of memory");
	if (page != MAP_FAILED)
		munmap(page, sizeof(struct bench_where));
	bench_run_free(suite.msg);
	bench_run_free(run.out.msg);
	if (run.pctx.root_fd >= 0)
		close(run.pctx.root_fd);
	return r;
}
