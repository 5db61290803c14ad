/* SPDX-License-Identifier: MIT */
/* The codec tests' realistic Report (codec_test.h). */
#include "codec_test.h"

const char fixture_probe_json[] =
	"{\"schema\":1,\"kernel\":{\"release\":\"6.1.0-18-cloud-amd64\"},"
	"\"thp\":{\"enabled\":\"always\",\"defrag\":\"madvise\"},"
	"\"labels\":{\"provider\":{\"value\":\"aws\",\"source\":\"flag\"}},"
	"\"hugepages\":[2048,1048576],\"steal_pct\":0.25,"
	"\"note\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xa7\",\"virt\":null}";

void fixture_init(struct fixture *f)
{
	int64_t now = wall_ms();

	memset(f, 0, sizeof(*f));
	fleetbench__report__init(&f->r);
	fleetbench__host__init(&f->host);
	fleetbench__kernel__init(&f->kernel);

	f->host.provider = "aws";
	f->host.instance_type = "m7i.large";
	f->host.region = "eu-west-1";
	f->host.hostname = "ip-10-0-0-17";
	f->host.machine_id = MACHINE_ID;
	f->host.provider_source = "flag";
	f->host.instance_type_source = "dmi";
	f->host.region_source = "config";
	f->kernel.release = "6.1.0-18-cloud-amd64";
	f->kernel.version = "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1";
	f->kernel.cmdline = "BOOT_IMAGE=/vmlinuz root=/dev/nvme0n1p1 ro";

	for (size_t i = 0; i < 6; i++) {
		fleetbench__param__init(&f->p[i]);
		f->pp[i] = &f->p[i];
	}
	f->p[0].key = "chase_bytes";
	f->p[0].value_case = FLEETBENCH__PARAM__VALUE_INT_VALUE;
	f->p[0].int_value = 1LL << 30;
	f->p[1].key = "thp_enabled";
	f->p[1].value_case = FLEETBENCH__PARAM__VALUE_STRING_VALUE;
	f->p[1].string_value = "always";
	f->p[2].key = "target_fraction";
	f->p[2].value_case = FLEETBENCH__PARAM__VALUE_DOUBLE_VALUE;
	f->p[2].double_value = 0.975;
	f->p[3].key = "pinned";
	f->p[3].value_case = FLEETBENCH__PARAM__VALUE_BOOL_VALUE;
	f->p[3].bool_value = 1;
	/* a counter delta may be negative: no rule names it */
	f->p[4].key = "fill_thp_split_page";
	f->p[4].value_case = FLEETBENCH__PARAM__VALUE_INT_VALUE;
	f->p[4].int_value = -3;
	f->p[5].key = "sq_thread_idle_ms";
	f->p[5].value_case = FLEETBENCH__PARAM__VALUE_INT_VALUE;
	f->p[5].int_value = 0;

	for (size_t i = 0; i < 5; i++) {
		f->ns[i] = 71.5 + (double)i * 0.25;
		f->frac[i] = 0.96 + (double)i * 0.01;
		fleetbench__window__init(&f->w[i]);
		f->w[i].has_steal_pct = f->w[i].has_loadavg1 = 1;
		f->w[i].has_wall_s = f->w[i].has_noisy = 1;
		f->w[i].steal_pct = i == 3 ? 100 : 0.5 * (double)i;
		f->w[i].loadavg1 = 0.1 * (double)i;
		f->w[i].wall_s = 1.25 + (double)i;
		f->w[i].noisy = i == 3;
		f->wp[i] = &f->w[i];
	}
	f->w[4].has_steal_pct = 0; /* not measured: left out, not NaN */
	for (size_t i = 0; i < 2; i++) {
		fleetbench__metric__init(&f->m[i]);
		f->mp[i] = &f->m[i];
		f->m[i].n_samples = 5;
		f->m[i].samples = i ? f->frac : f->ns;
		fleetbench__benchmark__init(&f->b[i]);
		f->bp[i] = &f->b[i];
		f->b[i].benchmark = "thp_chase";
	}
	f->m[0].metric = "ns_per_access";
	f->m[0].unit = "ns";
	f->m[1].metric = "huge_fraction";
	f->m[1].unit = "fraction";

	f->b[0].variant = "thp_always";
	f->b[0].n_parameters = 6;
	f->b[0].parameters = f->pp;
	f->b[0].n_metrics = 2;
	f->b[0].metrics = f->mp;
	f->b[0].n_windows = 5;
	f->b[0].windows = f->wp;
	f->b[1].variant = "thp_never";
	f->b[1].skip_reason = "THP mode cannot be set: not root";

	for (size_t i = 0; i < 2; i++) {
		fleetbench__comparison__init(&f->c[i]);
		f->cp[i] = &f->c[i];
		f->c[i].benchmark = "thp_chase";
		f->c[i].metric = "ns_per_access";
		f->c[i].numerator = "thp_never";
		f->c[i].denominator = "thp_always";
	}
	f->c[0].name = "thp_gain";
	f->c[0].has_ratio = f->c[0].has_ci_low = f->c[0].has_ci_high = 1;
	f->c[0].has_level = 1;
	f->c[0].ratio = 1.42;
	f->c[0].ci_low = 1.38;
	f->c[0].ci_high = 1.47;
	f->c[0].level = 0.95;
	f->c[0].method = "ratio of medians, paired percentile bootstrap";
	f->c[1].name = "thp_gain_madvise";
	f->c[1].reason = "thp_never was skipped";

	f->r.schema_version = FLEETBENCH__SCHEMA_VERSION__CURRENT;
	f->r.run_id = RUN_ID;
	f->r.agent_version = "0.1.0";
	f->r.host = &f->host;
	f->r.kernel = &f->kernel;
	f->r.started_unix_ms = now - 90000;
	f->r.finished_unix_ms = now - 1000;
	f->r.probe_json = (char *)fixture_probe_json;
	f->r.n_benchmarks = 2;
	f->r.benchmarks = f->bp;
	f->r.n_comparisons = 2;
	f->r.comparisons = f->cp;
	f->r.profile = "quick";
	f->r.has_seed = 1;
	f->r.seed = 1234567890123LL; /* a multi-byte varint, packed last */
}

char *repeat_char(char c, size_t n)
{
	char *s = malloc(n + 1);

	memset(s, c, n);
	s[n] = '\0';
	return s;
}
