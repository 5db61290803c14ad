/* SPDX-License-Identifier: MIT */
/*
 * Each benchmark's own process: the child that runs it, the parent that
 * waits for it (forwarding SIGINT/SIGTERM, killing it past its time) and
 * takes back its results, or says where it died and restores what it
 * changed.
 */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array.h"
#include "bench_internal.h"
#include "cleanup.h"
#include "fault.h"
#include "fdio.h"
#include "stats.h"
#include "sys/sys.h"

/* A child's exit statuses besides 0 (results written). */
enum {
	CHILD_EXIT_ERROR = 90, /* a step returned -errno: where->error */
	CHILD_EXIT_STOPPED = 91, /* SIGINT or SIGTERM: where->signal */
};

/* ---- signals ---- */

/* The signal that asked to stop (SIGINT, SIGTERM), 0 while none did. */
static volatile sig_atomic_t bench_stop;

static void bench_on_signal(int sig)
{
	bench_stop = sig;
}

void bench_install_signals(void)
{
	struct sigaction sa = { .sa_handler = bench_on_signal };

	/* No SA_RESTART: a sleeping or blocked benchmark wakes with EINTR. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

bool bench_interrupted(void)
{
	return bench_stop != 0;
}

/* The running benchmark's deadline (bench_now()), in its child; 0: none. */
static double deadline_at;

bool bench_overdue(void)
{
	return deadline_at > 0 && bench_now() >= deadline_at;
}

/* ---- restoring what a benchmark changed ---- */

int bench_restore_arm(struct bench_run *run, const char *path,
		      const char *previous)
{
	struct bench_where *w = run->where;

	if (!w)
		return 0; /* not in a child: teardown is the only restore */
	if (strlen(path) >= sizeof(w->restore[0].path) ||
	    strlen(previous) >= sizeof(w->restore[0].value))
		return -ENAMETOOLONG;
	for (size_t i = 0; i < WHERE_RESTORE; i++) {
		if (w->restore[i].armed)
			continue;
		snprintf(w->restore[i].path, sizeof(w->restore[i].path), "%s",
			 path);
		snprintf(w->restore[i].value, sizeof(w->restore[i].value),
			 "%s", previous);
		__atomic_store_n(&w->restore[i].armed, 1, __ATOMIC_RELEASE);
		return 0;
	}
	return -ENOSPC;
}

void bench_restore_done(struct bench_run *run, const char *path)
{
	struct bench_where *w = run->where;

	for (size_t i = 0; w && i < WHERE_RESTORE; i++)
		if (w->restore[i].armed && !strcmp(w->restore[i].path, path))
			__atomic_store_n(&w->restore[i].armed, 0,
					 __ATOMIC_RELEASE);
}

void bench_fail_text(struct bench_run *run, const char *fmt, ...)
{
	struct bench_where *w = run->where;
	va_list ap;

	if (!w)
		return;
	va_start(ap, fmt);
	vsnprintf(w->error_text, sizeof(w->error_text), fmt, ap);
	va_end(ap);
}

/* ---- the child ---- */

/* Writes the child's benchmarks and comparisons into fd, packed. */
static int child_write(struct bench_run *run, int fd)
{
	size_t len = fleetbench__bench_run__get_packed_size(run->out.msg);
	_cleanup_free_ uint8_t *buf = malloc(len + 1);

	if (!buf)
		return -ENOMEM;
	/* NaN and infinities travel as such: the bounds pass fails them */
	fleetbench__bench_run__pack(run->out.msg, buf);
	return fd_write_all(fd, buf, len);
}

static void where_phase(struct bench_where *w, int phase)
{
	w->variant = -1;
	w->phase = phase;
}

/* The target a comparison's interval is held to, relative (0.05). */
static double target_of(const struct bench_params *p)
{
	return (double)p->target_pct / 100.0;
}

/* Whether c's interval is within target of its ratio. */
static bool comparison_tight(const Fleetbench__Comparison *c, double target)
{
	double h = stats_relative_half_width(c->ratio, c->ci_low, c->ci_high);

	return c->has_ratio && c->has_ci_low && c->has_ci_high &&
	       isfinite(h) && h <= target;
}

/*
 * Whether every comparison ops makes from the samples so far is within the
 * target: computed as the report's are (ops->compare), then dropped. A
 * comparison without a ratio (a side skipped) has no interval to narrow:
 * it does not count. 1 tight, 0 not, -1 when no comparison has a ratio
 * (nothing to narrow: more rounds would buy nothing).
 */
static int rounds_tight(struct bench_run *run, const struct bench_ops *ops,
			void *state)
{
	Fleetbench__BenchRun *out = run->out.msg;
	size_t first = out->n_comparisons, counted = 0;
	double target = target_of(run->params);
	bool tight = true;

	ops->compare(run, state);
	for (size_t i = first; i < out->n_comparisons; i++) {
		Fleetbench__Comparison *c = out->comparisons[i];

		if (c->has_ratio) {
			counted++;
			tight &= comparison_tight(c, target);
		}
		fleetbench__comparison__free_unpacked(c, NULL);
	}
	out->n_comparisons = first;
	return counted == 0 ? -1 : tight;
}

/*
 * What ends the rounds of a benchmark with an allowance: its deadline, less
 * 5% of the allowance for its compare and teardown. The next round is
 * assumed to take as long as the mean so far.
 */
static bool rounds_past_allowance(const struct bench_run *run, double start,
				  long long rounds)
{
	double now = bench_now();

	if (run->allowance_s <= 0 || rounds <= 0)
		return false;
	return now + (now - start) / (double)rounds >
	       run->deadline - 0.05 * run->allowance_s;
}

/* The variants not skipped yet, skipped: no round fitted its allowance. */
static void skip_unmeasured(struct bench_run *run)
{
	for (size_t i = 0; i < run->nresults; i++)
		if (!bench_result_skipped(run->results[i]))
			bench_result_skip(run->results[i],
					  "its allowance of %.1f s of the run's %lld s was spent before its first round",
					  run->allowance_s,
					  run->params->max_seconds);
}

/* The variants measured, told that their rounds stopped at the allowance
 * below the profile's least. */
static void mark_cut(struct bench_run *run, long long rounds)
{
	char text[160];

	snprintf(text, sizeof(text),
		 "%lld of the least %lld: its allowance of %.1f s ran out",
		 rounds, run->params->repeats, run->allowance_s);
	for (size_t i = 0; i < run->nresults; i++)
		if (!bench_result_skipped(run->results[i]))
			bench_param_str(run->results[i], "rounds_cut", text);
}

int bench_rounds(struct bench_run *run, const struct bench_ops *ops,
		 void *state, long long *ret_rounds)
{
	const struct bench_params *p = run->params;
	struct stats_adaptive rule = {
		.min_rounds = p->repeats,
		.max_rounds = p->adaptive && p->max_repeats > p->repeats ?
				      p->max_repeats :
				      p->repeats,
		.budget_s = p->adaptive ? (double)p->budget_s : INFINITY,
	};
	struct bench_where *w = run->where;
	double start = bench_now();
	long long k;
	int r = 0, tight_rounds = 0;
	bool cut = false;

	/* the allowance holds the adaptive rounds too (issue 36) */
	if (run->allowance_s > 0)
		rule.budget_s = fmin(rule.budget_s,
				     run->deadline - 0.05 * run->allowance_s -
					     start);
	if (run->allowance_s > 0 && bench_now() >= run->deadline) {
		skip_unmeasured(run);
		*ret_rounds = 0;
		return 0;
	}
	for (k = 0; r == 0; k++) {
		bool more = k < rule.min_rounds;

		if (more && rounds_past_allowance(run, start, k)) {
			more = false;
			cut = true;
		}
		if (!more && !cut && k < rule.max_rounds && ops->compare) {
			int t = rounds_tight(run, ops, state);

			tight_rounds = t > 0 ? tight_rounds + 1 : 0;
			more = t >= 0 &&
			       stats_adaptive_next(&rule, k, bench_now() - start,
						   tight_rounds) ==
				       STATS_ADAPTIVE_MORE;
		}
		if (!more)
			break;
		where_phase(w, PHASE_RUN);
		w->repeat = k;
		r = bench_interrupted() ? -EINTR :
					  ops->run(run, state, (unsigned int)k);
	}
	*ret_rounds = r == 0 ? k : k - 1;
	w->rounds = *ret_rounds;
	if (r == 0 && cut)
		mark_cut(run, k);
	return r;
}

void bench_comparisons_mark(Fleetbench__BenchRun *out, size_t first,
			    const struct bench_params *p, long long rounds)
{
	double target = target_of(p);

	for (size_t i = first; i < out->n_comparisons; i++) {
		Fleetbench__Comparison *c = out->comparisons[i];

		c->has_target_half_width = c->has_rounds = 1;
		c->target_half_width = target;
		c->rounds = rounds;
		if (c->has_ratio) {
			c->has_target_reached = 1;
			c->target_reached = comparison_tight(c, target);
		}
	}
}

/*
 * The child: runs one benchmark as the suite did in-process, then writes
 * its results into out and exits; never returns. It leaves through
 * _exit(): the parent's stdio buffers and atexit handlers are not its own.
 */
static void __attribute__((noreturn))
child_main(struct bench_run *run, const struct bench_ops *ops, pid_t parent,
	   int out)
{
	const struct bench_params *p = run->params;
	struct bench_where *w = run->where;
	char name[32];
	void *state = NULL;
	long long rounds = 0;
	int r;

	run->ops = ops;
	/* "fb-<benchmark>": the kernel keeps 15 characters */
	snprintf(name, sizeof(name), "fb-%s", ops->name);
	prctl(PR_SET_NAME, name, 0, 0, 0);
	/* an agent killed outright: stop as on SIGTERM, tearing down */
	prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
	if (getppid() != parent)
		bench_stop = SIGTERM;
	deadline_at = run->allowance_s > 0 ? run->deadline : 0;
	where_phase(w, PHASE_SETUP);
	snprintf(name, sizeof(name), "bench-setup-%s", ops->name);
	r = fault_point(name);
	if (r == 0)
		r = ops->setup(run, p, &state);
	if (r == 0)
		r = bench_rounds(run, ops, state, &rounds);
	if (r == 0 && ops->compare) {
		size_t first = run->out.msg->n_comparisons;

		where_phase(w, PHASE_COMPARE);
		ops->compare(run, state);
		if (p->adaptive)
			bench_comparisons_mark(run->out.msg, first, p,
					       rounds);
	}
	/* after a failure the page keeps saying where it happened */
	if (r == 0)
		where_phase(w, PHASE_TEARDOWN);
	ops->teardown(run, state);
	if (r == 0 && bench_interrupted())
		r = -EINTR;
	if (r == 0) {
		where_phase(w, PHASE_REPORT);
		r = child_write(run, out);
	}
	if (r == -EINTR) {
		w->signal = bench_stop;
		_exit(CHILD_EXIT_STOPPED);
	}
	if (r < 0) {
		w->error = -r;
		_exit(CHILD_EXIT_ERROR);
	}
	_exit(0);
}

/* ---- the parent ---- */

/* "SIGSEGV" for SIGSEGV; "signal N" for one without a name. */
static void signal_name(int sig, char *buf, size_t len)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else
		snprintf(buf, len, "signal %d", sig);
}

