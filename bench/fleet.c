/* SPDX-License-Identifier: MIT */
/*
 * A simulated fleet on loopback for the load programs (fleet.h): the work
 * directory, keys, the report template and the simulated agents' messages.
 * PostgreSQL and the collector are fleet_server.c's.
 */
#include "fleet.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "cleanup.h"
#include "clock.h"
#include "codec.h"
#include "fdio.h"
#include "log.h"
#include "report.h"
#include "run.h"
#include "spool.h"

volatile sig_atomic_t fleet_interrupted;

/* The labels the simulated hosts carry, by agent index. */
static const struct label {
	const char *provider, *instance_type, *region;
} labels[] = {
	{ "aws", "m5.large", "eu-central-1" },
	{ "aws", "c6i.xlarge", "us-east-1" },
	{ "gcp", "n2-standard-2", "europe-west4" },
	{ "hetzner", "cx22", "fsn1" },
	{ "digitalocean", "s-2vcpu-4gb", "fra1" },
};

static void on_signal(int sig)
{
	fleet_interrupted = 1;
}

void fleet_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int fleet_check_time(const struct fleet *f)
{
	if (fleet_interrupted)
		return -EINTR;
	if (mono_ns() > f->deadline_ns)
		return -ETIMEDOUT;
	return 0;
}

const char *fleet_time_error(int r)
{
	return r == -EINTR ? "interrupted" : "timed out (see --timeout)";
}

/* Two file descriptors per socket here (the TCP connection and the
 * socket's mailbox), one per connection in the collector. */
int fleet_fd_limit(size_t sockets)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)sockets * 2 + 256;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return log_error("getrlimit: %s", strerror(errno));
	if (rl.rlim_cur < need && rl.rlim_max >= need) {
		rl.rlim_cur = need;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			return log_error("setrlimit: %s", strerror(errno));
	}
	if (rl.rlim_cur < need)
		return log_error("%zu sockets need %llu file descriptors, the hard limit is %llu (ulimit -Hn)",
				 sockets, (unsigned long long)need,
				 (unsigned long long)rl.rlim_max);
	return 0;
}

/* ---- setup: programs, files, keys ---- */

int fleet_run_checked(char *const argv[], char **ret_out)
{
	struct run_result rr;
	int r = run_program(argv, (uid_t)-1, &rr);

	if (r < 0)
		return log_error("cannot run '%s': %s", argv[0], strerror(-r));
	if (rr.status != 0) {
		log_error("'%s %s' failed with status %d: %s%s", argv[0],
			  argv[1], rr.status, rr.err, rr.out);
		run_result_release(&rr);
		return -1;
	}
	if (ret_out)
		*ret_out = TAKE_PTR(rr.out);
	run_result_release(&rr);
	return 0;
}

int fleet_write_file(const char *path, const char *data, size_t len,
		     mode_t mode)
{
	_cleanup_close_ int fd =
		open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	if (fd < 0)
		return -errno;
	return fd_write_all(fd, data, len);
}

/* The collector's keys in work/collector.{key,pub}; the agents' keys in
 * memory, their public keys one a line in work/allowlist. */
static int keys_make(struct fleet *f)
{
	_cleanup_free_ char *list = NULL;
	struct link_keypair server;
	char path[128];
	size_t off = 0;
	int r;

	r = link_keygen(f->work, "collector", &server);
	explicit_bzero(server.secret_key, sizeof(server.secret_key));
	if (r < 0)
		return log_error("cannot write the collector's keys in '%s': %s",
				 f->work, strerror(-r));
	memcpy(f->server_public, server.public_key, sizeof(f->server_public));
	f->keys = calloc(f->n_keys, sizeof(*f->keys));
	list = malloc(f->n_keys * (LINK_KEY_LEN + 1) + 1);
	if (!f->keys || !list)
		return log_error("out of memory for %zu keys", f->n_keys);
	for (size_t i = 0; i < f->n_keys; i++) {
		struct link_keypair *k = &f->keys[i];

		if (zmq_curve_keypair(k->public_key, k->secret_key) < 0)
			return log_error("zmq_curve_keypair: %s",
					 zmq_strerror(errno));
		memcpy(list + off, k->public_key, LINK_KEY_LEN);
		off += LINK_KEY_LEN;
		list[off++] = '\n';
	}
	snprintf(path, sizeof(path), "%s/allowlist", f->work);
	r = fleet_write_file(path, list, off, 0644);
	if (r < 0)
		return log_error("cannot write '%s': %s", path, strerror(-r));
	return 0;
}

