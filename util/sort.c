/* SPDX-License-Identifier: MIT */
/* sort.c - rt_sort_by_key (rt_sort.h): least significant digit first, 11
 * bits a digit, of the key less the smallest key, so a spread of 2^30 ns
 * takes 3 passes; a digit every entry shares is skipped. The counts of
 * every digit are taken in one pass first (6 x 2,048 x 4 bytes: in L1/L2). */
#include <stdint.h>
#include <string.h>

#include "rt_sort.h"

enum { RT_SORT_BITS = 11, RT_SORT_DIGITS = (64 + RT_SORT_BITS - 1) / RT_SORT_BITS };
#define RT_SORT_MASK ((1u << RT_SORT_BITS) - 1)

struct rt_sort_entry *rt_sort_by_key(struct rt_sort_entry *a, struct rt_sort_entry *tmp, size_t n)
{
	static _Thread_local uint32_t cnt[RT_SORT_DIGITS][1u << RT_SORT_BITS];
	uint64_t lo = UINT64_MAX, hi = 0;
	int passes = 0;

	for (size_t i = 0; i < n; i++) {
		lo = a[i].key < lo ? a[i].key : lo;
		hi = a[i].key > hi ? a[i].key : hi;
	}
	if (n < 2 || lo == hi)
		return a;
	for (uint64_t spread = hi - lo; spread; spread >>= RT_SORT_BITS)
		passes++;
	memset(cnt, 0, sizeof(cnt[0]) * (size_t)passes);
	for (size_t i = 0; i < n; i++) {
		uint64_t k = a[i].key - lo;

		for (int d = 0; d < passes; d++, k >>= RT_SORT_BITS)
			cnt[d][k & RT_SORT_MASK]++;
	}
	for (int d = 0; d < passes; d++) {
		uint32_t *c = cnt[d], sum = 0;
		int shift = d * RT_SORT_BITS;
		struct rt_sort_entry *t;

		if (c[((a[0].key - lo) >> shift) & RT_SORT_MASK] == n)
			continue; /* every entry has this digit: nothing moves */
		for (uint32_t v = 0; v <= RT_SORT_MASK; v++) { /* counts to starts */
			uint32_t x = c[v];

			c[v] = sum;
			sum += x;
		}
		for (size_t i = 0; i < n; i++)
			tmp[c[((a[i].key - lo) >> shift) & RT_SORT_MASK]++] = a[i];
		t = a;
		a = tmp;
		tmp = t;
	}
	return a;
}