/*
 * Waits for the child: forwards SIGINT/SIGTERM as SIGTERM (SIGKILL after
 * BENCH_STOP_WAIT_S), SIGKILLs it past limit_s (0: none) and says so in
 * *ret_timed_out. Its wait status in *ret_status. 0 or -errno.
 */
static int child_wait(pid_t pid, long long limit_s, int *ret_status,
		      bool *ret_timed_out, struct rusage *ret_usage)
{
	_cleanup_close_ int pidfd = sys_pidfd_open(pid);
	double start = bench_now(), stop_at = 0;
	bool termed = false, killed = false, timed_out = false;
	int status;

	for (;;) {
		pid_t got = wait4(pid, &status, WNOHANG, ret_usage);
		struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
		double now = bench_now();

		if (got == pid)
			break;
		if (got < 0 && errno != EINTR)
			return -errno;
		if (!killed && bench_interrupted()) {
			if (!termed) {
				kill(pid, SIGTERM);
				termed = true;
				stop_at = now + BENCH_STOP_WAIT_S;
			} else if (now >= stop_at) {
				kill(pid, SIGKILL);
				killed = true;
			}
		}
		if (!killed && !termed && limit_s > 0 &&
		    now - start >= (double)limit_s) {
			kill(pid, SIGKILL);
			killed = timed_out = true;
		}
		/*
		 * The pidfd wakes us when the child ends; at most 200 ms
		 * asleep, so a signal that lands just before the poll (or a
		 * kernel without pidfd) costs no more than that.
		 */
		poll(&pfd, pidfd >= 0 ? 1 : 0, 200);
	}
	*ret_status = status;
	*ret_timed_out = timed_out;
	return 0;
}