/* Runs the agent and parses what it printed as a JSON object. */
static struct json_object *agent_json(char *const argv[])
{
	_cleanup_free_ char *out = NULL;
	struct json_object *j;

	if (fleet_run_checked(argv, &out) < 0)
		return NULL;
	j = json_tokener_parse(out);
	if (!j || !json_object_is_type(j, json_type_object)) {
		log_error("'%s %s --json' printed no JSON object", argv[0],
			  argv[1]);
		json_object_put(j);
		return NULL;
	}
	return j;
}

/*
 * The one report the agent spooled in dir (its `run --no-send`), read and
 * unpacked by the codec into *ret (codec_free_report()). 0 or -1, logged.
 */
static int spooled_report(const char *dir, Fleetbench__Report **ret)
{
	char err[SPOOL_ERR_LEN > CODEC_ERR_LEN ? SPOOL_ERR_LEN :
						 CODEC_ERR_LEN];
	struct spool *s = spool_open(dir, 0, err);
	_cleanup_free_ struct spool_entry *e = NULL;
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;
	int n, r = -1;

	if (!s)
		return log_error("cannot open the spool '%s': %s", dir, err);
	n = spool_list(s, &e);
	if (n != 1)
		log_error("the agent spooled %d reports in '%s', not one", n,
			  dir);
	else if (spool_read(s, &e[0], &buf, &len, err) < 0)
		log_error("cannot read the agent's report: %s", err);
	else if (codec_unpack_report(buf, len, ret, err) < 0)
		log_error("the agent's report does not unpack: %s", err);
	else
		r = 0;
	spool_close(s);
	return r;
}

/*
 * The report every simulated run is a variant of, as the agent makes it:
 * its real probe of this host and a whole quick bench suite at tiny sizes
 * (every benchmark and variant, three repeats, in well under a second),
 * which `run --no-send` spools; with probe_only, the probe alone (`probe
 * --json`) as the agent's report builder makes it.
 */
static int template_make(struct fleet *f)
{
	char dir[96], conf[96], spool[96], err[REPORT_ERR_LEN];
	Fleetbench__Report *rep = NULL;
	_cleanup_free_ uint8_t *buf = NULL;
	struct json_object *probe = NULL;
	int64_t started = wall_ms();
	size_t len;
	int r = -1;

	snprintf(dir, sizeof(dir), "%s/agent", f->work);
	snprintf(conf, sizeof(conf), "%s/empty.conf", f->work);
	snprintf(spool, sizeof(spool), "%s/agent-spool", f->work);
	if (mkdir(dir, 0755) < 0)
		return log_error("cannot create '%s': %s", dir,
				 strerror(errno));
	char *probe_argv[] = { (char *)f->agent_path, "probe", "-c", conf,
			       "--json", "--steal-window", "0", "--dir", dir,
			       NULL };
	char *run_argv[] = { (char *)f->agent_path, "run", "-c", conf,
			     "--no-send", "--spool-dir", spool,
			     "--steal-window", "0", "--profile", "quick",
			     "--repeats", "3", "--chase-bytes", "1M",
			     "--chase-accesses", "1000", "--fault-bytes", "4M",
			     "--file-bytes", "4M", "--io-ms", "10",
			     "--seq-bytes", "1M", "--fs-increments", "1000",
			     "--dir", dir, NULL };

	if (!f->probe_only) {
		if (fleet_run_checked(run_argv, NULL) < 0)
			return -1;
		return spooled_report(spool, &f->tmpl);
	}
	probe = agent_json(probe_argv);
	if (!probe)
		return -1;
	/* through the codec, so that the template is freed alike */
	r = report_build(probe, NULL, started, wall_ms(), &rep, err);
	if (r < 0)
		log_error("cannot build a report from the agent's output: %s",
			  err);
	if (r == 0)
		r = codec_pack_report(rep, &buf, &len);
	if (r == 0)
		r = codec_unpack_report(buf, len, &f->tmpl, err);
	report_free(rep);
	json_object_put(probe);
	return r < 0 ? -1 : 0;
}

