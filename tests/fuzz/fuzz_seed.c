/* SPDX-License-Identifier: MIT */
/*
 * Writes the seed corpus of fuzz_codec into DIR: valid Reports of COUNT
 * shapes (tests/sample_report.h), some carrying a text of quotes,
 * backslashes and non-ASCII in every free-text field, every other one with
 * capabilities (a host whose io_uring works, or one where it is refused),
 * half with the probe typed (Report.probe) instead of its JSON text, and
 * one Ack of each
 * status. Generated at build and test time rather than committed: the
 * seeds follow the codec when fleetbench.proto changes.
 *
 * usage: fuzz_seed DIR [COUNT]   (COUNT reports, default 64)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "codec.h"
#include "fdio.h"
#include "pbjson.h"
#include "sample_report.h"

static const char *const texts[] = {
	"it's \"quoted\" \\ back\\slashed",
	"'); DROP TABLE runs; --",
	"Grüße, 東京, ☃ and 🚀",
};

static int write_seed(const char *dir, const char *name, const uint8_t *data,
		      size_t len)
{
	char path[4096];
	int fd, r;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	r = fd_write_all(fd, data, len);
	if (close(fd) < 0 && r >= 0)
		r = -errno;
	return r;
}

/*
 * Appends Report.capabilities (field 14) to the packed report in *buf: a
 * message's fields may come in any order, so the report stays one Report.
 * Which of two hosts: io_uring working (odd), or refused (even).
 */
