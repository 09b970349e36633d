/* SPDX-License-Identifier: MIT */
/*
 * json.h - the one JSON writer: every JSON ranktrace prints (view --json,
 * params --json, diff --json, the Perfetto export, bisect's report) is
 * written through it, so separators, escaping and numbers are decided once.
 *
 * A streaming writer onto a FILE, not a tree: a Perfetto export of millions
 * of events is written as it is read, in constant memory. It places the
 * commas and the key separators itself; the caller says what (objects,
 * arrays, keys, values) and, where an output is laid out over lines, how
 * (rt_json_lines, rt_json_brk). Keys are strings from a table
 * (format/json_keys.def: RT_JK(name)) or from another table (collective
 * names, report points), never typed at the call.
 *
 * Misuse (a value without its key in an object, a key in an array, closing
 * what is not open, nesting past RT_JSON_DEPTH, a second top-level value)
 * never writes invalid JSON silently: the writer records it and
 * rt_json_finish returns -EINVAL; a write error is -EIO.
 *
 * Why ours and not a library (jansson, cJSON): both build a tree in memory
 * (a Perfetto export would be held whole), both refuse strings that are not
 * valid UTF-8 where a trace's names must be written with the bad bytes
 * replaced, neither escapes C1 controls, U+2028/9 or bidi overrides, and
 * neither lays out lines the way the documented outputs read; what we need
 * is 300 lines. One writer per document; not thread-safe.
 */
#ifndef RT_JSON_H
#define RT_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define RT_JSON_DEPTH 16

struct rt_json_level {
	char close;         /* '}' or ']' */
	bool any;           /* a member or item written */
	bool close_nl;      /* the closing bracket on a line of its own */
	signed char indent; /* items each on a new line, indented; -1 inline */
};

struct rt_json {
	FILE *f;
	bool compact;   /* "," and ":" (Perfetto), else ", " and ": " */
	bool brk;       /* rt_json_brk wrote the next item's separator */
	bool done;      /* the top-level value is complete */
	int depth;
	int err;        /* 0, or the first -EINVAL (misuse) */
	struct rt_json_level st[RT_JSON_DEPTH];
};

/* A writer onto f; compact: no space after ',' and ':'. */
void rt_json_init(struct rt_json *w, FILE *f, bool compact);
/* After the top-level value: its "\n", and f flushed; 0, -EINVAL (misuse,
 * or the value not complete), -EIO (a write error on f). */
int rt_json_finish(struct rt_json *w);

/* Containers. key: the member's key inside an object, NULL in an array or
 * at the top. */
void rt_json_obj(struct rt_json *w, const char *key);
void rt_json_arr(struct rt_json *w, const char *key);
/* The container just opened lays its items out one a line, indented by
 * indent spaces; close_nl: its closing bracket on a line of its own. */
void rt_json_lines(struct rt_json *w, int indent, bool close_nl);
/* Close the innermost container. */
void rt_json_end(struct rt_json *w);
/* The next member or item starts a new line indented by indent spaces. */
void rt_json_brk(struct rt_json *w, int indent);

/* Values (key as above). */
void rt_json_str(struct rt_json *w, const char *key, const char *s);  /* NULL: null */
void rt_json_nstr(struct rt_json *w, const char *key, const char *s); /* NULL or "": null */
void rt_json_strf(struct rt_json *w, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void rt_json_int(struct rt_json *w, const char *key, int64_t v);
void rt_json_uint(struct rt_json *w, const char *key, uint64_t v);
/* v with decimals digits after the point ("%.3f"); NaN or infinite: null. */
void rt_json_fixed(struct rt_json *w, const char *key, double v, int decimals);
void rt_json_bool(struct rt_json *w, const char *key, bool v);
void rt_json_null(struct rt_json *w, const char *key);

/* The inside of a JSON string (no quotes added), as the writer writes every
 * string: '"' and '\\' escaped; what escape.h never writes raw (C0, DEL, C1,
 * bidi controls, U+2028/U+2029) as \u00XX / \uXXXX; each byte not part of
 * valid UTF-8 as \ufffd (U+FFFD). Valid JSON and valid UTF-8 whatever s
 * holds. */
void rt_json_esc(FILE *f, const char *s);

#endif
