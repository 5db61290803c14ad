/* SPDX-License-Identifier: MIT */
/* The simulated fleet's PostgreSQL and collector (fleet.h). */
#include "fleet.h"

#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "log.h"

#define READY_TIMEOUT_S 30 /* for the collector to listen */

static int pg_harness_start(struct fleet *f)
{
	char *argv[] = { PG_HARNESS, "start", f->pg_dir, NULL };
	_cleanup_free_ char *out = NULL;

	f->pg_started = true; /* a half-started server is stopped too */
	if (fleet_run_checked(argv, &out) < 0)
		return -1;
	out[strcspn(out, "\n")] = '\0';
	if (!*out || strlen(out) >= sizeof(f->conninfo))
		return log_error("'%s start' printed no connection string",
				 PG_HARNESS);
	strcpy(f->conninfo, out);
	return 0;
}

void fleet_pg_stop(struct fleet *f)
{
	char *argv[] = { PG_HARNESS, "stop", f->pg_dir, NULL };
	char *standby[] = { PG_HARNESS, "stop", f->standby_dir, NULL };

	if (f->standby_started)
		fleet_run_checked(standby, NULL);
	f->standby_started = false;
	if (f->pg_started)
		fleet_run_checked(argv, NULL);
	f->pg_started = false;
}

/* the standby of f->standby's mode, once the primary is migrated */
static int pg_harness_standby(struct fleet *f)
{
	char *argv[] = { PG_HARNESS, "standby", f->standby_dir, f->pg_dir,
			 (char *)f->standby, NULL };

	f->standby_started = true;
	return fleet_run_checked(argv, NULL);
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
	r = fleet_run_checked(argv, NULL);
	free(argv[3]);
	free(argv);
	return r;
}

int fleet_pg_start(struct fleet *f)
{
	if (pg_harness_start(f) < 0 || collector_migrate(f) < 0)
		return -1;
	if (f->standby && pg_harness_standby(f) < 0)
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
