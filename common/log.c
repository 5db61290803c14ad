/* SPDX-License-Identifier: MIT */
/* Logging for the main loops: lowercase, no full stop, subject quoted. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static const char *log_prog = "fleetbench";

void log_init(const char *progname)
{
	log_prog = progname;
}

/* One line under the stdio lock: the collector logs from two threads. */
static void log_emit(const char *level, const char *fmt, va_list ap)
{
	flockfile(stderr);
	fprintf(stderr, "%s: %s", log_prog, level);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}

int log_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit("error: ", fmt, ap);
	va_end(ap);
	return -1;
}

void log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit("warning: ", fmt, ap);
	va_end(ap);
}

void log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit("", fmt, ap);
	va_end(ap);
}
