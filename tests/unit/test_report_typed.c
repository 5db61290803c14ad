/* SPDX-License-Identifier: MIT */
/* The probe as the .proto's typed Probe, what report_build() refuses, and
 * the capabilities the collector takes from a report's probe (and refuses
 * beside it when they disagree), through the real codec. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "check.h"
#include "cleanup.h"
#include "clock.h"
#include "codec.h"
#include "pbjson.h"
#include "probe_derive.h"
#include "probe_test.h"
#include "report.h"
#include "test_report.h"

#define FIXTURE "vps-thp-always"

/* report_build() refuses and leaves *ret alone. */
static void check_refused(struct json_object *probe, int expect,
			  const char *needle)
{
	Fleetbench__Report *rep = NULL;
	char err[REPORT_ERR_LEN] = "";
	int64_t t = wall_ms();
	int r = report_build(probe, NULL, t, t, &rep, err);

	CHECK_(r == expect, "report_build: %d (%s), expected %d", r, err,
	       expect);
	CHECK(rep == NULL);
	CHECK_(strstr(err, needle) != NULL, "error '%s' does not say '%s'",
	       err, needle);
	report_free(rep);
}

static void set_path(struct json_object *root, const char *section,
		     const char *key, struct json_object *v)
{
	json_object_object_add(jget(root, section), key, v);
}

static struct json_object *unknown(const char *why)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "unknown", json_object_new_string(why));
	return o;
}

static void test_refusals(void)
{
	struct json_object *probe = probe_fixture(FIXTURE, NULL);
	struct json_object *p;

	CHECK(probe != NULL);
	if (!probe)
		return;

	/* no machine id: the collector could not key the host */
	p = NULL;
	json_object_deep_copy(probe, &p, NULL);
	set_path(p, "host", "machine_id", unknown("absent"));
	check_refused(p, -ENODATA, "machine_id: absent");
	check_refused(p, -ENODATA, "/etc/machine-id");
	json_object_object_del(jget(p, "host"), "machine_id");
	check_refused(p, -ENODATA, "machine_id: missing");
	json_object_put(p);

	p = NULL;
	json_object_deep_copy(probe, &p, NULL);
	set_path(p, "host", "hostname", unknown("EACCES"));
	check_refused(p, -ENODATA, "host.hostname is unknown (EACCES)");
	json_object_put(p);

	p = NULL;
	json_object_deep_copy(probe, &p, NULL);
	set_path(p, "kernel", "release", unknown("absent"));
	check_refused(p, -ENODATA, "kernel.release is unknown (absent)");
	json_object_put(p);

	/* optional kernel strings that are unknown are left unset */
	p = NULL;
	json_object_deep_copy(probe, &p, NULL);
	set_path(p, "kernel", "cmdline", unknown("EACCES"));
	{
		Fleetbench__Report *rep = NULL, *out;
		char err[REPORT_ERR_LEN] = "";

		CHECK_OK(report_build(p, NULL, wall_ms(), wall_ms(), &rep, err));
		if (rep) {
			CHECK(rep->kernel->cmdline == NULL);
			out = round_trip(rep);
			CHECK(out != NULL);
			codec_free_report(out);
		}
		report_free(rep);
	}
	json_object_put(p);

	json_object_put(probe);
}

/* The probe as its typed message walks back to the same JSON. */
static void check_typed(struct json_object *probe, const char *what)
{
	Fleetbench__Probe *typed = NULL;
	struct json_object *back = NULL;
	char err[REPORT_ERR_LEN] = "";
	int r = report_probe(probe, &typed, err);

	CHECK_(r == 0, "%s: report_probe: %d (%s)", what, r, err);
	if (typed)
		back = pbjson_from_message(&typed->base);
	CHECK_(back && json_object_equal(back, probe),
	       "%s: the typed probe walks to other JSON:\n%s", what,
	       back ? json_object_to_json_string(back) : "(none)");
	json_object_put(back);
	if (typed)
		fleetbench__probe__free_unpacked(typed, NULL);
}

/*
 * Every item of every fixture's probe and of this host's is a field of the
 * .proto's Probe, of its type: the typed message walks back to the probe's
 * JSON, equal value for value (and the keys in the same order, which
 * json_object_equal() does not look at: the text is compared too, apart
 * from the steal percentages' trailing zeros). An item the .proto does not
 * hold, or of another type, refuses the report and names the item.
 */
