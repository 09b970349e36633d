/* SPDX-License-Identifier: MIT */
/* stream.c - CUDA streams, events, host functions and stream-ordered copies
 * of the simulated runtime, on the execution engine of queue.c.
 *
 * As on a GPU: cudaMemcpyAsync, cudaMemsetAsync, cudaEventRecord,
 * cudaStreamWaitEvent and cudaLaunchHostFunc enqueue and return;
 * cudaStreamQuery and cudaEventQuery answer cudaErrorNotReady until the work
 * is done; the Synchronize calls block until it is. A copy from pageable host
 * memory is staged at the call (CUDA returns once the source is consumed), a
 * copy to pageable host memory returns once done (CUDA's rule for pageable
 * destinations). An event belongs to the device current at its creation and
 * is recorded on that device's streams only; in a capturing stream its
 * record is a graph node (capture.c). */
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "queue.h"

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t elock = PTHREAD_MUTEX_INITIALIZER;
/* Every live event, hashed by handle (a program, or the tracer's CUDA-event
 * source, may hold thousands: a list walk per record was the cost). */
#define EV_BUCKETS 4096
static struct sim_event *events[EV_BUCKETS];

static struct sim_event **bucket(const void *e)
{
	uintptr_t h = (uintptr_t)e;

	h ^= h >> 17;
	h *= 0x9E3779B97F4A7C15ull;
	return &events[(h >> 40) % EV_BUCKETS];
}

/* ---- work items ---- */

struct copy_work {
	struct simgpu_work w;
	void *dst;
	const void *src;
	size_t n;
	int value;
	bool set;
	void *staging;
};

static int copy_step(struct simgpu_work *w)
{
	struct copy_work *c = (struct copy_work *)w;

	if (c->set)
		memset(c->dst, c->value, c->n);
	else
		memmove(c->dst, c->staging ? c->staging : c->src, c->n);
	return SIMGPU_DONE;
}

static void copy_release(struct simgpu_work *w)
{
	struct copy_work *c = (struct copy_work *)w;

	free(c->staging);
	free(c);
}

static int nop_step(struct simgpu_work *w)
{
	(void)w;
	return SIMGPU_DONE;
}

static void nop_release(struct simgpu_work *w)
{
	free(w);
}

/* Enqueue a copy (set: a memset of value) on stream s; wait: return once it
 * is done. Arguments were checked by the caller. */
cudaError_t sq_copy(cudaStream_t s, void *dst, const void *src, size_t n, int value, bool set,
		    bool wait)
{
	struct sim_stream *st = sq_stream(s);
	struct copy_work *c;
	struct mark *m = NULL;
	cudaError_t e;

	if (!st)
		return sq_fail(cudaErrorInvalidResourceHandle);
	c = calloc(1, sizeof(*c));
	if (!c)
		return sq_fail(cudaErrorMemoryAllocation);
	*c = (struct copy_work){ .w = { copy_step, copy_release, NULL, 0 }, .dst = dst,
				 .src = src, .n = n, .value = value, .set = set };
	if (!wait && !set && simgpu_range_device(dst, n) < 0 && !sq_host_pinned(dst))
		wait = true;
	if (!wait && !set && sq_async() && simgpu_range_device(src, n) < 0 && !sq_host_pinned(src)) {
		c->staging = malloc(n);
		if (!c->staging) {
			free(c);
			return sq_fail(cudaErrorMemoryAllocation);
		}
		memcpy(c->staging, src, n);
	}
	e = sq_enqueue(st, &c->w, NULL, wait ? &m : NULL);
	if (e != cudaSuccess) {
		copy_release(&c->w);
		return sq_fail(e);
	}
	if (wait)
		sq_wait(m);
	return cudaSuccess;
}

struct free_work {
	struct simgpu_work w;
	void *p;
};

static int free_step(struct simgpu_work *w)
{
	sq_free_now(((struct free_work *)w)->p);
	return SIMGPU_DONE;
}

