/* SPDX-License-Identifier: MIT */
#include "array.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

int array_reserve(void **arr, size_t *cap, size_t need, size_t size)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 4;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (size && ncap > SIZE_MAX / size)
		return -ENOMEM;
	p = realloc(*arr, ncap * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}
