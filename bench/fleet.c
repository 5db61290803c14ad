/* SPDX-License-Identifier: MIT */
/* A simulated fleet on loopback for the load programs (fleet.h). */
#include "fleet.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <json-c/json.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "cleanup.h"
#include "codec.h"
#include "log.h"
#include "report.h"
#include "run.h"
#include "spool.h"

#define READY_TIMEOUT_S 30 /* for the collector to listen */

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


int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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

/* Runs argv; its stdout in *ret_out (free it) when ret_out is not NULL. */
static int run_checked(char *const argv[], char **ret_out)
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

static int write_file(const char *path, const char *data, size_t len,
		      mode_t mode)
{
	_cleanup_close_ int fd =
		open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	if (fd < 0)
		return -errno;
	while (len) {
		ssize_t n = write(fd, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		data += n;
		len -= (size_t)n;
	}
	return 0;
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
	r = write_file(path, list, off, 0644);
	if (r < 0)
		return log_error("cannot write '%s': %s", path, strerror(-r));
	return 0;
}

/* Runs the agent and parses what it printed as a JSON object. */
static struct json_object *agent_json(char *const argv[])
{
	_cleanup_free_ char *out = NULL;
	struct json_object *j;

	if (run_checked(argv, &out) < 0)
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
	int64_t started = realtime_ms();
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
		if (run_checked(run_argv, NULL) < 0)
			return -1;
		return spooled_report(spool, &f->tmpl);
	}
	probe = agent_json(probe_argv);
	if (!probe)
		return -1;
	/* through the codec, so that the template is freed alike */
	r = report_build(probe, NULL, started, realtime_ms(), &rep, err);
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
	r = codec_validate_report(t, realtime_ms(), err);
	if (r < 0)
		log_error("the simulated report is invalid: %s", err);
	else if ((r = codec_pack_report(t, &m->buf, &m->len)) < 0)
		log_error("cannot pack the report: %s", strerror(-r));
	*h = saved;
	t->run_id = saved_id;
	return r < 0 ? -1 : 0;
}

/* ---- PostgreSQL and the collector ---- */

static int pg_harness_start(struct fleet *f)
{
	char *argv[] = { PG_HARNESS, "start", f->pg_dir, NULL };
	_cleanup_free_ char *out = NULL;

	f->pg_started = true; /* a half-started server is stopped too */
	if (run_checked(argv, &out) < 0)
		return -1;
	out[strcspn(out, "\n")] = '\0';
	if (!*out || strlen(out) >= sizeof(f->conninfo))
		return log_error("'%s start' printed no connection string",
				 PG_HARNESS);
	strcpy(f->conninfo, out);
	return 0;
}

static void pg_stop(struct fleet *f)
{
	char *argv[] = { PG_HARNESS, "stop", f->pg_dir, NULL };

	if (f->pg_started)
		run_checked(argv, NULL);
	f->pg_started = false;
}

/* The argv of `collector COMMAND -c empty.conf --dsn CONNINFO [extra...]`:
 * free argv[3] (the config path) and argv. */
static char **collector_argv(const struct fleet *f, const char *command,
			     char *const extra[], size_t n_extra)
{
	char **argv = calloc(n_extra + 16, sizeof(*argv));
	size_t n = 0;

	if (!argv)
		return NULL;
	argv[n++] = (char *)f->collector_path;
	argv[n++] = (char *)command;
	argv[n++] = "-c";
	if (asprintf(&argv[n++], "%s/empty.conf", f->work) < 0) {
		free(argv);
		return NULL;
	}
	argv[n++] = "--dsn";
	argv[n++] = (char *)f->conninfo;
	for (size_t i = 0; i < n_extra; i++)
		argv[n++] = extra[i];
	return argv;
}

static int collector_migrate(const struct fleet *f)
{
	char **argv = collector_argv(f, "migrate", NULL, 0);
	int r;

	if (!argv)
		return log_error("out of memory");
	r = run_checked(argv, NULL);
	free(argv[3]);
	free(argv);
	return r;
}