cudaError_t sq_free_async(cudaStream_t s, void *p)
{
	struct sim_stream *st = sq_stream(s);
	struct free_work *f;
	cudaError_t e;

	if (!st)
		return sq_fail(cudaErrorInvalidResourceHandle);
	f = calloc(1, sizeof(*f));
	if (!f)
		return sq_fail(cudaErrorMemoryAllocation);
	*f = (struct free_work){ .w = { free_step, nop_release, NULL, 0 }, .p = p };
	e = sq_enqueue(st, &f->w, NULL, NULL);
	if (e != cudaSuccess) {
		free(f);
		return sq_fail(e);
	}
	return cudaSuccess;
}

/* A host function runs on a thread of its own, so that it holds up its
 * stream only (a device worker runs every stream of its device). The item and
 * the thread each hold a reference. */
struct host_work {
	struct simgpu_work w;
	cudaHostFn_t fn;
	void *arg;
	_Atomic uint32_t done;
	_Atomic int refs;
	bool launched;
};

static void host_put(struct host_work *h)
{
	if (atomic_fetch_sub(&h->refs, 1) == 1)
		free(h);
}

static void *host_thread(void *arg)
{
	struct host_work *h = arg;

	h->fn(h->arg);
	atomic_store(&h->done, 1);
	syscall(SYS_futex, &h->done, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
	host_put(h);
	return NULL;
}

static int host_step(struct simgpu_work *w)
{
	struct host_work *h = (struct host_work *)w;

	if (!h->launched) {
		pthread_t th;
		pthread_attr_t attr;

		h->launched = true;
		atomic_fetch_add(&h->refs, 1);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&th, &attr, host_thread, h) != 0) {
			atomic_fetch_sub(&h->refs, 1);
			h->fn(h->arg); /* no thread: run it here */
			atomic_store(&h->done, 1);
		}
		pthread_attr_destroy(&attr);
	}
	if (atomic_load(&h->done))
		return SIMGPU_DONE;
	h->w.wake = &h->done;
	h->w.seen = 0;
	return SIMGPU_WAIT;
}

static void host_release(struct simgpu_work *w)
{
	host_put((struct host_work *)w);
}

EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
	struct sim_stream *st = sq_stream(stream);
	struct host_work *h;
	cudaError_t e;

	SQ_FORK_CHECK();
	if (!st)
		return sq_fail(cudaErrorInvalidResourceHandle);
	if (!fn)
		return sq_fail(cudaErrorInvalidValue);
	h = calloc(1, sizeof(*h));
	if (!h)
		return sq_fail(cudaErrorMemoryAllocation);
	*h = (struct host_work){ .w = { host_step, host_release, NULL, 0 }, .fn = fn, .arg = userData,
				 .refs = 1 };
	e = sq_enqueue(st, &h->w, NULL, NULL);
	if (e != cudaSuccess) {
		free(h);
		return sq_fail(e);
	}
	return cudaSuccess;
}

/* A no-op item on st after wait_on: its mark (a reference) in *out. */
static cudaError_t enqueue_nop(struct sim_stream *st, struct mark *wait_on, struct mark **out)
{
	struct simgpu_work *w = calloc(1, sizeof(*w));
	cudaError_t e;

	if (!w)
		return cudaErrorMemoryAllocation;
	*w = (struct simgpu_work){ nop_step, nop_release, NULL, 0 };
	e = sq_enqueue(st, w, wait_on, out);
	if (e != cudaSuccess)
		free(w);
	return e;
}

__attribute__((visibility("default"))) int simgpu_enqueue_joined(void *const *streams, int n,
								struct simgpu_work *w)
{
	struct sim_stream *first = sq_stream((cudaStream_t)streams[0]);
	struct mark *m = NULL;
	cudaError_t e;

	if (!first)
		return cudaErrorInvalidResourceHandle;
	for (int i = 1; i < n; i++) { /* the work waits for what each stream holds */
		struct sim_stream *o = sq_stream((cudaStream_t)streams[i]);

		if (o && o != first && (m = sq_stream_last(o)) != NULL) {
			enqueue_nop(first, m, NULL);
			sq_mark_put(m);
		}
	}
	e = sq_enqueue(first, w, NULL, &m);
	if (e != cudaSuccess)
		return e;
	for (int i = 1; i < n; i++) { /* and each stream's later work for it */
		struct sim_stream *o = sq_stream((cudaStream_t)streams[i]);

		if (o && o != first)
			enqueue_nop(o, m, NULL);
	}
	sq_mark_put(m);
	return cudaSuccess;
}

