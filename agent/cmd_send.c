/* SPDX-License-Identifier: MIT */
/*
 * fleetbench-agent send: flushes the spool to the collector, logging what
 * becomes of each report; run flushes through here too.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "cleanup.h"
#include "clock.h"
#include "cmd.h"
#include "log.h"
#include "send.h"
#include "state.h"

/* What a send pass's events see: the config, and the newest report the
 * collector stored, for the state directory. */
struct pass {
	const struct agent_config *cfg;
	uint8_t *last; /* a copy of the packed report; NULL: none yet */
	size_t last_len, last_cap;
	int64_t last_ms; /* when its Ack came */
	bool lost; /* a copy could not be kept (out of memory) */
};

/*
 * Keeps a copy of a delivered report: the pass delivers oldest first, so
 * the last copy kept is the newest. Only it is decoded, once the pass is
 * over (pass_record), so a long pass costs a copy per report, not a decode
 * and two fsyncs.
 */
static void pass_keep(struct pass *p, const struct send_event_info *ev)
{
	if (!ev->report || !ev->report_len)
		return;
	if (ev->report_len > p->last_cap) {
		uint8_t *n = realloc(p->last, ev->report_len);

		if (!n) {
			p->lost = true;
			return;
		}
		p->last = n;
		p->last_cap = ev->report_len;
	}
	memcpy(p->last, ev->report, ev->report_len);
	p->last_len = ev->report_len;
	p->last_ms = wall_ms();
	p->lost = false;
}

/*
 * Writes the kernel of the pass's newest delivered report into the state
 * directory. A failure is a warning: the reports are stored all the same,
 * and the worst that follows is one run --if-kernel-changed too many.
 */
static void pass_record(struct pass *p)
{
	char err[STATE_ERR_LEN] = "";
	struct state st;
	int r;

	if (p->lost) {
		log_warn("cannot record the kernel of the last delivered report in '%s': out of memory",
			 p->cfg->state_dir);
		return;
	}
	if (!p->last)
		return;
	r = state_from_report(p->last, p->last_len, p->last_ms, &st, err);
	if (r < 0) {
		log_warn("cannot record the kernel of the last delivered report in '%s': %s",
			 p->cfg->state_dir, err);
		return;
	}
	r = state_write(p->cfg->state_dir, &st, err);
	if (r < 0)
		log_warn("cannot record kernel %s of delivered report %s: %s",
			 st.kernel_release, st.run_id, err);
	state_release(&st);
}

/* One log line per event of a send pass (send.h). */
static void send_event_log(void *data, const struct send_event_info *ev)
{
	struct pass *p = data;
	const struct agent_config *cfg = p->cfg;

	switch (ev->event) {
	case SEND_COMMITTED:
		log_info("report %s stored by %s", ev->run_id, ev->endpoint);
		pass_keep(p, ev);
		break;
	case SEND_DUPLICATE:
		log_info("report %s was already stored (duplicate)", ev->run_id);
		pass_keep(p, ev);
		break;
	case SEND_REJECTED:
		log_error("report %s rejected by %s: %s; moved to %s/rejected/",
			  ev->run_id, ev->endpoint, ev->detail, cfg->spool_dir);
		break;
	case SEND_RETRY_LATER:
		log_warn("%s asks to retry later%s%s: report %s stays in the spool",
			 ev->endpoint, ev->detail ? ": " : "",
			 ev->detail ? ev->detail : "", ev->run_id);
		break;
	case SEND_RETRY_AFTER:
		log_info("%s asks to come back later%s%s: offering report %s again in %ld ms",
			 ev->endpoint, ev->detail ? ": " : "",
			 ev->detail ? ev->detail : "", ev->run_id,
			 ev->delay_ms);
		break;
	case SEND_QUARANTINED:
		log_error("%s", ev->detail);
		break;
	case SEND_TIMEOUT:
		log_warn("no answer from %s within %lld ms (attempt %u)",
			 ev->endpoint, cfg->send_timeout_ms, ev->attempt);
		break;
	case SEND_BACKOFF:
		log_info("reconnecting to %s in %ld ms", ev->endpoint,
			 ev->delay_ms);
		break;
	case SEND_FAILOVER:
		log_warn("failing over to %s", ev->endpoint);
		break;
	case SEND_UNREACHABLE:
		log_error("no collector answered: report %s and the ones after it stay in the spool",
			  ev->run_id);
		break;
	case SEND_ACK_IGNORED:
		log_warn("ignored a reply from %s: %s", ev->endpoint,
			 ev->detail);
		break;
	case SEND_NO_OFFERS:
		log_info("%s takes no offers (a collector older than this agent%s%s): sending reports to it directly",
			 ev->endpoint, ev->detail ? ": " : "",
			 ev->detail ? ev->detail : "");
		break;
	}
}

