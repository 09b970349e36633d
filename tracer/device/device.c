/* SPDX-License-Identifier: MIT */
/* device.c - collectives and point-to-point calls on the device: the hooks
 * ranktrace's NCCL profiler plugin calls (libnccl-profiler-ranktrace.so,
 * nccl_profiler.c), and the stream delay of the `devdelay` fault.
 *
 * A collective or point-to-point call takes its sequence number on the
 * calling thread (identity/comms.c); that thread keeps what it was (kind,
 * comm_id, seq, buffers, count, peer) in a list until NCCL launches it: at
 * the call, or at the ncclGroupEnd that launches its group, of any size.
 * NCCL starts the plugin's collective (or P2P) event on the same thread
 * while it launches, and the plugin asks which of ours it is
 * (rt_dev_bind_v2): the oldest unbound entry of that kind with the same
 * count and buffers (a P2P's: peer and count), else the oldest of that kind
 * (NCCL orders a group's tasks its own way: by kind and size, P2P last).
 * The list is emptied at the next call outside a group, when NCCL has
 * launched everything before it. An event started elsewhere (a CUDA graph's
 * replay) stays unbound (comm_id 0): the viewer still has NCCL's own
 * identity. Device start and completion are recorded as rt_dev_coll or
 * rt_dev_p2p on whichever thread NCCL reports them (its proxy thread on a
 * GPU; the device worker in the simulator).
 *
 * No lock. The list is per thread; it grows (cold: doubling, up to 2^20
 * entries, one warning beyond) when a group holds more than it. */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device_int.h"
#include "inject.h" /* rt_inj_host_stream_delay: answered here */

#define FIRST_CAP 64
#define MAX_CAP (1u << 20)

struct pending {
	uint64_t comm_id, count;
	const void *send, *recv; /* a P2P's buffer: send for a Send, recv for a Recv */
	uint32_t seq;
	int32_t peer;            /* a P2P's, else -1 */
	int8_t kind;             /* enum rt_coll_kind, -1: bound already */
	uint8_t p2p;             /* 0 a collective, 1 a Send, 2 a Recv */
	int dev;                 /* the communicator's device */
};

static RT_TLS struct {
	struct pending *v;
	uint32_t n, cap, first; /* entries before first are bound */
} pend;
static RT_TLS struct pending last; /* the call this thread numbered last */
/* an entry the list could not keep (no memory; a group of more than
 * MAX_CAP): its device record can never be tied to its call (said by the
 * call's after-hook, rt_tr_dev_unbound_said) */
static RT_TLS struct pending lost;
static int warned_cap, plugin_loaded;

/* Room for one more (cold): the list doubles, or starts over at its cap. */
__attribute__((cold, noinline)) static bool grow(void)
{
	uint32_t cap = pend.cap ? pend.cap * 2 : FIRST_CAP;
	struct pending *v;

	if (cap > MAX_CAP) {
		rt_tr_warn_once(&warned_cap, "a group of more than %u NCCL calls on one thread: "
				"the device records of the first are not tied to their calls", MAX_CAP);
		if (pend.first < pend.n)
			lost = pend.v[pend.first];
		pend.n = pend.first = 0;
		return true;
	}
	v = realloc(pend.v, (size_t)cap * sizeof(*v));
	if (!v)
		return false;
	pend.v = v;
	pend.cap = cap;
	return true;
}

static void keep(const struct pending *p, bool in_group)
{
	last = *p;
	if (!in_group) /* NCCL launched every call before this one */
		pend.n = pend.first = 0;
	if (pend.n == pend.cap && !grow()) {
		lost = *p;
		return;
	}
	pend.v[pend.n++] = *p;
}

/* interpose/hooks.c, when a collective takes its number: the call being
 * recorded is the collective (rt_tr_cur_id). */
void rt_tr_dev_enqueued(uint64_t comm_id, uint32_t seq, int dev, const void *send,
			const void *recv, uint64_t count, bool in_group)
{
	struct pending p = { comm_id, count, send, recv, seq, -1,
			     (int8_t)rt_coll_kind_of(rt_tr_cur_id), 0, dev };

	keep(&p, in_group);
}

void rt_tr_dev_p2p_enqueued(uint64_t comm_id, int peer, uint32_t seq, int send, int dev,
			    const void *buff, uint64_t count, bool in_group)
{
	/* the call being recorded is the ncclSend or ncclRecv */
	struct pending p = { comm_id, count, send ? buff : NULL, send ? NULL : buff, seq, peer,
			     (int8_t)rt_coll_kind_of(rt_tr_cur_id), (uint8_t)(send ? 1 : 2), dev };

	keep(&p, in_group);
}