/*
 * Writes back what the child left armed (bench_restore_arm); a failure is
 * appended to note ("; restoring PATH failed: ...").
 */
static void where_restore(struct bench_run *run, struct bench_where *w,
			  char *note, size_t notelen)
{
	for (size_t i = 0; i < WHERE_RESTORE; i++) {
		size_t len = strlen(note);
		int r;

		if (!__atomic_load_n(&w->restore[i].armed, __ATOMIC_ACQUIRE))
			continue;
		r = bench_write_file(run, w->restore[i].path,
				     w->restore[i].value);
		if (r < 0)
			snprintf(note + len, notelen - len,
				 "; restoring %s to %s failed: %s",
				 w->restore[i].path, w->restore[i].value,
				 strerror(-r));
		w->restore[i].armed = 0;
	}
}

/* " in thp_chase/thp (repeat 1 of 5)", from the page; adaptive repeats
 * say their range: "(repeat 7 of 5 to 20)". */
static void where_text(const struct bench_where *w, const char *benchmark,
		       const struct bench_params *p, char *buf, size_t len)
{
	long long repeats = p->repeats;
	unsigned int n = __atomic_load_n(&w->nvariants, __ATOMIC_ACQUIRE);
	bool in_variant = w->variant >= 0 && (unsigned int)w->variant < n;
	char pos[64];

	switch (w->phase) {
	case PHASE_RUN:
		if (p->adaptive && p->max_repeats > repeats)
			snprintf(pos, sizeof(pos), "repeat %lld of %lld to %lld",
				 w->repeat + 1, repeats, p->max_repeats);
		else
			snprintf(pos, sizeof(pos), "repeat %lld of %lld",
				 w->repeat + 1, repeats);
		break;
	case PHASE_SETUP:
		snprintf(pos, sizeof(pos), "setup");
		break;
	case PHASE_COMPARE:
		snprintf(pos, sizeof(pos), "compare");
		break;
	case PHASE_TEARDOWN:
		snprintf(pos, sizeof(pos), "teardown");
		break;
	case PHASE_REPORT:
		snprintf(pos, sizeof(pos), "writing its results");
		break;
	default:
		snprintf(pos, sizeof(pos), "starting");
		break;
	}
	snprintf(buf, len, " in %s%s%.*s (%s)", benchmark, in_variant ? "/" : "",
		 WHERE_NAME, in_variant ? w->variants[w->variant] : "", pos);
}

