/* SPDX-License-Identifier: MIT */
/*
 * rt_sort.h - a stable radix sort of (key, value) entries by key: many
 * sorted runs merged at once without a heap (the viewer's replay of 16,384
 * ranks' logs: a heap paid 14 levels a record). Entries of equal keys keep
 * the order they came in, so runs laid end to end in run order come out in
 * (key, run, place in run) order, what rt_heap.h's merge by (key, idx)
 * gives.
 */
#ifndef RT_SORT_H
#define RT_SORT_H

#include <stddef.h>
#include <stdint.h>

struct rt_sort_entry {
	uint64_t key;
	uint64_t val; /* the caller's: an index, a pointer */
};

/* Sorts a[0..n) by key, stable, using tmp (n entries) as scratch; n < 2^32. Returns
 * a or tmp, whichever holds the result. Linear: one pass to count, then a
 * pass per 11 bits of the keys' spread (max - min) in which they differ. */
struct rt_sort_entry *rt_sort_by_key(struct rt_sort_entry *a, struct rt_sort_entry *tmp, size_t n);

#endif
