/* SPDX-License-Identifier: MIT */
/* fuzz_safe.h - the fuzz targets' check that text is fit for a terminal:
 * valid UTF-8, no code point rt_esc_unsafe_cp names (newlines allowed where
 * a message has lines). Aborts otherwise, for libFuzzer to report. */
#ifndef RT_FUZZ_SAFE_H
#define RT_FUZZ_SAFE_H

#include <stdbool.h>
#include <stdlib.h>

#include "escape.h"

static inline void fuzz_assert_safe(const char *s, size_t len, bool newlines)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;

	while (p < end) {
		uint32_t cp;
		int n = rt_utf8_next(p, &cp);

		if (n == 0 || (rt_esc_unsafe_cp(cp) && !(newlines && cp == '\n')))
			abort();
		p += n;
	}
}

#endif
