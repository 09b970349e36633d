/* SPDX-License-Identifier: MIT */
/* core.h - the hot path of libranktrace.so: a record begun, filled and
 * committed around every call; the tracer's own events; the life of a traced
 * process (its first event, its end, fatal signals, fork).
 *
 * Every interposed call goes: rt_tr_begin (reserve and write the event with
 * its arguments, dur_ns = RT_DUR_PENDING, commit) -> the real function ->
 * rt_tr_end (fill in result, duration and out-arguments in place, commit).
 * A rank that dies inside a call therefore leaves that call in its trace,
 * marked as never returned.
 *
 * The inline functions here take no lock, allocate nothing and format no
 * string. The slow paths (first event of a thread: life.c; packet switch,
 * size cap: the store) are calls. All state is per thread, except the
 * read-mostly process configuration. Uses store/, identity/, base/. */
#ifndef RT_TR_CORE_H
#define RT_TR_CORE_H

#include "base.h"
#include "encode.h"
#include "record.h" /* rt_tr_ev_<name>: the tracer's own events (events.c) */
#include "schema.h"
#include "store.h"

/* One call being recorded. Held in registers by the inlined hot path:
 * pkt and end save reloading the stream after the field stores (byte
 * stores may alias anything, so the compiler could not keep them). */
struct rt_tr_call {
	struct rt_tr_stream *s;
	uint8_t *common;  /* dur_ns, ret, cur_dev */
	uint8_t *fields;  /* first field */
	uint8_t *p;       /* field cursor */
	uint8_t *rec;     /* where the record begins (header) */
	uint8_t *pkt;     /* the packet the entry record is in */
	uint8_t *end;     /* where the entry record ends */
	unsigned id;
	uint64_t t0;
	int errno_out;
	bool ok;
};

/* ---- life.c: the process's first event, its end, fatal signals, fork ---- */

/* The slow path of a thread's first event (or its first in a forked child):
 * the process set up once (identity, rank directory, metadata, clock,
 * signal handlers, the store's helper), then the thread's stream. */
struct rt_tr_stream *rt_tr_thread_open(void);
/* How the process ended (exit, return from main, unload: -1), once. */
void rt_tr_record_exit(int status);
/* Fork child: our pid, nothing recorded yet, the parent's streams forgotten. */
void rt_tr_after_fork_child(void);
/* What a room above must do when the process ends (device/ registers them,
 * core never calls up): flush buffers held outside the trace (at exit, and
 * at a launcher's SIGTERM, SIGINT or SIGHUP outside CUDA: from_signal), and
 * drain work in flight (at exit of a traced process). One of each. */
void rt_tr_on_end_flush(void (*flush)(bool from_signal));
void rt_tr_on_end_drain(void (*drain)(void));
/* What a room above records about the process when it ends (the fault
 * plan's rules and how often each fired: inject/engine.c), just before how
 * it ended; from_signal: called from a fatal signal's handler. */
void rt_tr_on_end_record(void (*record)(bool from_signal));

static inline void rt_tr_put_PTR(struct rt_tr_call *c, const void *v)
{
	uint64_t u = (uint64_t)(uintptr_t)v;

	memcpy(c->p, &u, 8);
	c->p += 8;
}

static inline void rt_tr_put_U64(struct rt_tr_call *c, uint64_t v)
{
	memcpy(c->p, &v, 8);
	c->p += 8;
}

static inline void rt_tr_put_U32(struct rt_tr_call *c, uint32_t v)
{
	memcpy(c->p, &v, 4);
	c->p += 4;
}

static inline void rt_tr_put_I32(struct rt_tr_call *c, int32_t v)
{
	memcpy(c->p, &v, 4);
	c->p += 4;
}

static inline void rt_tr_put_U8(struct rt_tr_call *c, uint8_t v)
{
	*c->p++ = v;
}

static inline void rt_tr_put_I8(struct rt_tr_call *c, int8_t v)
{
	*c->p++ = (uint8_t)v;
}

static inline void rt_tr_put_STR(struct rt_tr_call *c, const char *s)
{
	size_t n = 0;

	while (n < RT_SZ_STR - 1 && s && s[n])
		n++;
	memcpy(c->p, s ? s : "", n);
	memset(c->p + n, 0, RT_SZ_STR - n);
	c->p += RT_SZ_STR;
}

static inline void rt_tr_put_zero(struct rt_tr_call *c, unsigned n)
{
	memset(c->p, 0, n);
	c->p += n;
}

/* Start recording event `id` with `payload` field bytes. False: do not
 * record (tracing off, or a call nested inside one being recorded).
 * errno: untouched (the slow paths restore it). */
