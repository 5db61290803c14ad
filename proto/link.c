/* SPDX-License-Identifier: MIT */
/* ZeroMQ transport with CURVE: key files, the allowlist, the ZAP handler. */
#include "link.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "cleanup.h"
#include "fdio.h"

/* A DRAFT option in 4.3: zmq.h hides it, Debian's libzmq still honours it
 * (link_server_new checks that setsockopt succeeds). */
#ifndef ZMQ_ZAP_ENFORCE_DOMAIN
#define ZMQ_ZAP_ENFORCE_DOMAIN 93
#endif

#define LINK_KEY_BYTES 32
#define LINK_ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define LINK_KEY_FILE_MAX 256 /* bytes read from a .pub or .key file */
#define LINK_LINE_MAX 4096 /* longest line accepted in an allowlist file */
#define LINK_HEARTBEAT_MAX_MS 600000
#define LINK_RECONNECT_MAX_MS 30000
#define LINK_ROUTER_RCVHWM 100 /* messages queued per agent */
#define LINK_ZAP_FRAMES 8 /* ZAP request frames kept; the rest are drained */
/* ZMQ_MAXMSGSIZE counts the frame on the wire; CURVE wraps each payload in
 * a MESSAGE command: 8 bytes of name, an 8-byte nonce, a flags byte and a
 * 16-byte MAC. Adding them keeps max_msg_size about payload bytes. */
#define LINK_CURVE_OVERHEAD 33