int fleet_send(void *sock, const struct fleet_msg *m, bool granted)
{
	_cleanup_free_ uint8_t *offer = NULL;
	const void *buf = m->buf;
	size_t len = m->len;

	if (!granted) {
		int r = codec_pack_offer(m->run_id, m->len, &offer, &len);

		if (r < 0)
			return r;
		buf = offer;
	}
	return zmq_send(sock, buf, len, ZMQ_DONTWAIT) < 0 ? -errno : 0;
}

bool fleet_ack_expected(const Fleetbench__Ack *ack, bool granted)
{
	return (ack->status == FLEETBENCH__ACK__STATUS__GRANTED) != granted;
}

int fleet_pg_start(struct fleet *f)
{
	if (pg_harness_start(f) < 0 || collector_migrate(f) < 0)
		return -1;
	return 0;
}

void fleet_collector_log_tail(const struct fleet *f)
{
	char line[1024];
	char tail[20][sizeof(line)];
	size_t n = 0;
	_cleanup_fclose_ FILE *log = NULL;

	if (!f->starts)
		return;
	log = fopen(f->log_path, "re");
	if (!log)
		return;
	while (fgets(line, sizeof(line), log))
		memcpy(tail[n++ % ARRAY_SIZE(tail)], line, sizeof(line));
	fprintf(stderr, "--- the collector's last log lines (%s):\n",
		f->log_path);
	for (size_t i = n > ARRAY_SIZE(tail) ? n - ARRAY_SIZE(tail) : 0;
	     i < n; i++)
		fputs(tail[i % ARRAY_SIZE(tail)], stderr);
}

int fleet_collector_log_find(const struct fleet *f, const char *key,
			     char *out, size_t size)
{
	char line[1024];
	_cleanup_fclose_ FILE *log = fopen(f->log_path, "re");

	if (!log)
		return -errno;
	while (fgets(line, sizeof(line), log)) {
		char *p = strstr(line, key);

		if (p) {
			p += strlen(key);
			p[strcspn(p, "\n")] = '\0';
			snprintf(out, size, "%s", p);
			return 0;
		}
	}
	return -ENOENT;
}

