/* SPDX-License-Identifier: MIT */
/*
 * Tags (issue 17): the codec's rules for Report.tags (proto/codec_tags.c:
 * keys, values, their count and uniqueness, said naming the tag), the
 * agent's --tag and agent.conf lines (agent/ship/tags.c: checked, merged
 * with a later key overriding, at most CODEC_MAX_TAGS), and a tagged
 * Report through pack and unpack.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cleanup.h"
#include "codec_test.h"
#include "tags.h"

static void test_check_tag(void)
{
	static const struct {
		const char *key, *value, *want;
	} cases[] = {
		{ "env", "prod", "" },
		{ "a", "x", "" },
		{ "team_2", "storage / eu-west (blue)", "" },
		{ "k", "é ü 東京", "" },
		{ "abcdefghijklmnopqrstuvwxyz012345", "v", "" },
		{ "abcdefghijklmnopqrstuvwxyz0123456", "v",
		  "tag: bad key (33 bytes): a key is 1 to 32 of [a-z0-9_], starting with a letter" },
		{ "", "v", "tag: empty key" },
		{ "Env", "v",
		  "tag: bad key (3 bytes): a key is 1 to 32 of [a-z0-9_], starting with a letter" },
		{ "1env", "v",
		  "tag: bad key (4 bytes): a key is 1 to 32 of [a-z0-9_], starting with a letter" },
		{ "env-x", "v",
		  "tag: bad key (5 bytes): a key is 1 to 32 of [a-z0-9_], starting with a letter" },
		{ "env", "", "tag env: empty value" },
		{ "env", "a\tb", "tag env: value holds a control character (byte 1)" },
		{ "env", "ab\x7f", "tag env: value holds a control character (byte 2)" },
		{ "env", "a\xc2\x85", "tag env: value holds a control character (byte 1)" },
		{ "env", "a\xff", "tag env: value is not valid UTF-8 (byte 1)" },
	};
	char err[CODEC_ERR_LEN];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int r;

		err[0] = '\0';
		r = codec_check_tag(cases[i].key, cases[i].value, err);

		CHECK_(r == (*cases[i].want ? -EINVAL : 0) &&
			       !strcmp(err, cases[i].want),
		       "cases[%zu]: %d \"%s\", expected \"%s\"", i, r, err,
		       cases[i].want);
	}
	{
		char *v = repeat_char('v', CODEC_MAX_TAG_VALUE);

		CHECK_EQ_INT(codec_check_tag("env", v, err), 0);
		free(v);
		v = repeat_char('v', CODEC_MAX_TAG_VALUE + 1);
		CHECK_EQ_INT(codec_check_tag("env", v, err), -EINVAL);
		CHECK_EQ_STR(err, "tag env: value is 65 bytes, at most 64");
		free(v);
	}
}

/* The fixture with n tags kN=vN (tags and their storage: the caller's). */
static void set_tags(struct fixture *f, Fleetbench__Tag *t,
		     Fleetbench__Tag **tp, char (*names)[2][16], size_t n)
{
	for (size_t i = 0; i < n; i++) {
		fleetbench__tag__init(&t[i]);
		snprintf(names[i][0], sizeof(names[i][0]), "k%zu", i);
		snprintf(names[i][1], sizeof(names[i][1]), "v%zu", i);
		t[i].key = names[i][0];
		t[i].value = names[i][1];
		tp[i] = &t[i];
	}
	f->r.n_tags = n;
	f->r.tags = tp;
}

static void test_report_tags(void)
{
	Fleetbench__Tag t[CODEC_MAX_TAGS + 1], *tp[CODEC_MAX_TAGS + 1];
	char names[CODEC_MAX_TAGS + 1][2][16];
	struct fixture f;

	fixture_init(&f);
	expect_valid(&f); /* no tags: as from older agents */
	set_tags(&f, t, tp, names, 2);
	expect_valid(&f);
	set_tags(&f, t, tp, names, CODEC_MAX_TAGS);
	expect_valid(&f);
	set_tags(&f, t, tp, names, CODEC_MAX_TAGS + 1);
	expect_invalid(&f, "tags: 17 entries, limit 16");
	set_tags(&f, t, tp, names, 3);
	t[2].key = "k0";
	expect_invalid(&f, "tags[2]: tag k0: the same key as tags[0]");
	t[2].key = "Bad";
	expect_invalid(&f,
		       "tags[2]: tag: bad key (3 bytes): a key is 1 to 32 of [a-z0-9_], starting with a letter");
	t[2].key = "k2";
	t[2].value = "";
	/* the walk says it first: a required string is never empty */
	expect_invalid(&f, "tags[2].value: empty");
	t[2].value = "line\nbreak";
	expect_invalid(&f,
		       "tags[2]: tag k2: value holds a control character (byte 4)");

	/* a tagged report keeps its tags through pack and unpack */
	t[2].value = "v2";
	{
		Fleetbench__Report *u = NULL;
		char err[CODEC_ERR_LEN];
		uint8_t *buf = NULL;
		size_t len;

		CHECK_EQ_INT(codec_pack_report(&f.r, &buf, &len), 0);
		CHECK_EQ_INT(codec_unpack_report(buf, len, &u, err), 0);
		CHECK(u && u->n_tags == 3);
		if (u && u->n_tags == 3) {
			CHECK_EQ_STR(u->tags[1]->key, "k1");
			CHECK_EQ_STR(u->tags[1]->value, "v1");
		}
		codec_free_report(u);
		free(buf);
	}
}

