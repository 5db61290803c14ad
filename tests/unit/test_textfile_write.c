/* SPDX-License-Identifier: MIT */
/*
 * The node_exporter textfile (agent/ship/textfile.h): label values escaped
 * as the text format wants, the text of a sample report line by line (every
 * family's HELP and TYPE before its samples, samples of a family together),
 * the file replaced atomically with mode 0644, and no temporary file left
 * by a failure (a missing or non-directory dir, a rename that fails, a
 * fault injected before the rename).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "figures.h"
#include "cleanup.h"
#include "codec.h"
#include "fault.h"
#include "sample_report.h"
#include "textfile.h"

#define HOST                                                             \
	"provider=\"sample\",instance_type=\"sample-1\",kernel=\"6.1.0-" \
	"sample\""

static char root[] = "/tmp/fleetbench-test-textfile-XXXXXX";

static char *path_of(const char *rel)
{
	static char buf[4][512];
	static int next;
	char *p = buf[next++ % 4];

	snprintf(p, sizeof(buf[0]), "%s/%s", root, rel);
	return p;
}

/* The whole file at path in a new string, or NULL. */
static char *slurp(const char *path)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0;
	FILE *m;
	int c;

	if (!f)
		return NULL;
	m = open_memstream(&buf, &len);
	if (!m)
		return NULL;
	while ((c = fgetc(f)) != EOF)
		fputc(c, m);
	fclose(m);
	return buf;
}

/* Entries of dir, "." and ".." not counted. */
static int entries(const char *dir)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	return n;
}

/* A report as the sample packs it, unpacked (codec_free_report() it). */
static Fleetbench__Report *sample(struct sample_report *s)
{
	char run_id[37], err[CODEC_ERR_LEN];
	Fleetbench__Report *rep = NULL;
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;
	int r = sample_report_pack_new(s, run_id, &buf, &len);

	if (r < 0)
		return NULL;
	r = codec_unpack_report(buf, len, &rep, err);
	if (r < 0) {
		fprintf(stderr, "sample report: %s\n", err);
		codec_free_report(rep);
		return NULL;
	}
	/* fixed times, so that the text is known */
	rep->started_unix_ms = 1700000000000;
	rep->finished_unix_ms = 1700000012500;
	return rep;
}

static void test_escape(void)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{"madvise", "madvise"},
		{"", ""},
		{"a\\b", "a\\\\b"},
		{"say \"hi\"", "say \\\"hi\\\""},
		{"two\nlines", "two\\nlines"},
		{"\\\"\n", "\\\\\\\"\\n"},
		/* tabs and other bytes stay as they are */
		{"a\tb{c}=,", "a\tb{c}=,"},
		{"Caf\xc3\xa9", "Caf\xc3\xa9"},
		/* a stray byte, a cut sequence: U+FFFD each */
		{"x\xffy", "x\xef\xbf\xbdy"},
		{"\xc3", "\xef\xbf\xbd"},
		{"\xe2\x82", "\xef\xbf\xbd\xef\xbf\xbd"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		_cleanup_free_ char *e = textfile_escape(cases[i].in);

		CHECK_EQ_STR(e, cases[i].want);
	}
	{
		_cleanup_free_ char *e = textfile_escape(NULL);

		CHECK_EQ_STR(e, "");
	}
}

/*
 * The text's structure: every sample line's family has its HELP and TYPE
 * lines just before its first sample, no family shows twice, every line
 * ends with a newline and no sample has a timestamp (two fields: the
 * series and the value, the value after the last '}').
 */
static void check_structure(const char *text)
{
	char last[128] = "", help[128] = "", type[128] = "";
	char seen[64][128];
	size_t n_seen = 0;
	const char *p = text;

	CHECK(text[strlen(text) - 1] == '\n');
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char line[4096];

		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		p += len + (nl != NULL);
		if (!strncmp(line, "# HELP ", 7)) {
			sscanf(line + 7, "%127s", help);
			continue;
		}
		if (!strncmp(line, "# TYPE ", 7)) {
			sscanf(line + 7, "%127s", type);
			CHECK_EQ_STR(type, help);
			CHECK(strstr(line, " gauge"));
			continue;
		}
		{
			char name[128];
			const char *brace = strchr(line, '{');
			const char *close = strrchr(line, '}');

			CHECK(brace && close);
			if (!brace || !close)
				continue;
			snprintf(name, sizeof(name), "%.*s",
				 (int)(brace - line), line);
			/* " value", no timestamp after it */
			CHECK(close[1] == ' ' && !strchr(close + 2, ' '));
			if (!strcmp(name, last))
				continue;
			CHECK_EQ_STR(name, type);
			for (size_t i = 0; i < n_seen; i++)
				CHECK_(strcmp(seen[i], name) != 0,
				       "family %s shows twice", name);
			if (n_seen < 64)
				snprintf(seen[n_seen++], 128, "%s", name);
			snprintf(last, sizeof(last), "%s", name);
		}
	}
	CHECK(n_seen > 0);
}

