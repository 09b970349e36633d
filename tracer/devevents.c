/* SPDX-License-Identifier: MIT */
/* devevents.c - device-side completion from CUDA events, where no profiler
 * plugin reports it (the user kept their own NCCL_PROFILER_PLUGIN, NCCL has
 * no profiler interface, or our plugin failed to initialise).
 *
 * The source is chosen per process (RANKTRACE_DEVICE_SOURCE, format/env.def):
 * auto (default): the plugin if it initialised (it called rt_dev_loaded
 * before the collective), else CUDA events; events: CUDA events only (the
 * plugin's reports are dropped); plugin: never CUDA events; off: neither.
 *
 * After a collective returns, its wrapper's after-hook records one of our own
 * events on the collective's stream. Events come from a pool per device,
 * created once on the first collective of that device (cudaEventDisableTiming:
 * we only poll them); no event is created on the hot path. A slot is claimed
 * with a compare-and-swap; a pool that is full drops the record (counted in
 * the warning, never blocking). A poller thread of ours queries recorded
 * slots (cudaEventQuery) and writes rt_dev_coll, source 2, phase completed.
 *
 * What we chose: only completion is known. The start on the device is not
 * recorded (no phase 1); the completion time is the poll time (the poller
 * naps POLL_NS while events are pending), an upper bound late by at most one
 * poll period plus scheduling.
 *
 * The program's behaviour is unchanged: nothing is recorded while the stream
 * is being captured (cudaStreamIsCapturing), nor while the program has an
 * error pending (cudaPeekAtLastError): our call could not then leave the
 * last-error state as it was. When our own call fails, cudaGetLastError
 * resets the state to the success it was before; one warning, then the
 * source turns itself off. Inside ncclGroupStart/End the collective is only
 * launched at ncclGroupEnd, so an event recorded after the call would
 * complete early: not handled yet (see the report). */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "env.h"
#include "tracer.h"

#define POOL 1024   /* events per device */
#define NDEV 16     /* devices with a pool */
#define POLL_NS 500000

enum { FREE, CLAIMED, RECORDED };

struct slot {
	cudaEvent_t ev;
	uint64_t comm_id;
	uint32_t seq;
	uint32_t state; /* FREE, CLAIMED, RECORDED (atomics) */
};

struct pool {
	struct slot slot[POOL];
	uint32_t head;  /* next slot to claim (atomic) */
	uint32_t ready; /* 0 not made, 1 making, 2 ready, 3 failed */
};

static struct pool pools[NDEV];
static int mode = -1; /* 0 off, 1 auto, 2 events, 3 plugin */
static int plugin_up, disabled, warned, source_said, dropped;
static pid_t poller_pid;
static uint32_t pending; /* recorded, not yet seen completed (atomic) */

static struct {
	cudaError_t (*create)(cudaEvent_t *, unsigned);
	cudaError_t (*record)(cudaEvent_t, cudaStream_t);
	cudaError_t (*query)(cudaEvent_t);
	cudaError_t (*capturing)(cudaStream_t, enum cudaStreamCaptureStatus *);
	cudaError_t (*peek)(void);
	cudaError_t (*get)(void);
	cudaError_t (*getdev)(int *);
	cudaError_t (*setdev)(int);
} cu;

static void resolve(void)
{
#define R(f, n) *(void **)&cu.f = rt_tr_resolve(n, RT_LIB_CUDA)
	R(create, "cudaEventCreateWithFlags");
	R(record, "cudaEventRecord");
	R(query, "cudaEventQuery");
	R(capturing, "cudaStreamIsCapturing"); /* may be absent: then no capture */
	R(peek, "cudaPeekAtLastError");
	R(get, "cudaGetLastError");
	R(getdev, "cudaGetDevice");
	R(setdev, "cudaSetDevice");
#undef R
}

