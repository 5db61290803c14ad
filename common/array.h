/* SPDX-License-Identifier: MIT */
/*
 * Growable arrays, written once (systemd's GREEDY_REALLOC): an array is a
 * pointer and a capacity the caller keeps beside its count;
 * ARRAY_RESERVE(a, cap, need) makes room for need elements, doubling, and
 * leaves a and cap as they were when it fails.
 *
 *	struct item *items = NULL; size_t n = 0, cap = 0;
 *	if (ARRAY_RESERVE(items, cap, n + 1) < 0)
 *		return -ENOMEM;
 *	items[n++] = it;
 */
#ifndef FLEETBENCH_ARRAY_H
#define FLEETBENCH_ARRAY_H

#include <stddef.h>

/* 0, or -ENOMEM (also when need * size overflows). */
int array_reserve(void **arr, size_t *cap, size_t need, size_t size);

#define ARRAY_RESERVE(arr, cap, need) \
	array_reserve((void **)&(arr), &(cap), (need), sizeof(*(arr)))

#endif
