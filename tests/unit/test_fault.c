/* SPDX-License-Identifier: MIT */
/* common/fault.c: which FLEETBENCH_FAULT values kill, and when. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fault.h"

/*
 * In a child with FLEETBENCH_FAULT=spec (NULL: unset), reaches the point
 * name `hits` times, then exits 0. Returns how many hits it survived, or
 * -1 when it died of something other than SIGKILL at a hit.
 */
static int survived(const char *spec, const char *name, int hits)
{
	int pipefd[2], status, n = 0;
	pid_t pid;
	char c;

	if (pipe(pipefd) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		close(pipefd[0]);
		if (spec)
			setenv(FAULT_ENV, spec, 1);
		else
			unsetenv(FAULT_ENV);
		/* stderr closed: the "reached" line is not for the test log */
		close(STDERR_FILENO);
		for (int i = 0; i < hits; i++) {
			fault_point(name);
			if (write(pipefd[1], "x", 1) != 1)
				_exit(2);
		}
		_exit(0);
	}
	close(pipefd[1]);
	while (read(pipefd[0], &c, 1) == 1)
		n++;
	close(pipefd[0]);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return n;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		return n;
	return -1;
}

/*
 * In a child with FLEETBENCH_FAULT=spec, reaches the point name once: the
 * signal it died of, 0 when it lived on (returning -ENOMEM: 1000 + that),
 * -1 when it could not be run. A hang is ended by SIGKILL after 300 ms,
 * after a SIGTERM it must sleep through.
 */
static int outcome(const char *spec, const char *name)
{
	int status, r = -1;
	pid_t pid = fork();

	if (pid == 0) {
		setenv(FAULT_ENV, spec, 1);
		close(STDERR_FILENO);
		r = fault_point(name);
		_exit(r == -ENOMEM ? 100 : r == 0 ? 0 : 2);
	}
	if (pid < 0)
		return -1;
	if (strlen(spec) >= 5 && !strcmp(spec + strlen(spec) - 5, ":hang")) {
		usleep(150 * 1000);
		kill(pid, SIGTERM);
		usleep(150 * 1000);
		kill(pid, SIGKILL);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFSIGNALED(status))
		return WTERMSIG(status);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 100)
		return 1000 + ENOMEM;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int main(void)
{
	/* unset, empty, or another point: never */
	CHECK_EQ_INT(survived(NULL, "spool-before-rename", 3), 3);
	CHECK_EQ_INT(survived("", "spool-before-rename", 3), 3);
	CHECK_EQ_INT(survived("send-after-ack", "spool-before-rename", 3), 3);
	/* a name that only starts like the point is another point */
	CHECK_EQ_INT(survived("spool", "spool-before-rename", 3), 3);
	CHECK_EQ_INT(survived("spool-before-rename-x", "spool-before-rename", 3),
		     3);
	/* the first hit, or the N-th */
	CHECK_EQ_INT(survived("spool-before-rename", "spool-before-rename", 3),
		     0);
	CHECK_EQ_INT(survived("spool-before-rename@1", "spool-before-rename", 3),
		     0);
	CHECK_EQ_INT(survived("send-after-ack@3", "send-after-ack", 5), 2);
	CHECK_EQ_INT(survived("send-after-ack@12", "send-after-ack", 20), 11);
	/* past the hits: the process lives */
	CHECK_EQ_INT(survived("send-after-ack@6", "send-after-ack", 5), 5);
	/* a malformed N never fires */
	CHECK_EQ_INT(survived("send-after-ack@0", "send-after-ack", 3), 3);
	CHECK_EQ_INT(survived("send-after-ack@x", "send-after-ack", 3), 3);
	CHECK_EQ_INT(survived("send-after-ack@2x", "send-after-ack", 3), 3);
	CHECK_EQ_INT(survived("send-after-ack@", "send-after-ack", 3), 3);
	/* what happens there */
	CHECK_EQ_INT(outcome("p:SIGKILL", "p"), SIGKILL);
	CHECK_EQ_INT(outcome("p:SIGSEGV", "p"), SIGSEGV);
	CHECK_EQ_INT(outcome("p@1:SIGABRT", "p"), SIGABRT);
	CHECK_EQ_INT(outcome("p:hang", "p"), SIGKILL);
	CHECK_EQ_INT(outcome("p:ENOMEM", "p"), 1000 + ENOMEM);
	/* an unknown action, or one on another point, never fires */
	CHECK_EQ_INT(outcome("p:SIGFOO", "p"), 0);
	CHECK_EQ_INT(outcome("p:", "p"), 0);
	CHECK_EQ_INT(outcome("q:SIGSEGV", "p"), 0);
	CHECK_EQ_INT(outcome("p@x:SIGSEGV", "p"), 0);
	return check_summary();
}