/*
 * The results of a benchmark whose child failed: every variant it
 * announced, failed; the one it died in says what happened, the others
 * "benchmark process died: " and the same. None announced: one variant
 * "*". Its comparisons are absent: compare never ran or its results were
 * lost. 0 or -ENOMEM.
 */
static int fail_benchmark(struct bench_out *out,
			  const struct bench_where *w, const char *benchmark,
			  const char *failure)
{
	unsigned int n = __atomic_load_n(&w->nvariants, __ATOMIC_ACQUIRE);
	Fleetbench__Benchmark *b;
	char other[1024];

	snprintf(other, sizeof(other), "benchmark process died: %s", failure);
	if (!n) {
		b = bench_out_append(out, benchmark, "*");
		if (!b || bench_benchmark_fail(b, failure) < 0)
			return -ENOMEM;
	}
	for (unsigned int i = 0; i < n; i++) {
		char variant[WHERE_NAME];

		snprintf(variant, sizeof(variant), "%.*s", WHERE_NAME - 1,
			 w->variants[i]);
		b = bench_out_append(out, benchmark, variant);
		if (!b ||
		    bench_benchmark_fail(b, w->variant < 0 ||
						    (unsigned int)w->variant == i ?
					    failure :
					    other) < 0)
			return -ENOMEM;
	}
	return 0;
}

