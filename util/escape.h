/* SPDX-License-Identifier: MIT */
/*
 * escape.h - untrusted text made safe for the output it goes to, one routine
 * per output kind (util/escape.c): a terminal or text file, an HTML page.
 * JSON strings have their own writer in util/.
 *
 * Untrusted text is anything a trace, a plan, an environment variable or a
 * command line brings: a hostname, a parameter name, a path, a fault plan. A
 * terminal must never be handed raw a control character (C0, DEL, C1: ESC
 * starts a sequence that can retitle the window or rewrite the screen, U+009B
 * is a CSI on its own), a bidirectional control (U+202A-U+202E, U+2066-U+2069,
 * U+200E/U+200F, U+061C: text shown in another order than it reads), a line
 * or paragraph separator (U+2028/U+2029), or bytes that are not valid UTF-8.
 * Every routine here writes those as escapes and everything else as it is.
 * No allocation (but rt_esc_printf, for a message over 2 KiB); thread-safe.
 */
#ifndef RT_ESCAPE_H
#define RT_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Length of the valid UTF-8 sequence at s (1-4; 1 for ASCII), or 0 when s
 * does not start one (overlong forms, surrogates, code points over
 * U+10FFFF, a sequence cut short by the NUL: RFC 3629). *cp: its code point. */
int rt_utf8_next(const unsigned char *s, uint32_t *cp);

/* Is code point cp one a reader must see escaped: C0, DEL, C1, bidi
 * controls, U+2028/U+2029 (the list above)? */
bool rt_esc_unsafe_cp(uint32_t cp);

/* Text for a terminal or a text file: unsafe code points as \xNN (below
 * U+0080) or \uNNNN, each byte of invalid UTF-8 as \xNN. len bytes of s (or
 * up to its NUL) into out (n bytes, NUL-terminated, cut at a whole
 * character or escape). Returns the length written. */
size_t rt_esc_text_mem(char *out, size_t n, const char *s, size_t len);
/* The same for a NUL-terminated s; returns out, for printf("%s"). */
const char *rt_esc_text(char *out, size_t n, const char *s);
/* The same written to f, any length. */
void rt_esc_text_file(FILE *f, const char *s);

/* A message for a terminal whose arguments are untrusted (a path, a
 * version, a commit subject, a command): formatted as printf does, then
 * written as rt_esc_text_file writes, but for newlines and tabs (the
 * message's own layout; a format holds no other control character). */
void rt_esc_printf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Columns the escaped text s takes on a terminal, counted in characters
 * (what a caret under a position of it needs; s is valid UTF-8). */
size_t rt_esc_columns(const char *s, size_t len);

/* HTML text or attribute value: < > & " ' as entities, and what
 * rt_esc_text escapes, so the page holds only valid UTF-8 and no control
 * bytes. */
void rt_esc_html_file(FILE *f, const char *s);

#endif
