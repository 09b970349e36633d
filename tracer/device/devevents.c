/* SPDX-License-Identifier: MIT */
/* devevents.c - device-side start and completion of collectives from CUDA
 * events, where no profiler plugin reports them (the user kept their own
 * NCCL_PROFILER_PLUGIN, NCCL has no profiler interface, or our plugin failed
 * to initialise).
 *
 * The source is chosen per process (RANKTRACE_DEVICE_SOURCE, format/env.def):
 * auto (default): the plugin if it initialised (it called rt_dev_loaded
 * before the collective), else CUDA events; events: CUDA events only (the
 * plugin's reports are dropped); plugin: never CUDA events; off: neither.
 *
 * Per collective or point-to-point call, two events of ours on its stream
 * (hooks in format/nccl_api.def): a start event recorded before the call is
 * enqueued (its stream field, taken before the call), a completion event
 * after the call returned success; rt_dev_coll for a collective, rt_dev_p2p
 * for a Send or Recv. Inside ncclGroupStart/End, NCCL launches the calls at
 * the outermost ncclGroupEnd: their start events are recorded just before
 * the real ncclGroupEnd, their completion events once it returned success
 * (dropped when it failed), however many the group holds (its list grows,
 * cold, doubling). The devdelay fault's stream
 * sleep, enqueued after the stream field was taken, re-records the start
 * event behind it (rt_tr_devev_delayed).
 *
 * Where: a queue per (thread, device) (devqueue.c): entries in record order,
 * one producer (the thread), one consumer (our poller thread); the poller
 * only looks at entries not yet completed, and a queue grows by chunks of
 * events (cold, up to 65,536 collectives in flight) instead of dropping;
 * nothing waits. No atomic
 * read-modify-write and no communicator lookup on the hot path (the device
 * comes with the sequence number, device.c).
 *
 * Times, what we chose: the poll time. The poller queries pending events
 * every POLL_NS and writes rt_dev_coll (source 2) started / completed when it
 * sees an event complete: late by at most one poll period plus scheduling
 * (0.5 ms; measured in test_devevents: a 20 ms device delay reads 20.x ms).
 * Timing events read against a reference event (cudaEventElapsedTime, as
 * PyTorch's Flight Recorder reads durations) would give device times, but
 * need the device clock mapped to the trace clock and re-mapped against
 * drift, and the viewer to read a second time; not done (docs/performance.md).
 *
 * The program's behaviour is unchanged: nothing is recorded while the stream
 * is being captured (cudaStreamIsCapturing), nor while the program has an
 * error pending (cudaPeekAtLastError): our call could not then leave the
 * last-error state as it was. When our own call fails, cudaGetLastError
 * resets the state to the success it was before; one warning, then the
 * source turns itself off. */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "devqueue.h"
#include "env.h"

#define GROUP_FIRST 64       /* a group's entries, then doubled (cold) */
#define GROUP_MAX (1u << 20) /* ... up to: beyond, said as dropped (group-cut) */

/* What this thread's hooks carry from one to the next (cold-allocated). */
struct grouped {
	struct rt_dq_entry *e;
	struct rt_dq *q;
	const void *stream;
	uint8_t ok;   /* the collective's call returned success */
	uint8_t drop; /* its record not kept, and why (enum rt_drop_reason) */
};

struct tls {
	struct rt_dq *q[RT_DQ_NDEV];
	struct rt_dq_entry *cur; /* made by the running call's before-hook */
	struct rt_dq *cur_q;
	const void *cur_stream;
	int depth;  /* ncclGroupStart depth */
	int ending; /* the outermost ncclGroupEnd runs: its starts are recorded */
	unsigned n, cap; /* grouped calls, room for them */
	/* the running call's record not kept: why, and which; said by its
	 * after-hook (a record cannot start inside another's fields) */
	uint8_t drop;
	uint64_t drop_comm;
	uint32_t drop_seq;
	struct grouped *g;
};

static RT_TLS struct tls *me;
static int mode = -1; /* 0 off, 1 auto, 2 events, 3 plugin */
static int plugin_up;
struct rt_dq_cuda rt_dq_cu;
int rt_dq_disabled, rt_dq_warned;

static void resolve(void)
{
#define R(f, n) *(void **)&rt_dq_cu.f = rt_tr_resolve(n, RT_LIB_CUDA)
	R(create, "cudaEventCreateWithFlags");
	R(record, "cudaEventRecord");
	R(query, "cudaEventQuery");
	R(capturing, "cudaStreamIsCapturing"); /* may be absent: then no capture */
	R(peek, "cudaPeekAtLastError");
	R(get, "cudaGetLastError");
	R(getdev, "cudaGetDevice");
	R(setdev, "cudaSetDevice");
	R(capture_mode, "cudaThreadExchangeStreamCaptureMode");
#undef R
}

