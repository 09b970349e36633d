/* SPDX-License-Identifier: MIT */
/* json_valid.h - a strict JSON reader for tests and the JSON writer's fuzz
 * target (RFC 8259: one value, no trailing commas, no NaN, strings of valid
 * UTF-8 with only the escapes JSON has), and a decoder of one string's body
 * to compare with what was written. Written apart from util/ on purpose: it
 * must not share the writer's mistakes. Header-only; test code. */
#ifndef RT_JSON_VALID_H
#define RT_JSON_VALID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct jv {
	const unsigned char *p, *end;
	int depth;
};

static void jv_ws(struct jv *v)
{
	while (v->p < v->end && (*v->p == ' ' || *v->p == '\n' || *v->p == '\r' || *v->p == '\t'))
		v->p++;
}

static int jv_hex(unsigned char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* One UTF-8 character at p (bytes, or 0 when invalid): by the table of
 * RFC 3629 section 4, not by esc.c's arithmetic. */
static int jv_utf8(const unsigned char *p, const unsigned char *end, uint32_t *cp)
{
	static const struct { unsigned char lo, hi, lo2, hi2; int n; } t[] = {
		{ 0xc2, 0xdf, 0x80, 0xbf, 2 }, { 0xe0, 0xe0, 0xa0, 0xbf, 3 },
		{ 0xe1, 0xec, 0x80, 0xbf, 3 }, { 0xed, 0xed, 0x80, 0x9f, 3 },
		{ 0xee, 0xef, 0x80, 0xbf, 3 }, { 0xf0, 0xf0, 0x90, 0xbf, 4 },
		{ 0xf1, 0xf3, 0x80, 0xbf, 4 }, { 0xf4, 0xf4, 0x80, 0x8f, 4 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int n = t[i].n;

		if (p[0] < t[i].lo || p[0] > t[i].hi)
			continue;
		if (end - p < n || p[1] < t[i].lo2 || p[1] > t[i].hi2)
			return 0;
		*cp = p[0] & (0x7f >> n);
		for (int k = 1; k < n; k++) {
			if (k > 1 && (p[k] & 0xc0) != 0x80)
				return 0;
			*cp = *cp << 6 | (p[k] & 0x3f);
		}
		return n;
	}
	return 0;
}

/* A string's body from after its opening quote; decoded into out (UTF-8,
 * outn bytes; NULL: only checked). Returns the decoded length, or -1. */
static long jv_string(struct jv *v, char *out, size_t outn)
{
	size_t o = 0;

	while (v->p < v->end && *v->p != '"') {
		uint32_t cp;
		int n = 1;

		if (*v->p < 0x20)
			return -1;
		if (*v->p == '\\') {
			const char *esc = "\"\\/bfnrt", *hit;

			if (v->end - v->p < 2)
				return -1;
			if (v->p[1] == 'u') {
				int h[4];

				if (v->end - v->p < 6)
					return -1;
				for (int i = 0; i < 4; i++)
					if ((h[i] = jv_hex(v->p[2 + i])) < 0)
						return -1;
				cp = (uint32_t)(h[0] << 12 | h[1] << 8 | h[2] << 4 | h[3]);
				if (cp >= 0xd800 && cp <= 0xdfff)
					return -1; /* the writer never splits into surrogates */
				n = 6;
			} else if ((hit = strchr(esc, v->p[1])) && v->p[1]) {
				cp = (uint32_t)"\"\\/\b\f\n\r\t"[hit - esc];
				n = 2;
			} else {
				return -1;
			}
		} else if (*v->p < 0x80) {
			cp = *v->p;
		} else if (!(n = jv_utf8(v->p, v->end, &cp))) {
			return -1;
		}
		v->p += n;
		if (out) { /* encode cp */
			unsigned char b[4];
			int k = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;

			b[0] = k == 1 ? (unsigned char)cp : (unsigned char)((0xf00 >> k) | (cp >> (6 * (k - 1))));
			for (int i = 1; i < k; i++)
				b[i] = (unsigned char)(0x80 | ((cp >> (6 * (k - 1 - i))) & 0x3f));
			for (int i = 0; i < k && o + 1 < outn; i++)
				out[o++] = (char)b[i];
		}
	}
	if (v->p >= v->end)
		return -1;
	v->p++;
	if (out && outn)
		out[o] = '\0';
	return (long)o;
}

static bool jv_number(struct jv *v)
{
	const unsigned char *s = v->p;

	if (v->p < v->end && *v->p == '-')
		v->p++;
	if (v->p >= v->end || *v->p < '0' || *v->p > '9')
		return false;
	if (*v->p == '0')
		v->p++;
	else
		while (v->p < v->end && *v->p >= '0' && *v->p <= '9')
			v->p++;
	if (v->p < v->end && *v->p == '.') {
		v->p++;
		if (v->p >= v->end || *v->p < '0' || *v->p > '9')
			return false;
		while (v->p < v->end && *v->p >= '0' && *v->p <= '9')
			v->p++;
	}
	return v->p > s;
}

static bool jv_value(struct jv *v);

static bool jv_container(struct jv *v, unsigned char close)
{
	bool first = true;

	if (++v->depth > 64)
		return false;
	v->p++;
	for (;;) {
		jv_ws(v);
		if (v->p < v->end && *v->p == close && first) {
			v->p++;
			break;
		}
		if (close == '}') {
			if (v->p >= v->end || *v->p != '"')
				return false;
			v->p++;
			if (jv_string(v, NULL, 0) < 0)
				return false;
			jv_ws(v);
			if (v->p >= v->end || *v->p++ != ':')
				return false;
		}
		if (!jv_value(v))
			return false;
		jv_ws(v);
		first = false;
		if (v->p < v->end && *v->p == ',') {
			v->p++;
			continue;
		}
		if (v->p < v->end && *v->p == close) {
			v->p++;
			break;
		}
		return false;
	}
	v->depth--;
	return true;
}

static bool jv_value(struct jv *v)
{
	static const char *const words[] = { "true", "false", "null" };

	jv_ws(v);
	if (v->p >= v->end)
		return false;
	if (*v->p == '{' || *v->p == '[')
		return jv_container(v, *v->p == '{' ? '}' : ']');
	if (*v->p == '"') {
		v->p++;
		return jv_string(v, NULL, 0) >= 0;
	}
	for (int i = 0; i < 3; i++) {
		size_t n = strlen(words[i]);

		if ((size_t)(v->end - v->p) >= n && !memcmp(v->p, words[i], n)) {
			v->p += n;
			return true;
		}
	}
	return jv_number(v);
}

/* The whole of s (n bytes) is one JSON value, whitespace around it. */
static inline bool json_valid(const char *s, size_t n)
{
	struct jv v = { (const unsigned char *)s, (const unsigned char *)s + n, 0 };

	if (!jv_value(&v))
		return false;
	jv_ws(&v);
	return v.p == v.end;
}

/* s is one JSON string; its decoded text into out. -1 when it is not. */
static inline long json_string_decode(const char *s, size_t n, char *out, size_t outn)
{
	struct jv v = { (const unsigned char *)s, (const unsigned char *)s + n, 0 };
	long len;

	if (!n || *s != '"')
		return -1;
	v.p++;
	len = jv_string(&v, out, outn);
	return len >= 0 && v.p == v.end ? len : -1;
}

#endif
