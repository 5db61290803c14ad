/* SPDX-License-Identifier: MIT */
/*
 * zflood: sends COUNT bad messages to a collector as an authorised agent
 * (CURVE, a key in its allowlist) and counts the answers, for
 * tests/reliability/test_bad_input.sh. Each message is one of:
 *
 *   flip        a valid report with 1 to 8 bits flipped
 *   truncate    a valid report cut short
 *   wrongtype   a valid report with a field of a wrong wire type added
 *   hugelen     a length-delimited field whose length prefix claims up
 *               to 2^63 bytes
 *   multiframe  2 to 5 frames: garbage, sometimes a valid report first
 *   random      1 byte to 64 KiB of random bytes
 *   empty       one empty frame
 *   oversize    more than --max-msg-size bytes: the collector must drop
 *               the connection unanswered, so it goes alone on a new
 *               socket watched by a monitor for the disconnect
 *
 * A mutant that the codec would still accept as a valid report is not bad
 * input: it is drawn again (and counted as redrawn). Messages go in
 * windows of up to 32 before their answers are read. Prints one summary
 * line; exits 0 when every message but the oversized was answered
 * REJECTED and every oversized one dropped, 1 otherwise, 2 bad usage.
 *
 * usage: zflood --endpoint E --server-key PUB --agent-key KEY --count N
 *               [--seed S] [--max-msg-size BYTES] [--timeout MS]
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "cleanup.h"
#include "codec.h"
#include "link.h"
#include "rand.h"
#include "sample_report.h"
#include "tool.h"

#define WINDOW 32
#define MAX_FRAMES 5
#define RANDOM_MAX (64u << 10)

enum kind {
	K_FLIP,
	K_TRUNCATE,
	K_WRONGTYPE,
	K_HUGELEN,
	K_MULTIFRAME,
	K_RANDOM,
	K_EMPTY,
	K_OVERSIZE,
	K_COUNT,
};

static const char *const kind_names[K_COUNT] = {
	"flip",       "truncate", "wrongtype", "hugelen",
	"multiframe", "random",   "empty",     "oversize",
};

/* One message: up to MAX_FRAMES frames. */
struct msg {
	enum kind kind;
	size_t n_frames;
	uint8_t *frame[MAX_FRAMES];
	size_t len[MAX_FRAMES];
};

struct flood {
	void *ctx, *sock;
	struct link_client_opts lo;
	struct rng rng;
	long timeout_ms;
	uint64_t max_msg;
	unsigned long kinds[K_COUNT], redrawn;
	unsigned long rejected, accepted, other, unanswered, dropped,
		oversize_answered;
};

static void die_oom(void)
{
	fprintf(stderr, "zflood: out of memory\n");
	exit(1);
}

static void msg_release(struct msg *m)
{
	for (size_t i = 0; i < m->n_frames; i++)
		free(m->frame[i]);
	*m = (struct msg){ 0 };
}

static uint8_t *random_bytes(struct flood *f, size_t len)
{
	uint8_t *p = malloc(len ? len : 1);

	if (!p)
		die_oom();
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)rng_next(&f->rng);
	return p;
}

/* A valid report of a random shape, packed. */
static uint8_t *valid_report(struct flood *f, size_t *ret_len)
{
	char run_id[37];
	struct sample_report s = {
		.shape = (unsigned)rng_below(&f->rng, 40),
	};
	uint8_t *buf = NULL;

	if (sample_report_pack_new(&s, run_id, &buf, ret_len) < 0)
		die_oom();
	return buf;
}

/* A protobuf varint of v at p (at most 10 bytes); returns its length. */
static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	do {
		p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return n;
}

/* The wire types of the Report's fields 1 to 12 (fleetbench.proto). */
static const uint8_t report_wire_types[13] = {
	[1] = 0, [2] = 2, [3] = 2, [4] = 2,  [5] = 2,  [6] = 0,
	[7] = 0, [8] = 2, [9] = 2, [10] = 2, [11] = 2, [12] = 0,
};

