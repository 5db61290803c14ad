/* SPDX-License-Identifier: MIT */
/* A throwaway PostgreSQL for the database benchmark (pgrun.h). */
#include "pgrun.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "cleanup.h"
#include "clock.h"
#include "file.h"
#include "sys/sys.h"

#define STOP_WAIT_S 10
#define SOCKET_NAME "/.s.PGSQL." PGRUN_PORT
/* sockaddr_un.sun_path: 108 bytes with the NUL */
#define SUN_PATH_MAX 107

/* The programs run with this environment only: no PGHOST, PGOPTIONS, ...
 * of the agent's reaches them. */
static char *const child_env[] = { "PATH=/usr/bin:/bin", "LC_ALL=C",
				   "TZ=UTC", NULL };

void pgrun_init(struct pgrun *pg)
{
	memset(pg, 0, sizeof(*pg));
	pg->lock_fd = -1;
}

const char *pgrun_missing(const char *bindir)
{
	static const char *const need[] = { "initdb", "postgres", "pgbench" };
	char path[PATH_MAX];

	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s",
			 bindir ? bindir : PGRUN_BINDIR, need[i]);
		if (access(path, X_OK) < 0)
			return need[i];
	}
	return NULL;
}

const char *pgrun_user(uid_t *ret_uid, gid_t *ret_gid)
{
	static const char *const names[] = { "fleetbench", "nobody" };

	for (size_t i = 0; i < 2; i++) {
		struct passwd *pw = getpwnam(names[i]);

		if (pw && pw->pw_uid != 0) {
			*ret_uid = pw->pw_uid;
			*ret_gid = pw->pw_gid;
			return names[i];
		}
	}
	return NULL;
}

int pgrun_dirfd(const struct pgrun *pg)
{
	return pg->lock_fd;
}

/* ---- removing a tree ---- */

/* Removes name below dfd and, for a directory, everything in it; never
 * follows a symbolic link. 0 or -errno (ENOENT counts as done). */
static int remove_at(int dfd, const char *name)
{
	_cleanup_close_ int fd = -1;
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	d = fdopendir(fd);
	if (!d)
		return -errno;
	fd = -1; /* the DIR owns it */
	while ((de = readdir(d))) {
		int q;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		q = remove_at(dirfd(d), de->d_name);
		if (q < 0 && r == 0)
			r = q;
	}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && !r)
		r = -errno;
	return r;
}

/* ---- processes ---- */

/* The last non-empty line of the file name below dfd into buf ("" when
 * none). */
static void last_line(int dfd, const char *name, char *buf, size_t len)
{
	_cleanup_free_ char *text = NULL;
	ssize_t n = read_full_fileat(dfd, name, 16 << 20, &text);
	char *end, *start;

	buf[0] = '\0';
	if (n <= 0)
		return;
	end = text + n;
	while (end > text && (end[-1] == '\n' || end[-1] == ' '))
		end--;
	*end = '\0';
	start = strrchr(text, '\n');
	snprintf(buf, len, "%s", start ? start + 1 : text);
}

/*
 * Starts bindir/argv[0] as the user, in the directory, in a new process
 * group, stdin from /dev/null, stdout and stderr appended to out_name
 * there. Its pid, or -errno.
 */
static pid_t spawn(struct pgrun *pg, const char *const argv[],
		   const char *out_name)
{
	_cleanup_close_ int out = -1, null = -1;
	const char *args[64];
	char path[PATH_MAX];
	pid_t parent = getpid(), pid;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/%s", pg->bindir, argv[0]);
	/* argv[0] the full path: initdb finds postgres beside itself */
	args[n++] = path;
	while (argv[n] && n < 63) {
		args[n] = argv[n];
		n++;
	}
	args[n] = NULL;
	out = openat(pg->lock_fd, out_name,
		     O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
		     0600);
	null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (out < 0 || null < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* only async-signal-safe calls until exec */
		setpgid(0, 0);
		if (dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
			_exit(126);
		if (setgroups(0, NULL) < 0 || setgid(pg->gid) < 0 ||
		    setuid(pg->uid) < 0)
			_exit(126);
		/* after setuid, which clears it: die with the benchmark */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 ||
		    getppid() != parent)
			_exit(126);
		if (chdir(pg->dir) < 0)
			_exit(126);
		execve(path, (char *const *)args, child_env);
		_exit(127);
	}
	setpgid(pid, pid); /* also here: no window where it has none */
	return pid;
}

