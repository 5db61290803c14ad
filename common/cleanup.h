/* SPDX-License-Identifier: MIT */
/* Scope-bound cleanup for locals (systemd's cleanup-fundamental.h). */
#ifndef FLEETBENCH_CLEANUP_H
#define FLEETBENCH_CLEANUP_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

static inline void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_closedir_ _cleanup_(closedirp)

/* Hand a cleanup-owned pointer or fd to someone else. */
#define TAKE_PTR(p)                                \
	({                                         \
		__typeof__(p) _tmp_ = (p);         \
		(p) = NULL;                        \
		_tmp_;                             \
	})
#define TAKE_FD(fd)                                \
	({                                         \
		int _tmp_ = (fd);                  \
		(fd) = -1;                         \
		_tmp_;                             \
	})

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
