/* SPDX-License-Identifier: MIT */
/* nccl_profiler.c - libnccl-profiler-ranktrace.so: ranktrace's NCCL profiler
 * plugin. It tells the tracer when each collective started and completed on
 * the device.
 *
 * NCCL (or the simulated NCCL) dlopens it through NCCL_PROFILER_PLUGIN, which
 * `ranktrace run` sets, and takes the newest API it knows: ncclProfiler_v5
 * (NCCL 2.28), else ncclProfiler_v4 (2.26, 2.27). It asks for collective,
 * point-to-point and kernel-channel events only. A collective (or P2P) event
 * starts on the enqueuing thread (the plugin asks the tracer which of its
 * calls it is, by kind, buffers, count and peer); its
 * kernel channels start and stop as the device runs it: the first channel
 * to start is the collective's start on the device; it completed once NCCL
 * stopped the collective event itself and every channel that started has
 * stopped, and, when NCCL announced the collective's channel count
 * (nChannels, as NVIDIA's Inspector plugin counts them), that many have:
 * NCCL's profiler thread reports each channel when it finds it done, so
 * channel 0 may start and stop before channel 1 starts. Its time is the
 * latest channel stop. Reports on a completed record change nothing.
 *
 * The plugin records nothing itself: it calls libranktrace.so's hooks
 * (rt_dev_bind_v2, rt_dev_event, rt_dev_p2p_event, rt_dev_loaded), found
 * with dlsym. Without them (no tracer in the process, or one older than
 * this plugin) init fails and NCCL runs without it.
 * Thread-safe and lock-free: collective records come from a pool of up to
 * POOL_MAX (65,536 collectives in flight at once), made in chunks of
 * POOL_CHUNK as more are in flight than ever before (cold: one calloc per
 * chunk, never freed), given back to a queue where they rest before reuse,
 * each taken and given back with one compare-and-swap; beyond POOL_MAX a
 * record is dropped, never waited for, and the tracer records the drop
 * (rt_dev_dropped). */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_profiler_abi.h"
#include "schema.h" /* enum rt_drop_reason: values only */

#define EXPORT __attribute__((visibility("default")))
#define POOL_CHUNK 1024              /* records made at once */
#define POOL_MAX (64 * POOL_CHUNK)   /* 65,536 collectives in flight */
#define POOL_NONE UINT32_MAX         /* no record */
#define REST 4096                    /* records given back, resting before reuse */

enum { T_COLL = 1, T_CHAN = 2 };

struct coll;
struct chan {
	uint8_t type; /* T_CHAN: first, as in struct coll */
	struct coll *parent;
};

struct coll {
	uint8_t type; /* T_COLL */
	uint32_t idx; /* its place in the pool */
	_Atomic int refs;    /* the collective event itself + running channels */
	_Atomic int started; /* phase 1 recorded */
	_Atomic int stopped; /* channels stopped */
	_Atomic int done;    /* phase 2 recorded */
	int nchan;           /* channels NCCL announced, 0: not said */
	_Atomic uint64_t gpu_stop; /* the latest channel stop */
	uint64_t comm_id, nccl_comm, nccl_seq;
	uint32_t seq;
	int peer;            /* a P2P event's */
	uint8_t p2p;         /* 0 a collective, 1 a Send, 2 a Recv */
	struct chan ch; /* every channel's handle: NCCL only hands it back */
};

struct ctx {
	uint64_t nccl_comm;
	int rank;
};

/* The pool: chunks of records, made in order as more are in flight than
 * ever before; records given back rest in a queue (bounded, lock-free, one
 * place per record: a place's turn says whose it is, giver or taker, and
 * for which lap) and are taken oldest first, and only once REST others
 * rest behind them: NCCL may still report on a completed collective's
 * handle (a channel that starts late), which must find it completed, not
 * another collective's, as with the round-robin pool of 4,096 before. */
struct rested {
	_Atomic uint32_t turn; /* minus the place's index: zeroed is its first lap */
	uint32_t idx;
};
static struct coll *_Atomic chunks[POOL_MAX / POOL_CHUNK];
static _Atomic uint32_t made; /* records handed out of the chunks so far */
static struct rested rested[POOL_MAX];
static _Atomic uint32_t rest_head, rest_tail;

