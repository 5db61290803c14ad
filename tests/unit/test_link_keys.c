/* SPDX-License-Identifier: MIT */
/* The link's key files and allowlist, without sockets: keygen never
 * overwrites, secrets must be private, malformed keys are named. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "link.h"
#include "link_test.h"

static void test_keys(void)
{
	struct link_keypair kp, again;
	char pub[LINK_KEY_LEN + 1], before[LINK_KEY_LEN + 1];

	CHECK_EQ_INT(mkdir(path_of("keys"), 0700), 0);
	CHECK_OK(link_keygen(path_of("keys"), "agent", &kp));
	CHECK_EQ_INT(mode_of(path_of("keys/agent.key")), 0600);
	CHECK_EQ_INT(mode_of(path_of("keys/agent.pub")), 0644);
	CHECK_EQ_INT(strlen(kp.public_key), LINK_KEY_LEN);
	CHECK_OK(link_read_public(path_of("keys/agent.pub"), pub));
	CHECK_EQ_STR(pub, kp.public_key);
	CHECK_OK(link_read_secret(path_of("keys/agent.key"), &again));
	CHECK_EQ_STR(again.secret_key, kp.secret_key);
	CHECK_EQ_STR(again.public_key, kp.public_key); /* derived */

	/* never overwrites: both files keep the first key */
	CHECK_EQ_INT(link_keygen(path_of("keys"), "agent", &again), -EEXIST);
	CHECK_OK(link_read_public(path_of("keys/agent.pub"), pub));
	CHECK_EQ_STR(pub, kp.public_key);
	/* nor half of a pair: a lone .pub blocks a new .key */
	CHECK_OK(link_read_public(path_of("keys/agent.pub"), before));
	CHECK_EQ_INT(unlink(path_of("keys/agent.key")), 0);
	CHECK_EQ_INT(link_keygen(path_of("keys"), "agent", &again), -EEXIST);
	CHECK_EQ_INT(access(path_of("keys/agent.key"), F_OK), -1);
	CHECK_OK(link_read_public(path_of("keys/agent.pub"), pub));
	CHECK_EQ_STR(pub, before);
	/* and a lone .key blocks a new .pub */
	CHECK_OK(link_keygen(path_of("keys"), "other", NULL));
	CHECK_EQ_INT(unlink(path_of("keys/other.pub")), 0);
	CHECK_EQ_INT(link_keygen(path_of("keys"), "other", &again), -EEXIST);
	CHECK_EQ_INT(access(path_of("keys/other.pub"), F_OK), -1);

	CHECK_EQ_INT(link_keygen(path_of("keys"), "a/b", &again), -EINVAL);
	CHECK_EQ_INT(link_keygen(path_of("keys"), "", &again), -EINVAL);
	CHECK_EQ_INT(link_keygen(path_of("missing"), "x", &again), -ENOENT);

	/* a secret readable by group or others is refused */
	CHECK_OK(link_keygen(path_of("keys"), "loose", &kp));
	chmod(path_of("keys/loose.key"), 0644);
	CHECK_EQ_INT(link_read_secret(path_of("keys/loose.key"), &again),
		     -EPERM);
	chmod(path_of("keys/loose.key"), 0640);
	CHECK_EQ_INT(link_read_secret(path_of("keys/loose.key"), &again),
		     -EPERM);
	chmod(path_of("keys/loose.key"), 0604);
	CHECK_EQ_INT(link_read_secret(path_of("keys/loose.key"), &again),
		     -EPERM);
	chmod(path_of("keys/loose.key"), 0400);
	CHECK_OK(link_read_secret(path_of("keys/loose.key"), &again));
	CHECK_EQ_STR(again.public_key, kp.public_key);

	/* malformed key files */
	write_text(path_of("keys/short.pub"), "abc\n", 0644);
	CHECK_EQ_INT(link_read_public(path_of("keys/short.pub"), pub), -EINVAL);
	write_text(path_of("keys/bad.pub"),
		   "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n", 0644);
	CHECK_EQ_INT(link_read_public(path_of("keys/bad.pub"), pub), -EINVAL);
	write_text(path_of("keys/bad.key"), "not a key\n", 0600);
	CHECK_EQ_INT(link_read_secret(path_of("keys/bad.key"), &again),
		     -EINVAL);
	CHECK_EQ_INT(link_read_public(path_of("keys/none.pub"), pub), -ENOENT);
}

/* ---- allowlist ---- */

