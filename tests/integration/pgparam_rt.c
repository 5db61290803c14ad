/* SPDX-License-Identifier: MIT */
/*
 * Round trips of binary parameters through a real PostgreSQL
 * (tests/integration/test_pgparam_rt.sh starts and migrates it): what
 * db/pgparam encodes, and every attribute of the fleetbench_report that
 * ingest_report_params() makes of a report, are read back by the server as
 * the values they stand for, seen through their text output.
 *
 * usage: pgparam_rt CONNINFO (tests/integration/test_pgparam_rt.sh)
 */
#include <errno.h>
#include <float.h>
#include <libpq-fe.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cleanup.h"
#include "ingest.h"
#include "pgparam.h"
#include "tool.h"

static PGconn *conn;

/* Checks res's n columns against want[i] (NULL: SQL NULL). */
static void check_cols(PGresult *res, const char *const *want, int n,
		       const char *what, const char *col)
{
	CHECK_(PQresultStatus(res) == PGRES_TUPLES_OK, "%s: %s", what,
	       PQerrorMessage(conn));
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		return;
	CHECK_(PQnfields(res) == n, "%s: %d %ss, expected %d", what,
	       PQnfields(res), col, n);
	for (int i = 0; i < n && i < PQnfields(res); i++) {
		const char *got =
			PQgetisnull(res, 0, i) ? NULL : PQgetvalue(res, 0, i);

		if (!want[i])
			CHECK_(!got, "%s: %s %d (%s) is '%s', expected NULL",
			       what, col, i + 1, PQfname(res, i), got);
		else
			CHECK_(got && !strcmp(got, want[i]),
			       "%s: %s %d (%s) is %s%s%s, expected '%s'", what,
			       col, i + 1, PQfname(res, i), got ? "'" : "",
			       got ? got : "NULL", got ? "'" : "", want[i]);
	}
}

/* Sends p's parameters with "SELECT $1::text, ..." and checks each
 * column against want[i]. */
static void check_rt(struct pgparam *p, const char *const *want, int n,
		     const char *what)
{
	char sql[16384];
	size_t len = 0;
	PGresult *res;

	CHECK_EQ_INT(pgparam_finish(p), 0);
	CHECK_(p->n == n, "%s: %d parameters, expected %d", what, p->n, n);
	if (p->n != n)
		return;
	len += (size_t)snprintf(sql, sizeof(sql), "SELECT ");
	for (int i = 1; i <= n; i++)
		len += (size_t)snprintf(sql + len, sizeof(sql) - len,
					"%s$%d::text", i > 1 ? ", " : "", i);
	res = PQexecParams(conn, sql, n, p->types, p->values, p->lengths,
			   p->formats, 0);
	check_cols(res, want, n, what, "parameter");
	PQclear(res);
}

/* Sends p's one parameter as a fleetbench_report and checks each of its
 * attributes, in the type's order, against want[i]. */
static void check_record(struct pgparam *p, const char *const *want, int n,
			 const char *what)
{
	PGresult *res = PQexec(conn,
		"SELECT 'SELECT ' || string_agg(format('(r).%1$I::text AS %1$I', attname), ', ' ORDER BY attnum)"
		" || ' FROM (SELECT $1::fleetbench_report AS r) AS x'"
		" FROM pg_attribute WHERE attrelid = 'fleetbench_report'::regclass"
		" AND attnum > 0 AND NOT attisdropped");
	char *sql = NULL;

	CHECK_EQ_INT(pgparam_finish(p), 0);
	CHECK_(p->n == 1, "%s: %d parameters, expected one record", what, p->n);
	CHECK_(PQresultStatus(res) == PGRES_TUPLES_OK, "%s: %s", what,
	       PQerrorMessage(conn));
	if (PQresultStatus(res) == PGRES_TUPLES_OK)
		sql = strdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	if (!sql || p->n != 1) {
		free(sql);
		return;
	}
	res = PQexecParams(conn, sql, 1, p->types, p->values, p->lengths,
			   p->formats, 0);
	check_cols(res, want, n, what, "attribute");
	PQclear(res);
	free(sql);
}

