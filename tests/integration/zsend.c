/* SPDX-License-Identifier: MIT */
/*
 * zsend: a test client of tests/integration/test_collector.sh. Sends one
 * message to a collector, raw or a Report it builds, over CURVE (or
 * plaintext) and prints the Ack:
 *
 *   ack STATUS RUN_ID REASON     exit 0
 *   timeout: ...                 exit 3 (no connection, or no answer)
 *
 * What it sends: --report RUN_ID (a small Report; repeat it to send up to
 * 64 reports back to back, then read as many Acks; "refuse:RUN_ID" names
 * its host "refuse-me", for a test constraint to refuse; "failed:RUN_ID"
 * adds a failed variant, "oob:RUN_ID" a sample out of bounds), --file PATH (the file's
 * bytes), --bytes SIZE (that many 0xff bytes; 0: an empty frame),
 * --offer RUN_ID (an Offer of a report of OFFER_BYTES: the answer is
 * GRANTED, or none while the collector's admit_bytes are let in);
 * --frames N splits each message over N frames (the rest empty).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "cleanup.h"
#include "codec.h"
#include "file.h"
#include "link.h"
#include "sample_report.h"
#include "tool.h"

#define MAX_REPORTS 64
#define OFFER_BYTES 20000 /* about a quick profile's report */
#define NO_BYTES UINT64_MAX /* --bytes not given */

static const char *arg_endpoint, *arg_server_key, *arg_agent_key;
static const char *arg_reports[MAX_REPORTS];
static size_t arg_n_reports;
static const char *arg_file, *arg_offer, *arg_provider = "zsend";
static const char *arg_instance_type = "zsend-1";
static uint64_t arg_bytes = NO_BYTES;
static bool arg_insecure;
static unsigned long arg_frames = 1, arg_timeout_ms = 5000;

static const struct tool_opt opts[] = {
	TOOL_OPT_STRING("endpoint", &arg_endpoint),
	TOOL_OPT_STRING("server-key", &arg_server_key),
	TOOL_OPT_STRING("agent-key", &arg_agent_key),
	TOOL_OPT_FLAG("insecure", &arg_insecure),
	TOOL_OPT_LIST("report", arg_reports, &arg_n_reports),
	TOOL_OPT_STRING("provider", &arg_provider),
	TOOL_OPT_STRING("instance-type", &arg_instance_type),
	TOOL_OPT_STRING("file", &arg_file),
	TOOL_OPT_SIZE("bytes", &arg_bytes, 256u << 20),
	TOOL_OPT_STRING("offer", &arg_offer),
	TOOL_OPT_ULONG("frames", &arg_frames, 1, 1000),
	TOOL_OPT_ULONG("timeout", &arg_timeout_ms, 1, 600000),
};

static const struct tool tool = TOOL("zsend", opts,
	"usage: zsend --endpoint tcp://HOST:PORT\n"
	"             (--server-key NAME.pub --agent-key NAME.key | --insecure)\n"
	"             (--report [refuse:|failed:|oob:]RUN_ID... [--provider P] [--instance-type T] |\n"
	"              --file PATH | --bytes SIZE | --offer RUN_ID) [--frames N]\n"
	"             [--timeout MS]\n");

/*
 * A small Report (sample_report.h), valid for a valid RUN_ID; with a
 * prefix, refuse: for a hostname the test's constraint refuses, failed:
 * with a failed variant, oob: with a sample out of bounds.
 */
static int build_report(const char *run_id, uint8_t **ret, size_t *ret_len)
{
	bool refuse = !strncmp(run_id, "refuse:", 7);
	bool failed = !strncmp(run_id, "failed:", 7);
	bool oob = !strncmp(run_id, "oob:", 4);
	const struct sample_report s = {
		.run_id = refuse || failed ? run_id + 7 : oob ? run_id + 4 :
								 run_id,
		.failed = failed,
		.out_of_bounds = oob,
		.provider = arg_provider,
		.instance_type = arg_instance_type,
		.hostname = refuse ? "refuse-me" : "zsend-host",
		.agent_version = "zsend",
		.kernel_release = "6.1.0-zsend",
	};

	/* not validated: a bad RUN_ID is for the collector to refuse */
	return sample_report_pack(&s, ret, ret_len);
}

static int payload(size_t i, uint8_t **ret, size_t *ret_len)
{
	if (arg_n_reports)
		return build_report(arg_reports[i], ret, ret_len);
	if (arg_file) {
		char *buf = NULL;
		ssize_t n = read_full_file(arg_file, SSIZE_MAX, &buf);

		if (n < 0)
			return (int)n;
		*ret = (uint8_t *)buf;
		*ret_len = (size_t)n;
		return 0;
	}
	if (arg_offer)
		return codec_pack_offer(arg_offer, OFFER_BYTES, 0, ret, ret_len);
	*ret = malloc(arg_bytes ? arg_bytes : 1);
	if (!*ret)
		return -ENOMEM;
	memset(*ret, 0xff, arg_bytes);
	*ret_len = arg_bytes;
	return 0;
}