static void test_typed_probe(void)
{
	static const char *const fixtures[] = { "vps-thp-always",
						"baremetal-numa", "kvm-guest",
						"old-kernel", "malformed" };
	struct probe_opts host = { .root = "/", .steal_window_ms = 100 };
	struct json_object *probe = NULL, *p;
	Fleetbench__Probe *typed = NULL;
	char err[REPORT_ERR_LEN];

	for (size_t i = 0; i < ARRAY_SIZE(fixtures); i++) {
		probe = probe_fixture(fixtures[i], NULL);
		CHECK(probe != NULL);
		if (probe)
			check_typed(probe, fixtures[i]);
		json_object_put(probe);
	}
	probe = NULL;
	CHECK_OK(probe_run(&host, &probe));
	if (!probe)
		return;
	check_typed(probe, "this host");

	/* key order: the walk's text is the probe's */
	CHECK_OK(report_probe(probe, &typed, err));
	if (typed) {
		struct json_object *back = pbjson_from_message(&typed->base);
		const char *a, *b;

		/* the steal figures are printed alike on both sides */
		json_object_object_add(jget(probe, "steal"), "percent", NULL);
		json_object_object_add(jget(back, "steal"), "percent", NULL);
		json_object_object_add(jget(probe, "steal"),
				       "since_boot_percent", NULL);
		json_object_object_add(jget(back, "steal"),
				       "since_boot_percent", NULL);
		a = json_object_to_json_string_ext(probe, JSON_C_TO_STRING_PLAIN);
		b = json_object_to_json_string_ext(back, JSON_C_TO_STRING_PLAIN);
		CHECK_EQ_STR(b, a);
		json_object_put(back);
		fleetbench__probe__free_unpacked(typed, NULL);
	}

	/* an item the .proto does not hold */
	p = NULL;
	json_object_deep_copy(probe, &p, NULL);
	set_path(p, "thp", "mthp_sizes", json_object_new_int(3));
	check_refused(p, -EINVAL, "thp.mthp_sizes: not a field of ProbeThp");
	json_object_put(p);

	/* an item of another type, deep in a list */
	p = NULL;
	json_object_deep_copy(probe, &p, NULL);
	json_object_object_add(json_object_array_get_idx(jget(p, "hugetlb.sizes"),
							 0),
			       "nr", json_object_new_string("many"));
	check_refused(p, -EINVAL,
		      "hugetlb.sizes[0].nr: a JSON string, not an integer");
	json_object_put(p);

	/* an unknown item anywhere is data, and walks back as it was */
	p = NULL;
	json_object_deep_copy(probe, &p, NULL);
	set_path(p, "io_uring", "features_mask", unknown("EPERM"));
	set_path(p, "io_uring", "memlock_limit_bytes", unknown("absent"));
	check_typed(p, "unknown items");
	json_object_put(p);
	json_object_put(probe);
}


/* ---- capabilities ---- */

/*
 * Each capability is its probe item when that is a value of the field's
 * type, else unset: written out field by field, not by the agent's table.
 */
static void check_caps(const Fleetbench__Capabilities *c,
		       struct json_object *probe, const char *what)
{
	const struct {
		const char *path, *value;
	} strs[] = {
		{ "thp.enabled.selected", c->thp_enabled },
		{ "thp.defrag.selected", c->thp_defrag },
		{ "thp.shmem_enabled.selected", c->thp_shmem_enabled },
		{ "io_uring.setup", c->io_uring_setup },
		{ "io_uring.sqpoll", c->sqpoll },
		{ "host.cpu_model", c->cpu_model },
		{ "virt.vm.name", c->vm },
		{ "virt.container.name", c->container },
	};
	const struct {
		const char *path;
		bool has;
		int64_t value;
	} ints[] = {
		{ "io_uring.disabled", c->has_io_uring_disabled,
		  c->io_uring_disabled },
		{ "io_uring.setup_errno", c->has_io_uring_setup_errno,
		  c->io_uring_setup_errno },
		{ "io_uring.sqpoll_errno", c->has_sqpoll_errno,
		  c->sqpoll_errno },
		{ "host.vcpus_online", c->has_vcpus, c->vcpus },
		{ "host.memory_total_kb", c->has_memory_kb,
		  (int64_t)c->memory_kb },
	};
	const struct {
		const char *path;
		char **names;
		size_t n;
	} lists[] = {
		{ "io_uring.opcodes", c->io_uring_opcodes,
		  c->n_io_uring_opcodes },
		{ "io_uring.features", c->io_uring_features,
		  c->n_io_uring_features },
	};
	size_t n_sizes = 0;
	int failed = check_fail_;