static void err_set(char *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void err_set(char *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(err, LINK_ERR_LEN, fmt, ap);
	va_end(ap);
}

/* ---- keys ---- */

/* 40 characters that decode as Z85. A valid key never starts with '#'
 * (Z85 digit 84 in the leading place overflows 32 bits), which is what
 * lets allowlist files use '#' for comments. */
static bool key_valid(const char *z85)
{
	uint8_t bin[LINK_KEY_BYTES];

	if (!z85 || strlen(z85) != LINK_KEY_LEN)
		return false;
	return zmq_z85_decode(bin, z85) != NULL;
}

/* Writes "KEY\n" to a new file (O_EXCL) with exactly this mode. */
static int key_file_write(int dfd, const char *name, const char *key,
			  mode_t mode)
{
	_cleanup_close_ int fd = -1;
	char line[LINK_KEY_LEN + 2];
	int r;

	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	snprintf(line, sizeof(line), "%s\n", key);
	/* the umask may have taken bits away: the modes are part of the
	 * contract (a readable .pub, a private .key) */
	if (fchmod(fd, mode) < 0)
		r = -errno;
	else if ((r = fd_write_all(fd, line, strlen(line))) == 0 && fsync(fd) < 0)
		r = -errno;
	explicit_bzero(line, sizeof(line));
	return r;
}

int link_keygen(const char *dir, const char *name, struct link_keypair *ret)
{
	_cleanup_free_ char *pub_name = NULL, *key_name = NULL;
	_cleanup_close_ int dfd = -1;
	struct link_keypair kp;
	int r;

	if (!dir || !name || !*name || strchr(name, '/') ||
	    !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	if (asprintf(&pub_name, "%s.pub", name) < 0 ||
	    asprintf(&key_name, "%s.key", name) < 0)
		return -ENOMEM;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (zmq_curve_keypair(kp.public_key, kp.secret_key) < 0)
		return -errno;

	/* Never overwrite: refuse before creating anything when either
	 * file is there, and O_EXCL closes the race that leaves. */
	if (faccessat(dfd, pub_name, F_OK, AT_SYMLINK_NOFOLLOW) == 0 ||
	    faccessat(dfd, key_name, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		r = -EEXIST;
		goto out;
	}
	r = key_file_write(dfd, key_name, kp.secret_key, 0600);
	if (r < 0) {
		if (r != -EEXIST) /* ours, half written */
			unlinkat(dfd, key_name, 0);
		goto out;
	}
	r = key_file_write(dfd, pub_name, kp.public_key, 0644);
	if (r < 0) {
		unlinkat(dfd, key_name, 0);
		if (r != -EEXIST)
			unlinkat(dfd, pub_name, 0);
		goto out;
	}
	if (fsync(dfd) < 0) {
		r = -errno;
		goto out;
	}
	if (ret)
		*ret = kp;
out:
	explicit_bzero(&kp, sizeof(kp));
	return r;
}

/* Reads a small key file whole, NUL-terminated, into buf. */
static int key_file_read(int fd, char *buf, size_t size)
{
	size_t len = 0;

	for (;;) {
		ssize_t n = read(fd, buf + len, size - 1 - len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == size - 1)
			return -EINVAL; /* far longer than one key */
	}
	buf[len] = '\0';
	return 0;
}

/* Accepts a key with surrounding white space (the trailing newline). */
static int key_parse(char *text, char out[LINK_KEY_LEN + 1])
{
	char *end;

	text += strspn(text, " \t\r\n");
	end = text + strlen(text);
	while (end > text && strchr(" \t\r\n", end[-1]))
		end--;
	*end = '\0';
	if (!key_valid(text))
		return -EINVAL;
	memcpy(out, text, LINK_KEY_LEN + 1);
	return 0;
}

int link_read_public(const char *path, char out[LINK_KEY_LEN + 1])
{
	_cleanup_close_ int fd = -1;
	char buf[LINK_KEY_FILE_MAX];
	int r;

	if (!path || !out)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = key_file_read(fd, buf, sizeof(buf));
	if (r < 0)
		return r;
	return key_parse(buf, out);
}

int link_read_secret(const char *path, struct link_keypair *ret)
{
	_cleanup_close_ int fd = -1;
	char buf[LINK_KEY_FILE_MAX];
	struct link_keypair kp;
	struct stat st;
	int r;

	if (!path || !ret)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (st.st_mode & (S_IRWXG | S_IRWXO))
		return -EPERM;
	r = key_file_read(fd, buf, sizeof(buf));
	if (r == 0)
		r = key_parse(buf, kp.secret_key);
	if (r == 0 && zmq_curve_public(kp.public_key, kp.secret_key) < 0)
		r = -errno;
	if (r == 0)
		*ret = kp;
	explicit_bzero(buf, sizeof(buf));
	explicit_bzero(&kp, sizeof(kp));
	return r;
}

/* ---- allowlist ---- */

struct link_allowlist {
	char (*keys)[LINK_KEY_LEN + 1]; /* sorted, unique */
	size_t n, cap;
};

static int allowlist_add(struct link_allowlist *a, const char *key)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 16;
		void *p = reallocarray(a->keys, cap, sizeof(*a->keys));

		if (!p)
			return -ENOMEM;
		a->keys = p;
		a->cap = cap;
	}
	memcpy(a->keys[a->n++], key, LINK_KEY_LEN + 1);
	return 0;
}

static int key_cmp(const void *x, const void *y)
{
	return strcmp(x, y);
}

/*
 * One key per line; blank lines and lines starting with '#' are skipped,
 * and a key may be followed by white space and a '#' comment.
 */
static int allowlist_read_file(struct link_allowlist *a, const char *path,
			       char *err)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	size_t size = 0;
	unsigned lineno = 0;
	ssize_t len;

	f = fopen(path, "re");
	if (!f) {
		int r = -errno;

		err_set(err, "cannot open allowlist '%s': %s", path,
			strerror(-r));
		return r;
	}
	while (errno = 0, (len = getline(&line, &size, f)) >= 0) {
		char *key, *rest;
		size_t klen;

		lineno++;
		if (len > LINK_LINE_MAX) {
			err_set(err, "%s:%u: line too long", path, lineno);
			return -EINVAL;
		}
		if (memchr(line, '\0', (size_t)len)) {
			err_set(err, "%s:%u: NUL byte in line", path, lineno);
			return -EINVAL;
		}
		key = line + strspn(line, " \t\r\n");
		if (!*key || *key == '#')
			continue;
		klen = strcspn(key, " \t\r\n");
		rest = key + klen;
		rest += strspn(rest, " \t\r\n");
		key[klen] = '\0';
		if (*rest && *rest != '#') {
			err_set(err, "%s:%u: unexpected text after the key",
				path, lineno);
			return -EINVAL;
		}
		if (klen != LINK_KEY_LEN) {
			err_set(err,
				"%s:%u: malformed key: %zu characters, not %d",
				path, lineno, klen, LINK_KEY_LEN);
			return -EINVAL;
		}
		if (!key_valid(key)) {
			err_set(err, "%s:%u: malformed key: not valid Z85",
				path, lineno);
			return -EINVAL;
		}
		if (allowlist_add(a, key) < 0) {
			err_set(err, "%s: out of memory", path);
			return -ENOMEM;
		}
	}
	if (ferror(f)) {
		int r = errno ? -errno : -EIO;

		err_set(err, "cannot read allowlist '%s': %s", path,
			strerror(-r));
		return r;
	}
	return 0;
}

