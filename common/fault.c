/* SPDX-License-Identifier: MIT */
/* Named fault-injection points that SIGKILL the process (fault.h). */
#include "fault.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Hits of the armed point so far: only one point is armed at a time. */
static unsigned long hits;

/* The N of "NAME@N", or 1 for a bare "NAME"; 0 when N is malformed. */
static unsigned long nth(const char *at)
{
	unsigned long n;
	char *end;

	if (!*at)
		return 1;
	if (*at != '@' || at[1] < '1' || at[1] > '9')
		return 0;
	errno = 0;
	n = strtoul(at + 1, &end, 10);
	return errno || *end ? 0 : n;
}

void fault_point(const char *name)
{
	static const char pre[] = "fault point '";
	static const char post[] = "' reached: SIGKILL\n";
	const char *spec = getenv(FAULT_ENV);
	size_t len = strlen(name);
	unsigned long n;
	ssize_t w;

	if (!spec || strncmp(spec, name, len) ||
	    (spec[len] && spec[len] != '@'))
		return;
	n = nth(spec + len);
	if (!n || __atomic_add_fetch(&hits, 1, __ATOMIC_RELAXED) != n)
		return;
	/* plain write(2)s, not log.c: unbuffered, out before the kill */
	w = write(STDERR_FILENO, pre, sizeof(pre) - 1);
	w += write(STDERR_FILENO, name, len);
	w += write(STDERR_FILENO, post, sizeof(post) - 1);
	(void)w;
	kill(getpid(), SIGKILL);
	/* SIGKILL cannot be caught; should the kill fail, do not go on */
	_exit(137);
}
