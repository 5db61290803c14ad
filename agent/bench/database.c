/* SPDX-License-Identifier: MIT */
/*
 * database: PostgreSQL's tail latency under each THP mode (article 004).
 * A throwaway server (pgrun.c) holds a pgbench database many times the
 * last-level cache; pgbench runs select-only transactions at a fixed rate
 * under THP enabled = never, madvise and always in turn (interleaved,
 * rotated each repeat), and each window's per-transaction log gives p50,
 * p99 and p99.9 latency. Opt-in (--with-database) and root only: it
 * changes the host's THP mode, kept in the spool first so that it is
 * restored on every exit path (teardown, the driver's bench_restore_arm,
 * or database_recover() at the next start).
 */
#include "database.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_modules.h"
#include "cleanup.h"
#include "clock.h"
#include "fdio.h"
#include "file.h"
#include "kfiles.h"
#include "pgrun.h"
#include "stats.h"

#define THP_ENABLED KFILE_THP_DIR "/enabled"
#define DB_CLIENTS "4" /* as the article's pgbench -c 4 -j 2 */
#define DB_THREADS "2"
#define DB_WARMUP_S "2"
#define DB_MODES 3
#define DB_BYTES_PER_SCALE (32ULL << 20) /* tables, indexes and WAL */
#define DB_MEMORY (512ULL << 20) /* shared_buffers, backends, pgbench */

/* ---- the THP mode kept in the spool ---- */

static bool thp_mode_valid(const char *m)
{
	return !strcmp(m, "never") || !strcmp(m, "madvise") ||
	       !strcmp(m, "always");
}

/* fsyncs dir, so an entry made or removed in it is durable. */
static void sync_parent(const char *dir)
{
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0)
		fsync(fd);
}

/*
 * Opens and flocks spool_dir/DATABASE_THP_RESTORE (made when missing and
 * create).
 * The fd, -EBUSY when a live run holds it, or -errno. A file that was
 * unlinked while we waited is opened again.
 */
static int keep_open(const char *spool_dir, bool create, char *path,
		     size_t len)
{
	snprintf(path, len, "%s/" DATABASE_THP_RESTORE, spool_dir);
	for (int tries = 0; tries < 3; tries++) {
		int fd = open(path,
			      O_RDWR | O_NOFOLLOW | O_CLOEXEC |
				      (create ? O_CREAT : 0),
			      0600),
		    r;
		struct stat sb;

		if (fd < 0)
			return -errno;
		if (flock(fd, LOCK_EX | LOCK_NB) < 0 || fstat(fd, &sb) < 0) {
			r = errno == EWOULDBLOCK ? -EBUSY : -errno;
			close(fd);
			return r;
		}
		if (sb.st_nlink > 0)
			return fd;
		close(fd);
	}
	return -EBUSY;
}

/*
 * What the kept file says: the mode before the run, and the modes it may
 * have left: the one before its last change and the one that change
 * wrote (the file is written before each change, so either may be set
 * when the run dies). One line, fixed width: "madvise never   always \n".
 */
struct kept {
	char before[16], last[16], next[16];
};

#define KEPT_LINE 24

/* Reads fd into k; false when it holds no such line. */
static bool keep_read(int fd, struct kept *k)
{
	_cleanup_free_ char *text = NULL;
	ssize_t n;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return false;
	n = read_full_fd(fd, 64, &text);
	if (n <= 0 ||
	    sscanf(text, "%15s %15s %15s", k->before, k->last, k->next) != 3)
		return false;
	return thp_mode_valid(k->before) && thp_mode_valid(k->last) &&
	       thp_mode_valid(k->next);
}

/* Writes the line, before a change from last to next; with sync, durably.
 * 0 or -errno. */
static int keep_write(int fd, const char *before, const char *last,
		      const char *next, bool sync)
{
	char line[KEPT_LINE + 1];

	snprintf(line, sizeof(line), "%-7s %-7s %-7s\n", before, last, next);
	if (pwrite(fd, line, KEPT_LINE, 0) != KEPT_LINE)
		return errno ? -errno : -EIO;
	if (sync && fsync(fd) < 0)
		return -errno;
	return 0;
}

