/* SPDX-License-Identifier: MIT */
/*
 * size.c - sizes written by people (rt_util.h): "64M", "1GiB", "4096".
 *
 * The one parser for --max-size and friends (cli/) and the RANKTRACE_*
 * sizes the tracer reads at start-up (tracer/interpose/init.c). No allocation;
 * thread-safe (errno is saved and restored).
 */
#include <errno.h>
#include <stdlib.h>

#include "rt_util.h"

int rt_parse_size(const char *s, uint64_t *out)
{
	int saved = errno, bad;
	unsigned shift = 0;
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	bad = errno != 0;
	errno = saved;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: break;
	}
	if (shift && *end == 'i') /* KiB: only after a unit ("4096i" is no size) */
		end++;
	if (*end == 'B')
		end++;
	if (*end || bad || (shift && v > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}
