/* SPDX-License-Identifier: MIT */
/* test_util.c - util/'s helpers: the size parser, the growable array, the heap, the radix sort. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#include "rt_heap.h"
#include "rt_sort.h"
#include "rt_util.h"

struct size_case {
	char text[32];
	int rc;
	uint64_t bytes;
};

ParameterizedTestParameters(size, parses_as_documented)
{
	static struct size_case cases[] = {
		{ "4096", 0, 4096 },
		{ "0", 0, 0 },
		{ "64M", 0, 64ull << 20 },
		{ "64m", 0, 64ull << 20 },
		{ "1G", 0, 1ull << 30 },
		{ "1GB", 0, 1ull << 30 },
		{ "512KiB", 0, 512ull << 10 },
		{ "512Ki", 0, 512ull << 10 },
		{ "2T", 0, 2ull << 40 },
		{ "4096B", 0, 4096 },
		{ "16777215T", 0, 16777215ull << 40 },
		/* the tracer's parser took this one, the CLI refused it */
		{ "4096i", -1, 7 },
		{ "4096iB", -1, 7 },
		{ "", -1, 7 },
		{ "-1", -1, 7 },
		{ "+1", -1, 7 },
		{ " 1", -1, 7 },
		{ "1 M", -1, 7 },
		{ "1.5G", -1, 7 },
		{ "1P", -1, 7 },
		{ "1MB ", -1, 7 },
		{ "1Mb", -1, 7 },
		{ "16777216T", -1, 7 },
		{ "18446744073709551616", -1, 7 },
	};

	return cr_make_param_array(struct size_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct size_case *c, size, parses_as_documented)
{
	uint64_t v = 7;

	errno = 1234;
	cr_expect_eq(rt_parse_size(c->text, &v), c->rc, "\"%s\"", c->text);
	cr_expect_eq(v, c->bytes, "\"%s\": %llu", c->text, (unsigned long long)v);
	cr_expect_eq(errno, 1234, "\"%s\": errno kept", c->text);
}

Test(size, null_is_no_size)
{
	uint64_t v = 7;

	cr_expect_eq(rt_parse_size(NULL, &v), -1);
	cr_expect_eq(v, 7);
}

Test(grow, doubles_from_first_up_to_max_and_fails_leaving_the_array)
{
	int *a = NULL;
	uint32_t cap = 0;
	unsigned caps[8], k = 0;

	for (unsigned n = 0; n < 100; n++) {
		bool ok = RT_GROW(a, n, cap, 4, 40);

		if (n < 40) {
			cr_assert(ok, "element %u", n);
			a[n] = (int)n;
			if (!k || caps[k - 1] != cap)
				caps[k++] = cap;
		} else {
			cr_assert(!ok, "element %u is past max", n);
			cr_assert_eq(cap, 40);
		}
	}
	cr_expect_eq(k, 5);
	cr_expect_eq(caps[0], 4);
	cr_expect_eq(caps[1], 8);
	cr_expect_eq(caps[2], 16);
	cr_expect_eq(caps[3], 32);
	cr_expect_eq(caps[4], 40); /* clipped to max, not 64 */
	for (int i = 0; i < 40; i++)
		cr_expect_eq(a[i], i);
	free(a);
}

Test(grow, room_left_is_the_same_array)
{
	size_t cap = 0;
	char *a = rt_grow(NULL, 0, &cap, 1, 16, 0), *b;

	cr_assert_not_null(a);
	cr_expect_eq(cap, 16);
	b = rt_grow(a, 15, &cap, 1, 16, 0);
	cr_expect_eq(b, a);
	cr_expect_eq(cap, 16);
	free(a);
}

/* Popped in (key, idx) order whatever the insertion order, with many ties,
 * through build, replace_top and pop as viewer/load/merge.c and parallel.c use them. */
