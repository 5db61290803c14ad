/* SPDX-License-Identifier: MIT */
/*
 * The host's latest capabilities and figures as a node_exporter
 * textfile-collector file, DIR/fleetbench.prom, in the Prometheus text
 * format (docs/agent.md, "node_exporter textfile", names every metric and
 * label). Made from the wire Report, replaced atomically. Nothing here
 * logs: errors come back as -errno.
 */
#ifndef FLEETBENCH_TEXTFILE_H
#define FLEETBENCH_TEXTFILE_H

#include <stddef.h>

#include "fleetbench.pb-c.h"

/* The file's name in the directory; node_exporter reads DIR/ *.prom. */
#define TEXTFILE_NAME "fleetbench.prom"

/*
 * Whether dir can take the file: it exists, is a directory, and a file can
 * be created in it (created and removed again, so a read-only mount or
 * missing permission shows too). 0, or -errno: -ENOENT, -ENOTDIR,
 * -EACCES, -EROFS, ...; -EINVAL for NULL or "".
 */
int textfile_check_dir(const char *dir);

/*
 * s as a label value of the text format, in a new string (free() it):
 * backslash, double quote and newline escaped as \\, \" and \n, and each
 * byte that is not part of valid UTF-8 replaced by U+FFFD (the format is
 * UTF-8; node_exporter refuses a file that is not). NULL reads as "".
 * NULL on allocation failure.
 */
char *textfile_escape(const char *s);

/*
 * The text of the file for rep, in a new NUL-terminated buffer (*ret,
 * *ret_len without the NUL; free() it). Each metric family has its HELP
 * and TYPE lines and its samples together; no sample has a timestamp
 * (node_exporter refuses them). A report that codec_validate_report()
 * accepts makes no series twice. 0 or -ENOMEM.
 */
int textfile_format(const Fleetbench__Report *rep, char **ret, size_t *ret_len);

/*
 * Writes textfile_format(rep) to dir/TEXTFILE_NAME, mode 0644 (node_exporter
 * runs as another user): into a temporary file in dir whose name does not
 * end in ".prom" (".fleetbench.prom.PID.tmp"), synced, then renamed over
 * the file and the directory synced, so that a scrape sees the old file or
 * the new one, whole. On any failure the temporary file is removed and the
 * old file, if any, is left as it was. 0 or -errno.
 */
int textfile_write(const Fleetbench__Report *rep, const char *dir);

#endif