/* every byte from 0x01 to 0x7f, then some UTF-8 */
static char all_bytes[128 + 16];

static void scalars(void)
{
	struct pgparam p;
	const char *const want[] = {
		/* bool::text is true/false (in arrays t/f) */
		"true", "false", "2147483647", "-2147483648",
		"9223372036854775807", "-9223372036854775808",
		"0.1", "-0", "1.7976931348623157e+308", "5e-324", "NaN",
		"Infinity", "-Infinity",
		"0b1e2c3d-4f50-4617-8829-3a4b5c6d7e8f", "", all_bytes, NULL,
		NULL,
	};

	pgparam_init(&p);
	pgparam_bool(&p, true);
	pgparam_bool(&p, false);
	pgparam_int4(&p, INT32_MAX);
	pgparam_int4(&p, INT32_MIN);
	pgparam_int8(&p, INT64_MAX);
	pgparam_int8(&p, INT64_MIN);
	pgparam_float8(&p, 0.1);
	pgparam_float8(&p, -0.0);
	pgparam_float8(&p, DBL_MAX);
	pgparam_float8(&p, 4.9406564584124654e-324);
	pgparam_float8(&p, NAN);
	pgparam_float8(&p, INFINITY);
	pgparam_float8(&p, -INFINITY);
	pgparam_uuid(&p, "0B1E2C3D-4F50-4617-8829-3A4B5C6D7E8F");
	pgparam_text(&p, "");
	pgparam_text(&p, all_bytes);
	pgparam_text(&p, NULL);
	pgparam_null(&p, PGPARAM_UUID);
	check_rt(&p, want, (int)ARRAY_SIZE(want), "scalars");
	pgparam_release(&p);
}

static void arrays(void)
{
	static const unsigned types[] = { PGPARAM_BOOL,	  PGPARAM_INT4,
					  PGPARAM_INT8,	  PGPARAM_FLOAT8,
					  PGPARAM_TEXT,	  PGPARAM_UUID };
	struct pgparam p;
	const char *const want[] = {
		"{}", "{}", "{}", "{}", "{}", "{}",
		"{t,NULL,f}", "{1,NULL,-1}", "{NULL,-9223372036854775808}",
		"{2.5,NULL,1e-300}",
		"{\"\",NULL,\"NULL\",\"q\\\"b\\\\s{x},y 'é\tz\",abc}",
		"{00000000-0000-0000-0000-000000000001,NULL}", "{NULL}",
		"1000",
	};

	pgparam_init(&p);
	/* the empty array of each type */
	for (size_t i = 0; i < ARRAY_SIZE(types); i++) {
		pgparam_array_begin(&p, types[i]);
		pgparam_array_end(&p);
	}
	/* NULL elements among values */
	pgparam_array_begin(&p, PGPARAM_BOOL);
	pgparam_bool(&p, true);
	pgparam_null(&p, PGPARAM_BOOL);
	pgparam_bool(&p, false);
	pgparam_array_end(&p);
	pgparam_array_begin(&p, PGPARAM_INT4);
	pgparam_int4(&p, 1);
	pgparam_null(&p, PGPARAM_INT4);
	pgparam_int4(&p, -1);
	pgparam_array_end(&p);
	pgparam_array_begin(&p, PGPARAM_INT8);
	pgparam_null(&p, PGPARAM_INT8);
	pgparam_int8(&p, INT64_MIN);
	pgparam_array_end(&p);
	pgparam_array_begin(&p, PGPARAM_FLOAT8);
	pgparam_float8(&p, 2.5);
	pgparam_null(&p, PGPARAM_FLOAT8);
	pgparam_float8(&p, 1e-300);
	pgparam_array_end(&p);
	/* text elements that array output must quote, and one it need not */
	pgparam_array_begin(&p, PGPARAM_TEXT);
	pgparam_text(&p, "");
	pgparam_text(&p, NULL);
	pgparam_text(&p, "NULL");
	pgparam_text(&p, "q\"b\\s{x},y 'é\tz");
	pgparam_text(&p, "abc");
	pgparam_array_end(&p);
	pgparam_array_begin(&p, PGPARAM_UUID);
	pgparam_uuid(&p, "00000000-0000-0000-0000-000000000001");
	pgparam_null(&p, PGPARAM_UUID);
	pgparam_array_end(&p);
	/* an array of NULLs only */
	pgparam_array_begin(&p, PGPARAM_TEXT);
	pgparam_null(&p, PGPARAM_TEXT);
	pgparam_array_end(&p);
	/* a large array: its length comes back */
	pgparam_array_begin(&p, PGPARAM_FLOAT8);
	for (int i = 0; i < 1000; i++)
		pgparam_float8(&p, i);
	pgparam_array_end(&p);
	CHECK_EQ_INT(pgparam_finish(&p), 0);
	{
		/* the last one through array_length, the others as text */
		PGresult *res = PQexecParams(
			conn, "SELECT array_length($1, 1)::text, $1[1000]::text",
			1, &p.types[p.n - 1], &p.values[p.n - 1],
			&p.lengths[p.n - 1], &p.formats[p.n - 1], 0);

		CHECK_(PQresultStatus(res) == PGRES_TUPLES_OK, "large: %s",
		       PQerrorMessage(conn));
		if (PQresultStatus(res) == PGRES_TUPLES_OK) {
			CHECK_EQ_STR(PQgetvalue(res, 0, 0), "1000");
			CHECK_EQ_STR(PQgetvalue(res, 0, 1), "999");
		}
		PQclear(res);
	}
	p.n--; /* compare the rest as text */
	check_rt(&p, want, (int)ARRAY_SIZE(want) - 1, "arrays");
	pgparam_release(&p);
}