/*
 * Waits for pid; when bench_interrupted(), or when limit_s (0: none)
 * passes, kills its process group and reaps it. 0 and its status, -EINTR
 * (interrupted), -ETIMEDOUT, or -errno.
 */
static int wait_child(pid_t pid, double limit_s, int *ret_status)
{
	_cleanup_close_ int pidfd = sys_pidfd_open(pid);
	double start = mono_s();
	int status, r = 0;

	for (;;) {
		pid_t got = waitpid(pid, &status, WNOHANG);
		struct pollfd pfd = { .fd = pidfd, .events = POLLIN };

		if (got == pid)
			break;
		if (got < 0 && errno != EINTR)
			return -errno;
		if (!r && bench_interrupted())
			r = -EINTR;
		else if (!r && limit_s > 0 && mono_s() - start > limit_s)
			r = -ETIMEDOUT;
		if (r) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			if (waitpid(pid, &status, 0) < 0 && errno != EINTR)
				return -errno;
			return r;
		}
		poll(&pfd, pidfd >= 0 ? 1 : 0, 100);
	}
	*ret_status = status;
	return 0;
}

/* "exit status 1" or "SIGSEGV" for a wait status. */
static void status_text(int status, char *buf, size_t len)
{
	if (WIFEXITED(status)) {
		snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
	} else {
		const char *abbrev = sigabbrev_np(WTERMSIG(status));

		snprintf(buf, len, "SIG%s", abbrev ? abbrev : "?");
	}
}

int pgrun_exec(struct pgrun *pg, const char *const argv[],
	       const char *out_name, char *err, size_t errlen)
{
	char st[32], line[256];
	int status, r;
	pid_t pid = spawn(pg, argv, out_name);

	if (pid < 0) {
		snprintf(err, errlen, "cannot start %s: %s", argv[0],
			 strerror(-pid));
		return pid;
	}
	r = wait_child(pid, 0, &status);
	if (r < 0)
		return r;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	status_text(status, st, sizeof(st));
	last_line(pg->lock_fd, out_name, line, sizeof(line));
	snprintf(err, errlen, "%s failed (%s): %s", argv[0], st,
		 line[0] ? line : "no output");
	return -EIO;
}

/* ---- the directory and the server ---- */

/* Whether uid:gid can write and search dir: asked of the kernel by a
 * child process that becomes the user. 0 or -errno. */
static int user_can_reach(const char *dir, uid_t uid, gid_t gid)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(gid) < 0 ||
		    setuid(uid) < 0)
			_exit(EPERM);
		_exit(access(dir, W_OK | X_OK) < 0 ? errno : 0);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (!WIFEXITED(status))
		return -ECHILD;
	return -WEXITSTATUS(status);
}

