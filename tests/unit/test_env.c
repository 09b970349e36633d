/* SPDX-License-Identifier: MIT */
/* test_env.c - RANKTRACE_* values checked against format/env.def: each kind
 * takes what its row says and refuses the rest (no trailing space, no other
 * case, no sign), a refused value falls back to the row's fallback, the
 * message names the variable with its value escaped, and every fallback
 * that is a value is one the row accepts. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"

struct env_case {
	enum rt_env id;
	char value[48];
	int rc;        /* 0 valid, 1 unset, -EINVAL bad */
	long long n;   /* INT/SIZE: the number (also a fallback's) */
	int word;      /* WORD: the index (also a fallback's) */
};

ParameterizedTestParameters(env, values_are_checked_against_their_row)
{
	static struct env_case cases[] = {
		{ RT_ENV_DEVICE_SOURCE, "events", 0, 0, 1 },
		{ RT_ENV_DEVICE_SOURCE, "off", 0, 0, 3 },
		{ RT_ENV_DEVICE_SOURCE, "", 1, 0, 0 },          /* unset: auto */
		{ RT_ENV_DEVICE_SOURCE, "bogus", -EINVAL, 0, 0 },
		{ RT_ENV_DEVICE_SOURCE, "EVENTS", -EINVAL, 0, 0 },
		{ RT_ENV_DEVICE_SOURCE, "auto ", -EINVAL, 0, 0 },
		{ RT_ENV_DEVICE_SOURCE, "even", -EINVAL, 0, 0 },  /* a prefix is no word */
		{ RT_ENV_DEVICE_SOURCE, "events|off", -EINVAL, 0, 0 },
		{ RT_ENV_HELPER, "0", 0, 0, 0 },
		{ RT_ENV_HELPER, "no", -EINVAL, 0, 1 },
		{ RT_ENV_JOBS, "1", 0, 1, -1 },
		{ RT_ENV_JOBS, "256", 0, 256, -1 },
		{ RT_ENV_JOBS, "0", -EINVAL, 0, -1 },
		{ RT_ENV_JOBS, "257", -EINVAL, 0, -1 },
		{ RT_ENV_JOBS, "abc", -EINVAL, 0, -1 },
		{ RT_ENV_JOBS, "4 ", -EINVAL, 0, -1 },
		{ RT_ENV_JOBS, "+4", -EINVAL, 0, -1 },
		{ RT_ENV_JOBS, "99999999999999999999", -EINVAL, 0, -1 },
		{ RT_ENV_PARAM_EVERY, "0", 0, 0, -1 },
		{ RT_ENV_PARAM_EVERY, "-1", -EINVAL, 100, -1 },
		{ RT_ENV_MAX_SIZE, "64M", 0, 64 << 20, -1 },
		{ RT_ENV_MAX_SIZE, "0", 0, 0, -1 },
		{ RT_ENV_MAX_SIZE, "12Q", -EINVAL, 2ll << 30, -1 },
		{ RT_ENV_MAX_SIZE, "", 1, 2ll << 30, -1 },
		{ RT_ENV_RING, "-1", -EINVAL, 0, -1 },
		{ RT_ENV_DIR, "/tmp/t", 0, 0, -1 },
		{ RT_ENV_DIR, "relative/t", -EINVAL, 0, -1 },
		{ RT_ENV_RUN_ID, "0123456789abcdef0123456789abcdef", 0, 0, -1 },
		{ RT_ENV_RUN_ID, "slurm-12.0", 0, 0, -1 },
		{ RT_ENV_RUN_ID, "a b", -EINVAL, 0, -1 },
		{ RT_ENV_TEST_ALLOC_FAIL, "3:28", 0, 3, -1 },
		{ RT_ENV_TEST_ALLOC_FAIL, "3", -EINVAL, 0, -1 },
		{ RT_ENV_TEST_ALLOC_FAIL, "3:0", -EINVAL, 0, -1 },
		{ RT_ENV_TEST_ALLOC_FAIL, ":28", -EINVAL, 0, -1 },
		{ RT_ENV_CACHE_DIR, "cache", -EINVAL, 0, -1 },
	};
	return cr_make_param_array(struct env_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct env_case *c, env, values_are_checked_against_their_row)
{
	struct rt_env_val v;
	char why[160] = "unset";
	int rc = rt_env_check(c->id, c->value, &v, why, sizeof(why));

	cr_assert_eq(rc, c->rc, "%s=%s: %d", rt_env_names[c->id], c->value, rc);
	cr_assert_eq(rc == -EINVAL, strncmp(why, "expected", 8) == 0, "why: %s", why);
	if (rt_env_kinds[c->id] == RT_ENV_WORD)
		cr_assert_eq(v.word, c->word, "%s=%s: word %d", rt_env_names[c->id], c->value, v.word);
	if (rt_env_kinds[c->id] == RT_ENV_INT || rt_env_kinds[c->id] == RT_ENV_SIZE)
		cr_assert_eq(v.n, c->n, "%s=%s: %lld", rt_env_names[c->id], c->value, (long long)v.n);
}

/* A fallback the code uses as a value (WORD, and INT/SIZE unless it is a
 * description in parentheses) is one its own row accepts: "auto" is a word
 * of auto|events..., "2G" a size. */
Test(env, every_fallback_that_is_a_value_is_valid)
{
	int words = 0;

	for (int i = 0; i < RT_ENV_COUNT; i++) {
		struct rt_env_val v;
		enum rt_env_kind k = rt_env_kinds[i];
		int rc = rt_env_check((enum rt_env)i, rt_env_fallback[i], &v, NULL, 0);

		cr_assert(rt_env_fallback[i][0] || k == RT_ENV_OUT, "%s: no fallback", rt_env_names[i]);
		if (k == RT_ENV_WORD) {
			cr_assert_eq(rc, 0, "%s: fallback %s is not a word of %s", rt_env_names[i],
				     rt_env_fallback[i], rt_env_valid[i]);
			words++;
		}
		if ((k == RT_ENV_INT || k == RT_ENV_SIZE) && rt_env_fallback[i][0] != '(')
			cr_assert_eq(rc, 0, "%s: fallback %s", rt_env_names[i], rt_env_fallback[i]);
	}
	cr_assert_geq(words, 6);
}

Test(env, the_message_names_the_variable_and_escapes_its_value)
{
	char out[300];

	rt_env_explain(RT_ENV_CLOCK, "\x1b]0;pwned\a", "expected auto or monotonic", out, sizeof(out));
	cr_assert_str_eq(out, "RANKTRACE_CLOCK=\\x1b]0;pwned\\x07: expected auto or monotonic");
	rt_env_explain(RT_ENV_DEVICE_SOURCE, "auto ", "x", out, sizeof(out));
	cr_assert_str_eq(out, "RANKTRACE_DEVICE_SOURCE='auto ': x");
	rt_env_explain(RT_ENV_JOBS, "\xe2\x80\xae" "1", "x", out, sizeof(out));
	cr_assert_str_eq(out, "RANKTRACE_JOBS=\\u202e1: x");
}

Test(env, next_bad_walks_the_variables_one_reader_reads)
{
	char msg[300];
	int first, second;

	setenv("RANKTRACE_JOBS", "0", 1);
	setenv("RANKTRACE_ROUND_EVENTS", "many", 1);
	setenv("RANKTRACE_HELPER", "yes", 1); /* the tracer's, not "cli viewer" */
	first = rt_env_next_bad("cli viewer", 0, msg, sizeof(msg));
	cr_assert_eq(first, RT_ENV_JOBS);
	cr_assert_str_eq(msg, "RANKTRACE_JOBS=0: expected a whole number from 1 to 256");
	second = rt_env_next_bad("cli viewer", first + 1, msg, sizeof(msg));
	cr_assert_eq(second, RT_ENV_ROUND_EVENTS);
	cr_assert_eq(rt_env_next_bad("cli viewer", second + 1, msg, sizeof(msg)), -1);
	cr_assert_eq(rt_env_next_bad("tracer", 0, msg, sizeof(msg)), RT_ENV_HELPER);
	unsetenv("RANKTRACE_JOBS");
	unsetenv("RANKTRACE_ROUND_EVENTS");
	unsetenv("RANKTRACE_HELPER");
}
