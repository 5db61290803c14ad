/* SPDX-License-Identifier: MIT */
/* The agent stops on SIGTERM and SIGINT: exit 130, no file left behind. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "cleanup.h"
#include "clock.h"

/* How long to wait for the agent to reach randread and open its file
 * there: thp_chase runs first, which took over 25 s on 2 vCPUs with a load
 * of 12. A limit on waiting, not on speed. */
#define START_TIMEOUT_S 180.0
/* The limit between the signal and the exit. */
#define EXIT_TIMEOUT_S 5.0

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* True when pid itself has a file below dir open (an unnamed one too). */
static bool own_file_in(pid_t pid, const char *dir)
{
	_cleanup_closedir_ DIR *d = NULL;
	char fddir[64], target[4096];
	size_t len = strlen(dir);
	struct dirent *de;

	snprintf(fddir, sizeof(fddir), "/proc/%d/fd", (int)pid);
	d = opendir(fddir);
	if (!d)
		return false;
	while ((de = readdir(d))) {
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		n = readlinkat(dirfd(d), de->d_name, target,
			       sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		if (!strncmp(target, dir, len) && target[len] == '/')
			return true;
	}
	return false;
}

/* The parent pid of pid, from /proc/PID/stat; -1 when it is gone. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	_cleanup_fclose_ FILE *f = NULL;
	int ppid;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f || !fgets(buf, sizeof(buf), f))
		return -1;
	/* "pid (comm) state ppid": comm may hold spaces and parentheses */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return -1;
	return ppid;
}

/*
 * True when the agent or one of its children (each benchmark runs in a
 * child process of its own) has a file below dir open.
 */
static bool has_file_in(pid_t pid, const char *dir)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;

	if (own_file_in(pid, dir))
		return true;
	d = opendir("/proc");
	while (d && (de = readdir(d))) {
		pid_t child = (pid_t)atoi(de->d_name);

		if (child > 0 && parent_of(child) == pid &&
		    own_file_in(child, dir))
			return true;
	}
	return false;
}

/* Removes what is left in dir, printing each name; the count, or -errno. */
static int empty_dir(const char *dir)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		fprintf(stderr, "left behind: %s/%s\n", dir, de->d_name);
		if (unlinkat(dirfd(d), de->d_name, 0) < 0)
			unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
		n++;
	}
	return n;
}

/* The whole content of a memfd, NUL-terminated; "" on failure. */
static char *read_memfd(int fd)
{
	off_t size = lseek(fd, 0, SEEK_END);
	char *buf;
	ssize_t n;

	if (size < 0)
		size = 0;
	buf = calloc(1, (size_t)size + 1);
	if (!buf)
		return NULL;
	n = size ? pread(fd, buf, (size_t)size, 0) : 0;
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static pid_t start_agent(const char *agent, const char *dir, int out_fd,
			 int err_fd)
{
	char *argv[] = { (char *)agent, "bench", "--only", "thp_chase,randread",
			 "--dir", (char *)dir, "--profile", "quick", "--io-ms",
			 "3000", "--repeats", "5", NULL };
	sigset_t none;
	int devnull;
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	/* The child starts with default dispositions and nothing blocked. */
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out_fd, 1) < 0 ||
	    dup2(err_fd, 2) < 0)
		_exit(126);
	execv(agent, argv);
	_exit(127);
}

/*
 * Runs the agent on a fresh directory, waits until it has its randread
 * file open there, then sends sig after delay_ms and checks the stop.
 */
static void check_signal(const char *agent, int sig, long delay_ms)
{
	char dir[] = "/var/tmp/fleetbench-signals-XXXXXX";
	_cleanup_close_ int out_fd = -1, err_fd = -1;
	_cleanup_free_ char *err = NULL;
	const char *name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
	bool seen = false, exited = false;
	double t0, t1 = 0;
	int status = 0, left;
	pid_t pid;

	if (!mkdtemp(dir)) {
		CHECK_(0, "mkdtemp %s: %s", dir, strerror(errno));
		return;
	}
	out_fd = memfd_create("agent-stdout", MFD_CLOEXEC);
	err_fd = memfd_create("agent-stderr", MFD_CLOEXEC);
	CHECK(out_fd >= 0 && err_fd >= 0);
	if (out_fd < 0 || err_fd < 0)
		goto out_dir;
	pid = start_agent(agent, dir, out_fd, err_fd);
	CHECK_(pid > 0, "fork: %s", strerror(errno));
	if (pid < 0)
		goto out_dir;

	t0 = mono_s();
	while (mono_s() - t0 < START_TIMEOUT_S) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid) {
			exited = true;
			break;
		}
		if (has_file_in(pid, dir)) {
			seen = true;
			break;
		}
		sleep_ms(20);
	}
	CHECK_(!exited, "%s: the agent ended (status 0x%x) before the signal",
	       name, status);
	CHECK_(exited || seen,
	       "%s: no file of the agent open in %s after %.0f s", name, dir,
	       START_TIMEOUT_S);
	if (!exited) {
		printf("%s: benchmark file open in %s after %.2f s\n", name,
		       dir, mono_s() - t0);
		sleep_ms(delay_ms);
		CHECK_OK(kill(pid, sig) < 0 ? -errno : 0);
		t1 = mono_s();
		while (mono_s() - t1 < EXIT_TIMEOUT_S) {
			if (waitpid(pid, &status, WNOHANG) == pid) {
				exited = true;
				break;
			}
			sleep_ms(10);
		}
		CHECK_(exited, "%s: the agent still runs %.0f s after the signal",
		       name, EXIT_TIMEOUT_S);
		if (!exited) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
		} else {
			printf("%s: exited %.2f s after the signal\n", name,
			       mono_s() - t1);
		}
	}
	CHECK_(WIFEXITED(status) && WEXITSTATUS(status) == 130,
	       "%s: exit status %d%s, expected 130", name,
	       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
	       WIFEXITED(status) ? "" : " (killed by a signal)");
	err = read_memfd(err_fd);
	CHECK_(err && strstr(err, "interrupted"),
	       "%s: stderr does not say \"interrupted\": %s", name,
	       err ? err : "(unreadable)");

out_dir:
	left = empty_dir(dir);
	CHECK_(left == 0, "%s: %d file(s) left in %s", name, left, dir);
	CHECK_OK(rmdir(dir) < 0 ? -errno : 0);
}

int main(void)
{
	const char *agent = getenv("AGENT");

	if (!agent || !*agent) {
		printf("skipped: AGENT (the agent binary) is not set\n");
		return 77;
	}
	/* During the file write, then during the measurements. */
	check_signal(agent, SIGTERM, 0);
	check_signal(agent, SIGINT, 1500);
	return check_summary();
}
