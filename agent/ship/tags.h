/* SPDX-License-Identifier: MIT */
/*
 * The run's tags (docs/agent.md): `--tag key=value` and agent.conf's
 * `tag = key=value` lines, checked by the codec's rules (proto/codec.h),
 * merged (a key given again takes the later value: a flag overrides the
 * file) and put into the Report. Nothing here logs.
 */
#ifndef FLEETBENCH_TAGS_H
#define FLEETBENCH_TAGS_H

#include <stddef.h>

#include "codec.h"
#include "fleetbench.pb-c.h"

#define TAGS_ERR_LEN 256

struct tags {
	size_t n;
	char *keys[CODEC_MAX_TAGS];
	char *values[CODEC_MAX_TAGS];
};

/*
 * One "key=value" (the first '=' splits): 0, or -EINVAL with why in err
 * (len bytes). The settings table's check of the tag key.
 */
int tags_check_text(const char *text, char *err, size_t len);

/*
 * The '\n'-ended lines of text (NULL: none), each "key=value", into *ret
 * (tags_release() it, also on failure): a key given again replaces its
 * value in place. 0; -EINVAL with err naming the bad line, or saying
 * there are more than CODEC_MAX_TAGS keys; -ENOMEM.
 */
int tags_parse(const char *text, struct tags *ret, char err[TAGS_ERR_LEN]);

void tags_release(struct tags *t);

/* Sets rep->tags to copies of t's (malloc'd: report_free() frees them).
 * 0 or -ENOMEM. */
int tags_to_report(const struct tags *t, Fleetbench__Report *rep);

#endif
