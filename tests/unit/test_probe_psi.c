/* SPDX-License-Identifier: MIT */
/*
 * The psi probe: the pressure file parser and the share math directly, the
 * fixture trees (PSI present, absent, psi= on the command line), trees with
 * damaged files, and the running machine.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "probe_psi.h"
#include "probe_test.h"

#define SOME "some avg10=0.00 avg60=0.00 avg300=0.00 total="
#define FULL "full avg10=0.00 avg60=0.00 avg300=0.00 total="

/* ---- the parser, directly ---- */

static void check_parse(void)
{
	struct probe_psi_totals t;

	CHECK_OK(probe_psi_parse("some avg10=3.84 avg60=15.31 avg300=22.04 "
				 "total=191460539\n"
				 "full avg10=0.00 avg60=0.00 avg300=0.00 "
				 "total=0\n",
				 &t));
	CHECK(t.some_us == 191460539);
	CHECK(t.full_us == 0);
	CHECK(t.has_full);
	CHECK_OK(probe_psi_parse(SOME "25752926\n" FULL "17593032\n", &t));
	CHECK(t.some_us == 25752926 && t.full_us == 17593032 && t.has_full);
	/* cpu before 5.13: no full line */
	CHECK_OK(probe_psi_parse(SOME "5000\n", &t));
	CHECK(t.some_us == 5000 && !t.has_full && t.full_us == 0);
	CHECK_OK(probe_psi_parse(SOME "18446744073709551615\n", &t));
	CHECK(t.some_us == UINT64_MAX);

	t.some_us = 42;
	CHECK_EQ_INT(probe_psi_parse("", &t), -EBADMSG);
	/* cut short: no newline, or a full line cut */
	CHECK_EQ_INT(probe_psi_parse(SOME "5000", &t), -EBADMSG);
	CHECK_EQ_INT(probe_psi_parse(SOME "5000\nfull avg10=0.00", &t),
		     -EBADMSG);
	/* full alone, full first, two some lines, a third line */
	CHECK_EQ_INT(probe_psi_parse(FULL "1\n", &t), -EBADMSG);
	CHECK_EQ_INT(probe_psi_parse(FULL "1\n" SOME "1\n", &t), -EBADMSG);
	CHECK_EQ_INT(probe_psi_parse(SOME "1\n" SOME "1\n", &t), -EBADMSG);
	CHECK_EQ_INT(probe_psi_parse(SOME "1\n" FULL "1\n" FULL "1\n", &t),
		     -EBADMSG);
	/* damaged fields */
	CHECK_EQ_INT(probe_psi_parse(SOME "-1\n", &t), -EBADMSG);
	CHECK_EQ_INT(probe_psi_parse(SOME "1.5\n", &t), -EBADMSG);
	CHECK_EQ_INT(probe_psi_parse(SOME "\n", &t), -EBADMSG);
	CHECK_EQ_INT(probe_psi_parse(SOME "12x\n", &t), -EBADMSG);
	CHECK_EQ_INT(probe_psi_parse(SOME "99999999999999999999999\n", &t),
		     -EBADMSG);
	CHECK_EQ_INT(probe_psi_parse("some avg10=x avg60=0.00 avg300=0.00 "
				     "total=1\n",
				     &t),
		     -EBADMSG);
	CHECK_EQ_INT(probe_psi_parse("some avg10=1. avg60=0.00 avg300=0.00 "
				     "total=1\n",
				     &t),
		     -EBADMSG);
	CHECK_EQ_INT(probe_psi_parse("some avg60=0.00 avg10=0.00 avg300=0.00 "
				     "total=1\n",
				     &t),
		     -EBADMSG);
	CHECK_EQ_INT(probe_psi_parse("some  avg10=0.00 avg60=0.00 avg300=0.00 "
				     "total=1\n",
				     &t),
		     -EBADMSG);
	CHECK_EQ_INT(probe_psi_parse("some avg10=0.00 avg60=0.00 total=1\n",
				     &t),
		     -EBADMSG);
	CHECK_EQ_INT(probe_psi_parse("cpu " SOME "1\n", &t), -EBADMSG);
	/* *ret untouched on failure */
	CHECK(t.some_us == 42);
}

