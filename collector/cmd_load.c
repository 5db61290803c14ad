/* SPDX-License-Identifier: MIT */
/*
 * fleetbench-collector load: reports as JSON on standard input, as
 * `fleetbench-agent show` prints them (proto/pbjson.h's mapping), one
 * object after another, stored by the path serve takes: read into a
 * Report (pbjson_to_message), packed and unpacked by the codec (every
 * check of docs/wire.md, the probe's derived capabilities included),
 * encoded by ingest_report_params() and committed in batches of batch_max
 * by pg_batch, fleetbench_ingest_run() and fleetbench_ingest_end() as for
 * serve. For a host that cannot reach the collector (its spool's reports
 * carried over by hand), and for the tests and bench/queries, which store
 * their hand-made reports so: there is no other way into the database.
 *
 * One line per report on standard output, in input order: "RUN_ID stored",
 * "RUN_ID duplicate" or "RUN_ID rejected: why" ("report N" for a report
 * without a run_id). Exit status 0 when every report was stored or was a
 * duplicate; 1 when one was rejected, the input is no JSON, or the
 * database failed (the batches committed before stay; the rest are not
 * stored, and a line "RUN_ID not stored: why" says so).
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cleanup.h"
#include "cmd.h"
#include "codec.h"
#include "ingest.h"
#include "log.h"
#include "pbjson.h"
#include "pg_batch.h"

#define LOAD_CHUNK (64u << 10)

struct load_item {
	char name[40]; /* the run_id, or "report N" */
	struct pgparam params;
	/* refused by the codec: why (its line waits for the batch's, so
	 * that the lines keep the input's order) */
	char *why;
};

struct load {
	struct pg *pg;
	struct load_item *items;
	struct pg_item *pg_items;
	size_t n, max;
	unsigned long seen, stored, duplicate, rejected, failed;
};

static void load_line(const char *name, const char *what, const char *why)
{
	printf("%s %s%s%s\n", name, what, why ? ": " : "", why ? why : "");
}

/* Prints the batch's lines in input order and empties it: what pg says
 * of each report sent (result), or that it was refused before. */
static void load_answer(struct load *l, const char *failed)
{
	for (size_t i = 0; i < l->n; i++) {
		struct load_item *it = &l->items[i];
		enum pg_item_result r = l->pg_items[i].result;

		if (it->why) {
			load_line(it->name, "rejected", it->why);
			l->rejected++;
		} else if (failed) {
			load_line(it->name, "not stored", failed);
			l->failed++;
		} else if (r == PG_ITEM_DUPLICATE) {
			load_line(it->name, "duplicate", NULL);
			l->duplicate++;
		} else {
			load_line(it->name, "stored", NULL);
			l->stored++;
		}
		free(it->why);
		it->why = NULL;
		pgparam_release(&it->params);
	}
	l->n = 0;
}

/* Waits for and reads the batch in flight: pg_batch_step()'s result. */
static int load_wait(struct load *l, char err[PG_ERR_LEN])
{
	int r;

	while ((r = pg_batch_step(l->pg, err)) == 0) {
		struct pollfd pfd = {.fd = pg_socket(l->pg),
				     .events = pg_batch_events(l->pg)};

		if (poll(&pfd, 1, -1) < 0 && errno != EINTR) {
			snprintf(err, PG_ERR_LEN, "poll: %s", strerror(errno));
			return -EIO;
		}
	}
	return r;
}

/*
 * Stores the batch in hand: a report the database finds at fault is
 * rejected and the others sent again without it. Returns 0, or -1 when
 * the database failed (the batch's reports are reported not stored).
 */
static int load_flush(struct load *l)
{
	char err[PG_ERR_LEN];
	int r;

	for (;;) {
		for (size_t i = 0; i < l->n; i++)
			l->pg_items[i] = (struct pg_item){
				.params = l->items[i].why ?
						  NULL :
						  &l->items[i].params};
		r = pg_batch_send(l->pg, l->pg_items, l->n, err);
		if (r == -ENODATA) /* none to send: all refused, or none */
			r = 1;
		else if (r == 0)
			r = load_wait(l, err);
		if (r == 1) {
			load_answer(l, NULL);
			return 0;
		}
		if (r != -EINVAL) {
			load_answer(l, err);
			return -1;
		}
		/* one report at fault rolled the batch back: without it */
		for (size_t i = 0; i < l->n; i++) {
			struct load_item *it = &l->items[i];

			if (l->pg_items[i].result != PG_ITEM_INVALID)
				continue;
			it->why = strdup(l->pg_items[i].err);
			if (!it->why)
				return log_error("out of memory");
			pgparam_release(&it->params);
		}
	}
}

/* Reads, checks and encodes one report into the batch; stores the batch
 * when full. Returns 0, or -1 when the database failed. */
