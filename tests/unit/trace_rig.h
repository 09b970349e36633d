/* SPDX-License-Identifier: MIT */
/* trace_rig.h - for unit tests that build several traces in memory at once
 * (diff compares two): each a model of N ranks (rank i: LOCAL_RANK i, pid
 * 100 + i) fed events encoded with the format's encoder and decoded as the
 * reader decodes them. model_rig.h is the one-trace rig with static state
 * that test_model.c and test_root.c share. Used by test_params.c and
 * test_diff.c. */
#ifndef RT_TEST_TRACE_RIG_H
#define RT_TEST_TRACE_RIG_H
#include <criterion/criterion.h>
#include <stdarg.h>
#include <string.h>

#include "encode_args.h"
#include "model_int.h"

struct rig {
	struct rt_vw_matcher *m;
	struct rt_vw_trace *t;
	uint64_t now;
};

/* A fresh model of n ranks; flags as rt_vw_load's (RT_VW_KEEP_CALLS). */
static inline void rig_init(struct rig *g, int n, unsigned flags, const char *dir)
{
	g->m = calloc(1, sizeof(*g->m));
	g->t = g->m->t = calloc(1, sizeof(*g->t));
	g->now = 1000;
	snprintf(g->t->dir, sizeof(g->t->dir), "%s", dir);
	g->t->flags = flags;
	g->t->nranks = n;
	g->t->ranks = calloc((size_t)n, sizeof(*g->t->ranks));
	for (int i = 0; i < n; i++) {
		struct rt_vw_rank *r = &g->t->ranks[i];

		snprintf(r->name, sizeof(r->name), "rank-%05d", i);
		r->readable = true;
		r->meta.rank = i;
		r->meta.local_rank = i;
		r->meta.world_size = n;
		r->meta.pid = 100 + i;
		snprintf(r->meta.hostname, sizeof(r->meta.hostname), "node");
		r->live = calloc(1, sizeof(*r->live));
		r->comm_device = r->init_device = -1;
		r->dup_of = -1;
	}
}

/* One event of rank ri that returned ret on device dev; then (enum
 * rt_fname, value) pairs ending with -1 (a string field's value is a
 * const char *). */
static inline void rig_ev(struct rig *g, int ri, unsigned id, int dev, int ret, ...)
{
	uint8_t buf[RT_EVENT_MAX_BYTES] = { 0 }, *fields;
	struct rt_fmt_header h;
	uint64_t dur;
	int16_t r16;
	int8_t d8;
	va_list ap;
	struct rt_vw_sink to = rt_vw_matcher_sink(g->m);

	fields = rt_fmt_event_common(rt_fmt_event_header(buf, id, g->now, g->now), 10, (int16_t)ret, dev);
	va_start(ap, ret);
	encode_args(fields, id, ap);
	va_end(ap);
	cr_assert_eq(rt_fmt_event_header_get(buf, sizeof(buf), &h), 0);
	rt_fmt_event_common_get(buf + h.bytes, &dur, &r16, &d8);
	g->now += 1000;
	rt_vw_on_event(g->t, &to, ri, &(struct rt_vw_event){
		.id = h.id, .ts = g->now, .dur = dur, .ret = r16, .dev = d8,
		.fields = buf + h.bytes + RT_COMMON_BYTES, .pid = (uint32_t)g->t->ranks[ri].meta.pid,
		.tid = (uint32_t)g->t->ranks[ri].meta.pid });
}

#define RIG_OK(g, ri, id, dev, ...) rig_ev(g, ri, RT_ID_##id, dev, 0, __VA_ARGS__, -1)
#define U(x) ((uint64_t)(x))

/* After the last event: findings and verdict. */
static inline void rig_finish(struct rig *g)
{
	rt_vw_model_finish(g->m);
}

static inline void rig_free(struct rig *g)
{
	rt_vw_free(g->t);
	free(g->m);
}
#endif