/* ---- streams ---- */

EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags,
						int priority)
{
	struct sim_stream *s;

	SQ_FORK_CHECK();
	if (!pStream)
		return sq_fail(cudaErrorInvalidValue);
	s = sq_stream_create(simgpu_current_device(), flags,
			     priority < -5 ? -5 : priority > 0 ? 0 : priority);
	if (!s)
		return sq_fail(cudaErrorMemoryAllocation);
	*pStream = (cudaStream_t)s;
	return cudaSuccess;
}

EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
	SQ_FORK_CHECK();
	return cudaStreamCreateWithPriority(pStream, flags, 0);
}

EXPORT cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
	SQ_FORK_CHECK();
	return cudaStreamCreateWithPriority(pStream, cudaStreamDefault, 0);
}

EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
	SQ_FORK_CHECK();
	if (stream == NULL || stream == cudaStreamLegacy || stream == cudaStreamPerThread)
		return sq_fail(cudaErrorInvalidResourceHandle);
	return sq_stream_destroy(stream) ? cudaSuccess : sq_fail(cudaErrorInvalidResourceHandle);
}

EXPORT cudaError_t cudaStreamGetPriority(cudaStream_t stream, int *priority)
{
	struct sim_stream *st = sq_stream(stream);

	SQ_FORK_CHECK();
	if (!priority || !st)
		return sq_fail(cudaErrorInvalidResourceHandle);
	*priority = st->legacy ? 0 : st->priority;
	return cudaSuccess;
}

EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
	struct sim_stream *st = sq_stream(stream);

	SQ_FORK_CHECK();
	if (!st)
		return sq_fail(cudaErrorInvalidResourceHandle);
	if (sq_capture_unsafe() != cudaSuccess)
		return cudaErrorStreamCaptureUnsupported;
	sq_stream_sync(st);
	return cudaSuccess;
}

EXPORT cudaError_t cudaStreamQuery(cudaStream_t stream)
{
	struct sim_stream *st = sq_stream(stream);

	SQ_FORK_CHECK();
	if (!st)
		return sq_fail(cudaErrorInvalidResourceHandle);
	if (sq_capture_unsafe() != cudaSuccess)
		return cudaErrorStreamCaptureUnsupported;
	/* cudaErrorNotReady is no error: the last error is left alone, as CUDA does */
	return sq_stream_idle(st) ? cudaSuccess : cudaErrorNotReady;
}

/* ---- events ---- */

static struct sim_event *event_of(cudaEvent_t e)
{
	struct sim_event *found = NULL;

	pthread_mutex_lock(&elock);
	for (struct sim_event *p = *bucket(e); p && !found; p = p->next)
		if ((void *)p == (void *)e)
			found = p;
	pthread_mutex_unlock(&elock);
	return found;
}

EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
	struct sim_stream *st = sq_stream(stream);
	struct sim_event *ev = event_of(event);
	struct mark *m;
	cudaError_t e;

	SQ_FORK_CHECK();
	(void)flags;
	if (!st || !ev)
		return sq_fail(cudaErrorInvalidResourceHandle);
	if (ev->cap_id) { /* waiting on captured work: the stream joins the capture */
		sq_capture_join(st, ev->cap_id);
		sq_capture_node(st, NULL);
		return cudaSuccess;
	}
	m = sq_event_last(ev);
	if (!m || sq_mark_done(m)) {
		sq_mark_put(m);
		return cudaSuccess;
	}
	e = enqueue_nop(st, m, NULL);
	sq_mark_put(m);
	return e == cudaSuccess ? cudaSuccess : sq_fail(e);
}

EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
	struct sim_event *e;

	SQ_FORK_CHECK();
	if (!event)
		return sq_fail(cudaErrorInvalidValue);
	e = calloc(1, sizeof(*e));
	if (!e)
		return sq_fail(cudaErrorMemoryAllocation);
	e->magic = EVENT_MAGIC;
	e->flags = flags;
	e->device = simgpu_current_device(); /* an event belongs to a device */
	pthread_mutex_lock(&elock);
	e->next = *bucket(e);
	*bucket(e) = e;
	pthread_mutex_unlock(&elock);
	*event = (cudaEvent_t)e;
	return cudaSuccess;
}

