/* SPDX-License-Identifier: MIT */
/*
 * A throwaway PostgreSQL for the database benchmark: a new directory below
 * the work directory (PGRUN_PREFIX + 6 random characters), initdb into it,
 * the server listening on a unix socket in that directory only
 * (listen_addresses = ''), programs such as pgbench run against it, all as
 * an unprivileged user, and everything removed at the end.
 *
 * Nothing is left however the benchmark ends: every process started here
 * is in a process group of its own (a terminal's Ctrl-C reaches only the
 * agent, which stops them in order) and dies with SIGKILL when the
 * benchmark's process dies (PR_SET_PDEATHSIG, set after the switch of user,
 * which clears it); the directory is flocked while in use, and one whose
 * lock is free is a dead run's, removed by pgrun_sweep() at the next start.
 *
 * Like the rest of bench/, it does not log: errors are -errno with what
 * happened in err.
 */
#ifndef FLEETBENCH_PGRUN_H
#define FLEETBENCH_PGRUN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PGRUN_PREFIX "fleetbench-db-"
#define PGRUN_BINDIR "/usr/lib/postgresql/15/bin"
/* The database superuser initdb creates (trust, on the private socket). */
#define PGRUN_ROLE "fleetbench"
#define PGRUN_PORT "5432"
/* A start or a program that takes longer than this has hung. */
#define PGRUN_START_TIMEOUT_S 120

struct pgrun {
	char dir[PATH_MAX]; /* the directory; "" when none was made */
	char bindir[PATH_MAX];
	int lock_fd; /* the directory itself, flocked; -1 when none */
	uid_t uid;
	gid_t gid;
	pid_t postmaster; /* 0 when not running */
};

/* An empty pgrun (no directory, no server), safe to pgrun_release(). */
void pgrun_init(struct pgrun *pg);

/*
 * The first of initdb, postgres and pgbench that is not an executable in
 * bindir (NULL: PGRUN_BINDIR), or NULL when all are.
 */
const char *pgrun_missing(const char *bindir);

/*
 * The unprivileged user the server runs as: "fleetbench" when that system
 * user exists, else "nobody". Its name, or NULL when neither exists.
 */
const char *pgrun_user(uid_t *ret_uid, gid_t *ret_gid);

/*
 * Makes the directory below workdir (mkdtemp, flocked, owned by uid:gid,
 * mode 0700) and checks that the user can reach it. 0 or -errno with why in
 * err: -EACCES when a parent of workdir is not searchable by the user,
 * -ENAMETOOLONG when the socket's path would not fit.
 */
int pgrun_create(struct pgrun *pg, const char *workdir, const char *bindir,
		 uid_t uid, gid_t gid, char *err, size_t errlen);

/*
 * initdb, then the server, waiting until it accepts connections. 0, -EINTR
 * when bench_interrupted(), or -errno with why (the last line of the
 * program's log) in err.
 */
int pgrun_start(struct pgrun *pg, char *err, size_t errlen);

/*
 * Runs bindir/argv[0] as the user in the directory, its output in the file
 * out_name there (appended), and waits for it. 0 when it exited 0; -EINTR
 * (it is killed) when bench_interrupted(); else -EIO with its status and
 * the last line of its output in err.
 */
int pgrun_exec(struct pgrun *pg, const char *const argv[],
	       const char *out_name, char *err, size_t errlen);

/* The bytes the database's files take (data/base, on disk); 0 when
 * unknown. */
uint64_t pgrun_data_bytes(struct pgrun *pg);

/* The directory's file descriptor (for openat), -1 when none. */
int pgrun_dirfd(const struct pgrun *pg);

/*
 * Stops the server (immediate shutdown, SIGKILL after 10 s), removes the
 * directory and releases the lock. Accepts what a failed create or start
 * left, and a pgrun never created.
 */
void pgrun_release(struct pgrun *pg);

/*
 * Removes what dead runs left below workdir: each PGRUN_PREFIX directory
 * whose lock is free, killing a server still running in it first. The
 * number removed, or -errno when workdir cannot be read (-ENOENT: none).
 */
int pgrun_sweep(const char *workdir);

#endif
