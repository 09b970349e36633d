/* SPDX-License-Identifier: MIT */
/* env.c - the RANKTRACE_* variables' table (env.def) and the one check of
 * their values against it (env.h).
 *
 * Every reader (the CLI, the tracer, the viewer) checks a value here, so a
 * word, a range or a size means the same in each and a bad one is told the
 * same way. No allocation, no output, thread-safe (getenv aside); the
 * callers say what a bad value does (refused, or a warning and the
 * fallback), with the message made here. */
#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "escape.h"
#include "rt_util.h"

const char *const rt_env_names[RT_ENV_COUNT] = {
#define RT_ENV_VAR(n, who, kind, valid, fallback, doc) "RANKTRACE_" #n,
#include "env.def"
#undef RT_ENV_VAR
};
const char *const rt_env_who[RT_ENV_COUNT] = {
#define RT_ENV_VAR(n, who, kind, valid, fallback, doc) #who,
#include "env.def"
#undef RT_ENV_VAR
};
const char *const rt_env_docs[RT_ENV_COUNT] = {
#define RT_ENV_VAR(n, who, kind, valid, fallback, doc) doc,
#include "env.def"
#undef RT_ENV_VAR
};
const enum rt_env_kind rt_env_kinds[RT_ENV_COUNT] = {
#define RT_ENV_VAR(n, who, kind, valid, fallback, doc) RT_ENV_##kind,
#include "env.def"
#undef RT_ENV_VAR
};
const char *const rt_env_valid[RT_ENV_COUNT] = {
#define RT_ENV_VAR(n, who, kind, valid, fallback, doc) valid,
#include "env.def"
#undef RT_ENV_VAR
};
const char *const rt_env_fallback[RT_ENV_COUNT] = {
#define RT_ENV_VAR(n, who, kind, valid, fallback, doc) fallback,
#include "env.def"
#undef RT_ENV_VAR
};

/* The index of word w (len bytes) in "a|b|c", or -1. */
static int word_index(const char *words, const char *w, size_t len)
{
	int i = 0;

	for (const char *p = words; *p; i++) {
		size_t k = strcspn(p, "|");

		if (k == len && !strncmp(p, w, len))
			return i;
		p += k + (p[k] == '|');
	}
	return -1;
}

/* "expected auto, events, plugin or off" from "auto|events|plugin|off" */
static void expected_words(const char *words, char *why, size_t n)
{
	size_t o = (size_t)snprintf(why, n, "expected ");
	int count = 1;

	for (const char *p = words; *p; p++)
		count += *p == '|';
	for (int i = 0; *words && o < n; i++) {
		size_t k = strcspn(words, "|");

		o += (size_t)snprintf(why + o, n - o, "%s%.*s", i == 0 ? "" : i == count - 1 ? " or " : ", ",
				      (int)k, words);
		words += k + (words[k] == '|');
	}
}

/* A whole decimal number (no sign, no spaces) into *v; false otherwise. */
static bool parse_num(const char *s, int64_t *v)
{
	int saved = errno;
	char *end;
	long long x;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	x = strtoll(s, &end, 10);
	if (errno || *end) {
		errno = saved;
		return false;
	}
	errno = saved;
	*v = x;
	return true;
}

/* A rank list (0,2-3) up to '=': does it hold rank? -1 when malformed. */
static int in_ranks(const char *s, const char *end, int rank)
{
	int in = 0;

	while (s < end) {
		char *e;
		long a = strtol(s, &e, 10), b = a;

		if (e == s || *s < '0' || *s > '9' || a < 0)
			return -1;
		if (*e == '-') {
			s = e + 1;
			b = strtol(s, &e, 10);
			if (e == s || *s < '0' || *s > '9' || b < a)
				return -1;
		}
		in |= rank >= a && rank <= b;
		if (e == end)
			return in;
		if (*e != ',')
			return -1;
		s = e + 1;
	}
	return -1;
}