static void test_agent_tags(void)
{
	char err[TAGS_ERR_LEN], why[256];
	Fleetbench__Report rep = FLEETBENCH__REPORT__INIT;
	struct tags t;
	char *many = NULL;
	size_t len = 0;
	FILE *m;

	/* the check of one line, as agent.conf and --tag are */
	CHECK_EQ_INT(tags_check_text("env=prod", why, sizeof(why)), 0);
	CHECK_EQ_INT(tags_check_text("url=a=b", why, sizeof(why)), 0);
	CHECK_EQ_INT(tags_check_text("env", why, sizeof(why)), -EINVAL);
	CHECK_EQ_STR(why, "expected key=value");
	CHECK_EQ_INT(tags_check_text("Env=prod", why, sizeof(why)), -EINVAL);
	CHECK_EQ_STR(why,
		     "tag: bad key (3 bytes): a key is 1 to 32 of [a-z0-9_], starting with a letter");

	/* the file's lines then the flags': a later key overrides in place */
	CHECK_EQ_INT(tags_parse("env=staging\nteam=storage\nenv=prod\nurl=a=b\n",
				&t, err),
		     0);
	CHECK_EQ_INT(t.n, 3);
	CHECK_EQ_STR(t.keys[0], "env");
	CHECK_EQ_STR(t.values[0], "prod");
	CHECK_EQ_STR(t.keys[1], "team");
	CHECK_EQ_STR(t.values[2], "a=b");
	CHECK_EQ_INT(tags_to_report(&t, &rep), 0);
	CHECK_EQ_INT(rep.n_tags, 3);
	CHECK_EQ_STR(rep.tags[0]->key, "env");
	CHECK_EQ_STR(rep.tags[0]->value, "prod");
	for (size_t i = 0; i < rep.n_tags; i++) {
		free(rep.tags[i]->key);
		free(rep.tags[i]->value);
		free(rep.tags[i]);
	}
	free(rep.tags);
	tags_release(&t);

	CHECK_EQ_INT(tags_parse(NULL, &t, err), 0);
	CHECK_EQ_INT(t.n, 0);
	CHECK_EQ_INT(tags_parse("", &t, err), 0);
	CHECK_EQ_INT(t.n, 0);

	CHECK_EQ_INT(tags_parse("env=prod\nteam\n", &t, err), -EINVAL);
	CHECK_EQ_STR(err, "tag 'team': expected key=value");
	tags_release(&t);
	CHECK_EQ_INT(tags_parse("env=prod\nteam=\n", &t, err), -EINVAL);
	CHECK_EQ_STR(err, "tag 'team=': tag team: empty value");
	tags_release(&t);

	/* 16 keys pass, given again they still do; a 17th is refused */
	m = open_memstream(&many, &len);
	CHECK(m != NULL);
	if (!m)
		return;
	for (int i = 0; i < CODEC_MAX_TAGS; i++)
		fprintf(m, "k%d=v\n", i);
	for (int i = 0; i < CODEC_MAX_TAGS; i++)
		fprintf(m, "k%d=w\n", i);
	fflush(m);
	CHECK_EQ_INT(tags_parse(many, &t, err), 0);
	CHECK_EQ_INT(t.n, CODEC_MAX_TAGS);
	CHECK_EQ_STR(t.values[CODEC_MAX_TAGS - 1], "w");
	tags_release(&t);
	fprintf(m, "extra=v\n");
	fclose(m);
	CHECK_EQ_INT(tags_parse(many, &t, err), -EINVAL);
	CHECK_EQ_STR(err,
		     "too many tags: 'extra' would be key 17, at most 16 (agent.conf's tag lines and --tag together)");
	tags_release(&t);
	free(many);
}

int main(void)
{
	test_check_tag();
	test_report_tags();
	test_agent_tags();
	return check_summary();
}