#define ODD "q\"b\\s{x},y 'é\tz"
/* ODD as an element of an array's text output */
#define ODDQ "\"q\\\"b\\\\s{x},y 'é\tz\""

/* A report with every kind of field, edge cases included. */
/* pa as an integer parameter key = v */
static void int_param(Fleetbench__Param *pa, const char *key, int64_t v)
{
	pa->key = (char *)key;
	pa->value_case = FLEETBENCH__PARAM__VALUE_INT_VALUE;
	pa->int_value = v;
}

/* the separator of shape_names' names (044) */
#define SEP "\x1f"

static void report_full(void)
{
	Fleetbench__Host host = FLEETBENCH__HOST__INIT;
	Fleetbench__Kernel kernel = FLEETBENCH__KERNEL__INIT;
	Fleetbench__Capabilities caps = FLEETBENCH__CAPABILITIES__INIT;
	Fleetbench__HugepagePool hp[2] = { FLEETBENCH__HUGEPAGE_POOL__INIT,
					   FLEETBENCH__HUGEPAGE_POOL__INIT };
	Fleetbench__HugepagePool *hpp[2] = { &hp[0], &hp[1] };
	Fleetbench__Method method = FLEETBENCH__METHOD__INIT;
	Fleetbench__Comparison c[2] = { FLEETBENCH__COMPARISON__INIT,
					FLEETBENCH__COMPARISON__INIT };
	Fleetbench__Comparison *cp[2] = { &c[0], &c[1] };
	Fleetbench__Benchmark b[4] = {
		FLEETBENCH__BENCHMARK__INIT, FLEETBENCH__BENCHMARK__INIT,
		FLEETBENCH__BENCHMARK__INIT, FLEETBENCH__BENCHMARK__INIT
	};
	Fleetbench__Benchmark *bp[4] = { &b[0], &b[1], &b[2], &b[3] };
	Fleetbench__Param pa[6] = {
		FLEETBENCH__PARAM__INIT, FLEETBENCH__PARAM__INIT,
		FLEETBENCH__PARAM__INIT, FLEETBENCH__PARAM__INIT,
		FLEETBENCH__PARAM__INIT, FLEETBENCH__PARAM__INIT
	};
	Fleetbench__Param *pap[6] = { &pa[0], &pa[1], &pa[2],
				      &pa[3], &pa[4], &pa[5] };
	Fleetbench__Window w[2] = { FLEETBENCH__WINDOW__INIT,
				    FLEETBENCH__WINDOW__INIT };
	Fleetbench__Window *wp[2] = { &w[0], &w[1] };
	Fleetbench__Metric m[4] = { FLEETBENCH__METRIC__INIT,
				    FLEETBENCH__METRIC__INIT,
				    FLEETBENCH__METRIC__INIT,
				    FLEETBENCH__METRIC__INIT };
	Fleetbench__Metric *m0[2] = { &m[0], &m[1] }, *m3[2] = { &m[2], &m[3] };
	double s0[] = { 3, 1, 2, 10 }, s1[] = { 5, 1, 4 }, s3[] = { 1e-300 };
	char *opcodes[] = { "READV", "WRITEV" };
	char *only[] = { "randread", "seqwrite" };
	Fleetbench__Report r = FLEETBENCH__REPORT__INIT;
	struct pgparam p;
	char err[PG_ERR_LEN];
	Fleetbench__Cost cost = FLEETBENCH__COST__INIT,
			 total = FLEETBENCH__COST__INIT;
	Fleetbench__Cost *costs[] = { &cost };
	const char *const want[INGEST_ATTRS] = {
		/* 1-5 */ "0b1e2c3d-4f50-4617-8829-3a4b5c6d7e8f", "1", ODD,
		"1700000000123", "1700000060456",
		/* 6-13 */ "aws", NULL, "eu-west-1", "flag", NULL, "dmi", ODD,
		"0123456789abcdef0123456789abcdef",
		/* 14-19 */ "6.1.0-13-amd64", NULL, ODD, NULL, "-5",
		"{\"thp\": {\"enabled\":\"always\"}, \"text\": \"é\"}",
		/* 20-26 */ "true", "madvise", NULL, "never", "{2048,1048576}",
		"{4,NULL}", "{NULL,0}",
		/* 27-33 */ "0", "ok", "0", "EPERM", "1", "{READV,WRITEV}", "{}",
		/* 34-38 */ "4", "9223372036854775807", ODD, "kvm", NULL,
		/* 39-52: the key the collector makes from the fields (the
		 * agent's own says less than they do) */
		"quick+chase_accesses=1000000+fault_bytes=64M+file_bytes=1G+iodepth=64+seq_bytes=256M+seq_block=1M+fs_increments=100000+wb_bytes=256M+wb_fsync_bytes=32M+with_database=1+only=randread,seqwrite+randread_file",
		"quick", "3", "134217728",
		"1000000", "67108864", "1073741824", "500", "64", "268435456",
		"1048576", "100000", "{randread,seqwrite}", "true",
		/* 53-63 */ "{thp_speedup," ODDQ "}", "{thp_chase,randread}",
		"{ns_per_access,iops}", "{thp,io_uring}", "{nothp,pread}",
		"{1.25,NULL}", "{1.1,NULL}", "{1.4,NULL}", "{0.95,NULL}",
		"{bootstrap,NULL}", "{NULL," ODDQ "}",
		/* 64-67: the names and kinds in shape_names and
		 * shape_kinds (112-113) */
		NULL, NULL, "{ok,skipped,failed,ok}",
		"{NULL," ODDQ ",\"SIGSEGV in randread/pread\",NULL}",
		/* 68-71 */ "{6,6,6,6}", NULL, NULL,
		/* the values of the kinds but i (the integers: p_int) */
		"{" ODDQ ",0.10000000000000001,true}",
		/* 72-76 */ "{2,2,2,2}", "{0.5,NULL}", "{1.25,NULL}", "{2,3.5}",
		"{f,NULL}",
		/* 77-83 */ "{2,2,2,4}", NULL, NULL, "{2.5,4,NULL,1e-300}",
		"{4,7,0,1}",
		"{7,7,7,8}", "{3,1,2,10,5,1,4,1e-300}",
		/* 84-94: the optional Method fields; absent ones NULL */
		"67108864", "2000000", NULL, NULL, "268435456", "33554432",
		"true", "10", NULL, "3", "0",
		/* 95-96: no tags */ NULL, NULL,
		/* 97-99: the first comparison's target, none for the
		 * second */
		"{0.5,NULL}", "{t,NULL}", "{7,NULL}",
		/* 100-101: the first window's noisy reason and vCPUs */
		"{\"cpu pressure 61.0% > 50%; q\\\"b\\\\s{x},y 'é\tz\",NULL}",
		"{0-1,NULL}",
		/* 102-108: the costs, a benchmark's and the total */
		"{thp_chase,total}", "{1.5,2}", "{0.25,0.5}",
		"{1048576,1048576}", "{0,0}", "{2.5,NULL}", "{3,NULL}",
		/* 109-110: the probe in two, none from an untyped probe */
		NULL, NULL,
		/* 111: the integers, INT64_MIN and 0 among them */
		"{2048,-9223372036854775808,0}",
		/* 112-113: the shape's names joined by U+001F (the
		 * benchmarks, variants, keys, metrics, units) and kinds */
		"thp_chase" SEP "randread" SEP "randread" SEP "seqwrite" SEP
		"thp" SEP "io_uring" SEP "pread" SEP "direct" SEP
		"size_kb" SEP "engine" SEP "frac" SEP "huge" SEP "low" SEP
		"zero" SEP "ns_per_access" SEP "huge_fraction" SEP "mb_s" SEP
		"iops" SEP "ns" SEP "fraction" SEP "MB/s" SEP "1/s",
		"isdbii",
	};
	/* a name holding U+001F: the names and kinds go as arrays */
	const struct {
		int attr;
		const char *want;
	} arrays[] = {
		{ 64, "{thp_chase,randread,randread,seqwrite}" },
		{ 65, "{thp,io_uring,pread,di" SEP "rect}" },
		{ 69, "{size_kb,engine,frac,huge,low,zero}" },
		{ 70, "{i,s,d,b,i,i}" },
		{ 78, "{ns_per_access,huge_fraction,mb_s,iops}" },
		{ 79, "{ns,fraction,MB/s,1/s}" },
		{ 112, NULL },
		{ 113, NULL },
	};
	const char *want2[INGEST_ATTRS];

	host.provider = "aws";
	host.region = "eu-west-1";
	host.provider_source = "flag";
	host.region_source = "dmi";
	host.hostname = ODD;
	host.machine_id = "0123456789abcdef0123456789abcdef";
	kernel.release = "6.1.0-13-amd64";
	kernel.cmdline = ODD;
	hp[0].size_kb = 2048;
	hp[0].has_nr = true;
	hp[0].nr = 4;
	hp[1].size_kb = 1048576;
	hp[1].has_free = true;
	hp[1].free = 0;
	caps.thp_enabled = "madvise";
	caps.thp_shmem_enabled = "never";
	caps.n_hugepages = 2;
	caps.hugepages = hpp;
	caps.has_io_uring_disabled = true;
	caps.io_uring_setup = "ok";
	caps.has_io_uring_setup_errno = true;
	caps.sqpoll = "EPERM";
	caps.has_sqpoll_errno = true;
	caps.sqpoll_errno = 1;
	caps.n_io_uring_opcodes = 2;
	caps.io_uring_opcodes = opcodes;
	caps.has_vcpus = true;
	caps.vcpus = 4;
	caps.has_memory_kb = true;
	caps.memory_kb = INT64_MAX;
	caps.cpu_model = ODD;
	caps.vm = "kvm";
	method.key = "quick+iodepth=64";
	method.profile = "quick";
	method.repeats = 3;
	method.chase_bytes = 134217728;
	method.chase_accesses = 1000000;
	method.fault_bytes = 67108864;
	method.file_bytes = 1073741824;
	method.io_ms = 500;
	method.iodepth = 64;
	method.seq_bytes = 268435456;
	method.seq_block = 1048576;
	method.fs_increments = 100000;
	method.n_only = 2;
	method.only = only;
	method.randread_file = true;
	method.has_mmap_bytes = true;
	method.mmap_bytes = 67108864;
	method.has_mmap_accesses = true;
	method.mmap_accesses = 2000000;
	method.has_wb_bytes = true;
	method.wb_bytes = 268435456;
	method.has_wb_fsync_bytes = true;
	method.wb_fsync_bytes = 33554432;
	method.has_with_database = true;
	method.with_database = true;
	method.has_db_scale = true;
	method.db_scale = 10;
	method.has_db_seconds = true;
	method.db_seconds = 3;
	method.has_writeback_dirty_bytes = true;
	method.writeback_dirty_bytes = 0;
	c[0].name = "thp_speedup";
	c[0].benchmark = "thp_chase";
	c[0].metric = "ns_per_access";
	c[0].numerator = "thp";
	c[0].denominator = "nothp";
	c[0].has_ratio = c[0].has_ci_low = c[0].has_ci_high =
		c[0].has_level = true;
	c[0].ratio = 1.25;
	c[0].ci_low = 1.1;
	c[0].ci_high = 1.4;
	c[0].level = 0.95;
	c[0].method = "bootstrap";
	c[0].has_target_half_width = c[0].has_target_reached =
		c[0].has_rounds = true;
	c[0].target_half_width = 0.5;
	c[0].target_reached = true;
	c[0].rounds = 7;
	c[1].name = ODD;
	c[1].benchmark = "randread";
	c[1].metric = "iops";
	c[1].numerator = "io_uring";
	c[1].denominator = "pread";
	c[1].reason = ODD;
	int_param(&pa[0], "size_kb", 2048);
	pa[1].key = "engine";
	pa[1].value_case = FLEETBENCH__PARAM__VALUE_STRING_VALUE;
	pa[1].string_value = ODD;
	pa[2].key = "frac";
	pa[2].value_case = FLEETBENCH__PARAM__VALUE_DOUBLE_VALUE;
	pa[2].double_value = 0.1;
	pa[3].key = "huge";
	pa[3].value_case = FLEETBENCH__PARAM__VALUE_BOOL_VALUE;
	pa[3].bool_value = true;
	/* integers at both ends (p_int, binary) */
	int_param(&pa[4], "low", INT64_MIN);
	int_param(&pa[5], "zero", 0);
	w[0].has_steal_pct = w[0].has_loadavg1 = w[0].has_wall_s =
		w[0].has_noisy = true;
	w[0].steal_pct = 0.5;
	w[0].loadavg1 = 1.25;
	w[0].wall_s = 2;
	w[0].noisy_reason = "cpu pressure 61.0% > 50%; " ODD;
	w[0].cpus = "0-1";
	w[1].has_wall_s = true;
	w[1].wall_s = 3.5;
	m[0] = (Fleetbench__Metric)FLEETBENCH__METRIC__INIT;
	m[0].metric = "ns_per_access";
	m[0].unit = "ns";
	m[0].n_samples = 4;
	m[0].samples = s0;
	m[1].metric = "huge_fraction";
	m[1].unit = "fraction";
	m[1].n_samples = 3;
	m[1].samples = s1;
	m[2].metric = "mb_s";
	m[2].unit = "MB/s";
	m[3].metric = "iops";
	m[3].unit = "1/s";
	m[3].n_samples = 1;
	m[3].samples = s3;
	b[0].benchmark = "thp_chase";
	b[0].variant = "thp";
	b[0].n_parameters = 6;
	b[0].parameters = pap;
	b[0].n_windows = 2;
	b[0].windows = wp;
	b[0].n_metrics = 2;
	b[0].metrics = m0;
	b[1].benchmark = "randread";
	b[1].variant = "io_uring";
	b[1].skip_reason = ODD;
	b[2].benchmark = "randread";
	b[2].variant = "pread";
	b[2].failure = "SIGSEGV in randread/pread";
	b[3].benchmark = "seqwrite";
	b[3].variant = "direct";
	b[3].n_metrics = 2;
	b[3].metrics = m3;
	r.schema_version = 1;
	r.run_id = "0b1e2c3d-4f50-4617-8829-3a4b5c6d7e8f";
	r.agent_version = ODD;
	r.host = &host;
	r.kernel = &kernel;
	r.started_unix_ms = 1700000000123;
	r.finished_unix_ms = 1700000060456;
	r.probe_json = "{\"thp\": {\"enabled\":\"always\"}, \"text\": \"é\"}";
	r.n_benchmarks = 4;
	r.benchmarks = bp;
	r.n_comparisons = 2;
	r.comparisons = cp;
	r.profile = "";
	r.has_seed = true;
	r.seed = -5;
	r.method = &method;
	r.capabilities = &caps;
	cost.benchmark = "thp_chase";
	cost.wall_s = 1.5;
	cost.cpu_s = 0.25;
	cost.peak_memory_bytes = 1048576;
	cost.has_allowance_s = true;
	cost.allowance_s = 2.5;
	cost.has_rounds = true;
	cost.rounds = 3;
	total.benchmark = "total";
	total.wall_s = 2;
	total.cpu_s = 0.5;
	total.peak_memory_bytes = 1048576;
	r.n_costs = 1;
	r.costs = costs;
	r.cost_total = &total;

	pgparam_init(&p);
	CHECK_EQ_INT(ingest_report_params(&r, &p, err), 0);
	check_record(&p, want, INGEST_ATTRS, "full report");
	memcpy(want2, want, sizeof(want2));
	for (size_t i = 0; i < ARRAY_SIZE(arrays); i++)
		want2[arrays[i].attr - 1] = arrays[i].want;
	b[3].variant = "di" SEP "rect";
	CHECK_EQ_INT(ingest_report_params(&r, &p, err), 0);
	check_record(&p, want2, INGEST_ATTRS, "a name holding U+001F");
	b[3].variant = "direct";

	/* an unsigned value beyond bigint is the report's fault, named */
	method.seq_block = UINT64_MAX;
	CHECK_EQ_INT(ingest_report_params(&r, &p, err), -ERANGE);
	CHECK_EQ_STR(err,
		     "method.seq_block: 18446744073709551615 does not fit a bigint");
	method.seq_block = 1048576;
	method.writeback_dirty_bytes = UINT64_MAX;
	CHECK_EQ_INT(ingest_report_params(&r, &p, err), -ERANGE);
	CHECK_EQ_STR(err,
		     "method.writeback_dirty_bytes: 18446744073709551615 does not fit a bigint");
	method.writeback_dirty_bytes = 0;
	caps.vcpus = 1u << 31;
	CHECK_EQ_INT(ingest_report_params(&r, &p, err), -ERANGE);
	CHECK_EQ_STR(err,
		     "capabilities.vcpus: 2147483648 does not fit an integer");
	pgparam_release(&p);
}

