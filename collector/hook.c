/* SPDX-License-Identifier: MIT */
/* A hook command: spawned with its input, waited for with a timeout. */
#include "hook.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"

/* how often a running hook is checked for its exit */
#define WAIT_TICK_MS 10

extern char **environ;

static void sleep_ms(int64_t ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* environ, then env: a new array of borrowed strings (free() only it). */
static char **env_build(const char *const *env)
{
	size_t n = 0, k = 0, i = 0;
	char **e;

	while (environ && environ[n])
		n++;
	while (env && env[k])
		k++;
	e = calloc(n + k + 1, sizeof(*e));
	if (!e)
		return NULL;
	for (size_t j = 0; j < n; j++) {
		bool replaced = false;

		/* a variable the hook is given replaces the inherited one */
		for (size_t l = 0; l < k && !replaced; l++) {
			size_t name = strcspn(env[l], "=");

			replaced = !strncmp(environ[j], env[l], name + 1);
		}
		if (!replaced)
			e[i++] = environ[j];
	}
	for (size_t l = 0; l < k; l++)
		e[i++] = (char *)env[l];
	return e;
}

static int spawn(const char *command, const char *const *env, int stdin_fd,
		 pid_t *ret_pid)
{
	char *const argv[] = { "/bin/sh", "-c", (char *)command, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	_cleanup_free_ char **envp = env_build(env);
	sigset_t none, all;
	int r;

	if (!envp)
		return -ENOMEM;
	sigemptyset(&none);
	sigfillset(&all);
	r = posix_spawn_file_actions_init(&fa);
	if (r)
		return -r;
	r = posix_spawnattr_init(&attr);
	if (r) {
		posix_spawn_file_actions_destroy(&fa);
		return -r;
	}
	/* the collector blocks some signals and ignores SIGPIPE: the hook
	 * gets neither; its own group, so that a timeout stops all of it */
	r = posix_spawn_file_actions_adddup2(&fa, stdin_fd, STDIN_FILENO);
	if (!r)
		r = posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO,
						     STDOUT_FILENO);
	if (!r)
		r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK |
							    POSIX_SPAWN_SETSIGDEF |
							    POSIX_SPAWN_SETPGROUP);
	if (!r)
		r = posix_spawnattr_setsigmask(&attr, &none);
	if (!r)
		r = posix_spawnattr_setsigdefault(&attr, &all);
	if (!r)
		r = posix_spawnattr_setpgroup(&attr, 0);
	if (!r)
		r = posix_spawn(ret_pid, argv[0], &fa, &attr, argv, envp);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	return -r;
}

/*
 * Writes the input to the hook until the deadline. A hook that exits or
 * closes its standard input without reading it all is not a failure by
 * itself: its exit status says.
 */
static int feed(int fd, const char *p, size_t len, int64_t deadline)
{
	while (len) {
		struct pollfd pfd = { fd, POLLOUT, 0 };
		int64_t left = deadline - mono_ms();
		ssize_t n;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
		n = write(fd, p, len);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return errno == EPIPE ? 0 : -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Waits for pid until the deadline: 0 with *status, or -ETIMEDOUT. */
static int reap(pid_t pid, int64_t deadline, int *status)
{
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		int64_t left;

		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
		left = deadline - mono_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		sleep_ms(left < WAIT_TICK_MS ? left : WAIT_TICK_MS);
	}
}

int hook_run(const char *command, const char *const *env, const void *input,
	     size_t len, int timeout_ms, char err[HOOK_ERR_LEN])
{
	int64_t deadline = mono_ms() + timeout_ms;
	int fds[2], status, sig, r;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0) {
		r = -errno;
		snprintf(err, HOOK_ERR_LEN, "cannot create a pipe: %s",
			 strerror(-r));
		return r;
	}
	r = spawn(command, env, fds[0], &pid);
	close(fds[0]);
	if (r < 0) {
		close(fds[1]);
		snprintf(err, HOOK_ERR_LEN, "cannot run /bin/sh: %s",
			 strerror(-r));
		return r;
	}
	r = fcntl(fds[1], F_SETFL, O_NONBLOCK) < 0 ? -errno : 0;
	if (r == 0)
		r = feed(fds[1], input, len, deadline);
	close(fds[1]);
	if (r == 0 || r == -ETIMEDOUT)
		r = reap(pid, deadline, &status);
	if (r < 0) {
		kill(-pid, SIGTERM);
		if (reap(pid, mono_ms() + HOOK_KILL_GRACE_MS, &status) < 0) {
			kill(-pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
		}
		if (r == -ETIMEDOUT)
			snprintf(err, HOOK_ERR_LEN, "timed out after %d ms",
				 timeout_ms);
		else
			snprintf(err, HOOK_ERR_LEN, "stopped: %s",
				 strerror(-r));
		return r;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	if (sig)
		snprintf(err, HOOK_ERR_LEN, "killed by signal %d (%s)", sig,
			 strsignal(sig));
	else
		snprintf(err, HOOK_ERR_LEN, "exit status %d",
			 WEXITSTATUS(status));
	return -EPROTO;
}