/* The report with one field of the wrong wire type, before or after it. */
static void wrongtype(struct flood *f, struct msg *m)
{
	size_t len, n = 0;
	uint8_t *rep = valid_report(f, &len), field[32];
	unsigned num = 1 + (unsigned)rng_below(&f->rng, 12), wt;
	uint8_t *out;

	do
		wt = (unsigned)rng_below(&f->rng, 6);
	while (wt == report_wire_types[num] || wt == 3 || wt == 4);
	n = put_varint(field, (uint64_t)num << 3 | wt);
	switch (wt) {
	case 0:
		n += put_varint(field + n, rng_next(&f->rng));
		break;
	case 1:
		memset(field + n, 0x41, 8);
		n += 8;
		break;
	case 2:
		n += put_varint(field + n, 3);
		memcpy(field + n, "abc", 3);
		n += 3;
		break;
	default: /* 5: 32-bit */
		memset(field + n, 0x42, 4);
		n += 4;
		break;
	}
	out = malloc(len + n);
	if (!out)
		die_oom();
	if (rng_below(&f->rng, 2)) {
		memcpy(out, field, n);
		memcpy(out + n, rep, len);
	} else {
		memcpy(out, rep, len);
		memcpy(out + len, field, n);
	}
	free(rep);
	m->frame[0] = out;
	m->len[0] = len + n;
}

/* A length-delimited field (one of the Report's) claiming a huge length,
 * with a few bytes behind it, alone or after a valid report. */
static void hugelen(struct flood *f, struct msg *m)
{
	static const unsigned fields[] = { 2, 3, 4, 5, 8, 9, 10, 11 };
	size_t len = 0, n;
	uint8_t *rep = rng_below(&f->rng, 2) ? valid_report(f, &len) : NULL;
	uint8_t *out = malloc(len + 32);
	uint64_t claim = (uint64_t)1 << (20 + rng_below(&f->rng, 44));

	if (!out)
		die_oom();
	if (rep)
		memcpy(out, rep, len);
	free(rep);
	n = len;
	n += put_varint(out + n,
			(uint64_t)fields[rng_below(&f->rng, 8)] << 3 | 2);
	n += put_varint(out + n, claim - 1 + rng_below(&f->rng, 2));
	memset(out + n, 0x61, 8);
	m->frame[0] = out;
	m->len[0] = n + 8;
}