/* Set once, by the first init that finds all three (several threads may
 * init communicators at once); read by every event. NULL until then: an
 * event before any init (or with no tracer) is dropped. */
static rt_dev_bind_fn _Atomic bind_hook;
static rt_dev_event_fn _Atomic event_hook;
static rt_dev_p2p_event_fn _Atomic p2p_hook;
static rt_dev_loaded_fn _Atomic loaded_hook;
static rt_dev_dropped_fn _Atomic dropped_hook; /* optional: an older tracer has none */

static bool hooks(void)
{
	rt_dev_bind_fn b;
	rt_dev_event_fn e;
	rt_dev_p2p_event_fn p;
	rt_dev_loaded_fn l;

	if (atomic_load(&event_hook))
		return true;
	b = (rt_dev_bind_fn)dlsym(RTLD_DEFAULT, "rt_dev_bind_v2");
	l = (rt_dev_loaded_fn)dlsym(RTLD_DEFAULT, "rt_dev_loaded");
	e = (rt_dev_event_fn)dlsym(RTLD_DEFAULT, "rt_dev_event");
	p = (rt_dev_p2p_event_fn)dlsym(RTLD_DEFAULT, "rt_dev_p2p_event");
	if (!b || !l || !e || !p)
		return false;
	atomic_store(&dropped_hook, (rt_dev_dropped_fn)dlsym(RTLD_DEFAULT, "rt_dev_dropped"));
	atomic_store(&bind_hook, b);
	atomic_store(&p2p_hook, p);
	atomic_store(&loaded_hook, l);
	atomic_store(&event_hook, e); /* last: the others are set when it is */
	return true;
}

static ncclResult_t init_common(void **context, int *mask, uint64_t comm, int rank, int version)
{
	struct ctx *c;

	*context = NULL;
	if (!hooks())
		return ncclInternalError; /* no tracer here: NCCL disables the plugin */
	c = calloc(1, sizeof(*c));
	if (!c)
		return ncclSystemError;
	c->nccl_comm = comm;
	c->rank = rank;
	*mask = RT_NCCL_PROFILE_COLL | RT_NCCL_PROFILE_P2P | RT_NCCL_PROFILE_KERNEL_CH;
	*context = c;
	atomic_load(&loaded_hook)(version);
	return ncclSuccess;
}

static struct coll *at(uint32_t i)
{
	return &atomic_load_explicit(&chunks[i / POOL_CHUNK], memory_order_acquire)[i % POOL_CHUNK];
}

/* Cold: record i, whose chunk is not made yet: made by whoever asks first
 * (several threads may: one calloc wins, the others are freed). */
__attribute__((cold, noinline)) static struct coll *fresh(uint32_t i)
{
	struct coll *_Atomic *slot = &chunks[i / POOL_CHUNK];
	struct coll *c = atomic_load(slot), *none = NULL;

	if (!c && (c = calloc(POOL_CHUNK, sizeof(*c))) != NULL &&
	    !atomic_compare_exchange_strong(slot, &none, c)) {
		free(c);
		c = none;
	}
	return c ? &c[i % POOL_CHUNK] : NULL;
}

/* The rested record, oldest given back first, when more than rest others
 * rest behind it; POOL_NONE else. */
static uint32_t take_rested(uint32_t rest)
{
	uint32_t pos = atomic_load(&rest_head), i, v;
	struct rested *c;

	for (;;) {
		if (atomic_load(&rest_tail) - pos <= rest)
			return POOL_NONE;
		c = &rested[pos % POOL_MAX];
		v = atomic_load(&c->turn) + pos % POOL_MAX; /* zeroed: turn i for place i */
		if ((int32_t)(v - (pos + 1)) < 0)
			return POOL_NONE; /* its giver has not written it yet */
		if (v == pos + 1 && atomic_compare_exchange_weak(&rest_head, &pos, pos + 1))
			break;
		if (v != pos + 1)
			pos = atomic_load(&rest_head);
	}
	i = c->idx;
	atomic_store(&c->turn, pos + POOL_MAX - pos % POOL_MAX); /* the giver's next lap */
	return i;
}

/* A record back, behind the others resting (the queue has a place for
 * every record: never full). */