static int pub_filter(const struct dirent *d)
{
	size_t len = strlen(d->d_name);

	return d->d_name[0] != '.' && len > 4 &&
	       !strcmp(d->d_name + len - 4, ".pub");
}

/* Every *.pub file in dir, in name order so errors are reproducible. */
static int allowlist_read_dir(struct link_allowlist *a, const char *dir,
			      char *err)
{
	struct dirent **names = NULL;
	int n, r = 0;

	n = scandir(dir, &names, pub_filter, alphasort);
	if (n < 0) {
		r = -errno;
		err_set(err, "cannot read allowlist directory '%s': %s", dir,
			strerror(-r));
		return r;
	}
	for (int i = 0; i < n; i++) {
		_cleanup_free_ char *path = NULL;
		struct stat st;

		if (r == 0 &&
		    asprintf(&path, "%s/%s", dir, names[i]->d_name) < 0) {
			err_set(err, "%s: out of memory", dir);
			r = -ENOMEM;
		}
		/* a .pub directory or dangling link is not a key */
		if (r == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode))
			r = allowlist_read_file(a, path, err);
		free(names[i]);
	}
	free(names);
	return r;
}

struct link_allowlist *link_allowlist_load(const char *path,
					   char err[LINK_ERR_LEN])
{
	struct link_allowlist *a;
	struct stat st;
	size_t j = 0;
	int r;

	if (!path) {
		err_set(err, "no allowlist given");
		errno = EINVAL;
		return NULL;
	}
	if (stat(path, &st) < 0) {
		r = -errno;
		err_set(err, "cannot open allowlist '%s': %s", path,
			strerror(-r));
		errno = -r;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		err_set(err, "out of memory");
		return NULL;
	}
	r = S_ISDIR(st.st_mode) ? allowlist_read_dir(a, path, err) :
				  allowlist_read_file(a, path, err);
	if (r < 0) {
		link_allowlist_free(a);
		errno = -r;
		return NULL;
	}
	if (a->n)
		qsort(a->keys, a->n, sizeof(*a->keys), key_cmp);
	for (size_t i = 0; i < a->n; i++)
		if (j == 0 || strcmp(a->keys[j - 1], a->keys[i]))
			memmove(a->keys[j++], a->keys[i], LINK_KEY_LEN + 1);
	a->n = j;
	return a;
}

void link_allowlist_free(struct link_allowlist *a)
{
	if (!a)
		return;
	free(a->keys);
	free(a);
}

size_t link_allowlist_count(const struct link_allowlist *a)
{
	return a ? a->n : 0;
}

bool link_allowlist_has(const struct link_allowlist *a, const char *z85)
{
	if (!a || !a->n || !z85 || strlen(z85) != LINK_KEY_LEN)
		return false;
	return bsearch(z85, a->keys, a->n, sizeof(*a->keys), key_cmp) != NULL;
}

/* ---- socket options shared by both ends ---- */

struct int_opt {
	int option;
	int value;
	const char *name;
};

#define INT_OPT(o, v) { o, v, #o }

/* Returns 0, or -errno with *ret_failed naming the option refused. */
static int set_int_opts(void *sock, const struct int_opt *opts, size_t n,
			const char **ret_failed)
{
	for (size_t i = 0; i < n; i++)
		if (zmq_setsockopt(sock, opts[i].option, &opts[i].value,
				   sizeof(int)) < 0) {
			*ret_failed = opts[i].name;
			return -errno;
		}
	return 0;
}

static int heartbeat_ivl(int ms)
{
	if (ms <= 0)
		return LINK_HEARTBEAT_DEFAULT_MS;
	return ms > LINK_HEARTBEAT_MAX_MS ? -1 : ms;
}

static int set_key(void *sock, int option, const char *z85, const char *name,
		   const char **ret_failed)
{
	if (zmq_setsockopt(sock, option, z85, LINK_KEY_LEN + 1) < 0) {
		*ret_failed = name;
		return -errno;
	}
	return 0;
}