/* Whether the mode is still one the run that kept k left: else the
 * driver or someone else has set it since (or the host rebooted), and
 * writing k's mode back would undo that. */
static bool keep_applies(const struct kept *k, const char *current)
{
	return !strcmp(current, k->last) || !strcmp(current, k->next);
}

/* Writes mode into THP's enabled file below root (NULL: "/"). 0 or
 * -errno. */
static int thp_write_root(const char *root, const char *mode)
{
	_cleanup_close_ int fd = -1;
	char file[4096];

	snprintf(file, sizeof(file), "%s%s",
		 root && strcmp(root, "/") ? root : "", THP_ENABLED);
	fd = open(file, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return fd_write_all(fd, mode, strlen(mode));
}

/* The [selected] word of text ("never" of "always [never]") into buf;
 * buf unchanged when there is none. */
static void bracket_word(const char *text, char *buf, size_t len)
{
	const char *a = strchr(text, '['), *b = a ? strchr(a, ']') : NULL;

	if (b)
		snprintf(buf, len, "%.*s", (int)(b - a - 1), a + 1);
}

/* The [selected] mode of THP's enabled file below root into buf; "" when
 * unreadable. */
static void thp_read_root(const char *root, char *buf, size_t len)
{
	_cleanup_free_ char *text = NULL;
	char file[4096];

	buf[0] = '\0';
	snprintf(file, sizeof(file), "%s%s",
		 root && strcmp(root, "/") ? root : "", THP_ENABLED);
	if (read_full_file(file, 4096, &text) >= 0)
		bracket_word(text, buf, len);
}

int database_recover(const char *root, const char *spool_dir,
		     const char *work_dir, char *what, size_t whatlen)
{
	_cleanup_close_ int fd = -1;
	char path[4096], current[16];
	struct kept k;
	int done = 0, r;

	what[0] = '\0';
	/* none kept, or a live run's (-EBUSY): nothing to restore */
	if (spool_dir)
		fd = keep_open(spool_dir, false, path, sizeof(path));
	if (fd >= 0 && keep_read(fd, &k)) {
		thp_read_root(root, current, sizeof(current));
		if (!strcmp(current, k.before)) {
			/* written back already (the driver): nothing to do */
		} else if (!keep_applies(&k, current)) {
			snprintf(what, whatlen,
				 "THP enabled left '%s': a run that died kept '%s' in %s, but has not set the mode since",
				 current, k.before, path);
			done++;
		} else if ((r = thp_write_root(root, k.before)) < 0) {
			snprintf(what, whatlen,
				 "cannot restore THP enabled to '%s' from %s: %s",
				 k.before, path, strerror(-r));
			return r; /* kept for the next start */
		} else {
			snprintf(what, whatlen,
				 "THP enabled restored to '%s' (a run that died left '%s' and %s)",
				 k.before, current, path);
			done++;
		}
	}
	if (fd >= 0) {
		unlink(path);
		sync_parent(spool_dir);
	}
	r = work_dir ? pgrun_sweep(work_dir) : 0;
	if (r > 0) {
		size_t l = strlen(what);

		snprintf(what + l, whatlen - l,
			 "%sremoved %d PostgreSQL director%s a run that died left in %s",
			 l ? "; " : "", r, r == 1 ? "y" : "ies", work_dir);
		done += r;
	}
	return done;
}

/* ---- the benchmark ---- */

static const char *const modes[DB_MODES] = { "never", "madvise", "always" };

struct db_variant {
	const char *mode;
	struct bench_result *res;
};

struct db_state {
	struct db_variant v[DB_MODES];
	const struct bench_params *p;
	struct pgrun pg;
	char original[16]; /* the THP mode before; "" once restored */
	char current[16]; /* the THP mode now */
	int keep_fd; /* spool_dir/thp-restore, flocked; -1: none */
	char keep_path[4096];
	struct pgbench_lat lat;
	char rate[24], seconds[24];
	char err[512];
};

/* The last-level cache's size from cpu0's cache directories (sizes as
 * "32768K"); else, as membw does, what glibc reads from CPUID
 * (sysconf(_SC_LEVEL3_CACHE_SIZE), then L2: a guest without cache
 * directories, as Firecracker's); 0 when neither tells. */
static uint64_t llc_bytes(struct bench_run *run)
{
	uint64_t best = 0;
	int64_t best_level = 0;

	for (int i = 0; i < 16; i++) {
		_cleanup_free_ char *text = NULL;
		char path[128];
		int64_t level;
		char *end;
		unsigned long long v;

		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
		if (kfile_read_i64(run, path, &level) < 0)
			continue;
		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		if (bench_read_file(run, path, &text) < 0)
			continue;
		v = strtoull(text, &end, 10);
		if (*end == 'K')
			v <<= 10;
		else if (*end == 'M')
			v <<= 20;
		if (level >= best_level && v > 0) {
			best_level = level;
			best = v;
		}
	}
	if (!best) {
		long sc = sysconf(_SC_LEVEL3_CACHE_SIZE);

		if (sc <= 0)
			sc = sysconf(_SC_LEVEL2_CACHE_SIZE);
		best = sc > 0 ? (uint64_t)sc : 0;
	}
	return best;
}

/* The [selected] word of a sysfs mode file ("never"), or "absent". */
static void sysfs_selected(struct bench_run *run, const char *path,
			   char *buf, size_t len)
{
	_cleanup_free_ char *text = NULL;

	snprintf(buf, len, "absent");
	if (bench_read_file(run, path, &text) >= 0)
		bracket_word(text, buf, len);
}

static void skip_all(struct db_state *st, const char *why)
{
	for (size_t i = 0; i < DB_MODES; i++)
		if (!bench_result_skipped(st->v[i].res))
			bench_result_skip(st->v[i].res, "%s", why);
}

/*
 * Keeps the THP mode before any change in the spool, durably, and arms
 * the driver to write it back should this process die. 0, or -errno with
 * why in st->err (-EBUSY: another run holds it).
 */
static int keep_mode(struct bench_run *run, struct db_state *st,
		     const char *mode)
{
	char before[16];
	struct kept k;
	int r;

	if (mkdir(st->p->spool_dir, 0700) < 0 && errno != EEXIST) {
		r = -errno;
		goto fail;
	}
	r = keep_open(st->p->spool_dir, true, st->keep_path,
		      sizeof(st->keep_path));
	if (r < 0)
		goto fail;
	st->keep_fd = r;
	/* a dead run's file, the mode still its: the mode from before it */
	if (keep_read(st->keep_fd, &k) && keep_applies(&k, mode))
		snprintf(before, sizeof(before), "%s", k.before);
	else
		snprintf(before, sizeof(before), "%s", mode);
	if (ftruncate(st->keep_fd, 0) < 0) {
		r = -errno;
		goto fail;
	}
	r = keep_write(st->keep_fd, before, mode, mode, true);
	if (r < 0)
		goto fail;
	sync_parent(st->p->spool_dir);
	r = bench_restore_arm(run, THP_ENABLED, before);
	if (r < 0)
		goto fail;
	snprintf(st->original, sizeof(st->original), "%s", before);
	snprintf(st->current, sizeof(st->current), "%s", mode);
	return 0;
fail:
	if (r == -EBUSY)
		snprintf(st->err, sizeof(st->err),
			 "another run is changing THP modes (%s is locked)",
			 st->keep_path);
	else
		snprintf(st->err, sizeof(st->err),
			 "cannot keep the THP mode in %s: %s",
			 st->p->spool_dir, strerror(-r));
	return r;
}

/* Writes the kept mode back; the file goes once it is restored. */
static void restore_mode(struct bench_run *run, struct db_state *st)
{
	if (st->original[0] &&
	    bench_write_file(run, THP_ENABLED, st->original) == 0) {
		bench_restore_done(run, THP_ENABLED);
		st->original[0] = '\0';
		unlink(st->keep_path);
		sync_parent(st->p->spool_dir);
	}
	if (st->keep_fd >= 0)
		close(st->keep_fd);
	st->keep_fd = -1;
}

/* pgbench against the server: argv's tail after "pgbench". */
static int run_pgbench(struct db_state *st, const char *out_name,
		       const char *const *args, size_t nargs)
{
	const char *argv[32] = { "pgbench" };
	size_t k = 1;

	for (size_t i = 0; i < nargs; i++)
		argv[k++] = args[i];
	argv[k++] = "-h";
	argv[k++] = st->pg.dir;
	argv[k++] = "-p";
	argv[k++] = PGRUN_PORT;
	argv[k++] = "-U";
	argv[k++] = PGRUN_ROLE;
	argv[k++] = "postgres";
	argv[k] = NULL;
	return pgrun_exec(&st->pg, argv, out_name, st->err, sizeof(st->err));
}

/* The server, its database initialised and warmed up. 0 or -errno. */
static int db_prepare(struct db_state *st)
{
	const struct bench_params *p = st->p;
	char scale[24];
	const char *init[] = { "-i", "-q", "-s", scale };
	const char *warm[] = { "-S", "-n", "-c", DB_CLIENTS, "-j", DB_THREADS,
			       "-T", DB_WARMUP_S };
	double t0;
	uint64_t bytes;
	int r;

	r = pgrun_start(&st->pg, st->err, sizeof(st->err));
	if (r < 0)
		return r;
	snprintf(scale, sizeof(scale), "%lld", p->db_scale);
	t0 = mono_s();
	r = run_pgbench(st, "pgbench-init.log", init, 4);
	if (r < 0)
		return r;
	t0 = mono_s() - t0;
	bytes = pgrun_data_bytes(&st->pg);
	for (size_t i = 0; i < DB_MODES; i++) {
		bench_param_i64(st->v[i].res, "init_ms", (int64_t)(t0 * 1000));
		bench_param_i64(st->v[i].res, "db_bytes", (int64_t)bytes);
	}
	return run_pgbench(st, "pgbench-warmup.log", warm, 8);
}

static int db_setup_steps(struct bench_run *run, const struct bench_params *p,
			  void **state)
{
	struct db_state *st = calloc(1, sizeof(*st));
	char why[512], shmem[32];
	const char *missing, *user;
	struct thp_mode mode;
	uint64_t llc;
	uid_t uid = 0;
	gid_t gid = 0;
	int r;

	if (!st)
		return -ENOMEM;
	*state = st;
	st->p = p;
	st->keep_fd = -1;
	pgrun_init(&st->pg);
	thp_mode_read(run, &mode);
	sysfs_selected(run, KFILE_THP_DIR "/shmem_enabled", shmem,
		       sizeof(shmem));
	llc = llc_bytes(run);
	user = pgrun_user(&uid, &gid);
	for (size_t i = 0; i < DB_MODES; i++) {
		struct db_variant *v = &st->v[i];
		char name[16];

		v->mode = modes[i];
		snprintf(name, sizeof(name), "thp_%s", modes[i]);
		v->res = bench_result_new(run, "database", name);
		if (!v->res)
			return -ENOMEM;
		bench_param_str(v->res, "thp_mode", v->mode);
		bench_param_str(v->res, "workload",
				"pgbench -S (select-only), -c " DB_CLIENTS
				" -j " DB_THREADS ", --rate");
		bench_param_i64(v->res, "db_scale", p->db_scale);
		bench_param_i64(v->res, "db_rate", p->db_rate);
		bench_param_i64(v->res, "db_seconds", p->db_seconds);
		bench_param_i64(v->res, "llc_bytes", (int64_t)llc);
		bench_param_str(v->res, "shared_buffers", "128MB");
		bench_param_str(v->res, "shmem_enabled", shmem);
		bench_param_str(v->res, "db_user", user ? user : "none");
		thp_mode_param(v->res, &mode);
	}
	missing = pgrun_missing(p->pg_bindir);
	if (!p->with_database)
		skip_all(st, "not asked: --with-database");
	else if (geteuid() != 0)
		skip_all(st, "needs root (it changes the THP mode)");
	else if (!thp_mode_valid(mode.enabled))
		skip_all(st, strcmp(mode.enabled, "absent") ?
				     "THP enabled is not never/madvise/always" :
				     "no THP in this kernel (enabled: absent)");
	else if (missing) {
		snprintf(why, sizeof(why), "%s not found in %s", missing,
			 p->pg_bindir ? p->pg_bindir : PGRUN_BINDIR);
		skip_all(st, why);
	} else if (!user)
		skip_all(st, "no user fleetbench or nobody to run PostgreSQL as");
	else if (!p->spool_dir || !p->dir)
		skip_all(st, "no spool directory to keep the THP mode in");
	if (bench_result_skipped(st->v[0].res))
		return 0;
	if (bench_check_space(p->dir, (uint64_t)p->db_scale * DB_BYTES_PER_SCALE,
			      why, sizeof(why)) < 0 ||
	    bench_check_memory(run, DB_MEMORY, why, sizeof(why)) < 0) {
		skip_all(st, why);
		return 0;
	}

	/* the mode written as it is: a read-only sysfs says so here */
	r = bench_write_file(run, THP_ENABLED, mode.enabled);
	if (r < 0) {
		snprintf(why, sizeof(why), "cannot write THP enabled: %s",
			 kfile_errname(r));
		skip_all(st, why);
		return 0;
	}
	pgrun_sweep(p->dir);
	r = keep_mode(run, st, mode.enabled);
	if (r == -EBUSY || r == -EACCES || r == -EROFS || r == -ENOENT) {
		skip_all(st, st->err);
		return 0;
	}
	if (r < 0)
		return r;
	r = pgrun_create(&st->pg, p->dir, p->pg_bindir, uid, gid, st->err,
			 sizeof(st->err));
	if (r == -EACCES || r == -ENAMETOOLONG) {
		skip_all(st, st->err);
		return 0;
	}
	if (r < 0)
		return r;
	snprintf(st->rate, sizeof(st->rate), "%lld", p->db_rate);
	snprintf(st->seconds, sizeof(st->seconds), "%lld", p->db_seconds);
	return db_prepare(st);
}

/* Says what failed: st->err goes into the benchmark's failure. */
static int db_failed(struct bench_run *run, struct db_state *st, int r)
{
	if (r < 0 && r != -EINTR && st && st->err[0])
		bench_fail_text(run, "%s", st->err);
	return r;
}

static int db_setup(struct bench_run *run, const struct bench_params *p,
		    void **state)
{
	int r = db_setup_steps(run, p, state);

	return db_failed(run, *state, r);
}

/* Reads and removes the logs whose names start with prefix ".". 0 or
 * -errno. */
static int collect_logs(struct db_state *st, const char *prefix)
{
	int dfd = pgrun_dirfd(&st->pg);
	_cleanup_closedir_ DIR *d = NULL;
	size_t plen = strlen(prefix);
	struct dirent *de;
	int fd = dup(dfd), r = 0;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	rewinddir(d);
	st->lat.n = 0;
	st->lat.failed = 0;
	while ((de = readdir(d))) {
		_cleanup_free_ char *text = NULL;

		if (strncmp(de->d_name, prefix, plen) ||
		    de->d_name[plen] != '.')
			continue;
		if (r == 0) {
			ssize_t n = read_full_fileat(dfd, de->d_name,
						     1ULL << 30, &text);

			r = n < 0 ? (int)n : 0;
		}
		if (r == 0)
			r = pgbench_log_parse(text, &st->lat);
		unlinkat(dfd, de->d_name, 0);
	}
	return r;
}

/* One window: the mode written, pgbench at the rate, its figures. */
static int db_measure(struct bench_run *run, struct db_state *st,
		      struct db_variant *v, unsigned int repeat)
{
	int dfd = pgrun_dirfd(&st->pg);
	char prefix[64], logopt[PATH_MAX + 32], out[80];
	const char *args[] = { "-S", "-n", "-c", DB_CLIENTS, "-j", DB_THREADS,
			       "-R", st->rate, "-T", st->seconds, "-l", logopt };
	_cleanup_free_ char *text = NULL;
	struct vmstat a, b;
	double tps, *ms;
	size_t n;
	int r;

	snprintf(prefix, sizeof(prefix), "lat-%u-%s", repeat, v->mode);
	snprintf(logopt, sizeof(logopt), "--log-prefix=%s/%s", st->pg.dir,
		 prefix);
	snprintf(out, sizeof(out), "%s.out", prefix);
	/* the spool says what it may leave first (no fsync: a crash of the
	 * host resets the mode anyway) */
	r = keep_write(st->keep_fd, st->original, st->current, v->mode, false);
	if (r == 0)
		r = bench_write_file(run, THP_ENABLED, v->mode);
	if (r < 0)
		return r;
	snprintf(st->current, sizeof(st->current), "%s", v->mode);
	bench_window_begin(v->res);
	vmstat_read(run, &a);
	r = run_pgbench(st, out, args, sizeof(args) / sizeof(args[0]));
	vmstat_read(run, &b);
	bench_window_end(v->res);
	if (r < 0)
		return r;
	r = (int)read_full_fileat(dfd, out, 1 << 20, &text);
	unlinkat(dfd, out, 0);
	if (r < 0)
		return r;
	r = pgbench_tps(text, &tps);
	if (r == 0)
		r = collect_logs(st, prefix);
	if (r < 0)
		return r;
	ms = st->lat.ms;
	n = st->lat.n;
	if (!n)
		return -ENODATA;
	bench_sample(v->res, "tps", "tx/s", tps);
	bench_sample(v->res, "latency_p50_ms", "ms",
		     stats_quantile(ms, n, 0.50));
	bench_sample(v->res, "latency_p99_ms", "ms",
		     stats_quantile(ms, n, 0.99));
	bench_sample(v->res, "latency_p999_ms", "ms",
		     stats_quantile(ms, n, 0.999));
	bench_sample(v->res, "transactions", "count", (double)n);
	bench_sample(v->res, "failed_transactions", "count",
		     (double)st->lat.failed);
	vmstat_sample(v->res, &a, &b);
	return 0;
}

static int db_run(struct bench_run *run, void *state, unsigned int repeat)
{
	struct db_state *st = state;

	/* rotated: each mode comes first, second, third in turn */
	for (unsigned int k = 0; k < DB_MODES; k++) {
		struct db_variant *v = &st->v[(repeat + k) % DB_MODES];
		int r;

		if (bench_result_skipped(v->res))
			continue;
		if (bench_interrupted())
			return -EINTR;
		st->err[0] = '\0';
		r = db_measure(run, st, v, repeat);
		if (r < 0)
			return db_failed(run, st, r);
	}
	return 0;
}

static void db_compare(struct bench_run *run, void *state)
{
	struct db_state *st = state;

	/* above 1: the p99 is worse under always */
	bench_compare(run, "db_p99_always_vs_never", st->v[2].res,
		      st->v[0].res, "latency_p99_ms");
}

static void db_teardown(struct bench_run *run, void *state)
{
	struct db_state *st = state;

	if (!st)
		return;
	restore_mode(run, st);
	pgrun_release(&st->pg);
	free(st->lat.ms);
	free(st);
}

/* After the benchmark's process died without its teardown: what
 * database_recover() does at the next start, at once (the driver has
 * written the THP mode back already; the directory and the kept mode
 * go). */
static int db_recover(const struct bench_params *p, char *what, size_t len)
{
	return database_recover(p->root, p->spool_dir, p->dir, what, len);
}

static void database_needs(const struct bench_params *p, uint64_t *memory,
			   uint64_t *disk)
{
	*memory = DB_MEMORY;
	*disk = (uint64_t)p->db_scale * DB_BYTES_PER_SCALE;
}

const struct bench_ops bench_database_ops = {
	.name = "database",
	.summary = "PostgreSQL select-only latency at a fixed rate under THP never, madvise, always",
	.full_only = true,
	.weight = { 25, 25, 200 },
	.needs = database_needs,
	.setup = db_setup,
	.run = db_run,
	.teardown = db_teardown,
	.compare = db_compare,
	.recover = db_recover,
};
