/* SPDX-License-Identifier: MIT */
/* test_util.c - util/'s helpers: the one size parser (rt_parse_size). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <stdint.h>

#include "rt_util.h"

struct size_case {
	char text[32];
	int rc;
	uint64_t bytes;
};

ParameterizedTestParameters(size, parses_as_documented)
{
	static struct size_case cases[] = {
		{ "4096", 0, 4096 },
		{ "0", 0, 0 },
		{ "64M", 0, 64ull << 20 },
		{ "64m", 0, 64ull << 20 },
		{ "1G", 0, 1ull << 30 },
		{ "1GB", 0, 1ull << 30 },
		{ "512KiB", 0, 512ull << 10 },
		{ "512Ki", 0, 512ull << 10 },
		{ "2T", 0, 2ull << 40 },
		{ "4096B", 0, 4096 },
		{ "16777215T", 0, 16777215ull << 40 },
		/* the tracer's parser took this one, the CLI refused it */
		{ "4096i", -1, 7 },
		{ "4096iB", -1, 7 },
		{ "", -1, 7 },
		{ "-1", -1, 7 },
		{ "+1", -1, 7 },
		{ " 1", -1, 7 },
		{ "1 M", -1, 7 },
		{ "1.5G", -1, 7 },
		{ "1P", -1, 7 },
		{ "1MB ", -1, 7 },
		{ "1Mb", -1, 7 },
		{ "16777216T", -1, 7 },
		{ "18446744073709551616", -1, 7 },
	};

	return cr_make_param_array(struct size_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct size_case *c, size, parses_as_documented)
{
	uint64_t v = 7;

	errno = 1234;
	cr_expect_eq(rt_parse_size(c->text, &v), c->rc, "\"%s\"", c->text);
	cr_expect_eq(v, c->bytes, "\"%s\": %llu", c->text, (unsigned long long)v);
	cr_expect_eq(errno, 1234, "\"%s\": errno kept", c->text);
}

Test(size, null_is_no_size)
{
	uint64_t v = 7;

	cr_expect_eq(rt_parse_size(NULL, &v), -1);
	cr_expect_eq(v, 7);
}
