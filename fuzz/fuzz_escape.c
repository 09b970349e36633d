/* SPDX-License-Identifier: MIT */
/* fuzz_escape.c - libFuzzer target: arbitrary bytes through every escaping
 * routine of util/escape.h (text into a buffer of any size, text and HTML
 * into a FILE). Whatever goes in, what comes out is valid UTF-8 holding no
 * control character, bidi control or separator (rt_esc_unsafe_cp), HTML
 * holds none of < > & " ' raw, and a buffer's text is a prefix of the whole
 * text (cut at a whole escape). Also rt_esc_safe_or_abort, used by
 * fuzz_plan on the plan's error messages. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "fuzz_safe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), *whole = NULL, *html = NULL, buf[97];
	size_t wlen = 0, hlen = 0, n;
	FILE *f;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	f = open_memstream(&whole, &wlen);
	rt_esc_text_file(f, s);
	fclose(f);
	f = open_memstream(&html, &hlen);
	rt_esc_html_file(f, s);
	fclose(f);
	fuzz_assert_safe(whole, wlen, false);
	fuzz_assert_safe(html, hlen, false);
	if (strpbrk(html, "<>\"'"))
		abort();
	for (const char *a = strchr(html, '&'); a; a = strchr(a + 1, '&'))
		if (strncmp(a, "&lt;", 4) && strncmp(a, "&gt;", 4) && strncmp(a, "&amp;", 5) &&
		    strncmp(a, "&quot;", 6) && strncmp(a, "&#39;", 5))
			abort();
	/* a buffer of every size from the input's first byte: a prefix, safe */
	n = size ? 1 + data[0] % sizeof(buf) : sizeof(buf);
	if (rt_esc_text_mem(buf, n, s, size) != strlen(buf) || strncmp(buf, whole, strlen(buf)))
		abort();
	fuzz_assert_safe(buf, strlen(buf), false);
	free(whole);
	free(html);
	free(s);
	return 0;
}