int pgrun_create(struct pgrun *pg, const char *workdir, const char *bindir,
		 uid_t uid, gid_t gid, char *err, size_t errlen)
{
	char abs[PATH_MAX];
	int r;

	/* absolute: the programs run in the directory */
	if (!realpath(bindir ? bindir : PGRUN_BINDIR, pg->bindir))
		snprintf(pg->bindir, sizeof(pg->bindir), "%s",
			 bindir ? bindir : PGRUN_BINDIR);
	pg->uid = uid;
	pg->gid = gid;
	/* absolute too: they are given the directory's paths */
	if (!realpath(workdir, abs)) {
		r = -errno;
		snprintf(err, errlen, "work dir '%s': %s", workdir,
			 strerror(-r));
		return r;
	}
	workdir = abs;
	if (strlen(workdir) + strlen("/" PGRUN_PREFIX "XXXXXX" SOCKET_NAME) >
	    SUN_PATH_MAX) {
		snprintf(err, errlen,
			 "work dir '%s' is too long for the server's unix socket",
			 workdir);
		return -ENAMETOOLONG;
	}
	snprintf(pg->dir, sizeof(pg->dir), "%s/" PGRUN_PREFIX "XXXXXX",
		 workdir);
	if (!mkdtemp(pg->dir)) {
		r = -errno;
		snprintf(err, errlen, "cannot make a directory in '%s': %s",
			 workdir, strerror(-r));
		pg->dir[0] = '\0';
		return r;
	}
	pg->lock_fd = open(pg->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pg->lock_fd < 0 || flock(pg->lock_fd, LOCK_EX | LOCK_NB) < 0 ||
	    fchown(pg->lock_fd, uid, gid) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot prepare '%s': %s", pg->dir,
			 strerror(-r));
		return r;
	}
	r = user_can_reach(pg->dir, uid, gid);
	if (r < 0) {
		struct passwd *pw = getpwuid(uid);

		snprintf(err, errlen,
			 "user %s cannot reach '%s' (%s): every parent directory must be searchable by others",
			 pw ? pw->pw_name : "?", pg->dir, strerrorname_np(-r));
		return r;
	}
	return 0;
}

/* Whether the server says it is ready: line 8 of postmaster.pid. */
static bool server_ready(struct pgrun *pg)
{
	_cleanup_free_ char *text = NULL;
	char *line;
	int k = 0;

	if (read_full_fileat(pg->lock_fd, "data/postmaster.pid", 1 << 16,
			     &text) < 0)
		return false;
	/* line by line: strtok_r would skip the empty lines it may hold */
	for (line = text; line && k < 7; k++) {
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return line && !strncmp(line, "ready", 5);
}

int pgrun_start(struct pgrun *pg, char *err, size_t errlen)
{
	char data[PATH_MAX + 8], line[256], st[32];
	const char *const initdb[] = { "initdb", "-D", data, "-A", "trust",
				       "-U", PGRUN_ROLE, "-E", "UTF8",
				       "--locale=C", "--no-sync", NULL };
	/*
	 * The socket in the directory only, no TCP; no fsync (the data is
	 * thrown away), no autovacuum (it would wake in a measured window),
	 * and no hugetlb for shared_buffers, so only the THP mode differs.
	 */
	const char *const postgres[] = {
		"postgres", "-D", data, "-k", pg->dir, "-p", PGRUN_PORT,
		"-c", "listen_addresses=", "-c", "unix_socket_permissions=0700",
		"-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "autovacuum=off",
		"-c", "huge_pages=off", "-c", "max_connections=20",
		"-c", "shared_buffers=128MB", NULL
	};
	double start;
	int status, r;
	pid_t pid;

	snprintf(data, sizeof(data), "%s/data", pg->dir);
	r = pgrun_exec(pg, initdb, "initdb.log", err, errlen);
	if (r < 0)
		return r;
	pid = spawn(pg, postgres, "postgres.log");
	if (pid < 0) {
		snprintf(err, errlen, "cannot start postgres: %s",
			 strerror(-pid));
		return pid;
	}
	pg->postmaster = pid;
	for (start = mono_s(); !server_ready(pg);) {
		pid_t got = waitpid(pid, &status, WNOHANG);

		if (got == pid) {
			pg->postmaster = 0;
			status_text(status, st, sizeof(st));
			last_line(pg->lock_fd, "postgres.log", line,
				  sizeof(line));
			snprintf(err, errlen, "postgres failed (%s): %s", st,
				 line[0] ? line : "no output");
			return -EIO;
		}
		if (bench_interrupted())
			return -EINTR;
		if (mono_s() - start > PGRUN_START_TIMEOUT_S) {
			snprintf(err, errlen,
				 "postgres not ready after %d s",
				 PGRUN_START_TIMEOUT_S);
			return -ETIMEDOUT;
		}
		usleep(20000);
	}
	return 0;
}

/* Immediate shutdown: the postmaster stops its backends and exits. */
static void server_stop(struct pgrun *pg)
{
	int status;

	if (pg->postmaster <= 0)
		return;
	kill(pg->postmaster, SIGQUIT);
	for (double start = mono_s();
	     waitpid(pg->postmaster, &status, WNOHANG) == 0;) {
		if (mono_s() - start > STOP_WAIT_S) {
			kill(-pg->postmaster, SIGKILL);
			kill(pg->postmaster, SIGKILL);
			while (waitpid(pg->postmaster, &status, 0) < 0 &&
			       errno == EINTR)
				;
			break;
		}
		usleep(10000);
	}
	pg->postmaster = 0;
}

void pgrun_release(struct pgrun *pg)
{
	server_stop(pg);
	if (pg->dir[0])
		remove_at(AT_FDCWD, pg->dir);
	pg->dir[0] = '\0';
	if (pg->lock_fd >= 0)
		close(pg->lock_fd);
	pg->lock_fd = -1;
}

/* Bytes the files below dfd take on disk (st_blocks); closes dfd. */
static uint64_t du_at(int dfd)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	uint64_t sum = 0;

	if (!d) {
		close(dfd);
		return 0;
	}
	while ((de = readdir(d))) {
		struct stat sb;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		sum += (uint64_t)sb.st_blocks * 512;
		if (S_ISDIR(sb.st_mode)) {
			int sub = openat(dirfd(d), de->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
						 O_CLOEXEC);

			if (sub >= 0)
				sum += du_at(sub);
		}
	}
	closedir(d);
	return sum;
}

