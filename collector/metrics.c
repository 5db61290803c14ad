/* SPDX-License-Identifier: MIT */
/*
 * /metrics: the collector's health and the fleet's figures in the
 * Prometheus text format 0.0.4 or OpenMetrics 1.0.0, served by
 * libmicrohttpd on its own thread (metrics.h). The health metrics are one
 * table of descriptors over struct collector_health; the fleet's come
 * from fleetbench_metrics_figures() (schema/functions/47_metrics.sql).
 */
#include "metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "pg.h"

const double health_batch_size_le[] = { 1,   2,   4,   8,    16,  32,
					64,  128, 256, 512, 1024, 4096 };
const size_t health_n_batch_size_le = ARRAY_SIZE(health_batch_size_le);
const double health_commit_seconds_le[] = { 0.001, 0.0025, 0.005, 0.01, 0.025,
					    0.05,  0.1,	   0.25,  0.5,	1,
					    2.5,   5,	   10 };
const size_t health_n_commit_seconds_le = ARRAY_SIZE(health_commit_seconds_le);

/* a scrape's query of the fleet's figures is cancelled after this */
#define FLEET_QUERY_TIMEOUT "10000" /* ms */
/*
 * Slow clients (docs/security.md): at most CONNECTION_LIMIT connections,
 * PER_ADDRESS_LIMIT of them from one client address; a connection idle
 * for CONNECTION_TIMEOUT_S is closed by libmicrohttpd, and one whose
 * request is not answered within REQUEST_TIMEOUT_S of the connection's
 * start or of its last answer is cut by the watchdog (libmicrohttpd's
 * timeout counts idle time only: a client sending a byte a second would
 * keep its slot for ever). REQUEST_TIMEOUT_S is above the fleet query's
 * own timeout, so a slow database is not cut here.
 */
#define CONNECTION_LIMIT 64
#define PER_ADDRESS_LIMIT 4
#define CONNECTION_TIMEOUT_S 10
#define REQUEST_TIMEOUT_S 15
#define STR(x) #x
#define XSTR(x) STR(x)
#define LISTEN_BACKLOG 64

#define CT_TEXT "text/plain; version=0.0.4; charset=utf-8"
#define CT_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"

/* a connection the watchdog watches: its own descriptor of the socket
 * (a dup: it stays valid until libmicrohttpd says the connection closed,
 * whatever libmicrohttpd does with its descriptor) */
struct watched {
	struct watched *prev, *next;
	int fd;
	int64_t deadline_ms; /* monotonic */
	bool cut;
};

struct metrics {
	struct MHD_Daemon *daemon;
	pthread_t watchdog;
	bool stopping; /* under lock */
	pthread_cond_t wake; /* with lock */
	struct watched watched; /* the list's head, under lock */
	unsigned port;
	int max_groups;
	double start_s; /* wall clock, seconds since the epoch */
	struct pg *pg; /* used by libmicrohttpd's thread only */
	pthread_mutex_t lock;
	struct collector_health health; /* under lock */
	atomic_ulong accepted, refused; /* handshakes */
	atomic_ulong cut; /* connections cut by the watchdog */
};

/* ---- the table of the collector's own metrics ---- */

enum metric_type { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM };

static const char *const type_names[] = { "counter", "gauge", "histogram" };

struct metric_desc {
	/* the family's name; a counter's samples add _total */
	const char *name;
	enum metric_type type;
	const char *help;
	/* in struct collector_health: an unsigned long (counter), a double
	 * (gauge) or a struct health_histogram */
	size_t offset;
	/* an array of n values told apart by label, or n 1 and no label */
	const char *label;
	const char *const *values;
	size_t n;
	/* a histogram's bounds */
	const double *le;
	const size_t *n_le;
};

static const char *const reject_reasons[HEALTH_REJECT_N] = {
	[HEALTH_REJECT_FRAMING] = "framing",
	[HEALTH_REJECT_INVALID] = "invalid",
	[HEALTH_REJECT_RANGE] = "range",
	[HEALTH_REJECT_DATABASE] = "database",
};