/* Cold: read the mode once. */
static int mode_now(void)
{
	int m = __atomic_load_n(&mode, __ATOMIC_ACQUIRE);
	struct rt_env_val v;

	if (m >= 0)
		return m;
	rt_tr_env(RT_ENV_DEVICE_SOURCE, &v); /* a bad value: said, auto */
	m = rt_env_is(&v, "auto") ? 1 : rt_env_is(&v, "events") ? 2 : rt_env_is(&v, "plugin") ? 3 : 0;
	if (m == 1 || m == 2)
		resolve();
	if (!rt_dq_cu.create || !rt_dq_cu.record || !rt_dq_cu.query || !rt_dq_cu.peek ||
	    !rt_dq_cu.get)
		m = m == 1 || m == 2 ? (m == 1 ? 3 : 0) : m;
	__atomic_store_n(&mode, m, __ATOMIC_RELEASE);
	return m;
}

/* device.c: may the plugin's reports be recorded? (not when events are forced) */
bool rt_tr_devev_plugin_ok(void)
{
	int m = mode_now();

	if (m == 1 || m == 3)
		__atomic_store_n(&plugin_up, 1, __ATOMIC_RELEASE);
	return m == 1 || m == 3;
}

void rt_dq_fail_once(const char *what, int err)
{
	__atomic_store_n(&rt_dq_disabled, 1, __ATOMIC_RELEASE);
	rt_tr_warn_once(&rt_dq_warned, "device completion from CUDA events is off: %s failed (%d)",
			what, err);
}

/* Is CUDA events the source for this process (whether or not it works)? */
static inline bool chosen(void)
{
	int m = __atomic_load_n(&mode, __ATOMIC_RELAXED);

	if (rt_unlikely(m < 0))
		m = mode_now();
	return m == 2 || (m == 1 && !__atomic_load_n(&plugin_up, __ATOMIC_RELAXED));
}

/* Is the source on for this process? */
static inline bool active(void)
{
	return chosen() && !__atomic_load_n(&rt_dq_disabled, __ATOMIC_RELAXED);
}

/* A collective's record not kept, said (rt_dev_drop): from an after-hook.
 * A point-to-point call's is not: rt_dev_drop names a collective (comm_id,
 * seq), and a P2P's seq counts another thing (its peer's calls). */
static void say_drop(int reason, const struct rt_dq_entry *e)
{
	if (!e->p2p)
		rt_tr_ev_rt_dev_drop(RT_DEV_SRC_EVENT, reason, e->comm_id, e->seq, 0, 0);
}

/* The running call's record is not kept: said by its after-hook. */
static void drop_later(struct tls *t, int reason, const struct rt_dq_entry *what)
{
	if (what->p2p)
		return;
	t->drop = (uint8_t)reason;
	t->drop_comm = what->comm_id;
	t->drop_seq = what->seq;
}

/* Why no record can be had now: the program's pending error, or else. */
static int why_not(int otherwise)
{
	return rt_dq_cu.peek() != cudaSuccess ? RT_DROP_PENDING : otherwise;
}

static void settle(struct tls *t);

/* The thread exits (devqueue.c's key destructor; q is the first member). */
static void settle_at_exit(void *mine)
{
	struct tls *t = mine;

	settle(t);
	free(t->g);
	t->g = NULL;
	t->cap = 0;
}

__attribute__((cold, noinline)) static struct tls *make_tls(void)
{
	me = calloc(1, sizeof(*me));
	if (me)
		rt_dq_thread_started(me->q, settle_at_exit);
	return me;
}

/* May an event be recorded on stream now? Not with an error of the
 * program's pending, not while the stream is being captured. */
static bool may_record(const void *stream)
{
	enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;

	if (rt_dq_cu.peek() != cudaSuccess)
		return false; /* an error of the program's is pending: leave it alone */
	if (rt_dq_cu.capturing && (rt_dq_cu.capturing((cudaStream_t)stream, &cap) != cudaSuccess ||
				   cap != cudaStreamCaptureStatusNone)) {
		rt_dq_cu.get(); /* capturing is legal; a failed query must not stay behind */
		return false;
	}
	return true;
}

