/* SPDX-License-Identifier: MIT */
/* The method key of a bench run: its profile and what overrides it. */
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"

/* The parameters that change a measured quantity, in the order of
 * proto/fleetbench.proto's Method fields (the key lists them so). */
#define METHOD_FIELDS(X)                            \
	X(repeats, false) X(chase_bytes, true)      \
	X(chase_accesses, false) X(fault_bytes, true) \
	X(file_bytes, true) X(io_ms, false)         \
	X(iodepth, false) X(seq_bytes, true)        \
	X(seq_block, true) X(fs_increments, false)

/* v with the largest binary suffix that divides it exactly ("64M"). */
static void put_size(FILE *f, unsigned long long v)
{
	static const char suffix[] = "KMGT";
	int k = -1;

	while (k < 3 && v && !(v & 1023)) {
		v >>= 10;
		k++;
	}
	fprintf(f, "%llu", v);
	if (k >= 0)
		fputc(suffix[k], f);
}

int bench_method_json(const struct bench_params *p, const char *only,
		      struct json_object **ret)
{
	struct bench_params prof = { 0 };
	_cleanup_free_ char *key = NULL;
	size_t keylen = 0, nran = 0;
	struct json_object *o, *ran;
	FILE *f;

	if (bench_params_profile(&prof, p->profile) < 0)
		return -EINVAL;
	o = json_object_new_object();
	ran = json_object_new_array();
	f = open_memstream(&key, &keylen);
	if (!o || !ran || !f) {
		json_object_put(o);
		json_object_put(ran);
		if (f)
			fclose(f);
		return -ENOMEM;
	}
	fputs(p->profile, f);
	json_object_object_add(o, "profile", json_object_new_string(p->profile));
#define X(field, size)                                                      \
	if ((unsigned long long)p->field != (unsigned long long)prof.field) { \
		fputs("+" #field "=", f);                                     \
		if (size)                                                     \
			put_size(f, (unsigned long long)p->field);            \
		else                                                          \
			fprintf(f, "%lld", (long long)p->field);              \
	}                                                                     \
	json_object_object_add(o, #field,                                     \
			       json_object_new_int64((int64_t)p->field));
	METHOD_FIELDS(X)
#undef X
	for (size_t i = 0; i < bench_count(); i++) {
		const char *name = bench_get(i)->name;

		if (!only || bench_only_has(only, name)) {
			json_object_array_add(ran,
					      json_object_new_string(name));
			nran++;
		}
	}
	/* A subset is its own method; all of them is no subset. */
	if (nran < bench_count()) {
		for (size_t i = 0; i < nran; i++)
			fprintf(f, "%s%s", i ? "," : "+only=",
				json_object_get_string(
					json_object_array_get_idx(ran, i)));
	} else {
		json_object_put(ran);
		ran = json_object_new_array();
	}
	json_object_object_add(o, "only", ran);
	if (p->randread_file)
		fputs("+randread_file", f);
	json_object_object_add(o, "randread_file",
			       json_object_new_boolean(p->randread_file != NULL));
	if (fclose(f) != 0 || !key) {
		json_object_put(o);
		return -ENOMEM;
	}
	json_object_object_add(o, "key", json_object_new_string(key));
	*ret = o;
	return 0;
}