static const char *const refused_reasons[HEALTH_REFUSED_N] = {
	[HEALTH_REFUSED_PEER] = "peer",
	[HEALTH_REFUSED_ADMISSION] = "admission",
	[HEALTH_REFUSED_QUEUE_FULL] = "queue_full",
	[HEALTH_REFUSED_STOPPING] = "stopping",
};

#define H(field) offsetof(struct collector_health, field)
#define COUNTER(name, field, help) \
	{ name, METRIC_COUNTER, help, H(field), NULL, NULL, 1, NULL, NULL }
#define COUNTER_BY(name, field, label, values, help)                    \
	{ name, METRIC_COUNTER, help, H(field), label, values, \
	  ARRAY_SIZE(values), NULL, NULL }
#define GAUGE(name, field, help) \
	{ name, METRIC_GAUGE, help, H(field), NULL, NULL, 1, NULL, NULL }
#define HISTOGRAM(name, field, le, n_le, help) \
	{ name, METRIC_HISTOGRAM, help, H(field), NULL, NULL, 1, le, &n_le }

/* docs/operations.md, "Metrics (Prometheus)", lists these: keep in step */
static const struct metric_desc health_metrics[] = {
	COUNTER("fleetbench_collector_reports_received", received,
		"Reports received (offers apart), whatever their answer."),
	COUNTER("fleetbench_collector_reports_committed", committed,
		"Reports stored and answered COMMITTED after their COMMIT returned."),
	COUNTER("fleetbench_collector_reports_duplicate", duplicate,
		"Reports found stored already, answered DUPLICATE."),
	COUNTER_BY("fleetbench_collector_reports_rejected", rejected, "reason",
		   reject_reasons,
		   "Reports answered REJECTED, by reason: framing, invalid (does not decode or validate), range (a value over its column), database (PostgreSQL refused it)."),
	COUNTER("fleetbench_collector_reports_unacknowledged", unacked,
		"Reports left unanswered because their commit's outcome is unknown (their agents send them again)."),
	COUNTER("fleetbench_collector_answers_retry_later", retry_later,
		"RETRY_LATER answers to reports and offers, for any reason."),
	COUNTER("fleetbench_collector_answers_lost", ack_lost,
		"Answers that could not be sent (the agent had gone)."),
	COUNTER("fleetbench_collector_messages_dropped", dropped,
		"Messages dropped unanswered (a key removed from the allowlist, a malformed message while stopping)."),
	COUNTER_BY("fleetbench_collector_refused", refused, "reason",
		   refused_reasons,
		   "Peers and messages turned away unstored, by reason: peer (handshake refused, key not allowed), admission (over the admission bound), queue_full (too many offers waiting), stopping (a report while stopping)."),
	COUNTER("fleetbench_collector_offers", offers,
		"Offers received (an agent asks to send a report)."),
	COUNTER("fleetbench_collector_offers_granted", offers_granted,
		"Offers granted."),
	COUNTER("fleetbench_collector_grants_lapsed", offers_lapsed,
		"Grants whose report did not come in time."),
	COUNTER("fleetbench_collector_offers_stale", offers_stale,
		"Offers dropped after waiting too long for a grant."),
	COUNTER("fleetbench_collector_offers_rejected", offers_rejected,
		"Malformed offers, answered REJECTED."),
	COUNTER("fleetbench_collector_offers_in_hand", offers_in_hand,
		"Offers for a report received and not answered yet."),
	COUNTER("fleetbench_collector_admission_returned", returned,
		"Agents let in when they came back after a retry-after hint."),
	COUNTER("fleetbench_collector_db_reconnects", db_reconnects,
		"Connections to PostgreSQL made again after one was lost."),
	GAUGE("fleetbench_collector_backlog", backlog,
	      "Reports let in and not answered: offers waiting, grants outstanding, reports in hand."),
	GAUGE("fleetbench_collector_offers_waiting", offers_waiting,
	      "Offers waiting for a grant: agents connected and waiting to send."),
	GAUGE("fleetbench_collector_admission_bound", admission_bound,
	      "Admission control's bound on the backlog, in reports (0: no admission control)."),
	GAUGE("fleetbench_collector_admission_rate", admission_rate,
	      "Reports per second the database answers, as admission control measures it."),
	GAUGE("fleetbench_collector_db_connections", db_connections,
	      "Connections to PostgreSQL that store batches (db_connections)."),
	GAUGE("fleetbench_collector_db_connections_up", db_connections_up,
	      "Of those, the ones connected now."),
	HISTOGRAM("fleetbench_collector_batch_size", batch_size,
		  health_batch_size_le, health_n_batch_size_le,
		  "Reports handed to PostgreSQL in one transaction."),
	HISTOGRAM("fleetbench_collector_commit_seconds", commit_seconds,
		  health_commit_seconds_le, health_n_commit_seconds_le,
		  "Time from sending a batch to its COMMIT returning, committed batches only."),
};