int fleet_msg_make(const struct fleet *f, size_t agent, struct fleet_msg *m)
{
	Fleetbench__Report *t = f->tmpl;
	Fleetbench__Host *h = t->host, saved = *h;
	const struct label *l = &labels[agent % ARRAY_SIZE(labels)];
	char *saved_id = t->run_id, hostname[32], machine_id[33];
	char err[CODEC_ERR_LEN];
	int r = codec_uuid_new(m->run_id);

	if (r < 0)
		return log_error("cannot make a run_id: %s", strerror(-r));
	snprintf(hostname, sizeof(hostname), "sim-%05zu", agent);
	snprintf(machine_id, sizeof(machine_id), "f1ee7be0%024zx", agent);
	t->run_id = m->run_id;
	h->hostname = hostname;
	h->machine_id = machine_id;
	h->provider = (char *)l->provider;
	h->instance_type = (char *)l->instance_type;
	h->region = (char *)l->region;
	h->provider_source = h->instance_type_source = h->region_source =
		"config";
	r = codec_validate_report(t, wall_ms(), err);
	if (r < 0)
		log_error("the simulated report is invalid: %s", err);
	else if ((r = codec_pack_report(t, &m->buf, &m->len)) < 0)
		log_error("cannot pack the report: %s", strerror(-r));
	*h = saved;
	t->run_id = saved_id;
	return r < 0 ? -1 : 0;
}

int fleet_send(void *sock, const struct fleet_msg *m, bool granted,
	       unsigned offer_flags)
{
	_cleanup_free_ uint8_t *offer = NULL;
	const void *buf = m->buf;
	size_t len = m->len;

	if (!granted) {
		int r = codec_pack_offer(m->run_id, m->len, offer_flags, &offer,
					 &len);

		if (r < 0)
			return r;
		buf = offer;
	}
	return zmq_send(sock, buf, len, ZMQ_DONTWAIT) < 0 ? -errno : 0;
}

bool fleet_ack_expected(const Fleetbench__Ack *ack, bool granted)
{
	if (granted) /* the report's answer: never a grant */
		return ack->status != FLEETBENCH__ACK__STATUS__GRANTED;
	/* the offer's: a grant, or turned away, or refused (send.c) */
	return ack->status == FLEETBENCH__ACK__STATUS__GRANTED ||
	       ack->status == FLEETBENCH__ACK__STATUS__RETRY_LATER ||
	       ack->status == FLEETBENCH__ACK__STATUS__REJECTED;
}

/* ---- the whole fleet ---- */

int fleet_init(struct fleet *f, const char *name, size_t n_keys)
{
	char conf[96];

	/* short: the socket path of PostgreSQL lies below it */
	snprintf(f->work, sizeof(f->work), "/tmp/fb%s.XXXXXX", name);
	if (!mkdtemp(f->work)) {
		f->work[0] = '\0';
		return log_error("cannot create a work directory: %s",
				 strerror(errno));
	}
	/* as root PostgreSQL runs as another user, who must get to pg/ */
	chmod(f->work, 0711);
	snprintf(f->pg_dir, sizeof(f->pg_dir), "%s/pg", f->work);
	snprintf(f->standby_dir, sizeof(f->standby_dir), "%s/pg2", f->work);
	snprintf(conf, sizeof(conf), "%s/empty.conf", f->work);
	f->n_keys = n_keys;
	if (fleet_write_file(conf, "", 0, 0644) < 0)
		return log_error("cannot write '%s': %s", conf, strerror(errno));
	if (keys_make(f) < 0 || template_make(f) < 0)
		return -1;
	f->zctx = zmq_ctx_new();
	if (!f->zctx ||
	    zmq_ctx_set(f->zctx, ZMQ_MAX_SOCKETS, (int)n_keys + 64) < 0)
		return log_error("cannot set up a ZeroMQ context: %s",
				 zmq_strerror(errno));
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type,
			struct FTW *ftw)
{
	if (remove(path) < 0)
		log_warn("cannot remove '%s': %s", path, strerror(errno));
	return 0;
}

void fleet_release(struct fleet *f)
{
	if (f->zctx)
		zmq_ctx_term(f->zctx);
	f->zctx = NULL;
	fleet_collector_stop(f);
	fleet_pg_stop(f);
	codec_free_report(f->tmpl);
	f->tmpl = NULL;
	if (f->keys)
		explicit_bzero(f->keys, f->n_keys * sizeof(*f->keys));
	free(f->keys);
	f->keys = NULL;
	if (!f->work[0])
		return;
	if (f->keep)
		fprintf(stderr, "kept %s\n", f->work);
	else
		nftw(f->work, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}
