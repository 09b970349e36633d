/* SPDX-License-Identifier: MIT */
/*
 * big.c - memory a process fills by the hundred megabytes (rt_util.h:
 * rt_big_alloc, rt_big_calloc): the viewer's per-rank tables and its logs at
 * 16,384 ranks. Taken in transparent huge pages where the kernel gives them
 * (madvise(MADV_HUGEPAGE); THP "madvise" is a common default): a fault per
 * 2 MiB, not per 4 KiB page (at 16,384 ranks x 2,000 events the 4 KiB
 * faults on fresh memory were a fifth of the viewer's CPU time). Where the
 * kernel says no, ordinary pages, nothing else changes. Freed with free().
 * Not for the tracer (no allocation on its hot path).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rt_util.h"

#define RT_HUGE ((size_t)2 << 20)

/* The huge-page-aligned part of [p, p + n) in huge pages, if any. */
static void advise_huge(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
	uintptr_t lo = ((uintptr_t)p + RT_HUGE - 1) & ~(uintptr_t)(RT_HUGE - 1);
	uintptr_t hi = ((uintptr_t)p + n) & ~(uintptr_t)(RT_HUGE - 1);

	if (hi > lo)
		(void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
	(void)p;
	(void)n;
#endif
}

void *rt_big_alloc(size_t bytes)
{
	void *p;

	if (bytes < RT_HUGE)
		return malloc(bytes);
	if (bytes > SIZE_MAX - RT_HUGE)
		return NULL;
	p = aligned_alloc(RT_HUGE, (bytes + RT_HUGE - 1) & ~(RT_HUGE - 1));
	if (p)
		advise_huge(p, bytes);
	return p;
}

void *rt_big_calloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	/* large: malloc's own mapping, zero and not yet touched */
	if (p && n * size >= 2 * RT_HUGE)
		advise_huge(p, n * size);
	return p;
}