/* Cold: read the mode once. */
static int mode_now(void)
{
	int m = __atomic_load_n(&mode, __ATOMIC_ACQUIRE);
	const char *s;

	if (m >= 0)
		return m;
	s = getenv(RT_ENV_NAME(DEVICE_SOURCE));
	m = !s || !*s || !strcmp(s, "auto") ? 1 : !strcmp(s, "events") ? 2 : !strcmp(s, "plugin") ? 3 : 0;
	if (m == 1 || m == 2)
		resolve();
	if (!cu.create || !cu.record || !cu.query || !cu.peek || !cu.get)
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

static void fail_once(const char *what, int err)
{
	__atomic_store_n(&disabled, 1, __ATOMIC_RELEASE);
	rt_tr_warn_once(&warned, "device completion from CUDA events is off: %s failed (%d)", what, err);
}

/* Make a device's pool (the first collective on it; the caller's current
 * device is kept). */
__attribute__((cold, noinline)) static struct pool *make_pool(int dev)
{
	struct pool *p = &pools[dev];
	uint32_t expect = 0;
	int cur = -1, n;

	if (!__atomic_compare_exchange_n(&p->ready, &expect, 1, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return expect == 2 ? p : NULL; /* another thread makes it, or it failed */
	if (cu.getdev && cu.getdev(&cur) == cudaSuccess && cur != dev && cu.setdev)
		cu.setdev(dev);
	for (n = 0; n < POOL; n++)
		if (cu.create(&p->slot[n].ev, cudaEventDisableTiming) != cudaSuccess)
			break;
	if (cur >= 0 && cur != dev && cu.setdev)
		cu.setdev(cur);
	cu.get(); /* success before (checked by the caller): success after */
	if (n < POOL) {
		__atomic_store_n(&p->ready, 3, __ATOMIC_RELEASE);
		fail_once("cudaEventCreateWithFlags", 0);
		return NULL;
	}
	__atomic_store_n(&p->ready, 2, __ATOMIC_RELEASE);
	return p;
}

static void *poller(void *arg);

__attribute__((cold, noinline)) static void start_poller(void)
{
	pthread_attr_t attr;
	pthread_t t;
	sigset_t all, old;

	if (__atomic_exchange_n(&poller_pid, rt_tr_pid, __ATOMIC_ACQ_REL) == rt_tr_pid)
		return;
	if (!source_said) {
		source_said = 1;
		rt_tr_ev_rt_dev_source(RT_DEV_SRC_EVENT, 0, "cuda events polled by the tracer");
	}
	if (pthread_attr_init(&attr) != 0)
		return;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all); /* the program's signals are never delivered to our thread */
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t, &attr, poller, NULL) != 0)
		fail_once("pthread_create", 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

/* The collective's after-hook (format/nccl_api.def): it returned success
 * and has been given (comm_id, seq) on this thread (rt_tr_dev_last). */
void rt_tr_devev_after(const void *comm, const void *stream)
{
	int m = __atomic_load_n(&mode, __ATOMIC_RELAXED), dev;
	enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
	struct pool *p;
	struct slot *s;
	uint32_t i, expect = FREE;

	if (m < 0)
		m = mode_now();
	if ((m != 1 && m != 2) || (m == 1 && __atomic_load_n(&plugin_up, __ATOMIC_RELAXED)) ||
	    __atomic_load_n(&disabled, __ATOMIC_RELAXED))
		return;
	dev = rt_tr_comm_device(comm);
	if (dev < 0 || dev >= NDEV || cu.peek() != cudaSuccess)
		return; /* an error of the program's is pending: leave it alone */
	if (cu.capturing && (cu.capturing((cudaStream_t)stream, &cap) != cudaSuccess ||
			     cap != cudaStreamCaptureStatusNone)) {
		cu.get(); /* capturing is legal; a failed query must not stay behind */
		return;
	}
	p = &pools[dev];
	if (rt_unlikely(__atomic_load_n(&p->ready, __ATOMIC_ACQUIRE) != 2) && !(p = make_pool(dev)))
		return;
	if (rt_unlikely(__atomic_load_n(&poller_pid, __ATOMIC_RELAXED) != rt_tr_pid))
		start_poller();
	i = __atomic_fetch_add(&p->head, 1, __ATOMIC_RELAXED) % POOL;
	s = &p->slot[i];
	if (!__atomic_compare_exchange_n(&s->state, &expect, CLAIMED, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED)) {
		__atomic_fetch_add(&dropped, 1, __ATOMIC_RELAXED);
		return; /* the pool is full of pending events: drop, never wait */
	}
	rt_tr_dev_last(&s->comm_id, &s->seq);
	if (cu.record(s->ev, (cudaStream_t)stream) != cudaSuccess) {
		int err = (int)cu.get(); /* ours: back to the success it was */

		__atomic_store_n(&s->state, FREE, __ATOMIC_RELEASE);
		fail_once("cudaEventRecord", err);
		return;
	}
	__atomic_fetch_add(&pending, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&s->state, RECORDED, __ATOMIC_RELEASE);
}

/* One pass over every pool: record what completed. Returns how many are
 * still pending. The poller's thread; also the exiting thread (drain). */
static unsigned poll_once(void)
{
	unsigned left = 0;

	for (int d = 0; d < NDEV; d++) {
		struct pool *p = &pools[d];

		if (__atomic_load_n(&p->ready, __ATOMIC_ACQUIRE) != 2)
			continue;
		for (int i = 0; i < POOL; i++) {
			struct slot *s = &p->slot[i];
			uint32_t expect = RECORDED;
			cudaError_t e;

			if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != RECORDED)
				continue;
			e = cu.query(s->ev);
			if (e == cudaErrorNotReady) {
				left++;
				continue;
			}
			if (!__atomic_compare_exchange_n(&s->state, &expect, CLAIMED, false,
							 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
				continue; /* the drain took it */
			if (e == cudaSuccess)
				rt_tr_ev_rt_dev_coll(RT_DEV_COMPLETED, s->comm_id, s->seq, 0, 0,
						     RT_DEV_SRC_EVENT, 0);
			__atomic_fetch_sub(&pending, 1, __ATOMIC_RELAXED);
			__atomic_store_n(&s->state, FREE, __ATOMIC_RELEASE);
		}
	}
	return left;
}

static void *poller(void *arg)
{
	const struct timespec nap = { 0, POLL_NS }, idle = { 0, 20 * 1000 * 1000 };

	(void)arg;
	while (!rt_tr_stopped() && !rt_tr_off && __atomic_load_n(&poller_pid, __ATOMIC_RELAXED) == rt_tr_pid) {
		if (__atomic_load_n(&pending, __ATOMIC_RELAXED))
			poll_once();
		nanosleep(__atomic_load_n(&pending, __ATOMIC_RELAXED) ? &nap : &idle, NULL);
	}
	return NULL;
}

/* At exit: one last pass for what completed since the poller's last look
 * (nothing is waited for: a collective still running stays incomplete). */
void rt_tr_devev_drain(void)
{
	if (__atomic_load_n(&pending, __ATOMIC_RELAXED) && cu.query)
		poll_once();
	if (__atomic_load_n(&dropped, __ATOMIC_RELAXED))
		rt_tr_warn_once(&warned, "device completion: %d CUDA event records dropped (pool full)",
				dropped);
}
