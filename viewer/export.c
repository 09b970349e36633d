/* SPDX-License-Identifier: MIT */
/* export.c - what the exports share: escaping for JSON and HTML, which
 * calls are collectives, where the trace starts.
 *
 * Both exports stream the events again (rt_vw_foreach) and write as they go;
 * what they draw besides the events comes from the model (device memory
 * over time, communicator sizes): they keep no tables of their own beyond
 * open flow arrows and, for the report, a bounded sample of spans.
 * Every string from a trace is escaped for its output (JSON, HTML). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "export_int.h"

/* Length of the valid UTF-8 sequence at s (1-4), or 0 (overlong forms,
 * surrogates and code points over U+10FFFF are invalid, RFC 3629). */
static int utf8_len(const unsigned char *s)
{
	int n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
	uint32_t cp = s[0] & (0x3f >> (n - 1));

	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* A JSON string body: always valid JSON and valid UTF-8 whatever s holds
 * (a hostname or parameter name from a trace is untrusted input); a byte
 * that is not part of valid UTF-8 becomes U+FFFD. */
void rt_vw_json_esc(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		unsigned char c = *p;
		int n;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else if (c < 0x80)
			fputc(c, f);
		else if ((n = utf8_len(p)) > 0) {
			fwrite(p, 1, (size_t)n, f);
			p += n - 1;
		} else
			fputs("\\ufffd", f);
	}
}

/* What a terminal must not be handed raw, at p: a control character (C0,
 * DEL; C1 as UTF-8: U+0080-U+009F, 0x9b is a CSI), a bidirectional override
 * (U+202A-U+202E, U+2066-U+2069: text shown in another order than it
 * reads), or a byte not part of valid UTF-8. Writes its escape to out
 * ("\x1b", "\u009b") and returns the bytes it covers; 0 for a printable
 * character (*len: its bytes). */
static int unsafe_char(const unsigned char *p, char out[8], int *len)
{
	int n = p[0] < 0x80 ? 1 : utf8_len(p);
	uint32_t cp = n == 2 ? (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f) :
		      n == 3 ? (uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f) :
		      p[0];

	*len = n;
	if (n == 0) {
		snprintf(out, 8, "\\x%02x", p[0]);
		return 1;
	}
	if ((n == 1 && (cp < 0x20 || cp == 0x7f)) ||
	    (n == 2 && cp >= 0x80 && cp <= 0x9f) ||
	    (n == 3 && ((cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069)))) {
		snprintf(out, 8, n == 1 ? "\\x%02x" : "\\u%04x", (unsigned)cp);
		return n;
	}
	return 0;
}

void rt_vw_text_esc(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		char e[8];
		int len, k = unsafe_char(p, e, &len);

		if (k)
			fputs(e, f);
		else
			fwrite(p, 1, (size_t)len, f);
		p += k ? k : len;
	}
}

const char *rt_vw_text_escs(char *out, size_t n, const char *s)
{
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p && n;) {
		char e[8];
		int len, k = unsafe_char(p, e, &len);
		const char *w = k ? e : (const char *)p;
		size_t m = k ? strlen(e) : (size_t)len;

		if (o + m >= n) /* whole characters and escapes only */
			break;
		memcpy(out + o, w, m);
		o += m;
		p += k ? k : len;
	}
	if (n)
		out[o] = '\0';
	return out;
}

void rt_vw_html_esc(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		char e[8];
		int len, k = unsafe_char(p, e, &len);

		if (k) {
			fputs(e, f); /* valid UTF-8, no control bytes in the page */
			p += k;
			continue;
		}
		switch (*p) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fwrite(p, 1, (size_t)len, f);
		}
		p += len;
	}
}

/* A collective (not point-to-point): what flows link across ranks. */
bool rt_vw_is_coll(unsigned id)
{
	int k = rt_vw_coll_kind(id);

	return rt_ck_is_collective(k);
}

uint64_t rt_vw_trace_start(const struct rt_vw_trace *t)
{
	uint64_t t0 = UINT64_MAX;

	for (int i = 0; i < t->nranks; i++)
		if (t->ranks[i].readable && t->ranks[i].events && t->ranks[i].first_ts < t0)
			t0 = t->ranks[i].first_ts;
	return t0 == UINT64_MAX ? 0 : t0;
}

void rt_vw_human_bytes(char *out, size_t n, uint64_t b)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int i = 0;

	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	snprintf(out, n, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}