/* A call's after-hook (devevents.c): the record the list lost. */
void rt_tr_dev_unbound_said(void)
{
	if (__builtin_expect(!lost.comm_id, 1))
		return;
	if (rt_tr_devev_plugin_ok() && __atomic_load_n(&plugin_loaded, __ATOMIC_RELAXED))
		rt_tr_ev_rt_dev_drop(RT_DEV_SRC_PLUGIN, RT_DROP_UNBOUND, lost.comm_id, lost.seq, 0, 0);
	lost.comm_id = 0;
}

/* devevents.c: what the call being recorded took, and its communicator's
 * device (no second lookup of the communicator) */
int rt_tr_dev_last(uint64_t *comm_id, uint32_t *seq, int *peer, int *p2p)
{
	*comm_id = last.comm_id;
	*seq = last.seq;
	*peer = last.peer;
	*p2p = last.p2p;
	return last.dev;
}

static int kind_of(const char *func)
{
	for (int k = 0; func && k < RT_CK_COUNT; k++)
		if (!strcmp(rt_coll_names[k], func))
			return k;
	return -1;
}

static bool same_call(const struct pending *p, const void *send, const void *recv,
		      uint64_t count, int peer)
{
	if (p->count != count)
		return false;
	if (p->p2p)
		return p->peer == peer && (p->p2p == 1 ? p->send == send : p->recv == recv);
	return p->send == send && p->recv == recv;
}

/* The entry the plugin's event is: unbound, of its kind; the same call if
 * one is, else the oldest. */
static struct pending *find(int kind, const void *send, const void *recv, uint64_t count,
			    int peer)
{
	struct pending *oldest = NULL;

	for (uint32_t i = pend.first; i < pend.n; i++) {
		struct pending *p = &pend.v[i];

		if (p->kind != kind)
			continue;
		if (same_call(p, send, recv, count, peer))
			return p;
		if (!oldest)
			oldest = p;
	}
	return oldest;
}

/* p's device record has its call: p leaves the unbound. */
static void take(struct pending *p)
{
	p->kind = -1;
	while (pend.first < pend.n && pend.v[pend.first].kind < 0)
		pend.first++;
}

RT_EXPORT void rt_dev_bind_v2(const char *func, const void *send, const void *recv,
			      uint64_t count, int peer, uint64_t *comm_id, uint32_t *seq)
{
	int kind = kind_of(func);
	struct pending *p = kind < 0 ? NULL : find(kind, send, recv, count, peer);

	*comm_id = 0;
	*seq = 0;
	if (!p)
		return;
	*comm_id = p->comm_id;
	*seq = p->seq;
	take(p);
}

/* The plugin's pool was full: the record NCCL's event would have had is
 * tied to its call (the oldest unbound of its kind: the plugin has no
 * buffers to give) and said; a point-to-point call's only taken (rt_dev_drop
 * names a collective, and a P2P's seq counts its peer's calls). */
RT_EXPORT void rt_dev_dropped(int reason, const char *func, uint64_t nccl_comm, uint64_t nccl_seq)
{
	int kind = kind_of(func);
	struct pending *p = kind < 0 ? NULL : find(kind, NULL, NULL, UINT64_MAX, -1);

	if (!rt_tr_devev_plugin_ok())
		return;
	if (p)
		take(p);
	if (p ? !p->p2p : !rt_ck_is_p2p(kind))
		rt_tr_ev_rt_dev_drop(RT_DEV_SRC_PLUGIN, reason, p ? p->comm_id : 0, p ? p->seq : 0,
				     nccl_comm, nccl_seq);
}

RT_EXPORT void rt_dev_event(int phase, uint64_t comm_id, uint32_t seq, uint64_t nccl_comm,
			    uint64_t nccl_seq, uint64_t gpu_ns)
{
	if (!rt_tr_devev_plugin_ok()) /* RANKTRACE_DEVICE_SOURCE=events: ours only */
		return;
	rt_tr_ev_rt_dev_coll(phase, comm_id, seq, nccl_comm, nccl_seq, RT_DEV_SRC_PLUGIN, gpu_ns);
}

RT_EXPORT void rt_dev_p2p_event(int phase, uint64_t comm_id, int peer, uint32_t seq, int send,
				uint64_t nccl_comm, uint64_t gpu_ns)
{
	if (!rt_tr_devev_plugin_ok())
		return;
	rt_tr_ev_rt_dev_p2p(phase, comm_id, peer, seq, send, nccl_comm, RT_DEV_SRC_PLUGIN, gpu_ns);
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