/* The exit status a send pass earns (--help). */
static int send_status(const struct send_summary *sum)
{
	if (sum->rejected || sum->quarantined)
		return ST_FAILURE;
	if (sum->remaining)
		return ST_UNDELIVERED;
	return ST_OK;
}

static void print_summary(FILE *f, const struct send_summary *sum)
{
	const struct {
		const char *name;
		unsigned n;
	} counts[] = {
		{ "sent", sum->sent },
		{ "committed", sum->committed },
		{ "duplicate", sum->duplicate },
		{ "rejected", sum->rejected },
		{ "quarantined", sum->quarantined },
		{ "remaining", sum->remaining },
	};

	if (arg_json && f == stdout) {
		struct json_object *o = json_object_new_object();

		for (size_t i = 0; i < ARRAY_SIZE(counts); i++)
			json_object_object_add(o, counts[i].name,
					       json_object_new_int64(counts[i].n));
		json_object_object_add(o, "retry_later",
				       json_object_new_boolean(sum->retry_later));
		json_object_object_add(o, "unreachable",
				       json_object_new_boolean(sum->unreachable));
		fprintf(f, "%s\n",
			json_object_to_json_string_ext(o,
						       JSON_C_TO_STRING_PRETTY));
		json_object_put(o);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(counts); i++)
		fprintf(f, "%s%s %u", i ? ", " : "", counts[i].name,
			counts[i].n);
	fprintf(f, "%s\n",
		sum->retry_later ? " (collector asked to retry later)" :
		sum->unreachable ? " (collector unreachable)" :
				   "");
}

int agent_flush_spool(const struct agent_config *cfg, struct spool *s,
		      const struct collector *c, FILE *out)
{
	struct pass pass = { .cfg = cfg };
	const struct send_opts o = {
		.endpoints = c->endpoints,
		.n_endpoints = c->n_endpoints,
		.server_public = cfg->insecure ? NULL : c->server_public,
		.keys = cfg->insecure ? NULL : &c->keys,
		.timeout_ms = (int)cfg->send_timeout_ms,
		.retries = (int)cfg->retries,
		.backoff_ms = (int)cfg->backoff_ms,
		.backoff_max_ms = (int)cfg->backoff_max_ms,
		.retry_wait_max_ms = (int)cfg->retry_wait_max_ms,
		.endpoints_random = cfg->endpoint_order &&
				    !strcmp(cfg->endpoint_order, "random"),
		.interrupted = bench_interrupted,
		.event = send_event_log,
		.event_data = &pass,
	};
	struct send_summary sum;
	char err[SEND_ERR_LEN] = "";
	void *zctx = zmq_ctx_new();
	int r;

	if (!zctx) {
		log_error("cannot create a ZeroMQ context: %s", strerror(errno));
		return ST_FAILURE;
	}
	r = send_flush(zctx, s, &o, &sum, err);
	zmq_ctx_term(zctx);
	/* what was delivered counts however the pass ended */
	pass_record(&pass);
	free(pass.last);
	if (r == -EINTR) {
		log_error("interrupted: unsent reports stay in the spool");
		print_summary(out, &sum);
		return ST_INTERRUPTED;
	}
	if (r < 0) {
		log_error("cannot send the spool '%s': %s", cfg->spool_dir,
			  err[0] ? err : strerror(-r));
		print_summary(out, &sum);
		return ST_FAILURE;
	}
	print_summary(out, &sum);
	return send_status(&sum);
}

int cmd_send(struct agent_config *cfg, const struct cli *cli)
{
	struct collector c;
	struct spool *s;
	int ret = collector_setup(cfg, &c);

	if (ret != ST_OK)
		goto out;
	s = agent_spool_open(cfg);
	if (!s) {
		ret = ST_FAILURE;
		goto out;
	}
	bench_install_signals();
	ret = agent_flush_spool(cfg, s, &c, stdout);
	spool_close(s);
out:
	collector_release(&c);
	return ret;
}

