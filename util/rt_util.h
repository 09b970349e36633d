/* SPDX-License-Identifier: MIT */
/*
 * rt_util.h - helpers every room shares, declared once (util/). Serves cli/
 * (run's output directory, bisect's work directories) and whoever needs the
 * same thing next: add it here rather than a second copy in a room.
 */
#ifndef RT_UTIL_H
#define RT_UTIL_H

#include <stdint.h>
#include <sys/types.h>

/* mkdir -p PATH: missing parents made with PARENT_MODE, PATH itself with
 * LEAF_MODE; an existing directory is fine. 0 or -errno. */
int rt_mkdir_p(const char *path, mode_t parent_mode, mode_t leaf_mode);

/* "0-3,5": the first n of v (sorted) as ranges, cut to len bytes. */
void rt_int_ranges(const int *v, int n, char *out, size_t len);

/* A size: digits, then an optional unit K, M, G, T (powers of 1024, either
 * case), then an optional "i" (after a unit only) and "B": "4096", "64M",
 * "512KiB", "1GB". 0 and *out, or -1 (signs, fractions, spaces, unknown
 * units, "4096i", overflow) leaving *out alone. */
int rt_parse_size(const char *s, uint64_t *out);

/* Room for element n of arr (elements of el bytes, *cap of them): arr when
 * n < *cap; else the array grown to twice *cap (first when empty), at most
 * max elements (0: no limit), *cap updated. NULL when out of memory or at
 * max: arr and *cap are then unchanged (still valid, still owned). */
void *rt_grow(void *arr, size_t n, size_t *cap, size_t el, size_t first, size_t max);

/* RT_GROW(arr, n, cap, first, max): rt_grow on an array variable and its
 * capacity (any integer type); true when arr[n] may be written. */
#define RT_GROW(arr, n, cap, first, max)                                                  \
	__extension__({                                                                   \
		size_t rt_cap_ = (size_t)(cap);                                           \
		void *rt_arr_ = rt_grow((arr), (size_t)(n), &rt_cap_, sizeof(*(arr)), (first), \
					(max));                                           \
		if (rt_arr_) {                                                            \
			(arr) = rt_arr_;                                                  \
			(cap) = (__typeof__(cap))rt_cap_;                                 \
		}                                                                         \
		rt_arr_ != NULL;                                                          \
	})

#endif