	for (size_t i = 0; i < ARRAY_SIZE(strs); i++) {
		if (jis(probe, strs[i].path, json_type_string))
			CHECK_EQ_STR(strs[i].value, jstr(probe, strs[i].path));
		else
			CHECK_(strs[i].value == NULL, "%s: %s is set",
			       strs[i].path, strs[i].value);
	}
	for (size_t i = 0; i < ARRAY_SIZE(ints); i++) {
		bool want = jis(probe, ints[i].path, json_type_int);

		CHECK_(ints[i].has == want, "%s: has %d", ints[i].path,
		       ints[i].has);
		if (want && ints[i].has)
			CHECK_EQ_INT(ints[i].value, jint(probe, ints[i].path));
	}
	for (size_t i = 0; i < ARRAY_SIZE(lists); i++) {
		size_t n = jis(probe, lists[i].path, json_type_array) ?
				   jlen(probe, lists[i].path) :
				   0;

		CHECK_EQ_INT(lists[i].n, n);
		for (size_t k = 0; k < n && k < lists[i].n; k++)
			CHECK_EQ_STR(lists[i].names[k],
				     jat(probe, lists[i].path, k));
	}
	for (size_t i = 0; i < jlen(probe, "hugetlb.sizes") &&
			   jlen(probe, "hugetlb.sizes") != (size_t)-1;
	     i++) {
		struct json_object *s = json_object_array_get_idx(
			jget(probe, "hugetlb.sizes"), i);
		const Fleetbench__HugepagePool *h;

		if (!jis(s, "size_kb", json_type_int))
			continue; /* a size without size_kb is left out */
		CHECK(n_sizes < c->n_hugepages);
		if (n_sizes >= c->n_hugepages)
			break;
		h = c->hugepages[n_sizes++];
		CHECK_EQ_INT(h->size_kb, jint(s, "size_kb"));
		CHECK_EQ_INT(h->has_nr, jis(s, "nr", json_type_int));
		CHECK_EQ_INT(h->has_free, jis(s, "free", json_type_int));
		if (h->has_nr)
			CHECK_EQ_INT(h->nr, jint(s, "nr"));
		if (h->has_free)
			CHECK_EQ_INT(h->free, jint(s, "free"));
	}
	CHECK_EQ_INT(c->n_hugepages, n_sizes);
	if (check_fail_ != failed)
		fprintf(stderr, "  (capabilities of %s)\n", what);
}

/*
 * Builds the probe-only report, which carries no capabilities of its own
 * (issue 37: the probe is their one source), round trips it through the
 * codec and returns the capabilities the collector takes from its probe
 * (proto/probe_derive.c), checked against the probe item by item.
 */
static Fleetbench__Capabilities *caps_of(struct json_object *probe,
					 const char *what)
{
	Fleetbench__Report *rep = NULL, *out = NULL;
	Fleetbench__Capabilities *c = NULL;
	char err[REPORT_ERR_LEN] = "";
	int r;

	CHECK_(probe != NULL, "%s: no probe", what);
	if (!probe)
		return NULL;
	r = report_build(probe, NULL, wall_ms(), wall_ms(), &rep, err);
	CHECK_(r == 0, "%s: report_build: %d (%s)", what, r, err);
	CHECK_(!rep || !rep->capabilities, "%s: capabilities beside the probe",
	       what);
	out = rep ? round_trip(rep) : NULL;
	CHECK_(out && out->probe, "%s: the probe lost in the round trip", what);
	if (out && out->probe) {
		CHECK_OK(probe_derive_capabilities(out->probe, &c));
		if (c)
			check_caps(c, probe, what);
	}
	codec_free_report(out);
	report_free(rep);
	return c;
}

static void caps_free(Fleetbench__Capabilities *c)
{
	if (c)
		fleetbench__capabilities__free_unpacked(c, NULL);
}

/* A report of an agent before issue 37 carries its capabilities beside
 * its probe: taken when they agree, refused naming the field when not. */