static void give_back(struct coll *o)
{
	uint32_t pos = atomic_load(&rest_tail), v;
	struct rested *c;

	for (;;) {
		c = &rested[pos % POOL_MAX];
		v = atomic_load(&c->turn) + pos % POOL_MAX;
		if (v == pos && atomic_compare_exchange_weak(&rest_tail, &pos, pos + 1))
			break;
		if (v != pos)
			pos = atomic_load(&rest_tail);
	}
	c->idx = o->idx;
	atomic_store(&c->turn, pos + 1 - pos % POOL_MAX); /* the taker's turn */
}

/* A free record: the oldest given back while REST others rest behind it
 * (or any, once POOL_MAX are made), else one never used (in a chunk made on
 * first need); NULL with POOL_MAX in flight. */
static struct coll *claim(void)
{
	uint32_t i = take_rested(atomic_load(&made) < POOL_MAX ? REST : 0);
	struct coll *o;

	if (i != POOL_NONE)
		return at(i);
	i = atomic_load(&made);
	do { /* never past POOL_MAX, even with many threads at the end */
		if (i >= POOL_MAX)
			return (i = take_rested(0)) != POOL_NONE ? at(i) : NULL;
	} while (!atomic_compare_exchange_weak(&made, &i, i + 1));
	o = atomic_load(&chunks[i / POOL_CHUNK]) ? at(i) : fresh(i);
	if (o) /* else no memory: record i is never used, this one dropped */
		o->idx = i;
	return o;
}

/* The record's phase (1 started, 2 completed) to the tracer. */
static void report(const struct coll *o, int phase, uint64_t gpu_ns)
{
	if (o->p2p)
		atomic_load(&p2p_hook)(phase, o->comm_id, o->peer, o->seq, o->p2p == 1, o->nccl_comm,
				       gpu_ns);
	else
		atomic_load(&event_hook)(phase, o->comm_id, o->seq, o->nccl_comm, o->nccl_seq, gpu_ns);
}

/* A reference gone. The last one (nothing running) completes the record
 * if a channel ran and, when NCCL announced nchan channels, that many
 * stopped; else the record waits for more channels. NCCL may stop the
 * collective event (enqueued) before any channel starts, or a channel
 * before the next starts. A collective whose channels never come (an NCCL
 * without kernel events, an aborted communicator) keeps its record. A
 * channel counts its stop before it drops its reference, so the put that
 * ends at zero sees every stop before it. */
static void put(struct coll *o)
{
	int no = 0;

	if (atomic_fetch_sub(&o->refs, 1) != 1 || !atomic_load(&o->started) ||
	    (o->nchan && atomic_load(&o->stopped) < o->nchan) ||
	    !atomic_compare_exchange_strong(&o->done, &no, 1))
		return;
	report(o, 2, atomic_load(&o->gpu_stop));
	give_back(o);
}

/* What NCCL said of a collective (p2p 0) or point-to-point (1 Send, 2 Recv)
 * event. */
struct call {
	const char *func;
	const void *send, *recv;
	uint64_t count, nccl_seq;
	int peer;
	uint8_t nchan, p2p;
};

static void *coll_start(struct ctx *c, const struct call *k)
{
	rt_dev_bind_fn bind = atomic_load(&bind_hook);
	rt_dev_dropped_fn dropped;
	struct coll *o = bind ? claim() : NULL;

	if (!o) { /* the pool is full: the record is lost, the tracer says so */
		if (bind && (dropped = atomic_load(&dropped_hook)) != NULL)
			dropped(RT_DROP_POOL, k->func, c ? c->nccl_comm : 0, k->nccl_seq);
		return NULL;
	}
	o->type = T_COLL;
	o->nccl_comm = c ? c->nccl_comm : 0;
	o->nccl_seq = k->nccl_seq;
	o->nchan = k->nchan;
	o->peer = k->peer;
	o->p2p = k->p2p;
	o->ch = (struct chan){ T_CHAN, o };
	atomic_store(&o->refs, 1);
	atomic_store(&o->started, 0);
	atomic_store(&o->stopped, 0);
	atomic_store(&o->done, 0);
	atomic_store(&o->gpu_stop, 0);
	bind(k->func, k->send, k->recv, k->count, k->peer, &o->comm_id, &o->seq);
	return o;
}