static void test_allowlist(void)
{
	char err[LINK_ERR_LEN] = "", text[512];
	struct link_allowlist *a;

	/* a directory: every *.pub, the .key files beside them ignored */
	a = allowlist_of(path_of("agents"));
	CHECK_EQ_INT(link_allowlist_count(a), 2);
	CHECK(link_allowlist_has(a, a_kp.public_key));
	CHECK(link_allowlist_has(a, b_kp.public_key));
	CHECK(!link_allowlist_has(a, c_kp.public_key));
	CHECK(!link_allowlist_has(a, a_kp.secret_key));
	CHECK(!link_allowlist_has(a, "short"));
	CHECK(!link_allowlist_has(a, NULL));
	link_allowlist_free(a);

	/* a file: comments, blank lines, a trailing comment, a duplicate */
	snprintf(text, sizeof(text),
		 "# agents allowed to report\n"
		 "\n"
		 "  %s   # alice\n"
		 "%s\n"
		 "\t# bob left\n"
		 "%s\n",
		 a_kp.public_key, c_kp.public_key, a_kp.public_key);
	write_text(path_of("allow.txt"), text, 0644);
	a = allowlist_of(path_of("allow.txt"));
	CHECK_EQ_INT(link_allowlist_count(a), 2);
	CHECK(link_allowlist_has(a, a_kp.public_key));
	CHECK(link_allowlist_has(a, c_kp.public_key));
	CHECK(!link_allowlist_has(a, b_kp.public_key));
	link_allowlist_free(a);

	/* an empty file admits nobody */
	write_text(path_of("empty.txt"), "# nobody yet\n", 0644);
	a = allowlist_of(path_of("empty.txt"));
	CHECK_EQ_INT(link_allowlist_count(a), 0);
	CHECK(!link_allowlist_has(a, a_kp.public_key));
	link_allowlist_free(a);

	/* a malformed key is named by file and line */
	snprintf(text, sizeof(text), "# ok\n%s\nnot-a-key\n", a_kp.public_key);
	write_text(path_of("bad.txt"), text, 0644);
	errno = 0;
	CHECK(link_allowlist_load(path_of("bad.txt"), err) == NULL);
	CHECK_EQ_INT(errno, EINVAL);
	snprintf(text, sizeof(text), "%s:3: malformed key", path_of("bad.txt"));
	CHECK_(strstr(err, text) != NULL, "err \"%s\" names \"%s\"", err, text);

	/* 40 characters, one outside the Z85 alphabet */
	snprintf(text, sizeof(text), "%.39s~\n", a_kp.public_key);
	write_text(path_of("badz85.txt"), text, 0644);
	CHECK(link_allowlist_load(path_of("badz85.txt"), err) == NULL);
	snprintf(text, sizeof(text), "%s:1: malformed key: not valid Z85",
		 path_of("badz85.txt"));
	CHECK_(strstr(err, text) != NULL, "err \"%s\" names \"%s\"", err, text);

	snprintf(text, sizeof(text), "%s trailing words\n", a_kp.public_key);
	write_text(path_of("trailing.txt"), text, 0644);
	CHECK(link_allowlist_load(path_of("trailing.txt"), err) == NULL);
	CHECK_(strstr(err, ":1: unexpected text after the key") != NULL,
	       "err \"%s\"", err);

	/* in a directory, the bad file is the one named */
	CHECK_EQ_INT(mkdir(path_of("baddir"), 0700), 0);
	snprintf(text, sizeof(text), "%s\n", a_kp.public_key);
	write_text(path_of("baddir/a.pub"), text, 0644);
	write_text(path_of("baddir/broken.pub"), "\n\nabc\n", 0644);
	CHECK(link_allowlist_load(path_of("baddir"), err) == NULL);
	snprintf(text, sizeof(text), "%s:3: malformed key",
		 path_of("baddir/broken.pub"));
	CHECK_(strstr(err, text) != NULL, "err \"%s\" names \"%s\"", err, text);

	errno = 0;
	CHECK(link_allowlist_load(path_of("nowhere"), err) == NULL);
	CHECK_EQ_INT(errno, ENOENT);
	CHECK_(strstr(err, path_of("nowhere")) != NULL, "err \"%s\"", err);
	link_allowlist_free(NULL);
}

int main(void)
{
	int r = link_test_setup();

	if (r)
		return r;
	test_keys();
	test_allowlist();
	return link_test_finish();
}
