/* SPDX-License-Identifier: MIT */
/* The host and kernel probes' parsers on their own: CPU lists, cpuinfo
 * fields and the kernel command line (test_probe_host.c runs the probes). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "probe_host.h"
#include "probe_kernel.h"
#include "probe_test.h"

static int64_t cpulist(const char *s)
{
	int64_t n = -1;

	return host_parse_cpulist(s, &n) < 0 ? -1 : n;
}

static void test_cpulist(void)
{
	CHECK_EQ_INT(cpulist("0"), 1);
	CHECK_EQ_INT(cpulist("0-3"), 4);
	CHECK_EQ_INT(cpulist("0-3,8-11"), 8);
	CHECK_EQ_INT(cpulist("0,2,4-5,63"), 5);
	CHECK_EQ_INT(cpulist("5-5"), 1);
	CHECK_EQ_INT(cpulist("0-8191"), 8192);
	CHECK_EQ_INT(cpulist(""), -1);
	CHECK_EQ_INT(cpulist("0-"), -1);
	CHECK_EQ_INT(cpulist("-1"), -1);
	CHECK_EQ_INT(cpulist("3-1"), -1);
	CHECK_EQ_INT(cpulist("1,,2"), -1);
	CHECK_EQ_INT(cpulist("1,"), -1);
	CHECK_EQ_INT(cpulist(",1"), -1);
	CHECK_EQ_INT(cpulist("1,0"), -1);
	CHECK_EQ_INT(cpulist("0-3,2-5"), -1);
	CHECK_EQ_INT(cpulist("0 - 3"), -1);
	CHECK_EQ_INT(cpulist("0-3\n"), -1);
	CHECK_EQ_INT(cpulist("0x1"), -1);
	CHECK_EQ_INT(cpulist("garbage"), -1);
	CHECK_EQ_INT(cpulist("0-99999999999999999999"), -1);
	CHECK_EQ_INT(cpulist("0-7:2/4"), -1);
}

static void test_cpuinfo_field(void)
{
	const char *x86 = "processor\t: 0\n"
			  "vendor_id\t: GenuineIntel\n"
			  "cpu family\t: 6\n"
			  "model\t\t: 85\n"
			  "model name\t: Intel(R) Xeon(R)  CPU  \n"
			  "power management:\n"
			  "\n"
			  "processor\t: 1\n"
			  "vendor_id\t: AuthenticAMD\n"
			  "flags\t\t: fpu\n"
			  "\n";
	char buf[64];

	CHECK_EQ_INT(host_cpuinfo_field(x86, "vendor_id", buf, sizeof(buf)),
		     0);
	CHECK_EQ_STR(buf, "GenuineIntel");
	CHECK_EQ_INT(host_cpuinfo_field(x86, "model name", buf, sizeof(buf)),
		     0);
	CHECK_EQ_STR(buf, "Intel(R) Xeon(R)  CPU");
	CHECK_EQ_INT(host_cpuinfo_field(x86, "model", buf, sizeof(buf)), 0);
	CHECK_EQ_STR(buf, "85");
	/* "cpu family" is not "cpu"; "flags" is only in the second block. */
	CHECK_EQ_INT(host_cpuinfo_field(x86, "cpu", buf, sizeof(buf)),
		     -ENOENT);
	CHECK_EQ_INT(host_cpuinfo_field(x86, "flags", buf, sizeof(buf)),
		     -ENOENT);
	CHECK_EQ_INT(host_cpuinfo_field(x86, "power management", buf,
					sizeof(buf)),
		     -EBADMSG);
	CHECK_EQ_INT(host_cpuinfo_field(x86, "vendor_id", buf, 8), -EBADMSG);
	CHECK_EQ_INT(host_cpuinfo_field("vendor_id\t: Genu", "vendor_id", buf,
					sizeof(buf)),
		     -EBADMSG);
	CHECK_EQ_INT(host_cpuinfo_field("", "vendor_id", buf, sizeof(buf)),
		     -ENOENT);
	CHECK_EQ_INT(host_cpuinfo_field("vendor_id GenuineIntel\n",
					"vendor_id", buf, sizeof(buf)),
		     -ENOENT);
}

static struct json_object *cmdline(const char *s)
{
	struct json_object *o = json_object_new_object();

	CHECK_OK(kernel_parse_cmdline(s, o));
	return o;
}

