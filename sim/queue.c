/* SPDX-License-Identifier: MIT */
/* queue.c - the simulated devices' execution engine (part of libcudart).
 *
 * Asynchronous, as a GPU is. Every stream (each device's legacy default
 * stream and the created ones) is a FIFO of work items; each device has one
 * worker thread, started on its first item, that runs the head item of each
 * of the device's sq_streams whose dependencies are met, round robin, until it
 * says SIMGPU_DONE. Steps never block (simgpu.h), so sq_streams of one device
 * progress concurrently, as on a GPU, and a collective waiting for its peers
 * holds up only its own stream.
 *
 * Ordering: an item runs after the item before it on its stream; an item on
 * the legacy stream also after everything enqueued before it on the device's
 * blocking sq_streams (created without cudaStreamNonBlocking), and an item on a
 * blocking stream after everything enqueued before it on the legacy stream
 * (CUDA's legacy default stream semantics); cudaStreamWaitEvent adds the
 * event's last record. Each item has a mark (queue.h) that the worker sets
 * done when the item completes: events, stream and device synchronisation
 * and queries all read marks.
 *
 * Where a collective starts and completes on the device (for the NCCL
 * profiler plugin, sim/nccl.c): the worker calls the collective's step the
 * first time when the collective reaches the head of its stream with its
 * dependencies met: that is its start on the device; the step returning
 * SIMGPU_DONE is its completion (nccl.c's dev_step marks both).
 *
 * SIMGPU_SYNC=1: no workers; sq_enqueue runs the item to completion on the
 * calling thread, as the simulator did before (issue 20).
 *
 * One mutex guards every queue and mark; one condition variable is broadcast
 * on every change (workers and host waiters sleep on it). */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "queue_int.h"

#define INLINE_DEPS 4

/* An item waits for every mark in deps: the legacy stream's item for each
 * busy blocking stream of its device, however many (CUDA has no limit). */
struct item {
	struct simgpu_work *w;
	struct mark *mark;
	struct mark **deps; /* inline_deps, or grown on the heap */
	int ndeps, cap;
	struct mark *inline_deps[INLINE_DEPS];
	struct item *next;
};

pthread_mutex_t sq_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t sq_cv = PTHREAD_COND_INITIALIZER;
struct sim_stream sq_legacy[SQ_MAX_DEV];
struct sim_stream *sq_streams; /* created sq_streams, all devices */
static bool worker_started[SQ_MAX_DEV];
static pthread_once_t mode_once = PTHREAD_ONCE_INIT;
static bool async_mode = true;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void load_mode(void)
{
	const char *s = getenv("SIMGPU_SYNC");

	async_mode = !(s && *s && strcmp(s, "0") != 0);
}

bool sq_async(void)
{
	pthread_once(&mode_once, load_mode);
	return async_mode;
}

__attribute__((visibility("default"))) bool simgpu_async(void)
{
	return sq_async();
}

uint64_t sq_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A forked child has no workers: its copies of the queues are dropped (CUDA
 * itself cannot be used across fork). */
static void after_fork_child(void)
{
	pthread_mutex_init(&sq_lock, NULL);
	pthread_cond_init(&sq_cv, NULL);
	memset(worker_started, 0, sizeof(worker_started));
	for (int d = 0; d < SQ_MAX_DEV; d++) {
		sq_legacy[d].head = sq_legacy[d].tail = NULL;
		sq_legacy[d].last = NULL;
	}
	for (struct sim_stream *s = sq_streams; s; s = s->next) {
		s->head = s->tail = NULL;
		s->last = NULL;
	}
}

static void install_atfork(void)
{
	pthread_atfork(NULL, NULL, after_fork_child);
}

struct mark *sq_stream_last(struct sim_stream *st)
{
	struct mark *m;

	pthread_mutex_lock(&sq_lock);
	m = st->last && !st->last->done ? sq_mark_get(st->last) : NULL;
	pthread_mutex_unlock(&sq_lock);
	return m;
}

struct mark *sq_event_last(struct sim_event *e)
{
	struct mark *m;

	pthread_mutex_lock(&sq_lock);
	m = sq_mark_get(e->mark);
	pthread_mutex_unlock(&sq_lock);
	return m;
}

/* The event now stands for m (the caller's reference moves to the event). */
void sq_event_set(struct sim_event *e, struct mark *m)
{
	pthread_mutex_lock(&sq_lock);
	sq_mark_put_locked(e->mark);
	e->mark = m;
	pthread_mutex_unlock(&sq_lock);
}

/* ---- sq_streams ---- */

static int current_dev(void)
{
	int d = simgpu_current_device();

	return d >= 0 && d < SQ_MAX_DEV ? d : 0;
}

static struct sim_stream *legacy_of(int d)
{
	pthread_mutex_lock(&sq_lock);
	sq_legacy[d].magic = STREAM_MAGIC;
	sq_legacy[d].device = d;
	sq_legacy[d].legacy = true;
	pthread_mutex_unlock(&sq_lock);
	return &sq_legacy[d];
}

