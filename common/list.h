/* SPDX-License-Identifier: MIT */
/*
 * Splitting a separated list, written once: "a,b,c" for flags and keys
 * that take lists. It copies nothing; the caller sees each item as a
 * start and a length and decides what an empty item means.
 *
 *	const char *cur = arg, *item;
 *	size_t len;
 *	while ((item = list_next(&cur, ',', &len)))
 *		...;
 */
#ifndef FLEETBENCH_LIST_H
#define FLEETBENCH_LIST_H

#include <stddef.h>

/* The next item of *cursor's list and its length (*ret_len); moves *cursor
 * past it and its separator, to NULL after the last. NULL when *cursor is
 * NULL. "" is one empty item, "a,,b" three items, the second empty. */
const char *list_next(const char **cursor, char sep, size_t *ret_len);

/* The number of items list_next() gives for s. */
size_t list_count(const char *s, char sep);

#endif
