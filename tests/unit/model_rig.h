/* SPDX-License-Identifier: MIT */
/* model_rig.h - for the unit tests of the model: a fresh model of n ranks
 * (each rank i: LOCAL_RANK i, device i, pid 100 + i, communicator COMM) and
 * its events built in memory with the format's encoder, fed as the reader
 * would. Included by one test file each (static state). */
#ifndef RT_TEST_MODEL_RIG_H
#define RT_TEST_MODEL_RIG_H
#include <criterion/criterion.h>
#include <stdarg.h>
#include <string.h>

#include "encode_args.h"
#include "model_int.h"
#include "trace_rig.h"

#define COMM 0xC0ull

static struct rt_vw_matcher *m;
static struct rt_vw_trace *t;
static uint64_t now = 1000;
static uint32_t next_pid; /* the next event's pid when not 0 (a child process) */
static uint64_t next_dur; /* the next returned event's duration when not 0 (else 10 ns) */

/* A fresh model of n ranks (trace_rig.h's, kept in the statics above). */
static void rig(int n)
{
	struct rig g;

	rig_init(&g, n, 0, "/nonexistent/ranktrace-test");
	m = g.m;
	t = g.t;
}

/* One event of rank ri: id on device dev with result ret (pending: it
 * never returned); then (enum rt_fname, value) pairs ending with -1; a
 * string field's value is a const char *. */
static void ev(int ri, unsigned id, int dev, int ret, bool pending, ...)
{
	uint8_t buf[RT_EVENT_MAX_BYTES] = { 0 }, *fields;
	struct rt_vw_event e = { 0 };
	struct rt_fmt_header h;
	uint64_t dur;
	int16_t r16;
	int8_t d8;
	va_list ap;

	fields = rt_fmt_event_common(rt_fmt_event_header(buf, id, now, now),
				     pending ? RT_DUR_PENDING : next_dur ? next_dur : 10, (int16_t)ret, dev);
	next_dur = 0;
	va_start(ap, pending);
	encode_args(fields, id, ap);
	va_end(ap);
	/* decode what was encoded, as the reader does */
	cr_assert_eq(rt_fmt_event_header_get(buf, sizeof(buf), &h), 0);
	rt_fmt_event_common_get(buf + h.bytes, &dur, &r16, &d8);
	e = (struct rt_vw_event){ .id = h.id, .ts = now, .dur = dur, .pending = dur == RT_DUR_PENDING,
				  .ret = r16, .dev = d8, .fields = buf + h.bytes + RT_COMMON_BYTES,
				  .pid = next_pid ? next_pid : (uint32_t)t->ranks[ri].meta.pid,
				  .tid = (uint32_t)t->ranks[ri].meta.pid };
	next_pid = 0;
	now += 1000;
	{
		struct rt_vw_sink to = rt_vw_matcher_sink(m);

		rt_vw_on_event(m->t, &to, ri, &e);
	}
}

#define OK(ri, id, dev, ...) ev(ri, RT_ID_##id, dev, 0, false, __VA_ARGS__, -1)
#define NOARGS -1

/* A scenario: build() feeds rig(4)'s events; the model must end with
 * verdict and a finding containing finding (NULL: no finding at all), and
 * no finding containing absent. */
struct rig_case {
	const char *name;
	void (*build)(void);
	enum rt_verdict verdict;
	const char *finding;
	const char *absent;
};

/* Case c built, modelled and judged. */
__attribute__((unused)) static void rig_judge(const struct rig_case *c)
{
	const char *name = c->name;
	bool found, absent = true;
	char text[RT_VW_FINDING_TEXT];

	found = c->finding == NULL;
	rig(4);
	c->build();
	rt_vw_model_finish(m);
	for (int i = 0; i < t->nfindings; i++) {
		rt_vw_finding_text(t, &t->findings[i], text, sizeof(text));
		found = found || strstr(text, c->finding);
		absent = absent && !(c->absent && strstr(text, c->absent));
	}
	text[0] = '\0';
	if (t->nfindings)
		rt_vw_finding_text(t, &t->findings[0], text, sizeof(text));
	if (!c->finding && !c->absent)
		cr_expect_eq(t->nfindings, 0, "%s: unexpected finding: %s", name, text);
	cr_expect(found, "%s: no finding contains \"%s\" (first: %s)", name, c->finding,
		  t->nfindings ? text : "none");
	cr_expect(absent, "%s: a finding contains \"%s\"", name, c->absent);
	cr_expect_eq(t->verdict, c->verdict, "%s: verdict %s, expected %s", name,
		     rt_verdicts[t->verdict].word, rt_verdicts[c->verdict].word);
	rt_vw_free(t);
	free(m);
}

/* A scenario and its runner in one line: RIG_CASE(suite, name, build,
 * verdict, finding, absent) is a Test(suite, name) judging that row, so no
 * row exists without its test (cmake/Criterion.cmake registers every
 * RIG_CASE as a ctest entry, as it does Test()). */
#define RIG_CASE(suite, tname, build, verdict, finding, absent)                                   \
	Test(suite, tname)                                                                        \
	{                                                                                         \
		rig_judge(&(const struct rig_case){ #tname, build, verdict, finding, absent });    \
	}

#endif