EXPORT cudaError_t cudaEventCreate(cudaEvent_t *event)
{
	SQ_FORK_CHECK();
	return cudaEventCreateWithFlags(event, cudaEventDefault);
}

EXPORT cudaError_t cudaEventDestroy(cudaEvent_t event)
{
	struct sim_event *found = NULL;

	SQ_FORK_CHECK();
	pthread_mutex_lock(&elock);
	for (struct sim_event **link = bucket(event); *link; link = &(*link)->next) {
		if ((void *)*link == (void *)event) {
			found = *link;
			*link = found->next;
			break;
		}
	}
	pthread_mutex_unlock(&elock);
	if (!found)
		return sq_fail(cudaErrorInvalidResourceHandle);
	sq_event_set(found, NULL);
	found->magic = 0;
	free(found);
	return cudaSuccess;
}

EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
	struct sim_stream *st = sq_stream(stream);
	struct sim_event *ev = event_of(event);
	struct mark *m = NULL;
	cudaError_t e;

	SQ_FORK_CHECK();
	/* CUDA: the event and the stream must be on the same device */
	if (!ev || !st || ev->device != st->device)
		return sq_fail(cudaErrorInvalidResourceHandle);
	if ((ev->cap_id = sq_capture_id(st)) != 0) {
		sq_capture_node(st, NULL); /* a node of the graph, nothing to wait for */
		return cudaSuccess;
	}
	e = enqueue_nop(st, NULL, &m);
	if (e != cudaSuccess)
		return sq_fail(e);
	sq_event_set(ev, m);
	return cudaSuccess;
}

EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
	struct sim_event *ev = event_of(event);

	SQ_FORK_CHECK();
	if (!ev)
		return sq_fail(cudaErrorInvalidResourceHandle);
	if (ev->cap_id)
		return sq_fail(cudaErrorCapturedEvent);
	if (sq_capture_unsafe() != cudaSuccess)
		return cudaErrorStreamCaptureUnsupported;
	sq_wait(sq_event_last(ev));
	return cudaSuccess;
}

EXPORT cudaError_t cudaEventQuery(cudaEvent_t event)
{
	struct sim_event *ev = event_of(event);
	struct mark *m;
	bool done;

	SQ_FORK_CHECK();
	if (!ev)
		return sq_fail(cudaErrorInvalidResourceHandle);
	if (ev->cap_id)
		return sq_fail(cudaErrorCapturedEvent);
	if (sq_capture_unsafe() != cudaSuccess) /* a query during a global capture */
		return cudaErrorStreamCaptureUnsupported;
	m = sq_event_last(ev);
	done = sq_mark_done(m);
	sq_mark_put(m);
	return done ? cudaSuccess : cudaErrorNotReady;
}

EXPORT cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
	struct sim_event *a = event_of(start), *b = event_of(end);
	struct mark *ma, *mb;
	cudaError_t r = cudaSuccess;

	SQ_FORK_CHECK();
	if (!ms)
		return sq_fail(cudaErrorInvalidValue);
	if (!a || !b)
		return sq_fail(cudaErrorInvalidResourceHandle);
	/* CUDA: an event created with cudaEventDisableTiming has no time */
	if ((a->flags | b->flags) & cudaEventDisableTiming)
		return sq_fail(cudaErrorInvalidResourceHandle);
	ma = sq_event_last(a);
	mb = sq_event_last(b);
	if (!ma || !mb)
		r = cudaErrorInvalidResourceHandle;
	else if (!sq_mark_done(ma) || !sq_mark_done(mb))
		r = cudaErrorNotReady;
	else
		*ms = (float)((double)((int64_t)(mb->t_ns - ma->t_ns)) / 1e6);
	sq_mark_put(ma);
	sq_mark_put(mb);
	return r == cudaSuccess || r == cudaErrorNotReady ? r : sq_fail(r);
}

