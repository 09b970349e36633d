/* SPDX-License-Identifier: MIT */
/* test_escape.c - util/escape.h: text from a trace (names, hosts, paths) reaches a terminal
 * and the HTML report escaped: control characters, C1 controls, bidi
 * overrides and bytes that are not valid UTF-8 never pass raw; printable
 * UTF-8 passes as it is. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "escape.h"

struct esc_case {
	const char *in, *text;
};

static const struct esc_case cases[] = {
	{ "rank-00001", "rank-00001" },
	{ "host\x1b[31mred", "host\\x1b[31mred" },
	{ "two\nlines\r\t", "two\\x0alines\\x0d\\x09" },
	{ "del\x7f", "del\\x7f" },
	{ "csi\xc2\x9b" "2J", "csi\\u009b2J" },                  /* C1 CSI as UTF-8 */
	{ "bidi\xe2\x80\xae" "cba", "bidi\\u202ecba" },          /* RIGHT-TO-LEFT OVERRIDE */
	{ "caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80" },
	{ "bad\xff\xfe", "bad\\xff\\xfe" },
	{ "cut\xe6\x97", "cut\\xe6\\x97" },                      /* a sequence cut short */
	{ "overlong\xc0\xaf", "overlong\\xc0\\xaf" },
	{ "surrogate\xed\xa0\x80", "surrogate\\xed\\xa0\\x80" },
	/* bidi marks and isolates, line and paragraph separators (issue 28) */
	{ "lrm\xe2\x80\x8e" "rlm\xe2\x80\x8f" "alm\xd8\x9c", "lrm\\u200erlm\\u200falm\\u061c" },
	{ "iso\xe2\x81\xa6" "x\xe2\x81\xa9", "iso\\u2066x\\u2069" },
	{ "ls\xe2\x80\xa8" "ps\xe2\x80\xa9", "ls\\u2028ps\\u2029" },
	{ "c1\xc2\x80\xc2\x9f" "nbsp\xc2\xa0", "c1\\u0080\\u009fnbsp\xc2\xa0" },
	{ "zwj\xe2\x80\x8d" "ok", "zwj\xe2\x80\x8dok" },                 /* U+200D: no control */
	{ "max\xf4\x8f\xbf\xbf" "over\xf4\x90\x80\x80", "max\xf4\x8f\xbf\xbfover\\xf4\\x90\\x80\\x80" },
};

Test(escape, text_escapes_what_a_terminal_must_not_get_raw)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[256], *mem = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&mem, &len);

		cr_assert_str_eq(rt_esc_text(out, sizeof(out), cases[i].in), cases[i].text, "case %zu", i);
		rt_esc_text_file(f, cases[i].in);
		fclose(f);
		cr_assert_str_eq(mem, cases[i].text, "case %zu (FILE)", i);
		free(mem);
	}
}

Test(escape, a_short_buffer_cuts_at_a_whole_escape)
{
	char out[8];

	cr_assert_str_eq(rt_esc_text(out, sizeof(out), "ab\x1b\x1b"), "ab\\x1b");
	cr_assert_str_eq(rt_esc_text(out, sizeof(out), "abcd\xc3\xa9\xc3\xa9"), "abcd\xc3\xa9");
}

/* A length cuts a character: the cut bytes are not valid UTF-8 on their
 * own and are escaped; columns count characters, for a caret under them. */
Test(escape, a_length_cuts_escape_the_cut_character)
{
	char out[64];

	cr_assert_eq(rt_esc_text_mem(out, sizeof(out), "ab\xe6\x97\xa5" "cd", 4), 10);
	cr_assert_str_eq(out, "ab\\xe6\\x97");
	cr_assert_eq(rt_esc_text_mem(out, sizeof(out), "ab\xe6\x97\xa5" "cd", 5), 5);
	cr_assert_str_eq(out, "ab\xe6\x97\xa5");
	cr_assert_eq(rt_esc_columns("ab\xe6\x97\xa5\\x1b", 9), 7);
	cr_assert_eq(rt_esc_text_mem(out, 0, "x", 1), 0);
}

/* The report: HTML's own characters as entities, the rest as text does. */
Test(escape, html_holds_only_valid_utf8_without_control_bytes)
{
	char *mem = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&mem, &len);

	rt_esc_html_file(f, "<dir\x1b\xff&\"'\n\xc3\xa9>");
	fclose(f);
	cr_assert_str_eq(mem, "&lt;dir\\x1b\\xff&amp;&quot;&#39;\\x0a\xc3\xa9&gt;");
	free(mem);
}