/* The sample report with capabilities, and the lines they make. */
static void test_format(void)
{
	struct sample_report s = {.failed = true};
	Fleetbench__Report *rep = sample(&s);
	Fleetbench__Capabilities caps = FLEETBENCH__CAPABILITIES__INIT;
	Fleetbench__HugepagePool pools[2] = {FLEETBENCH__HUGEPAGE_POOL__INIT,
					     FLEETBENCH__HUGEPAGE_POOL__INIT};
	Fleetbench__HugepagePool *pp[2] = {&pools[0], &pools[1]};
	char *opcodes[] = {"READV", "WRITEV"};
	char *features[] = {"FAST_POLL"};
	Fleetbench__Capabilities *had;
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	static const char *const want[] = {
		"# HELP fleetbench_last_run_timestamp_seconds ",
		"fleetbench_last_run_timestamp_seconds{" HOST
		"} 1700000012.5\n",
		"fleetbench_last_run_duration_seconds{" HOST "} 12.5\n",
		"fleetbench_run_info{" HOST
		",agent_version=\"sample\",profile=\"\",method=\"\"} 1\n",
		"# TYPE fleetbench_capability gauge\n",
		"fleetbench_capability{" HOST
		",name=\"thp_enabled\",value=\"madvise\"} 1\n",
		"fleetbench_capability{" HOST
		",name=\"thp_defrag\",value=\"defer+madvise\"} 1\n",
		"fleetbench_capability{" HOST ",name=\"vm\",value=\"kvm\"} 1\n",
		"fleetbench_capability{" HOST
		",name=\"cpu_model\",value=\"Intel(R) Xeon(R) "
		"\\\"Sample\\\"\"} 1\n",
		"fleetbench_io_uring_setup{" HOST ",result=\"ok\"} 1\n",
		"fleetbench_io_uring_sqpoll{" HOST ",result=\"EPERM\"} 1\n",
		"fleetbench_io_uring_disabled{" HOST "} 2\n",
		"fleetbench_io_uring_opcode{" HOST ",opcode=\"READV\"} 1\n",
		"fleetbench_io_uring_opcode{" HOST ",opcode=\"WRITEV\"} 1\n",
		"fleetbench_io_uring_feature{" HOST
		",feature=\"FAST_POLL\"} 1\n",
		"fleetbench_vcpus{" HOST "} 8\n",
		"fleetbench_memory_bytes{" HOST "} 34359738368\n",
		"fleetbench_hugepages{" HOST ",size_kb=\"2048\"} 512\n",
		"fleetbench_hugepages{" HOST ",size_kb=\"1048576\"} 0\n",
		"fleetbench_hugepages_free{" HOST ",size_kb=\"2048\"} 500\n",
		/* median of 1.5, 2.25, 0.1 */
		"fleetbench_figure{" HOST
		",bench=\"false_sharing\",variant=\"shared\","
		"figure=\"ns_per_increment\",unit=\"ns\"} 1.5\n",
		"fleetbench_figure_repeats{" HOST
		",bench=\"false_sharing\",variant=\"shared\","
		"figure=\"ns_per_increment\"} 3\n",
		"fleetbench_bench_failed{" HOST
		",bench=\"randread\",variant=\"io_uring_sqpoll\","
		"reason=\"SIGSEGV in randread/io_uring_sqpoll (repeat 2 of "
		"3)\"} 1\n",
	};

	CHECK(rep != NULL);
	if (!rep)
		return;
	caps.thp_enabled = "madvise";
	caps.thp_defrag = "defer+madvise";
	caps.vm = "kvm";
	caps.cpu_model = "Intel(R) Xeon(R) \"Sample\"";
	caps.io_uring_setup = "ok";
	caps.sqpoll = "EPERM";
	caps.has_sqpoll_errno = true;
	caps.sqpoll_errno = EPERM;
	caps.has_io_uring_disabled = true;
	caps.io_uring_disabled = 2;
	caps.n_io_uring_opcodes = 2;
	caps.io_uring_opcodes = opcodes;
	caps.n_io_uring_features = 1;
	caps.io_uring_features = features;
	caps.has_vcpus = true;
	caps.vcpus = 8;
	caps.has_memory_kb = true;
	caps.memory_kb = 32 << 20;
	pools[0].size_kb = 2048;
	pools[0].has_nr = pools[0].has_free = true;
	pools[0].nr = 512;
	pools[0].free = 500;
	pools[1].size_kb = 1048576;
	pools[1].has_nr = true; /* free unreadable: no sample */
	caps.n_hugepages = 2;
	caps.hugepages = pp;
	had = rep->capabilities;
	rep->capabilities = &caps;
	CHECK_OK(textfile_format(rep, &text, &len));
	rep->capabilities = had;
	codec_free_report(rep);
	if (!text)
		return;
	CHECK_EQ_INT(len, strlen(text));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECK_(strstr(text, want[i]) != NULL, "no \"%s\" in:\n%s",
		       want[i], text);
	/* left out: what the report does not hold */
	CHECK(!strstr(text, "name=\"thp_shmem_enabled\""));
	CHECK(!strstr(text, "name=\"container\""));
	CHECK(!strstr(text, "fleetbench_hugepages_free{" HOST
			    ",size_kb=\"1048576\"}"));
	/* no skipped benchmark: the family has no lines at all */
	CHECK(!strstr(text, "fleetbench_bench_skipped"));
	/* a failed variant has no figure */
	CHECK(!strstr(text, "fleetbench_figure{" HOST ",bench=\"randread\""));
	check_structure(text);
}

