/* SPDX-License-Identifier: MIT */
/* test_plan.c - the fault plan parser, table-driven: good plans expand to the
 * rules they say; bad plans are refused with a message that points at the
 * mistake (the caret under the right column). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "plan.h"

struct good {
	char plan[160];
	int nrules;
	char target[32]; /* first rule */
	int action;
	long long arg;
	unsigned long long from, to, step;
};

ParameterizedTestParameters(plan, good_plans_expand_as_written)
{
	static struct good cases[] = {
		{ "ncclAllReduce:error=ncclSystemError:when=5:rank=2", 1, "ncclAllReduce", RT_INJ_ERROR, 2, 5, 5, 1 },
		{ "cudaMalloc:error=cudaErrorMemoryAllocation:when=3", 1, "cudaMalloc", RT_INJ_ERROR, 2, 3, 3, 1 },
		{ "cudaMalloc:error=cudaErrorMemoryAllocation:when=3+", 1, "cudaMalloc", RT_INJ_ERROR, 2, 3, 0, 1 },
		{ "cudaMalloc:skip:when=3..5", 1, "cudaMalloc", RT_INJ_SKIP, 0, 3, 5, 1 },
		{ "cudaMalloc:skip:when=3+2", 1, "cudaMalloc", RT_INJ_SKIP, 0, 3, 0, 2 },
		{ "nccl*:delay=50ms", 1, "nccl*", RT_INJ_DELAY, 50000000, 1, 0, 1 },
		{ "ncclAllGather:delay=200us:prob=0.5:seed=9", 1, "ncclAllGather", RT_INJ_DELAY, 200000, 1, 0, 1 },
		{ "cudaMalloc:delay=86400s", 1, "cudaMalloc", RT_INJ_DELAY, 86400000000000LL, 1, 0, 1 },
		{ "cudaMalloc:delay=.5ms", 1, "cudaMalloc", RT_INJ_DELAY, 500000, 1, 0, 1 },
		{ "my.point:error=2147483647", 1, "my.point", RT_INJ_ERROR, 2147483647, 1, 0, 1 },
		{ "cudaSetDevice:device=0", 1, "cudaSetDevice", RT_INJ_DEVICE, 0, 1, 0, 1 },
		{ "ncclAllReduce:corrupt:when=1", 1, "ncclAllReduce", RT_INJ_CORRUPT, 0, 1, 1, 1 },
		{ "@collective:hang:when=7", 1, "@collective", RT_INJ_HANG, 0, 7, 7, 1 },
		{ "ncclBroadcast:abort", 1, "ncclBroadcast", RT_INJ_ABORT, 0, 1, 0, 1 },
		{ "ncclSend:kill=9", 1, "ncclSend", RT_INJ_KILL, 9, 1, 0, 1 },
		{ "fsdp.root_forward:bypass", 1, "fsdp.root_forward", RT_INJ_BYPASS, 0, 1, 0, 1 },
		{ "my.point:error=7:when=2", 1, "my.point", RT_INJ_ERROR, 7, 2, 2, 1 },
		{ "skip-fsdp-root", 1, "fsdp.root_forward", RT_INJ_BYPASS, 0, 1, 0, 1 },
		{ "oom-at=4", 1, "cudaMalloc", RT_INJ_ERROR, 2, 4, 4, 1 },
		{ "wrong-device", 1, "cudaSetDevice", RT_INJ_DEVICE, 0, 1, 0, 1 },
		{ "nccl-hang=12", 1, "@collective", RT_INJ_HANG, 0, 12, 12, 1 },
		{ "rank-dies=2@5", 1, "@collective", RT_INJ_KILL, 9, 5, 5, 1 },
		{ "skip-fsdp-root;cudaFree:delay=1s;", 2, "fsdp.root_forward", RT_INJ_BYPASS, 0, 1, 0, 1 },
	};
	return cr_make_param_array(struct good, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct good *g, plan, good_plans_expand_as_written)
{
	struct rt_inj_plan p;
	char err[1024] = "";

	cr_assert_eq(rt_inj_parse(g->plan, &p, err, sizeof(err)), 0, "%s: %s", g->plan, err);
	cr_assert_eq(p.nrules, g->nrules);
	cr_assert_str_eq(p.rules[0].target, g->target);
	cr_assert_eq(p.rules[0].action, g->action, "%s", g->plan);
	cr_assert_eq(p.rules[0].arg, g->arg, "%s", g->plan);
	cr_assert_eq(p.rules[0].when_from, g->from);
	cr_assert_eq(p.rules[0].when_to, g->to);
	cr_assert_eq(p.rules[0].when_step, g->step);
	rt_inj_plan_free(&p);
}

struct bad {
	char plan[96];
	char message[96];
	int caret; /* column of the caret in the quoted plan */
};

ParameterizedTestParameters(plan, bad_plans_point_at_the_mistake)
{
	static struct bad cases[] = {
		{ "cudaMallc:skip", "unknown target 'cudaMallc'", 0 },
		{ "cudaMalloc:explode", "unknown action 'explode'", 11 },
		{ "cudaMalloc:error=cudaErrorOutOfCheese", "unknown error code 'cudaErrorOutOfCheese'", 17 },
		{ "cudaFree:error=cudaErrorMemoryAllocation", "cudaFree cannot return cudaErrorMemoryAllocation", 15 },
		{ "cudaMalloc:error=ncclSystemError", "unknown error code 'ncclSystemError' for cudaMalloc", 17 },
		{ "ncclAllReduce:error=cudaErrorMemoryAllocation", "unknown error code", 20 },
		{ "cudaMalloc:skip:when=0", "when= needs a call number from 1", 21 },
		{ "cudaMalloc:skip:when=5..3", "when=N..M needs M >= N", 25 },
		{ "cudaMalloc:skip:when=x", "when= needs a call number", 21 },
		{ "cudaMalloc:skip:rank=a", "rank= is a list such as 0,2-3", 21 },
		{ "cudaMalloc:skip:rank=3-1", "rank range A-B needs B >= A", 24 },
		{ "cudaMalloc:skip:prob=1.5", "prob= is a probability between 0 and 1", 21 },
		{ "cudaMalloc:skip:colour=red", "unknown key 'colour'", 16 },
		{ "cudaMalloc:delay=5 parsecs", "duration unit is s, ms, us or ns", 18 },
		{ "cudaMalloc:device=1", "device= only redirects cudaSetDevice", 11 },
		{ "cudaMalloc:corrupt", "corrupt flips bits in a collective's output", 11 },
		{ "cudaMalloc:bypass", "bypass is for failure points", 11 },
		{ "fsdp.root_forward:corrupt", "a failure point takes error=CODE, delay=DUR, hang, abort, kill=SIG or bypass", 18 },
		{ "cudaMalloc:skip=3", "skip takes no value", 15 },
		{ "cudaMalloc:error", "error needs a value", 16 },
		{ "cudaMalloc", "a spec is TARGET:ACTION", 0 },
		{ "skip-fsdp-root;;cudaFree:skip", "empty spec", 15 },
		{ "oom-at", "preset oom-at needs a value", 6 },
		{ "rank-dies=3", "rank-dies=R@SEQ", 10 },
		{ "wrong-device=2", "preset wrong-device takes no value", 12 },
		{ "cudaMalloc:skip:rank=1:rank=2", "rank= given twice", 23 },
		{ "cudaMalloc:skip:when=1:when=2", "when= given twice", 23 },
		{ "rank-dies=1@4..9:rank=0,12-3", "a preset's value ends at ':'", 16 },
		{ "oom-at=14;rank-dies=x@4", "rank= is a list such as 0,2-3", 10 },
		{ "nccl-hang=0", "when= needs a call number from 1", 0 },
		/* hostile values (issue 9): each was accepted and spun, never fired or wrapped */
		{ "cudaMalloc:delay=1e12s", "delay= is at most a day", 17 },
		{ "cudaMalloc:delay=86401s", "delay= is at most a day", 17 },
		{ "cudaMalloc:delay=nans", "delay= needs a finite duration", 17 },
		{ "cudaMalloc:delay=infms", "delay= needs a finite duration", 17 },
		{ "cudaMalloc:delay=-5ms", "delay= needs a finite duration", 17 },
		/* devdelay's own name in its messages (they said delay=) */
		{ "@collective:devdelay=-5ms", "devdelay= needs a finite duration", 21 },
		{ "@collective:devdelay=nan", "devdelay= needs a finite duration", 21 },
		{ "@collective:devdelay=1e30s", "devdelay= is at most a day (86400s)\n", 21 },
		{ "ncclAllReduce:devdelay=5 parsecs", "duration unit is s, ms, us or ns", 24 },
		{ "cudaMalloc:skip:prob=nan", "prob= is a probability between 0 and 1", 21 },
		{ "cudaMalloc:skip:prob=-nan", "prob= is a probability between 0 and 1", 21 },
		{ "my.point:error=4294967296", "a failure point's error= is a program error number", 15 },
		{ "my.point:error=99999999999999999999", "a failure point's error= is a program error number", 15 },
		{ "fsdp.root_forward:error=1", "(0 is pass, 1 is bypass)", 24 },
		{ "my.point:error=-3", "a failure point's error= is a program error number", 15 },
		{ "cudaMalloc:skip:when=99999999999999999999", "when= needs a call number", 21 },
		/* comm= (issue 27) */
		{ "ncclAllReduce:skip:comm=world", "comm= is how the communicator was made", 24 },
		{ "ncclAllReduce:skip:comm=split0", "comm=splitN counts the rank's split calls from 1", 29 },
		{ "ncclAllReduce:skip:comm=init-1", "comm=initN counts the rank's init calls from 1", 28 },
		{ "ncclAllReduce:skip:comm=color", "comm=colorC needs a split's color", 29 },
		{ "ncclAllReduce:skip:comm=shrink2", "comm=shrink takes no number", 30 },
		{ "ncclAllReduce:skip:comm=0x", "comm= is how the communicator was made", 24 },
		{ "ncclAllReduce:skip:comm=0xzz", "comm= is how the communicator was made", 24 },
		{ "cudaMalloc:skip:comm=split", "comm= is for calls on a communicator; cudaMalloc has none", 16 },
		{ "@collective:skip:comm=split:comm=init", "comm= given twice", 28 },
		{ "fsdp.root_forward:bypass:comm=split", "comm= is for calls on a communicator, not failure points", 25 },
	};
	return cr_make_param_array(struct bad, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct bad *b, plan, bad_plans_point_at_the_mistake)
{
	struct rt_inj_plan p;
	char err[1024] = "", caret_line[200];
	const char *l2, *l3;

	cr_assert_eq(rt_inj_parse(b->plan, &p, err, sizeof(err)), -1, "accepted: %s", b->plan);
	cr_assert(strstr(err, b->message) != NULL, "%s\nwanted: %s", err, b->message);
	l2 = strchr(err, '\n');
	cr_assert_not_null(l2);
	cr_assert(!strncmp(l2 + 3, b->plan, strlen(b->plan)), "the plan is quoted: %s", err);
	l3 = strchr(l2 + 1, '\n');
	cr_assert_not_null(l3);
	snprintf(caret_line, sizeof(caret_line), "%s", l3 + 3);
	cr_assert_eq((int)(strchr(caret_line, '^') - caret_line), b->caret, "%s", err);
}

Test(plan, when_rank_and_probability_decide_as_documented)
{
	struct rt_inj_plan p;
	char err[512];
	int fired = 0, again = 0;

	cr_assert_eq(rt_inj_parse("cudaMalloc:skip:when=3+2:rank=1,3", &p, err, sizeof(err)), 0);
	cr_assert(!rt_inj_when(&p.rules[0], 1) && !rt_inj_when(&p.rules[0], 2));
	cr_assert(rt_inj_when(&p.rules[0], 3) && !rt_inj_when(&p.rules[0], 4) && rt_inj_when(&p.rules[0], 5));
	cr_assert(rt_inj_applies(&p.rules[0], 1, 3, 0) && rt_inj_applies(&p.rules[0], 3, 3, 0));
	cr_assert(!rt_inj_applies(&p.rules[0], 0, 3, 0) && !rt_inj_applies(&p.rules[0], 2, 3, 0));
	rt_inj_plan_free(&p);
	cr_assert_eq(rt_inj_parse("cudaMalloc:skip:prob=0.25:seed=42", &p, err, sizeof(err)), 0);
	for (uint64_t n = 1; n <= 4000; n++) {
		fired += rt_inj_applies(&p.rules[0], 0, n, 0);
		again += rt_inj_applies(&p.rules[0], 0, n, 0) == rt_inj_applies(&p.rules[0], 0, n, 0);
	}
	cr_assert(fired > 850 && fired < 1150, "fired %d of 4000 at p=0.25", fired);
	cr_assert_eq(again, 4000, "same seed, same answer");
	rt_inj_plan_free(&p);
}

/* comm= picks calls by how their communicator was made; a call with none,
 * or on one the tracer does not know, never passes it. */
Test(plan, comm_selects_communicators_by_how_they_were_made)
{
	static const struct { const char *sel; bool on[6]; } cases[] = {
		/* init #1, init #2, split #1 color 0, split #2 color 1, shrink, none */
		{ "", { 1, 1, 1, 1, 1, 1 } },
		{ ":comm=init", { 1, 1, 0, 0, 0, 0 } },
		{ ":comm=init2", { 0, 1, 0, 0, 0, 0 } },
		{ ":comm=split", { 0, 0, 1, 1, 0, 0 } },
		{ ":comm=split2", { 0, 0, 0, 1, 0, 0 } },
		{ ":comm=color0", { 0, 0, 1, 0, 0, 0 } },
		{ ":comm=color1", { 0, 0, 0, 1, 0, 0 } },
		{ ":comm=shrink", { 0, 0, 0, 0, 1, 0 } },
		{ ":comm=0xAB12", { 0, 0, 0, 1, 0, 0 } },
	};
	const struct rt_inj_comm comms[5] = {
		{ 0x11, RT_INJ_MADE_INIT, 1, 0 }, { 0x22, RT_INJ_MADE_INIT, 2, 0 },
		{ 0x33, RT_INJ_MADE_SPLIT, 1, 0 }, { 0xab12, RT_INJ_MADE_SPLIT, 2, 1 },
		{ 0x55, RT_INJ_MADE_SHRINK, 1, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rt_inj_plan p;
		char plan[96], err[512];

		snprintf(plan, sizeof(plan), "ncclAllReduce:skip%s", cases[i].sel);
		cr_assert_eq(rt_inj_parse(plan, &p, err, sizeof(err)), 0, "%s: %s", plan, err);
		for (int k = 0; k < 6; k++)
			cr_assert_eq(rt_inj_comm_matches(&p.rules[0], k < 5 ? &comms[k] : NULL),
				     cases[i].on[k], "%s on communicator %d", plan, k);
		rt_inj_plan_free(&p);
	}
}

/* A refused error code's hint names only codes that function can return: each
 * suggestion is accepted, and none is from the other library. */
Test(plan, error_code_hints_suggest_only_codes_the_function_accepts)
{
	static const char *const plans[] = {
		"cudaMalloc:error=ncclSystemError", "cudaFree:error=cudaErrorMemoryAllocation",
		"ncclAllReduce:error=cudaErrorMemoryAllocation", "cudaSetDevice:error=cudaErrorOutOfCheese",
		"ncclAllGather:error=ncclSuccessfully",
	};

	for (size_t i = 0; i < sizeof(plans) / sizeof(plans[0]); i++) {
		struct rt_inj_plan p;
		char err[2048], hint[1024], spec[160], fn[48];
		const char *list;
		int n = 0;

		snprintf(fn, sizeof(fn), "%.*s", (int)strcspn(plans[i], ":"), plans[i]);
		cr_assert_eq(rt_inj_parse(plans[i], &p, err, sizeof(err)), -1, "%s", plans[i]);
		list = strstr(err, "; it can return ");
		cr_assert_not_null(list, "no hint: %s", err);
		snprintf(hint, sizeof(hint), "%.*s", (int)strcspn(list + 16, "\n"), list + 16);
		for (char *save, *code = strtok_r(hint, ", ", &save); code; code = strtok_r(NULL, ", ", &save), n++) {
			cr_assert(strncmp(code, strncmp(fn, "nccl", 4) ? "nccl" : "cuda", 4),
				  "%s: the hint names %s, another library's code", plans[i], code);
			snprintf(spec, sizeof(spec), "%s:error=%s", fn, code);
			cr_assert_eq(rt_inj_parse(spec, &p, err, sizeof(err)), 0, "hinted but refused: %s: %s",
				     spec, err);
			rt_inj_plan_free(&p);
		}
		cr_assert(n >= 1, "%s: an empty hint", plans[i]);
	}
}

/* A plan is untrusted text: its error echoed raw ESC, an OSC title sequence
 * (ESC ] 0 ; ... BEL) and U+202E to the terminal (issue 28). The message and
 * the quote are escaped, and the caret still stands under the mistake, in
 * the escaped text's columns. */
struct hostile {
	char plan[96];
	char message[80]; /* escaped, as it must read */
	char quote[96];   /* the quoted plan, escaped */
	int caret;
};

ParameterizedTestParameters(plan, a_hostile_plan_is_quoted_escaped)
{
	static struct hostile cases[] = {
		{ "ncclAllReduce:\x1b]0;pwned\askip", "unknown action '\\x1b]0'",
		  "ncclAllReduce:\\x1b]0;pwned\\x07skip", 14 },
		{ "cudaMalloc:\xe2\x80\xaeskip", "unknown action '\\u202eskip'", "cudaMalloc:\\u202eskip", 11 },
		{ "\xc2\x9b" "2J:skip", "unknown target '\\u009b2J'", "\\u009b2J:skip", 0 },
		{ "cudaMalloc:skip:when=\xff", "when= needs a call number", "cudaMalloc:skip:when=\\xff", 21 },
		{ "cudaMalloc:skip;\x1b[2Jx:skip", "unknown target '\\x1b[2Jx'", "cudaMalloc:skip;\\x1b[2Jx:skip", 16 },
		{ "caf\xc3\xa9\xe2\x80\xa8:skip", "unknown target 'caf\xc3\xa9\\u2028'", "caf\xc3\xa9\\u2028:skip", 0 },
		{ "cudaMalloc:delay=\x1b" "5ms:when=\x07", "delay= needs a finite duration", "cudaMalloc:delay=\\x1b5ms:when=\\x07", 17 },
		{ "cudaMalloc:\xe6\x97\xa5\x1b:when=1", "unknown action '\xe6\x97\xa5\\x1b'", "cudaMalloc:\xe6\x97\xa5\\x1b:when=1", 11 },
	};
	return cr_make_param_array(struct hostile, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct hostile *h, plan, a_hostile_plan_is_quoted_escaped)
{
	struct rt_inj_plan p;
	char err[1024] = "";
	const char *l2, *l3;

	cr_assert_eq(rt_inj_parse(h->plan, &p, err, sizeof(err)), -1);
	for (const unsigned char *c = (const unsigned char *)err; *c; c++)
		cr_assert(*c >= 0x20 || *c == '\n', "raw control 0x%02x in: %s", *c, err);
	cr_assert(strstr(err, h->message) != NULL, "%s\nwanted: %s", err, h->message);
	l2 = strchr(err, '\n');
	cr_assert(!strncmp(l2 + 3, h->quote, strlen(h->quote)), "quote: %s", err);
	l3 = strchr(l2 + 1, '\n');
	cr_assert_eq((int)(strchr(l3 + 3, '^') - (l3 + 3)), h->caret, "%s", err);
}