Test(heap, pops_by_key_then_index)
{
	enum { N = 257 };
	struct rt_heap_node h[N + 1];
	unsigned seed = 12345, left[N];
	uint64_t last_key = 0;
	int last_idx = -1, n = N, popped = 0;

	for (int i = 0; i < N; i++) {
		seed = seed * 1103515245u + 12345u;
		h[i] = (struct rt_heap_node){ (seed >> 16) % 7, i };
		left[i] = 3; /* each source yields 3 keys, each no earlier than its last */
	}
	rt_heap_build(h, n);
	while (n > 0) {
		struct rt_heap_node top = h[0];

		/* never earlier than the last; equal when a source came back with the same key */
		cr_assert(top.key > last_key || (top.key == last_key && top.idx >= last_idx),
			  "%llu/%d after %llu/%d", (unsigned long long)top.key, top.idx,
			  (unsigned long long)last_key, last_idx);
		last_key = top.key;
		last_idx = top.idx;
		popped++;
		if (--left[top.idx])
			rt_heap_replace_top(h, n, (struct rt_heap_node){ top.key + (top.idx % 3), top.idx });
		else
			n = rt_heap_pop(h, n);
		cr_assert_eq(h[n].key, UINT64_MAX, "h[n] stays RT_HEAP_LAST");
	}
	cr_expect_eq(popped, 3 * N);
}

static int by_key_then_idx(const void *a, const void *b)
{
	const struct rt_sort_entry *x = a, *y = b;

	return x->key != y->key ? (x->key < y->key ? -1 : 1) : (x->val > y->val) - (x->val < y->val);
}

/* Stable by key for every spread of keys (none, a digit, a digit and a
 * bit, 33 bits, all 64), ties common: the same as sorting by (key, place). */
Test(sort, by_key_is_stable_for_any_spread)
{
	enum { N = 5000 };
	static struct rt_sort_entry a[N], tmp[N], want[N];
	const uint64_t spreads[] = { 0, 7, 2047, 4101, 1ull << 33, UINT64_MAX };
	uint64_t seed = 99;

	for (size_t s = 0; s < sizeof(spreads) / sizeof(spreads[0]); s++) {
		struct rt_sort_entry *got;

		for (int i = 0; i < N; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			a[i] = (struct rt_sort_entry){ spreads[s] == UINT64_MAX ? seed :
						       (uint64_t)1e12 + (spreads[s] ? (seed >> 11) % (spreads[s] + 1) : 0),
						       (uint64_t)i };
			if (i % 5 == 1) /* ties */
				a[i].key = a[i - 1].key;
		}
		a[N - 1].key = (uint64_t)1e12 + spreads[s]; /* the spread whole */
		a[0].key = spreads[s] == UINT64_MAX ? 0 : (uint64_t)1e12;
		memcpy(want, a, sizeof(a));
		qsort(want, N, sizeof(want[0]), by_key_then_idx);
		got = rt_sort_by_key(a, tmp, N);
		for (int i = 0; i < N; i++)
			cr_assert(got[i].key == want[i].key && got[i].val == want[i].val,
				  "spread %zu: entry %d is %llu/%llu, want %llu/%llu", s, i,
				  (unsigned long long)got[i].key, (unsigned long long)got[i].val,
				  (unsigned long long)want[i].key, (unsigned long long)want[i].val);
	}
}

/* Sorted runs laid end to end in run order come out as the heap merges
 * them (key, run, place in run): how the viewer's replay merges its logs. */
Test(sort, runs_end_to_end_merge_as_the_heap_does)
{
	enum { RUNS = 300, PER = 20 };
	static struct rt_sort_entry a[RUNS * PER], tmp[RUNS * PER];
	static struct rt_heap_node h[RUNS + 1];
	uint64_t key[RUNS][PER], seed = 7;
	int at[RUNS] = { 0 }, n = RUNS, k = 0;
	struct rt_sort_entry *got;

	for (int r = 0; r < RUNS; r++)
		for (int i = 0; i < PER; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			key[r][i] = (i ? key[r][i - 1] : 5000) + (seed >> 60); /* 0-15 later: ties */
			a[r * PER + i] = (struct rt_sort_entry){ key[r][i], (uint64_t)r };
		}
	got = rt_sort_by_key(a, tmp, RUNS * PER);
	for (int r = 0; r < RUNS; r++)
		h[r] = (struct rt_heap_node){ key[r][0], r };
	rt_heap_build(h, n);
	while (n > 0) {
		int r = h[0].idx;

		cr_assert(got[k].val == (uint64_t)r && got[k].key == key[r][at[r]],
			  "entry %d: %llu/%llu, the heap %llu/%d", k, (unsigned long long)got[k].key,
			  (unsigned long long)got[k].val, (unsigned long long)key[r][at[r]], r);
		k++;
		if (++at[r] < PER)
			rt_heap_replace_top(h, n, (struct rt_heap_node){ key[r][at[r]], r });
		else
			n = rt_heap_pop(h, n);
	}
	cr_expect_eq(k, RUNS * PER);
}