/* ---- client ---- */

void *link_client_new(void *zctx, const struct link_client_opts *o)
{
	const char *failed = NULL;
	void *sock;
	int ivl, r;

	if (!zctx || !o || !o->endpoint ||
	    (ivl = heartbeat_ivl(o->heartbeat_ms)) < 0) {
		errno = EINVAL;
		return NULL;
	}
	if (o->server_public && (!o->keys || !key_valid(o->server_public) ||
				 !key_valid(o->keys->public_key) ||
				 !key_valid(o->keys->secret_key))) {
		errno = EINVAL;
		return NULL;
	}
	sock = zmq_socket(zctx, ZMQ_DEALER);
	if (!sock)
		return NULL;

	const struct int_opt opts[] = {
		INT_OPT(ZMQ_LINGER, 0),
		/* queue only on a finished handshake: a send with no
		 * collector reachable times out instead of piling up */
		INT_OPT(ZMQ_IMMEDIATE, 1),
		INT_OPT(ZMQ_HEARTBEAT_IVL, ivl),
		INT_OPT(ZMQ_HEARTBEAT_TIMEOUT, 3 * ivl),
		INT_OPT(ZMQ_HEARTBEAT_TTL, 3 * ivl),
		/* a refused agent backs off instead of knocking every 100 ms */
		INT_OPT(ZMQ_RECONNECT_IVL_MAX, LINK_RECONNECT_MAX_MS),
	};
	r = set_int_opts(sock, opts, ARRAY_SIZE(opts), &failed);
	if (r == 0 && o->server_public) {
		r = set_key(sock, ZMQ_CURVE_SERVERKEY, o->server_public,
			    "ZMQ_CURVE_SERVERKEY", &failed);
		if (r == 0)
			r = set_key(sock, ZMQ_CURVE_PUBLICKEY,
				    o->keys->public_key, "ZMQ_CURVE_PUBLICKEY",
				    &failed);
		if (r == 0)
			r = set_key(sock, ZMQ_CURVE_SECRETKEY,
				    o->keys->secret_key, "ZMQ_CURVE_SECRETKEY",
				    &failed);
	}
	if (r == 0 && zmq_connect(sock, o->endpoint) < 0)
		r = -errno;
	if (r < 0) {
		zmq_close(sock);
		errno = -r;
		return NULL;
	}
	return sock;
}

/* ---- server ---- */

struct link_server {
	void *router;
	void *zap; /* REP at inproc://zeromq.zap.01, the thread's */
	void *zap_control; /* the thread's end of the stop pair */
	void *control; /* our end */
	pthread_t thread;
	bool thread_running;
	bool insecure;
	link_auth_log_fn log;
	void *log_data;
	pthread_mutex_t lock; /* guards allowlist and refused */
	struct link_allowlist *allowlist;
	unsigned long refused;
	char endpoint[256];
	char control_endpoint[64];
};

static bool frame_is(zmq_msg_t *m, const char *s)
{
	size_t len = strlen(s);

	return zmq_msg_size(m) == len && !memcmp(zmq_msg_data(m), s, len);
}

static void frame_str(zmq_msg_t *m, char *out, size_t size)
{
	size_t len = zmq_msg_size(m);

	if (len >= size)
		len = size - 1;
	memcpy(out, zmq_msg_data(m), len);
	out[len] = '\0';
}

static int zap_send(void *sock, const void *data, size_t len, bool more)
{
	return zmq_send(sock, data, len, more ? ZMQ_SNDMORE : 0) < 0 ? -errno :
								       0;
}

/*
 * Answers one ZAP request (RFC 27): version, request id, domain, address,
 * identity, mechanism, credentials. 200 only for CURVE with an allowed
 * key, or NULL when the server runs plaintext; 400 for everything else.
 */