/* A device's legacy stream by a handle that names it whatever the current
 * device (NCCL's NULL stream is its communicator's device's). */
__attribute__((visibility("default"))) void *simgpu_legacy_stream(int device)
{
	return device >= 0 && device < SQ_MAX_DEV ? legacy_of(device) : NULL;
}

struct sim_stream *sq_stream(cudaStream_t s)
{
	struct sim_stream *found = NULL;

	if ((void *)s >= (void *)sq_legacy && (void *)s < (void *)(sq_legacy + SQ_MAX_DEV))
		return (struct sim_stream *)s; /* simgpu_legacy_stream's */
	if (s == NULL || s == cudaStreamLegacy || s == cudaStreamPerThread)
		return legacy_of(current_dev());
	pthread_mutex_lock(&sq_lock);
	for (struct sim_stream *p = sq_streams; p; p = p->next)
		if ((void *)p == (void *)s && !p->dead)
			found = p;
	pthread_mutex_unlock(&sq_lock);
	return found;
}

struct sim_stream *sq_stream_create(int device, unsigned flags, int priority)
{
	struct sim_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->magic = STREAM_MAGIC;
	s->device = device;
	s->flags = flags;
	s->priority = priority;
	pthread_mutex_lock(&sq_lock);
	s->next = sq_streams;
	sq_streams = s;
	pthread_mutex_unlock(&sq_lock);
	return s;
}

static void unlink_stream_locked(struct sim_stream *s)
{
	for (struct sim_stream **link = &sq_streams; *link; link = &(*link)->next) {
		if (*link == s) {
			*link = s->next;
			break;
		}
	}
	sq_mark_put_locked(s->last);
	s->magic = 0;
	free(s);
}

/* CUDA: destroying a stream with pending work returns at once; the work
 * still runs and the resources go once it is done. */
bool sq_stream_destroy(cudaStream_t h)
{
	struct sim_stream *s = NULL;

	pthread_mutex_lock(&sq_lock);
	for (struct sim_stream *p = sq_streams; p; p = p->next)
		if ((void *)p == (void *)h && !p->dead)
			s = p;
	if (s) {
		s->dead = true;
		if (!s->head)
			unlink_stream_locked(s);
	}
	pthread_mutex_unlock(&sq_lock);
	return s != NULL;
}

/* ---- the device worker ---- */

static bool deps_met(struct item *it)
{
	while (it->ndeps > 0 && it->deps[it->ndeps - 1]->done)
		sq_mark_put_locked(it->deps[--it->ndeps]);
	return it->ndeps == 0;
}

/* Pop st's finished head; free a destroyed stream once drained. */
static void complete_head(struct sim_stream *st)
{
	struct item *it = st->head;

	st->head = it->next;
	if (!st->head)
		st->tail = NULL;
	it->mark->done = true;
	it->mark->t_ns = sq_now_ns();
	sq_mark_put_locked(it->mark);
	if (it->deps != it->inline_deps)
		free(it->deps);
	free(it);
	pthread_cond_broadcast(&sq_cv);
}

/* One pass over the device's sq_streams. Returns whether anything progressed;
 * *pending: some stream still has work; *wake and *seen: a futex to sleep on. */
static bool worker_pass(int d, bool *pending, _Atomic uint32_t **wake, uint32_t *seen)
{
	bool progress = false;
	struct sim_stream *st = &sq_legacy[d], *next;

	*pending = false;
	for (; st; st = next) {
		struct item *it = st->head;

		next = st == &sq_legacy[d] ? sq_streams : st->next;
		if (st->device != d || !it)
			continue;
		*pending = true;
		if (!deps_met(it))
			continue;
		pthread_mutex_unlock(&sq_lock);
		int r = it->w->step(it->w);
		if (r == SIMGPU_DONE)
			it->w->release(it->w);
		pthread_mutex_lock(&sq_lock);
		next = st == &sq_legacy[d] ? sq_streams : st->next;
		if (r == SIMGPU_WAIT) {
			if (it->w->wake && !*wake) {
				*wake = it->w->wake;
				*seen = it->w->seen;
			}
			continue;
		}
		progress = true;
		if (r == SIMGPU_DONE) {
			complete_head(st);
			if (st->dead && !st->head)
				unlink_stream_locked(st);
		}
	}
	return progress;
}

static void *worker(void *arg)
{
	int d = (int)(intptr_t)arg;

	simgpu_set_current_device(d);
	pthread_mutex_lock(&sq_lock);
	for (;;) {
		_Atomic uint32_t *wake = NULL;
		uint32_t seen = 0;
		bool pending;

		if (worker_pass(d, &pending, &wake, &seen))
			continue;
		if (!pending) {
			pthread_cond_wait(&sq_cv, &sq_lock);
		} else if (wake) {
			struct timespec ts = { 0, 2 * 1000 * 1000 };

			pthread_mutex_unlock(&sq_lock);
			syscall(SYS_futex, wake, FUTEX_WAIT, seen, &ts, NULL, 0);
			pthread_mutex_lock(&sq_lock);
		} else {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 2 * 1000 * 1000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&sq_cv, &sq_lock, &ts);
		}
	}
	return NULL;
}

