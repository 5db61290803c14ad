/* SPDX-License-Identifier: MIT */
/*
 * The collector's rate-limited logging (collector/complain.h): a burst of
 * events is cut to 10 lines a minute and the rest counted; a peer's line
 * (complain_keyed) comes at most once a minute however often it comes
 * back, its repeats counted in its next line; lines of distinct peers are
 * limited to 100 a minute, and more than the keys remembered are still
 * limited. The lines go to stderr, read back from a file here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "complain.h"

static FILE *err_file;
static int saved_fd = -1;

/* stderr into err_file until lines_since() (the CHECKs' own lines stay
 * on the real stderr) */
static void capture(void)
{
	fflush(stderr);
	dup2(fileno(err_file), 2);
}

/* the lines logged since the last call, counted; those holding want */
static int lines_since(const char *want, int *matching)
{
	static long pos;
	char line[1024];
	int n = 0;

	fflush(stderr);
	dup2(saved_fd, 2);
	fseek(err_file, pos, SEEK_SET);
	*matching = 0;
	while (fgets(line, sizeof(line), err_file)) {
		n++;
		if (want && strstr(line, want))
			(*matching)++;
	}
	pos = ftell(err_file);
	return n;
}

int main(void)
{
	static struct ratelimit_keyed rk = {
		.all = { .what = "accepted handshakes", .info = true }
	};
	struct ratelimit rl = { .what = "rejected reports" };
	char key[64];
	int m;

	saved_fd = dup(2);
	err_file = tmpfile();
	if (!err_file || saved_fd < 0)
		return 2;

	capture();
	/* a burst: 10 lines, the rest counted (in the next minute's line) */
	for (int i = 0; i < 50; i++)
		complain_limited(&rl, "rejected report %d", i);
	CHECK_EQ_INT(lines_since("rejected report", &m), 10);
	CHECK_EQ_INT(rl.suppressed, 40);

	capture();
	/* one peer connecting 500 times: one line */
	for (int i = 0; i < 500; i++)
		complain_keyed(&rk, "CURVE key-a 127.0.0.1",
			       "accepted CURVE agent with key key-a from 127.0.0.1");
	CHECK_EQ_INT(lines_since("key-a", &m), 1);
	CHECK_EQ_INT(m, 1);
	capture();
	/* two peers taking turns: one line each */
	for (int i = 0; i < 100; i++) {
		complain_keyed(&rk, "CURVE key-b 127.0.0.1", "peer key-b");
		complain_keyed(&rk, "CURVE key-c 127.0.0.1", "peer key-c");
	}
	CHECK_EQ_INT(lines_since(NULL, &m), 2);
	capture();
	/* 300 distinct peers: the first 97 of the minute's 100 logged, the
	 * rest counted; their keys evict the ones remembered first, whose
	 * repeats (499, 99 and 99) join the count */
	for (int i = 0; i < 300; i++) {
		snprintf(key, sizeof(key), "CURVE key-%03d 10.0.0.1", i);
		complain_keyed(&rk, key, "distinct peer %d", i);
	}
	CHECK_EQ_INT(lines_since("distinct peer", &m), 97);
	CHECK_EQ_INT(rk.all.suppressed, 203 + 499 + 99 + 99);
	capture();
	/* a peer forgotten (evicted) and coming back is a new key: still
	 * within the minute's limit, so not logged, but counted */
	complain_keyed(&rk, "CURVE key-a 127.0.0.1", "key-a again");
	CHECK_EQ_INT(lines_since(NULL, &m), 0);
	CHECK_EQ_INT(rk.all.suppressed, 203 + 499 + 99 + 99 + 1);

	close(saved_fd);
	return check_summary();
}
