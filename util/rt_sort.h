/* SPDX-License-Identifier: MIT */
/*
 * rt_sort.h - a stable radix sort of (key, idx) entries by key: many sorted
 * runs merged at once without a heap (the viewer's replay of 16,384 ranks'
 * logs: a heap paid 14 levels a record). Entries in equal keys keep the
 * order they came in, so runs laid end to end in index order come out in
 * (key, idx, place in run) order, what rt_heap.h's merge gives.
 */
#ifndef RT_SORT_H
#define RT_SORT_H

#include <stddef.h>

#include "rt_heap.h"

/* Sorts a[0..n) by key, stable, using tmp (n entries) as scratch. Returns
 * a or tmp, whichever holds the result. Linear: one pass to count, then a
 * pass per 11 bits of the keys' spread (max - min) in which they differ. */
struct rt_heap_node *rt_sort_by_key(struct rt_heap_node *a, struct rt_heap_node *tmp, size_t n);

#endif