RT_TR_HOT bool rt_tr_begin(struct rt_tr_call *c, unsigned id, unsigned payload, int dev)
{
	struct rt_tr_stream *s;
	unsigned need = RT_HEADER_EXTENDED_BYTES + RT_COMMON_BYTES + payload;
	uint64_t now, last;
	uint8_t *p, *q;

	if (rt_tr_depth || rt_tr_off)
		return false;
	rt_tr_depth = 1;
	s = rt_tr_stream_tls;
	if (rt_unlikely(!s || s->pid != rt_tr_pid))
		s = rt_tr_thread_open();
	now = rt_tr_now();
	p = rt_tr_reserve(s, need, &now, &last);
	c->pkt = s->pkt;
	/* own the cache lines the next records go to before they are written:
	 * a lock in the real function would otherwise wait for their misses */
	__builtin_prefetch(p + 256, 1, 3);
	q = rt_fmt_event_begin(p, id, now, last, rt_fmt_common_word(RT_DUR_PENDING, 0, dev));
	rt_tr_cur_id = id;
	c->fields = c->p = q + RT_COMMON_BYTES;
	c->end = c->fields + payload;
	rt_tr_wrote(s, c->end, now);
	c->s = s;
	c->rec = p;
	c->id = id;
	c->t0 = now;
	c->common = q;
	return true;
}

/* The entry record is complete: make it visible (the packet and end
 * rt_tr_begin left: nothing records meanwhile, depth 1). */
RT_TR_HOT void rt_tr_entry_commit(struct rt_tr_call *c)
{
	rt_tr_commit(c->pkt, c->end, c->t0);
	c->s->events++;
}

/* ...then call the real thing. The native store only: the wrappers' fast
 * path, taken only when the sink is the native writer (interpose/init.c
 * routes every call to the general path under the LTTng sink). */
RT_TR_HOT void rt_tr_call_real_native(struct rt_tr_call *c)
{
	rt_tr_entry_commit(c);
	rt_tr_depth = 2;
}

/* ...then call the real thing, whatever the sink: the LTTng sink also gets
 * the calls that may never return (rt_tr_lttng_entry) when they start. */
RT_TR_HOT void rt_tr_call_real(struct rt_tr_call *c)
{
	rt_tr_entry_commit(c);
	if (rt_unlikely(rt_tr_lttng_emit != NULL) && rt_tr_lttng_entry[c->id]) {
		int e = *rt_tr_errno_p;

		rt_tr_lttng_emit(c->id, c->fields, RT_DUR_PENDING, 0, (int8_t)c->common[7]);
		*rt_tr_errno_p = e;
	}
	rt_tr_depth = 2;
}

/* The real function returned: keep its errno for rt_tr_end to restore
 * (after-hooks, the injector, tracer events may change it meanwhile). */
RT_TR_HOT void rt_tr_returned(struct rt_tr_call *c)
{
	c->errno_out = *rt_tr_errno_p;
	rt_tr_depth = 1;
}

/* Fill in duration and result; commit. Returns the duration, *r16 the
 * result as recorded. */
RT_TR_HOT uint64_t rt_tr_result(struct rt_tr_call *c, long ret, int16_t *r16)
{
	uint64_t now = rt_tr_now(), dur;

	*r16 = ret > INT16_MAX ? INT16_MAX : ret < INT16_MIN ? INT16_MIN : (int16_t)ret;
	if (now < c->t0)
		now = c->t0;
	dur = now - c->t0;
	if (dur > RT_DUR_MAX)
		dur = RT_DUR_MAX;
	rt_fmt_event_result(c->common, dur, *r16);
	/* up to the stream's position: records nested in this one are in;
	 * last_ts stays the header's (compact deltas decode from it) */
	rt_tr_commit(c->s->pkt, c->s->pos, now);
	return dur;
}

/* The call is recorded: restore the real call's errno. Native store only
 * (the wrappers' fast path, as rt_tr_call_real_native). */
RT_TR_HOT void rt_tr_end_native(struct rt_tr_call *c, long ret)
{
	int16_t r16;

	rt_tr_result(c, ret, &r16);
	rt_tr_depth = 0;
	*rt_tr_errno_p = c->errno_out;
}

/* The call is recorded, whatever the sink: the LTTng sink is handed the
 * record, whose room is then free again. Restores the real call's errno. */
RT_TR_HOT void rt_tr_end(struct rt_tr_call *c, long ret)
{
	int16_t r16;
	uint64_t dur = rt_tr_result(c, ret, &r16);

	if (rt_unlikely(rt_tr_lttng_emit != NULL)) {
		rt_tr_lttng_emit(c->id, c->fields, dur, r16, (int8_t)c->common[7]);
		rt_tr_unwrite(c->s, c->rec); /* records nest LIFO: free this one's room */
	}
	rt_tr_depth = 0;
	*rt_tr_errno_p = c->errno_out;
}

#endif
