/* SPDX-License-Identifier: MIT */
/* test_json.c - util/'s JSON writer: what a JSON string never holds raw
 * (C0/C1 controls, U+2028/9, bidi controls, invalid UTF-8; escape.h's one
 * list), documents that read back as written, the layouts the documented
 * outputs use, and misuse refused. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "json_keys.h"
#include "json_valid.h"

struct esc_case {
	const char *in, *json;
};

static const struct esc_case cases[] = {
	{ "rank-00001", "rank-00001" },
	{ "q\"b\\s/", "q\\\"b\\\\s/" },
	{ "host\x1b[31mred", "host\\u001b[31mred" },
	{ "two\nlines\r\t", "two\\u000alines\\u000d\\u0009" },
	{ "del\x7f", "del\\u007f" },
	{ "csi\xc2\x9b" "2J", "csi\\u009b2J" },          /* C1 CSI as UTF-8 */
	{ "c1\xc2\x80\xc2\x9f\xc2\xa0", "c1\\u0080\\u009f\xc2\xa0" },
	{ "ls\xe2\x80\xa8ps\xe2\x80\xa9", "ls\\u2028ps\\u2029" },
	{ "bidi\xe2\x80\xae" "cba", "bidi\\u202ecba" }, /* RIGHT-TO-LEFT OVERRIDE */
	{ "\xe2\x80\xaa\xe2\x81\xa6\xe2\x81\xa9", "\\u202a\\u2066\\u2069" },
	{ "lrm\xe2\x80\x8e" "alm\xd8\x9c", "lrm\\u200ealm\\u061c" },
	/* the neighbours of each range pass */
	{ "\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa", "\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa" },
	{ "caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80" },
	{ "bad\xff\xfe", "bad\\ufffd\\ufffd" },
	{ "cut\xe6\x97", "cut\\ufffd\\ufffd" },             /* a sequence cut short */
	{ "overlong\xc0\xaf", "overlong\\ufffd\\ufffd" },
	{ "surrogate\xed\xa0\x80", "surrogate\\ufffd\\ufffd\\ufffd" },
	{ "past\xf4\x90\x80\x80", "past\\ufffd\\ufffd\\ufffd\\ufffd" },
};

/* What rt_json_esc writes for s. */
static char *escaped(const char *s)
{
	char *mem = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&mem, &len);

	rt_json_esc(f, s);
	fclose(f);
	return mem;
}

Test(json, strings_escape_what_must_not_pass_raw)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *j = escaped(cases[i].in);

		cr_assert_str_eq(j, cases[i].json, "case %zu", i);
		free(j);
	}
}

/* Random bytes, biased to the edges of UTF-8: every escaped string is a
 * JSON string that decodes to the input, each invalid byte U+FFFD, and holds
 * no byte a terminal would act on. */
Test(json, any_bytes_make_a_json_string_that_reads_back)
{
	static const unsigned char pick[] = { 'a', '"', '\\', 0x01, 0x1f, 0x7f, 0x80, 0x9b, 0xbf, 0xc0,
					      0xc2, 0xe0, 0xe2, 0x80, 0xa8, 0xae, 0xed, 0xf0, 0xf4, 0xff };
	unsigned seed = 12345;

	for (int round = 0; round < 20000; round++) {
		unsigned char in[24], want[100];
		char *j, body[260], got[300];
		size_t n = (size_t)(round % 23) + 1, w = 0;
		long len;

		for (size_t i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			in[i] = pick[(seed >> 16) % sizeof(pick)];
		}
		in[n] = '\0';
		for (size_t i = 0; i < n;) { /* the reading: valid characters, else U+FFFD a byte */
			uint32_t cp;
			int k = in[i] < 0x80 ? 1 : jv_utf8(in + i, in + n, &cp);

			if (k) {
				memcpy(want + w, in + i, (size_t)k);
				w += (size_t)k;
				i += (size_t)k;
			} else {
				memcpy(want + w, "\xef\xbf\xbd", 3);
				w += 3;
				i++;
			}
		}
		want[w] = '\0';
		j = escaped((const char *)in);
		snprintf(body, sizeof(body), "\"%s\"", j);
		len = json_string_decode(body, strlen(body), got, sizeof(got));
		cr_assert_geq(len, 0, "round %d: not a JSON string: %s", round, body);
		cr_assert_str_eq(got, (const char *)want, "round %d", round);
		for (const unsigned char *p = (const unsigned char *)j; *p; p++)
			cr_assert(*p >= 0x20 && *p != 0x7f, "round %d: raw control byte", round);
		cr_assert_null(strstr(j, "\xc2\x9b"), "round %d: raw CSI", round);
		cr_assert_null(strstr(j, "\xe2\x80\xa8"), "round %d: raw U+2028", round);
		cr_assert_null(strstr(j, "\xe2\x80\xae"), "round %d: raw U+202E", round);
		free(j);
	}
}

