/* SPDX-License-Identifier: MIT */
/*
 * What test_link.c (the link over sockets) and test_link_keys.c (key files
 * and the allowlist) share: a scratch directory with four keypairs, agents/
 * holding a and b (the allowlist), others/ c, server/ the server's.
 */
#ifndef FLEETBENCH_TEST_LINK_H
#define FLEETBENCH_TEST_LINK_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <zmq.h>

#include "check.h"
#include "link.h"
#include "probe_test.h"

static char *root; /* tree_new() */
static struct link_keypair server_kp, a_kp, b_kp, c_kp;

static inline char *path_of(const char *rel)
{
	static char buf[4][512];
	static int next;
	char *p = buf[next++ % 4];

	snprintf(p, sizeof(buf[0]), "%s/%s", root, rel);
	return p;
}

static inline void write_text(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "we");

	CHECK(f != NULL);
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

static inline mode_t mode_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_mode & 07777 : (mode_t)-1;
}

static inline struct link_allowlist *allowlist_of(const char *path)
{
	char err[LINK_ERR_LEN] = "";
	struct link_allowlist *a = link_allowlist_load(path, err);

	CHECK_(a != NULL, "link_allowlist_load: %s", err);
	return a;
}

/* Makes the scratch directory and its keys: 0, 77 (skip: no CURVE) or 1. */
static inline int link_test_setup(void)
{
	if (!zmq_has("curve")) {
		printf("skipped: libzmq was built without CURVE\n");
		return 77;
	}
	root = tree_new();
	CHECK_EQ_INT(mkdir(path_of("agents"), 0700), 0);
	CHECK_EQ_INT(mkdir(path_of("server"), 0700), 0);
	CHECK_EQ_INT(mkdir(path_of("others"), 0700), 0);
	CHECK_OK(link_keygen(path_of("agents"), "a", &a_kp));
	CHECK_OK(link_keygen(path_of("agents"), "b", &b_kp));
	CHECK_OK(link_keygen(path_of("others"), "c", &c_kp));
	CHECK_OK(link_keygen(path_of("server"), "server", &server_kp));
	return 0;
}

/* Removes the scratch directory; the summary is the exit code. */
static inline int link_test_finish(void)
{
	tree_free(root);
	return check_summary();
}

#endif
