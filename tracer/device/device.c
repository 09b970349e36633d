/* SPDX-License-Identifier: MIT */
/* device.c - collectives on the device: the hooks ranktrace's NCCL profiler
 * plugin calls (libnccl-profiler-ranktrace.so, nccl_profiler.c), and the
 * stream delay of the `devdelay` fault.
 *
 * A collective call takes its sequence number on the calling thread
 * (identity/comms.c); that thread remembers (kind, comm_id, seq) in a small ring.
 * NCCL starts the plugin's collective event on the same thread, in the call
 * or in the ncclGroupEnd that launches it, and the plugin asks which of ours
 * it is (rt_dev_bind): the oldest unbound entry of that kind. An event
 * started elsewhere, or after the ring wrapped, stays unbound (comm_id 0):
 * the viewer still has NCCL's own identity. Device start and completion are
 * recorded as rt_dev_coll on whichever thread NCCL reports them (its proxy
 * thread on a GPU; the device worker in the simulator).
 *
 * No lock, no allocation: the ring is per thread and fixed. */
#include <cuda_runtime_api.h>
#include <string.h>
#include <time.h>

#include "device_int.h"
#include "inject.h" /* rt_inj_host_stream_delay: answered here */

#define RING 64

struct pending {
	uint64_t comm_id;
	uint32_t seq;
	int8_t kind; /* enum rt_coll_kind, -1: bound already */
	int dev;     /* the communicator's device */
};

static RT_TLS struct pending ring[RING];
static RT_TLS uint32_t ring_head;
static RT_TLS struct pending last; /* the collective this thread numbered last */
/* an entry the ring overwrote before the plugin bound it: its device record
 * can never be tied to its call (said by the call's after-hook) */
static RT_TLS struct pending lost;
static int plugin_loaded;

/* interpose/hooks.c, when a collective takes its number: the call being
 * recorded is the collective (rt_tr_cur_id). */
void rt_tr_dev_enqueued(uint64_t comm_id, uint32_t seq, int dev)
{
	struct pending *p = &ring[ring_head++ % RING];

	if (rt_unlikely(ring_head > RING && p->kind >= 0 && p->comm_id &&
			__atomic_load_n(&plugin_loaded, __ATOMIC_RELAXED)))
		lost = *p; /* more than RING launched at once (a group) */
	p->comm_id = comm_id;
	p->seq = seq;
	p->dev = dev;
	p->kind = (int8_t)rt_coll_kind_of(rt_tr_cur_id);
	last = *p;
}

/* A collective's after-hook (devevents.c): the record the ring lost. */
void rt_tr_dev_unbound_said(void)
{
	if (__builtin_expect(!lost.comm_id, 1))
		return;
	if (rt_tr_devev_plugin_ok())
		rt_tr_ev_rt_dev_drop(RT_DEV_SRC_PLUGIN, RT_DROP_UNBOUND, lost.comm_id, lost.seq, 0, 0);
	lost.comm_id = 0;
}

/* devevents.c: the (comm_id, seq) the collective being recorded took, and
 * its communicator's device (no second lookup of the communicator) */
int rt_tr_dev_last(uint64_t *comm_id, uint32_t *seq)
{
	*comm_id = last.comm_id;
	*seq = last.seq;
	return last.dev;
}

static int kind_of(const char *func)
{
	for (int k = 0; func && k < RT_CK_COUNT; k++)
		if (!strcmp(rt_coll_names[k], func))
			return k;
	return -1;
}

RT_EXPORT void rt_dev_bind(const char *func, uint64_t *comm_id, uint32_t *seq)
{
	int kind = kind_of(func);

	*comm_id = 0;
	*seq = 0;
	if (kind < 0)
		return;
	for (uint32_t i = ring_head > RING ? ring_head - RING : 0; i < ring_head; i++) {
		struct pending *p = &ring[i % RING];

		if (p->kind != kind)
			continue;
		*comm_id = p->comm_id;
		*seq = p->seq;
		p->kind = -1;
		return;
	}
}

/* The plugin's pool was full: the record NCCL's event would have had is
 * tied to its call (the ring entry taken, as rt_dev_bind does) and said. */
RT_EXPORT void rt_dev_dropped(int reason, const char *func, uint64_t nccl_comm, uint64_t nccl_seq)
{
	uint64_t comm_id;
	uint32_t seq;

	if (!rt_tr_devev_plugin_ok())
		return;
	rt_dev_bind(func, &comm_id, &seq);
	rt_tr_ev_rt_dev_drop(RT_DEV_SRC_PLUGIN, reason, comm_id, seq, nccl_comm, nccl_seq);
}

RT_EXPORT void rt_dev_event(int phase, uint64_t comm_id, uint32_t seq, uint64_t nccl_comm,
			    uint64_t nccl_seq, uint64_t gpu_ns)
{
	if (!rt_tr_devev_plugin_ok()) /* RANKTRACE_DEVICE_SOURCE=events: ours only */
		return;
	rt_tr_ev_rt_dev_coll(phase, comm_id, seq, nccl_comm, nccl_seq, RT_DEV_SRC_PLUGIN, gpu_ns);
}

RT_EXPORT void rt_dev_loaded(int version)
{
	static int once;

	if (!rt_tr_devev_plugin_ok())
		return;
	__atomic_store_n(&plugin_loaded, 1, __ATOMIC_RELAXED);
	if (!__atomic_exchange_n(&once, 1, __ATOMIC_RELAXED))
		rt_tr_ev_rt_dev_source(RT_DEV_SRC_PLUGIN, version, "libnccl-profiler-ranktrace.so");
}

/* ---- devdelay: the stream sleeps, the host does not ---- */

static void CUDART_CB stream_sleep(void *arg)
{
	uint64_t ns = (uint64_t)(uintptr_t)arg;
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };

	while (nanosleep(&ts, &ts) != 0)
		;
}

int rt_inj_host_stream_delay(uint64_t stream, int64_t ns)
{
	static cudaError_t (*launch)(cudaStream_t, cudaHostFn_t, void *);
	static cudaError_t (*peek)(void), (*get)(void);

	if (!__atomic_load_n(&launch, __ATOMIC_ACQUIRE)) { /* launch last: the others are set */
		peek = (cudaError_t(*)(void))rt_tr_resolve("cudaPeekAtLastError", RT_LIB_CUDA);
		get = (cudaError_t(*)(void))rt_tr_resolve("cudaGetLastError", RT_LIB_CUDA);
		__atomic_store_n(&launch, (cudaError_t(*)(cudaStream_t, cudaHostFn_t, void *))
			rt_tr_resolve("cudaLaunchHostFunc", RT_LIB_CUDA), __ATOMIC_RELEASE);
	}
	if (!launch || ns < 0 || !peek || peek() != cudaSuccess)
		return -1; /* an error of the program's pending: not ours to take, no delay */
	if (launch((cudaStream_t)(uintptr_t)stream, stream_sleep, (void *)(uintptr_t)ns) !=
	    cudaSuccess) {
		get(); /* ours (success before): cleared */
		return -1;
	}
	rt_tr_devev_delayed((const void *)(uintptr_t)stream); /* the start event behind it */
	return 0;
}
