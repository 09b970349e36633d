/* SPDX-License-Identifier: MIT */
/*
 * rt_heap.h - the one binary min-heap: entries (key, idx), ordered by key,
 * ties by idx (deterministic whatever the heap's shape). Header-only and
 * inline: the viewer's merges of many streams (viewer/load/merge.c) and of many
 * ranks' logs (viewer/load/parallel.c) spend their time here. No allocation:
 * the caller owns the array, n entries plus one slot, h[n], that
 * rt_heap_replace_top reads as "later than all" (RT_HEAP_LAST).
 */
#ifndef RT_HEAP_H
#define RT_HEAP_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

struct rt_heap_node {
	uint64_t key;
	int idx;
};

#define RT_HEAP_LAST ((struct rt_heap_node){ UINT64_MAX, INT_MAX })

static inline bool rt_heap_before(const struct rt_heap_node *a, const struct rt_heap_node *b)
{
	return (a->key < b->key) | ((a->key == b->key) & (a->idx < b->idx)); /* ties are common */
}

/* Entry i moved down to its place among n. */
static inline void rt_heap_sift(struct rt_heap_node *h, int n, int i)
{
	struct rt_heap_node x = h[i];

	for (;;) {
		int l = 2 * i + 1, c;

		if (l >= n)
			break;
		c = l + 1 < n && rt_heap_before(&h[l + 1], &h[l]) ? l + 1 : l;
		if (!rt_heap_before(&h[c], &x))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

/* n entries in any order made a heap; h[n] set to RT_HEAP_LAST. */
static inline void rt_heap_build(struct rt_heap_node *h, int n)
{
	for (int i = n / 2 - 1; i >= 0; i--)
		rt_heap_sift(h, n, i);
	h[n] = RT_HEAP_LAST;
}

/* The top replaced by x, which is usually later than all: the hole goes
 * down to a leaf by the earlier child (one comparison a level, no branch:
 * with ranks on one clock, ties are the rule and a branch is a coin toss),
 * x then up from there (Floyd's trick; half the comparisons of a sift).
 * Needs h[n] == RT_HEAP_LAST. */
static inline void rt_heap_replace_top(struct rt_heap_node *h, int n, struct rt_heap_node x)
{
	int i = 0, c;

	while ((c = 2 * i + 1) < n) {
		c += rt_heap_before(&h[c + 1], &h[c]);
		h[i] = h[c];
		i = c;
	}
	while (i > 0 && rt_heap_before(&x, &h[(i - 1) / 2])) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = x;
}

/* The top removed; returns the new count (h[n] kept RT_HEAP_LAST). */
static inline int rt_heap_pop(struct rt_heap_node *h, int n)
{
	h[0] = h[--n];
	h[n] = RT_HEAP_LAST;
	rt_heap_sift(h, n, 0);
	return n;
}

#endif
