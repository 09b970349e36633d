/* SPDX-License-Identifier: MIT */
/* ranges.c - a sorted list of numbers said as ranges, "0-3,5": how every
 * output lists ranks. Pure; no allocation; thread-safe. */
#include <stdio.h>

#include "rt_util.h"

void rt_int_ranges(const int *v, int n, char *out, size_t len)
{
	size_t k = 0;

	if (!len)
		return;
	out[0] = '\0';
	for (int i = 0; i < n && k < len; i++) {
		int j = i;

		while (j + 1 < n && v[j + 1] == v[j] + 1)
			j++;
		k += (size_t)snprintf(out + k, len - k, j > i ? "%s%d-%d" : "%s%d", k ? "," : "",
				      v[i], v[j]);
		i = j;
	}
}