static void check_percent(void)
{
	double pct = -1;

	/* 250 ms of 1 s */
	CHECK_OK(probe_psi_percent(1000, 251000, 1.0, &pct));
	CHECK(pct == 25.0);
	CHECK_OK(probe_psi_percent(7, 7, 0.5, &pct));
	CHECK(pct == 0.0);
	/* 1 of 3: two decimals */
	CHECK_OK(probe_psi_percent(0, 1000, 0.003, &pct));
	CHECK(pct == 33.33);
	/* all of it, and the kernel's clock a few us ahead: at most 100 */
	CHECK_OK(probe_psi_percent(0, 100000, 0.1, &pct));
	CHECK(pct == 100.0);
	CHECK_OK(probe_psi_percent(0, 100040, 0.1, &pct));
	CHECK(pct == 100.0);

	pct = -1;
	CHECK_EQ_INT(probe_psi_percent(10, 9, 1.0, &pct), -ERANGE);
	CHECK_EQ_INT(probe_psi_percent(0, 1, 0.0, &pct), -EINVAL);
	CHECK_EQ_INT(probe_psi_percent(0, 1, -1.0, &pct), -EINVAL);
	CHECK(pct == -1);

	CHECK_EQ_STR(probe_psi_resource(PSI_CPU), "cpu");
	CHECK_EQ_STR(probe_psi_resource(PSI_IO), "io");
	CHECK_EQ_STR(probe_psi_resource(PSI_MEMORY), "memory");
	CHECK(probe_psi_resource(PSI_NRES) == NULL);
}

/* ---- fixture trees ---- */

static void check_fixtures(void)
{
	struct json_object *r;

	/* a 6.8 kernel with PSI on by default */
	r = probe_fixture("psi-present", NULL);
	CHECK(r != NULL);
	CHECK_EQ_INT(jkeys(r, "psi"), 6);
	CHECK(jis(r, "psi.available", json_type_boolean));
	CHECK_EQ_STR(jstr(r, "psi.available"), "true");
	CHECK(jnull(r, "psi.cmdline_psi"));
	CHECK_EQ_STR(jstr(r, "psi.cpu"), "true");
	CHECK_EQ_STR(jstr(r, "psi.io"), "true");
	CHECK_EQ_STR(jstr(r, "psi.memory"), "true");
	CHECK_EQ_STR(jstr(r, "psi.cpu_full"), "true");
	json_object_put(r);

	/* Debian's kernel without psi=1: no /proc/pressure */
	r = probe_fixture("psi-absent", NULL);
	CHECK(r != NULL);
	CHECK_EQ_STR(jstr(r, "psi.available"), "false");
	CHECK(jnull(r, "psi.cmdline_psi"));
	CHECK_EQ_STR(jstr(r, "psi.cpu"), "false");
	CHECK_EQ_STR(jstr(r, "psi.io"), "false");
	CHECK_EQ_STR(jstr(r, "psi.memory"), "false");
	CHECK_EQ_STR(jstr(r, "psi.cpu_full"),
		     "unknown (/proc/pressure/cpu absent)");
	json_object_put(r);

	/* a 5.10 kernel booted "psi=0 ... psi=1 ... -- psi=0": the last
	 * kernel parameter wins, what follows "--" is init's; cpu has no
	 * full line before 5.13 */
	r = probe_fixture("psi-cmdline", NULL);
	CHECK(r != NULL);
	CHECK_EQ_STR(jstr(r, "psi.available"), "true");
	CHECK_EQ_STR(jstr(r, "psi.cmdline_psi"), "1");
	CHECK_EQ_STR(jstr(r, "psi.cpu"), "true");
	CHECK_EQ_STR(jstr(r, "psi.cpu_full"), "false");
	json_object_put(r);

	/* the other trees have no /proc/pressure either */
	r = probe_fixture("kvm-guest", NULL);
	CHECK_EQ_STR(jstr(r, "psi.available"), "false");
	CHECK(jnull(r, "psi.cmdline_psi"));
	json_object_put(r);
}

