/* SPDX-License-Identifier: MIT */
/*
 * ZeroMQ transport with CURVE, shared by agent and collector. Keys are Z85
 * text files: NAME.pub (40 characters and a newline, world-readable) and
 * NAME.key (the secret, mode 0600). Every function returns -errno; zmq's
 * -1/errno is converted here, once.
 */
#ifndef FLEETBENCH_LINK_H
#define FLEETBENCH_LINK_H

#include <stdbool.h>
#include <stddef.h>

#define LINK_KEY_LEN 40 /* Z85 text of a 32-byte key */
#define LINK_ERR_LEN 256
#define LINK_ZAP_DOMAIN "fleetbench"
#define LINK_HEARTBEAT_DEFAULT_MS 5000 /* heartbeat_ms <= 0 */
#define LINK_MAX_MSG_DEFAULT (4 << 20) /* max_msg_size <= 0 */

struct link_keypair {
	char public_key[LINK_KEY_LEN + 1];
	char secret_key[LINK_KEY_LEN + 1];
};

/*
 * Generates a keypair and writes dir/NAME.pub (0644) and dir/NAME.key
 * (0600), created exclusively and fsynced: when either file exists nothing
 * is written (-EEXIST). A NAME with '/' is -EINVAL. ret may be NULL.
 */
int link_keygen(const char *dir, const char *name, struct link_keypair *ret);

/* Reads a public key file (dir/NAME.pub or any path) into out; -EINVAL
 * unless it holds 40 Z85 characters (surrounding white space allowed). */
int link_read_public(const char *path, char out[LINK_KEY_LEN + 1]);

/* Reads a secret key file, refusing one readable by group or others
 * (-EPERM), and derives its public key. */
int link_read_secret(const char *path, struct link_keypair *ret);

/* ---- client (agent) ---- */

struct link_client_opts {
	const char *endpoint; /* tcp://host:port */
	const char *server_public; /* NULL: plaintext (--insecure) */
	const struct link_keypair *keys; /* NULL only when plaintext */
	int heartbeat_ms;
};

/* A DEALER socket connected to one endpoint with CURVE client keys, linger
 * 0, heartbeats on (timeout and TTL three intervals), ZMQ_IMMEDIATE so a
 * send only queues on a finished handshake, reconnects backing off to 30 s.
 * Plaintext is chosen by server_public == NULL alone (keys are then
 * ignored). Returns the socket or NULL with errno set (EINVAL for a key
 * that is not 40 Z85 characters or a heartbeat over 600000 ms). */
void *link_client_new(void *zctx, const struct link_client_opts *o);

/* ---- server (collector) ---- */

struct link_allowlist;

/*
 * Loads allowed agent public keys from a directory of *.pub files or a
 * file with one Z85 key per line (# comments). Returns NULL with errno and
 * err set on a malformed key (naming file and line). The keys are held in
 * a czmq zcertstore, whose lookups write the hash table's cache: one
 * thread at a time per allowlist (the link server locks around them).
 */
struct link_allowlist *link_allowlist_load(const char *path,
					   char err[LINK_ERR_LEN]);
void link_allowlist_free(struct link_allowlist *a);
size_t link_allowlist_count(const struct link_allowlist *a);
bool link_allowlist_has(const struct link_allowlist *a, const char *z85);

/*
 * Called from the ZAP thread for every refused (or accepted) peer, without
 * any lock held: it must be thread-safe and quick. peer_address is the IP
 * address libzmq reports, mechanism "CURVE" or "NULL", key_z85 the agent's
 * public key or NULL when there is none. Peers that fail before ZAP (a
 * plaintext client on a CURVE server, a client holding the wrong server
 * key) never reach it: libzmq drops them in the handshake.
 */
typedef void (*link_auth_log_fn)(void *data, bool accepted,
				 const char *peer_address,
				 const char *mechanism, const char *key_z85);

struct link_server;

struct link_server_opts {
	const char *bind; /* tcp://127.0.0.1:5555, tcp://0.0.0.0:5555 */
	const struct link_keypair *keys; /* NULL: plaintext (--insecure) */
	struct link_allowlist *allowlist; /* taken over on success; NULL only
					     plaintext */
	int max_msg_size; /* payload bytes per frame (ZMQ_MAXMSGSIZE less
			     the CURVE framing); bigger drops the peer */
	int heartbeat_ms;
	link_auth_log_fn log;
	void *log_data;
};

/*
 * Starts the ZAP handler (inproc://zeromq.zap.01, in zctx) BEFORE creating
 * and binding the ROUTER socket, with ZMQ_ZAP_ENFORCE_DOMAIN set, so a
 * missing handler fails closed. The handler accepts CURVE peers whose key
 * is in the allowlist (with keys) or NULL-mechanism peers (plaintext),
 * and refuses everything else with 400; log is called for every decision.
 * One server per context (the ZAP endpoint is per context). The ROUTER has
 * linger 0, ZMQ_ROUTER_MANDATORY (a send to a vanished agent fails with
 * EHOSTUNREACH, or EAGAIN with ZMQ_DONTWAIT when its queue is full) and a
 * receive queue of 100 messages per agent. Returns NULL with errno and err
 * set on failure; the allowlist then stays the caller's.
 */
struct link_server *link_server_new(void *zctx,
				    const struct link_server_opts *o,
				    char err[LINK_ERR_LEN]);

/* The ROUTER socket to poll and receive from. */
void *link_server_socket(struct link_server *s);

/* The endpoint actually bound (resolves tcp://127.0.0.1:*). */
const char *link_server_endpoint(struct link_server *s);

/* Swaps in a new allowlist (SIGHUP), taking it over; peers connected with
 * a removed key are not accepted on their next handshake. */
void link_server_set_allowlist(struct link_server *s,
			       struct link_allowlist *a);

/*
 * Whether a message's sender is allowed now: user_id is the message's
 * "User-Id" property (zmq_msg_gets(msg, "User-Id")), which the ZAP handler
 * sets to the agent's Z85 key. A connection made before a SIGHUP keeps
 * going, so the collector checks this per message to drop agents whose key
 * was removed. Always true in plaintext mode; false for NULL user_id.
 */
bool link_server_peer_allowed(struct link_server *s, const char *user_id);

/* Number of peers refused by ZAP so far. */
unsigned long link_server_refused(struct link_server *s);

/* Stops the ZAP thread and closes the socket. NULL is fine. */
void link_server_free(struct link_server *s);

#endif