/* ---- the exposition ---- */

struct out {
	FILE *f;
	bool om; /* OpenMetrics, else text 0.0.4 */
};

/* A HELP text or a label value, escaped: backslash, newline, and the
 * double quote in label values (and in OpenMetrics' HELP). */
static void put_escaped(struct out *o, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", o->f);
		else if (*s == '\n')
			fputs("\\n", o->f);
		else if (*s == '"' && quote)
			fputs("\\\"", o->f);
		else
			fputc(*s, o->f);
	}
}

static void put_double(struct out *o, double v)
{
	char buf[32];

	if (isnan(v)) {
		fputs("NaN", o->f);
		return;
	}
	if (isinf(v)) {
		fputs(v > 0 ? "+Inf" : "-Inf", o->f);
		return;
	}
	/* the shortest of 15 and 17 digits that reads back the same */
	snprintf(buf, sizeof(buf), "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, sizeof(buf), "%.17g", v);
	fputs(buf, o->f);
}

static void family(struct out *o, const char *name, enum metric_type type,
		   const char *help)
{
	const char *total = type == METRIC_COUNTER && !o->om ? "_total" : "";

	fprintf(o->f, "# HELP %s%s ", name, total);
	put_escaped(o, help, o->om);
	fprintf(o->f, "\n# TYPE %s%s %s\n", name, total, type_names[type]);
}

/* name+suffix{names[i]="values[i]",...}: the values escaped; NULL values
 * print as "" */
static void sample_name(struct out *o, const char *name, const char *suffix,
			const char *const *names, const char *const *values,
			size_t n)
{
	fprintf(o->f, "%s%s", name, suffix);
	if (!n)
		return;
	fputc('{', o->f);
	for (size_t i = 0; i < n; i++) {
		fprintf(o->f, "%s%s=\"", i ? "," : "", names[i]);
		put_escaped(o, values[i] ? values[i] : "", true);
		fputc('"', o->f);
	}
	fputc('}', o->f);
}

static void sample(struct out *o, const char *name, const char *suffix,
		   const char *const *names, const char *const *values,
		   size_t n, double v)
{
	sample_name(o, name, suffix, names, values, n);
	fputc(' ', o->f);
	put_double(o, v);
	fputc('\n', o->f);
}

static void sample_ulong(struct out *o, const char *name, const char *suffix,
			 const char *const *names, const char *const *values,
			 size_t n, unsigned long v)
{
	sample_name(o, name, suffix, names, values, n);
	fprintf(o->f, " %lu\n", v);
}

static void put_histogram(struct out *o, const struct metric_desc *d,
			  const struct health_histogram *h)
{
	static const char *const le_name[] = { "le" };
	unsigned long cum = 0;
	char le[32];

	for (size_t i = 0; i <= *d->n_le; i++) {
		const char *v = le;

		cum += h->bucket[i];
		if (i == *d->n_le)
			v = "+Inf";
		else
			snprintf(le, sizeof(le), "%g", d->le[i]);
		sample_ulong(o, d->name, "_bucket", le_name, &v, 1, cum);
	}
	sample(o, d->name, "_sum", NULL, NULL, 0, h->sum);
	sample_ulong(o, d->name, "_count", NULL, NULL, 0, h->count);
}

static void put_health(struct out *o, const struct collector_health *h,
		       unsigned long accepted, unsigned long cut,
		       double start_s)
{
	const char *total = "_total";

	for (size_t k = 0; k < ARRAY_SIZE(health_metrics); k++) {
		const struct metric_desc *d = &health_metrics[k];
		const char *p = (const char *)h + d->offset;

		family(o, d->name, d->type, d->help);
		for (size_t i = 0; i < d->n; i++) {
			const char *const *v = d->label ? &d->values[i] : NULL;
			size_t nl = d->label ? 1 : 0;

			switch (d->type) {
			case METRIC_COUNTER:
				sample_ulong(o, d->name, total, &d->label, v,
					     nl, ((const unsigned long *)p)[i]);
				break;
			case METRIC_GAUGE:
				sample(o, d->name, "", &d->label, v, nl,
				       ((const double *)p)[i]);
				break;
			case METRIC_HISTOGRAM:
				put_histogram(o, d,
					      (const struct health_histogram *)p);
				break;
			}
		}
	}
	family(o, "fleetbench_collector_peers_accepted", METRIC_COUNTER,
	       "Handshakes accepted: agents that connected (a count of those connected now is not kept).");
	sample_ulong(o, "fleetbench_collector_peers_accepted", total, NULL,
		     NULL, 0, accepted);
	family(o, "fleetbench_collector_metrics_connections_cut",
	       METRIC_COUNTER,
	       "Connections to /metrics cut for not finishing a request within " XSTR(REQUEST_TIMEOUT_S) " s of their start or of their last answer (slow clients).");
	sample_ulong(o, "fleetbench_collector_metrics_connections_cut", total,
		     NULL, NULL, 0, cut);
	family(o, "fleetbench_collector_start_time_seconds", METRIC_GAUGE,
	       "When the collector started serving, in seconds since the Unix epoch.");
	sample(o, "fleetbench_collector_start_time_seconds", "", NULL, NULL, 0,
	       start_s);
}

/* ---- the fleet's figures ---- */

/* fleetbench_metrics_figures()'s metric column, in its order */
static const struct {
	const char *metric;
	const char *name;
	const char *help;
	bool figure; /* labelled with the figure's name too */
} fleet_metrics[] = {
	{ "figure", "fleetbench_fleet_figure",
	  "The median of a figure over a group's runs (figure: its declared name, _per_vcpu for its per-vCPU estimate).",
	  true },
	{ "hosts", "fleetbench_fleet_hosts", "Distinct hosts of a group.",
	  false },
	{ "runs", "fleetbench_fleet_runs", "Runs of a group.", false },
};

static const char *const fleet_labels[] = { "figure",	     "provider",
					    "instance_type", "kernel",
					    "method" };

static int fleet_query(struct metrics *m, PGresult **ret, char *err)
{
	char groups[16];
	const char *const params[] = { groups };
	int r;

	if (!pg_connected(m->pg)) {
		r = pg_connect(m->pg, err);
		if (r == 0)
			r = pg_query(m->pg,
				     "SELECT set_config('statement_timeout', $1, false)",
				     1,
				     (const char *const[]){ FLEET_QUERY_TIMEOUT },
				     NULL, err);
		if (r < 0) {
			pg_disconnect(m->pg);
			return r;
		}
	}
	snprintf(groups, sizeof(groups), "%d", m->max_groups);
	r = pg_query(m->pg,
		     "SELECT metric, figure, provider, instance_type, kernel, "
		     "method, value, groups FROM fleetbench_metrics_figures($1)",
		     1, params, ret, err);
	if (r == -EIO)
		pg_disconnect(m->pg);
	return r;
}

static void put_fleet(struct out *o, struct metrics *m)
{
	_cleanup_pqclear_ PGresult *res = NULL;
	char err[PG_ERR_LEN];
	double t0 = mono_s();
	long groups = 0, exported = 0;
	const char *last_key = NULL;
	int r = fleet_query(m, &res, err);
	int n = r == 0 ? PQntuples(res) : 0;
	size_t cur = ARRAY_SIZE(fleet_metrics);

	family(o, "fleetbench_fleet_up", METRIC_GAUGE,
	       "1 when this scrape read the fleet's figures from PostgreSQL, 0 when it could not.");
	sample(o, "fleetbench_fleet_up", "", NULL, NULL, 0, r == 0);
	family(o, "fleetbench_fleet_query_seconds", METRIC_GAUGE,
	       "How long this scrape's query of the fleet's figures took.");
	sample(o, "fleetbench_fleet_query_seconds", "", NULL, NULL, 0,
	       mono_s() - t0);
	if (r < 0)
		return;
	/* the groups exported are those of the runs rows */
	for (int i = 0; i < n; i++) {
		if (!strcmp(PQgetvalue(res, i, 0), "runs"))
			exported++;
		groups = strtol(PQgetvalue(res, i, 7), NULL, 10);
	}
	family(o, "fleetbench_fleet_groups", METRIC_GAUGE,
	       "Groups (provider, instance type, kernel, method) in the fleet's summary.");
	sample(o, "fleetbench_fleet_groups", "", NULL, NULL, 0, (double)groups);
	family(o, "fleetbench_fleet_groups_exported", METRIC_GAUGE,
	       "Of those, the groups exported here: the most recent metrics_max_groups; fewer than fleetbench_fleet_groups when groups were cut.");
	sample(o, "fleetbench_fleet_groups_exported", "", NULL, NULL, 0,
	       (double)exported);
	for (int i = 0; i < n; i++) {
		const char *key = PQgetvalue(res, i, 0);
		const char *values[ARRAY_SIZE(fleet_labels)];
		bool fig;

		if (!last_key || strcmp(key, last_key)) {
			last_key = key;
			for (cur = 0; cur < ARRAY_SIZE(fleet_metrics); cur++)
				if (!strcmp(fleet_metrics[cur].metric, key))
					break;
			if (cur < ARRAY_SIZE(fleet_metrics))
				family(o, fleet_metrics[cur].name,
				       METRIC_GAUGE, fleet_metrics[cur].help);
		}
		if (cur == ARRAY_SIZE(fleet_metrics) || PQgetisnull(res, i, 6))
			continue; /* a metric this collector does not know */
		for (int c = 1; c <= 5; c++)
			values[c - 1] = PQgetisnull(res, i, c) ?
						"" :
						PQgetvalue(res, i, c);
		fig = fleet_metrics[cur].figure;
		sample(o, fleet_metrics[cur].name, "",
		       fleet_labels + (fig ? 0 : 1), values + (fig ? 0 : 1),
		       ARRAY_SIZE(fleet_labels) - (fig ? 0 : 1),
		       strtod(PQgetvalue(res, i, 6), NULL));
	}
}

/* ---- serving ---- */

/* Whether the Accept header asks for OpenMetrics (Prometheus sends
 * "application/openmetrics-text;version=1.0.0,...;q=0.5,text/plain..."). */
static bool wants_openmetrics(const char *accept)
{
	return accept && strstr(accept, "application/openmetrics-text");
}

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status,
			       const char *type, char *body, size_t len)
{
	struct MHD_Response *resp;
	enum MHD_Result r;

	resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type) !=
	    MHD_YES) {
		MHD_destroy_response(resp);
		return MHD_NO;
	}
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	r = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return r;
}

