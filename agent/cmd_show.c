/* SPDX-License-Identifier: MIT */
/* fleetbench-agent show FILE: a spooled or packed report as JSON. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "cmd.h"
#include "codec.h"
#include "log.h"
#include "pbjson.h"

/*
 * Prints the report in FILE, argv[2] (a spool file of any spool directory, or a bare
 * packed report) as JSON, every field by pbjson. A report the collector
 * would refuse is printed too, for that is when one looks: the reason goes
 * to stderr and the exit status is 1.
 */
int cmd_show(int argc, char **argv)
{
	_cleanup_free_ uint8_t *buf = NULL;
	Fleetbench__Report *rep = NULL;
	char err[SPOOL_ERR_LEN > CODEC_ERR_LEN ? SPOOL_ERR_LEN : CODEC_ERR_LEN];
	struct json_object *o;
	const char *path;
	size_t len = 0;
	int r, ret = ST_OK;

	if (argc != 3 || argv[2][0] == '-') {
		log_error("usage: fleetbench-agent show FILE");
		return ST_USAGE;
	}
	path = argv[2];
	r = spool_read_file(path, &buf, &len, err);
	if (r < 0) {
		log_error("%s", err);
		return ST_FAILURE;
	}
	r = codec_unpack_report(buf, len, &rep, err);
	if (r < 0 && !rep) {
		log_error("cannot read the report in '%s': %s", path, err);
		return ST_FAILURE;
	}
	if (r < 0) {
		log_error("the report in '%s' would be rejected: %s", path, err);
		ret = ST_FAILURE;
	}
	o = pbjson_from_message(&rep->base);
	codec_free_report(rep);
	if (!o) {
		log_error("out of memory");
		return ST_FAILURE;
	}
	printf("%s\n", json_object_to_json_string_ext(
				o, JSON_C_TO_STRING_PRETTY |
					   JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		log_error("cannot write the report: %s", strerror(errno));
		return ST_FAILURE;
	}
	return ret;
}