static void test_cmdline(void)
{
	struct json_object *o;

	o = cmdline("");
	CHECK(jnull(o, "transparent_hugepage"));
	CHECK(jnull(o, "default_hugepagesz"));
	CHECK_EQ_INT(jlen(o, "hugepagesz"), 0);
	CHECK_EQ_INT(jlen(o, "hugepages"), 0);
	CHECK_EQ_INT(jlen(o, "hugepage_pools"), 0);
	json_object_put(o);

	/* A quoted value keeps its spaces; a bare key sets nothing. */
	o = cmdline("transparent_hugepage=\"always  x\" default_hugepagesz "
		    "\"default_hugepagesz=2M\"");
	CHECK_EQ_STR(jstr(o, "transparent_hugepage"), "always  x");
	CHECK_EQ_STR(jstr(o, "default_hugepagesz"), "2M");
	json_object_put(o);

	/* Each hugepages= takes the latest hugepagesz= before it. */
	o = cmdline("hugepagesz=1G hugepages=2 hugepages=3 hugepagesz=2M "
		    "hugepagesz=64K hugepages=0 hugepages=1:4,0:1,");
	CHECK_EQ_INT(jlen(o, "hugepagesz"), 3);
	CHECK_EQ_STR(jstr(o, "hugepagesz[2]"), "64K");
	CHECK_EQ_INT(jlen(o, "hugepage_pools"), 4);
	CHECK_EQ_STR(jstr(o, "hugepage_pools[0].size"), "1G");
	CHECK_EQ_INT(jint(o, "hugepage_pools[0].count"), 2);
	CHECK_EQ_STR(jstr(o, "hugepage_pools[1].size"), "1G");
	CHECK_EQ_INT(jint(o, "hugepage_pools[1].count"), 3);
	CHECK_EQ_STR(jstr(o, "hugepage_pools[2].size"), "64K");
	CHECK_EQ_INT(jint(o, "hugepage_pools[2].count"), 0);
	CHECK_EQ_STR(jstr(o, "hugepage_pools[3].count"),
		     "unknown (malformed: hugepages=1:4,0:1, is not a page "
		     "count)");
	json_object_put(o);

	o = cmdline("hugepages=-1 hugepages= hugepages=99999999999999999999 "
		    "hugepages=0:");
	CHECK_EQ_INT(jlen(o, "hugepages"), 4);
	CHECK_EQ_STR(jstr(o, "hugepages[1]"), "");
	for (int i = 0; i < 4; i++) {
		char path[64];

		snprintf(path, sizeof(path), "hugepage_pools[%d].count", i);
		CHECK(item_is_unknown(jget(o, path)));
		snprintf(path, sizeof(path), "hugepage_pools[%d].size", i);
		CHECK_EQ_STR(jstr(o, path), "default");
	}
	json_object_put(o);

	/* "--" ends the kernel's part, but only as a parameter of its own. */
	o = cmdline("a=-- --x=1 transparent_hugepage=never --\t"
		    "transparent_hugepage=always hugepages=1");
	CHECK_EQ_STR(jstr(o, "transparent_hugepage"), "never");
	CHECK_EQ_INT(jlen(o, "hugepages"), 0);
	json_object_put(o);

	/* An unterminated quote runs to the end of the line. */
	o = cmdline("x=\"a b transparent_hugepage=always");
	CHECK(jnull(o, "transparent_hugepage"));
	json_object_put(o);
	o = cmdline("\" \"\"=\" transparent_hugepage=\"");
	CHECK_EQ_STR(jstr(o, "transparent_hugepage"), "");
	json_object_put(o);
}

/* The parser's C values, before any item is made of them. */
static void test_cmdline_values(void)
{
	struct kernel_cmdline c;

	CHECK_OK(kernel_cmdline_parse("transparent_hugepage=never "
				      "hugepagesz=1G hugepages=0:2,1:3 "
				      "default_hugepagesz=2M hugepages=x "
				      "transparent_hugepage=madvise",
				      &c));
	CHECK_EQ_STR(c.thp, "madvise");
	CHECK_EQ_STR(c.default_size, "2M");
	CHECK_EQ_INT(c.n_sizes, 1);
	CHECK_EQ_STR(c.sizes[0], "1G");
	CHECK_EQ_INT(c.n_pools, 2);
	CHECK_EQ_STR(c.pools[0].size, "1G");
	CHECK_EQ_STR(c.pools[0].count, "0:2,1:3");
	CHECK(c.pools[0].valid);
	CHECK_EQ_INT(c.pools[0].pages, 5);
	CHECK_EQ_STR(c.pools[1].count, "x");
	CHECK(!c.pools[1].valid);
	kernel_cmdline_free(&c);
	CHECK(c.buf == NULL && c.n_pools == 0);

	CHECK_OK(kernel_cmdline_parse("", &c));
	CHECK(c.thp == NULL && c.default_size == NULL);
	CHECK_EQ_INT(c.n_sizes + c.n_pools, 0);
	kernel_cmdline_free(&c);
}

int main(void)
{
	test_cpulist();
	test_cpuinfo_field();
	test_cmdline();
	test_cmdline_values();
	return check_summary();
}