/* ---- the writer ---- */

struct doc {
	char *mem;
	size_t len;
	FILE *f;
	struct rt_json w;
};

static void doc_open(struct doc *d, bool compact)
{
	d->mem = NULL;
	d->f = open_memstream(&d->mem, &d->len);
	rt_json_init(&d->w, d->f, compact);
}

static int doc_close(struct doc *d)
{
	int rc = rt_json_finish(&d->w);

	fclose(d->f);
	return rc;
}

Test(json, writes_the_layout_of_view_json)
{
	struct doc d;

	doc_open(&d, false);
	rt_json_obj(&d.w, NULL);
	rt_json_str(&d.w, RT_JK(schema), RT_JSCHEMA(view));
	rt_json_nstr(&d.w, RT_JK(inconclusive), "");
	rt_json_fixed(&d.w, RT_JK(stall_s), 30, 3);
	rt_json_arr(&d.w, RT_JK(ranks));
	rt_json_lines(&d.w, 2, true);
	for (int r = 0; r < 2; r++) {
		rt_json_obj(&d.w, NULL);
		rt_json_int(&d.w, RT_JK(rank), r);
		rt_json_arr(&d.w, RT_JK(devices));
		rt_json_int(&d.w, NULL, r);
		rt_json_int(&d.w, NULL, 7);
		rt_json_end(&d.w);
		rt_json_end(&d.w);
	}
	rt_json_end(&d.w);
	rt_json_arr(&d.w, RT_JK(findings));
	rt_json_lines(&d.w, 2, true);
	rt_json_end(&d.w);
	rt_json_end(&d.w);
	cr_assert_eq(doc_close(&d), 0);
	cr_assert_str_eq(d.mem, "{\"schema\": \"ranktrace.view/1\", \"inconclusive\": null, \"stall_s\": 30.000, "
				"\"ranks\": [\n  {\"rank\": 0, \"devices\": [0, 7]},\n  {\"rank\": 1, \"devices\": "
				"[1, 7]}\n], \"findings\": [\n]}\n");
	cr_assert(json_valid(d.mem, d.len));
	free(d.mem);
}

