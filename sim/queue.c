/* SPDX-License-Identifier: MIT */
/* queue.c - the simulated devices' execution engine (part of libcudart).
 *
 * Asynchronous, as a GPU is. Every stream (each device's legacy default
 * stream and the created ones) is a FIFO of work items; each device has one
 * worker thread, started on its first item, that runs the head item of each
 * of the device's streams whose dependencies are met, round robin, until it
 * says SIMGPU_DONE. Steps never block (simgpu.h), so streams of one device
 * progress concurrently, as on a GPU, and a collective waiting for its peers
 * holds up only its own stream.
 *
 * Ordering: an item runs after the item before it on its stream; an item on
 * the legacy stream also after everything enqueued before it on the device's
 * blocking streams (created without cudaStreamNonBlocking), and an item on a
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

#include "queue.h"

#define MAX_DEV 64
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

static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qcv = PTHREAD_COND_INITIALIZER;
static struct sim_stream legacy[MAX_DEV];
static struct sim_stream *streams; /* created streams, all devices */
static bool worker_started[MAX_DEV];
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
	pthread_mutex_init(&qlock, NULL);
	pthread_cond_init(&qcv, NULL);
	memset(worker_started, 0, sizeof(worker_started));
	for (int d = 0; d < MAX_DEV; d++) {
		legacy[d].head = legacy[d].tail = NULL;
		legacy[d].last = NULL;
	}
	for (struct sim_stream *s = streams; s; s = s->next) {
		s->head = s->tail = NULL;
		s->last = NULL;
	}
}

static void install_atfork(void)
{
	pthread_atfork(NULL, NULL, after_fork_child);
}

/* ---- marks (under qlock) ---- */

static struct mark *mark_get(struct mark *m)
{
	if (m)
		m->refs++;
	return m;
}

static void mark_put_locked(struct mark *m)
{
	if (m && --m->refs == 0)
		free(m);
}

void sq_mark_put(struct mark *m)
{
	pthread_mutex_lock(&qlock);
	mark_put_locked(m);
	pthread_mutex_unlock(&qlock);
}

bool sq_mark_done(struct mark *m)
{
	bool d;

	pthread_mutex_lock(&qlock);
	d = !m || m->done;
	pthread_mutex_unlock(&qlock);
	return d;
}

void sq_wait(struct mark *m)
{
	pthread_mutex_lock(&qlock);
	while (m && !m->done)
		pthread_cond_wait(&qcv, &qlock);
	mark_put_locked(m);
	pthread_mutex_unlock(&qlock);
}

struct mark *sq_stream_last(struct sim_stream *st)
{
	struct mark *m;

	pthread_mutex_lock(&qlock);
	m = st->last && !st->last->done ? mark_get(st->last) : NULL;
	pthread_mutex_unlock(&qlock);
	return m;
}

struct mark *sq_event_last(struct sim_event *e)
{
	struct mark *m;

	pthread_mutex_lock(&qlock);
	m = mark_get(e->mark);
	pthread_mutex_unlock(&qlock);
	return m;
}

/* The event now stands for m (the caller's reference moves to the event). */
void sq_event_set(struct sim_event *e, struct mark *m)
{
	pthread_mutex_lock(&qlock);
	mark_put_locked(e->mark);
	e->mark = m;
	pthread_mutex_unlock(&qlock);
}

/* ---- streams ---- */

static int current_dev(void)
{
	int d = simgpu_current_device();

	return d >= 0 && d < MAX_DEV ? d : 0;
}

static struct sim_stream *legacy_of(int d)
{
	pthread_mutex_lock(&qlock);
	legacy[d].magic = STREAM_MAGIC;
	legacy[d].device = d;
	legacy[d].legacy = true;
	pthread_mutex_unlock(&qlock);
	return &legacy[d];
}

/* A device's legacy stream by a handle that names it whatever the current
 * device (NCCL's NULL stream is its communicator's device's). */
__attribute__((visibility("default"))) void *simgpu_legacy_stream(int device)
{
	return device >= 0 && device < MAX_DEV ? legacy_of(device) : NULL;
}