uint64_t pgrun_data_bytes(struct pgrun *pg)
{
	int fd = openat(pg->lock_fd, "data/base",
			O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	return fd >= 0 ? du_at(fd) : 0;
}

/* ---- what dead runs left ---- */

/* SIGKILLs a server still running in dir (its cwd is dir/data): after a
 * SIGKILL of the benchmark its PDEATHSIG got it, but a kernel without it or
 * a user's stray server would not be gone. */
static void kill_stray_server(int dfd, const char *dir)
{
	_cleanup_free_ char *text = NULL;
	char proc[64], cwd[PATH_MAX], want[PATH_MAX + 8];
	long pid;
	ssize_t n;

	if (read_full_fileat(dfd, "data/postmaster.pid", 1 << 16, &text) < 0)
		return;
	pid = strtol(text, NULL, 10);
	if (pid <= 1)
		return;
	snprintf(proc, sizeof(proc), "/proc/%ld/cwd", pid);
	n = readlink(proc, cwd, sizeof(cwd) - 1);
	if (n < 0)
		return;
	cwd[n] = '\0';
	snprintf(want, sizeof(want), "%s/data", dir);
	if (!strcmp(cwd, want))
		kill((pid_t)pid, SIGKILL);
}

int pgrun_sweep(const char *workdir)
{
	_cleanup_closedir_ DIR *d = opendir(workdir);
	struct dirent *de;
	int removed = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		_cleanup_close_ int fd = -1;
		char path[PATH_MAX];

		if (strncmp(de->d_name, PGRUN_PREFIX, strlen(PGRUN_PREFIX)))
			continue;
		fd = openat(dirfd(d), de->d_name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		/* in use: its run holds the lock */
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", workdir, de->d_name);
		kill_stray_server(fd, path);
		if (remove_at(dirfd(d), de->d_name) == 0)
			removed++;
	}
	return removed;
}