static enum MHD_Result respond_text(struct MHD_Connection *c, unsigned status,
				    const char *text)
{
	char *body = strdup(text);

	return body ? respond(c, status, "text/plain; charset=utf-8", body,
			      strlen(body)) :
		      MHD_NO;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload_data,
			      size_t *upload_data_size, void **req_cls)
{
	struct metrics *m = cls;
	struct collector_health h;
	struct out o = { 0 };
	char *body = NULL;
	size_t len = 0;

	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)req_cls;
	if (strcmp(method, MHD_HTTP_METHOD_GET) &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD))
		return respond_text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				    "only GET and HEAD\n");
	if (strcmp(url, "/metrics"))
		return respond_text(c, MHD_HTTP_NOT_FOUND,
				    "not found: the metrics are at /metrics\n");
	o.om = wants_openmetrics(
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept"));
	pthread_mutex_lock(&m->lock);
	h = m->health;
	pthread_mutex_unlock(&m->lock);
	h.refused[HEALTH_REFUSED_PEER] = atomic_load(&m->refused);

	o.f = open_memstream(&body, &len);
	if (!o.f)
		return MHD_NO;
	put_health(&o, &h, atomic_load(&m->accepted), atomic_load(&m->cut),
		   m->start_s);
	put_fleet(&o, m);
	if (o.om)
		fputs("# EOF\n", o.f);
	if (fclose(o.f) != 0) {
		free(body);
		return MHD_NO;
	}
	return respond(c, MHD_HTTP_OK, o.om ? CT_OPENMETRICS : CT_TEXT, body,
		       len);
}

