/* SPDX-License-Identifier: MIT */
/*
 * What the files of the link module share and nothing else links against:
 * the key check, the error buffer, and the state the ZAP handler thread
 * and the collector's receive loop share (link_zap.c).
 */
#ifndef FLEETBENCH_LINK_PRIVATE_H
#define FLEETBENCH_LINK_PRIVATE_H

#include <pthread.h>
#include <stdbool.h>

#include "link.h"

#define LINK_KEY_BYTES 32

/* 40 characters that decode as Z85 (link_keys.c). */
bool link_key_valid(const char *z85);

/* vsnprintf into err (LINK_ERR_LEN bytes); a NULL err is fine. */
void link_err_set(char *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* What a server's ZAP handler decides by: the lock guards allowlist and
 * refused, the rest is fixed before the handler starts. */
struct link_guard {
	pthread_mutex_t lock;
	struct link_allowlist *allowlist;
	unsigned long refused;
	bool insecure;
	link_auth_log_fn log;
	void *log_data;
};

struct link_zap;

/*
 * Binds the ZAP handler (inproc://zeromq.zap.01 in zctx) and starts its
 * thread, which answers from g until link_zap_stop. Returns NULL with
 * errno and err set (EADDRINUSE: another handler in this context).
 */
struct link_zap *link_zap_start(void *zctx, struct link_guard *g,
				char err[LINK_ERR_LEN]);

/* Stops the thread and closes the handler's sockets. NULL is fine. */
void link_zap_stop(struct link_zap *z);

#endif