/* Record ev on stream; a failure of ours is cleared and turns the source off. */
static bool record(cudaEvent_t ev, const void *stream)
{
	cudaError_t e = rt_dq_cu.record(ev, (cudaStream_t)stream);

	if (__builtin_expect(e == cudaSuccess, 1))
		return true;
	rt_dq_cu.get(); /* ours: back to the success it was */
	rt_dq_fail_once("cudaEventRecord", (int)e);
	return false;
}

/* What an earlier call left: a collective whose call failed (its before-hook
 * ran, its after-hook did not), a group whose ncclGroupEnd failed or was not
 * recorded. Their entries are voided and handed to the poller. */
static void settle(struct tls *t)
{
	t->drop = 0; /* its call failed: no collective, nothing dropped */
	if (t->cur && !t->depth && !t->ending) {
		t->cur->dead = 1;
		rt_dq_publish(t->cur_q);
	}
	t->cur = NULL;
	if (t->ending) { /* published already */
		for (unsigned i = 0; i < t->n; i++)
			rt_dq_set(&t->g[i].e->dead);
		t->n = 0;
		t->ending = 0;
	}
}

/* The queue of this thread for dev, made on first use (cold). */
static inline struct rt_dq *queue_of(struct tls *t, int dev)
{
	if (rt_unlikely(dev < 0 || dev >= RT_DQ_NDEV))
		return NULL;
	if (__builtin_expect(t->q[dev] != NULL, 1))
		return t->q[dev];
	return t->q[dev] = rt_dq_claim(dev);
}

/* Room for one more grouped call (cold: a group bigger than any before). */
__attribute__((cold, noinline)) static bool group_grow(struct tls *t)
{
	unsigned cap = t->cap ? t->cap * 2 : GROUP_FIRST;
	struct grouped *g;

	if (cap > GROUP_MAX || !(g = realloc(t->g, (size_t)cap * sizeof(*g))))
		return false;
	t->g = g;
	t->cap = cap;
	return true;
}

/* What the call being recorded took (device.c), into e. */
static void fill(struct rt_dq_entry *e, uint64_t comm_id, uint32_t seq, int peer, int p2p,
		 const void *stream)
{
	e->stream = stream;
	e->comm_id = comm_id;
	e->seq = seq;
	e->peer = peer;
	e->p2p = (uint8_t)p2p;
}

/* Inside a group: remember the call; its events come at group end. */
static void stash(struct tls *t, struct rt_dq *q, const struct rt_dq_entry *what,
		  const void *stream)
{
	struct rt_dq_entry *e;

	if (t->n == t->cap && !group_grow(t)) {
		drop_later(t, RT_DROP_GROUP, what);
		return;
	}
	if (!(e = rt_dq_reserve(q))) {
		drop_later(t, why_not(RT_DROP_QUEUE), what);
		return;
	}
	fill(e, what->comm_id, what->seq, what->peer, what->p2p, stream);
	t->g[t->n++] = (struct grouped){ e, q, stream, 0, 0 };
	t->cur = e;
}

/* The collective's stream field: it has taken its (comm_id, seq) on this
 * thread (device.c). Records the start event; returns the stream. */
const void *rt_tr_devev_before(const void *stream)
{
	struct tls *t = me;
	struct rt_dq_entry *e, what;
	struct rt_dq *q;
	int peer, p2p;

	if (!chosen() || (!t && !(t = make_tls())))
		return stream;
	if (rt_unlikely(t->cur || t->ending || t->drop))
		settle(t);
	q = queue_of(t, rt_tr_dev_last(&what.comm_id, &what.seq, &peer, &p2p));
	what.peer = peer;
	what.p2p = (uint8_t)p2p;
	if (rt_unlikely(!q || !active())) { /* no events to be had: said */
		drop_later(t, why_not(RT_DROP_NO_EVENTS), &what);
		return stream;
	}
	if (t->depth > 0) {
		stash(t, q, &what, stream);
		return stream;
	}
	if (!may_record(stream)) { /* an error of the program's pending, or captured */
		drop_later(t, why_not(RT_DROP_CAPTURE), &what);
		return stream;
	}
	if (rt_unlikely(!(e = rt_dq_reserve(q)))) {
		drop_later(t, why_not(RT_DROP_QUEUE), &what);
		return stream;
	}
	fill(e, what.comm_id, what.seq, peer, p2p, stream);
	if (!record(e->start, stream)) {
		e->dead = 1;
		rt_dq_publish(q);
		drop_later(t, RT_DROP_NO_EVENTS, &what);
		return stream;
	}
	t->cur = e;
	t->cur_q = q;
	t->cur_stream = stream;
	return stream;
}

