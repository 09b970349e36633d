/* SPDX-License-Identifier: MIT */
/*
 * json.c - the one JSON writer (json.h): separators, keys, values, layout
 * over lines, and JSON's string escaping (rt_json_esc) on escape.c's one
 * list of what is never written raw.
 *
 * Every write goes through before(): it checks the call fits where the
 * document is (a key in an object, none in an array, one top-level value)
 * and writes what comes before the value (a comma, a line break, the key).
 * A misuse is recorded (err) and the value still written, so the output
 * stays inspectable; rt_json_finish reports it.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "escape.h"
#include "json.h"

/* Bytes from p that need no escape: printable ASCII but '"' and '\\'. */
static size_t plain_run(const unsigned char *p)
{
	size_t n = 0;

	while (p[n] >= 0x20 && p[n] < 0x7f && p[n] != '"' && p[n] != '\\')
		n++;
	return n;
}

void rt_json_esc(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t run = plain_run(p); /* runs of ASCII in one fwrite: Perfetto's names */
		uint32_t cp;
		int n;

		if (run) {
			fwrite(p, 1, run, f);
			p += run;
			continue;
		}
		n = rt_utf8_next(p, &cp);
		if (n == 1 && (cp == '"' || cp == '\\'))
			fprintf(f, "\\%c", (char)cp);
		else if (n && rt_esc_unsafe_cp(cp))
			fprintf(f, "\\u%04x", (unsigned)cp);
		else if (n)
			fwrite(p, 1, (size_t)n, f);
		else
			fputs("\\ufffd", f); /* not part of valid UTF-8 */
		p += n ? n : 1;
	}
}

void rt_json_init(struct rt_json *w, FILE *f, bool compact)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
	w->compact = compact;
}

static void misuse(struct rt_json *w)
{
	if (!w->err)
		w->err = -EINVAL;
}

static void indent_line(struct rt_json *w, int n)
{
	fputc('\n', w->f);
	for (int i = 0; i < n; i++)
		fputc(' ', w->f);
}

static void write_str(struct rt_json *w, const char *s)
{
	fputc('"', w->f);
	rt_json_esc(w->f, s);
	fputc('"', w->f);
}

/* What comes before a value: its separator and, in an object, its key. */
static void before(struct rt_json *w, const char *key)
{
	struct rt_json_level *l = w->depth ? &w->st[w->depth - 1] : NULL;

	if (!l) {
		if (w->done || key)
			misuse(w); /* one top-level value, no key */
		return;
	}
	if ((l->close == '}') != (key != NULL))
		misuse(w); /* a member needs its key; an item has none */
	if (w->brk)
		w->brk = false;
	else if (l->indent >= 0) {
		if (l->any)
			fputc(',', w->f);
		indent_line(w, l->indent);
	} else if (l->any) {
		fputs(w->compact ? "," : ", ", w->f);
	}
	l->any = true;
	if (key) {
		write_str(w, key);
		fputs(w->compact ? ":" : ": ", w->f);
	}
}

/* A scalar written: the top-level value may be one. */
static void after(struct rt_json *w)
{
	if (!w->depth)
		w->done = true;
}

static void open_level(struct rt_json *w, const char *key, char open, char close)
{
	before(w, key);
	fputc(open, w->f);
	if (w->depth == RT_JSON_DEPTH) {
		misuse(w); /* written, not tracked: the document is refused */
		return;
	}
	w->st[w->depth++] = (struct rt_json_level){ .close = close, .indent = -1 };
}

void rt_json_obj(struct rt_json *w, const char *key)
{
	open_level(w, key, '{', '}');
}

void rt_json_arr(struct rt_json *w, const char *key)
{
	open_level(w, key, '[', ']');
}

void rt_json_lines(struct rt_json *w, int indent, bool close_nl)
{
	struct rt_json_level *l = w->depth ? &w->st[w->depth - 1] : NULL;

	if (!l || l->any || w->brk || indent < 0 || indent > 64) {
		misuse(w);
		return;
	}
	l->indent = (signed char)indent;
	l->close_nl = close_nl;
}

void rt_json_end(struct rt_json *w)
{
	struct rt_json_level *l;

	if (!w->depth || w->brk) {
		misuse(w);
		return;
	}
	l = &w->st[--w->depth];
	if (l->close_nl)
		fputc('\n', w->f);
	fputc(l->close, w->f);
	after(w);
}

void rt_json_brk(struct rt_json *w, int indent)
{
	struct rt_json_level *l = w->depth ? &w->st[w->depth - 1] : NULL;

	if (!l || w->brk || indent < 0 || indent > 64) {
		misuse(w);
		return;
	}
	if (l->any)
		fputc(',', w->f);
	indent_line(w, indent);
	w->brk = true;
}

void rt_json_str(struct rt_json *w, const char *key, const char *s)
{
	before(w, key);
	if (s)
		write_str(w, s);
	else
		fputs("null", w->f);
	after(w);
}

void rt_json_nstr(struct rt_json *w, const char *key, const char *s)
{
	rt_json_str(w, key, s && *s ? s : NULL);
}

void rt_json_strf(struct rt_json *w, const char *key, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap); /* cut at 1023 bytes: escaping mends a cut character */
	va_end(ap);
	rt_json_str(w, key, buf);
}

void rt_json_int(struct rt_json *w, const char *key, int64_t v)
{
	before(w, key);
	fprintf(w->f, "%" PRId64, v);
	after(w);
}

void rt_json_uint(struct rt_json *w, const char *key, uint64_t v)
{
	before(w, key);
	fprintf(w->f, "%" PRIu64, v);
	after(w);
}

void rt_json_fixed(struct rt_json *w, const char *key, double v, int decimals)
{
	before(w, key);
	if (isfinite(v))
		fprintf(w->f, "%.*f", decimals < 0 ? 0 : decimals > 17 ? 17 : decimals, v);
	else
		fputs("null", w->f); /* JSON has no NaN or Infinity */
	after(w);
}

void rt_json_bool(struct rt_json *w, const char *key, bool v)
{
	before(w, key);
	fputs(v ? "true" : "false", w->f);
	after(w);
}

void rt_json_null(struct rt_json *w, const char *key)
{
	before(w, key);
	fputs("null", w->f);
	after(w);
}

int rt_json_finish(struct rt_json *w)
{
	if (w->depth || !w->done || w->brk)
		misuse(w);
	fputc('\n', w->f);
	if (fflush(w->f) != 0 || ferror(w->f))
		return w->err ? w->err : -EIO;
	return w->err;
}