static void make_one(struct flood *f, struct msg *m)
{
	size_t len;
	uint8_t *p;

	m->n_frames = 1;
	switch (m->kind) {
	case K_FLIP:
		p = valid_report(f, &len);
		for (uint64_t i = 0, n = 1 + rng_below(&f->rng, 8); i < n; i++) {
			uint64_t bit = rng_below(&f->rng, len * 8);

			p[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		}
		m->frame[0] = p;
		m->len[0] = len;
		break;
	case K_TRUNCATE:
		m->frame[0] = valid_report(f, &len);
		m->len[0] = 1 + rng_below(&f->rng, len - 1);
		break;
	case K_WRONGTYPE:
		wrongtype(f, m);
		break;
	case K_HUGELEN:
		hugelen(f, m);
		break;
	case K_MULTIFRAME:
		m->n_frames = 2 + rng_below(&f->rng, MAX_FRAMES - 1);
		for (size_t i = 0; i < m->n_frames; i++) {
			if (i == 0 && rng_below(&f->rng, 2)) {
				m->frame[0] = valid_report(f, &m->len[0]);
				continue;
			}
			m->len[i] = rng_below(&f->rng, 4096);
			m->frame[i] = random_bytes(f, m->len[i]);
		}
		break;
	case K_RANDOM:
		m->len[0] = 1 + rng_below(&f->rng, RANDOM_MAX);
		m->frame[0] = random_bytes(f, m->len[0]);
		break;
	case K_EMPTY:
		m->frame[0] = random_bytes(f, 0);
		m->len[0] = 0;
		break;
	default: /* K_OVERSIZE */
		m->len[0] = f->max_msg + 1 + rng_below(&f->rng, f->max_msg);
		m->frame[0] = random_bytes(f, m->len[0]);
		break;
	}
}

/* A bad message of a random kind; oversized ones are 1 in 500. */
static void make_msg(struct flood *f, struct msg *m)
{
	for (;;) {
		Fleetbench__Report *r = NULL;
		char err[CODEC_ERR_LEN];
		int valid;

		*m = (struct msg){ 0 };
		m->kind = rng_below(&f->rng, 500) == 0 ?
				  K_OVERSIZE :
				  (enum kind)rng_below(&f->rng, K_OVERSIZE);
		make_one(f, m);
		if (m->n_frames > 1 || m->kind == K_OVERSIZE)
			return;
		valid = codec_unpack_report(m->frame[0], m->len[0], &r, err) == 0;
		codec_free_report(r);
		if (!valid)
			return;
		f->redrawn++;
		msg_release(m);
	}
}

static int connect_sock(struct flood *f)
{
	int t = (int)f->timeout_ms;

	if (f->sock)
		zmq_close(f->sock);
	f->sock = link_client_new(f->ctx, &f->lo);
	if (!f->sock) {
		fprintf(stderr, "zflood: cannot connect to '%s': %s\n",
			f->lo.endpoint, zmq_strerror(errno));
		return -1;
	}
	zmq_setsockopt(f->sock, ZMQ_SNDTIMEO, &t, sizeof(t));
	zmq_setsockopt(f->sock, ZMQ_RCVTIMEO, &t, sizeof(t));
	return 0;
}

static int send_msg(struct flood *f, const struct msg *m)
{
	for (size_t i = 0; i < m->n_frames; i++) {
		if (zmq_send(f->sock, m->frame[i], m->len[i],
			     i + 1 < m->n_frames ? ZMQ_SNDMORE : 0) < 0) {
			fprintf(stderr, "zflood: cannot send: %s\n",
				zmq_strerror(errno));
			return -1;
		}
	}
	f->kinds[m->kind]++;
	return 0;
}

/* Reads one answer: 1 REJECTED, 2 another status, 0 none in time. */
static int recv_answer(struct flood *f)
{
	Fleetbench__Ack *ack = NULL;
	zmq_msg_t reply;
	int r;

	zmq_msg_init(&reply);
	if (zmq_msg_recv(&reply, f->sock, 0) < 0) {
		zmq_msg_close(&reply);
		return 0;
	}
	r = codec_unpack_ack(zmq_msg_data(&reply), zmq_msg_size(&reply), &ack);
	zmq_msg_close(&reply);
	if (r < 0)
		return 2;
	r = ack->status == FLEETBENCH__ACK__STATUS__REJECTED ? 1 : 2;
	if (r == 2)
		fprintf(stderr, "zflood: answered %d for run id '%s': %s\n",
			ack->status, ack->run_id, ack->reason ? ack->reason : "");
	codec_free_ack(ack);
	return r;
}

/* A window of ordinary messages, then their answers. */
static int window(struct flood *f, struct msg *ms, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (send_msg(f, &ms[i]) < 0)
			return -1;
	for (size_t i = 0; i < n; i++) {
		int r = recv_answer(f);

		if (r == 1) {
			f->rejected++;
		} else if (r == 2) {
			f->accepted++;
		} else {
			f->unanswered += n - i;
			/* a socket that lost its answers is not reused */
			return connect_sock(f);
		}
	}
	return 0;
}

/* Whether the collector closes the connection (a monitor event) before
 * it answers or the timeout passes: 1 dropped, 0 answered, -1 neither. */
static int await_drop(struct flood *f, void *mon)
{
	zmq_pollitem_t items[] = {
		{ f->sock, 0, ZMQ_POLLIN, 0 },
		{ mon, 0, ZMQ_POLLIN, 0 },
	};

	if (zmq_poll(items, 2, f->timeout_ms) <= 0)
		return -1;
	if (items[0].revents & ZMQ_POLLIN)
		return 0;
	for (int more = 1; more;) { /* the event, then its endpoint */
		zmq_msg_t part;

		zmq_msg_init(&part);
		if (zmq_msg_recv(&part, mon, 0) < 0)
			more = 0;
		else
			more = zmq_msg_more(&part);
		zmq_msg_close(&part);
	}
	return 1;
}

/* Alone on a new socket: the collector must drop the peer, unanswered. */
static int oversize(struct flood *f, const struct msg *m)
{
	static unsigned long n;
	char addr[64];
	void *mon;
	int r;

	if (connect_sock(f) < 0)
		return -1;
	snprintf(addr, sizeof(addr), "inproc://zflood-monitor-%lu", n++);
	mon = zmq_socket(f->ctx, ZMQ_PAIR);
	if (!mon || zmq_socket_monitor(f->sock, addr, ZMQ_EVENT_DISCONNECTED) < 0 ||
	    zmq_connect(mon, addr) < 0) {
		fprintf(stderr, "zflood: cannot monitor the socket: %s\n",
			zmq_strerror(errno));
		if (mon)
			zmq_close(mon);
		return -1;
	}
	r = send_msg(f, m);
	if (r == 0) {
		switch (await_drop(f, mon)) {
		case 1:
			f->dropped++;
			break;
		case 0:
			f->oversize_answered++;
			break;
		default:
			f->unanswered++;
			break;
		}
	}
	zmq_socket_monitor(f->sock, NULL, 0);
	zmq_close(mon);
	return r < 0 ? r : connect_sock(f);
}

static int flood(struct flood *f, unsigned long count)
{
	struct msg ms[WINDOW];
	size_t n = 0;
	int r = connect_sock(f);

	for (unsigned long i = 0; r == 0 && i < count; i++) {
		struct msg m;

		make_msg(f, &m);
		if (m.kind == K_OVERSIZE) {
			r = oversize(f, &m);
			msg_release(&m);
			continue;
		}
		ms[n++] = m;
		if (n == WINDOW || i + 1 == count) {
			r = window(f, ms, n);
			for (size_t k = 0; k < n; k++)
				msg_release(&ms[k]);
			n = 0;
		}
	}
	for (size_t k = 0; k < n; k++)
		msg_release(&ms[k]);
	if (f->sock)
		zmq_close(f->sock);
	return r;
}

static const char *arg_endpoint, *arg_server_key, *arg_agent_key;
static unsigned long arg_count, arg_timeout_ms = 5000;
static uint64_t arg_seed, arg_max_msg = CODEC_MAX_MESSAGE;

static const struct tool_opt opts[] = {
	TOOL_OPT_STRING("endpoint", &arg_endpoint),
	TOOL_OPT_STRING("server-key", &arg_server_key),
	TOOL_OPT_STRING("agent-key", &arg_agent_key),
	TOOL_OPT_ULONG("count", &arg_count, 1, ULONG_MAX),
	TOOL_OPT_U64("seed", &arg_seed),
	TOOL_OPT_SIZE("max-msg-size", &arg_max_msg, 64u << 20),
	TOOL_OPT_ULONG("timeout", &arg_timeout_ms, 1, 600000),
};

static const struct tool tool = TOOL("zflood", opts,
	"usage: zflood --endpoint E --server-key PUB --agent-key KEY --count N\n"
	"              [--seed S] [--max-msg-size BYTES] [--timeout MS]\n");

int main(int argc, char **argv)
{
	char server_pub[LINK_KEY_LEN + 1];
	struct link_keypair keys;
	struct flood f = { 0 };
	unsigned long sent = 0;
	int r;

	arg_seed = (uint64_t)time(NULL);
	tool_parse(&tool, argc, argv);
	if (!arg_endpoint || !arg_server_key || !arg_agent_key || !arg_count)
		tool_usage_error(&tool, "--endpoint, --server-key, --agent-key and --count are needed");
	f.lo.endpoint = arg_endpoint;
	f.timeout_ms = (long)arg_timeout_ms;
	f.max_msg = arg_max_msg;
	r = link_read_public(arg_server_key, server_pub);
	if (r == 0)
		r = link_read_secret(arg_agent_key, &keys);
	if (r < 0) {
		fprintf(stderr, "zflood: cannot read the keys: %s\n",
			strerror(-r));
		return 1;
	}
	f.lo.server_public = server_pub;
	f.lo.keys = &keys;
	rng_seed(&f.rng, arg_seed);
	f.ctx = zmq_ctx_new();
	if (!f.ctx)
		return 1;
	r = flood(&f, arg_count);
	zmq_ctx_term(f.ctx);
	for (int k = 0; k < K_COUNT; k++)
		sent += f.kinds[k];
	printf("seed %" PRIu64 ": sent %lu (", arg_seed, sent);
	for (int k = 0; k < K_COUNT; k++)
		printf("%s%s %lu", k ? ", " : "", kind_names[k], f.kinds[k]);
	printf("), redrawn %lu; rejected %lu, accepted %lu, unanswered %lu, oversize dropped %lu, oversize answered %lu\n",
	       f.redrawn, f.rejected, f.accepted, f.unanswered, f.dropped,
	       f.oversize_answered);
	return r == 0 && sent == arg_count && !f.accepted && !f.unanswered &&
			       !f.oversize_answered ?
		       0 :
		       1;
}
