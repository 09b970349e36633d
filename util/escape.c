/* SPDX-License-Identifier: MIT */
/*
 * escape.c - untrusted text made safe for a terminal and for HTML (escape.h).
 *
 * The one decision, rt_esc_unsafe_cp, is shared by both outputs (and by the
 * JSON writer): what one escapes, every output escapes. Used by every text
 * and HTML output of the CLI and the viewer, the fault plan's error messages
 * (inject/plan.c), the messages of bisect (rt_esc_printf) and the tracer's
 * warnings. No allocation (but rt_esc_printf's message over 2 KiB);
 * thread-safe.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"

int rt_utf8_next(const unsigned char *s, uint32_t *cp)
{
	int n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
	uint32_t c = s[0] & (0x3f >> (n - 1));

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) /* also stops at the NUL */
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

bool rt_esc_unsafe_cp(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ||   /* C0, DEL, C1 */
	       cp == 0x061c || cp == 0x200e || cp == 0x200f || /* ALM, LRM, RLM */
	       (cp >= 0x2028 && cp <= 0x202e) ||            /* LS, PS, LRE..RLO */
	       (cp >= 0x2066 && cp <= 0x2069);               /* LRI..PDI */
}

/* The character at s (at most left bytes): its escape in e (NUL-terminated)
 * and returns the bytes it covers, or 0 for a safe character (*len bytes,
 * written as they are). */
static size_t next_char(const unsigned char *s, size_t left, char e[12], size_t *len)
{
	uint32_t cp = 0;
	int n = rt_utf8_next(s, &cp);

	if (n == 0 || (size_t)n > left) { /* invalid, or cut by len */
		snprintf(e, 12, "\\x%02x", s[0]);
		return 1;
	}
	*len = (size_t)n;
	if (!rt_esc_unsafe_cp(cp))
		return 0;
	snprintf(e, 12, cp < 0x80 ? "\\x%02x" : "\\u%04x", (unsigned)cp);
	return (size_t)n;
}

size_t rt_esc_text_mem(char *out, size_t n, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	size_t o = 0;

	if (!n)
		return 0;
	while (p < end && *p) {
		char e[12];
		size_t w, k = next_char(p, (size_t)(end - p), e, &w);
		const char *from = k ? e : (const char *)p;
		size_t m = k ? strlen(e) : w;

		if (o + m >= n) /* whole characters and escapes only */
			break;
		memcpy(out + o, from, m);
		o += m;
		p += k ? k : w;
	}
	out[o] = '\0';
	return o;
}

const char *rt_esc_text(char *out, size_t n, const char *s)
{
	rt_esc_text_mem(out, n, s, s ? strlen(s) : 0);
	return out;
}

/* s to f escaped; with layout, newlines and tabs pass as they are */
static void text_file(FILE *f, const char *s, bool layout)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t left = strlen(s);

	while (*p) {
		char e[12];
		size_t w, k = next_char(p, left, e, &w);

		if (k && !(layout && (*p == '\n' || *p == '\t')))
			fputs(e, f);
		else
			fwrite(p, 1, k ? k : w, f);
		p += k ? k : w;
		left -= k ? k : w;
	}
}

void rt_esc_text_file(FILE *f, const char *s)
{
	text_file(f, s, false);
}

void rt_esc_printf(FILE *f, const char *fmt, ...)
{
	char buf[2048], *big = NULL;
	va_list ap, again;
	int n;

	va_start(ap, fmt);
	va_copy(again, ap);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(buf) && (big = malloc((size_t)n + 1)))
		vsnprintf(big, (size_t)n + 1, fmt, again);
	va_end(again);
	if (n >= 0)
		text_file(f, big ? big : buf, true);
	free(big);
}

size_t rt_esc_columns(const char *s, size_t len)
{
	size_t cols = 0;

	for (size_t i = 0; i < len && s[i]; i++)
		cols += ((unsigned char)s[i] & 0xc0) != 0x80; /* lead bytes */
	return cols;
}

void rt_esc_html_file(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t left = strlen(s);

	while (*p) {
		char e[12];
		size_t w, k = next_char(p, left, e, &w);

		if (k)
			fputs(e, f); /* valid UTF-8, no control bytes in the page */
		else if (*p == '<')
			fputs("&lt;", f);
		else if (*p == '>')
			fputs("&gt;", f);
		else if (*p == '&')
			fputs("&amp;", f);
		else if (*p == '"')
			fputs("&quot;", f);
		else if (*p == '\'')
			fputs("&#39;", f);
		else
			fwrite(p, 1, w, f);
		p += k ? k : w;
		left -= k ? k : w;
	}
}