static int zap_handle(struct link_server *s)
{
	zmq_msg_t f[LINK_ZAP_FRAMES];
	char address[128] = "", mechanism[16] = "";
	char key[LINK_KEY_LEN + 1] = "";
	const char *status = "400", *text = "not allowed";
	bool accepted = false, has_key = false;
	int nf = 0, more = 1, r = 0;

	while (more) {
		zmq_msg_t drop;
		zmq_msg_t *m = nf < LINK_ZAP_FRAMES ? &f[nf] : &drop;

		zmq_msg_init(m);
		if (zmq_msg_recv(m, s->zap, 0) < 0) {
			r = -errno;
			zmq_msg_close(m);
			goto out;
		}
		more = zmq_msg_more(m);
		if (m == &drop)
			zmq_msg_close(m);
		else
			nf++;
	}

	if (nf < 6 || !frame_is(&f[0], "1.0")) {
		status = "500";
		text = "malformed ZAP request";
	} else {
		frame_str(&f[3], address, sizeof(address));
		frame_str(&f[5], mechanism, sizeof(mechanism));
		if (!frame_is(&f[2], LINK_ZAP_DOMAIN)) {
			text = "unknown ZAP domain";
		} else if (!strcmp(mechanism, "CURVE") && nf == 7 &&
			   zmq_msg_size(&f[6]) == LINK_KEY_BYTES) {
			zmq_z85_encode(key, zmq_msg_data(&f[6]),
				       LINK_KEY_BYTES);
			has_key = true;
			pthread_mutex_lock(&s->lock);
			accepted = !s->insecure &&
				   link_allowlist_has(s->allowlist, key);
			pthread_mutex_unlock(&s->lock);
			if (!accepted)
				text = "key not in the allowlist";
		} else if (!strcmp(mechanism, "NULL") && nf == 6) {
			accepted = s->insecure;
			if (!accepted)
				text = "plaintext not allowed";
		} else {
			text = "mechanism not allowed";
		}
	}
	if (accepted) {
		status = "200";
		text = "OK";
	} else {
		pthread_mutex_lock(&s->lock);
		s->refused++;
		pthread_mutex_unlock(&s->lock);
	}
	if (s->log)
		s->log(s->log_data, accepted, address, mechanism,
		       has_key ? key : NULL);

	/* The user id becomes the "User-Id" property of every message the
	 * peer sends, so the collector can tell agents apart. */
	r = zap_send(s->zap, "1.0", 3, true);
	if (r == 0)
		r = zap_send(s->zap, nf > 1 ? zmq_msg_data(&f[1]) : "",
			     nf > 1 ? zmq_msg_size(&f[1]) : 0, true);
	if (r == 0)
		r = zap_send(s->zap, status, 3, true);
	if (r == 0)
		r = zap_send(s->zap, text, strlen(text), true);
	if (r == 0)
		r = zap_send(s->zap, key, accepted ? strlen(key) : 0, true);
	if (r == 0)
		r = zap_send(s->zap, "", 0, false);
out:
	for (int i = 0; i < nf; i++)
		zmq_msg_close(&f[i]);
	return r;
}

/*
 * Closes the handler's sockets. The explicit unbind matters: zmq_close
 * leaves an inproc endpoint registered until the reaper gets to it, and
 * a bind racing that reports EADDRINUSE and can hang zmq_ctx_term.
 */
static void zap_close(struct link_server *s)
{
	if (s->zap) {
		zmq_unbind(s->zap, LINK_ZAP_ENDPOINT);
		zmq_close(s->zap);
	}
	if (s->zap_control)
		zmq_close(s->zap_control);
}