/* An older agent's report: no capabilities, no method, no results. */
static void report_bare(void)
{
	Fleetbench__Host host = FLEETBENCH__HOST__INIT;
	Fleetbench__Kernel kernel = FLEETBENCH__KERNEL__INIT;
	Fleetbench__Report r = FLEETBENCH__REPORT__INIT;
	struct pgparam p;
	char err[PG_ERR_LEN];
	const char *want[INGEST_ATTRS] = { NULL };

	host.hostname = "h";
	host.machine_id = "0123456789abcdef0123456789abcdef";
	kernel.release = "5.10.0";
	r.schema_version = 1;
	r.run_id = "0b1e2c3d-4f50-4617-8829-3a4b5c6d7e80";
	r.agent_version = "0.1";
	r.host = &host;
	r.kernel = &kernel;
	r.started_unix_ms = 0;
	r.finished_unix_ms = 1;
	r.probe_json = "{}";
	r.profile = "standard";
	want[0] = r.run_id;
	want[1] = "1";
	want[2] = "0.1";
	want[3] = "0";
	want[4] = "1";
	want[11] = "h";
	want[12] = host.machine_id;
	want[13] = "5.10.0";
	want[16] = "standard";
	want[18] = "{}";
	want[19] = "false"; /* caps_present; 21-52 NULL */
	for (int i = 53; i <= 83; i++)
		want[i - 1] = "{}";
	/* 84-94 NULL: no method, 95-96 no tags, 97-101 no targets or
	 * windows, 102-108 no costs, 109-110 no typed probe; 111 no
	 * integer parameters, an empty p_int as for any report now */
	want[110] = "{}";
	/* 112-113 NULL: no variants, no shape */

	pgparam_init(&p);
	CHECK_EQ_INT(ingest_report_params(&r, &p, err), 0);
	check_record(&p, want, INGEST_ATTRS, "bare report");
	pgparam_release(&p);
}