/* ---- slow clients: the watchdog ---- */

/* libmicrohttpd's thread: a connection starts or ends */
static void on_connection(void *cls, struct MHD_Connection *c,
			  void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct metrics *m = cls;
	struct watched *w = *socket_context;
	const union MHD_ConnectionInfo *info;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		info = MHD_get_connection_info(
			c, MHD_CONNECTION_INFO_CONNECTION_FD);
		w = calloc(1, sizeof(*w));
		if (!w)
			return; /* not watched: the idle timeout still holds */
		w->fd = info ? fcntl(info->connect_fd, F_DUPFD_CLOEXEC, 0) : -1;
		if (w->fd < 0) {
			free(w);
			return;
		}
		w->deadline_ms = mono_ms() + REQUEST_TIMEOUT_S * 1000;
		pthread_mutex_lock(&m->lock);
		w->next = m->watched.next;
		w->prev = &m->watched;
		w->next->prev = w;
		m->watched.next = w;
		pthread_cond_signal(&m->wake); /* the watchdog may sleep */
		pthread_mutex_unlock(&m->lock);
		*socket_context = w;
		return;
	}
	if (!w)
		return;
	pthread_mutex_lock(&m->lock);
	w->prev->next = w->next;
	w->next->prev = w->prev;
	pthread_mutex_unlock(&m->lock);
	close(w->fd);
	free(w);
	*socket_context = NULL;
}