/* The collective's after-hook: it returned success. */
void rt_tr_devev_after(const void *comm, const void *stream)
{
	struct tls *t = me;
	struct rt_dq_entry *e;

	(void)comm;
	rt_tr_dev_unbound_said(); /* device.c: the plugin's, if any */
	if (!t)
		return;
	if (rt_unlikely(t->drop)) { /* the before-hook's */
		rt_tr_ev_rt_dev_drop(RT_DEV_SRC_EVENT, t->drop, t->drop_comm, t->drop_seq, 0, 0);
		t->drop = 0;
	}
	if (!(e = t->cur))
		return;
	t->cur = NULL;
	if (t->depth > 0) { /* launched at the group's end */
		t->g[t->n - 1].ok = 1;
		return;
	}
	/* an error pending now (the program's, or one the collective left) is
	 * not ours to take: no completion event, the record not kept */
	if (rt_dq_cu.peek() == cudaSuccess && record(e->end, stream)) {
		e->armed = 1;
	} else {
		e->dead = 1;
		say_drop(why_not(RT_DROP_NO_EVENTS), e);
	}
	rt_dq_publish(t->cur_q);
}

/* The devdelay fault put a sleep on the running collective's stream after
 * its start event: the start moves behind it (re-recording an event is
 * CUDA's "the event now stands for this point"). */
void rt_tr_devev_delayed(const void *stream)
{
	struct tls *t = me;

	if (t && t->cur && !t->depth && t->cur_stream == stream && may_record(stream) &&
	    !record(t->cur->start, stream))
		t->cur->dead = 1;
}

/* The outermost ncclGroupEnd is about to run: the start events of the
 * collectives it launches, on their streams. */
static void group_starts(struct tls *t)
{
	bool ok = rt_dq_cu.peek() == cudaSuccess;

	for (unsigned i = 0; i < t->n; i++) {
		struct grouped *g = &t->g[i];

		if (!g->ok) {
			g->e->dead = 1; /* its call failed: never launched */
		} else if (!ok || !may_record(g->stream)) {
			g->drop = (uint8_t)why_not(RT_DROP_CAPTURE);
			g->e->dead = 1;
		} else if (!record(g->e->start, g->stream)) {
			g->drop = RT_DROP_NO_EVENTS;
			g->e->dead = 1;
		}
	}
	for (unsigned i = 0; i < t->n; i++) /* the poller sees the starts at once */
		rt_dq_publish(t->g[i].q);
	t->ending = 1;
}

/* ncclGroupStart's (+1) and ncclGroupEnd's (-1) device column, before the
 * call, traced or not; returns the current device, as DEV_CUR. A call
 * nested in one of ours, or made while the tracer is off, is not counted. */
int rt_tr_devev_group(int step)
{
	struct tls *t = me;

	if (rt_tr_off || rt_tr_depth != 0)
		return rt_tr_cur_dev;
	if (!t) {
		if (step < 0 || !active() || !make_tls())
			return rt_tr_cur_dev;
		t = me;
	}
	if (rt_unlikely(t->cur || t->ending))
		settle(t);
	if (step > 0) {
		if (t->depth++ == 0)
			t->n = 0;
	} else if (t->depth > 0 && --t->depth == 0 && t->n) {
		if (active()) {
			group_starts(t);
		} else { /* the source went off meanwhile: said at the group's end */
			for (unsigned i = 0; i < t->n; i++) {
				t->g[i].e->dead = 1;
				t->g[i].drop = t->g[i].ok ? RT_DROP_NO_EVENTS : 0;
				rt_dq_publish(t->g[i].q);
			}
			t->ending = 1;
		}
	}
	return rt_tr_cur_dev;
}

/* ncclGroupEnd's after-hook (it returned success): the completion events. */
void rt_tr_devev_group_done(void)
{
	struct tls *t = me;
	bool ok;

	if (!t || !t->ending || t->depth)
		return;
	ok = rt_dq_cu.peek() == cudaSuccess; /* else not ours to take: none recorded */
	for (unsigned i = 0; i < t->n; i++) {
		struct grouped *g = &t->g[i];

		if (!g->drop && ok && g->ok && active() && record(g->e->end, g->stream)) {
			rt_dq_set(&g->e->armed);
			continue;
		}
		if (g->ok)
			say_drop(g->drop ? g->drop : why_not(RT_DROP_NO_EVENTS), g->e);
		rt_dq_set(&g->e->dead);
	}
	t->n = 0;
	t->ending = 0;
}