static void *zap_thread(void *arg)
{
	struct link_server *s = arg;

	for (;;) {
		zmq_pollitem_t items[] = {
			{ s->zap_control, 0, ZMQ_POLLIN, 0 },
			{ s->zap, 0, ZMQ_POLLIN, 0 },
		};

		if (zmq_poll(items, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break; /* ETERM: the context is going away */
		}
		if (items[0].revents & ZMQ_POLLIN)
			break; /* link_server_free */
		/* A malformed request is answered, not an error. Only a
		 * dying context (or a broken REP state) fails here; then
		 * the handler goes, and with ZAP_ENFORCE_DOMAIN every new
		 * handshake is refused: it fails closed. */
		if ((items[1].revents & ZMQ_POLLIN) && zap_handle(s) < 0)
			break;
	}
	zap_close(s);
	return NULL;
}

/*
 * Binds the ZAP handler and its stop pair, then starts the thread with
 * every signal blocked, so SIGHUP and SIGTERM reach the main loop only.
 */
static int zap_start(struct link_server *s, void *zctx, char *err)
{
	static atomic_ulong serial;
	const int zero = 0;
	const char *control = s->control_endpoint;
	sigset_t all, old;
	int r;

	snprintf(s->control_endpoint, sizeof(s->control_endpoint),
		 "inproc://fleetbench-zap-stop-%lu",
		 atomic_fetch_add(&serial, 1));
	s->zap = zmq_socket(zctx, ZMQ_REP);
	s->zap_control = zmq_socket(zctx, ZMQ_PAIR);
	s->control = zmq_socket(zctx, ZMQ_PAIR);
	if (!s->zap || !s->zap_control || !s->control) {
		r = -errno;
		err_set(err, "cannot create the ZAP handler sockets: %s",
			zmq_strerror(-r));
		return r;
	}
	zmq_setsockopt(s->zap, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_setsockopt(s->zap_control, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_setsockopt(s->control, ZMQ_LINGER, &zero, sizeof(zero));
	if (zmq_bind(s->zap, LINK_ZAP_ENDPOINT) < 0) {
		r = -errno;
		if (r == -EADDRINUSE)
			err_set(err,
				"a ZAP handler is already bound at '%s' in "
				"this context",
				LINK_ZAP_ENDPOINT);
		else
			err_set(err, "cannot bind the ZAP handler '%s': %s",
				LINK_ZAP_ENDPOINT, zmq_strerror(-r));
		return r;
	}
	if (zmq_bind(s->control, control) < 0 ||
	    zmq_connect(s->zap_control, control) < 0) {
		r = -errno;
		err_set(err, "cannot bind '%s': %s", control, zmq_strerror(-r));
		return r;
	}

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&s->thread, NULL, zap_thread, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0) {
		err_set(err, "cannot start the ZAP handler thread: %s",
			strerror(-r));
		return r;
	}
	s->thread_running = true;
	return 0;
}

static int router_setup(struct link_server *s, const struct link_server_opts *o,
			int ivl, char *err)
{
	const int64_t max_msg =
		(o->max_msg_size > 0 ? o->max_msg_size : LINK_MAX_MSG_DEFAULT) +
		(o->keys ? LINK_CURVE_OVERHEAD : 0);
	const char *failed = NULL;
	size_t len = sizeof(s->endpoint);
	int r;

	const struct int_opt opts[] = {
		INT_OPT(ZMQ_LINGER, 0),
		/* a send to an agent that went away fails (EHOSTUNREACH)
		 * instead of vanishing silently */
		INT_OPT(ZMQ_ROUTER_MANDATORY, 1),
		INT_OPT(ZMQ_RCVHWM, LINK_ROUTER_RCVHWM),
		INT_OPT(ZMQ_HEARTBEAT_IVL, ivl),
		INT_OPT(ZMQ_HEARTBEAT_TIMEOUT, 3 * ivl),
		INT_OPT(ZMQ_HEARTBEAT_TTL, 3 * ivl),
		/* no ZAP handler answering means no connection */
		INT_OPT(ZMQ_ZAP_ENFORCE_DOMAIN, 1),
	};
	r = set_int_opts(s->router, opts, ARRAY_SIZE(opts), &failed);
	if (r == 0 && zmq_setsockopt(s->router, ZMQ_MAXMSGSIZE, &max_msg,
				     sizeof(max_msg)) < 0) {
		r = -errno;
		failed = "ZMQ_MAXMSGSIZE";
	}
	if (r == 0 && zmq_setsockopt(s->router, ZMQ_ZAP_DOMAIN, LINK_ZAP_DOMAIN,
				     strlen(LINK_ZAP_DOMAIN)) < 0) {
		r = -errno;
		failed = "ZMQ_ZAP_DOMAIN";
	}
	if (r == 0 && o->keys) {
		const int one = 1;

		r = set_key(s->router, ZMQ_CURVE_SECRETKEY, o->keys->secret_key,
			    "ZMQ_CURVE_SECRETKEY", &failed);
		if (r == 0)
			r = set_key(s->router, ZMQ_CURVE_PUBLICKEY,
				    o->keys->public_key, "ZMQ_CURVE_PUBLICKEY",
				    &failed);
		if (r == 0 && zmq_setsockopt(s->router, ZMQ_CURVE_SERVER, &one,
					     sizeof(one)) < 0) {
			r = -errno;
			failed = "ZMQ_CURVE_SERVER";
		}
	}
	if (r < 0) {
		err_set(err, "cannot set %s on the ROUTER socket: %s", failed,
			zmq_strerror(-r));
		return r;
	}
	if (zmq_bind(s->router, o->bind) < 0) {
		r = -errno;
		err_set(err, "cannot bind '%s': %s", o->bind, zmq_strerror(-r));
		return r;
	}
	if (zmq_getsockopt(s->router, ZMQ_LAST_ENDPOINT, s->endpoint, &len) <
	    0) {
		r = -errno;
		err_set(err, "cannot read the endpoint bound for '%s': %s",
			o->bind, zmq_strerror(-r));
		return r;
	}
	return 0;
}

/* Closes the ROUTER, then stops the ZAP thread; keeps the allowlist. */
static void server_stop(struct link_server *s)
{
	if (s->router)
		zmq_close(s->router);
	s->router = NULL;
	if (s->thread_running) {
		/* DONTWAIT: a thread that already left has no pipe to fill */
		zmq_send(s->control, "", 0, ZMQ_DONTWAIT);
		pthread_join(s->thread, NULL);
		s->thread_running = false;
	} else {
		zap_close(s);
	}
	s->zap = s->zap_control = NULL;
	if (s->control) {
		zmq_unbind(s->control, s->control_endpoint);
		zmq_close(s->control);
	}
	s->control = NULL;
}

struct link_server *link_server_new(void *zctx,
				    const struct link_server_opts *o,
				    char err[LINK_ERR_LEN])
{
	struct link_server *s;
	int ivl, r;

	if (!zctx || !o || !o->bind) {
		err_set(err, "no context or bind endpoint given");
		errno = EINVAL;
		return NULL;
	}
	if ((ivl = heartbeat_ivl(o->heartbeat_ms)) < 0) {
		err_set(err, "heartbeat interval %d ms is out of range (1-%d)",
			o->heartbeat_ms, LINK_HEARTBEAT_MAX_MS);
		errno = EINVAL;
		return NULL;
	}
	if (o->keys && (!key_valid(o->keys->public_key) ||
			!key_valid(o->keys->secret_key))) {
		err_set(err, "the server keypair is not two Z85 keys");
		errno = EINVAL;
		return NULL;
	}
	if (o->keys && !o->allowlist) {
		err_set(err, "CURVE needs an allowlist of agent keys");
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		err_set(err, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->insecure = !o->keys;
	s->log = o->log;
	s->log_data = o->log_data;
	s->allowlist = o->allowlist;

	/* RFC 27: the handler must be there before the socket it guards */
	r = zap_start(s, zctx, err);
	if (r < 0)
		goto fail;
	s->router = zmq_socket(zctx, ZMQ_ROUTER);
	if (!s->router) {
		r = -errno;
		err_set(err, "cannot create the ROUTER socket: %s",
			zmq_strerror(-r));
		goto fail;
	}
	r = router_setup(s, o, ivl, err);
	if (r < 0)
		goto fail;
	return s;
fail:
	server_stop(s);
	s->allowlist = NULL; /* still the caller's */
	link_server_free(s);
	errno = -r;
	return NULL;
}

void *link_server_socket(struct link_server *s)
{
	return s->router;
}

const char *link_server_endpoint(struct link_server *s)
{
	return s->endpoint;
}

void link_server_set_allowlist(struct link_server *s, struct link_allowlist *a)
{
	struct link_allowlist *old;

	if (!s) {
		link_allowlist_free(a);
		return;
	}
	pthread_mutex_lock(&s->lock);
	old = s->allowlist;
	s->allowlist = a;
	pthread_mutex_unlock(&s->lock);
	link_allowlist_free(old);
}

bool link_server_peer_allowed(struct link_server *s, const char *user_id)
{
	bool allowed;

	if (s->insecure)
		return true;
	pthread_mutex_lock(&s->lock);
	allowed = link_allowlist_has(s->allowlist, user_id);
	pthread_mutex_unlock(&s->lock);
	return allowed;
}

unsigned long link_server_refused(struct link_server *s)
{
	unsigned long n;

	pthread_mutex_lock(&s->lock);
	n = s->refused;
	pthread_mutex_unlock(&s->lock);
	return n;
}

void link_server_free(struct link_server *s)
{
	if (!s)
		return;
	server_stop(s);
	link_allowlist_free(s->allowlist);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