/* Every free-text field holds quotes, backslashes and a newline; the
 * labels, which refuse control characters (the codec's one rule), quotes
 * and backslashes. */
static void test_format_text(void)
{
	struct sample_report s = {.text = "q\"b\\n\nend", .plain_labels = true,
				  .provider = "q\"b\\n",
				  .instance_type = "q\"b\\n"};
	Fleetbench__Report *rep = sample(&s);
	_cleanup_free_ char *text = NULL;
	size_t len;
	const char *e = "q\\\"b\\\\n\\nend", *l = "q\\\"b\\\\n";
	char want[512];

	CHECK(rep != NULL);
	if (!rep)
		return;
	CHECK_OK(textfile_format(rep, &text, &len));
	codec_free_report(rep);
	if (!text)
		return;
	snprintf(
		want, sizeof(want),
		"{provider=\"%s\",instance_type=\"%s\",kernel=\"6.1.0-sample\"",
		l, l);
	CHECK_(strstr(text, want) != NULL, "no '%s' in:\n%s", want, text);
	snprintf(
		want, sizeof(want),
		"fleetbench_bench_skipped{provider=\"%s\",instance_type=\"%s\","
		"kernel=\"6.1.0-sample\",bench=\"%s\",variant=\"%s\",reason=\"%"
		"s\"} 1\n",
		l, l, e, e, e);
	CHECK_(strstr(text, want) != NULL, "no '%s' in:\n%s", want, text);
	snprintf(want, sizeof(want), ",profile=\"%s\",", e);
	CHECK(strstr(text, want) != NULL);
	/* the raw newline never reaches the file inside a value */
	CHECK(!strstr(text, "\nend"));
	check_structure(text);
}

/* Shape 8: four benchmarks and two comparisons, each counted back. */
static void test_format_shaped(void)
{
	struct sample_report s = {.shape = 8};
	Fleetbench__Report *rep = sample(&s);
	_cleanup_free_ char *text = NULL;
	size_t len;
	size_t figures = 0, comparisons = 0;

	CHECK(rep != NULL);
	if (!rep)
		return;
	CHECK_OK(textfile_format(rep, &text, &len));
	for (size_t i = 0; i < rep->n_benchmarks; i++)
		figures += rep->benchmarks[i]->n_metrics;
	for (size_t i = 0; i < rep->n_comparisons; i++)
		comparisons += rep->comparisons[i]->has_ratio;
	if (text) {
		size_t n_fig = 0, n_cmp = 0;

		for (const char *p = text;
		     (p = strstr(p, "\nfleetbench_figure{")); p++)
			n_fig++;
		for (const char *p = text;
		     (p = strstr(p, "\nfleetbench_comparison_ratio{")); p++)
			n_cmp++;
		CHECK_EQ_INT(n_fig, figures);
		CHECK_EQ_INT(n_cmp, comparisons);
		CHECK(comparisons > 0);
		check_structure(text);
	}
	codec_free_report(rep);
}

/*
 * The headline figures by their declarations (proto/figures.def): a
 * comparison of a figure's name gives its ratio, a variant's metric its
 * median, each labelled with the figure, its family and unit; other
 * comparisons and metrics are no headline.
 */
