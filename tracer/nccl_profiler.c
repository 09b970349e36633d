/* SPDX-License-Identifier: MIT */
/* nccl_profiler.c - libnccl-profiler-ranktrace.so: ranktrace's NCCL profiler
 * plugin. It tells the tracer when each collective started and completed on
 * the device.
 *
 * NCCL (or the simulated NCCL) dlopens it through NCCL_PROFILER_PLUGIN, which
 * `ranktrace run` sets, and takes the newest API it knows: ncclProfiler_v5
 * (NCCL 2.28), else ncclProfiler_v4 (2.26, 2.27). It asks for collective and
 * kernel-channel events only. A collective event starts on the enqueuing
 * thread (the plugin asks the tracer which of its collectives it is); its
 * kernel channels start and stop as the device runs it: the first channel
 * to start is the collective's start on the device, the last to stop (once
 * NCCL stopped the collective event itself) its completion.
 *
 * The plugin records nothing itself: it calls libranktrace.so's hooks
 * (rt_dev_bind, rt_dev_event, rt_dev_loaded), found with dlsym. Without
 * them (no tracer in the process) init fails and NCCL runs without it.
 * Thread-safe and lock-free: collective records come from a fixed pool,
 * claimed and released with atomics; an exhausted pool drops the event. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_profiler_abi.h"

#define EXPORT __attribute__((visibility("default")))
#define POOL 4096
#define CHANNELS 64

enum { T_COLL = 1, T_CHAN = 2 };

struct coll;
struct chan {
	uint8_t type; /* T_CHAN: first, as in struct coll */
	struct coll *parent;
};

struct coll {
	uint8_t type; /* T_COLL */
	_Atomic int busy;
	_Atomic int refs;    /* the collective event itself + running channels */
	_Atomic int started; /* phase 1 recorded */
	_Atomic uint64_t gpu_stop;
	uint64_t comm_id, nccl_comm, nccl_seq;
	uint32_t seq;
	struct chan ch[CHANNELS];
};

struct ctx {
	uint64_t nccl_comm;
	int rank;
};

static struct coll pool[POOL];
static _Atomic unsigned pool_next;
static rt_dev_bind_fn bind_hook;
static rt_dev_event_fn event_hook;
static rt_dev_loaded_fn loaded_hook;

static bool hooks(void)
{
	if (!event_hook) {
		bind_hook = (rt_dev_bind_fn)dlsym(RTLD_DEFAULT, "rt_dev_bind");
		loaded_hook = (rt_dev_loaded_fn)dlsym(RTLD_DEFAULT, "rt_dev_loaded");
		event_hook = (rt_dev_event_fn)dlsym(RTLD_DEFAULT, "rt_dev_event");
	}
	return bind_hook && loaded_hook && event_hook;
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
	*mask = RT_NCCL_PROFILE_COLL | RT_NCCL_PROFILE_KERNEL_CH;
	*context = c;
	loaded_hook(version);
	return ncclSuccess;
}

static struct coll *claim(void)
{
	for (unsigned n = 0; n < POOL; n++) {
		struct coll *o = &pool[atomic_fetch_add(&pool_next, 1) % POOL];
		int free_ = 0;

		if (atomic_compare_exchange_strong(&o->busy, &free_, 1))
			return o;
	}
	return NULL;
}

/* The last reference gone: completed on the device if a channel ran. NCCL
 * may stop the collective event (enqueued) before any channel starts: the
 * record then waits, unreferenced, for its channels. A collective whose
 * channels never come (an NCCL without kernel events) keeps its record. */
static void put(struct coll *o)
{
	if (atomic_fetch_sub(&o->refs, 1) != 1 || !atomic_load(&o->started))
		return;
	event_hook(2, o->comm_id, o->seq, o->nccl_comm, o->nccl_seq, atomic_load(&o->gpu_stop));
	atomic_store(&o->busy, 0);
}

static void *coll_start(struct ctx *c, uint64_t nccl_seq, const char *func)
{
	struct coll *o = claim();

	if (!o)
		return NULL;
	o->type = T_COLL;
	o->nccl_comm = c ? c->nccl_comm : 0;
	o->nccl_seq = nccl_seq;
	atomic_store(&o->refs, 1);
	atomic_store(&o->started, 0);
	atomic_store(&o->gpu_stop, 0);
	bind_hook(func, &o->comm_id, &o->seq);
	return o;
}

static void *chan_start(void *parent, unsigned channel, uint64_t gpu_ns)
{
	struct coll *o = parent;
	int no = 0;

	if (!o || o->type != T_COLL || channel >= CHANNELS)
		return NULL;
	atomic_fetch_add(&o->refs, 1); /* before started: put() must not see started alone */
	if (atomic_compare_exchange_strong(&o->started, &no, 1))
		event_hook(1, o->comm_id, o->seq, o->nccl_comm, o->nccl_seq, gpu_ns);
	o->ch[channel].type = T_CHAN;
	o->ch[channel].parent = o;
	return &o->ch[channel];
}

static ncclResult_t stop_event(void *handle)
{
	uint8_t type = handle ? *(const uint8_t *)handle : 0;

	if (type == T_COLL)
		put(handle);
	else if (type == T_CHAN)
		put(((struct chan *)handle)->parent);
	return ncclSuccess;
}

static ncclResult_t record_state(void *handle, int state, union rt_nccl_state_args *args)
{
	struct chan *ch = handle;

	if (ch && ch->type == T_CHAN && state == RT_NCCL_KERNEL_CH_STOP && args)
		atomic_store(&ch->parent->gpu_stop, args->kernelCh.pTimer);
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

static ncclResult_t start_v5(void *context, void **handle, struct rt_nccl_descr_v5 *d)
{
	*handle = NULL;
	if (d->type == RT_NCCL_PROFILE_COLL)
		*handle = coll_start(context, d->coll.seqNumber, d->coll.func);
	else if (d->type == RT_NCCL_PROFILE_KERNEL_CH)
		*handle = chan_start(d->parentObj, d->kernelCh.channelId, d->kernelCh.pTimer);
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
	*handle = NULL;
	if (d->type == RT_NCCL_PROFILE_COLL)
		*handle = coll_start(context, d->coll.seqNumber, d->coll.func);
	else if (d->type == RT_NCCL_PROFILE_KERNEL_CH)
		*handle = chan_start(d->parentObj, d->kernelCh.channelId, d->kernelCh.pTimer);
	return ncclSuccess;
}

EXPORT const rt_nccl_profiler_v4_t ncclProfiler_v4 = {
	"ranktrace", init_v4, start_v4, stop_event, record_state, finalize,
};