Test(json, writes_perfetto_compact_and_member_breaks)
{
	struct doc d;

	doc_open(&d, true);
	rt_json_obj(&d.w, NULL);
	rt_json_str(&d.w, RT_JK(displayTimeUnit), "ns");
	rt_json_arr(&d.w, RT_JK(traceEvents));
	rt_json_lines(&d.w, 0, true);
	rt_json_obj(&d.w, NULL);
	rt_json_str(&d.w, RT_JK(ph), "X");
	rt_json_fixed(&d.w, RT_JK(ts), 1.23456, 3);
	rt_json_end(&d.w);
	rt_json_obj(&d.w, NULL);
	rt_json_strf(&d.w, RT_JK(id), "%016llx-%u", 0xabcull, 5u);
	rt_json_end(&d.w);
	rt_json_end(&d.w);
	rt_json_brk(&d.w, 1);
	rt_json_bool(&d.w, RT_JK(found), false);
	rt_json_end(&d.w);
	cr_assert_eq(doc_close(&d), 0);
	cr_assert_str_eq(d.mem, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n{\"ph\":\"X\",\"ts\":1.235},\n"
				"{\"id\":\"0000000000000abc-5\"}\n],\n \"found\":false}\n");
	cr_assert(json_valid(d.mem, d.len));
	free(d.mem);
}

Test(json, numbers_json_cannot_hold_are_null)
{
	struct doc d;

	doc_open(&d, false);
	rt_json_arr(&d.w, NULL);
	rt_json_fixed(&d.w, NULL, NAN, 3);
	rt_json_fixed(&d.w, NULL, INFINITY, 3);
	rt_json_fixed(&d.w, NULL, -0.5, 1);
	rt_json_uint(&d.w, NULL, UINT64_MAX);
	rt_json_int(&d.w, NULL, INT64_MIN);
	rt_json_end(&d.w);
	cr_assert_eq(doc_close(&d), 0);
	cr_assert_str_eq(d.mem, "[null, null, -0.5, 18446744073709551615, -9223372036854775808]\n");
	free(d.mem);
}

Test(json, strings_from_a_trace_are_escaped_keys_included)
{
	struct doc d;

	doc_open(&d, false);
	rt_json_obj(&d.w, NULL);
	rt_json_str(&d.w, "k\"\x01", "v\xff");
	rt_json_strf(&d.w, RT_JK(name), "%s #%u", "x\x1b", 3u);
	rt_json_str(&d.w, RT_JK(detail), NULL);
	rt_json_end(&d.w);
	cr_assert_eq(doc_close(&d), 0);
	cr_assert_str_eq(d.mem, "{\"k\\\"\\u0001\": \"v\\ufffd\", \"name\": \"x\\u001b #3\", \"detail\": null}\n");
	free(d.mem);
}

/* Each misuse is refused (-EINVAL), and nothing stops the rest being written. */
Test(json, misuse_is_reported_not_hidden)
{
	for (int c = 0; c < 9; c++) {
		struct doc d;

		doc_open(&d, false);
		switch (c) {
		case 0: /* a member without its key */
			rt_json_obj(&d.w, NULL), rt_json_int(&d.w, NULL, 1), rt_json_end(&d.w);
			break;
		case 1: /* an item with a key */
			rt_json_arr(&d.w, NULL), rt_json_int(&d.w, RT_JK(rank), 1), rt_json_end(&d.w);
			break;
		case 2: /* closing what is not open */
			rt_json_obj(&d.w, NULL), rt_json_end(&d.w), rt_json_end(&d.w);
			break;
		case 3: /* left open */
			rt_json_obj(&d.w, NULL), rt_json_arr(&d.w, RT_JK(ranks));
			break;
		case 4: /* two top-level values */
			rt_json_null(&d.w, NULL), rt_json_null(&d.w, NULL);
			break;
		case 5: /* nothing at all */
			break;
		case 6: /* deeper than RT_JSON_DEPTH */
			for (int i = 0; i <= RT_JSON_DEPTH; i++)
				rt_json_arr(&d.w, NULL);
			for (int i = 0; i <= RT_JSON_DEPTH; i++)
				rt_json_end(&d.w);
			break;
		case 7: /* lines asked for after the first item */
			rt_json_arr(&d.w, NULL), rt_json_int(&d.w, NULL, 1), rt_json_lines(&d.w, 2, true);
			rt_json_end(&d.w);
			break;
		case 8: /* lines asked for after a break (the fuzz target's first find) */
			rt_json_arr(&d.w, NULL), rt_json_brk(&d.w, 1), rt_json_lines(&d.w, 2, true);
			rt_json_int(&d.w, NULL, 1), rt_json_end(&d.w);
			break;
		}
		cr_assert_eq(doc_close(&d), -EINVAL, "case %d: %s", c, d.mem);
		free(d.mem);
	}
}

Test(json, a_write_error_is_reported)
{
	FILE *f = fopen("/dev/full", "w");
	struct rt_json w;

	cr_assert_not_null(f);
	rt_json_init(&w, f, false);
	rt_json_obj(&w, NULL);
	rt_json_str(&w, RT_JK(schema), RT_JSCHEMA(view));
	rt_json_end(&w);
	cr_assert_eq(rt_json_finish(&w), -EIO);
	fclose(f);
}

Test(json, every_declared_key_is_a_distinct_name)
{
	for (int i = 0; i < RT_JK_COUNT; i++) {
		cr_assert(rt_json_keys[i] && rt_json_keys[i][0], "key %d", i);
		for (int k = 0; k < i; k++)
			cr_assert_str_neq(rt_json_keys[i], rt_json_keys[k], "key %s twice", rt_json_keys[i]);
	}
}