int rt_env_host_at(const char *s, int rank, char *host, size_t n, int64_t *shift_ns)
{
	const char *eq = s ? strchr(s, '=') : NULL, *colon = eq ? strchr(eq, ':') : NULL;
	size_t hl = colon ? (size_t)(colon - eq - 1) : 0;
	double d, unit = 0;
	char *end;
	int in;

	if (!colon || hl == 0 || hl >= 64 || strspn(eq + 1, "abcdefghijklmnopqrstuvwxyz"
			"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != hl)
		return -EINVAL;
	in = in_ranks(s, eq, rank < 0 ? 0 : rank);
	d = strtod(colon + 1, &end);
	if (end == colon + 1 || !isfinite(d))
		return -EINVAL;
	unit = !strcmp(end, "s") ? 1e9 : !strcmp(end, "ms") ? 1e6 : !strcmp(end, "us") ? 1e3
	       : !strcmp(end, "ns") ? 1 : 0;
	if (in < 0 || unit == 0 || fabs(d * unit) > 3600e9) /* an hour is plenty */
		return -EINVAL;
	if (rank < 0 || !in)
		return 0;
	snprintf(host, n, "%.*s", (int)hl, eq + 1);
	*shift_ns = (int64_t)(d * unit);
	return 1;
}

/* Is s fine for kind k of a row whose valid column is valid? Fills *v. */
static bool check_value(enum rt_env_kind k, const char *valid, const char *s,
			struct rt_env_val *v)
{
	int64_t lo = 0, hi = 0;
	uint64_t size;
	const char *colon;
	char n1[24];

	switch (k) {
	case RT_ENV_WORD:
		return (v->word = word_index(valid, s, strlen(s))) >= 0;
	case RT_ENV_INT:
		if (sscanf(valid, "%" SCNd64 "-%" SCNd64, &lo, &hi) != 2)
			return false;
		return parse_num(s, &v->n) && v->n >= lo && v->n <= hi;
	case RT_ENV_SIZE:
		if (rt_parse_size(s, &size) != 0 || size > INT64_MAX)
			return false;
		v->n = (int64_t)size;
		return true;
	case RT_ENV_ABSPATH:
		return s[0] == '/' && strlen(s) < (size_t)atoi(valid);
	case RT_ENV_ID:
		return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
			       strlen(s) && strlen(s) < (size_t)atoi(valid);
	case RT_ENV_FAILAT:
		colon = strchr(s, ':');
		if (!colon || colon == s || colon - s > 20)
			return false;
		snprintf(n1, sizeof(n1), "%.*s", (int)(colon - s), s);
		return parse_num(n1, &v->n) && parse_num(colon + 1, &v->n2) && v->n2 > 0 && v->n2 < 4096;
	case RT_ENV_HOSTAT:
		return rt_env_host_at(s, -1, NULL, 0, NULL) == 0;
	default: /* PATH, PLAN: checked where used; OUT: not ours to read */
		return true;
	}
}

/* What a value of kind k must be, for a message. */
static void expected(enum rt_env_kind k, const char *valid, char *why, size_t n)
{
	switch (k) {
	case RT_ENV_WORD:
		expected_words(valid, why, n);
		break;
	case RT_ENV_INT:
		snprintf(why, n, "expected a whole number from %.*s to %s", (int)strcspn(valid, "-"),
			 valid, valid + strcspn(valid, "-") + (valid[strcspn(valid, "-")] == '-'));
		break;
	case RT_ENV_SIZE:
		snprintf(why, n, "expected a size such as 4096, 64M or 4G");
		break;
	case RT_ENV_ABSPATH:
		snprintf(why, n, "expected an absolute path shorter than %s bytes", valid);
		break;
	case RT_ENV_ID:
		snprintf(why, n, "expected letters, digits, '.', '_' or '-' (fewer than %s)", valid);
		break;
	case RT_ENV_FAILAT:
		snprintf(why, n, "expected N:ERRNO (two numbers, ERRNO from 1 to 4095)");
		break;
	case RT_ENV_HOSTAT:
		snprintf(why, n, "expected RANKS=HOST:SHIFT such as 2-3=b:+50ms (a shift of at most an hour)");
		break;
	default:
		snprintf(why, n, "not understood");
	}
}

int rt_env_check(enum rt_env id, const char *s, struct rt_env_val *v, char *why, size_t n)
{
	enum rt_env_kind k = rt_env_kinds[id];
	bool fallback_is_value = k == RT_ENV_WORD || k == RT_ENV_INT || k == RT_ENV_SIZE;
	struct rt_env_val fb = { 0 };

	if (why && n)
		why[0] = '\0';
	*v = (struct rt_env_val){ .s = s, .word = -1 };
	if (s && *s && check_value(k, rt_env_valid[id], s, v))
		return 0;
	if (fallback_is_value && check_value(k, rt_env_valid[id], rt_env_fallback[id], &fb))
		fb.s = rt_env_fallback[id];
	else
		fb = (struct rt_env_val){ .word = -1 };
	*v = fb;
	if (!s || !*s)
		return 1;
	if (why && n)
		expected(k, rt_env_valid[id], why, n);
	return -EINVAL;
}

int rt_env_get(enum rt_env id, struct rt_env_val *v, char *why, size_t n)
{
	return rt_env_check(id, getenv(rt_env_names[id]), v, why, n);
}

void rt_env_explain(enum rt_env id, const char *value, const char *why, char *out, size_t n)
{
	char v[96];

	const char *q = strchr(value, ' ') ? "'" : ""; /* "auto ": the space seen */

	rt_esc_text_mem(v, 81, value, strlen(value));
	snprintf(out, n, "%s=%s%s%s%s: %s", rt_env_names[id], q, v, strlen(v) == 80 ? "..." : "", q,
		 why);
}

/* Is word w one of the words of list ("cli viewer")? */
static bool has_word(const char *list, const char *w)
{
	size_t len = strlen(w);

	for (const char *p = strstr(list, w); p; p = strstr(p + 1, w))
		if ((p == list || p[-1] == ' ') && (p[len] == ' ' || !p[len]))
			return true;
	return false;
}

int rt_env_next_bad(const char *whos, int from, char *msg, size_t n)
{
	for (int i = from < 0 ? 0 : from; i < RT_ENV_COUNT; i++) {
		struct rt_env_val v;
		char why[160];
		const char *s = getenv(rt_env_names[i]);

		if (!has_word(whos, rt_env_who[i]) ||
		    rt_env_check((enum rt_env)i, s, &v, why, sizeof(why)) >= 0)
			continue;
		rt_env_explain((enum rt_env)i, s, why, msg, n);
		return i;
	}
	return -1;
}
