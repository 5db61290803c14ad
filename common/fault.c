/* SPDX-License-Identifier: MIT */
/* Named fault-injection points that crash the process (fault.h). */
#include "fault.h"

#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* Hits of the armed point so far: only one point is armed at a time. */
static unsigned long hits;

enum fault_how { HOW_KILL, HOW_SEGV, HOW_ABRT, HOW_HANG, HOW_ENOMEM };

static const char *const how_names[] = {
	[HOW_KILL] = "SIGKILL", [HOW_SEGV] = "SIGSEGV", [HOW_ABRT] = "SIGABRT",
	[HOW_HANG] = "hang",	[HOW_ENOMEM] = "ENOMEM",
};

/*
 * Parses "[@N][:HOW]" after the name into *n and *how; false when it is
 * malformed (then the point never fires).
 */
static bool parse_spec(const char *at, unsigned long *n, int *how)
{
	const char *colon = strchr(at, ':');
	size_t len = colon ? (size_t)(colon - at) : strlen(at);

	*n = 1;
	*how = HOW_KILL;
	if (len) {
		char digits[24], *end;

		if (*at != '@' || len < 2 || len - 1 >= sizeof(digits) ||
		    at[1] < '1' || at[1] > '9')
			return false;
		memcpy(digits, at + 1, len - 1);
		digits[len - 1] = '\0';
		errno = 0;
		*n = strtoul(digits, &end, 10);
		if (errno || *end)
			return false;
	}
	if (!colon)
		return true;
	for (size_t i = 0; i < sizeof(how_names) / sizeof(how_names[0]); i++)
		if (!strcmp(colon + 1, how_names[i])) {
			*how = (int)i;
			return true;
		}
	return false;
}

static void say(const char *name, const char *how)
{
	static const char pre[] = "fault point '";
	static const char mid[] = "' reached: ";
	const struct iovec iov[] = {
		{ (void *)pre, sizeof(pre) - 1 },
		{ (void *)name, strlen(name) },
		{ (void *)mid, sizeof(mid) - 1 },
		{ (void *)how, strlen(how) },
		{ (void *)"\n", 1 },
	};
	ssize_t w;

	/* one writev(2), not log.c: unbuffered, out before the crash, and
	 * one line however many threads write to stderr at the same time */
	w = writev(STDERR_FILENO, iov, sizeof(iov) / sizeof(iov[0]));
	(void)w;
}

int fault_point(const char *name)
{
	const char *spec = getenv(FAULT_ENV);
	size_t len = strlen(name);
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t set;
	unsigned long n;
	int how;

	if (!spec || strncmp(spec, name, len) ||
	    (spec[len] && spec[len] != '@' && spec[len] != ':'))
		return 0;
	if (!parse_spec(spec + len, &n, &how) ||
	    __atomic_add_fetch(&hits, 1, __ATOMIC_RELAXED) != n)
		return 0;
	say(name, how_names[how]);
	switch (how) {
	case HOW_ENOMEM:
		return -ENOMEM;
	case HOW_HANG:
		/* as if stuck in the kernel: every signal but SIGKILL waits */
		sigfillset(&set);
		sigprocmask(SIG_SETMASK, &set, NULL);
		for (;;)
			pause();
	case HOW_ABRT:
		abort();
	case HOW_SEGV:
		/* the default action: not a sanitizer's report and exit(1) */
		sigaction(SIGSEGV, &dfl, NULL);
		sigemptyset(&set);
		sigaddset(&set, SIGSEGV);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		kill(getpid(), SIGSEGV);
		break;
	default:
		break;
	}
	kill(getpid(), SIGKILL);
	/* SIGKILL cannot be caught; should the kill fail, do not go on */
	_exit(137);
}