static void test_caps_disagree(void)
{
	struct fake_sys eperm = { .sqpoll_err = -EPERM };
	struct json_object *probe = probe_fixture("kvm-guest", &eperm);
	Fleetbench__Report *rep = NULL;
	char err[REPORT_ERR_LEN] = "", why[CODEC_ERR_LEN] = "";

	CHECK_OK(report_build(probe, NULL, 1700000000000, 1700000001000, &rep,
			      err));
	if (rep)
		CHECK_OK(probe_derive_capabilities(rep->probe,
						   &rep->capabilities));
	if (rep && rep->capabilities) {
		CHECK_EQ_STR(rep->capabilities->sqpoll, "EPERM");
		CHECK_OK(codec_validate_report(rep, 1700000002000, why));
		free(rep->capabilities->sqpoll);
		rep->capabilities->sqpoll = strdup("ok");
		rep->capabilities->sqpoll_errno = 0;
		CHECK_EQ_INT(codec_validate_report(rep, 1700000002000, why),
			     -EINVAL);
		CHECK_(strstr(why, "capabilities.sqpoll: 'ok', but its probe says 'EPERM' (io_uring.sqpoll)"),
		       "refusal: %s", why);
		/* a field the probe has and the copy lacks */
		free(rep->capabilities->sqpoll);
		rep->capabilities->sqpoll = strdup("EPERM");
		rep->capabilities->sqpoll_errno = EPERM;
		rep->capabilities->has_vcpus = 0;
		CHECK_EQ_INT(codec_validate_report(rep, 1700000002000, why),
			     -EINVAL);
		CHECK_(strstr(why, "capabilities.vcpus differs from its probe's item host.vcpus_online"),
		       "refusal: %s", why);
	}
	report_free(rep);
	json_object_put(probe);
}