static bool start_worker_locked(int d)
{
	pthread_t th;
	pthread_attr_t attr;
	sigset_t all, old;
	int rc;

	if (worker_started[d])
		return true;
	pthread_once(&fork_once, install_atfork);
	/* the worker takes no signal: the program's handlers run on its threads */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&th, &attr, worker, (void *)(intptr_t)d);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	worker_started[d] = rc == 0;
	return rc == 0;
}

/* ---- enqueue ---- */

static void run_inline(struct simgpu_work *w)
{
	int r;

	while ((r = w->step(w)) != SIMGPU_DONE) {
		if (r == SIMGPU_WAIT && w->wake) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };

			syscall(SYS_futex, w->wake, FUTEX_WAIT, w->seen, &ts, NULL, 0);
		} else if (r == SIMGPU_WAIT) {
			struct timespec ts = { 0, 1000 * 1000 };

			nanosleep(&ts, NULL);
		}
	}
	w->release(w);
}

/* it waits for m too (under sq_lock); false when out of memory. */
static bool add_dep(struct item *it, struct mark *m)
{
	if (!m || m->done)
		return true;
	if (it->ndeps == it->cap) {
		int cap = it->cap * 2;
		struct mark **d = it->deps == it->inline_deps ? malloc(sizeof(*d) * (size_t)cap)
							       : realloc(it->deps, sizeof(*d) * (size_t)cap);

		if (!d)
			return false;
		if (it->deps == it->inline_deps)
			memcpy(d, it->inline_deps, sizeof(it->inline_deps));
		it->deps = d;
		it->cap = cap;
	}
	it->deps[it->ndeps++] = sq_mark_get(m);
	return true;
}

/* The legacy ordering of an item on st (under sq_lock): on the legacy stream,
 * after every blocking stream of the device; on a blocking stream, after
 * the legacy stream. */
static bool legacy_deps(struct item *it, struct sim_stream *st)
{
	if (st->flags & cudaStreamNonBlocking)
		return true;
	if (!st->legacy)
		return add_dep(it, sq_legacy[st->device].last);
	for (struct sim_stream *s = sq_streams; s; s = s->next)
		if (s->device == st->device && !(s->flags & cudaStreamNonBlocking) &&
		    !add_dep(it, s->last))
			return false;
	return true;
}

static void item_free_locked(struct item *it)
{
	while (it->ndeps > 0)
		sq_mark_put_locked(it->deps[--it->ndeps]);
	if (it->deps != it->inline_deps)
		free(it->deps);
	free(it);
}

static struct mark *new_done_mark(void)
{
	struct mark *m = calloc(1, sizeof(*m));

	if (m) {
		m->refs = 1;
		m->done = true;
		m->t_ns = sq_now_ns();
	}
	return m;
}

cudaError_t sq_enqueue(struct sim_stream *st, struct simgpu_work *w, struct mark *wait_on,
		       struct mark **out)
{
	struct item *it;
	struct mark *m;
	bool busy;

	if (sq_capture_node(st, w)) { /* recorded into a graph, not run */
		if (out)
			*out = new_done_mark();
		return cudaSuccess;
	}
	if (!sq_async()) {
		run_inline(w);
		if (out)
			*out = new_done_mark();
		return cudaSuccess;
	}
	it = calloc(1, sizeof(*it));
	m = calloc(1, sizeof(*m));
	if (!it || !m) {
		free(it);
		free(m);
		return cudaErrorMemoryAllocation;
	}
	it->w = w;
	it->mark = m;
	it->deps = it->inline_deps;
	it->cap = INLINE_DEPS;
	m->refs = out ? 3 : 2; /* the item, the stream's last, the caller */
	pthread_mutex_lock(&sq_lock);
	if (!start_worker_locked(st->device) || !legacy_deps(it, st) || !add_dep(it, wait_on)) {
		bool started = worker_started[st->device];

		item_free_locked(it);
		pthread_mutex_unlock(&sq_lock);
		free(m);
		return started ? cudaErrorMemoryAllocation : cudaErrorLaunchFailure;
	}
	busy = st->tail != NULL;
	if (busy)
		st->tail->next = it;
	else
		st->head = it;
	st->tail = it;
	sq_mark_put_locked(st->last);
	st->last = m;
	if (out)
		*out = m;
	/* Only a new head can run now: an item behind another one runs after
	 * it completes, and the worker makes another pass after every
	 * completion. Enqueueing completes nothing a host waiter waits for. */
	if (!busy)
		pthread_cond_broadcast(&sq_cv);
	pthread_mutex_unlock(&sq_lock);
	return cudaSuccess;
}

__attribute__((visibility("default"))) int simgpu_enqueue(void *stream, struct simgpu_work *w)
{
	struct sim_stream *st = sq_stream((cudaStream_t)stream);

	if (!st)
		return cudaErrorInvalidResourceHandle;
	return sq_enqueue(st, w, NULL, NULL);
}