static int add_capabilities(unsigned long which, uint8_t **buf, size_t *len)
{
	static char *ops[] = { "NOP", "READV", "WRITEV", "READ_FIXED" };
	static char *feats[] = { "SINGLE_MMAP", "NODROP", "FAST_POLL" };
	Fleetbench__Capabilities c = FLEETBENCH__CAPABILITIES__INIT;
	Fleetbench__HugepagePool h[2] = { FLEETBENCH__HUGEPAGE_POOL__INIT,
					  FLEETBENCH__HUGEPAGE_POOL__INIT },
				 *hp[2] = { &h[0], &h[1] };
	size_t n, at;
	uint8_t *p;

	h[0].size_kb = 2048;
	h[1].size_kb = 1048576;
	h[0].has_nr = h[0].has_free = h[1].has_nr = h[1].has_free = 1;
	h[0].nr = 512;
	h[0].free = 100;
	c.thp_enabled = "madvise";
	c.thp_defrag = "defer+madvise";
	c.thp_shmem_enabled = "within_size";
	c.n_hugepages = 2;
	c.hugepages = hp;
	c.has_io_uring_disabled = c.has_io_uring_setup_errno = 1;
	c.has_vcpus = c.has_memory_kb = 1;
	c.vcpus = 8;
	c.memory_kb = 32u << 20;
	c.cpu_model = "AMD EPYC 7B13 64-Core Processor";
	c.vm = "kvm";
	c.container = "none";
	if (which % 2) {
		c.io_uring_setup = c.sqpoll = "ok";
		c.has_sqpoll_errno = 1;
		c.n_io_uring_opcodes = 4;
		c.io_uring_opcodes = ops;
		c.n_io_uring_features = 3;
		c.io_uring_features = feats;
	} else {
		c.io_uring_disabled = 2;
		c.io_uring_setup = "EPERM";
		c.io_uring_setup_errno = EPERM;
	}
	n = fleetbench__capabilities__get_packed_size(&c);
	p = realloc(*buf, *len + 1 + 10 + n);
	if (!p)
		return -ENOMEM;
	at = *len;
	p[at++] = 14 << 3 | 2; /* field 14, length-delimited */
	for (size_t v = n; ; v >>= 7) {
		p[at++] = (uint8_t)(v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		if (v <= 0x7f)
			break;
	}
	at += fleetbench__capabilities__pack(&c, p + at);
	*buf = p;
	*len = at;
	return 0;
}

/* A small probe with every kind of item the typed Probe holds: values,
 * nulls, unknown items, lists, nested lists, maps, each ProbeValue kind. */
static const char probe_text[] =
	"{\"meta\": {\"agent_version\": \"0.1.0\", \"root\": \"/\","
	" \"started\": \"2026-12-02T06:10:49Z\", \"elapsed_ms\": 1000},"
	" \"host\": {\"hostname\": \"vm\", \"vcpus_online\": 2,"
	" \"numa_nodes\": {\"unknown\": \"absent\"}},"
	" \"kernel\": {\"release\": \"6.1.0\", \"cmdline\": null,"
	" \"cmdline_params\": {\"hugepagesz\": [\"1G\", \"2M\"],"
	" \"hugepage_pools\": [{\"size\": \"1G\", \"count\": 4}]}},"
	" \"thp\": {\"enabled\": {\"selected\": \"madvise\","
	" \"options\": [\"always\", \"madvise\", \"never\"]},"
	" \"defrag\": {\"unknown\": \"EACCES\"}},"
	" \"hugetlb\": {\"sizes\": [{\"name\": \"hugepages-2048kB\","
	" \"size_kb\": 2048, \"nr\": 0, \"nodes\": [{\"node\": 0, \"nr\": 0}]}]},"
	" \"io_uring\": {\"setup\": \"ok\", \"setup_errno\": 0,"
	" \"memlock_limit_bytes\": \"unlimited\"},"
	" \"sysctl\": {\"vm.swappiness\": 60, \"net.core.default_qdisc\": \"fq\","
	" \"vm.dirty_ratio\": {\"unknown\": \"absent\"}},"
	" \"vmstat\": {\"counters\": {\"thp_fault_alloc\": 12}},"
	" \"steal\": {\"window_ms\": 1000, \"percent\": 0.25}}";

/*
 * Replaces the packed report's probe_json by the typed probe above
 * (Report.probe, field 15), as the agent sends it.
 */
static int add_probe(uint8_t **buf, size_t *len)
{
	struct json_object *o = json_tokener_parse(probe_text);
	Fleetbench__Report *r = fleetbench__report__unpack(NULL, *len, *buf);
	ProtobufCMessage *probe = NULL;
	char why[PBJSON_ERR_LEN];
	uint8_t *p = NULL;
	int ret = -ENOMEM;

	if (!o || !r)
		goto out;
	ret = pbjson_to_message(&fleetbench__probe__descriptor, o, &probe, why);
	if (ret < 0) {
		fprintf(stderr, "fuzz_seed: the seed probe: %s\n", why);
		goto out;
	}
	free(r->probe_json);
	r->probe_json = NULL;
	r->probe = (Fleetbench__Probe *)probe;
	p = malloc(fleetbench__report__get_packed_size(r));
	ret = -ENOMEM;
	if (p) {
		free(*buf);
		*len = fleetbench__report__pack(r, p);
		*buf = p;
		ret = 0;
	}
	r->probe = NULL;
out:
	protobuf_c_message_free_unpacked(probe, NULL);
	if (r)
		fleetbench__report__free_unpacked(r, NULL);
	json_object_put(o);
	return ret;
}

/* Writes what was packed (r: the packer's result) and frees it. */
static int emit(const char *dir, const char *name, int r, uint8_t *buf,
		size_t len)
{
	if (r == 0)
		r = write_seed(dir, name, buf, len);
	free(buf);
	if (r < 0)
		fprintf(stderr, "fuzz_seed: cannot write '%s/%s': %s\n", dir,
			name, strerror(-r));
	return r;
}

int main(int argc, char **argv)
{
	static const Fleetbench__Ack__Status statuses[] = {
		FLEETBENCH__ACK__STATUS__COMMITTED,
		FLEETBENCH__ACK__STATUS__DUPLICATE,
		FLEETBENCH__ACK__STATUS__REJECTED,
		FLEETBENCH__ACK__STATUS__RETRY_LATER,
	};
	unsigned long count = 64;
	const char *dir;
	char name[64], run_id[37];

	if (argc < 2 || argc > 3 ||
	    (argc == 3 && (count = strtoul(argv[2], NULL, 10)) == 0)) {
		fprintf(stderr, "usage: fuzz_seed DIR [COUNT]\n");
		return 2;
	}
	dir = argv[1];
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "fuzz_seed: cannot create '%s': %s\n", dir,
			strerror(errno));
		return 1;
	}
	for (unsigned long i = 0; i < count; i++) {
		struct sample_report s = {
			.run_id = run_id,
			.shape = (unsigned)i,
			.text = i % 8 == 7 ? texts[i / 8 % 3] : NULL,
		};
		uint8_t *buf = NULL;
		size_t len = 0;
		int r = codec_uuid_new(run_id);

		if (r == 0)
			r = sample_report_pack(&s, &buf, &len);
		if (r == 0 && i % 2)
			r = add_capabilities(i / 2, &buf, &len);
		if (r == 0 && i % 4 >= 2)
			r = add_probe(&buf, &len);
		snprintf(name, sizeof(name), "report-%03lu", i);
		if (emit(dir, name, r, buf, len) < 0)
			return 1;
	}
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
		uint8_t *buf = NULL;
		size_t len = 0;
		int r = codec_uuid_new(run_id);

		if (r == 0)
			r = codec_pack_ack(run_id, statuses[i],
					   i == 2 ? "run_id: not a canonical lowercase UUID" :
						    NULL,
					   &buf, &len);
		snprintf(name, sizeof(name), "ack-%zu", i);
		if (emit(dir, name, r, buf, len) < 0)
			return 1;
	}
	printf("%lu reports and %zu acks written to %s\n", count,
	       sizeof(statuses) / sizeof(statuses[0]), dir);
	return 0;
}
