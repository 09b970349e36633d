/* SPDX-License-Identifier: MIT */
/* test_util.c - util/'s helpers: the size parser, the growable array, the heap. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdint.h>

#include "rt_heap.h"
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
