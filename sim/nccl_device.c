/* SPDX-License-Identifier: MIT */
/* nccl_device.c - the simulated NCCL's device side: operations enqueued on
 * CUDA streams and run by the device workers (sim/queue.c), in each
 * communicator's issue order; asynchronous errors. */
#include <nccl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nccl_int.h"
#include "simgpu.h"

/* ---- on the device: ops enqueued on a stream (the asynchronous default) ----
 *
 * A collective (or a group of ops) is a work item on its stream
 * (simgpu_enqueue, sim/queue.c). The device worker calls dev_step: the first
 * call is where the collective STARTS on the device (it reached the head of
 * its stream, everything before it there is done); dev_step returning
 * SIMGPU_DONE is where it COMPLETES on the device, successfully or not (the
 * failure is then the communicator's asynchronous error, as in NCCL). The
 * NCCL profiler plugin's device-side start/stop hook into dev_started and
 * dev_completed. Under SIMGPU_SYNC=1, launch runs the ops inside the call
 * (start at the call, completion at its return). */
struct dev_work {
	struct simgpu_work w;
	struct run_state st;
	bool started;
	size_t n;
	struct op ops[];
};

static void dev_started(struct dev_work *d)
{
	for (size_t i = 0; i < d->n; i++) /* profiler plugin: its kernel channel starts */
		sim_prof_device_start(&d->ops[i].prof);
}

/* A failed collective never completes on the device: the plugin hears
 * nothing more of it. */
static void dev_completed(struct dev_work *d, ncclResult_t r)
{
	for (size_t i = 0; r == ncclSuccess && i < d->n; i++)
		sim_prof_device_done(&d->ops[i].prof);
}

/* An op on an aborted or failed communicator never runs (NCCL: the
 * communicator's kernels are gone); the error is already recorded. */
static bool dev_dropped(struct dev_work *d)
{
	for (size_t i = 0; i < d->n; i++)
		if (atomic_load(&d->ops[i].comm->aborted_local) ||
		    get_async_error(d->ops[i].comm) != ncclSuccess)
			return true;
	return false;
}

/* NCCL runs a communicator's operations in the order they were issued, whatever
 * streams they are on: an item starts once the one before it on each of its
 * communicators completed. */
static bool dev_turn(struct dev_work *d)
{
	for (size_t i = 0; i < d->n; i++) {
		struct ncclComm *c = d->ops[i].comm;

		if (atomic_load(&c->dev_done) + 1 < d->ops[i].ticket) {
			if (c->shm) {
				d->w.wake = &c->shm->wake;
				d->w.seen = atomic_load(d->w.wake);
				if (atomic_load(&c->dev_done) + 1 >= d->ops[i].ticket)
					continue;
			}
			return false;
		}
	}
	return true;
}

static int dev_finish(struct dev_work *d, ncclResult_t r)
{
	dev_completed(d, r);
	for (size_t i = 0; i < d->n; i++) {
		atomic_store(&d->ops[i].comm->dev_done, d->ops[i].ticket);
		if (d->ops[i].comm->shm)
			bump(d->ops[i].comm->shm);
	}
	return SIMGPU_DONE;
}

static int dev_step(struct simgpu_work *w)
{
	struct dev_work *d = (struct dev_work *)w;
	ncclResult_t err = ncclSuccess;
	int r;

	if (!d->started) {
		if (!dev_turn(d))
			return SIMGPU_WAIT;
		d->started = true;
		dev_started(d);
	}
	if (dev_dropped(d))
		return dev_finish(d, ncclRemoteError);
	r = run_pass(d->ops, d->n, &d->st, &err, &d->w.wake, &d->w.seen);
	if (r < 0)
		return dev_finish(d, err);
	if (r == SIMGPU_DONE)
		return dev_finish(d, ncclSuccess);
	return r;
}

static void dev_release(struct simgpu_work *w)
{
	struct dev_work *d = (struct dev_work *)w;

	for (size_t i = 0; i < d->n; i++)
		atomic_fetch_sub(&d->ops[i].comm->inflight, 1);
	free(d);
}

/* An op's stream: the legacy stream (NULL) is its communicator's device's,
 * not the calling thread's current device's (a group of one thread over
 * several devices). */
static void *stream_of(const struct op *o)
{
	void *s = o->stream;

	if (s == NULL || s == (void *)cudaStreamLegacy || s == (void *)cudaStreamPerThread)
		return simgpu_legacy_stream(o->comm->device);
	return s;
}

/* The distinct streams of ops, in first-use order, into st (room for n). */
static int streams_of(const struct op *ops, size_t n, void **st)
{
	int ns = 0;

	for (size_t i = 0; i < n; i++) {
		void *s = stream_of(&ops[i]);
		int j = 0;

		while (j < ns && st[j] != s)
			j++;
		if (j == ns)
			st[ns++] = s;
	}
	return ns;
}

static void dev_queue_prof(struct op *ops, size_t n)
{
	for (size_t i = 0; i < n; i++) /* a profiler plugin's collective event, on this thread */
		sim_prof_launch(&ops[i].comm->prof, &ops[i].prof, is_collective(ops[i].type),
				op_names[ops[i].type], ops[i].send, ops[i].recv, ops[i].count,
				ops[i].root);
}

/* Run ops: enqueued on the first op's stream (a group's ops all run there;
 * with several streams, however many, joined as NCCL joins them: the group
 * waits for each stream's earlier work, and each stream's later work for
 * the group), or inside the call under SIMGPU_SYNC=1. */
ncclResult_t launch(struct op *ops, size_t n)
{
	struct dev_work *d;
	void **st;
	ncclResult_t r;
	int e, ns;

	dev_queue_prof(ops, n);
	if (!simgpu_async()) { /* on the device from the call to its return */
		for (size_t i = 0; i < n; i++)
			sim_prof_device_start(&ops[i].prof);
		r = run_ops(ops, n);
		for (size_t i = 0; r == ncclSuccess && i < n; i++)
			sim_prof_device_done(&ops[i].prof);
		return r;
	}
	d = calloc(1, sizeof(*d) + n * sizeof(*ops));
	st = calloc(n, sizeof(*st));
	if (!d || !st) {
		free(d);
		free(st);
		return ncclSystemError;
	}
	d->w = (struct simgpu_work){ dev_step, dev_release, NULL, 0 };
	d->n = n;
	memcpy(d->ops, ops, n * sizeof(*ops));
	for (size_t i = 0; i < n; i++) {
		size_t j = 0;

		while (j < i && d->ops[j].comm != d->ops[i].comm)
			j++;
		d->ops[i].ticket = j < i ? d->ops[j].ticket : ++d->ops[i].comm->tickets;
		atomic_fetch_add(&ops[i].comm->inflight, 1);
	}
	ns = streams_of(ops, n, st);
	e = ns > 1 ? simgpu_enqueue_joined(st, ns, &d->w) : simgpu_enqueue(st[0], &d->w);
	free(st);
	if (e != 0) {
		warn("%s : invalid stream %p (CUDA error %d)", op_names[ops[0].type], ops[0].stream,
		     e);
		dev_release(&d->w);
		return ncclUnhandledCudaError;
	}
	return ncclSuccess;
}

/* Wait until the device workers hold no op of c (destroy, abort). */
void drain(struct ncclComm *c)
{
	while (atomic_load(&c->inflight) > 0)
		nanosleep(&(struct timespec){ 0, 1000 * 1000 }, NULL);
}