static void test_capabilities(void)
{
	static const char *const fixtures[] = { "vps-thp-always",
						"baremetal-numa", "kvm-guest",
						"old-kernel", "malformed" };
	static const struct {
		const char *path, *section, *key, *value;
	} needed[] = {
		{ "host.machine_id", "host", "machine_id",
		  "0123456789abcdef0123456789abcdef" },
		{ "host.hostname", "host", "hostname", "malformed" },
		{ "kernel.release", "kernel", "release", "6.1.0" },
	};
	struct probe_opts host = { .root = "/" };
	struct fake_sys eperm = { .setup_err = -EPERM };
	struct fake_sys no_sqpoll = { .sqpoll_err = -EINVAL, .nr_ops = 3 };
	struct json_object *probe, *p = NULL;
	Fleetbench__Capabilities *c;

	/* every fixture and this host: what the probe says, and valid */
	for (size_t i = 0; i < ARRAY_SIZE(fixtures); i++) {
		probe = probe_fixture(fixtures[i], NULL);
		/* malformed's are unknown too: a report needs these three */
		for (size_t k = 0; probe && k < ARRAY_SIZE(needed); k++)
			if (!jis(probe, needed[k].path, json_type_string))
				set_path(probe, needed[k].section,
					 needed[k].key,
					 json_object_new_string(needed[k].value));
		caps_free(caps_of(probe, fixtures[i]));
		json_object_put(probe);
	}
	probe = NULL;
	CHECK_OK(probe_run(&host, &probe));
	caps_free(caps_of(probe, "this host"));
	json_object_put(probe);

	/* the values themselves, on a fixture whose items are known */
	probe = probe_fixture("baremetal-numa", NULL);
	c = caps_of(probe, "baremetal-numa");
	CHECK(c != NULL);
	if (c) {
		CHECK_EQ_STR(c->thp_enabled, "madvise");
		CHECK_EQ_STR(c->thp_defrag, "defer+madvise");
		CHECK_EQ_STR(c->thp_shmem_enabled, "advise");
		CHECK(c->n_hugepages == 2 && c->hugepages[0]->size_kb == 2048 &&
		      c->hugepages[0]->nr == 1024 &&
		      c->hugepages[0]->free == 1000 &&
		      c->hugepages[1]->size_kb == 1048576);
		CHECK(c->has_vcpus && c->vcpus == 32);
		CHECK(c->has_memory_kb && c->memory_kb == 263843012);
		CHECK_EQ_STR(c->cpu_model,
			     "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz");
		CHECK_EQ_STR(c->io_uring_setup, "ok");
		CHECK(c->has_io_uring_setup_errno &&
		      c->io_uring_setup_errno == 0);
		CHECK(c->n_io_uring_opcodes > 40);
		CHECK_EQ_STR(c->io_uring_opcodes[1], "READV");
		CHECK(c->n_io_uring_features > 0);
		CHECK_EQ_STR(c->vm, "kvm");
	}
	caps_free(c);

	/* unknown or absent items leave their fields unset; a hugetlb size
	 * without its size is left out, one without free keeps the rest */
	json_object_deep_copy(probe, &p, NULL);
	set_path(p, "thp", "enabled", unknown("EACCES"));
	set_path(p, "host", "vcpus_online", unknown("malformed"));
	json_object_object_del(jget(p, "host"), "cpu_model");
	set_path(p, "io_uring", "opcodes", unknown("not tested"));
	json_object_object_add(json_object_array_get_idx(jget(p, "hugetlb.sizes"),
							 0),
			       "size_kb", unknown("absent"));
	json_object_object_add(json_object_array_get_idx(jget(p, "hugetlb.sizes"),
							 1),
			       "free", unknown("absent"));
	c = caps_of(p, "baremetal-numa with unknowns");
	CHECK(c != NULL);
	if (c) {
		CHECK(c->thp_enabled == NULL);
		CHECK_EQ_STR(c->thp_defrag, "defer+madvise");
		CHECK(!c->has_vcpus && c->cpu_model == NULL);
		CHECK_EQ_INT(c->n_io_uring_opcodes, 0);
		CHECK(c->n_hugepages == 1 &&
		      c->hugepages[0]->size_kb == 1048576 &&
		      c->hugepages[0]->has_nr && !c->hugepages[0]->has_free);
	}
	caps_free(c);
	json_object_put(p);

	/* a pool read while it changed (free > nr): the report is whole,
	 * the capabilities its probe gives out of bounds, which the
	 * collector stores as none (collector/report_params.c) */
	p = NULL;
	json_object_deep_copy(probe, &p, NULL);
	json_object_object_add(json_object_array_get_idx(jget(p, "hugetlb.sizes"),
							 0),
			       "free", json_object_new_int64(4096));
	{
		Fleetbench__Report *rep = NULL;
		Fleetbench__Capabilities *bad = NULL;
		char err[REPORT_ERR_LEN];
		char why[CODEC_ERR_LEN];

		CHECK_OK(report_build(p, NULL, 1700000000000, 1700000001000,
				      &rep, err));
		CHECK(rep && rep->capabilities == NULL);
		CHECK(rep && rep->probe->hugetlb->n_sizes > 0 &&
		      rep->probe->hugetlb->sizes[0]->has_free &&
		      rep->probe->hugetlb->sizes[0]->free == 4096);
		if (rep) {
			CHECK_OK(codec_validate_report(rep, 1700000002000,
						       why));
			CHECK_OK(probe_derive_capabilities(rep->probe, &bad));
			CHECK(bad && codec_validate_capabilities(bad, why) < 0);
		}
		caps_free(bad);
		report_free(rep);
	}
	json_object_put(p);
	json_object_put(probe);

	/* io_uring refused: the errno's name and number, nothing tested */
	probe = probe_fixture("kvm-guest", &eperm);
	c = caps_of(probe, "kvm-guest, io_uring EPERM");
	if (c) {
		CHECK_EQ_STR(c->io_uring_setup, "EPERM");
		CHECK(c->has_io_uring_setup_errno &&
		      c->io_uring_setup_errno == EPERM);
		CHECK(c->sqpoll == NULL && !c->has_sqpoll_errno);
		CHECK_EQ_INT(c->n_io_uring_opcodes, 0);
	}
	caps_free(c);
	json_object_put(probe);

	probe = probe_fixture("kvm-guest", &no_sqpoll);
	c = caps_of(probe, "kvm-guest, no SQPOLL");
	if (c) {
		CHECK_EQ_STR(c->sqpoll, "EINVAL");
		CHECK(c->has_sqpoll_errno && c->sqpoll_errno == EINVAL);
		CHECK_EQ_INT(c->n_io_uring_opcodes, 3);
	}
	caps_free(c);
	json_object_put(probe);
}


int main(void)
{
	test_refusals();
	test_typed_probe();
	test_capabilities();
	test_caps_disagree();
	return check_summary();
}