static void test_headline(void)
{
	struct sample_report s = {.shape = 8};
	Fleetbench__Report *rep = sample(&s);
	const struct figure_decl *ratio = figure_find("thp_speedup");
	_cleanup_free_ char *text = NULL;
	size_t len, n = 0;
	char want[512];

	CHECK(rep != NULL && rep->n_comparisons > 0 && rep->n_benchmarks > 0);
	if (!rep || !rep->n_comparisons || !rep->n_benchmarks)
		return;
	CHECK_OK(textfile_format(rep, &text, &len));
	CHECK(text && !strstr(text, "\nfleetbench_headline{"));
	free(TAKE_PTR(text));
	/* the first comparison as thp_speedup's, with its ratio (the
	 * report's parts are the codec's arena's: a name is replaced, not
	 * freed) */
	rep->comparisons[0]->name = (char *)ratio->name;
	rep->comparisons[0]->has_ratio = true;
	rep->comparisons[0]->ratio = 1.25;
	CHECK_OK(textfile_format(rep, &text, &len));
	snprintf(want, sizeof(want),
		 "\nfleetbench_headline{" HOST
		 ",figure=\"thp_speedup\",family=\"%s\",unit=\"%s\"} 1.25\n",
		 ratio->family, ratio->unit);
	CHECK_(text && strstr(text, want), "no \"%s\" in:\n%s", want,
	       text ? text : "");
	for (const char *p = text; p && (p = strstr(p, "\nfleetbench_headline{"));
	     p++)
		n++;
	CHECK_EQ_INT(n, 1);
	if (text)
		check_structure(text);
	codec_free_report(rep);
}

static void test_write(void)
{
	struct sample_report s = {0}, s2 = {.hostname = "other",
					    .kernel_release = "6.12.0-new"};
	Fleetbench__Report *rep = sample(&s), *rep2 = sample(&s2);
	_cleanup_free_ char *want = NULL, *want2 = NULL, *got = NULL,
			    *got2 = NULL, *old = NULL;
	char *file = path_of(TEXTFILE_NAME);
	struct stat st;
	size_t len;
	int fd;

	CHECK(rep && rep2);
	if (!rep || !rep2)
		goto out;
	CHECK_OK(textfile_check_dir(root));
	CHECK_EQ_INT(entries(root), 0);
	CHECK_OK(textfile_format(rep, &want, &len));
	CHECK_OK(textfile_format(rep2, &want2, &len));

	/* a restrictive umask does not make it unreadable to node_exporter */
	umask(077);
	CHECK_OK(textfile_write(rep, root));
	umask(022);
	got = slurp(file);
	CHECK_EQ_STR(got, want);
	CHECK_OK(stat(file, &st));
	CHECK_EQ_INT(st.st_mode & 07777, 0644);
	CHECK_EQ_INT(entries(root), 1);

	/* replaced, not rewritten: a reader of the old file reads it whole */
	fd = open(file, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_OK(textfile_write(rep2, root));
	got2 = slurp(file);
	CHECK_EQ_STR(got2, want2);
	CHECK(strstr(got2, "kernel=\"6.12.0-new\"") != NULL);
	if (fd >= 0) {
		char p[64];

		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		old = slurp(p);
		CHECK_EQ_STR(old, want);
		close(fd);
	}
	CHECK_EQ_INT(entries(root), 1);

	/* a fault before the rename: the old file stays, no temporary */
	setenv(FAULT_ENV, "textfile-before-rename:ENOMEM", 1);
	CHECK_EQ_INT(textfile_write(rep, root), -ENOMEM);
	unsetenv(FAULT_ENV);
	free(got2);
	got2 = slurp(file);
	CHECK_EQ_STR(got2, want2);
	CHECK_EQ_INT(entries(root), 1);

	/* the name taken by a directory: the rename fails, nothing left */
	CHECK_OK(unlink(file));
	CHECK_OK(mkdir(file, 0755));
	CHECK(textfile_write(rep, root) < 0);
	CHECK_EQ_INT(entries(root), 1);
	CHECK_OK(rmdir(file));
out:
	codec_free_report(rep);
	codec_free_report(rep2);
}

static void test_bad_dir(void)
{
	struct sample_report s = {0};
	Fleetbench__Report *rep = sample(&s);
	char *missing = path_of("missing");
	char *plain = path_of("plain");
	FILE *f = fopen(plain, "we");

	CHECK(f != NULL);
	if (f)
		fclose(f);
	CHECK_EQ_INT(textfile_check_dir(missing), -ENOENT);
	CHECK_EQ_INT(textfile_check_dir(plain), -ENOTDIR);
	CHECK_EQ_INT(textfile_check_dir(""), -EINVAL);
	CHECK_EQ_INT(textfile_check_dir(NULL), -EINVAL);
	if (rep) {
		CHECK_EQ_INT(textfile_write(rep, missing), -ENOENT);
		CHECK_EQ_INT(textfile_write(rep, plain), -ENOTDIR);
		CHECK_EQ_INT(textfile_write(rep, ""), -EINVAL);
	}
	/* only the plain file: nothing created anywhere */
	CHECK_EQ_INT(entries(root), 1);
	CHECK_OK(unlink(plain));
	codec_free_report(rep);
}

int main(void)
{
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	test_escape();
	test_format();
	test_format_text();
	test_format_shaped();
	test_headline();
	test_write();
	test_bad_dir();
	rmdir(root);
	return check_summary();
}
