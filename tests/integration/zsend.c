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
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "cleanup.h"
#include "codec.h"
#include "config.h"
#include "link.h"
#include "sample_report.h"

static const char *arg_endpoint, *arg_server_key, *arg_agent_key;
#define MAX_REPORTS 64

static const char *arg_reports[MAX_REPORTS];
static size_t arg_n_reports;
#define OFFER_BYTES 20000 /* about a quick profile's report */

static const char *arg_file, *arg_offer, *arg_provider = "zsend";
static const char *arg_instance_type = "zsend-1";
static uint64_t arg_bytes;
static bool arg_has_bytes, arg_insecure;
static long arg_frames = 1, arg_timeout_ms = 5000;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: zsend --endpoint tcp://HOST:PORT\n"
		"             (--server-key NAME.pub --agent-key NAME.key | --insecure)\n"
		"             (--report [refuse:|failed:|oob:]RUN_ID... [--provider P] [--instance-type T] |\n"
		"              --file PATH | --bytes SIZE | --offer RUN_ID) [--frames N]\n"
		"             [--timeout MS]\n");
}

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

static int read_file(const char *path, uint8_t **ret, size_t *ret_len)
{
	_cleanup_fclose_ FILE *f = fopen(path, "rbe");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;

	if (!f)
		return -errno;
	for (;;) {
		if (len == cap) {
			void *p = realloc(buf, cap = cap ? 2 * cap : 65536);

			if (!p) {
				free(buf);
				return -ENOMEM;
			}
			buf = p;
		}
		size_t n = fread(buf + len, 1, cap - len, f);

		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		return -EIO;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

static int payload(size_t i, uint8_t **ret, size_t *ret_len)
{
	if (arg_n_reports)
		return build_report(arg_reports[i], ret, ret_len);
	if (arg_file)
		return read_file(arg_file, ret, ret_len);
	if (arg_offer)
		return codec_pack_offer(arg_offer, OFFER_BYTES, ret, ret_len);
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

/* Sends one message over arg_frames frames: 0, 1 or 3 (timeout). */
static int send_one(void *sock, const uint8_t *data, size_t len)
{
	for (long i = 0; i < arg_frames; i++) {
		bool first = i == 0;

		/* ZMQ_IMMEDIATE: the first frame waits for a handshake */
		if (zmq_send(sock, first ? data : (const uint8_t *)"",
			     first ? len : 0,
			     i + 1 < arg_frames ? ZMQ_SNDMORE : 0) < 0) {
			if (errno == EAGAIN) {
				printf("timeout: no connection within %ld ms\n",
				       arg_timeout_ms);
				return 3;
			}
			fprintf(stderr, "zsend: cannot send: %s\n",
				zmq_strerror(errno));
			return 1;
		}
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
		if (errno == EAGAIN) {
			printf("timeout: no answer within %ld ms\n",
			       arg_timeout_ms);
			return 3;
		}
		fprintf(stderr, "zsend: cannot receive: %s\n",
			zmq_strerror(errno));
		return 1;
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
	static const struct option opts[] = {
		{ "endpoint", required_argument, NULL, 'e' },
		{ "server-key", required_argument, NULL, 's' },
		{ "agent-key", required_argument, NULL, 'a' },
		{ "insecure", no_argument, NULL, 'i' },
		{ "report", required_argument, NULL, 'r' },
		{ "provider", required_argument, NULL, 'p' },
		{ "instance-type", required_argument, NULL, 't' },
		{ "file", required_argument, NULL, 'f' },
		{ "bytes", required_argument, NULL, 'b' },
		{ "offer", required_argument, NULL, 'o' },
		{ "frames", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char server_pub[LINK_KEY_LEN + 1];
	struct link_keypair keys;
	void *ctx, *sock;
	int c, r;

	/* a line per Ack as it comes: tests read the output while it runs */
	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			arg_endpoint = optarg;
			break;
		case 's':
			arg_server_key = optarg;
			break;
		case 'a':
			arg_agent_key = optarg;
			break;
		case 'i':
			arg_insecure = true;
			break;
		case 'r':
			if (arg_n_reports == MAX_REPORTS) {
				fprintf(stderr, "zsend: at most %d reports\n",
					MAX_REPORTS);
				return 2;
			}
			arg_reports[arg_n_reports++] = optarg;
			break;
		case 'p':
			arg_provider = optarg;
			break;
		case 't':
			arg_instance_type = optarg;
			break;
		case 'f':
			arg_file = optarg;
			break;
		case 'b':
			if (config_parse_size(optarg, &arg_bytes) < 0 ||
			    arg_bytes > (256u << 20)) {
				fprintf(stderr, "zsend: bad --bytes '%s'\n",
					optarg);
				return 2;
			}
			arg_has_bytes = true;
			break;
		case 'o':
			arg_offer = optarg;
			break;
		case 'n':
			arg_frames = strtol(optarg, NULL, 10);
			break;
		case 'T':
			arg_timeout_ms = strtol(optarg, NULL, 10);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || !arg_endpoint ||
	    (!arg_insecure && (!arg_server_key || !arg_agent_key)) ||
	    (!!arg_n_reports + !!arg_file + arg_has_bytes + !!arg_offer) != 1 ||
	    arg_frames < 1 || arg_frames > 1000 || arg_timeout_ms < 1 ||
	    arg_timeout_ms > 600000) {
		usage(stderr);
		return 2;
	}
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