/* A tree with the given pressure files (NULL: left out) and cmdline. */
static struct json_object *probe_tree(const char *cpu, const char *io,
				      const char *memory, const char *cmdline)
{
	char *root = tree_new();
	struct probe_opts opts = { .root = root };
	struct json_object *r;

	if (cpu)
		tree_put(root, "proc/pressure/cpu", cpu, -1);
	if (io)
		tree_put(root, "proc/pressure/io", io, -1);
	if (memory)
		tree_put(root, "proc/pressure/memory", memory, -1);
	if (cmdline)
		tree_put(root, "proc/cmdline", cmdline, -1);
	r = probe_fixture_opts(NULL, NULL, &opts);
	tree_free(root);
	return r;
}

static void check_damaged(void)
{
	const char *ok = SOME "1\n" FULL "1\n";
	struct json_object *r;

	/* a damaged io file: unknown with the reason, so not available */
	r = probe_tree(ok, SOME "12", ok, "ro psi=1\n");
	CHECK_EQ_STR(jstr(r, "psi.available"), "false");
	CHECK_EQ_STR(jstr(r, "psi.cpu"), "true");
	CHECK_EQ_STR(jstr(r, "psi.io"),
		     "unknown (malformed: /proc/pressure/io is truncated)");
	CHECK_EQ_STR(jstr(r, "psi.memory"), "true");
	CHECK_EQ_STR(jstr(r, "psi.cmdline_psi"), "1");
	json_object_put(r);

	r = probe_tree("pressure\n", ok, ok, "ro\n");
	CHECK_EQ_STR(jstr(r, "psi.cpu"),
		     "unknown (malformed: /proc/pressure/cpu is not in the "
		     "pressure format)");
	CHECK_EQ_STR(jstr(r, "psi.cpu_full"),
		     "unknown (malformed: /proc/pressure/cpu is not in the "
		     "pressure format)");
	CHECK_EQ_STR(jstr(r, "psi.available"), "false");
	json_object_put(r);

	/* only memory missing; no command line at all */
	r = probe_tree(ok, ok, NULL, NULL);
	CHECK_EQ_STR(jstr(r, "psi.available"), "false");
	CHECK_EQ_STR(jstr(r, "psi.memory"), "false");
	CHECK_EQ_STR(jstr(r, "psi.cpu_full"), "true");
	CHECK_EQ_STR(jstr(r, "psi.cmdline_psi"), "unknown (absent)");
	json_object_put(r);

	/* psi= with a quoted value, and a later psi without one */
	r = probe_tree(ok, ok, ok, "ro psi=\"0\" psi quiet\n");
	CHECK_EQ_STR(jstr(r, "psi.cmdline_psi"), "0");
	CHECK_EQ_STR(jstr(r, "psi.available"), "true");
	json_object_put(r);
}

/* ---- the running machine ---- */

static void check_real(void)
{
	struct probe_opts opts = { .root = "/", .work_dir = "/var/tmp" };
	struct json_object *r = NULL;
	bool all = true;

	CHECK_OK(probe_run(&opts, &r));
	for (int i = 0; i < PSI_NRES; i++) {
		const char *name = probe_psi_resource((enum probe_psi_res)i);
		char path[64], key[32];
		bool here;

		snprintf(path, sizeof(path), "/proc/pressure/%s", name);
		snprintf(key, sizeof(key), "psi.%s", name);
		here = access(path, R_OK) == 0;
		all &= here;
		CHECK_EQ_STR(jstr(r, key), here ? "true" : "false");
	}
	CHECK_EQ_STR(jstr(r, "psi.available"), all ? "true" : "false");
	if (all)
		CHECK(jis(r, "psi.cpu_full", json_type_boolean));
	printf("this machine: psi.available %s, cmdline_psi %s\n",
	       jstr(r, "psi.available"), jstr(r, "psi.cmdline_psi"));
	json_object_put(r);
}

int main(void)
{
	check_parse();
	check_percent();
	check_fixtures();
	check_damaged();
	check_real();
	return check_summary();
}