int fleet_collector_start(struct fleet *f, const char *bind)
{
	char key[128], allow[128], line[256];
	char *extra[] = { "--bind", (char *)(bind ? bind : "tcp://127.0.0.1:*"),
			  "--server-key", key, "--allowlist", allow };
	char **argv, **all;
	size_t n_extra = ARRAY_SIZE(extra) + (size_t)f->n_serve_extra;
	int64_t until;
	int r;

	snprintf(f->log_path, sizeof(f->log_path), "%s/collector.%u.log",
		 f->work, ++f->starts);
	snprintf(key, sizeof(key), "%s/collector.key", f->work);
	snprintf(allow, sizeof(allow), "%s/allowlist", f->work);
	all = calloc(n_extra, sizeof(*all));
	if (!all)
		return log_error("out of memory");
	memcpy(all, extra, sizeof(extra));
	for (int i = 0; i < f->n_serve_extra; i++)
		all[ARRAY_SIZE(extra) + (size_t)i] = f->serve_extra[i];
	argv = collector_argv(f, "serve", all, n_extra);
	free(all);
	if (!argv)
		return log_error("out of memory");

	f->collector = fork();
	if (f->collector == 0) {
		int fd = open(f->log_path,
			      O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (fd < 0 || null < 0 || dup2(null, 0) < 0 ||
		    dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	r = f->collector < 0 ? -errno : 0;
	free(argv[3]);
	free(argv);
	if (r < 0) {
		f->collector = 0;
		return log_error("cannot fork: %s", strerror(-r));
	}

	until = mono_ns() + READY_TIMEOUT_S * 1000000000LL;
	while (fleet_collector_log_find(f, "listening on ", line,
					sizeof(line)) < 0) {
		int status;

		if (waitpid(f->collector, &status, WNOHANG) == f->collector) {
			f->collector = 0;
			fleet_collector_log_tail(f);
			return log_error("the collector exited at start (status %d)",
					 WIFEXITED(status) ?
						 WEXITSTATUS(status) :
						 128 + WTERMSIG(status));
		}
		if (fleet_interrupted || mono_ns() > until) {
			fleet_collector_log_tail(f);
			return log_error("the collector did not start listening within %d s",
					 READY_TIMEOUT_S);
		}
		usleep(20000);
	}
	line[strcspn(line, " ")] = '\0';
	if (strncmp(line, "tcp://127.0.0.1:", 16) ||
	    strlen(line) >= sizeof(f->endpoint))
		return log_error("the collector listens on '%s', not on loopback",
				 line);
	strcpy(f->endpoint, line);
	return 0;
}

int fleet_collector_stop(struct fleet *f)
{
	int status = 0;
	pid_t r = 0;

	if (f->collector <= 0)
		return 0;
	kill(f->collector, SIGTERM);
	for (int i = 0; i < 1000 && r == 0; i++) {
		r = waitpid(f->collector, &status, WNOHANG);
		if (r == 0)
			usleep(10000);
	}
	if (r == 0) {
		log_warn("the collector did not stop in 10 s: killing it");
		kill(f->collector, SIGKILL);
		waitpid(f->collector, &status, 0);
	}
	f->collector = 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void fleet_collector_kill(struct fleet *f)
{
	if (f->collector <= 0)
		return;
	kill(f->collector, SIGKILL);
	waitpid(f->collector, NULL, 0);
	f->collector = 0;
}

int fleet_collector_backends(const struct fleet *f, pid_t *pids, int max)
{
	PGconn *pg = PQconnectdb(f->conninfo);
	PGresult *res = NULL;
	int n = 0;

	if (PQstatus(pg) == CONNECTION_OK)
		res = PQexec(pg, "SELECT pid FROM pg_stat_activity "
				 "WHERE application_name = 'fleetbench-collector' "
				 "ORDER BY backend_start DESC");
	if (res && PQresultStatus(res) == PGRES_TUPLES_OK)
		for (int i = 0; i < PQntuples(res) && n < max; i++)
			pids[n++] = (pid_t)atoi(PQgetvalue(res, i, 0));
	PQclear(res);
	PQfinish(pg);
	return n;
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
	snprintf(conf, sizeof(conf), "%s/empty.conf", f->work);
	f->n_keys = n_keys;
	if (write_file(conf, "", 0, 0644) < 0)
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
	pg_stop(f);
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

/* ---- measuring ---- */

int proc_mem(pid_t pid, long *ret_hwm_kb, long *ret_rss_kb)
{
	char path[64], line[256];
	long hwm = -1, rss = -1;
	_cleanup_fclose_ FILE *f = NULL;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "VmHWM: %ld kB", &hwm);
		sscanf(line, "VmRSS: %ld kB", &rss);
	}
	if (hwm < 0 || rss < 0)
		return -ENODATA;
	*ret_hwm_kb = hwm;
	*ret_rss_kb = rss;
	return 0;
}

int proc_reset_hwm(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/clear_refs", (int)pid);
	return write_file(path, "5", 1, 0);
}

double proc_cpu_ms(pid_t pid)
{
	char path[64], line[1024];
	unsigned long long ut, st;
	_cleanup_fclose_ FILE *f = NULL;
	char *p;

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f || !fgets(line, sizeof(line), f))
		return -1;
	/* after "(comm)", which may hold spaces: fields 14 and 15 */
	p = strrchr(line, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return -1;
	return (double)(ut + st) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

double self_cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000.0 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000.0;
}

int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double percentile(const double *sorted, size_t n, double p)
{
	size_t rank = (size_t)(p * (double)n);

	if ((double)rank < p * (double)n)
		rank++;
	return n ? sorted[rank ? rank - 1 : 0] : 0;
}

int num_opt_parse(const struct num_opt *o, const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < o->min ||
	    v > o->max)
		return log_error("bad value for --%s: '%s' (a whole number from %lu to %lu)",
				 o->name, s, o->min, o->max);
	*o->value = v;
	return 0;
}
