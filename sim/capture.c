/* SPDX-License-Identifier: MIT */
/* capture.c - stream capture in the simulated runtime, as far as a program
 * (and a tracer beside it) can see it: cudaStreamBeginCapture,
 * cudaStreamEndCapture, cudaStreamIsCapturing, cudaThreadExchangeStream-
 * CaptureMode, the graph it ends with (cudaGraphDestroy).
 *
 * CUDA's rules, as documented for cudaThreadExchangeStreamCaptureMode:
 * while a stream is captured its work is recorded, not run (here: counted as
 * the graph's nodes and released; a graph is never launched). A thread in
 * mode cudaStreamCaptureModeGlobal (the default) may not make a potentially
 * unsafe call (one that waits for the device, allocates, or queries
 * completion: cudaMalloc, cudaFree, the Synchronize and Query calls, a
 * synchronous copy) while it captures a stream itself (but in relaxed mode)
 * or while another thread captures in global mode; ThreadLocal only minds
 * its own capture; Relaxed minds none. A prohibited call fails with
 * cudaErrorStreamCaptureUnsupported and invalidates the captures that
 * prohibit it: their cudaStreamEndCapture returns
 * cudaErrorStreamCaptureInvalidated. An event last recorded in a capturing
 * stream cannot be queried or waited on (cudaErrorCapturedEvent). The legacy
 * stream cannot be captured. A stream that waits on a captured event joins
 * its capture. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "queue.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_CAPTURES 64

static pthread_mutex_t cap_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sim_stream *captures[MAX_CAPTURES]; /* capturing or invalidated */
static int ncaptures;
static int ncaptures_seen; /* ncaptures, read without the lock: 0 is the fast path */
static unsigned long long next_id = 1;
static __thread int thread_mode = cudaStreamCaptureModeGlobal;

struct sim_graph {
	unsigned magic;
	unsigned nodes;
};
#define GRAPH_MAGIC 0x47524150u

static pid_t tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

bool sq_capture_node(struct sim_stream *st, struct simgpu_work *w)
{
	bool captured;

	if (!__atomic_load_n(&st->cap_status, __ATOMIC_ACQUIRE))
		return false; /* the common case, no lock */
	pthread_mutex_lock(&cap_lock);
	captured = st->cap_status != cudaStreamCaptureStatusNone;
	if (captured)
		st->cap_nodes++;
	pthread_mutex_unlock(&cap_lock);
	if (captured && w && w->release)
		w->release(w);
	return captured;
}

cudaError_t sq_capture_unsafe(void)
{
	bool prohibited = false;
	pid_t me;

	if (thread_mode == cudaStreamCaptureModeRelaxed ||
	    !__atomic_load_n(&ncaptures_seen, __ATOMIC_ACQUIRE))
		return cudaSuccess;
	me = tid();
	pthread_mutex_lock(&cap_lock);
	for (int i = 0; i < ncaptures; i++) {
		struct sim_stream *s = captures[i];
		bool mine = s->cap_tid == me && s->cap_mode != cudaStreamCaptureModeRelaxed;
		bool global = s->cap_tid != me && s->cap_mode == cudaStreamCaptureModeGlobal &&
			      thread_mode == cudaStreamCaptureModeGlobal;

		if (!mine && !global)
			continue;
		/* an invalidated capture is still a capture until it ends */
		__atomic_store_n(&s->cap_status, cudaStreamCaptureStatusInvalidated, __ATOMIC_RELEASE);
		prohibited = true;
	}
	pthread_mutex_unlock(&cap_lock);
	return prohibited ? sq_fail(cudaErrorStreamCaptureUnsupported) : cudaSuccess;
}

EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
	int old = thread_mode;

	if (!mode || (*mode != cudaStreamCaptureModeGlobal && *mode != cudaStreamCaptureModeThreadLocal &&
		      *mode != cudaStreamCaptureModeRelaxed))
		return sq_fail(cudaErrorInvalidValue);
	thread_mode = *mode;
	*mode = (enum cudaStreamCaptureMode)old;
	return cudaSuccess;
}

EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
	struct sim_stream *st = sq_stream(stream);
	cudaError_t e = cudaSuccess;

	SQ_FORK_CHECK();
	if (!st)
		return sq_fail(cudaErrorInvalidResourceHandle);
	if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
	    mode != cudaStreamCaptureModeRelaxed)
		return sq_fail(cudaErrorInvalidValue);
	if (st->legacy)
		return sq_fail(cudaErrorStreamCaptureUnsupported);
	pthread_mutex_lock(&cap_lock);
	if (st->cap_status != cudaStreamCaptureStatusNone)
		e = cudaErrorIllegalState;
	else if (ncaptures == MAX_CAPTURES)
		e = cudaErrorMemoryAllocation;
	else {
		st->cap_mode = mode;
		st->cap_tid = tid();
		st->cap_id = next_id++;
		st->cap_nodes = 0;
		__atomic_store_n(&st->cap_status, cudaStreamCaptureStatusActive, __ATOMIC_RELEASE);
		captures[ncaptures++] = st;
		__atomic_store_n(&ncaptures_seen, ncaptures, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&cap_lock);
	return e == cudaSuccess ? cudaSuccess : sq_fail(e);
}

/* Drop every stream of capture id from the list (the origin and those that
 * joined it); the origin's status and nodes. Called with cap_lock held. */
static void end_capture_locked(unsigned long long id)
{
	for (int i = 0; i < ncaptures;) {
		if (captures[i]->cap_id == id) {
			__atomic_store_n(&captures[i]->cap_status, cudaStreamCaptureStatusNone,
					 __ATOMIC_RELEASE);
			captures[i]->cap_id = 0;
			captures[i] = captures[--ncaptures];
		} else {
			i++;
		}
	}
}

EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph)
{
	struct sim_stream *st = sq_stream(stream);
	struct sim_graph *g = NULL;
	cudaError_t e = cudaSuccess;

	SQ_FORK_CHECK();
	if (!st || !graph)
		return sq_fail(!st ? cudaErrorInvalidResourceHandle : cudaErrorInvalidValue);
	pthread_mutex_lock(&cap_lock);
	if (st->cap_status == cudaStreamCaptureStatusNone)
		e = cudaErrorIllegalState;
	else if (st->cap_mode != cudaStreamCaptureModeRelaxed && st->cap_tid != tid())
		e = cudaErrorStreamCaptureWrongThread;
	else if (st->cap_status == cudaStreamCaptureStatusInvalidated)
		e = cudaErrorStreamCaptureInvalidated;
	else if ((g = calloc(1, sizeof(*g))) != NULL)
		*g = (struct sim_graph){ GRAPH_MAGIC, st->cap_nodes };
	if (e != cudaErrorIllegalState && e != cudaErrorStreamCaptureWrongThread)
		end_capture_locked(st->cap_id); /* invalidated: ended all the same */
	__atomic_store_n(&ncaptures_seen, ncaptures, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&cap_lock);
	*graph = (cudaGraph_t)g;
	if (e == cudaSuccess && !g)
		e = cudaErrorMemoryAllocation;
	return e == cudaSuccess ? cudaSuccess : sq_fail(e);
}

EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *status)
{
	struct sim_stream *st = sq_stream(stream);

	SQ_FORK_CHECK();
	if (!status)
		return sq_fail(cudaErrorInvalidValue);
	if (!st)
		return sq_fail(cudaErrorInvalidResourceHandle);
	pthread_mutex_lock(&cap_lock);
	*status = (enum cudaStreamCaptureStatus)st->cap_status;
	pthread_mutex_unlock(&cap_lock);
	return cudaSuccess;
}

/* cudaStreamWaitEvent(st, an event recorded in capture id): st joins it. */
void sq_capture_join(struct sim_stream *st, unsigned long long id)
{
	pthread_mutex_lock(&cap_lock);
	for (int i = 0; i < ncaptures; i++) {
		struct sim_stream *o = captures[i];

		if (o->cap_id != id || st->cap_status != cudaStreamCaptureStatusNone ||
		    ncaptures == MAX_CAPTURES)
			continue;
		__atomic_store_n(&st->cap_status, o->cap_status, __ATOMIC_RELEASE);
		st->cap_mode = o->cap_mode;
		st->cap_tid = o->cap_tid;
		st->cap_id = id;
		captures[ncaptures++] = st;
		__atomic_store_n(&ncaptures_seen, ncaptures, __ATOMIC_RELEASE);
		break;
	}
	pthread_mutex_unlock(&cap_lock);
}

/* The capture st is in (0: none), for its events. */
unsigned long long sq_capture_id(struct sim_stream *st)
{
	unsigned long long id;

	pthread_mutex_lock(&cap_lock);
	id = st->cap_status != cudaStreamCaptureStatusNone ? st->cap_id : 0;
	pthread_mutex_unlock(&cap_lock);
	return id;
}

EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
	struct sim_graph *g = (struct sim_graph *)graph;

	SQ_FORK_CHECK();
	if (!g || g->magic != GRAPH_MAGIC)
		return sq_fail(cudaErrorInvalidValue);
	g->magic = 0;
	free(g);
	return cudaSuccess;
}
