/* SPDX-License-Identifier: MIT */
/* What more than one of fleetbench-agent's commands does (cmd.h). */
#include "cmd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "database.h"
#include "list.h"
#include "log.h"
#include "output.h"
#include "pbjson.h"
#include "report.h"

void agent_recover(const struct agent_config *cfg)
{
	char what[1024];
	int r = database_recover(arg_root, cfg->spool_dir, cfg->work_dir,
				 what, sizeof(what));

	if (r < 0)
		log_error("%s", what);
	else if (r > 0)
		log_info("%s", what);
}

int agent_print_report(struct json_object *probe,
		       const Fleetbench__BenchRun *bench,
		       const struct bench_params *params)
{
	struct json_object *o = NULL, *b = NULL;

	if (arg_json && bench) {
		b = pbjson_from_message(&bench->base);
		if (!b) {
			log_error("cannot print the report: %s",
				  strerror(errno));
			return ST_FAILURE;
		}
	}
	if (arg_json && probe) {
		/* the probe as the collector stores it: its typed message,
		 * walked by pbjson */
		char err[REPORT_ERR_LEN];
		Fleetbench__Probe *typed;
		int r = report_probe(probe, &typed, err);

		if (r < 0) {
			log_error("cannot print the probe report: %s", err);
			json_object_put(b);
			return ST_FAILURE;
		}
		o = pbjson_from_message(&typed->base);
		fleetbench__probe__free_unpacked(typed, NULL);
		if (!o) {
			log_error("cannot print the probe report: %s",
				  strerror(errno));
			json_object_put(b);
			return ST_FAILURE;
		}
	}
	if (arg_json) {
		if (!o)
			o = TAKE_PTR(b);
		if (b)
			json_object_object_add(o, "bench", TAKE_PTR(b));
		printf("%s\n",
		       json_object_to_json_string_ext(
			       o, JSON_C_TO_STRING_PRETTY |
					  JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else {
		if (probe)
			output_table(stdout, probe);
		if (bench)
			output_bench_table(stdout, bench, params);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		log_error("cannot write the report: %s", strerror(errno));
		return ST_FAILURE;
	}
	return ST_OK;
}

/* ---- the collector: endpoints and keys ---- */

void collector_release(struct collector *c)
{
	free(c->list);
	explicit_bzero(&c->keys, sizeof(c->keys));
}

/* Splits "tcp://a:1, tcp://b:2" into c->endpoints. Exit status. */
static int collector_endpoints(const char *text, struct collector *c)
{
	const char *cur, *item;
	size_t len;

	c->list = strdup(text);
	if (!c->list) {
		log_error("out of memory");
		return ST_FAILURE;
	}
	cur = c->list;
	while ((item = list_next(&cur, ',', &len))) {
		/* the copy is the list's own: each item ends where its comma was */
		char *t = c->list + (item - c->list);
		size_t lead = strspn(t, " \t");

		t += lead;
		len = len > lead ? len - lead : 0;
		while (len && (t[len - 1] == ' ' || t[len - 1] == '\t'))
			len--;
		t[len] = '\0';
		if (!*t)
			continue;
		if (strncmp(t, "tcp://", 6) || !t[6]) {
			log_error("bad collector endpoint '%s': expected tcp://HOST:PORT",
				  t);
			return ST_USAGE;
		}
		if (c->n_endpoints == MAX_ENDPOINTS) {
			log_error("more than %d collector endpoints",
				  MAX_ENDPOINTS);
			return ST_USAGE;
		}
		c->endpoints[c->n_endpoints++] = t;
	}
	if (!c->n_endpoints) {
		log_error("no collector endpoint in '%s'", text);
		return ST_USAGE;
	}
	return ST_OK;
}

int collector_setup(const struct agent_config *cfg, struct collector *c)
{
	int r;

	memset(c, 0, sizeof(*c));
	if (!cfg->endpoints || !*cfg->endpoints) {
		log_error("no collector configured: set [collector] endpoints or --endpoint");
		return ST_USAGE;
	}
	r = collector_endpoints(cfg->endpoints, c);
	if (r != ST_OK)
		return r;
	if (cfg->endpoint_order && strcmp(cfg->endpoint_order, "listed") &&
	    strcmp(cfg->endpoint_order, "random")) {
		log_error("endpoint_order '%s': expected listed or random",
			  cfg->endpoint_order);
		return ST_USAGE;
	}
	if (cfg->backoff_max_ms < cfg->backoff_ms) {
		log_error("backoff_max_ms %lld is below backoff_ms %lld",
			  cfg->backoff_max_ms, cfg->backoff_ms);
		return ST_USAGE;
	}
	if (cfg->insecure) {
		log_warn("insecure: sending in plaintext, unauthenticated and unencrypted");
		return ST_OK;
	}
	if (!cfg->server_public_key || !*cfg->server_public_key) {
		log_error("no collector key: set [collector] server_public_key or --server-key (or --insecure for plaintext)");
		return ST_USAGE;
	}
	r = link_read_public(cfg->server_public_key, c->server_public);
	if (r < 0) {
		log_error("cannot read the collector's public key '%s': %s",
			  cfg->server_public_key, strerror(-r));
		return ST_FAILURE;
	}
	r = link_read_secret(cfg->agent_key, &c->keys);
	if (r == -EPERM) {
		log_error("agent key '%s' is readable by group or others: chmod 600 it",
			  cfg->agent_key);
		return ST_FAILURE;
	}
	if (r < 0) {
		log_error("cannot read the agent key '%s': %s%s", cfg->agent_key,
			  strerror(-r),
			  r == -ENOENT ? " (make one with fleetbench-agent keygen)" :
					 "");
		return ST_FAILURE;
	}
	return ST_OK;
}

struct spool *agent_spool_open(const struct agent_config *cfg)
{
	char err[SPOOL_ERR_LEN] = "";
	struct spool *s = spool_open(cfg->spool_dir, cfg->spool_limit, err);

	if (!s)
		log_error("cannot open spool '%s': %s", cfg->spool_dir,
			  err[0] ? err : strerror(errno));
	return s;
}