/* A record that is not the database's fleetbench_report, by count or by
 * an attribute's type, is refused with 42804: the collector's, not the
 * report's fault (pg_batch: FAILED, sent again later). */
static void record_other(void)
{
	struct pgparam p;

	pgparam_init(&p);
	for (int k = 0; k < 2; k++) {
		PGresult *res;
		const char *state;

		pgparam_reset(&p);
		pgparam_record_begin(&p);
		if (k == 0) {
			pgparam_int4(&p, 1); /* run_id is a uuid */
		} else {
			for (int i = 0; i < INGEST_ATTRS - 1; i++)
				pgparam_null(&p, PGPARAM_TEXT);
		}
		pgparam_record_end(&p);
		CHECK_EQ_INT(pgparam_finish(&p), 0);
		res = PQexecParams(conn, "SELECT $1::fleetbench_report IS NULL",
				   1, p.types, p.values, p.lengths, p.formats,
				   0);
		state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		CHECK_(state && !strcmp(state, "42804"),
		       "record %d: %s, expected SQLSTATE 42804", k,
		       state ? PQerrorMessage(conn) : "accepted");
		PQclear(res);
	}
	/* out of order: a record left open, or ended twice */
	pgparam_reset(&p);
	pgparam_record_begin(&p);
	CHECK_EQ_INT(pgparam_finish(&p), -EINVAL);
	pgparam_reset(&p);
	pgparam_record_begin(&p);
	pgparam_record_end(&p);
	pgparam_record_end(&p);
	CHECK_EQ_INT(pgparam_finish(&p), -EINVAL);
	pgparam_release(&p);
}

int main(int argc, char **argv)
{
	PGresult *res;
	size_t n = 0;

	static const struct tool tool = {
		.name = "pgparam_rt",
		.usage = "usage: pgparam_rt CONNINFO\n",
		.min_args = 1,
		.max_args = 1,
	};

	conn = PQconnectdb(argv[tool_parse(&tool, argc, argv)]);
	if (PQstatus(conn) != CONNECTION_OK) {
		fprintf(stderr, "pgparam_rt: cannot connect: %s",
			PQerrorMessage(conn));
		return 1;
	}
	/* the shortest text that reads back as the same double */
	res = PQexec(conn, "SET extra_float_digits = 1");
	PQclear(res);
	for (int c = 1; c < 128; c++)
		all_bytes[n++] = (char)c;
	memcpy(all_bytes + n, "é€😀", strlen("é€😀"));
	scalars();
	arrays();
	report_full();
	report_bare();
	record_other();
	PQfinish(conn);
	return check_summary();
}