/*
 * Moves the *src_n messages of the array *srcp to the end of *dstp, of
 * capacity *dst_cap. 0, or -ENOMEM with all of them still in src.
 */
static int move_messages(void *dstp, size_t *dst_n, size_t *dst_cap,
			 void *srcp, size_t *src_n)
{
	void ***dst = dstp, ***src = srcp;

	if (!*src_n) /* *src may be NULL then: nothing to copy */
		return 0;
	if (ARRAY_RESERVE(*dst, *dst_cap, *dst_n + *src_n) < 0)
		return -ENOMEM;
	memcpy(*dst + *dst_n, *src, *src_n * sizeof(void *));
	*dst_n += *src_n;
	*src_n = 0;
	return 0;
}

/*
 * The child's packed BenchRun from fd (free with bench_run_free()). 0 or
 * -errno: -EBADMSG when it is not one.
 */
static int child_read(int fd, Fleetbench__BenchRun **ret)
{
	_cleanup_free_ uint8_t *buf = NULL;
	off_t size = lseek(fd, 0, SEEK_END);
	Fleetbench__BenchRun *b;
	ssize_t n;

	if (size < 0)
		return -errno;
	buf = malloc((size_t)size + 1);
	if (!buf)
		return -ENOMEM;
	n = pread(fd, buf, (size_t)size, 0);
	if (n != size)
		return n < 0 ? -errno : -EIO;
	b = fleetbench__bench_run__unpack(NULL, (size_t)size, buf);
	if (!b)
		return -EBADMSG;
	*ret = b;
	return 0;
}

/* ops->recover after a benchmark process that died without its teardown,
 * what it did or could not do added to note ("; ..."). */
static void recover(struct bench_run *run, const struct bench_ops *ops,
		    char *note, size_t notelen)
{
	char what[1024];
	size_t len = strlen(note);
	int r;

	if (!ops->recover)
		return;
	r = ops->recover(run->params, what, sizeof(what));
	if (r != 0 && what[0])
		snprintf(note + len, notelen - len, "; %s", what);
}

/*
 * Appends what the benchmark's process cost (issue 36) to out->msg->costs:
 * its wall time and wait4's rusage of it, which counts its threads and the
 * children it waited for, its allowance, and the rounds it measured when
 * it ended well (measured). 0 or -ENOMEM.
 */
static int cost_add(struct bench_out *out, const struct bench_run *run,
		    const char *name, double wall_s, const struct rusage *u,
		    bool measured)
{
	Fleetbench__Cost *c;

	if (ARRAY_RESERVE(out->msg->costs, out->cap_costs,
			  out->msg->n_costs + 1) < 0)
		return -ENOMEM;
	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	fleetbench__cost__init(c);
	c->benchmark = strdup(name);
	if (!c->benchmark) {
		free(c);
		return -ENOMEM;
	}
	c->wall_s = wall_s > 0 ? wall_s : 0;
	c->cpu_s = (double)u->ru_utime.tv_sec + u->ru_utime.tv_usec / 1e6 +
		   (double)u->ru_stime.tv_sec + u->ru_stime.tv_usec / 1e6;
	c->peak_memory_bytes = (uint64_t)u->ru_maxrss * 1024; /* KiB */
	c->written_bytes = (uint64_t)u->ru_oublock * 512;
	c->has_allowance_s = run->allowance_s > 0;
	c->allowance_s = run->allowance_s;
	c->has_rounds = measured;
	c->rounds = run->where->rounds;
	out->msg->costs[out->msg->n_costs++] = c;
	return 0;
}