/* A P2P event: its buffer is the Send's or the Recv's. */
static void *p2p_start(struct ctx *c, const char *func, void *buff, size_t count, int peer,
		       uint8_t nchan)
{
	bool send = func && !strcmp(func, "Send");
	struct call k = { func, send ? buff : NULL, send ? NULL : buff, count, 0, peer, nchan,
			  (uint8_t)(send ? 1 : 2) };

	return coll_start(c, &k);
}

static void *chan_start(void *parent, uint64_t gpu_ns)
{
	struct coll *o = parent;
	int no = 0;

	if (!o || o->type != T_COLL || atomic_load(&o->done))
		return NULL;
	atomic_fetch_add(&o->refs, 1); /* before started: put() must not see started alone */
	if (atomic_compare_exchange_strong(&o->started, &no, 1))
		report(o, 1, gpu_ns);
	return &o->ch;
}

static ncclResult_t stop_event(void *handle)
{
	uint8_t type = handle ? *(const uint8_t *)handle : 0;

	if (type == T_COLL) {
		put(handle);
	} else if (type == T_CHAN) {
		struct coll *o = ((struct chan *)handle)->parent;

		atomic_fetch_add(&o->stopped, 1);
		put(o);
	}
	return ncclSuccess;
}

/* KernelChStop: the record keeps the latest channel stop */
static ncclResult_t record_state(void *handle, int state, union rt_nccl_state_args *args)
{
	struct chan *ch = handle;
	uint64_t t, old;

	if (!ch || ch->type != T_CHAN || state != RT_NCCL_KERNEL_CH_STOP || !args)
		return ncclSuccess;
	t = args->kernelCh.pTimer;
	old = atomic_load(&ch->parent->gpu_stop);
	while (t > old && !atomic_compare_exchange_weak(&ch->parent->gpu_stop, &old, t))
		;
	return ncclSuccess;
}

static ncclResult_t finalize(void *context)
{
	free(context);
	return ncclSuccess;
}

/* ---- v5 (NCCL 2.28) ---- */

static ncclResult_t init_v5(void **context, uint64_t comm_id, int *mask, const char *name,
			    int nnodes, int nranks, int rank, rt_nccl_logger_t log)
{
	(void)name, (void)nnodes, (void)nranks, (void)log;
	return init_common(context, mask, comm_id, rank, 5);
}

/* An event of either version (their descriptors name the members alike). */
#define START_EVENT(context, handle, d)                                                \
	do {                                                                           \
		if (!(handle) || !(d))                                                 \
			break;                                                         \
		*(handle) = NULL;                                                      \
		if ((d)->type == RT_NCCL_PROFILE_COLL)                                 \
			*(handle) = coll_start(context, &(struct call){                \
				(d)->coll.func, (d)->coll.sendBuff, (d)->coll.recvBuff, \
				(d)->coll.count, (d)->coll.seqNumber, -1,              \
				(d)->coll.nChannels, 0 });                            \
		else if ((d)->type == RT_NCCL_PROFILE_P2P)                             \
			*(handle) = p2p_start(context, (d)->p2p.func, (d)->p2p.buff,   \
					      (d)->p2p.count, (d)->p2p.peer,           \
					      (d)->p2p.nChannels);                     \
		else if ((d)->type == RT_NCCL_PROFILE_KERNEL_CH)                       \
			*(handle) = chan_start((d)->parentObj, (d)->kernelCh.pTimer);  \
	} while (0)

static ncclResult_t start_v5(void *context, void **handle, struct rt_nccl_descr_v5 *d)
{
	START_EVENT(context, handle, d);
	return ncclSuccess;
}

EXPORT const rt_nccl_profiler_v5_t ncclProfiler_v5 = {
	"ranktrace", init_v5, start_v5, stop_event, record_state, finalize,
};

/* ---- v4 (NCCL 2.26, 2.27) ---- */

static ncclResult_t init_v4(void **context, int *mask, const char *name, uint64_t comm_hash,
			    int nnodes, int nranks, int rank, rt_nccl_logger_t log)
{
	(void)name, (void)nnodes, (void)nranks, (void)log;
	return init_common(context, mask, comm_hash, rank, 4);
}

static ncclResult_t start_v4(void *context, void **handle, struct rt_nccl_descr_v4 *d)
{
	START_EVENT(context, handle, d);
	return ncclSuccess;
}

EXPORT const rt_nccl_profiler_v4_t ncclProfiler_v4 = {
	"ranktrace", init_v4, start_v4, stop_event, record_state, finalize,
};