static const char *status_name(Fleetbench__Ack__Status s)
{
	switch (s) {
	case FLEETBENCH__ACK__STATUS__COMMITTED:
		return "COMMITTED";
	case FLEETBENCH__ACK__STATUS__DUPLICATE:
		return "DUPLICATE";
	case FLEETBENCH__ACK__STATUS__REJECTED:
		return "REJECTED";
	case FLEETBENCH__ACK__STATUS__RETRY_LATER:
		return "RETRY_LATER";
	case FLEETBENCH__ACK__STATUS__GRANTED:
		return "GRANTED";
	default:
		return "UNSPECIFIED";
	}
}

/* After a failed zmq call (errno): 3 for a timeout, printed as "timeout:
 * no WHAT within MS ms", else 1, "cannot DOING" on standard error. */
static int zmq_failed(const char *what, const char *doing)
{
	if (errno == EAGAIN) {
		printf("timeout: no %s within %lu ms\n", what, arg_timeout_ms);
		return 3;
	}
	fprintf(stderr, "zsend: cannot %s: %s\n", doing, zmq_strerror(errno));
	return 1;
}

/* Sends one message over arg_frames frames: 0, 1 or 3 (timeout). */
static int send_one(void *sock, const uint8_t *data, size_t len)
{
	for (unsigned long i = 0; i < arg_frames; i++) {
		bool first = i == 0;

		/* ZMQ_IMMEDIATE: the first frame waits for a handshake */
		if (zmq_send(sock, first ? data : (const uint8_t *)"",
			     first ? len : 0,
			     i + 1 < arg_frames ? ZMQ_SNDMORE : 0) < 0)
			return zmq_failed("connection", "send");
	}
	return 0;
}

/* Receives and prints one Ack: 0, 1 or 3 (timeout). */
static int recv_one(void *sock)
{
	Fleetbench__Ack *ack = NULL;
	zmq_msg_t reply;
	int r;

	zmq_msg_init(&reply);
	if (zmq_msg_recv(&reply, sock, 0) < 0) {
		zmq_msg_close(&reply);
		return zmq_failed("answer", "receive");
	}
	r = codec_unpack_ack(zmq_msg_data(&reply), zmq_msg_size(&reply), &ack);
	zmq_msg_close(&reply);
	if (r < 0) {
		fprintf(stderr, "zsend: the answer is not an Ack\n");
		return 1;
	}
	printf("ack %s %s %s\n", status_name(ack->status),
	       *ack->run_id ? ack->run_id : "-",
	       ack->reason ? ack->reason : "");
	codec_free_ack(ack);
	return 0;
}

/* Every message first, then every answer. */
static int exchange(void *sock)
{
	const int timeout = (int)arg_timeout_ms;
	size_t n = arg_n_reports ? arg_n_reports : 1;
	int r;

	zmq_setsockopt(sock, ZMQ_SNDTIMEO, &timeout, sizeof(timeout));
	zmq_setsockopt(sock, ZMQ_RCVTIMEO, &timeout, sizeof(timeout));
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ uint8_t *data = NULL;
		size_t len = 0;

		r = payload(i, &data, &len);
		if (r < 0) {
			fprintf(stderr, "zsend: cannot make the message: %s\n",
				strerror(-r));
			return 1;
		}
		r = send_one(sock, data, len);
		if (r)
			return r;
	}
	for (size_t i = 0; i < n; i++) {
		r = recv_one(sock);
		if (r)
			return r;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char server_pub[LINK_KEY_LEN + 1];
	struct link_keypair keys;
	void *ctx, *sock;
	int r;

	/* a line per Ack as it comes: tests read the output while it runs */
	setvbuf(stdout, NULL, _IOLBF, 0);
	tool_parse(&tool, argc, argv);
	if (!arg_endpoint)
		tool_usage_error(&tool, "--endpoint is missing");
	if (!arg_insecure && (!arg_server_key || !arg_agent_key))
		tool_usage_error(&tool, "--server-key and --agent-key, or --insecure");
	if (!!arg_n_reports + !!arg_file + (arg_bytes != NO_BYTES) +
		    !!arg_offer != 1)
		tool_usage_error(&tool, "one of --report, --file, --bytes and --offer");
	if (!arg_insecure) {
		r = link_read_public(arg_server_key, server_pub);
		if (r == 0)
			r = link_read_secret(arg_agent_key, &keys);
		if (r < 0) {
			fprintf(stderr, "zsend: cannot read the keys: %s\n",
				strerror(-r));
			return 1;
		}
	}
	ctx = zmq_ctx_new();
	if (!ctx)
		return 1;
	sock = link_client_new(ctx, &(struct link_client_opts){
		.endpoint = arg_endpoint,
		.server_public = arg_insecure ? NULL : server_pub,
		.keys = arg_insecure ? NULL : &keys,
	});
	if (!sock) {
		fprintf(stderr, "zsend: cannot connect to '%s': %s\n",
			arg_endpoint, zmq_strerror(errno));
		zmq_ctx_term(ctx);
		return 1;
	}
	r = exchange(sock);
	zmq_close(sock);
	zmq_ctx_term(ctx);
	return r;
}