struct sim_stream *sq_stream(cudaStream_t s)
{
	struct sim_stream *found = NULL;

	if ((void *)s >= (void *)legacy && (void *)s < (void *)(legacy + MAX_DEV))
		return (struct sim_stream *)s; /* simgpu_legacy_stream's */
	if (s == NULL || s == cudaStreamLegacy || s == cudaStreamPerThread) {
		int d = current_dev();

		pthread_mutex_lock(&qlock);
		legacy[d].magic = STREAM_MAGIC;
		legacy[d].device = d;
		legacy[d].legacy = true;
		pthread_mutex_unlock(&qlock);
		return &legacy[d];
	}
	pthread_mutex_lock(&qlock);
	for (struct sim_stream *p = streams; p; p = p->next)
		if ((void *)p == (void *)s && !p->dead)
			found = p;
	pthread_mutex_unlock(&qlock);
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
	pthread_mutex_lock(&qlock);
	s->next = streams;
	streams = s;
	pthread_mutex_unlock(&qlock);
	return s;
}

static void unlink_stream_locked(struct sim_stream *s)
{
	for (struct sim_stream **link = &streams; *link; link = &(*link)->next) {
		if (*link == s) {
			*link = s->next;
			break;
		}
	}
	mark_put_locked(s->last);
	s->magic = 0;
	free(s);
}

/* CUDA: destroying a stream with pending work returns at once; the work
 * still runs and the resources go once it is done. */
bool sq_stream_destroy(cudaStream_t h)
{
	struct sim_stream *s = NULL;

	pthread_mutex_lock(&qlock);
	for (struct sim_stream *p = streams; p; p = p->next)
		if ((void *)p == (void *)h && !p->dead)
			s = p;
	if (s) {
		s->dead = true;
		if (!s->head)
			unlink_stream_locked(s);
	}
	pthread_mutex_unlock(&qlock);
	return s != NULL;
}

/* ---- the device worker ---- */

static bool deps_met(struct item *it)
{
	while (it->ndeps > 0 && it->deps[it->ndeps - 1]->done)
		mark_put_locked(it->deps[--it->ndeps]);
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
	mark_put_locked(it->mark);
	if (it->deps != it->inline_deps)
		free(it->deps);
	free(it);
	pthread_cond_broadcast(&qcv);
}

/* One pass over the device's streams. Returns whether anything progressed;
 * *pending: some stream still has work; *wake and *seen: a futex to sleep on. */