static int load_report(struct load *l, struct json_object *o)
{
	char err[CODEC_ERR_LEN > PG_ERR_LEN ? CODEC_ERR_LEN : PG_ERR_LEN];
	ProtobufCMessage *m = NULL;
	Fleetbench__Report *rep = NULL;
	_cleanup_free_ uint8_t *buf = NULL;
	struct load_item *it = &l->items[l->n];
	struct json_object *id;
	size_t len;
	int r;

	l->seen++;
	pgparam_init(&it->params);
	it->why = NULL;
	snprintf(it->name, sizeof(it->name), "report %lu", l->seen);
	if (json_object_object_get_ex(o, "run_id", &id) &&
	    json_object_is_type(id, json_type_string) &&
	    codec_uuid_valid(json_object_get_string(id)))
		snprintf(it->name, sizeof(it->name), "%s",
			 json_object_get_string(id));

	if (!json_object_is_type(o, json_type_object)) {
		snprintf(err, sizeof(err), "not a JSON object");
		r = -EINVAL;
	} else {
		r = pbjson_to_message(&fleetbench__report__descriptor, o, &m,
				      err);
	}
	if (r == 0) {
		r = codec_pack_report((Fleetbench__Report *)m, &buf, &len);
		if (r == -E2BIG)
			snprintf(err, sizeof(err),
				 "the report is larger than a message may be");
		else if (r < 0)
			snprintf(err, sizeof(err), "cannot pack: %s",
				 strerror(-r));
	}
	if (m)
		protobuf_c_message_free_unpacked(m, NULL);
	if (r == 0)
		r = codec_unpack_report(buf, len, &rep, err);
	if (r == 0)
		r = ingest_report_params(rep, &it->params, err);
	codec_free_report(rep);
	if (r == -ENOMEM || (r < 0 && !(it->why = strdup(err)))) {
		pgparam_release(&it->params);
		return log_error("out of memory");
	}
	if (++l->n == l->max)
		return load_flush(l);
	return 0;
}

/* Whether s[0..n) is all JSON whitespace. */
static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strchr(" \t\r\n", s[i]))
			return false;
	return true;
}

/* Reads the JSON objects of standard input, one after another. Returns 0,
 * or -1 when the input is no JSON or a batch failed (logged). */
static int load_stream(struct load *l)
{
	_cleanup_free_ char *buf = malloc(LOAD_CHUNK);
	struct json_tokener *tok = json_tokener_new();
	bool pending = false; /* part of an object read */
	size_t got;
	int ret = 0;

	if (!buf || !tok) {
		json_tokener_free(tok);
		return log_error("out of memory");
	}
	while (ret == 0 && (got = fread(buf, 1, LOAD_CHUNK, stdin)) > 0) {
		size_t off = 0;

		while (ret == 0 && off < got) {
			struct json_object *o;
			enum json_tokener_error e;

			if (!pending && blank(buf + off, got - off))
				break;
			o = json_tokener_parse_ex(tok, buf + off,
						  (int)(got - off));
			e = json_tokener_get_error(tok);
			if (e == json_tokener_continue) {
				pending = true;
				break;
			}
			if (e != json_tokener_success) {
				ret = log_error("standard input, after report "
						"%lu: not JSON: %s",
						l->seen,
						json_tokener_error_desc(e));
				break;
			}
			off += json_tokener_get_parse_end(tok);
			json_tokener_reset(tok);
			pending = false;
			if (load_report(l, o) < 0)
				ret = -1;
			json_object_put(o);
		}
	}
	if (ret == 0 && ferror(stdin))
		ret = log_error("standard input: %s", strerror(errno));
	if (ret == 0 && pending)
		ret = log_error("standard input ends inside report %lu",
				l->seen + 1);
	json_tokener_free(tok);
	return ret;
}

int cmd_load(const struct collector_config *cfg)
{
	struct db d = {0};
	struct load l = {0};
	int ret = 1;

	if (isatty(STDIN_FILENO)) {
		log_error("load reads reports as JSON from standard input: "
			  "fleetbench-collector load < reports.json");
		return 2;
	}
	if (db_open(&d, cfg) < 0 || db_check_schema(&d, "load") < 0)
		goto out;
	l.pg = d.pg;
	l.max = (size_t)cfg->batch_max;
	l.items = calloc(l.max, sizeof(*l.items));
	l.pg_items = calloc(l.max, sizeof(*l.pg_items));
	if (!l.items || !l.pg_items) {
		log_error("out of memory");
		goto out;
	}
	/* what was read before bad input is stored all the same */
	ret = load_stream(&l) < 0;
	if (load_flush(&l) < 0 || l.rejected)
		ret = 1;
	fflush(stdout);
	log_info("%lu reports: %lu stored, %lu duplicate, %lu rejected, %lu "
		 "not stored",
		 l.seen, l.stored, l.duplicate, l.rejected, l.failed);
out:
	for (size_t i = 0; i < l.n; i++) {
		pgparam_release(&l.items[i].params);
		free(l.items[i].why);
	}
	free(l.items);
	free(l.pg_items);
	db_release(&d);
	return ret;
}
