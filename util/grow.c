/* SPDX-License-Identifier: MIT */
/*
 * grow.c - the one growable array (rt_util.h: rt_grow, RT_GROW): room for
 * one more element, the capacity doubled from a first size up to a limit.
 * Allocates (realloc); thread-safe for distinct arrays. Not for the
 * tracer's hot path (no allocation there).
 */
#include <stdint.h>
#include <stdlib.h>

#include "rt_util.h"

void *rt_grow(void *arr, size_t n, size_t *cap, size_t el, size_t first, size_t max)
{
	size_t c = *cap;
	void *q;

	if (n < c)
		return arr;
	if (!max || max > SIZE_MAX / el)
		max = SIZE_MAX / el;
	c = c ? (c > max / 2 ? max : c * 2) : first;
	if (c <= n || c > max)
		return NULL;
	q = realloc(arr, c * el);
	if (q)
		*cap = c;
	return q;
}