/* libmicrohttpd's thread: a request was answered (or ended): the next one
 * has REQUEST_TIMEOUT_S from now */
static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct metrics *m = cls;
	const union MHD_ConnectionInfo *info;
	struct watched *w;

	(void)req_cls;
	(void)toe;
	info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	w = info ? info->socket_context : NULL;
	if (!w)
		return;
	pthread_mutex_lock(&m->lock);
	w->deadline_ms = mono_ms() + REQUEST_TIMEOUT_S * 1000;
	pthread_mutex_unlock(&m->lock);
}

/* the watchdog's thread: shuts down the socket of each connection past its
 * deadline (libmicrohttpd then reads its end and closes it), sleeping
 * until the next deadline, or until a connection starts */
static void *watchdog(void *arg)
{
	struct metrics *m = arg;
	struct timespec ts;
	struct watched *w;
	int64_t now, next;

	pthread_mutex_lock(&m->lock);
	while (!m->stopping) {
		now = mono_ms();
		next = INT64_MAX;
		for (w = m->watched.next; w != &m->watched; w = w->next) {
			if (w->cut)
				continue;
			if (now >= w->deadline_ms) {
				shutdown(w->fd, SHUT_RDWR);
				w->cut = true;
				atomic_fetch_add_explicit(&m->cut, 1,
							  memory_order_relaxed);
			} else if (w->deadline_ms < next) {
				next = w->deadline_ms;
			}
		}
		if (next == INT64_MAX) {
			pthread_cond_wait(&m->wake, &m->lock);
			continue;
		}
		/* a deadline only moves later (on_completed): sleep to it */
		ts.tv_sec = (time_t)(next / 1000);
		ts.tv_nsec = (long)(next % 1000) * 1000000L;
		pthread_cond_timedwait(&m->wake, &m->lock, &ts);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

/* ---- the listening socket ---- */

int metrics_listen_parse(const char *listen, struct sockaddr_storage *ret_addr,
			 socklen_t *ret_len, char err[METRICS_ERR_LEN])
{
	_cleanup_free_ char *host = NULL;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	const char *colon, *port, *h;
	char *end;
	unsigned long p;
	size_t hlen;
	int r;

	colon = listen ? strrchr(listen, ':') : NULL;
	if (!colon) {
		snprintf(err, METRICS_ERR_LEN,
			 "'%s' is not HOST:PORT (e.g. 127.0.0.1:9477)",
			 listen ? listen : "");
		return -EINVAL;
	}
	h = listen;
	hlen = (size_t)(colon - listen);
	if (*h == '[') { /* [IPv6]:PORT */
		if (hlen < 2 || h[hlen - 1] != ']') {
			snprintf(err, METRICS_ERR_LEN,
				 "'%s': an IPv6 address is written [ADDRESS]:PORT",
				 listen);
			return -EINVAL;
		}
		h++;
		hlen -= 2;
	} else if (memchr(h, ':', hlen)) {
		snprintf(err, METRICS_ERR_LEN,
			 "'%s': an IPv6 address is written [ADDRESS]:PORT",
			 listen);
		return -EINVAL;
	}
	if (!hlen) {
		snprintf(err, METRICS_ERR_LEN,
			 "'%s' has no host (0.0.0.0:PORT listens on every address)",
			 listen);
		return -EINVAL;
	}
	port = colon + 1;
	errno = 0;
	p = strtoul(port, &end, 10);
	if (!*port || *end || *port == '-' || *port == '+' || errno ||
	    p > 65535) {
		snprintf(err, METRICS_ERR_LEN,
			 "'%s': the port '%s' is not a number from 0 to 65535",
			 listen, port);
		return -EINVAL;
	}
	host = strndup(h, hlen);
	if (!host) {
		snprintf(err, METRICS_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	r = getaddrinfo(host, port, &hints, &ai);
	if (r != 0) {
		snprintf(err, METRICS_ERR_LEN, "'%s': cannot resolve '%s': %s",
			 listen, host, gai_strerror(r));
		return -EINVAL;
	}
	if (ret_addr && ai->ai_addrlen <= sizeof(*ret_addr)) {
		memcpy(ret_addr, ai->ai_addr, ai->ai_addrlen);
		*ret_len = ai->ai_addrlen;
	}
	freeaddrinfo(ai);
	return 0;
}

/* A listening socket on addr: the fd or -errno. */
static int listen_on(const struct sockaddr_storage *addr, socklen_t len)
{
	_cleanup_close_ int fd = -1;
	const int one = 1;

	fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		return -errno;
	if (bind(fd, (const struct sockaddr *)addr, len) < 0)
		return -errno;
	if (listen(fd, LISTEN_BACKLOG) < 0)
		return -errno;
	return TAKE_FD(fd);
}

struct metrics *metrics_start(const struct metrics_opts *o,
			      char err[METRICS_ERR_LEN])
{
	struct sockaddr_storage addr = { 0 };
	const union MHD_DaemonInfo *info;
	socklen_t len = 0;
	struct metrics *m;
	int fd, r;

	r = metrics_listen_parse(o->listen, &addr, &len, err);
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, METRICS_ERR_LEN, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&m->lock, NULL);
	m->watched.next = m->watched.prev = &m->watched;
	atomic_init(&m->accepted, 0);
	atomic_init(&m->refused, 0);
	atomic_init(&m->cut, 0);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&m->wake, &ca);
		pthread_condattr_destroy(&ca);
	}
	m->max_groups = o->max_groups > 0 ? o->max_groups : 1;
	m->start_s = (double)wall_ms() / 1000.0;
	m->pg = pg_new(o->dsn);
	if (!m->pg) {
		snprintf(err, METRICS_ERR_LEN, "out of memory");
		goto fail;
	}
	fd = listen_on(&addr, len);
	if (fd < 0) {
		r = fd;
		snprintf(err, METRICS_ERR_LEN, "cannot listen on %s: %s",
			 o->listen, strerror(-fd));
		errno = -fd;
		goto fail;
	}
	/* epoll on Linux: the collector's descriptors go past select()'s
	 * FD_SETSIZE with many agents connected */
	m->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
					     MHD_USE_AUTO,
				     0, NULL, NULL, handle, m,
				     MHD_OPTION_LISTEN_SOCKET, fd,
				     MHD_OPTION_CONNECTION_LIMIT,
				     (unsigned)CONNECTION_LIMIT,
				     MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				     (unsigned)PER_ADDRESS_LIMIT,
				     MHD_OPTION_CONNECTION_TIMEOUT,
				     (unsigned)CONNECTION_TIMEOUT_S,
				     MHD_OPTION_NOTIFY_CONNECTION, on_connection,
				     m, MHD_OPTION_NOTIFY_COMPLETED,
				     on_completed, m, MHD_OPTION_END);
	if (!m->daemon) {
		close(fd);
		snprintf(err, METRICS_ERR_LEN,
			 "cannot start the HTTP server (libmicrohttpd) on %s",
			 o->listen);
		errno = EIO;
		goto fail;
	}
	r = pthread_create(&m->watchdog, NULL, watchdog, m);
	if (r != 0) {
		MHD_stop_daemon(m->daemon);
		snprintf(err, METRICS_ERR_LEN,
			 "cannot start the metrics watchdog: %s", strerror(r));
		errno = r;
		goto fail;
	}
	info = MHD_get_daemon_info(m->daemon, MHD_DAEMON_INFO_BIND_PORT);
	m->port = info ? info->port : 0;
	if (!m->port) {
		struct sockaddr_storage a;
		socklen_t alen = sizeof(a);

		if (getsockname(fd, (struct sockaddr *)&a, &alen) == 0)
			m->port = ntohs(a.ss_family == AF_INET6 ?
						((struct sockaddr_in6 *)&a)->sin6_port :
						((struct sockaddr_in *)&a)->sin_port);
	}
	return m;
fail:
	pg_free(m->pg);
	pthread_cond_destroy(&m->wake);
	pthread_mutex_destroy(&m->lock);
	free(m);
	return NULL;
}

unsigned metrics_port(const struct metrics *m)
{
	return m->port;
}

void metrics_publish(struct metrics *m, const struct collector_health *h)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->health = *h;
	pthread_mutex_unlock(&m->lock);
}

void metrics_note_handshake(struct metrics *m, bool accepted)
{
	if (m)
		atomic_fetch_add_explicit(accepted ? &m->accepted : &m->refused,
					  1, memory_order_relaxed);
}

void metrics_stop(struct metrics *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->stopping = true;
	pthread_cond_signal(&m->wake);
	pthread_mutex_unlock(&m->lock);
	pthread_join(m->watchdog, NULL);
	/* joins the thread and closes the listening socket (and the
	 * connections: on_connection frees what the watchdog watched) */
	MHD_stop_daemon(m->daemon);
	pg_free(m->pg);
	pthread_cond_destroy(&m->wake);
	pthread_mutex_destroy(&m->lock);
	free(m);
}
