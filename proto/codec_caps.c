/* SPDX-License-Identifier: MIT */
/*
 * The capabilities' rules (docs/wire.md): every capability the collector
 * stores in a typed column keeps the shape its SQL expects.
 */
#include "codec.h"

#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "cleanup.h"
#include "codec_internal.h"

#define CAP_LOWER "abcdefghijklmnopqrstuvwxyz"
#define CAP_DIGITS "0123456789"
#define CAP_UPPER "ABCDEFGHIJKLMNOPQRSTUVWXYZ" CAP_DIGITS "_"

/* Non-empty and only bytes of set (NULL: printable, no control byte). */
static bool cap_text_ok(const char *s, const char *set)
{
	size_t len = strlen(s);

	if (set)
		return len && strspn(s, set) == len;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return len > 0;
}

/*
 * A setup result: "ok" with errno 0, or an errno's name (strerrorname_np,
 * or the probe's "ERRNO_<n>" for a number without one) with errno
 * 1..CODEC_MAX_ERRNO. An errno without its result makes no sense.
 */
static int check_setup(const char *name, const char *result, bool has_errno,
		       int32_t e, char err[CODEC_ERR_LEN])
{
	bool ok;

	if (!result)
		return has_errno ? codec_invalid(err,
						 "capabilities.%s_errno: set without capabilities.%s",
						 name, name) :
				   0;
	ok = !strcmp(result, "ok");
	if (!ok && (result[0] != 'E' || !cap_text_ok(result + 1, CAP_UPPER)))
		return codec_invalid(err,
				     "capabilities.%s: neither \"ok\" nor an errno name (E[A-Z0-9_]+)",
				     name);
	if (has_errno && ok && e != 0)
		return codec_invalid(err,
				     "capabilities.%s_errno: %d, but %s is \"ok\" (expected 0)",
				     name, e, name);
	if (has_errno && !ok && (e < 1 || e > CODEC_MAX_ERRNO))
		return codec_invalid(err,
				     "capabilities.%s_errno: %d is outside [1, %d] for a failed setup",
				     name, e, CODEC_MAX_ERRNO);
	return 0;
}

/* IORING_OP_* or IORING_FEAT_* names without the prefix, each once. */
static int check_iouring_names(const char *field, char *const *names,
			       size_t n, char err[CODEC_ERR_LEN])
{
	size_t earlier = 0;
	ssize_t again = codec_name_repeated((const char *const *)names, n,
					    &earlier);

	for (size_t i = 0; i < n; i++) {
		if (strlen(names[i]) > CODEC_MAX_CAP_NAME)
			return codec_invalid(err,
					     "capabilities.%s[%zu]: %zu bytes, limit %d",
					     field, i, strlen(names[i]),
					     CODEC_MAX_CAP_NAME);
		if (!cap_text_ok(names[i], CAP_UPPER))
			return codec_invalid(err,
					     "capabilities.%s[%zu]: not a name of [A-Z0-9_]",
					     field, i);
		if ((ssize_t)i == again)
			return codec_invalid(err,
					     "capabilities.%s[%zu]: same as %s[%zu]",
					     field, i, field, earlier);
	}
	return 0;
}

static int check_hugepages(const Fleetbench__Capabilities *c,
			   char err[CODEC_ERR_LEN])
{
	for (size_t i = 0; i < c->n_hugepages; i++) {
		const Fleetbench__HugepagePool *h = c->hugepages[i];

		if (h->size_kb < 4 || (h->size_kb & (h->size_kb - 1)))
			return codec_invalid(err,
					     "capabilities.hugepages[%zu].size_kb: %" PRIu64
					     " is not a power of two of at least 4",
					     i, h->size_kb);
		if (i && h->size_kb <= c->hugepages[i - 1]->size_kb)
			return codec_invalid(err,
					     "capabilities.hugepages[%zu].size_kb: %" PRIu64
					     " is not above hugepages[%zu]'s (sizes ascend, each once)",
					     i, h->size_kb, i - 1);
		if (h->has_nr && h->has_free && h->free > h->nr)
			return codec_invalid(err,
					     "capabilities.hugepages[%zu].free: %" PRIu64
					     " is above nr %" PRIu64,
					     i, h->free, h->nr);
	}
	return 0;
}

/*
 * Every capability the collector stores in a typed column keeps the shape
 * the SQL expects (docs/wire.md); the walk has checked UTF-8 and lengths.
 */
int codec_check_capabilities(const Fleetbench__Capabilities *c,
			     char err[CODEC_ERR_LEN])
{
	const struct {
		const char *name, *value, *set, *what;
	} texts[] = {
		{ "thp_enabled", c->thp_enabled, CAP_LOWER "_+", "[a-z_+]" },
		{ "thp_defrag", c->thp_defrag, CAP_LOWER "_+", "[a-z_+]" },
		{ "thp_shmem_enabled", c->thp_shmem_enabled, CAP_LOWER "_+",
		  "[a-z_+]" },
		{ "vm", c->vm, CAP_LOWER CAP_DIGITS "_.+-", "[a-z0-9_.+-]" },
		{ "container", c->container, CAP_LOWER CAP_DIGITS "_.+-",
		  "[a-z0-9_.+-]" },
		{ "cpu_model", c->cpu_model, NULL, "printable" },
	};
	int r;

	for (size_t i = 0; i < ARRAY_SIZE(texts); i++)
		if (texts[i].value &&
		    !cap_text_ok(texts[i].value, texts[i].set))
			return codec_invalid(err, "capabilities.%s: %s, not %s",
					     texts[i].name,
					     *texts[i].value ? "bad bytes" : "empty",
					     texts[i].what);
	if (c->has_io_uring_disabled &&
	    (c->io_uring_disabled < 0 || c->io_uring_disabled > 2))
		return codec_invalid(err,
				     "capabilities.io_uring_disabled: %d is not 0, 1 or 2",
				     c->io_uring_disabled);
	r = check_setup("io_uring_setup", c->io_uring_setup,
			c->has_io_uring_setup_errno, c->io_uring_setup_errno,
			err);
	if (r == 0)
		r = check_setup("sqpoll", c->sqpoll, c->has_sqpoll_errno,
				c->sqpoll_errno, err);
	if (r == 0)
		r = check_iouring_names("io_uring_opcodes", c->io_uring_opcodes,
					c->n_io_uring_opcodes, err);
	if (r == 0)
		r = check_iouring_names("io_uring_features",
					c->io_uring_features,
					c->n_io_uring_features, err);
	if (r == 0)
		r = check_hugepages(c, err);
	if (r < 0)
		return r;
	if (c->has_vcpus && (c->vcpus < 1 || c->vcpus > CODEC_MAX_VCPUS))
		return codec_invalid(err,
				     "capabilities.vcpus: %u is outside [1, %d]",
				     c->vcpus, CODEC_MAX_VCPUS);
	if (c->has_memory_kb && c->memory_kb == 0)
		return codec_invalid(err, "capabilities.memory_kb: 0 is not positive");
	return 0;
}

int codec_validate_capabilities(const Fleetbench__Capabilities *c,
				char err[CODEC_ERR_LEN])
{
	int ret = codec_walk(&c->base, false, true, err);

	return ret < 0 ? ret : codec_check_capabilities(c, err);
}