int bench_run_isolated(struct bench_run *run, const struct bench_ops *ops,
		       struct bench_out *out)
{
	struct bench_where *w = run->where;
	Fleetbench__BenchRun *got = NULL;
	_cleanup_close_ int out_fd = -1;
	char failure[1024] = "", where[160], note[512] = "";
	bool timed_out = false;
	pid_t pid, self = getpid();
	struct rusage usage = { 0 };
	double started = bench_now();
	int status = 0, r;

	memset(w, 0, sizeof(*w));
	w->variant = -1;
	out_fd = memfd_create("fleetbench-results", MFD_CLOEXEC);
	pid = out_fd < 0 ? -1 : fork();
	if (pid == 0)
		child_main(run, ops, self, out_fd);
	if (pid < 0) {
		snprintf(failure, sizeof(failure),
			 "cannot start the benchmark process: %s",
			 strerror(errno));
		goto failed;
	}
	r = child_wait(pid, run->params->timeout_s, &status, &timed_out,
		       &usage);
	if (r == 0) {
		r = cost_add(out, run, ops->name, bench_now() - started,
			     &usage,
			     WIFEXITED(status) && WEXITSTATUS(status) == 0);
		if (r < 0)
			return r;
	}
	where_restore(run, w, note, sizeof(note));
	if (r == 0 && (timed_out || WIFSIGNALED(status)))
		recover(run, ops, note, sizeof(note));
	if (r < 0)
		return r;
	if (bench_interrupted())
		return -EINTR;
	where_text(w, ops->name, run->params, where, sizeof(where));
	if (timed_out) {
		snprintf(failure, sizeof(failure), "timed out after %lld s%s",
			 run->params->timeout_s, where);
	} else if (WIFSIGNALED(status)) {
		char sig[32];

		signal_name(WTERMSIG(status), sig, sizeof(sig));
		snprintf(failure, sizeof(failure), "%s%s", sig, where);
	} else if (WEXITSTATUS(status) == CHILD_EXIT_ERROR) {
		snprintf(failure, sizeof(failure), "%s%s%.*s%s",
			 strerror(w->error), w->error_text[0] ? ": " : "",
			 (int)sizeof(w->error_text), w->error_text, where);
	} else if (WEXITSTATUS(status) == CHILD_EXIT_STOPPED) {
		char sig[32];

		signal_name(w->signal, sig, sizeof(sig));
		snprintf(failure, sizeof(failure), "stopped by %s%s", sig,
			 where);
	} else if (WEXITSTATUS(status) != 0) {
		snprintf(failure, sizeof(failure), "exit status %d%s",
			 WEXITSTATUS(status), where);
	} else {
		r = child_read(out_fd, &got);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			snprintf(failure, sizeof(failure),
				 "its results are unreadable (%s)%s",
				 strerror(-r), where);
	}
failed:
	if (failure[0]) {
		size_t len = strlen(failure);

		snprintf(failure + len, sizeof(failure) - len, "%s", note);
		return fail_benchmark(out, w, ops->name, failure);
	}
	bench_check_bounds(got);
	r = move_messages(&out->msg->benchmarks, &out->msg->n_benchmarks,
			  &out->cap_benchmarks, &got->benchmarks,
			  &got->n_benchmarks);
	if (r == 0)
		r = move_messages(&out->msg->comparisons,
				  &out->msg->n_comparisons,
				  &out->cap_comparisons, &got->comparisons,
				  &got->n_comparisons);
	bench_run_free(got);
	return r;
}