static bool worker_pass(int d, bool *pending, _Atomic uint32_t **wake, uint32_t *seen)
{
	bool progress = false;
	struct sim_stream *st = &legacy[d], *next;

	*pending = false;
	for (; st; st = next) {
		struct item *it = st->head;

		next = st == &legacy[d] ? streams : st->next;
		if (st->device != d || !it)
			continue;
		*pending = true;
		if (!deps_met(it))
			continue;
		pthread_mutex_unlock(&qlock);
		int r = it->w->step(it->w);
		if (r == SIMGPU_DONE)
			it->w->release(it->w);
		pthread_mutex_lock(&qlock);
		next = st == &legacy[d] ? streams : st->next;
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
	pthread_mutex_lock(&qlock);
	for (;;) {
		_Atomic uint32_t *wake = NULL;
		uint32_t seen = 0;
		bool pending;

		if (worker_pass(d, &pending, &wake, &seen))
			continue;
		if (!pending) {
			pthread_cond_wait(&qcv, &qlock);
		} else if (wake) {
			struct timespec ts = { 0, 2 * 1000 * 1000 };

			pthread_mutex_unlock(&qlock);
			syscall(SYS_futex, wake, FUTEX_WAIT, seen, &ts, NULL, 0);
			pthread_mutex_lock(&qlock);
		} else {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 2 * 1000 * 1000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&qcv, &qlock, &ts);
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

/* it waits for m too (under qlock); false when out of memory. */
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
	it->deps[it->ndeps++] = mark_get(m);
	return true;
}

/* The legacy ordering of an item on st (under qlock): on the legacy stream,
 * after every blocking stream of the device; on a blocking stream, after
 * the legacy stream. */
static bool legacy_deps(struct item *it, struct sim_stream *st)
{
	if (st->flags & cudaStreamNonBlocking)
		return true;
	if (!st->legacy)
		return add_dep(it, legacy[st->device].last);
	for (struct sim_stream *s = streams; s; s = s->next)
		if (s->device == st->device && !(s->flags & cudaStreamNonBlocking) &&
		    !add_dep(it, s->last))
			return false;
	return true;
}

static void item_free_locked(struct item *it)
{
	while (it->ndeps > 0)
		mark_put_locked(it->deps[--it->ndeps]);
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
	pthread_mutex_lock(&qlock);
	if (!start_worker_locked(st->device) || !legacy_deps(it, st) || !add_dep(it, wait_on)) {
		bool started = worker_started[st->device];

		item_free_locked(it);
		pthread_mutex_unlock(&qlock);
		free(m);
		return started ? cudaErrorMemoryAllocation : cudaErrorLaunchFailure;
	}
	busy = st->tail != NULL;
	if (busy)
		st->tail->next = it;
	else
		st->head = it;
	st->tail = it;
	mark_put_locked(st->last);
	st->last = m;
	if (out)
		*out = m;
	/* Only a new head can run now: an item behind another one runs after
	 * it completes, and the worker makes another pass after every
	 * completion. Enqueueing completes nothing a host waiter waits for. */
	if (!busy)
		pthread_cond_broadcast(&qcv);
	pthread_mutex_unlock(&qlock);
	return cudaSuccess;
}

__attribute__((visibility("default"))) int simgpu_enqueue(void *stream, struct simgpu_work *w)
{
	struct sim_stream *st = sq_stream((cudaStream_t)stream);

	if (!st)
		return cudaErrorInvalidResourceHandle;
	return sq_enqueue(st, w, NULL, NULL);
}

/* References to the last marks st's synchronisation waits for: st's own, and
 * for the legacy stream the device's blocking streams' too (or every stream
 * of the device when all). */
static int collect_locked(struct sim_stream *st, int d, bool all, struct mark **out, int cap)
{
	int n = 0;
	struct sim_stream *leg = &legacy[d];

	if ((all || st == leg) && leg->last && !leg->last->done && n < cap)
		out[n++] = mark_get(leg->last);
	if (st && st != leg && st->last && !st->last->done && n < cap)
		out[n++] = mark_get(st->last);
	if (!all && st != leg)
		return n;
	for (struct sim_stream *s = streams; s && n < cap; s = s->next)
		if (s->device == d && s->last && !s->last->done &&
		    (all || !(s->flags & cudaStreamNonBlocking)))
			out[n++] = mark_get(s->last);
	return n;
}

static void wait_marks(struct sim_stream *st, int d, bool all)
{
	struct mark *ms[256];
	int n;

	do { /* more than 256 busy streams: wait again for the rest */
		pthread_mutex_lock(&qlock);
		n = collect_locked(st, d, all, ms, 256);
		pthread_mutex_unlock(&qlock);
		for (int i = 0; i < n; i++)
			sq_wait(ms[i]);
	} while (n == 256);
}

void sq_stream_sync(struct sim_stream *st)
{
	if (sq_async())
		wait_marks(st, st->device, false);
}

void sq_device_sync(int device)
{
	if (sq_async() && device >= 0 && device < MAX_DEV)
		wait_marks(NULL, device, true);
}

__attribute__((visibility("default"))) void simgpu_device_sync(int device)
{
	sq_device_sync(device);
}

bool sq_stream_idle(struct sim_stream *st)
{
	struct mark *ms[256];
	bool idle;
	int n;

	pthread_mutex_lock(&qlock);
	n = collect_locked(st, st->device, false, ms, 256);
	idle = n == 0;
	for (int i = 0; i < n; i++)
		mark_put_locked(ms[i]);
	pthread_mutex_unlock(&qlock);
	return idle;
}
